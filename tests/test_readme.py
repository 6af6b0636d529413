"""The README's examples run as written: the quickstart prints what the README says, the
table and organization snippets leave what they say (in process), and every ```python block
runs as a whole script, the way the README says to run it (`.venv/bin/python script.py`, in a
subprocess, in a temporary directory)."""
from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from paimon_fixtures import PAIMON_PYTHON, write_paimon

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


def test_tables_snippet_runs(tmp_path):
    if not README.exists():
        import pytest
        pytest.skip("README.md is not beside the tests")
    code = re.search(r"## Tables\n\n```python\n(.*?)```", README.read_text(), re.S).group(1)
    namespace: dict = {}
    exec(compile(code.replace("/data/visits", str(tmp_path / "visits")), "README tables", "exec"), namespace)
    t = namespace["t"]
    assert sorted(t.read().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "city": "Oslo", "visits": 1}, {"id": 2, "city": "Lima", "visits": 5}]
    assert t.read(snapshot=1).num_rows == 3


def test_data_organization_snippet_runs(tmp_path):
    if not README.exists():
        import pytest
        pytest.skip("README.md is not beside the tests")
    code = re.search(r"## Data organization\n.*?```python\n(.*?)```", README.read_text(), re.S).group(1)
    namespace: dict = {}
    exec(compile(code.replace("/data/events", str(tmp_path / "events")), "README organization", "exec"), namespace)
    t = namespace["t"]
    assert t.info().clustering == ("a", "b") and t.info().sort_within == ("ts",)
    assert t.aggregate("category", {"amount": "sum"}).to_pylist() == [
        {"category": "x", "amount_sum": 1.0}, {"category": "y", "amount_sum": 2.0}]
    assert t.last_read.used_preaggregates == t.info().files


# -- every Python example, run as the README says: `.venv/bin/python script.py` ------------------

ROOT = Path(__file__).resolve().parent.parent
IN_SOURCE_TREE = (ROOT / "Makefile").exists()
# The README's interpreter: the checkout's .venv.  Away from the source tree (the installed-wheel
# check copies tests/ and README.md into a fresh virtual environment) it is the interpreter running
# the tests, whose mergetree is the installed wheel.
PYTHON = str(ROOT / ".venv" / "bin" / "python") if (ROOT / ".venv" / "bin" / "python").exists() else sys.executable
# The one change made to an example before it runs: paths under /data/ go to the test's temporary
# directory (the examples' own paths otherwise; nothing else is touched).
DATA = "/data/"


def examples() -> list[tuple[str, str]]:
    """(id, code) of every ```python block of the README, in order; the id names its section."""
    if not README.exists():
        return []
    out: list[tuple[str, str]] = []
    section = "top"
    for match in re.finditer(r"^(#{2,3}) ([^\n]+)$|^```python\n(.*?)^```", README.read_text(), re.M | re.S):
        if match.group(2):
            section = re.sub(r"[^a-z0-9]+", "-", match.group(2).lower()).strip("-")
        else:
            out.append((f"{len(out) + 1}-{section}", match.group(3)))
    return out


# lines the examples print (beyond running cleanly), as the README's comments say
PRINTS = {
    "[Row(id=1, city='Oslo'), Row(id=2, city='Lima')]": 'option("snapshot"',   # the Spark read of snapshot 1
    "1000": "compact(spark",                                          # the write, upserts, compaction
    "|  4|      13|  9.0|NULL|": "bucket_join",                       # the left join: no customer 4
    "|     0|  2|  0| v2|": "merge_sorted_runs",                      # the newest run's row per key
    "|  7|107|  v1|": "merge_buckets",                                # run 1's new version of id 7
    "[{'id': 2, 'city': 'Lima'}]": "s3://lake/visits",                # a point lookup on S3
    "{'GET': 2, 'HEAD': 1}": "plan(filter=(\"id\", \"=\", 2)).requests",          # and what planning it again asked
}


def _needs(code: str) -> str | None:
    """Why this example cannot run here (None: it can)."""
    if "spark" in code:
        if shutil.which("java") is None:
            return "no java on PATH: the Spark examples need a JVM"
        if subprocess.run([PYTHON, "-c", "import pyspark"], capture_output=True).returncode != 0:
            if IN_SOURCE_TREE:  # `make test` installs pyspark: its absence is a broken setup
                pytest.fail(f"pyspark is not installed for {PYTHON}: the README's Spark examples cannot run")
            return f"pyspark is not installed for {PYTHON} (the installed-wheel check installs pytest and hypothesis)"
    modules = set(re.findall(r"^import (polars|duckdb|datafusion)\b", code, flags=re.MULTILINE))
    if "mergetree.iceberg" in code:  # the iceberg extra
        modules.add("pyiceberg")
    missing = [m for m in sorted(modules)
               if subprocess.run([PYTHON, "-c", f"import {m}"], capture_output=True).returncode]
    if missing:
        if IN_SOURCE_TREE:  # `make test` installs the bench and iceberg extras: their absence is a broken setup
            pytest.fail(f"{', '.join(missing)} not installed for {PYTHON}: the README's example cannot run")
        return (f"{', '.join(missing)} not installed for {PYTHON} "
                f"(the installed-wheel check installs pytest and hypothesis)")
    if "mergetree.paimon" in code and not os.path.exists(PAIMON_PYTHON):
        return (f"the Paimon example reads a table that pypaimon writes first: no pypaimon interpreter at "
                f"{PAIMON_PYTHON} (make paimon-env)")
    return None


def _paimon_table(workdir: Path, warehouse: str) -> None:
    """What the Paimon example reads: a primary-key table db.orders, written by pypaimon."""
    commits = [pa.table({"id": pa.array(range(i * 50, i * 50 + 60), pa.int64()),
                         "total": pa.array([float(k) for k in range(60)])}) for i in range(3)]
    write_paimon(workdir, Path(warehouse), "db.orders", commits, ["id"], [], {"bucket": "2"})


@pytest.mark.parametrize(("name", "code"), [pytest.param(n, c, id=n) for n, c in examples() or [("no-readme", "")]])
def test_every_python_example_runs_as_written(tmp_path, request, name, code):
    if not code:
        pytest.skip("README.md is not beside the tests")
    reason = _needs(code)
    if reason:
        pytest.skip(reason)
    data = f"{tmp_path}/data/"
    script = tmp_path / "script.py"
    script.write_text(code.replace(DATA, data))  # the visible substitution, and no other
    if "mergetree.paimon" in code:
        _paimon_table(tmp_path / "paimon-work", f"{data}warehouse")
    # as a user who never activated the environment: no PYSPARK_PYTHON, no .venv/bin on the PATH
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "VIRTUAL_ENV"))}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if p and not Path(p).resolve().is_relative_to((ROOT / ".venv").resolve()))
    if "s3://" in code:  # as a user whose environment names the store: the run's S3 server
        server = request.getfixturevalue("s3_server")
        env = {k: v for k, v in env.items() if not k.startswith("AWS_")}
        env.update(AWS_ENDPOINT_URL=server.endpoint, AWS_ACCESS_KEY_ID=server.access_key_id,
                   AWS_SECRET_ACCESS_KEY=server.secret_access_key, AWS_REGION="us-east-1", AWS_ALLOW_HTTP="true")
    done = subprocess.run([PYTHON, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, f"{PYTHON} script.py ({name}) failed:\n{done.stderr[-3000:]}"
    assert "Traceback" not in done.stderr and "ModuleNotFoundError" not in done.stderr, done.stderr[-3000:]
    lines = [line.rstrip() for line in done.stdout.splitlines()]
    for printed, marker in PRINTS.items():
        if marker in code:
            assert printed in lines, (name, printed, done.stdout[-2000:])
    if "t.advise(" in code:  # the loop: a script's reads -> advise(apply=True) -> optimize() reads few files
        read, files = map(int, re.fullmatch(r"(\d+) of (\d+) files", lines[-1]).groups())
        assert read * 4 <= files, lines[-1]
