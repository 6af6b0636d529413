"""Table creation, bad input (nothing written), append tables, pruning and the plan."""
from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from disk import table_files

from mergetree import InvalidArgumentError, SchemaMismatchError, Table, TableExistsError
from mergetree.errors import UnsupportedPaimonFeatureError

SCHEMA = pa.schema([("id", pa.int64()), ("region", pa.string()), ("amount", pa.float64())])


def make(tmp_path, **kwargs) -> Table:
    return Table.create(str(tmp_path / "t"), kwargs.pop("schema", SCHEMA), **kwargs)


def test_create_twice_and_open(tmp_path):
    t = make(tmp_path, primary_key="id")
    with pytest.raises(TableExistsError):
        make(tmp_path, primary_key="id")
    opened = Table.open(t.path)
    assert opened.schema == t.schema and opened.table_schema.primary_key == ("id",)


@pytest.mark.parametrize("kwargs, message", [
    ({"primary_key": "nope"}, "primary key column 'nope'"),
    ({"primary_key": "id", "partition_by": "region"}, "must be part of the primary key"),
    ({"primary_key": "id", "buckets": 0}, "buckets must be an integer from 1"),
    ({"primary_key": "id", "merge_engine": "none"}, "unknown merge engine"),
    ({"merge_engine": "aggregate"}, "need a primary key"),
    ({"buckets": 4}, "needs a bucket_key"),
])
def test_bad_create_arguments(tmp_path, kwargs, message):
    with pytest.raises(InvalidArgumentError, match=message):
        make(tmp_path, **kwargs)


@pytest.mark.parametrize("data, message", [
    (pa.table({"id": [1], "region": ["x"]}), r"lacks column\(s\) \['amount'\]"),
    (pa.table({"id": [1], "region": ["x"], "amount": [1.0], "extra": [1]}), r"has column\(s\) \['extra'\]"),
    (pa.table({"id": ["one"], "region": ["x"], "amount": [1.0]}), "casts only within a kind"),
    (pa.table({"id": [1.5], "region": ["x"], "amount": [1.0]}), "casts only within a kind"),
    (pa.table({"id": pa.array([1, None], pa.int64()), "region": ["x", "y"], "amount": [1.0, 2.0]}),
     "primary-key column 'id' is null at row 1"),
])
def test_bad_writes_raise_and_write_nothing(tmp_path, data, message):
    t = make(tmp_path, primary_key="id", buckets=2)
    t.write(pa.table({"id": [7], "region": ["z"], "amount": [7.0]}))
    files_before = table_files(tmp_path / "t")
    with pytest.raises(SchemaMismatchError, match=message):
        t.write(data)
    assert table_files(tmp_path / "t") == files_before
    assert len(t.snapshots()) == 1
    assert t.read().to_pylist() == [{"id": 7, "region": "z", "amount": 7.0}]


def test_safe_casts_and_pandas_and_streams_are_accepted(tmp_path):
    t = make(tmp_path, primary_key="id")
    t.write(pa.table({"id": pa.array([1, 2], pa.int32()), "region": ["a", "b"], "amount": [1, 2]}))
    t.write(pa.RecordBatchReader.from_batches(
        t.schema, pa.table({"id": [3], "region": ["c"], "amount": [3.0]}, schema=t.schema).to_batches()))
    pandas = pytest.importorskip("pandas")
    t.write(pandas.DataFrame({"id": [4], "region": ["d"], "amount": [4.0]}))
    assert t.read().column("id").to_pylist() == [1, 2, 3, 4]


def test_append_table_keeps_every_row(tmp_path):
    t = make(tmp_path, buckets=3, bucket_key="region")
    t.write(pa.table({"id": [1, 1, 2], "region": ["a", "b", "a"], "amount": [1.0, 2.0, 3.0]}))
    t.write(pa.table({"id": [1], "region": ["a"], "amount": [4.0]}))
    rows = sorted(t.read().to_pylist(), key=lambda r: r["amount"])
    assert [r["amount"] for r in rows] == [1.0, 2.0, 3.0, 4.0]
    with pytest.raises(InvalidArgumentError, match="no keys to delete"):
        t.delete(pa.table({"id": [1]}))
    # Paimon's append-table compaction (merging small files) is refused by name, nothing changed
    with pytest.raises(UnsupportedPaimonFeatureError, match="append table"):
        t.compact(full=True)
    assert len(t.snapshots()) == 2 and t.read().num_rows == 4


def test_bucket_pruning_equality_and_in(tmp_path):
    t = make(tmp_path, primary_key="id", buckets=8, options={"write-only": "true"})
    ids = list(range(400))
    t.write(pa.table({"id": ids, "region": ["r"] * 400, "amount": [float(i) for i in ids]}))
    owner = {i: int(b) for i, b in zip(ids, t.directory.bucket_ids(pa.table({"id": ids})))}
    plan = t.plan(("id", "=", 17))
    assert [b.bucket for b in plan.buckets] == [owner[17]] and plan.pruned_buckets == 7
    plan = t.plan(("id", "in", [17, 18, 250]))
    assert {b.bucket for b in plan.buckets} == {owner[17], owner[18], owner[250]}
    assert t.read(filter=("id", "in", [17, 18, 250])).column("id").to_pylist() == [17, 18, 250]
    # no pruning for a range, a negation or a pyarrow expression: every bucket is read
    for f in [("id", ">", 5), ("id", "!=", 17), pc.field("id") == 17]:
        assert t.plan(f).pruned_buckets == 0
    assert t.read(filter=pc.field("id") == 17).num_rows == 1


def test_partition_pruning_and_directories(tmp_path):
    schema = pa.schema([("day", pa.date32()), ("id", pa.int64()), ("v", pa.string())])
    t = make(tmp_path, schema=schema, primary_key=["day", "id"], partition_by="day", buckets=2)
    days = [dt.date(2024, 5, 1), dt.date(2024, 5, 2)]
    t.write(pa.table({"day": [days[0], days[1], days[1]], "id": [1, 1, 2], "v": ["a", "b", "c"]}))
    assert (tmp_path / "t" / "day=2024-05-01").is_dir()
    plan = t.plan(("day", "=", days[1]))
    assert plan.pruned_partitions == 1 and all(b.partition == (days[1],) for b in plan.buckets)
    assert t.read(filter=("day", "=", days[1])).column("v").to_pylist() in (["b", "c"], ["c", "b"])


def test_key_range_pruning_and_value_filters_after_merge(tmp_path):
    t = make(tmp_path, primary_key="id", options={"write-only": "true"})
    t.write(pa.table({"id": [1, 2, 3], "region": ["a", "a", "a"], "amount": [1.0, 1.0, 1.0]}))
    t.write(pa.table({"id": [100, 101], "region": ["b", "b"], "amount": [5.0, 5.0]}))
    t.write(pa.table({"id": [2], "region": ["c"], "amount": [9.0]}))  # newer version of key 2
    plan = t.plan(("id", ">=", 100))
    assert plan.pruned_files == 2 and len(plan.files) == 1
    # key 2's newest version has region 'c': an older 'a' must not come back through the filter
    assert t.read(filter=("region", "=", "a")).column("id").to_pylist() == [1, 3]
    assert t.read(filter=("amount", ">", 8.0)).column("id").to_pylist() == [2]
    # the non-overlapped file (ids 100, 101) may be pruned by its value statistics
    assert t.plan(("region", "=", "zzz")).pruned_files >= 1


@pytest.mark.parametrize("engine", ["partial-update", "aggregate", "first-row"])
def test_merge_engines_through_the_table(tmp_path, engine):
    options = {"fields.amount.aggregate-function": "sum"} if engine == "aggregate" else {}
    t = make(tmp_path, primary_key="id", merge_engine=engine, options=options)
    t.write(pa.table({"id": [1, 2], "region": ["a", None], "amount": [1.0, 2.0]}))
    t.write(pa.table({"id": [1, 1], "region": [None, "b"], "amount": [10.0, None]}))
    t.compact(full=True)
    t.write(pa.table({"id": [2], "region": ["z"], "amount": [5.0]}))
    got = {r["id"]: (r["region"], r["amount"]) for r in t.read().to_pylist()}
    expected = {
        "partial-update": {1: ("b", 10.0), 2: ("z", 5.0)},
        "aggregate": {1: ("b", 11.0), 2: ("z", 7.0)},
        "first-row": {1: ("a", 1.0), 2: (None, 2.0)},
    }[engine]
    assert got == expected


def test_metadata_round_trips_exotic_key_values(tmp_path):
    schema = pa.schema([("k", pa.decimal128(10, 2)), ("ts", pa.timestamp("us")), ("b", pa.binary())])
    t = make(tmp_path, schema=schema, primary_key=["k", "ts"])
    t.write(pa.table({"k": [Decimal("1.50"), Decimal("-2.00")], "ts": [dt.datetime(2024, 1, 1)] * 2,
                      "b": [b"\x00\xff", None]}, schema=schema))
    (meta,) = Table.open(t.path).plan().files
    assert meta.min_key == (Decimal("-2.00"), dt.datetime(2024, 1, 1))
    assert t.read(filter=("k", "=", Decimal("1.50"))).column("b").to_pylist() == [b"\x00\xff"]


def test_key_columns_survive_folding_deletes(tmp_path):
    """Regression: a key deleted twice in one batch used to be folded into a row whose table
    key column was null, so the file's key statistics missed it, a key-range read pruned the
    file, and the older version came back."""
    # (a deduplicate table: a Paimon partial-update table refuses deletes unless 'ignore-delete')
    t = make(tmp_path, primary_key="id", options={"write-only": "true"})
    t.write(pa.table({"id": list(range(1, 41)), "region": ["r"] * 40, "amount": [1.0] * 40}))
    t.delete(pa.table({"id": [29, 29, 5]}))
    assert t.read(filter=[("id", ">=", 26), ("id", "<", 32)]).column("id").to_pylist() == [26, 27, 28, 30, 31]
    meta = max(t.plan().files, key=lambda m: m.max_seq)  # the delete's file: its two keys' -D rows
    assert meta.row_count == 2
    assert meta.stats["id"][:2] == (5, 29)
    assert (meta.min_key, meta.max_key) == ((5,), (29,))


def test_aggregate_and_first_row_tables_refuse_key_deletes(tmp_path):
    for engine, message in (("aggregate", "aggregate table"), ("first-row", "first-row table")):
        t = Table.create(str(tmp_path / engine), SCHEMA, primary_key="id", merge_engine=engine)
        with pytest.raises(InvalidArgumentError, match=message):
            t.delete(pa.table({"id": [1]}))


def test_a_lowered_trigger_after_a_full_compaction_keeps_every_call_working(tmp_path):
    """Files at level 5 (a full compaction under the default trigger), then the trigger
    lowered to 2 (3 levels): info, writes (which compact), compactions and reads work, as Java
    restores levels (the highest in use + 1); nothing raises after a commit."""
    t = Table.create(tmp_path / "t", pa.schema([("id", pa.int64()), ("v", pa.string())]), primary_key="id",
                     buckets=2)
    t.write(pa.table({"id": list(range(40)), "v": ["a"] * 40}))
    t.compact(full=True)
    assert {e.file.level for e in t.directory.live_files(t.latest_snapshot()).values()} == {5}
    t.set_options({"num-sorted-run.compaction-trigger": "2"})
    t.info()
    for i in range(4):
        t.write(pa.table({"id": [100 + i, 5], "v": ["new", f"w{i}"]}))
    t.compact()
    t.compact(full=True)
    got = t.read().sort_by("id").to_pydict()
    assert got["id"] == list(range(40)) + [100, 101, 102, 103]
    assert got["v"][5] == "w3"


def test_a_failure_after_a_commit_is_a_warning_not_an_error(tmp_path, monkeypatch):
    """A write whose rows are committed reports success even when the compaction after it
    fails: raising would make a caller retry and write the rows twice."""
    import importlib

    from mergetree import CommittedWarning, CorruptTableError
    write_module = importlib.import_module("mergetree.paimon.write")  # a Paimon table's write, then compaction

    t = Table.create(tmp_path / "t", pa.schema([("id", pa.int64()), ("v", pa.string())]), primary_key="id")

    def broken(*args, **kwargs):
        raise CorruptTableError("a damaged file found while compacting", path="x")
    monkeypatch.setattr(write_module, "compact_buckets", broken)
    with pytest.warns(CommittedWarning, match="committed snapshot 1"):
        snapshot = t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    assert snapshot is not None and snapshot.id == 1
    assert t.read().num_rows == 2


def test_a_snapshot_prints_what_a_person_asks_of_it(tmp_path):
    t = Table.create(str(tmp_path / "t"), pa.schema([("id", pa.int64())]), primary_key="id")
    snapshot = t.write(pa.table({"id": [1, 2, 3]}))
    text = repr(snapshot)
    assert text.startswith("Snapshot(id=1, APPEND, ") and "3 records (+3), schema 0)" in text
    assert "manifest" not in text and len(text) < 100  # not a screen of manifest-list names
