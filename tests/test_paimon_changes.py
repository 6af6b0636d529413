"""`mergetree.paimon.changes`: what changed between two snapshots of a Paimon table written by
pypaimon, with mergetree compactions in between.  For every a < b: the change applied to the
read at a gives the read at b, each key at most once (+I, -D, or -U then +U with the old row),
and the per-key values follow a dict model of the commits; changelog files (pypaimon's
``changelog-producer = input``) read as written; bad inputs one clear error each."""
from __future__ import annotations

import dataclasses
import datetime as dt
import importlib
import itertools
import json
import random
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from paimon_fixtures import expire_keeping_changelog, needs_pypaimon, pypaimon_read, write_paimon

from mergetree import paimon
from mergetree.errors import (
    CorruptTableError,
    InvalidArgumentError,
    SnapshotNotFoundError,
)
from mergetree.paimon.handle import PaimonTableHandle
from mergetree.table.paimon.metadata import PaimonTable

TABLE = "db.t"
# universal compaction from two sorted runs on: a compaction that is not full has work to do
TRIGGER = {"num-sorted-run.compaction-trigger": "2"}


def _state(warehouse: Path, snapshot: int, keys: list[str], filter=None) -> dict:
    if snapshot == 0:
        return {}
    rows = paimon.read(warehouse, TABLE, snapshot=snapshot, filter=filter).to_pylist()
    return {tuple(r[k] for k in keys): r for r in rows}


def _apply(state: dict, change: pa.Table, keys: list[str]) -> dict:
    """A net change applied row by row, checked strictly: +I a new key, -D the key's current row,
    -U the current row followed by +U of the same key; no key twice."""
    out = dict(state)
    rows = change.to_pylist()
    seen = set()
    i = 0
    while i < len(rows):
        row = dict(rows[i])
        kind = row.pop("_row_kind")
        key = tuple(row[k] for k in keys)
        assert key not in seen, f"key {key} changes twice"
        seen.add(key)
        if kind == "+I":
            assert key not in out, f"+I of present key {key}"
            out[key] = row
        elif kind == "-D":
            assert out.pop(key) == row
        elif kind == "-U":
            assert out[key] == row
            after = dict(rows[i + 1])
            assert after.pop("_row_kind") == "+U" and tuple(after[k] for k in keys) == key
            assert after != row, f"-U/+U of an unchanged row {row}"
            out[key] = after
            i += 1
        else:
            raise AssertionError(f"unexpected kind {kind} in {rows[i]}")
        i += 1
    return out


def _applied_changelog(state: dict, change: pa.Table, keys: list[str]) -> dict:
    """Changelog rows as written applied in order: +I/+U upsert, -D delete, -U nothing."""
    out = dict(state)
    for row in change.to_pylist():
        kind = row.pop("_row_kind")
        key = tuple(row[k] for k in keys)
        if kind in ("+I", "+U"):
            out[key] = row
        elif kind == "-D":
            out.pop(key, None)
    return out


def _latest(warehouse: Path) -> int:
    return PaimonTable.open(warehouse, TABLE).latest_snapshot_id() or 0


def _check_all_pairs(warehouse: Path, snapshots: list[int], keys: list[str], source: str = "delta") -> None:
    states = {s: _state(warehouse, s, keys) for s in snapshots}
    for i, a in enumerate(snapshots):
        for b in snapshots[i:]:
            change = paimon.changes(warehouse, TABLE, a, b, source=source).read_all()
            if a == b:
                assert change.num_rows == 0
            assert _apply(states[a], change, keys) == states[b], (a, b)
    # per commit: each commit's change applied to the state before it gives the state after it
    first, last = snapshots[0], snapshots[-1]
    by_commit: dict[int, list[dict]] = {}
    handle = PaimonTableHandle(warehouse, None, TABLE)
    for row in handle.changes(first, last, per_commit=True, source=source).read_all().to_pylist():
        by_commit.setdefault(row.pop("_snapshot_id"), []).append(row)
    assert set(by_commit) <= set(snapshots[1:])
    for before, after in itertools.pairwise(snapshots):
        assert _apply(states[before], pa.Table.from_pylist(by_commit.get(after, [])), keys) == states[after], after


def _written(schema: pa.Schema, rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=schema)


# -- deduplicate with deletes, the input changelog producer, compactions in between -------

DEDUP = pa.schema([("p", pa.int32()), ("k", pa.int64()), ("v", pa.string()), ("op", pa.string())])


def _dedup_commits(rng: random.Random, count: int, model: dict) -> list[tuple[pa.Table, dict]]:
    """Random upserts and deletes (distinct keys per commit) and the model state after each."""
    out = []
    for _ in range(count):
        rows = []
        for p, k in rng.sample([(p, k) for p in range(2) for k in range(12)], rng.randint(1, 8)):
            if (p, k) in model and rng.random() < 0.3:
                rows.append({"p": p, "k": k, "v": None, "op": "-D"})
                del model[(p, k)]
            else:
                row = {"p": p, "k": k, "v": rng.choice(["a", "b", "c", None]),
                       "op": "+U" if (p, k) in model else "+I"}
                rows.append(row)
                model[(p, k)] = row
        out.append((_written(DEDUP, rows), dict(model)))
    return out


@pytest.fixture(scope="module")
def dedup_table(tmp_path_factory) -> tuple[Path, list[int], dict[int, dict], list[list[dict]]]:
    """pypaimon commits (deletes by `rowkind.field`, changelog-producer input) with mergetree
    compactions between them: the warehouse, every snapshot id (0 first), the model state at
    each, and the rows each snapshot's commit wrote (empty for a compaction)."""
    root = tmp_path_factory.mktemp("dedup")
    wh, work = root / "wh", root / "work"
    rng = random.Random(26)
    model: dict = {}
    states: dict[int, dict] = {0: {}}
    written: dict[int, list[dict]] = {}
    options = {"bucket": "2", "changelog-producer": "input", "rowkind.field": "op", **TRIGGER}
    for step, (count, full) in enumerate([(3, False), (2, True), (3, None)]):
        commits = _dedup_commits(rng, count, model)
        first = _latest(wh) + 1 if step else 1
        write_paimon(work, wh, TABLE, [c for c, _ in commits], ["p", "k"], options=options,
                     tags={"one": 1} if step == 0 else None)
        for i, (c, state) in enumerate(commits):
            states[first + i] = {k: v for k, v in state.items()}
            written[first + i] = c.to_pylist()
        if full is not None:
            compacted = paimon.compact(wh, TABLE, full=full)
            assert compacted == _latest(wh)
            states[compacted] = states[compacted - 1]
            written[compacted] = []
    assert [s for s in written if not written[s]] == [4, 7]  # the compactions
    return wh, sorted(states), states, written


@needs_pypaimon
def test_dedup_delta_between_every_pair_applies(dedup_table) -> None:
    wh, snapshots, states, _ = dedup_table
    assert len(snapshots) >= 10
    for s in snapshots:  # the model and mergetree's read agree
        assert _state(wh, s, ["p", "k"]) == states[s]
    _check_all_pairs(wh, snapshots, ["p", "k"], source="delta")


@needs_pypaimon
def test_dedup_changelog_read_as_written(dedup_table) -> None:
    wh, snapshots, states, written = dedup_table
    for i, a in enumerate(snapshots):
        for b in snapshots[i + 1:]:
            change = paimon.changes(wh, TABLE, a, b, source="changelog").read_all()
            # every row each commit in (a, b] wrote, commit after commit, with its kind
            expected = [dict(r, _row_kind=r["op"]) for s in snapshots if a < s <= b for r in written[s]]
            assert _by_commit(change.to_pylist(), a, b, snapshots, written) == \
                _by_commit(expected, a, b, snapshots, written)
            assert _applied_changelog(states[a], change, ["p", "k"]) == states[b]
            # "auto" is the net change (an input changelog is not one), as on every table
            auto = paimon.changes(wh, TABLE, a, b).read_all()
            assert auto.equals(paimon.changes(wh, TABLE, a, b, source="delta").read_all())
            assert _apply(states[a], auto, ["p", "k"]) == states[b]


def _by_commit(rows: list[dict], a: int, b: int, snapshots: list[int], written: dict) -> list[list]:
    """Rows cut into the commits of (a, b] in order (their counts), each commit's sorted: the
    changelog keeps commit order, not row order within a commit (buckets are files)."""
    out, at = [], 0
    for s in snapshots:
        if a < s <= b:
            n = len(written[s])
            out.append(sorted(json.dumps(r, sort_keys=True) for r in rows[at:at + n]))
            at += n
    assert at == len(rows)
    return out


@needs_pypaimon
def test_dedup_columns_and_filter(dedup_table) -> None:
    wh, snapshots, _, _ = dedup_table
    a, b = snapshots[1], snapshots[-1]
    change = paimon.changes(wh, TABLE, a, b, columns=["v"], source="delta").read_all()
    assert change.column_names == ["p", "k", "v", "_row_kind"]  # the primary key always, in table order

    def projected(state: dict) -> dict:
        return {k: {c: r[c] for c in ("p", "k", "v")} for k, r in state.items()}
    # the change of the projected view: an update of other columns only is no change of it
    assert _apply(projected(_state(wh, a, ["p", "k"])), change, ["p", "k"]) == projected(_state(wh, b, ["p", "k"]))
    # a filter: the change of the filtered view
    f = [("v", "in", ["a", "b"]), ("p", "=", 1)]
    filtered = paimon.changes(wh, TABLE, a, b, filter=f, source="delta").read_all()
    assert _apply(_state(wh, a, ["p", "k"], f), filtered, ["p", "k"]) == _state(wh, b, ["p", "k"], f)
    by_changelog = paimon.changes(wh, TABLE, a, b, filter=f, source="changelog").read_all()
    assert all(r["p"] == 1 and r["v"] in ("a", "b") for r in by_changelog.to_pylist())
    assert by_changelog.num_rows == sum(1 for r in paimon.changes(wh, TABLE, a, b, source="changelog").read_all()
                                        .to_pylist() if r["p"] == 1 and r["v"] in ("a", "b"))
    # a pyarrow expression filters the same rows
    expression = pc.field("v").isin(["a", "b"]) & (pc.field("p") == 1)
    assert paimon.changes(wh, TABLE, a, b, filter=expression, source="delta").read_all().equals(filtered)
    # a tag names its snapshot
    assert paimon.changes(wh, TABLE, "one", b, source="delta").read_all().equals(
        paimon.changes(wh, TABLE, 1, b, source="delta").read_all())


@needs_pypaimon
def test_expired_snapshots_with_kept_changelog(dedup_table, tmp_path) -> None:
    wh, snapshots, states, _ = dedup_table
    copy = tmp_path / "wh"
    shutil.copytree(wh, copy)
    last = snapshots[-1]
    before = paimon.changes(wh, TABLE, 0, last, source="changelog").read_all()
    expire_keeping_changelog(copy, TABLE, [1, 2, 3])
    assert sorted(p.name for p in (copy / "db.db" / "t" / "changelog").glob("changelog-*")) == \
        ["changelog-1", "changelog-2", "changelog-3"]
    # the changelog of the expired commits reads as before; "auto" (the net change, computed)
    # cannot be had and says where to look
    assert paimon.changes(copy, TABLE, 0, last, source="changelog").read_all().equals(before)
    with pytest.raises(SnapshotNotFoundError, match="needs snapshot 1, which expired.*source='changelog'"):
        paimon.changes(copy, TABLE, 0, last)
    # the computed delta needs the state at start
    with pytest.raises(SnapshotNotFoundError, match=r"snapshot 3, which expired.*snapshots 4\.\..*changelog kept"):
        paimon.changes(copy, TABLE, 2, last, source="delta")
    # from a snapshot that is still there it computes as before
    assert paimon.changes(copy, TABLE, 4, last, source="delta").read_all().equals(
        paimon.changes(wh, TABLE, 4, last, source="delta").read_all())
    assert _apply(states[4], paimon.changes(copy, TABLE, 4, last, source="delta").read_all(), ["p", "k"]) == \
        states[last]


@needs_pypaimon
def test_bad_inputs(dedup_table) -> None:
    wh, snapshots, _, _ = dedup_table
    last = snapshots[-1]
    with pytest.raises(InvalidArgumentError, match=r"start \(3\) is after end \(2\)"):
        paimon.changes(wh, TABLE, 3, 2)
    with pytest.raises(SnapshotNotFoundError, match=rf"snapshot {last + 5} does not exist yet; snapshots 1\.\.{last}"):
        paimon.changes(wh, TABLE, 1, last + 5)
    with pytest.raises(SnapshotNotFoundError, match=rf"snapshot {last + 1} does not exist yet; snapshots 1\.\.{last}"):
        paimon.changes(wh, TABLE, last + 1)
    with pytest.raises(SnapshotNotFoundError, match="no tag 'nope'"):
        paimon.changes(wh, TABLE, "nope")
    with pytest.raises(InvalidArgumentError, match="source must be one of"):
        paimon.changes(wh, TABLE, 0, 1, source="lookup")
    with pytest.raises(InvalidArgumentError, match="start must be a snapshot id"):
        paimon.changes(wh, TABLE, -1)
    with pytest.raises(InvalidArgumentError, match="start must be a snapshot id"):
        paimon.changes(wh, TABLE, True)
    with pytest.raises(InvalidArgumentError, match="table has no column 'nope'"):
        paimon.changes(wh, TABLE, 0, 1, columns=["nope"])
    with pytest.raises(InvalidArgumentError):
        paimon.changes(wh, TABLE, 0, 1, filter=[("nope", "=", 1)])
    assert paimon.changes(wh, TABLE, last).read_all().num_rows == 0  # end: the latest


# -- partial-update, aggregation: the engine merges the added files onto the old state ----

def _build(tmp_path: Path, schema: pa.Schema, keys: list[str], options: dict, batches: list[list[list[dict]]],
           compact_between: list[bool | None]) -> tuple[Path, list[int]]:
    """pypaimon commits in groups (one process each), a mergetree compaction (full or not)
    after each group where asked; the warehouse and every snapshot id (0 first)."""
    wh, work = tmp_path / "wh", tmp_path / "work"
    for group, full in zip(batches, compact_between):
        write_paimon(work, wh, TABLE, [_written(schema, rows) for rows in group], keys,
                     options={**options, **TRIGGER})
        if full is not None:
            assert paimon.compact(wh, TABLE, full=full) == _latest(wh)
    return wh, list(range(_latest(wh) + 1))


PARTIAL = pa.schema([("k1", pa.string()), ("k2", pa.int32()), ("a", pa.int64()), ("b", pa.string())])


@needs_pypaimon
def test_partial_update_model(tmp_path) -> None:
    rng = random.Random(7)
    keys = [(s, n) for s in ("x", "yy", "") for n in range(4)]
    groups, model, models = [], {}, [{}]
    for size in (3, 2, 3):
        group = []
        for _ in range(size):
            rows = []
            for k1, k2 in rng.sample(keys, rng.randint(1, 6)):
                row = {"k1": k1, "k2": k2, "a": rng.choice([None, rng.randint(0, 9)]),
                       "b": rng.choice([None, "u", "w"])}
                rows.append(row)
                old = model.get((k1, k2), {"k1": k1, "k2": k2, "a": None, "b": None})
                model[(k1, k2)] = {c: (row[c] if row[c] is not None else old[c]) for c in row}
            group.append(rows)
            models.append(dict(model))
        groups.append(group)
    wh, snapshots = _build(tmp_path, PARTIAL, ["k1", "k2"], {"bucket": "2", "merge-engine": "partial-update"},
                           groups, [False, True, None])
    assert len(snapshots) == 11
    _check_all_pairs(wh, snapshots, ["k1", "k2"])
    by_commit = [s for s in snapshots if s not in (4, 7)]  # 4 and 7 are the compactions
    assert len(by_commit) == len(models)
    for s, state in zip(by_commit, models):
        assert _state(wh, s, ["k1", "k2"]) == state
        assert _apply({}, paimon.changes(wh, TABLE, 0, s).read_all(), ["k1", "k2"]) == state


AGG = pa.schema([("k", pa.int64()), ("n", pa.int64()), ("m", pa.int32()), ("s", pa.string())])


@needs_pypaimon
def test_aggregation_model(tmp_path) -> None:
    rng = random.Random(11)
    groups, model, models = [], {}, [{}]
    for size in (2, 3, 2):
        group = []
        for _ in range(size):
            rows = []
            for k in rng.sample(range(10), rng.randint(1, 5)):
                row = {"k": k, "n": rng.randint(-5, 5), "m": rng.randint(0, 50), "s": rng.choice(["p", "q", None])}
                rows.append(row)
                old = model.get(k)
                model[k] = dict(row) if old is None else {
                    "k": k, "n": old["n"] + row["n"], "m": max(old["m"], row["m"]),
                    "s": row["s"] if row["s"] is not None else old["s"]}
            group.append(rows)
            models.append(dict(model))
        groups.append(group)
    options = {"bucket": "1", "merge-engine": "aggregation", "fields.n.aggregate-function": "sum",
               "fields.m.aggregate-function": "max"}
    wh, snapshots = _build(tmp_path, AGG, ["k"], options, groups, [True, False, None])
    _check_all_pairs(wh, snapshots, ["k"])
    by_commit = [s for s in snapshots if s not in (3, 7)]
    for s, state in zip(by_commit, models):
        assert _state(wh, s, ["k"]) == {(k,): v for k, v in state.items()}


# -- tables whose visible state changes at compaction: first-row, deletion vectors ---------

SIMPLE = pa.schema([("k", pa.int64()), ("v", pa.int64())])


def _random_groups(seed: int, sizes: tuple[int, ...]) -> list[list[list[dict]]]:
    rng = random.Random(seed)
    return [[[{"k": k, "v": rng.randint(0, 99)} for k in rng.sample(range(15), rng.randint(1, 7))]
             for _ in range(size)] for size in sizes]


@needs_pypaimon
@pytest.mark.parametrize("options", [
    {"bucket": "2", "merge-engine": "first-row"},
    {"bucket": "2", "deletion-vectors.enabled": "true"},
    {"bucket": "2", "sequence.field": "v"},
    {"bucket": "2", "deletion-vectors.enabled": "true", "changelog-producer": "input"},
], ids=["first-row", "deletion-vectors", "sequence-field", "deletion-vectors-input"])
def test_more_engines(tmp_path, options) -> None:
    groups = _random_groups(3, (2, 2, 2))
    wh, snapshots = _build(tmp_path, SIMPLE, ["k"], options, groups, [False, True, None])
    if "sequence.field" not in options:
        # level-0 files are invisible to a read until compacted: a change can come with a COMPACT
        assert paimon.read(wh, TABLE, snapshot=2).num_rows == 0
        assert json.loads((wh / "db.db" / "t" / "snapshot" / "snapshot-3").read_text())["commitKind"] == "COMPACT"
        assert paimon.changes(wh, TABLE, 2, 3).read_all().num_rows > 0
    _check_all_pairs(wh, snapshots, ["k"])
    if "changelog-producer" in options:
        # level 0 is hidden: an APPEND's input changelog is not yet its visible change, so
        # "auto" computes every commit's change too (the compaction's comes with the COMPACT)
        _check_all_pairs(wh, snapshots, ["k"], source="auto")


# -- an overwrite removes files: the new state is read -------------------------------------

@needs_pypaimon
def test_overwrite(tmp_path) -> None:
    schema = pa.schema([("p", pa.string()), ("k", pa.int64()), ("v", pa.int64())])
    commits = [_written(schema, [{"p": p, "k": k, "v": k} for p in ("a", "b") for k in range(6)]),
               _written(schema, [{"p": "a", "k": k, "v": 10 * k} for k in (1, 2, 8)]),
               _written(schema, [{"p": "a", "k": k, "v": -k} for k in (2, 3, 9)]),  # overwrites partition a
               _written(schema, [{"p": "b", "k": 0, "v": 5}])]
    wh, work = tmp_path / "wh", tmp_path / "work"
    write_paimon(work, wh, TABLE, commits, ["p", "k"], partition_keys=["p"], options={"bucket": "2"},
                 overwrite={2: {"p": "a"}})
    snapshots = list(range(_latest(wh) + 1))
    assert json.loads((wh / "db.db" / "t" / "snapshot" / "snapshot-3").read_text())["commitKind"] == "OVERWRITE"
    assert {r["k"] for r in paimon.read(wh, TABLE, snapshot=3, filter=[("p", "=", "a")]).to_pylist()} == {2, 3, 9}
    _check_all_pairs(wh, snapshots, ["p", "k"])
    with pytest.raises(InvalidArgumentError, match="OVERWRITE commit without changelog files"):
        paimon.changes(wh, TABLE, 2, 3, source="changelog")


# -- a changelog written by compaction (lookup), built from Paimon's format ----------------

@needs_pypaimon
def test_changelog_of_compact_commits(dedup_table, tmp_path) -> None:
    """pypaimon cannot run the lookup producer (its changelog comes from a compaction, which
    pypaimon does not do), so such a table is built from Paimon's snapshot format: the input
    changelog of APPEND snapshot 2 moved to a COMPACT snapshot 3 that changes no file (as a
    lookup compaction commits it), the table's option set to lookup."""
    wh, _, states, _ = dedup_table
    root = tmp_path / "wh" / "db.db" / "t"
    shutil.copytree(wh / "db.db" / "t", root, ignore=shutil.ignore_patterns("snapshot-[3-9]*", "snapshot-1?"))
    (root / "snapshot" / "LATEST").write_text("2")
    schema_file = root / "schema" / "schema-0"
    schema = json.loads(schema_file.read_text())
    schema["options"]["changelog-producer"] = "lookup"
    schema_file.write_text(json.dumps(schema))
    append = json.loads((root / "snapshot" / "snapshot-2").read_text())
    compact = dict(append, id=3, commitKind="COMPACT", deltaRecordCount=0)
    for k in ("changelogManifestList", "changelogManifestListSize", "changelogRecordCount"):
        append.pop(k)
    (root / "snapshot" / "snapshot-2").write_text(json.dumps(append))
    (root / "snapshot" / "snapshot-3").write_text(json.dumps(compact))
    copy = tmp_path / "wh"
    by_changelog = paimon.changes(copy, TABLE, 1, 3, source="changelog").read_all()
    assert by_changelog.equals(paimon.changes(wh, TABLE, 1, 2, source="changelog").read_all())
    # "auto": APPEND 2 has no changelog of its own, so the change is computed
    delta = paimon.changes(copy, TABLE, 1, 3).read_all()
    assert _apply(states[1], delta, ["p", "k"]) == states[2]
    # lookup: an APPEND's changelog comes with the compaction after it, not yet in (1, 2]
    assert paimon.changes(copy, TABLE, 1, 2, source="changelog").read_all().num_rows == 0
    # input: every APPEND has its own changelog, a missing one is an error
    schema["options"]["changelog-producer"] = "input"
    schema_file.write_text(json.dumps(schema))
    with pytest.raises(InvalidArgumentError, match="snapshot 2 .*without changelog files.*'input'"):
        paimon.changes(copy, TABLE, 1, 2, source="changelog")


@needs_pypaimon
def test_changelog_producer_none_reads_added_files_as_written(tmp_path) -> None:
    groups = _random_groups(5, (3,))
    wh, _ = _build(tmp_path, SIMPLE, ["k"], {"bucket": "1"}, groups, [True])
    as_written = paimon.changes(wh, TABLE, 0, 4, source="changelog").read_all()
    assert sorted((r["k"], r["v"]) for r in as_written.to_pylist()) == \
        sorted((r["k"], r["v"]) for g in groups for rows in g for r in rows)
    assert set(as_written.column("_row_kind").to_pylist()) == {"+I"}
    # no changelog files: "auto" computes the net change
    assert paimon.changes(wh, TABLE, 0, 4).read_all().equals(paimon.changes(wh, TABLE, 0, 4, source="delta").read_all())
    # expired with their changelog kept: under none, the kept metadata's added files as written
    expire_keeping_changelog(wh, TABLE, [1, 2])
    assert paimon.changes(wh, TABLE, 0, 4, source="changelog").read_all().equals(as_written)
    with pytest.raises(SnapshotNotFoundError, match="needs snapshot 1, which expired"):
        paimon.changes(wh, TABLE, 0, 4, source="delta")


# -- the CLI --------------------------------------------------------------------------------

@needs_pypaimon
def test_cli(dedup_table, capsys) -> None:
    from mergetree.cli import main
    wh, _, _, _ = dedup_table
    assert main(["paimon", "changes", str(wh), TABLE, "--from", "1", "--to", "2", "--columns", "v",
                 "--source", "delta"]) == 0
    out = capsys.readouterr().out
    expected = paimon.changes(wh, TABLE, 1, 2, columns=["v"], source="delta").read_all()
    assert f"{expected.num_rows} change" in out
    assert "_row_kind" in out
    assert main(["paimon", "changes", str(wh), TABLE, "--from", "3", "--to", "1"]) == 2  # a usage error
    assert "start (3) is after end (1)" in capsys.readouterr().err


# -- only the files holding a touched key are opened ----------------------------------------

@needs_pypaimon
def test_only_files_holding_touched_keys_are_read(tmp_path) -> None:
    """Keys 0..9 and 100..109 in two files of one bucket; a commit changes key 105: the change
    reads the second file and the commit's, never the first (deleted here to prove it)."""
    wh, work = tmp_path / "wh", tmp_path / "work"
    commits = [_written(SIMPLE, [{"k": k, "v": k} for k in range(10)]),
               _written(SIMPLE, [{"k": k, "v": k} for k in range(100, 110)]),
               _written(SIMPLE, [{"k": 105, "v": -1}, {"k": 200, "v": 2}])]
    write_paimon(work, wh, TABLE, commits, ["k"], options={"bucket": "1"})
    t = PaimonTable.open(wh, TABLE)
    (first_file,) = [pf for pf in t.live_files(t.snapshot(1))]
    Path(first_file.path).unlink()
    change = paimon.changes(wh, TABLE, 2, 3, source="delta").read_all()
    assert change.to_pylist() == [{"k": 105, "v": 105, "_row_kind": "-U"}, {"k": 105, "v": -1, "_row_kind": "+U"},
                                  {"k": 200, "v": 2, "_row_kind": "+I"}]
    with pytest.raises(CorruptTableError, match="missing"):
        paimon.read(wh, TABLE, snapshot=2)


# -- schema evolution: the rows in the schema of the end snapshot --------------------------

@needs_pypaimon
def test_changes_across_a_schema_change(tmp_path) -> None:
    wh, work = tmp_path / "wh", tmp_path / "work"
    wide = pa.schema([("k", pa.int64()), ("v", pa.int64()), ("w", pa.string())])
    write_paimon(work, wh, TABLE, [_written(SIMPLE, [{"k": k, "v": k} for k in range(6)]),
                                   _written(SIMPLE, [{"k": 1, "v": 10}])], ["k"], options={"bucket": "2"},
                 stages=[([["add_column", "w", "STRING"]],
                          [_written(wide, [{"k": 2, "v": 20, "w": "x"}, {"k": 7, "v": 7, "w": None}])])])
    before = {k: dict(r, w=None) for k, r in _state(wh, 1, ["k"]).items()}
    change = paimon.changes(wh, TABLE, 1, 3).read_all()
    assert change.column_names == ["k", "v", "w", "_row_kind"]
    assert _apply(before, change, ["k"]) == _state(wh, 3, ["k"])
    # a range under the old schema reads in it
    assert paimon.changes(wh, TABLE, 1, 2).read_all().to_pylist() == [
        {"k": 1, "v": 1, "_row_kind": "-U"}, {"k": 1, "v": 10, "_row_kind": "+U"}]


@needs_pypaimon
def test_append_table(tmp_path) -> None:
    """An append table: the rows each commit added (+I) and an overwrite removed (-D); read(a)
    plus the change equals read(b) as multisets (pypaimon's reads: mergetree.paimon.read is for
    primary-key tables), and the model's rows."""
    schema = pa.schema([("p", pa.string()), ("k", pa.int64()), ("v", pa.string())])
    rng = random.Random(3)
    commits = [_written(schema, [{"p": rng.choice("ab"), "k": rng.randint(0, 5), "v": rng.choice(["x", None])}
                                 for _ in range(rng.randint(1, 5))]) for _ in range(5)]
    commits[3] = commits[3].set_column(0, "p", pa.array(["a"] * commits[3].num_rows))  # overwrites partition a
    wh, work = tmp_path / "wh", tmp_path / "work"
    write_paimon(work, wh, TABLE, commits, [], partition_keys=["p"], overwrite={3: {"p": "a"}})
    models: list[list[dict]] = [[]]
    for i, c in enumerate(commits):
        rows = [r for r in models[-1] if not (i == 3 and r["p"] == "a")] + c.to_pylist()
        models.append(rows)

    def bag(rows: list[dict]) -> list[str]:
        return sorted(json.dumps(r, sort_keys=True) for r in rows)
    for s in range(1, 6):
        assert bag(pypaimon_read(wh, TABLE, work, s).to_pylist()) == bag(models[s])
    for a in range(6):
        for b in range(a, 6):
            change = paimon.changes(wh, TABLE, a, b).read_all()
            state = bag(models[a])
            for row in change.to_pylist():
                kind = row.pop("_row_kind")
                if kind == "+I":
                    state.append(json.dumps(row, sort_keys=True))
                else:
                    assert kind == "-D"
                    state.remove(json.dumps(row, sort_keys=True))
            assert sorted(state) == bag(models[b]), (a, b)
            assert paimon.changes(wh, TABLE, a, b, source="changelog").read_all().equals(change)
    assert paimon.changes(wh, TABLE, 0, 5, columns=["v"], filter=[("p", "=", "b")]).read_all().column_names == \
        ["v", "_row_kind"]


@needs_pypaimon
def test_a_partition_overwrite_changes_that_partition_only(tmp_path) -> None:
    schema = pa.schema([("p", pa.string()), ("k", pa.int64())])
    wh, work = tmp_path / "wh", tmp_path / "work"
    write_paimon(work, wh, TABLE, [pa.table({"p": ["a", "b", "b"], "k": [1, 2, 3]}, schema=schema),
                                   pa.table({"p": ["a"], "k": [9]}, schema=schema)],
                 [], partition_keys=["p"], overwrite={1: {"p": "a"}})
    expected = [{"p": "a", "k": 1, "_row_kind": "-D"}, {"p": "a", "k": 9, "_row_kind": "+I"}]
    for source in ("delta", "changelog"):
        assert paimon.changes(wh, TABLE, 1, 2, source=source).read_all().to_pylist() == expected


# -- the comparison of two states, against a row-by-row model -------------------------------

def test_diff_states_model() -> None:
    """`diff_states` (no pypaimon needed): composite string keys, nulls, NaN, duplicates of
    values, empty sides; the change applied to the old rows gives the new ones and equal rows
    give nothing."""
    hypothesis = pytest.importorskip("hypothesis")
    st = pytest.importorskip("hypothesis.strategies")
    diff_states = importlib.import_module("mergetree.table.changes.compute").diff_states
    schema = pa.schema([("a", pa.string()), ("b", pa.int32()), ("x", pa.float64()), ("y", pa.list_(pa.int8()))])
    keys = st.tuples(st.sampled_from(["", "a", "ab", "b"]), st.integers(0, 3))
    values = st.tuples(st.one_of(st.none(), st.sampled_from([0.0, 1.5, float("nan")])),
                       st.one_of(st.none(), st.lists(st.integers(-2, 2), max_size=2)))

    def table(state: dict) -> pa.Table:  # one row per key, in key order
        return pa.Table.from_pylist([{"a": k[0], "b": k[1], "x": v[0], "y": v[1]} for k, v in sorted(state.items())],
                                    schema=schema)

    def same(p, q) -> bool:  # nulls equal, NaN equals NaN
        return all((u != u and w != w) or u == w for u, w in zip(p, q))

    @hypothesis.settings(max_examples=150, deadline=None)
    @hypothesis.given(st.dictionaries(keys, values, max_size=8), st.dictionaries(keys, values, max_size=8))
    def check(old: dict, new: dict) -> None:
        out = diff_states(["a", "b"], ["x", "y"], table(old), table(new))
        expected = []
        for k in sorted(set(old) | set(new)):
            if k not in old:
                expected.append((k, new[k], "+I"))
            elif k not in new:
                expected.append((k, old[k], "-D"))
            elif not same(old[k], new[k]):
                expected += [(k, old[k], "-U"), (k, new[k], "+U")]
        got = [((r["a"], r["b"]), (r["x"], r["y"]), r["_row_kind"]) for r in out.to_pylist()]
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            assert g[0] == e[0] and g[2] == e[2] and same(g[1], e[1])
    check()


@needs_pypaimon
def test_consumers_are_paimons_consumer_files(dedup_table, tmp_path) -> None:
    """A consumer of a Paimon table's changes is Java's ``consumer/consumer-<id>`` holding
    ``{"nextSnapshot": n}`` — what Java's readers resume from and its snapshot expiry keeps —
    and its time is the file's: a reader resumes where it stopped, moves only forward, is reset,
    listed, dropped and expired by ``consumer.expiration-time`` as on mergetree's own tables."""
    import os
    import time

    from mergetree.errors import ConsumerNotFoundError
    from mergetree.table import consumers as consumer_rules
    wh, snapshots, states, _ = dedup_table
    copy = tmp_path / "wh"
    shutil.copytree(wh, copy)
    table = PaimonTableHandle(copy, None, TABLE)
    root = Path(PaimonTable.open(copy, TABLE).path)
    middle = snapshots[len(snapshots) // 2]
    first = table.changes(0, middle, consumer_id="etl").read_all()
    assert _apply({}, first, ["p", "k"]) == states[middle]
    stored = json.loads((root / "consumer" / "consumer-etl").read_text())
    assert stored == {"nextSnapshot": middle + 1}  # Java's Consumer, nothing else
    rest = paimon.changes(copy, TABLE, None, consumer_id="etl").read_all()  # resumes where it stopped
    assert _apply(states[middle], rest, ["p", "k"]) == states[snapshots[-1]]
    assert table.consumer("etl").next_snapshot == snapshots[-1] + 1
    assert table.changes(0, middle, consumer_id="etl").read_all().num_rows  # an older re-read ...
    assert table.consumer("etl").next_snapshot == snapshots[-1] + 1  # ... never moves it back
    # a consumer Java wrote (its JSON layout), listed and read beside mergetree's
    (root / "consumer" / "consumer-flink").write_text('{\n  "nextSnapshot" : 3\n}')
    assert [(c.id, c.next_snapshot) for c in table.consumers()] == [("etl", snapshots[-1] + 1), ("flink", 3)]
    assert abs(table.consumer("flink").updated - time.time() * 1000) < 60_000  # the file's time
    reset = table.reset_consumer("flink", 2)
    assert reset.next_snapshot == 2 and reset.updated == table.consumer("flink").updated  # the file's time
    assert json.loads((root / "consumer" / "consumer-flink").read_text()) == {"nextSnapshot": 2}
    with pytest.raises(InvalidArgumentError, match="cannot move consumer"):
        table.reset_consumer("flink", snapshots[-1] + 5)
    table.drop_consumer("flink")
    assert not (root / "consumer" / "consumer-flink").exists()
    with pytest.raises(ConsumerNotFoundError, match="Paimon table db.t has no consumer 'flink'; its consumers: etl"):
        table.consumer("flink")
    # expiry by the file's modification time, as Java's ConsumerManager.expire
    (root / "consumer" / "consumer-old").write_text('{"nextSnapshot": 1}')
    hour_ago = time.time() - 3600
    os.utime(root / "consumer" / "consumer-old", (hour_ago, hour_ago))
    directory = table.at().directory
    assert consumer_rules.expire(directory) == []  # no consumer.expiration-time: none expires
    expiring = PaimonTableHandle(copy, None, TABLE)
    expiring.directory = dataclasses.replace(directory, options=dataclasses.replace(
        directory.options, consumer_expiration=dt.timedelta(minutes=30)))
    assert consumer_rules.expire(expiring.directory) == ["old"]
    assert [c.id for c in table.consumers()] == ["etl"]
    with pytest.raises(InvalidArgumentError, match="consumer id"):
        table.changes(0, consumer_id="../x")
    # an id Java allows that mergetree's own tables do not, listed and dropped like any
    (root / "consumer" / "consumer-my job:1").write_text('{"nextSnapshot": 2}')
    assert table.consumer("my job:1").next_snapshot == 2
    table.drop_consumer("my job:1")
    # Java's expiry keeps snapshots from a consumer's next one on, not the one before: a resumed
    # reader then reads the commits as written, as Java's stream read does
    as_written = table.changes(middle, source="changelog").read_all()
    table.reset_consumer("etl", middle + 1)
    for i in snapshots:
        if 0 < i <= middle:
            (root / "snapshot" / f"snapshot-{i}").unlink()
    resumed = table.changes(consumer_id="etl").read_all()
    assert resumed.num_rows and resumed.to_pylist() == as_written.to_pylist()
    assert table.consumer("etl").next_snapshot == snapshots[-1] + 1


def test_a_hidden_level_0_commit_with_an_input_changelog_is_seen_once(tmp_path) -> None:
    """Found by a review of issue 36: a deletion-vector table's writes (level 0, hidden from batch
    reads) with `changelog-producer = input` once stored the writer's producer marker in Paimon's
    snapshot properties, so per-commit changes counted each row at its write and again at the
    compaction that made it visible.  The marker is the table's rule, never a stored property."""
    from mergetree import Table
    t = Table.create(str(tmp_path / "t"), pa.schema([("id", pa.int64()), ("v", pa.string())]), primary_key="id",
                     options={"deletion-vectors.enabled": "true", "changelog-producer": "input", "write-only": "true"})
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    t.write(pa.table({"id": [2, 3], "v": ["B", "c"]}))
    for i in (1, 2):
        stored = json.loads((tmp_path / "t" / "snapshot" / f"snapshot-{i}").read_text())
        assert "changelog-producer" not in (stored.get("properties") or {})
    assert t.read().num_rows == 0 and t.changes(0, 2, per_commit=True).read_all().num_rows == 0
    t.compact(full=True)
    rows = t.changes(0, 3, per_commit=True).read_all().to_pylist()
    assert sorted((r["id"], r["v"], r["_snapshot_id"]) for r in rows) == [(1, "a", 3), (2, "B", 3), (3, "c", 3)]
