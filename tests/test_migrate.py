"""`mergetree migrate OLD NEW`: tables of mergetree's older format, made by the last release
that wrote it (`tests/data/private_format/`, every merge engine, partitions, deletion vectors,
a query log, an optimizer history), become Paimon tables that read the same rows, keep their
logs and say what was done; pypaimon reads them; the old table is never written; a migration
killed midway leaves the old table intact and is started afresh when run again."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pytest
from paimon_fixtures import needs_pypaimon, pypaimon_read

import mergetree as mt
from mergetree import InvalidArgumentError, TableExistsError
from mergetree.table.migration import migrate, older_format
from mergetree.table.objects import storage_for
from mergetree.table.workload import history, querylog

DATA = Path(__file__).resolve().parent / "data" / "private_format"
EXPECTED = json.loads((DATA / "expected.json").read_text())


def _key(r: dict) -> tuple:
    return tuple(str(r[c]) for c in ("p", "id", "v", "name", "day") if c in r)


def _rows(table: pa.Table) -> list[dict]:
    """Rows as expected.json holds them (dates, decimals and times as their text)."""
    return json.loads(json.dumps(sorted(table.to_pylist(), key=_key), default=str))


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
    assert _rows(new.read()) == expected["rows"]
    assert report.rows == len(expected["rows"]) and report.snapshots_left_behind == expected["snapshots"]
    assert report.consumers_left_behind == expected["consumers"]
    shown = repr(report)
    assert "\n" not in shown and len(shown) < 300 and f"{report.rows:,} row" in shown and "-> " in shown
    if name == "append":
        assert report.optimizer_records >= 1 and history.history(new.path).num_rows == report.optimizer_records
    old_table = older_format.open_older(storage_for(str(old)))
    paimon = new.table_schema.paimon
    assert (tuple(paimon.primary_keys), tuple(paimon.partition_keys), new.table_schema.merge_engine) == \
        (old_table.primary_key, old_table.partition_by, old_table.merge_engine)
    if old_table.primary_key:
        assert new.table_schema.buckets == old_table.buckets
    text = "\n".join(report.lines())
    assert "untouched" in text and f"{report.rows:,} rows" in text
    if name == "typed_keys":
        assert "option not carried: file-index.bloom-filter.columns (amount: Paimon's bloom file index takes no " \
            "DECIMAL(12, 2))" in text and "dashboard" in text
        return
    # the new table is a table like any other: written, compacted, read
    new.write(pa.table({"id": [1000], "p": ["x"], "v": [1], "s": ["new"]}))
    if old_table.primary_key:
        new.compact(full=True)
    assert new.read(filter=("id", "=", 1000)).num_rows == 1


def test_the_older_format_opens_nowhere_but_in_migrate(tmp_path):
    old = tmp_path / "old"
    shutil.copytree(DATA / "deduplicate_dv", old)
    with pytest.raises(mt.UnsupportedFormatError, match="mergetree migrate"):
        mt.Table.open(old)
    with pytest.raises(TableExistsError):  # never a table over another
        mt.Table.create(old, pa.schema([("id", pa.int64())]))


def test_a_damaged_manifest_is_named(tmp_path):
    old = tmp_path / "old"
    shutil.copytree(DATA / "first_row", old)
    latest = max((old / "snapshot").glob("snapshot-*.json"), key=lambda p: int(p.stem.split("-")[1]))
    manifest_list = json.loads(latest.read_text())["base_manifest_list"]
    manifest = json.loads((old / "manifest" / manifest_list).read_text())["manifests"][0]
    (old / "manifest" / manifest).write_text("{not json")
    with pytest.raises(mt.CorruptTableError, match=manifest):
        migrate(old, tmp_path / "new")
    assert not (tmp_path / "new" / "snapshot").exists()


@needs_pypaimon
@pytest.mark.parametrize("name", ["deduplicate_dv", "aggregate", "append"])
def test_pypaimon_reads_a_migrated_table(tmp_path, name):
    old = tmp_path / "old"
    shutil.copytree(DATA / name, old)
    migrate(old, tmp_path / "wh" / "db.db" / "t")
    work = tmp_path / "work"
    work.mkdir()
    assert _rows(pypaimon_read(tmp_path / "wh", "db.t", work)) == EXPECTED[name]["rows"]


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


@pytest.mark.parametrize("name", ["deduplicate_dv", "renumbered"])
def test_a_migration_killed_midway_leaves_the_old_table_and_starts_afresh(tmp_path, name):
    old = tmp_path / "old"
    shutil.copytree(DATA / name, old)
    before = _files(old)
    new = tmp_path / "new"
    # the process kills itself (SIGKILL: no cleanup runs) as it is about to publish the copy's
    # snapshot, its data files written
    script = textwrap.dedent(f"""
        import os, signal
        from mergetree.storage.local import LocalDiskStore
        create = LocalDiskStore.create
        def killed(self, name, *args, **kwargs):
            if name.startswith("snapshot/snapshot-"):
                os.kill(os.getpid(), signal.SIGKILL)
            return create(self, name, *args, **kwargs)
        LocalDiskStore.create = killed
        from mergetree import migrate
        migrate({str(old)!r}, {str(new)!r})
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == -9, proc.stderr
    assert list(new.rglob("data-*")), "killed before it wrote any data file"
    assert _files(old) == before
    assert not list(new.glob("snapshot/snapshot-*"))  # nothing of the copy was published
    report = migrate(old, new)  # run again: the cut-short attempt is cleared first
    assert report.restarted and _rows(mt.Table.open(new).read()) == EXPECTED[name]["rows"]


def test_the_cli_migrates_and_says_what_it_did(tmp_path):
    old = tmp_path / "old"
    shutil.copytree(DATA / "partial_update", old)
    done = subprocess.run([sys.executable, "-m", "mergetree", "migrate", str(old), str(tmp_path / "new"),
                           "--no-progress"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "Apache Paimon table" in done.stdout and "query log: 3 record(s)" in done.stdout
    assert _rows(mt.Table.open(tmp_path / "new").read()) == EXPECTED["partial_update"]["rows"]


def test_a_migration_that_failed_after_its_copy_was_committed_starts_afresh(tmp_path, monkeypatch):
    old = tmp_path / "old"
    shutil.copytree(DATA / "aggregate", old)
    from mergetree.table import migration

    def broken(*args, **kwargs):
        raise OSError("the disk went away")
    monkeypatch.setattr(migration, "compact_buckets", broken)  # after the copy's commit
    with pytest.raises(OSError):
        migrate(old, tmp_path / "new")
    monkeypatch.undo()
    assert mt.Table.open(tmp_path / "new").latest_snapshot() is not None  # committed, marked unfinished
    report = migrate(old, tmp_path / "new")
    assert report.restarted
    assert _rows(mt.Table.open(tmp_path / "new").read()) == EXPECTED["aggregate"]["rows"]


def test_options_paimon_names_otherwise_are_carried_so_and_the_rest_said(tmp_path):
    old = tmp_path / "old"
    shutil.copytree(DATA / "append", old)
    schema_file = max((old / "schema").glob("schema-*.json"), key=lambda p: int(p.stem.split("-")[1]))  # the latest
    document = json.loads(schema_file.read_text())
    document["options"].update({"file-index.bloom-filter.columns": "s", "file-index.bloom-filter.fpp": "0.05",
                                "file-index.bitmap.max-values": "50", "owner": "finance"})
    schema_file.write_text(json.dumps(document))
    report = migrate(old, tmp_path / "new")
    options = mt.Table.open(tmp_path / "new").table_schema.paimon.options
    assert options["file-index.bloom-filter.columns"] == "s" and options["file-index.bloom-filter.s.fpp"] == "0.05"
    assert options["owner"] == "finance"  # a free-form property comes along
    assert "file-index.bloom-filter.fpp" not in options and "file-index.bitmap.max-values" not in options
    assert set(report.options_dropped) == {"file-index.bitmap.max-values"}
    assert "option not carried: file-index.bitmap.max-values" in "\n".join(report.lines())
    assert _rows(mt.Table.open(tmp_path / "new").read()) == EXPECTED["append"]["rows"]


def _latest_schema_file(table: Path) -> Path:
    return max((table / "schema").glob("schema-*.json"), key=lambda p: int(p.stem.split("-")[1]))


def test_indexes_paimon_cannot_build_are_left_behind_column_by_column(tmp_path):
    old = tmp_path / "old"
    shutil.copytree(DATA / "typed_keys", old)
    schema_file = _latest_schema_file(old)
    document = json.loads(schema_file.read_text())
    document["options"]["file-index.bitmap.columns"] = "amount,name"  # the older format took a decimal's bitmap
    schema_file.write_text(json.dumps(document))
    report = migrate(old, tmp_path / "new")
    options = mt.Table.open(tmp_path / "new").table_schema.paimon.options
    assert options["file-index.bitmap.columns"] == "name"
    assert report.options_dropped["file-index.bitmap.columns"] == \
        "amount: Paimon's bitmap file index takes no DECIMAL(12, 2) (kept for name)"
    assert _rows(mt.Table.open(tmp_path / "new").read()) == EXPECTED["typed_keys"]["rows"]


def test_a_lost_latest_snapshot_is_damage_and_nothing_is_migrated(tmp_path):
    old = tmp_path / "old"
    shutil.copytree(DATA / "first_row", old)
    latest = max(int(p.stem.split("-")[1]) for p in (old / "snapshot").glob("snapshot-*.json"))
    (old / "snapshot" / "LATEST").write_text(str(latest))
    (old / "snapshot" / f"snapshot-{latest}.json").unlink()
    with pytest.raises(mt.CorruptTableError, match=f"snapshot {latest} of table .* is missing"):
        migrate(old, tmp_path / "new")
    assert not (tmp_path / "new").exists() or not any((tmp_path / "new").rglob("*"))
