"""`mergetree migrate OLD NEW`: tables of mergetree's older format, made by the last release
that wrote it (`tests/data/private_format/`, every merge engine, partitions, deletion vectors,
a query log, an optimizer history), become Paimon tables that read the same rows, keep their
logs and say what was done; pypaimon reads them; the old table is never written; a migration
killed midway leaves the old table intact and is started afresh when run again."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest
from paimon_fixtures import needs_pypaimon, pypaimon_read

import mergetree as mt
from mergetree import InvalidArgumentError, TableExistsError
from mergetree.table.migration import migrate
from mergetree.table.workload import history, querylog

DATA = Path(__file__).resolve().parent / "data" / "private_format"
EXPECTED = json.loads((DATA / "expected.json").read_text())


def _key(r: dict) -> tuple:
    return (r["p"], r["id"], r["v"])


def _files(path: Path) -> dict[str, int]:
    return {str(p.relative_to(path)): p.stat().st_size for p in path.rglob("*") if p.is_file()}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_kind_of_table_migrates_with_its_rows_and_logs(tmp_path, name):
    old = tmp_path / "old"
    shutil.copytree(DATA / name, old)
    before = _files(old)
    report = migrate(old, tmp_path / "wh" / "db.db" / "t")
    assert _files(old) == before  # only read
    new = mt.Table.open(tmp_path / "wh" / "db.db" / "t")
    assert new.table_schema.paimon is not None
    expected = EXPECTED[name]
    assert report.queries == expected["queries"] == querylog.read_rows(new.path).num_rows  # (before a read logs)
    assert sorted(new.read().to_pylist(), key=_key) == expected["rows"]
    assert report.rows == len(expected["rows"]) and report.snapshots_left_behind == expected["snapshots"]
    if name == "append":
        assert report.optimizer_records >= 1 and history.history(new.path).num_rows == report.optimizer_records
    old_schema = mt.Table.open(old).table_schema
    paimon = new.table_schema.paimon
    assert (tuple(paimon.primary_keys), tuple(paimon.partition_keys), new.table_schema.merge_engine) == \
        (tuple(old_schema.primary_key), tuple(old_schema.partition_by), old_schema.merge_engine)
    if old_schema.has_primary_key:
        assert new.table_schema.buckets == old_schema.buckets
    text = "\n".join(report.lines())
    assert "untouched" in text and f"{report.rows:,} rows" in text
    # the new table is a table like any other: written, compacted, read
    new.write(pa.table({"id": [1000], "p": ["x"], "v": [1], "s": ["new"]}))
    if old_schema.has_primary_key:
        new.compact(full=True)
    assert new.read(filter=("id", "=", 1000)).num_rows == 1


@needs_pypaimon
@pytest.mark.parametrize("name", ["deduplicate_dv", "aggregate", "append"])
def test_pypaimon_reads_a_migrated_table(tmp_path, name):
    old = tmp_path / "old"
    shutil.copytree(DATA / name, old)
    migrate(old, tmp_path / "wh" / "db.db" / "t")
    work = tmp_path / "work"
    work.mkdir()
    assert sorted(pypaimon_read(tmp_path / "wh", "db.t", work).to_pylist(), key=_key) == EXPECTED[name]["rows"]


def test_what_migrate_refuses(tmp_path):
    old = tmp_path / "old"
    shutil.copytree(DATA / "first_row", old)
    with pytest.raises(InvalidArgumentError, match="path of its own"):
        migrate(old, old)
    occupied = tmp_path / "occupied"
    occupied.mkdir()
    (occupied / "notes.txt").write_text("mine")
    with pytest.raises(TableExistsError, match="not empty"):
        migrate(old, occupied)
    assert (occupied / "notes.txt").read_text() == "mine"
    done = tmp_path / "done"
    migrate(old, done)
    with pytest.raises(TableExistsError, match="not empty"):  # a finished migration is a table: never cleared
        migrate(old, done)
    with pytest.raises(InvalidArgumentError, match="Paimon table already"):
        migrate(done, tmp_path / "again")


def test_a_migration_killed_midway_leaves_the_old_table_and_starts_afresh(tmp_path):
    old = tmp_path / "old"
    t = mt.Table.create(old, pa.schema([("id", pa.int64()), ("v", pa.string())]), primary_key="id", buckets=4,
                        format="mergetree", options={"write-buffer-size": "4 mb"})
    for i in range(4):
        t.write(pa.table({"id": list(range(i * 150_000, (i + 1) * 150_000)), "v": [f"row{i}"] * 150_000}))
    before = _files(old)
    rows = t.read().num_rows
    new = tmp_path / "new"
    proc = subprocess.Popen([sys.executable, "-m", "mergetree", "migrate", str(old), str(new), "--no-progress"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while time.time() < deadline and not list(new.glob("bucket-*/data-*")):  # killed once it writes data
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert _files(old) == before and mt.Table.open(old).read().num_rows == rows
    assert not list(new.glob("snapshot/snapshot-*"))  # nothing of the copy was published
    report = migrate(old, new)  # run again: the cut-short attempt is cleared first
    assert report.restarted and report.rows == rows == mt.Table.open(new).read().num_rows


def test_the_cli_migrates_and_says_what_it_did(tmp_path):
    old = tmp_path / "old"
    shutil.copytree(DATA / "partial_update", old)
    done = subprocess.run([sys.executable, "-m", "mergetree", "migrate", str(old), str(tmp_path / "new"),
                           "--no-progress"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "Apache Paimon table" in done.stdout and "query log: 3 record(s)" in done.stdout
    assert sorted(mt.Table.open(tmp_path / "new").read().to_pylist(), key=_key) == EXPECTED["partial_update"]["rows"]


def test_a_migration_that_failed_after_its_copy_was_committed_starts_afresh(tmp_path, monkeypatch):
    old = tmp_path / "old"
    shutil.copytree(DATA / "aggregate", old)
    import mergetree.table.migration as migration

    def broken(*args, **kwargs):
        raise OSError("the disk went away")
    monkeypatch.setattr(migration, "compact_buckets", broken)  # after the copy's commit
    with pytest.raises(OSError):
        migrate(old, tmp_path / "new")
    monkeypatch.undo()
    assert mt.Table.open(tmp_path / "new").latest_snapshot() is not None  # committed, marked unfinished
    report = migrate(old, tmp_path / "new")
    assert report.restarted
    assert sorted(mt.Table.open(tmp_path / "new").read().to_pylist(), key=_key) == EXPECTED["aggregate"]["rows"]
