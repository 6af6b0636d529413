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
