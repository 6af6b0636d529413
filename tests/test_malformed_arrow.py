"""Malformed Arrow input never crashes the process: the fuzzer runs in a child process, so a
segmentation fault is a failed test (with the input that caused it), not a dead test run."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

FUZZER = Path(__file__).with_name("fuzz_malformed_arrow.py")


def test_malformed_arrays_raise_cleanly_in_a_child_process():
    examples = os.environ.get("MERGETREE_FUZZ_EXAMPLES", "250")
    out = subprocess.run([sys.executable, str(FUZZER), examples, "1"], capture_output=True, text=True,
                         timeout=900)
    last_input = out.stderr.strip().splitlines()[-3:]
    assert out.returncode == 0, f"the fuzzer died with status {out.returncode}; last input:\n" + "\n".join(last_input)
    assert out.stdout.startswith("ok:"), out.stdout
