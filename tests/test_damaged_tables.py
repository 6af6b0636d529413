"""A damaged-table matrix: every metadata file and a data file, truncated, emptied, replaced
by garbage or deleted.  Every read raises a MergeTreeError naming the file; cleanup deletes
nothing that is still needed; a damaged latest snapshot hides no older one."""
from __future__ import annotations

import os
import subprocess
import sys

import pyarrow as pa
import pytest
from disk import table_files

from mergetree import CorruptTableError, MergeTreeError, Table, TableNotFoundError

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
DAMAGES = ["truncated", "emptied", "garbage", "deleted"]


def build(tmp_path) -> tuple[Table, dict[str, str]]:
    """Three commits; returns the table and one file of each kind of the latest snapshot."""
    t = Table.create(str(tmp_path / "t"), SCHEMA, primary_key="id", options={"write-only": "true"})
    for i in range(3):
        t.write(pa.table({"id": [i, 10 + i], "v": [f"a{i}", f"b{i}"]}))
    snap = t.latest_snapshot()
    delta_manifest = t.directory.store.manifest_names(snap.delta_manifest_list)[0]
    data = t.directory.store.read_manifest(delta_manifest)[0][1].file.file_name
    return t, {
        "schema": "schema/schema-0",
        "snapshot": f"snapshot/snapshot-{snap.id}",
        "manifest list": f"manifest/{snap.delta_manifest_list}",
        "base manifest list": f"manifest/{snap.base_manifest_list}",
        "manifest": f"manifest/{delta_manifest}",
        "data file": data,
    }


def damage(path: str, how: str) -> None:
    raw = open(path, "rb").read()
    if how == "deleted":
        os.unlink(path)
    elif how == "emptied":
        open(path, "wb").close()
    elif how == "truncated":
        open(path, "wb").write(raw[: len(raw) // 2])
    else:
        open(path, "wb").write(b"\x00\xffnot what was here" * 7)


def all_files(root: str) -> set[str]:
    return table_files(root)


KINDS = ["schema", "snapshot", "manifest list", "base manifest list", "manifest", "data file"]
# a Paimon snapshot file that is not there is a commit that is not there: a deleted latest
# snapshot is test_a_deleted_latest_snapshot_leaves_the_table_at_the_one_before
CASES = [(kind, how) for kind in KINDS for how in DAMAGES if (kind, how) != ("snapshot", "deleted")]


@pytest.mark.parametrize(("kind", "how"), CASES)
def test_every_read_names_the_damaged_file(tmp_path, kind, how):
    t, files = build(tmp_path)
    root = t.path
    relative = files[kind]
    damage(os.path.join(root, relative), how)
    before = all_files(root)

    def reads():
        table = Table.open(root)
        yield lambda: table.read()
        yield lambda: list(table.scan())
        yield lambda: table.read(filter=("id", "=", 2))
        yield lambda: table.compact(full=True)

    errors = []
    try:
        for read in reads():
            with pytest.raises(MergeTreeError) as info:
                read()
            errors.append(info.value)
    except MergeTreeError as exc:  # Table.open itself refused
        errors.append(exc)
    assert errors
    for exc in errors:
        if kind == "schema" and how == "deleted":
            # no schema file left: not a Paimon table, the schema directory named
            assert isinstance(exc, TableNotFoundError) and os.path.join(root, "schema") in str(exc), exc
        else:
            assert isinstance(exc, CorruptTableError), exc
            assert relative in str(exc), (relative, str(exc))
    # cleanup never deletes anything still needed: it refuses, or leaves every file alone
    if kind != "schema":
        table = Table.open(root, check=False)
        for cleanup in (lambda: table.remove_orphan_files(older_than=0),
                        lambda: table.expire_snapshots(retain_last=1, older_than=0)):
            try:
                cleanup()
            except CorruptTableError:
                pass
        lost = before - all_files(root)
        if kind == "data file":  # metadata intact: only older snapshots' own files may go
            assert relative not in lost
        else:
            assert not lost, lost


BROKEN = [how for how in DAMAGES if how != "deleted"]


@pytest.mark.parametrize("how", BROKEN)
def test_a_damaged_latest_snapshot_hides_no_older_one(tmp_path, how):
    t, files = build(tmp_path)
    root = t.path
    expected = t.read(snapshot=2).sort_by("id")
    damage(os.path.join(root, files["snapshot"]), how)
    with pytest.raises(CorruptTableError) as info:
        Table.open(root).read()
    assert "snapshot/snapshot-3" in str(info.value)
    older = Table.open(root, check=False)
    assert older.read(snapshot=2).sort_by("id").equals(expected)
    # the repair command sets the damaged file aside and the table continues from snapshot 2
    out = subprocess.run([sys.executable, "-m", "mergetree", "repair", root], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "continues from snapshot 2" in out.stdout
    repaired = Table.open(root)
    assert repaired.latest_snapshot().id == 2
    assert repaired.read().sort_by("id").equals(expected)
    assert os.listdir(os.path.join(root, "snapshot", "damaged"))  # kept, not deleted
    repaired.write(pa.table({"id": [99], "v": ["new"]}))  # commits go on from there
    assert repaired.latest_snapshot().id == 3 and repaired.read().num_rows == 5


@pytest.mark.parametrize("how", BROKEN)
def test_opening_a_table_reports_a_damaged_latest_snapshot_and_how_to_recover(tmp_path, how):
    t, files = build(tmp_path)
    damage(os.path.join(t.path, files["snapshot"]), how)
    with pytest.raises(CorruptTableError) as info:
        Table.open(t.path)
    message = str(info.value)
    assert "snapshot/snapshot-3" in message and "snapshot=2" in message and "mergetree repair" in message


def test_a_deleted_latest_snapshot_is_damage_never_read_past(tmp_path):
    """A commit publishes snapshot-N before the LATEST hint names it, so a hint above every
    snapshot there is names a committed snapshot that is gone: reported (reading the one before
    as the latest would lose its changes without a word), and repair continues from the one
    before, saying the missing one is lost."""
    t, files = build(tmp_path)
    expected = t.read(snapshot=2).sort_by("id")
    damage(os.path.join(t.path, files["snapshot"]), "deleted")
    with pytest.raises(CorruptTableError, match=r"snapshot-3 is missing.*snapshot=2.*mergetree repair"):
        Table.open(t.path)
    with pytest.raises(CorruptTableError, match="snapshot-3 is missing"):
        Table.open(t.path, check=False).read()
    assert Table.open(t.path, check=False).read(snapshot=2).sort_by("id").equals(expected)
    assert Table.repair(t.path) == ["snapshot/snapshot-3 (missing)"]
    table = Table.open(t.path)
    assert table.latest_snapshot().id == 2 and table.read().sort_by("id").equals(expected)
    table.write(pa.table({"id": [99], "v": ["new"]}))
    assert table.latest_snapshot().id == 3 and table.read().num_rows == expected.num_rows + 1


def test_a_damaged_manifest_can_be_repaired_to_the_previous_snapshot(tmp_path):
    t, files = build(tmp_path)
    expected = t.read(snapshot=2).sort_by("id")
    damage(os.path.join(t.path, files["manifest"]), "garbage")
    assert Table.repair(t.path) == ["snapshot/snapshot-3 (damaged: moved to snapshot/damaged/)"]
    assert Table.open(t.path).read().sort_by("id").equals(expected)


def test_the_cli_reports_damage_in_one_line(tmp_path):
    t, files = build(tmp_path)
    damage(os.path.join(t.path, files["data file"]), "truncated")
    out = subprocess.run([sys.executable, "-m", "mergetree", "read", t.path], capture_output=True, text=True)
    assert out.returncode == 1
    assert files["data file"] in out.stderr and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
