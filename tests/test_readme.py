"""The README's quickstart runs and prints what the README says."""
from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def test_quickstart_runs_as_documented():
    if not README.exists():  # tests run against an installed wheel, away from the source tree
        import pytest
        pytest.skip("README.md is not beside the tests")
    text = README.read_text()
    code = re.search(r"```python\n(import pyarrow as pa\nimport mergetree\n.*?)```", text, re.S).group(1)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README quickstart", "exec"), {})
    printed = out.getvalue().splitlines()
    documented = re.findall(r"^# (\{.*\})", code, re.M)
    assert printed[0] == documented[0].split("   ")[0]
    assert printed[1].startswith("MergeStats(rows_in=6, rows_out=3,")
