"""mergetree.paimon against real Paimon tables written by pypaimon: every read equals
pypaimon's read and a reference model; after mergetree's compaction pypaimon reads the same
rows from fewer sorted runs and keeps writing; what mergetree cannot honour is refused."""
from __future__ import annotations

import datetime as dt
import json
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from paimon_fixtures import needs_pypaimon, pypaimon_read, rows, write_paimon

import mergetree.paimon as mp
from mergetree import (
    CompactionConflictError,
    InvalidArgumentError,
    SnapshotNotFoundError,
    Table,
    UnsupportedPaimonFeatureError,
)
from mergetree.codec.binary_row import decode_row, encode_row
from mergetree.codec.types import parse_type
from mergetree.paimon.handle import PaimonTableHandle
from mergetree.table.compaction.runner import execute_unit, plan_units
from mergetree.table.compaction.transaction import rewrite_transaction
from mergetree.table.directory import TableDirectory
from mergetree.table.files import DataFileMeta, remove_uncommitted
from mergetree.table.paimon.metadata import PaimonTable
from mergetree.table.paimon.options import check_options
from mergetree.table.snapshots import FileEntry, Snapshot

SCHEMA = pa.schema([
    ("id", pa.int64()), ("region", pa.string()), ("amount", pa.decimal128(12, 2)), ("ts", pa.timestamp("us")),
    ("v", pa.float64()), ("cnt", pa.int64()), ("note", pa.string()), ("name", pa.string()), ("op", pa.string()),
])
T0 = dt.datetime(2024, 5, 1, 12, 0, 0)


def _key(partitioned: bool) -> list[str]:
    # declared in another order than the schema's columns
    return (["region"] if partitioned else []) + ["name", "id"]


def _commits(seed: int, count: int, keys: int, deletes: bool, nulls: bool) -> list[pa.Table]:
    rng = random.Random(seed)
    out = []
    for c in range(count):
        chosen = rng.sample(range(keys), rng.randint(1, keys // 2))
        data: dict[str, list] = {f.name: [] for f in SCHEMA}
        for k in chosen:
            data["id"].append(k)
            data["name"].append(f"customer-with-a-long-shared-prefix-{k % 7:03d}")
            data["region"].append(f"r{k % 3}")
            data["amount"].append(Decimal(rng.randint(-10_000, 10_000)) / 100)
            data["ts"].append(T0 + dt.timedelta(seconds=rng.randint(0, 50), microseconds=rng.randint(0, 999_999)))
            data["v"].append(None if nulls and rng.random() < 0.3 else rng.random())
            data["cnt"].append(None if nulls and rng.random() < 0.3 else rng.randint(0, 100))
            data["note"].append(None if nulls and rng.random() < 0.4 else f"c{c}-{rng.randint(0, 9)}")
            data["op"].append("-D" if deletes and c > 0 and rng.random() < 0.2 else "+I")
        out.append(pa.table(data, schema=SCHEMA))
    return out


def model(engine: str, commits: list[pa.Table], key: list[str], sequence: str | None = None) -> list[dict]:
    """What a Paimon read must return, computed row by row."""
    state: dict[tuple, dict] = {}
    order: dict[tuple, tuple] = {}
    n = 0
    for commit in commits:
        for row in commit.to_pylist():
            n += 1
            k = tuple(row[c] for c in key)
            if engine == "deduplicate":
                if sequence is not None:
                    rank = (row[sequence], n)
                    if k in order and order[k] > rank:
                        continue
                    order[k] = rank
                if row["op"] in ("-D", "-U"):
                    state.pop(k, None)
                else:
                    state[k] = row
            elif engine == "first-row":
                state.setdefault(k, row)
            elif engine == "partial-update":
                old = state.get(k, {})
                state[k] = {c: row[c] if row[c] is not None else old.get(c) for c in row}
            elif engine == "aggregation":
                old = state.get(k)
                if old is None:
                    state[k] = dict(row)
                    continue
                new = {}
                for c in row:
                    a, b = old[c], row[c]
                    if c in ("amount", "cnt"):
                        new[c] = b if a is None else a if b is None else a + b
                    elif c == "v":
                        new[c] = b if a is None else a if b is None else max(a, b)
                    else:
                        new[c] = b if b is not None else a
                state[k] = new
    table = pa.Table.from_pylist(list(state.values()), schema=SCHEMA)
    return rows(table, key)


def _options(engine: str, buckets: int, deletes: bool, sequence: bool) -> dict:
    opts = {"bucket": str(buckets), "merge-engine": engine}
    if deletes:
        opts["rowkind.field"] = "op"
    if sequence:
        opts["sequence.field"] = "ts"
    if engine == "aggregation":
        opts.update({"fields.amount.aggregate-function": "sum", "fields.cnt.aggregate-function": "sum",
                     "fields.v.aggregate-function": "max"})
    return opts


def _check_point_reads(wh: Path, name: str, commits: list[pa.Table], key: list[str], expected: list[dict]) -> None:
    """Point reads (every key column fixed) of written keys, deleted ones included, and of a
    key never written: each returns exactly the model's row for that key, or nothing."""
    written = [dict(zip(key, k)) for k in dict.fromkeys(tuple(r[c] for c in key) for c in commits
                                                         for r in c.to_pylist())]
    for probe in written[:: max(1, len(written) // 12)] + [dict(written[0], id=10**9)]:
        want = [r for r in expected if all(r[c] == v for c, v in probe.items())]
        got = mp.read(str(wh), name, filter=[(c, "=", v) for c, v in probe.items()])
        assert rows(got, key) == want, probe


def _sorted_runs(wh: Path, table: str) -> int:
    return mp.info(str(wh), table).max_sorted_runs


CASES = [
    # engine, buckets, partitioned, commits, deletes, nulls, sequence field
    ("deduplicate", 1, False, 1, False, True, False),
    ("deduplicate", 4, True, 16, True, True, False),
    ("deduplicate", 4, False, 6, False, False, True),
    ("partial-update", 4, True, 5, False, True, False),
    ("aggregation", 1, False, 8, False, True, False),
    ("first-row", 4, False, 4, False, True, False),
]


@needs_pypaimon
@pytest.mark.parametrize(("engine", "buckets", "partitioned", "count", "deletes", "nulls", "sequence"), CASES,
                         ids=[f"{c[0]}-b{c[1]}{'-part' if c[2] else ''}-{c[3]}c{'-del' if c[4] else ''}"
                              f"{'-seq' if c[6] else ''}" for c in CASES])
def test_read_compact_and_keep_writing(tmp_path: Path, engine: str, buckets: int, partitioned: bool, count: int,
                                       deletes: bool, nulls: bool, sequence: bool) -> None:
    wh, work, name = tmp_path / "wh", tmp_path / "work", "db.t"
    key = _key(partitioned)
    commits = _commits(count * 31 + buckets, count, 120, deletes, nulls)
    opts = _options(engine, buckets, deletes, sequence)
    write_paimon(work, wh, name, commits, key, ["region"] if partitioned else [], opts)
    expected = model(engine, commits, key, "ts" if sequence else None)
    compacted = model(engine, commits, key, "ts" if sequence else None)
    if engine == "first-row":  # Paimon's batch reads skip level 0 of first-row tables: visible once compacted
        expected = []

    ours = mp.read(str(wh), name)
    assert ours.schema.names == SCHEMA.names
    assert rows(ours, key) == expected
    _check_point_reads(wh, name, commits, key, expected)
    assert rows(pypaimon_read(wh, name, work), key) == expected
    assert rows(mp.scan(str(wh), name, threads=2).read_all(), key) == expected

    runs_before = _sorted_runs(wh, name)
    snapshot = mp.compact(str(wh), name, full=True)
    assert snapshot is not None
    assert _sorted_runs(wh, name) == 1 <= runs_before
    assert mp.compact(str(wh), name, full=True) is None or _sorted_runs(wh, name) == 1
    expected = compacted
    assert rows(mp.read(str(wh), name), key) == expected
    _check_point_reads(wh, name, commits, key, expected)
    assert rows(pypaimon_read(wh, name, work), key) == expected

    more = _commits(7, 2, 160, deletes, nulls)
    write_paimon(work, wh, name, more, key, ["region"] if partitioned else [], opts)
    if engine != "first-row":
        expected = model(engine, commits + more, key, "ts" if sequence else None)
    assert rows(pypaimon_read(wh, name, work), key) == expected
    assert rows(mp.read(str(wh), name), key) == expected


@needs_pypaimon
def test_time_travel_filters_and_projection(tmp_path: Path) -> None:
    wh, work, name = tmp_path / "wh", tmp_path / "work", "db.t"
    key = _key(True)
    commits = _commits(5, 6, 200, True, True)
    write_paimon(work, wh, name, commits, key, ["region"], _options("deduplicate", 4, True, False), tags={"v3": 3})
    for sid in (1, 3, 6):
        expected = model("deduplicate", commits[:sid], key)
        assert rows(mp.read(str(wh), name, snapshot=sid), key) == expected
        assert rows(pypaimon_read(wh, name, work, snapshot=sid), key) == expected
    assert rows(mp.read(str(wh), name, snapshot="v3"), key) == model("deduplicate", commits[:3], key)
    with pytest.raises(SnapshotNotFoundError, match="no snapshot 99"):
        mp.read(str(wh), name, snapshot=99)
    with pytest.raises(SnapshotNotFoundError, match="no tag 'nope'"):
        mp.read(str(wh), name, snapshot="nope")

    everything = pa.Table.from_pylist(model("deduplicate", commits, key), schema=SCHEMA)
    filters = [("id", "=", 17), [("region", "=", "r1"), ("id", "<", 50)], ("v", ">", 0.5),
               ("or", [("name", "=", "customer-with-a-long-shared-prefix-003"), ("id", "in", [1, 2, 3])]),
               [("note", "is null"), ("region", "!=", "r0")]]
    from mergetree.table import filters as flt
    for f in filters:
        want = everything.filter(flt.to_expression(flt.normalize(f, SCHEMA), SCHEMA))
        got = mp.read(str(wh), name, columns=["id", "region", "name", "v"], filter=f)
        assert got.schema.names == ["id", "region", "name", "v"]
        assert rows(got, key) == rows(want.select(["id", "region", "name", "v"]), key)
    assert not hasattr(mp, "plan_read")  # planning is the engine's (`Table.plan`), not the package's public face
    plan = PaimonTableHandle(str(wh), None, name).at().plan(filter=[("region", "=", "r1"), ("id", "=", 4)])
    assert plan.files_total > len(plan.files)  # partition and key statistics pruned files
    assert plan.steps["partition"].files > 0 and plan.steps["min/max"].files > 0


@needs_pypaimon
def test_compaction_by_the_universal_rules(tmp_path: Path) -> None:
    """Without full=True compaction follows Paimon's triggers: nothing below 5 sorted runs."""
    wh, work, name = tmp_path / "wh", tmp_path / "work", "db.t"
    commits = _commits(11, 4, 100, False, False)
    write_paimon(work, wh, name, commits, ["name", "id"], [], {"bucket": "1"})
    assert mp.compact(str(wh), name) is None           # 4 runs < trigger 5
    write_paimon(work, wh, name, _commits(12, 1, 100, False, False), ["name", "id"], [], {"bucket": "1"})
    assert _sorted_runs(wh, name) == 5
    assert mp.compact(str(wh), name) is not None
    assert _sorted_runs(wh, name) < 5
    expected = model("deduplicate", commits + _commits(12, 1, 100, False, False), ["name", "id"])
    assert rows(pypaimon_read(wh, name, work), ["name", "id"]) == expected


@needs_pypaimon
def test_compaction_conflicts_and_rebases(tmp_path: Path) -> None:
    """The engine's compaction run stepwise (plan, rewrite every bucket, commit) with another
    commit in between: one that replaced its inputs makes the commit conflict, and nothing the
    rewrite wrote is left behind; one that kept them (an append) is rebased upon."""
    wh, work, name = tmp_path / "wh", tmp_path / "work", "db.t"
    commits = _commits(21, 4, 100, False, False)
    write_paimon(work, wh, name, commits, ["name", "id"], [], {"bucket": "2"})
    files_before = set(_data_files(wh))

    # a compaction whose inputs another compaction replaced: aborted, nothing left behind
    job = rewrite_all(str(wh), name, full=True)
    assert job is not None and job.new_files
    written = job.written
    assert all(os.path.exists(p) for p in written) and not files_before & set(written)
    assert mp.compact(str(wh), name, full=True) is not None
    latest = PaimonTable.open(str(wh), name).latest_snapshot_id()
    files_now = set(_data_files(wh))
    with pytest.raises(CompactionConflictError, match="replaced"):
        job.commit()
    assert PaimonTable.open(str(wh), name).latest_snapshot_id() == latest
    assert not any(os.path.exists(p) for p in written)  # the lost rewrite's files are removed
    assert set(_data_files(wh)) == files_now - set(written)

    # a compaction that lost the race to an append that kept its inputs: rebased on top of it
    write_paimon(work, wh, name, _commits(22, 5, 100, False, False), ["name", "id"], [], {"bucket": "2"})
    job = rewrite_all(str(wh), name, full=True)
    assert job is not None
    extra = _commits(23, 1, 100, False, False)
    write_paimon(work, wh, name, extra, ["name", "id"], [], {"bucket": "2"})
    appended = PaimonTable.open(str(wh), name).latest_snapshot_id()
    snapshot = job.commit()
    assert snapshot is not None and snapshot.id == appended + 1 and snapshot.commit_kind == "COMPACT"
    expected = model("deduplicate", commits + _commits(22, 5, 100, False, False) + extra, ["name", "id"])
    assert rows(mp.read(str(wh), name), ["name", "id"]) == expected
    assert rows(pypaimon_read(wh, name, work), ["name", "id"]) == expected
    assert files_before  # the table had data files to start with


@needs_pypaimon
def test_files_of_an_older_schema_are_mapped_by_field_id(tmp_path: Path) -> None:
    """ALTER TABLE add column and rename column between commits: old files read under the new
    names, with nulls for the new column, merged with new files; pypaimon agrees."""
    wh, work, name = tmp_path / "wh", tmp_path / "work", "db.t"
    key = ["name", "id"]
    old = _commits(61, 3, 60, False, True)
    write_paimon(work, wh, name, old, key, [], {"bucket": "2"})
    renamed = pa.schema([pa.field("memo" if f.name == "note" else f.name, f.type) for f in SCHEMA]
                        + [pa.field("extra", pa.int64())])
    new = [pa.Table.from_arrays(c.columns + [pa.array(range(c.num_rows), pa.int64())], schema=renamed)
           for c in _commits(62, 2, 60, False, True)]
    write_paimon(work, wh, name, new, key, [], {"bucket": "2"},
                 alter=[["rename_column", "note", "memo"], ["add_column", "extra", "BIGINT"]])
    theirs = pypaimon_read(wh, name, work)
    ours = mp.read(str(wh), name)
    assert ours.schema.names == renamed.names
    assert rows(ours, key) == rows(theirs, key)
    state = {}
    for c in old:
        for r in c.to_pylist():
            r["memo"] = r.pop("note")
            r["extra"] = None
            state[(r["name"], r["id"])] = r
    for c in new:
        for r in c.to_pylist():
            state[(r["name"], r["id"])] = r
    assert rows(ours, key) == rows(pa.Table.from_pylist(list(state.values()), schema=renamed), key)
    got = mp.read(str(wh), name, columns=["id", "name", "memo"], filter=("id", "<", 30))
    assert rows(got, key) == [{k: r[k] for k in ("id", "name", "memo")} for r in rows(ours, key) if r["id"] < 30]


@dataclass
class Rewritten:
    """A compaction carried out by the engine's steps and not committed yet: every unit of
    `plan_units` (one per bucket that needs it) executed by `execute_unit`, as the Spark job
    runs them apart; `commit` is the driver's commit."""

    directory: TableDirectory
    base_id: int
    adds: list[FileEntry]
    deletes: list[FileEntry]
    indexes: list[str]  # deletion-vector index files written (object names under the table)

    @property
    def new_files(self) -> list[DataFileMeta]:
        """The data files the rewrite wrote (a file moved to another level is an input)."""
        inputs = {e.file.file_name for e in self.deletes}
        return [e.file for e in self.adds if e.file.file_name not in inputs]

    @property
    def written(self) -> list[str]:
        """Where the new data files and index files are (local paths, or object locations)."""
        return [m.origin.path for m in self.new_files] + [self.directory.store.table.full(i)
                                                          for i in self.indexes]

    def commit(self) -> Snapshot | None:
        """Commit over the base snapshot as the engine commits a compaction (rebased over commits
        that kept every input; one that replaced an input raises `CompactionConflictError`).  On
        any failure the new data files are removed by the transaction, the index files as
        `compact_dv` removes them."""
        try:
            with rewrite_transaction(self.directory, self.base_id) as rewrite:
                rewrite.replace(self.deletes, self.adds)
                return rewrite.commit()
        except BaseException:
            remove_uncommitted(self.directory.storage, self.indexes)
            raise


def rewrite_all(warehouse: object, name: str | None, full: bool = False,
                storage_options: dict | None = None) -> Rewritten | None:
    """Every bucket of a compaction of the table rewritten by the engine, uncommitted (None:
    nothing to compact)."""
    directory = PaimonTableHandle(warehouse, storage_options, name).at().directory
    base, units = plan_units(directory, None, full)
    if base is None or not units:
        return None
    adds: list[FileEntry] = []
    deletes: list[FileEntry] = []
    indexes: list[str] = []
    for unit in units:
        added, deleted = execute_unit(directory, unit, None, indexes)
        adds += added
        deletes += deleted
    return Rewritten(directory, base.id, adds, deletes, indexes)


def _data_files(wh: Path) -> list[str]:
    return [os.path.join(d, n) for d, _, names in os.walk(wh) for n in names if n.startswith("data-")]


_KILLED_CHILD = """
import sys, time
import mergetree.paimon as mp
def slow(done, total):
    print("progress", done, flush=True)
    time.sleep(0.4)
mp.compact(sys.argv[1], "db.t", full=True, progress=slow)
print("committed", flush=True)
"""


@needs_pypaimon
def test_killed_compaction_leaves_the_committed_table(tmp_path: Path) -> None:
    wh, work, name = tmp_path / "wh", tmp_path / "work", "db.t"
    commits = _commits(31, 6, 300, True, True)
    write_paimon(work, wh, name, commits, _key(True), ["region"], _options("deduplicate", 4, True, False))
    expected = model("deduplicate", commits, _key(True))
    latest = PaimonTable.open(str(wh), name).latest_snapshot_id()
    child = subprocess.Popen([sys.executable, "-c", _KILLED_CHILD, str(wh)], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    seen = 0
    for line in child.stdout:  # kill it after it has merged (and written) a few buckets
        if line.startswith("progress"):
            seen += 1
            if seen == 3:
                break
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert PaimonTable.open(str(wh), name).latest_snapshot_id() == latest
    assert rows(mp.read(str(wh), name), _key(True)) == expected
    assert rows(pypaimon_read(wh, name, work), _key(True)) == expected
    assert mp.compact(str(wh), name, full=True) is not None  # and it still compacts
    assert rows(pypaimon_read(wh, name, work), _key(True)) == expected


def _alter(wh: Path, name: str, options: dict) -> None:
    """ALTER TABLE SET options, as Paimon does it: the next schema file, the same columns."""
    t = PaimonTable.open(str(wh), name)
    latest = t.schema_ids()[-1]
    path = Path(t.path) / "schema" / f"schema-{latest}"
    schema = json.loads(path.read_text())
    schema["id"] = latest + 1
    schema["options"].update(options)
    (Path(t.path) / "schema" / f"schema-{latest + 1}").write_text(json.dumps(schema))


@needs_pypaimon
@pytest.mark.parametrize(("options", "named"), [
    ({"row-tracking.enabled": "true"}, "row-tracking.enabled"),
    ({"merge-engine": "aggregation", "fields.v.aggregate-function": "collect"}, "fields.v.aggregate-function"),
    ({"merge-engine": "partial-update", "fields.cnt.sequence-group": "v"}, "fields.cnt.sequence-group"),
    ({"bucket": "-2"}, "bucket"),
])
def test_unsupported_options_are_named(tmp_path: Path, options: dict, named: str) -> None:
    wh, work, name = tmp_path / "wh", tmp_path / "work", "db.t"
    commits = _commits(1, 3, 20, False, False)
    write_paimon(work, wh, name, commits, ["name", "id"], [], {"bucket": "1"})
    before = rows(mp.read(str(wh), name), ["name", "id"])
    _alter(wh, name, options)
    files = _data_files(wh)
    for call in (lambda: mp.read(str(wh), name), lambda: mp.compact(str(wh), name, full=True)):
        with pytest.raises(UnsupportedPaimonFeatureError, match=named.replace(".", r"\.")):
            call()
    assert named in str(mp.info(str(wh), name).unsupported)
    assert _data_files(wh) == files  # nothing written
    # time travel to the snapshot, under the schema it was committed with, still reads
    assert rows(mp.read(str(wh), name, snapshot=3), ["name", "id"]) == before


@needs_pypaimon
def test_free_form_properties_are_kept_and_ignored_as_java_does(tmp_path: Path) -> None:
    wh, work, name = tmp_path / "wh", tmp_path / "work", "db.t"
    write_paimon(work, wh, name, _commits(1, 2, 20, False, False), ["name", "id"], [], {"bucket": "1"})
    before = rows(mp.read(str(wh), name), ["name", "id"])
    _alter(wh, name, {"owner": "finance", "some.future-property": "1", "cost-center": "42"})
    assert rows(mp.read(str(wh), name), ["name", "id"]) == before
    t = Table.open(wh / "db.db" / "t")
    t.compact(full=True)
    t.set_options({"team": "risk"})
    assert rows(t.read(), ["name", "id"]) == before
    assert PaimonTable.open(str(wh), name).schema().options["owner"] == "finance"
    with pytest.raises(InvalidArgumentError, match="did you mean 'merge-engine'"):
        t.set_options({"merge-engin": "first-row"})


@pytest.mark.parametrize(("options", "named"), [
    ({"bucket": "-1", "bucket-key": "id"}, "bucket-key"),
    ({"bucket": "-1", "dynamic-bucket.target-row-num": "0"}, "dynamic-bucket.target-row-num"),
    ({"bucket": "-2"}, "bucket"),
    ({"bucket": "2", "partial-update.remove-record-on-delete": "true"}, "partial-update.remove-record-on-delete"),
    ({"bucket": "2", "file.format": "avro"}, "file.format"),
    ({"bucket": "2", "sequence.field": "v,nope"}, "sequence.field"),
    ({"bucket": "2", "sequence.field": "v", "sequence.field.sort-order": "sideways"}, "sequence.field.sort-order"),
    ({"bucket": "2", "scan.snapshot-id": "3"}, "scan.snapshot-id"),
    ({"bucket": "2", "record-level.expire-time": "1 d"}, "record-level.expire-time"),
    ({"bucket": "2", "fields.v.ignore-retract": "true"}, "fields.v.ignore-retract"),
])
def test_check_options_refuses_by_name(options: dict, named: str) -> None:
    with pytest.raises(UnsupportedPaimonFeatureError, match=named.replace(".", r"\.")):
        check_options(options, SCHEMA.names, ["name", "id"], [])


def test_check_options_accepts_what_cannot_change_a_read() -> None:
    opts = check_options({"bucket": "3", "snapshot.num-retained.max": "10", "compaction.max.file-num": "50",
                          "file.compression": "zstd", "changelog-producer": "input", "write-only": "true",
                          "merge-engine": "aggregation", "fields.v.aggregate-function": "max",
                          "fields.default-aggregate-function": "last_value"},
                         SCHEMA.names, ["name", "id"], [])
    assert opts.buckets == 3 and opts.engine == "aggregate"
    assert opts.aggregations["v"] == "max" and opts.aggregations["cnt"] == "last_value"


ATOMIC = {
    "TINYINT": st.integers(-128, 127), "SMALLINT": st.integers(-2**15, 2**15 - 1),
    "INT": st.integers(-2**31, 2**31 - 1), "BIGINT": st.integers(-2**63, 2**63 - 1),
    "BOOLEAN": st.booleans(), "DOUBLE": st.floats(allow_nan=False), "STRING": st.text(max_size=20),
    "BYTES": st.binary(max_size=20), "DATE": st.dates(),
    "DECIMAL(10, 2)": st.decimals(min_value=-10**7, max_value=10**7, places=2, allow_nan=False),
    "DECIMAL(30, 4)": st.decimals(min_value=-10**25, max_value=10**25, places=4, allow_nan=False),
    "TIMESTAMP(3)": st.datetimes(min_value=dt.datetime(1900, 1, 1)).map(lambda d: d.replace(microsecond=d.microsecond
                                                                                               // 1000 * 1000)),
    "TIMESTAMP(6)": st.datetimes(min_value=dt.datetime(1900, 1, 1)),
}


@given(st.lists(st.sampled_from(sorted(ATOMIC)), min_size=0, max_size=9).flatmap(
    lambda names: st.tuples(st.just(names), st.tuples(*[st.none() | ATOMIC[n] for n in names]))))
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
def test_binary_row_round_trip(case) -> None:
    names, values = case
    types = [parse_type(n) for n in names]
    assert decode_row(encode_row(values, types), types) == tuple(values)


@needs_pypaimon
def test_binary_rows_as_pypaimon_writes_them(tmp_path: Path) -> None:
    """Partition values and keys decoded from pypaimon's manifests are the values written."""
    wh, work, name = tmp_path / "wh", tmp_path / "work", "db.t"
    commits = _commits(41, 2, 50, False, False)
    write_paimon(work, wh, name, commits, _key(True), ["region"], {"bucket": "2"})
    t = PaimonTable.open(str(wh), name)
    files = t.live_files(t.resolve(None))
    written = {(r["region"], r["name"], r["id"]) for c in commits for r in c.to_pylist()}
    for f in files:
        (region,) = f.partition
        assert (region, *f.min_key) in written and (region, *f.max_key) in written
        assert f.min_key <= f.max_key
        assert os.path.exists(f.path)


def test_missing_table_and_bad_arguments(tmp_path: Path) -> None:
    from mergetree import InvalidArgumentError, TableNotFoundError
    with pytest.raises(TableNotFoundError, match="no Paimon table"):
        mp.read(str(tmp_path), "db.nope")
    with pytest.raises(InvalidArgumentError, match="database.table"):
        mp.read(str(tmp_path), "nodot")


def test_cli_paimon_help_lists_the_subcommands() -> None:
    done = subprocess.run([sys.executable, "-m", "mergetree", "paimon", "--help"], capture_output=True, text=True)
    assert done.returncode == 0
    for sub in ("info", "read", "compact"):
        assert sub in done.stdout


@needs_pypaimon
def test_cli_paimon_info_read_compact(tmp_path: Path) -> None:
    wh, work, name = tmp_path / "wh", tmp_path / "work", "db.t"
    write_paimon(work, wh, name, _commits(51, 6, 80, False, False), ["name", "id"], [], {"bucket": "2"})

    def cli(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "mergetree", "paimon", *args], capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout + done.stderr
    out = cli("info", str(wh), name)
    assert "mergetree can read it: yes" in out and "APPEND" in out
    expected = len(model("deduplicate", _commits(51, 6, 80, False, False), ["name", "id"]))
    assert f"({expected:,} rows" in cli("read", str(wh), name, "--limit", "0")
    out = cli("compact", str(wh), name, "--full")
    assert "committed snapshot 7 (COMPACT)" in out and "rows" in out   # the progress bar's unit
    assert "COMPACT" in cli("info", str(wh), name)
    started = time.perf_counter()
    assert "(1 row" in cli("read", str(wh), name, "--filter", "id = 3", "--no-progress")
    assert time.perf_counter() - started < 60


@needs_pypaimon
@given(data=st.data())
@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
def test_any_history_reads_and_compacts_like_the_model(tmp_path_factory, data) -> None:
    """Random histories (one-row commits, all-duplicate keys, deletes, nulls, 1 or 3 buckets):
    the read, a filtered read, and the read after either kind of compaction equal the model."""
    tmp = tmp_path_factory.mktemp("hyp")
    wh, work, name = tmp / "wh", tmp / "work", "db.t"
    buckets = data.draw(st.sampled_from([1, 3]), label="buckets")
    keys = data.draw(st.integers(1, 40), label="keys")
    commits = []
    for c in range(data.draw(st.integers(1, 6), label="commits")):
        chosen = data.draw(st.lists(st.integers(0, keys - 1), min_size=1, max_size=keys, unique=True), label="ids")
        ops = [data.draw(st.sampled_from(["+I", "+U", "-D"])) if c else "+I" for _ in chosen]
        values = data.draw(st.lists(st.none() | st.floats(-1e6, 1e6), min_size=len(chosen), max_size=len(chosen)))
        commits.append(pa.table({
            "id": chosen, "region": [f"r{i % 3}" for i in chosen], "amount": [Decimal(i) for i in chosen],
            "ts": [T0] * len(chosen), "v": values, "cnt": [c] * len(chosen),
            "note": [None if v is None else f"n{c}" for v in values], "name": [f"k{i % 3}" for i in chosen],
            "op": ops}, schema=SCHEMA))
    key = ["name", "id"]
    write_paimon(work, wh, name, commits, key, [], _options("deduplicate", buckets, True, False))
    expected = model("deduplicate", commits, key)
    assert rows(mp.read(str(wh), name), key) == expected
    cut = data.draw(st.integers(0, keys), label="cut")
    assert rows(mp.read(str(wh), name, filter=("id", ">=", cut)), key) == [r for r in expected if r["id"] >= cut]
    _check_point_reads(wh, name, commits, key, expected)
    mp.compact(str(wh), name, full=data.draw(st.booleans(), label="full"))
    assert rows(mp.read(str(wh), name), key) == expected
    _check_point_reads(wh, name, commits, key, expected)


@needs_pypaimon
def test_bucket_of_matches_paimon_and_prunes_point_reads(tmp_path: Path) -> None:
    """Every row pypaimon wrote sits in the bucket `bucket_of` computes for its key (long and
    short strings, integers, decimals, timestamps, dates), so a point read opens one bucket."""
    from mergetree.codec.buckets import bucket_of
    wh, work, name = tmp_path / "wh", tmp_path / "work", "db.k"
    schema = pa.schema([("s", pa.string()), ("i", pa.int32()), ("d", pa.decimal128(20, 3)),
                        ("t", pa.timestamp("us")), ("day", pa.date32()), ("v", pa.float64())])
    rng = random.Random(3)
    data = pa.table({
        "s": [("x" * rng.randint(0, 12)) + str(n) for n in range(300)], "i": [rng.randint(-99, 99) for _ in range(300)],
        "d": [Decimal(rng.randint(-10**9, 10**9)) / 1000 for _ in range(300)],
        "t": [T0 + dt.timedelta(microseconds=rng.randint(0, 10**9)) for _ in range(300)],
        "day": [dt.date(2024, 1, 1) + dt.timedelta(days=rng.randint(0, 400)) for _ in range(300)],
        "v": [float(n) for n in range(300)]}, schema=schema)
    key = ["s", "i", "d", "t", "day"]
    write_paimon(work, wh, name, [data], key, [], {"bucket": "5"})
    t = PaimonTable.open(str(wh), name)
    ps = t.schema()
    checked = 0
    for f in t.live_files(t.resolve(None)):
        import pyarrow.parquet as pq
        for r in pq.read_table(f.path, columns=ps.key_columns).to_pylist():
            assert bucket_of([r[c] for c in ps.key_columns], ps.key_types, 5) == f.bucket
            checked += 1
    assert checked == 300
    for r in data.slice(0, 40).to_pylist():
        f = [(c, "=", r[c]) for c in key]
        plan = PaimonTableHandle(str(wh), None, name).at().plan(filter=f)
        assert len({b.bucket for b in plan.buckets}) == 1
        assert plan.pruned_buckets == 4  # by Paimon's bucket function, before any statistics
        assert mp.read(str(wh), name, filter=f).to_pylist() == [r]


@needs_pypaimon
def test_orc_tables_read_and_compact(tmp_path: Path) -> None:
    wh, work, name = tmp_path / "wh", tmp_path / "work", "db.t"
    key = _key(True)
    commits = _commits(71, 5, 150, True, True)
    opts = {**_options("deduplicate", 2, True, False), "file.format": "orc"}
    write_paimon(work, wh, name, commits, key, ["region"], opts)
    expected = model("deduplicate", commits, key)
    assert rows(mp.read(str(wh), name), key) == expected
    assert rows(mp.read(str(wh), name, filter=("id", "<", 40)), key) == [r for r in expected if r["id"] < 40]
    assert mp.compact(str(wh), name, full=True) is not None
    assert all(f.endswith(".orc") for f in _data_files(wh))
    assert rows(pypaimon_read(wh, name, work), key) == expected
    assert rows(mp.read(str(wh), name), key) == expected


@needs_pypaimon
def test_key_filtered_reads_of_large_row_groups(tmp_path: Path) -> None:
    """pypaimon writes one row group per file: a point read searches such a row group by its
    key columns and decodes the rest only up to the last row found (`read.point`); every key
    filter's answer equals the filtered full read."""
    wh, work = tmp_path / "wh", tmp_path / "work"
    rng = np.random.default_rng(5)
    n = 80_000
    commits = []
    for c in range(3):
        ids = rng.choice(n * 2, n, replace=False)
        commits.append(pa.table({"id": pa.array(ids, pa.int64()), "s": pa.array([f"key-{i % 5000:06d}" for i in ids]),
                                 "v": pa.array(rng.random(n)), "c": pa.array(np.full(n, c))}))
    write_paimon(work, wh, "db.num", commits, ["id"], [], {"bucket": "1"})
    write_paimon(work, wh, "db.str", [t.drop_columns(["id"]).group_by("s").aggregate([("v", "max"), ("c", "max")])
                                      .rename_columns(["s", "v", "c"]) for t in commits], ["s"], [], {"bucket": "1"})
    from mergetree.table.read.point import LARGE_ROW_GROUP
    assert max(f.row_count for f in PaimonTable.open(str(wh), "db.num").live_files(
        PaimonTable.open(str(wh), "db.num").resolve(None))) > LARGE_ROW_GROUP
    full = mp.read(str(wh), "db.num")
    ids = full.column("id").to_numpy()
    probes = [int(ids[0]), int(ids[-1]), int(np.sort(ids)[1234]), n * 2 + 5, -1]
    for k in probes:
        want = full.filter(pa.compute.equal(full.column("id"), k))
        handle = PaimonTableHandle(str(wh), None, "db.num")
        assert handle.read(filter=("id", "=", k)).sort_by("id").equals(want.sort_by("id"))
        if want.num_rows:  # every file it opened searched by the key column
            assert handle.last_read.point_files == handle.last_read.files_read > 0
    for f in [[("id", ">=", 1000), ("id", "<", 1200)], [("id", ">", 159_990)], [("id", "<=", 3)],
              ("id", "in", probes), [("id", ">", 50), ("id", "<", 40)], ("id", "=", 2.0)]:
        from mergetree.table import filters as flt
        expr = flt.to_expression(flt.normalize(f, full.schema), full.schema)
        assert rows(mp.read(str(wh), "db.num", filter=f), ["id"]) == rows(full.filter(expr), ["id"])
    strings = mp.read(str(wh), "db.str")
    for key in ["key-000000", "key-004999", "key-002500", "nope"]:
        want = strings.filter(pa.compute.equal(strings.column("s"), key))
        assert rows(mp.read(str(wh), "db.str", filter=("s", "=", key)), ["s"]) == rows(want, ["s"])


def test_errors_with_keyword_fields_survive_pickling() -> None:
    """Spark tasks and worker processes hand errors back pickled."""
    import pickle

    from mergetree import CorruptTableError, InvalidRowError, RetractionError
    for exc in (CorruptTableError("file x is missing", path="/t/x"),
                RetractionError("run 1 row 2: no", run=1, row=2, column="v"),
                InvalidRowError("bad", run=0, row=5, column="k")):
        back = pickle.loads(pickle.dumps(exc))
        assert type(back) is type(exc) and str(back) == str(exc) and vars(back) == vars(exc)


@needs_pypaimon
def test_compaction_honours_compression_options(tmp_path: Path) -> None:
    import dataclasses

    import pyarrow.parquet as pq

    from mergetree.table.paimon.store import paimon_directory
    wh, work, name = tmp_path / "wh", tmp_path / "work", "db.t"
    commits = _commits(81, 3, 60, False, False)
    write_paimon(work, wh, name, commits, ["name", "id"], [], {"bucket": "2", "file.compression": "snappy"})
    t = PaimonTable.open(str(wh), name)
    schema = t.schema()
    plain = {k: v for k, v in schema.options.items() if not k.startswith("file.compression")}

    def codecs(options: dict) -> list[str]:
        """The codec the engine writes at levels 0..5 of the table under these options."""
        directory = paimon_directory(t, dataclasses.replace(schema, options={**plain, **options}))
        return [directory.options.codec_for(level) for level in range(6)]
    assert codecs({}) == ["zstd"] * 6  # Paimon's default at every level (not mergetree's own 0:lz4)
    assert codecs({"file.compression": "none"}) == ["none"] * 6
    assert codecs({"file.compression": "snappy"}) == ["snappy"] * 6
    assert codecs({"file.compression": "zstd", "file.compression.per.level": "0:lz4,5:snappy"}) == \
        ["lz4", "zstd", "zstd", "zstd", "zstd", "snappy"]
    # a codec mergetree does not write (Java's lzo), ORC without brotli, a zstd level that is no
    # number: writes and compactions are refused by name, before anything is written
    from mergetree.table.paimon.tables import commit_refusal
    for bad, key in (({"file.compression": "lzo"}, "file.compression"),
                     ({"file.compression.per.level": "0:lz4,3:lzo"}, "file.compression.per.level"),
                     ({"file.format": "orc", "file.compression": "brotli"}, "file.compression"),
                     ({"file.compression.zstd-level": "high"}, "file.compression.zstd-level")):
        refused = dataclasses.replace(schema, options={**plain, **bad})
        for kind in ("APPEND", "COMPACT"):
            assert f"option {key!r}" in (commit_refusal(refused, kind, name) or "")

    assert mp.compact(str(wh), name, full=True) is not None
    t = PaimonTable.open(str(wh), name)
    for f in t.live_files(t.resolve(None)):
        assert pq.ParquetFile(f.path).metadata.row_group(0).column(0).compression == "SNAPPY"
    assert rows(pypaimon_read(wh, name, work), ["name", "id"]) == model("deduplicate", commits, ["name", "id"])

    # the table altered to lzo: a compaction and a write are refused, nothing written; to zstd
    # level 3: the files are zstd (pypaimon reads them)
    more = _commits(82, 1, 60, False, False)
    write_paimon(work, wh, name, more, ["name", "id"], [], {"bucket": "2", "file.compression": "snappy"})
    _alter(wh, name, {"file.compression": "lzo"})
    files = sorted(str(p) for p in Path(t.path).rglob("*"))
    with pytest.raises(UnsupportedPaimonFeatureError, match="'file.compression' = 'lzo'"):
        mp.compact(str(wh), name, full=True)
    with pytest.raises(UnsupportedPaimonFeatureError, match="'file.compression' = 'lzo'"):
        mp.write(str(wh), name, more[0])
    assert sorted(str(p) for p in Path(t.path).rglob("*")) == files
    _alter(wh, name, {"file.compression": "zstd", "file.compression.zstd-level": "3"})
    assert mp.compact(str(wh), name, full=True) is not None
    t = PaimonTable.open(str(wh), name)
    for f in t.live_files(t.resolve(None)):
        assert pq.ParquetFile(f.path).metadata.row_group(0).column(0).compression == "ZSTD"
    assert rows(pypaimon_read(wh, name, work), ["name", "id"]) == model("deduplicate", commits + more,
                                                                        ["name", "id"])
