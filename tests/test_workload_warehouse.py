"""The workload warehouse: the query log and optimizer history of a Paimon table mergetree did
not make are Paimon tables of their own in a warehouse the reader names (`set_workload_warehouse`,
``MERGETREE_WORKLOAD_WAREHOUSE``), never files in the table's directory; the organize loop runs
on them as on a log beside the table."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from paimon_fixtures import java_orphans, needs_java_paimon, needs_pypaimon, pypaimon_read, rows, write_paimon

import mergetree
from mergetree import InvalidArgumentError, Table
from mergetree.table.workload import history, places, querylog

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _no_warehouse(monkeypatch):
    monkeypatch.delenv(places.WAREHOUSE_ENVIRONMENT, raising=False)
    yield
    mergetree.set_workload_warehouse(None)


def _foreign(root: Path, name: str = "db.events") -> Path:
    """An append table pypaimon wrote: 4 commits of 50k rows in small files."""
    rng = np.random.default_rng(1)
    parts = [pa.table({"id": np.arange(i * 50_000, (i + 1) * 50_000), "a": rng.integers(0, 10**6, 50_000),
                       "b": rng.normal(size=50_000)}) for i in range(4)]
    write_paimon(root / "work", root / "wh", name, parts, [], options={"bucket": "-1", "target-file-size": "256kb"})
    database, table = name.split(".")
    return root / "wh" / f"{database}.db" / table


def _contents(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


def _range_reads(table: Table, count: int = 20) -> None:
    for lo in range(0, count * 50_000, 50_000):
        table.read(filter=[("a", ">=", lo), ("a", "<", lo + 10_000)])


@needs_pypaimon
def test_a_foreign_tables_loop_runs_from_the_workload_warehouse_and_leaves_its_directory_alone(tmp_path):
    path = _foreign(tmp_path)
    table = Table.open(path)
    _range_reads(table)
    querylog.flush()
    assert not (path / "queries").exists()  # without a workload warehouse a foreign table is not logged
    assert querylog.read_rows(str(path)).num_rows == 0

    workload = tmp_path / "workload"
    mergetree.set_workload_warehouse(workload)
    before = pypaimon_read(tmp_path / "wh", "db.events", tmp_path / "work")
    table = Table.open(path)
    _range_reads(table)
    log = querylog.read_rows(str(path))
    assert log.num_rows == 20 and set(log.column("kind").to_pylist()) == {"read"}
    [name] = [p.name for p in (workload / "mergetree_workload.db").iterdir()]
    assert name.startswith("db_events_") and name.endswith("_queries")
    # any Paimon reader queries the log as a table of the workload database
    assert pypaimon_read(workload, f"mergetree_workload.{name}", tmp_path / "work").num_rows == 20

    advice = table.advise(apply=True)
    assert advice.options["clustering.columns"] == "a"
    table.optimize()
    passes = history.history(str(path)).to_pylist()
    assert [p["tier"] for p in passes] == ["optimize"] and passes[0]["files_in"] > 0
    assert sorted(p.name for p in (workload / "mergetree_workload.db").iterdir()) == [
        name.replace("_queries", "_optimizer"), name]
    # the table holds only what Paimon lists: its data, manifests, schemas and snapshots
    assert {p.split("/")[0] for p in _contents(path)} == {"bucket-0", "manifest", "schema", "snapshot"}
    after = pypaimon_read(tmp_path / "wh", "db.events", tmp_path / "work")
    assert rows(after, ["id"]) == rows(before, ["id"])
    _range_reads(table, 5)
    assert querylog.read_rows(str(path)).num_rows == 25


@needs_pypaimon
def test_tables_that_keep_their_own_log_keep_it_beside_them(tmp_path):
    mergetree.set_workload_warehouse(tmp_path / "workload")
    own = Table.create(tmp_path / "own", pa.schema([("id", pa.int64()), ("a", pa.int64())]), primary_key="id")
    own.write(pa.table({"id": [1, 2], "a": [3, 4]}))
    own.read(filter=[("a", "=", 3)])
    querylog.flush()
    assert (tmp_path / "own" / "queries").is_dir() and querylog.read_rows(str(tmp_path / "own")).num_rows == 1
    # a foreign table its owner switched the log off for (the option said): not logged anywhere
    path = _foreign(tmp_path)
    Table.open(path).set_options({"query-log.enabled": False})
    _range_reads(Table.open(path), 3)
    querylog.flush()
    assert not (tmp_path / "workload").exists() and not (path / "queries").exists()
    # switched on: beside the table, as it says
    Table.open(path).set_options({"query-log.enabled": True})
    _range_reads(Table.open(path), 3)
    querylog.flush()
    assert (path / "queries").is_dir() and not (tmp_path / "workload").exists()


@needs_pypaimon
def test_two_tables_of_one_name_get_two_logs_and_the_environment_names_the_warehouse(tmp_path):
    first = _foreign(tmp_path / "one")
    second = _foreign(tmp_path / "two")
    workload = tmp_path / "workload"
    script = ("import sys, mergetree; from mergetree.table.workload import querylog\n"
              "t = mergetree.Table.open(sys.argv[1]); t.read(filter=[('a', '<', 10)]); querylog.flush()\n")
    for path in (first, second):
        subprocess.run([sys.executable, "-c", script, str(path)], check=True, cwd=tmp_path, timeout=300,
                       env={**os.environ, places.WAREHOUSE_ENVIRONMENT: str(workload),
                            "PYTHONPATH": str(ROOT / "src")})
    names = sorted(p.name for p in (workload / "mergetree_workload.db").iterdir())
    assert len(names) == 2 and all(n.startswith("db_events_") and n.endswith("_queries") for n in names)
    mergetree.set_workload_warehouse(workload)
    for path in (first, second):
        [record] = querylog.read_rows(str(path)).to_pylist()
        assert json.loads(record["filter"]) is not None and record["filter_columns"] == ["a"]


@needs_java_paimon
@needs_pypaimon
def test_javas_orphan_cleaning_finds_nothing_of_the_workload(tmp_path):
    path = _foreign(tmp_path)
    mergetree.set_workload_warehouse(tmp_path / "workload")
    table = Table.open(path)
    _range_reads(table)
    table.advise(apply=True)
    table.optimize()
    kept = _contents(tmp_path / "workload")
    assert java_orphans(tmp_path / "wh", "db.events") == []
    # the workload's own tables are Paimon tables Java's maintenance finds whole too
    for log in (tmp_path / "workload" / "mergetree_workload.db").iterdir():
        assert java_orphans(tmp_path / "workload", f"mergetree_workload.{log.name}") == []
    assert _contents(tmp_path / "workload") == kept
    assert querylog.read_rows(str(path)).num_rows == 20


def test_the_workload_warehouse_is_checked():
    for bad in (123, b"/tmp/x", ""):
        with pytest.raises(InvalidArgumentError, match="workload warehouse"):
            mergetree.set_workload_warehouse(bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="nope://"):
        mergetree.set_workload_warehouse("nope://bucket/wh")
