"""`make demo` for a first look: the demo runs, shows a table end to end, and its install step
(`make demo-env`, run here into a fresh virtual environment) installs nothing the demo does not use.

What the demo may need installed: the core's build requirements (it builds the extension), the
core's runtime dependencies (what `pip install mergetree` brings), the `demo` extra — each of which
the demo must import — and what those require in turn.  Spark, the test and benchmark tools, the
report's browser: none of it."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# the demo is part of the source checkout, not of the wheel (whose tests run without it)
demo = pytest.importorskip("examples.demo", reason="the source checkout's examples/ is not here")

ROOT = Path(__file__).resolve().parent.parent

# Runs in the fresh environment: the demo in this process, then which installed distributions it
# imported and which are required (transitively, markers evaluated) by what it imported or by the
# declared requirements.
ANALYSE = r"""
import importlib.metadata as md, json, re, sys
from pip._vendor.packaging.requirements import Requirement
out = sys.argv[1]
from examples.demo import main
main(["--dir", out])
def norm(name): return re.sub(r"[-_.]+", "-", name).lower()
installed = {norm(d.metadata["Name"]): d for d in md.distributions()}
modules = md.packages_distributions()
imported = sorted({norm(d) for m in list(sys.modules) for d in modules.get(m.split(".")[0], [])})
def requires(name, seen):
    for text in installed[name].requires or []:
        req = Requirement(text)
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            child = norm(req.name)
            if child in installed and child not in seen:
                seen.add(child); requires(child, seen)
    return seen
print(json.dumps({"installed": sorted(installed), "imported": imported,
                  "required": {n: sorted(requires(n, set())) for n in installed}}))
"""


def test_the_demo_shows_a_table_end_to_end_and_the_merge(tmp_path, capsys):
    assert demo.main(["--dir", str(tmp_path / "out"), "--no-bench"]) == 0
    out = capsys.readouterr().out
    live = demo.merge(demo.open_runs(sorted((tmp_path / "out").glob("run-*.parquet"))), "id", sequence="seq",
                      kind="kind").read_all().num_rows
    # the table's merge-on-read agrees with the plain merge of the same runs, before and after compaction
    assert f"merge-on-read: {live:,} live ids" in out
    assert "same rows: True" in out and "plans 1 file of 2" in out
    for engine, _, _ in demo.ENGINES:
        assert f"== engine={engine!r}" in out


@pytest.mark.skipif(os.environ.get("MERGETREE_SKIP_FRESH_ENVS") == "1", reason="MERGETREE_SKIP_FRESH_ENVS=1")
def test_make_demo_installs_only_what_the_demo_uses(tmp_path):
    if shutil.which("make") is None:
        pytest.skip("no make here")
    venv = tmp_path / "venv"
    base_python = getattr(sys, "_base_executable", sys.executable)
    subprocess.run(["make", "-s", f"VENV={venv}", f"PYTHON={base_python}", "demo-env"], cwd=ROOT, check=True,
                   capture_output=True, timeout=900)
    # the demo runs on the checkout's in-place build (the same interpreter built it)
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    done = subprocess.run([str(venv / "bin" / "python"), "-c", ANALYSE, str(tmp_path / "out")], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    installed, imported, required = set(found["installed"]), set(found["imported"]), found["required"]

    def names(args: str) -> set[str]:
        printed = subprocess.run([sys.executable, str(ROOT / "scripts" / "requirements.py"), *args.split()],
                                 capture_output=True, text=True, check=True).stdout.split()
        return {norm(r) for r in printed}

    build, runtime, extra = names("build"), names(""), names("--only demo")
    assert extra and extra <= imported, f"the demo extra holds what the demo never imports: {extra - imported}"
    allowed = {"pip", "mergetree"} | build | runtime | extra
    for name in build | runtime | extra | imported:
        allowed |= set(required.get(name, []))
    assert not installed - allowed, f"installed for the demo but never used by it: {sorted(installed - allowed)}"
    for heavy in ("pyspark", "deltalake", "pyiceberg", "playwright", "moto", "mypy", "pytest", "matplotlib"):
        assert heavy not in installed


def norm(requirement: str) -> str:
    """A requirement's distribution name, normalized as PEP 503 does."""
    import re
    name = re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0]
    return re.sub(r"[-_.]+", "-", name).lower()
