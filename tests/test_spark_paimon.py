"""Apache Paimon tables through Spark in a real local[2] session, on tables written by
pypaimon: `spark.read.format("mergetree").option("paimon.warehouse", wh)` reads what
`mergetree.paimon.read` and pypaimon read, one task per (partition, bucket) of the engine's plan,
with pushdown, projection and time travel; `mergetree.spark.compact_paimon` (the engine's
distributed compaction) compacts in one task per bucket and commits once (pypaimon reads the
same rows back), and removes every file when a task fails (each task journals its files,
`mergetree.table.journal`); what mergetree cannot honour, and writes, are clear errors."""
from __future__ import annotations

import datetime as dt
import os
import random
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from paimon_fixtures import needs_pypaimon, pypaimon_read, reads_files_alone, rows, write_paimon

import mergetree.paimon as mp
from mergetree import CorruptTableError, InvalidArgumentError, UnsupportedPaimonFeatureError
from mergetree.paimon.handle import PaimonTableHandle
from mergetree.table.paimon.metadata import PaimonTable
from mergetree.table.read.model import ReadPlan

pytestmark = needs_pypaimon

SCHEMA = pa.schema([("id", pa.int64()), ("region", pa.string()), ("name", pa.string()),
                    ("amount", pa.decimal128(12, 2)), ("ts", pa.timestamp("us")), ("v", pa.float64()),
                    ("op", pa.string())])
KEY = ["region", "id"]
T0 = dt.datetime(2024, 5, 1, 12, 0, 0)
OPTIONS = {"bucket": "4", "rowkind.field": "op"}


def commits(seed: int, count: int, keys: int = 160) -> list[pa.Table]:
    """`count` commits of upserts (and, after the first, some deletes) over `keys` ids."""
    rng = random.Random(seed)
    out = []
    for c in range(count):
        ids = rng.sample(range(keys), keys // 2)
        out.append(pa.table({
            "id": ids, "region": [f"r{i % 3}" for i in ids], "name": [f"n{i % 11}-c{c}" for i in ids],
            "amount": [Decimal(rng.randint(-9999, 9999)) / 100 for _ in ids],
            "ts": [T0 + dt.timedelta(seconds=rng.randint(0, 99), microseconds=rng.randint(0, 999_999)) for _ in ids],
            "v": [None if rng.random() < 0.2 else rng.random() for _ in ids],
            "op": ["-D" if c and rng.random() < 0.15 else "+I" for _ in ids]}, schema=SCHEMA))
    return out


def write(tmp: Path, name: str, data: list[pa.Table], options: dict | None = None,
          tags: dict[str, int] | None = None) -> tuple[Path, Path]:
    wh, work = tmp / "wh", tmp / "work"
    write_paimon(work, wh, name, data, KEY, ["region"], OPTIONS if options is None else options, tags=tags)
    return wh, work


def load(spark, wh: Path, name: str, **options: str):
    import mergetree.spark
    mergetree.spark.register(spark)
    reader = spark.read.format("mergetree").option("paimon.warehouse", str(wh)).option("pushFilters", "true")
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load(name)


def plan(wh: Path, name: str) -> ReadPlan:
    """The engine's plan of a read of the table's latest snapshot."""
    return PaimonTableHandle(str(wh), None, name).at().plan()


def bucket_files(wh: Path, name: str) -> dict[tuple, int]:
    """Live data files per (partition, bucket) of the latest snapshot."""
    t = PaimonTable.open(str(wh), name)
    counts: dict[tuple, int] = {}
    for f in t.live_files(t.resolve(None)):
        counts[(f.partition, f.bucket)] = counts.get((f.partition, f.bucket), 0) + 1
    return counts


def files_under(path: Path) -> set[str]:
    return {os.path.relpath(os.path.join(d, n), path) for d, _, names in os.walk(path) for n in names}


@pytest.fixture(scope="module")
def table(tmp_path_factory) -> tuple[Path, Path, str]:
    """A 4-bucket table partitioned by region: five commits of upserts and deletes, tag v2."""
    tmp = tmp_path_factory.mktemp("spark-paimon")
    wh, work = write(tmp, "db.t", commits(3, 5), tags={"v2": 2})
    return wh, work, "db.t"


def test_read_equals_mergetree_and_pypaimon(spark, table) -> None:
    wh, work, name = table
    df = load(spark, wh, name)
    pairs = {(b.partition, b.bucket) for b in plan(wh, name).buckets}
    assert len(pairs) == 12 == len(bucket_files(wh, name))  # 3 regions x 4 buckets
    assert df.rdd.getNumPartitions() == len(pairs)  # one task per (partition, bucket)
    assert df.columns == SCHEMA.names
    got = rows(df.toArrow(), KEY)
    assert got == rows(mp.read(str(wh), name), KEY) == rows(pypaimon_read(wh, name, work), KEY)
    assert 0 < len(got) < 160  # upserted keys collapse, deleted ones are gone
    # a bucket larger than splitSize is read by several tasks, one per key range (the engine's split)
    split = load(spark, wh, name, splitSize="1 kb")
    assert split.rdd.getNumPartitions() > len(pairs)
    assert rows(split.toArrow(), KEY) == got


def test_filters_projection_and_time_travel(spark, table) -> None:
    wh, _, name = table
    # a filter on the partition and the key: pushed, pruned to one region's buckets, exact
    df = load(spark, wh, name).where("region = 'r1' and id < 100 and v > 0.3").select("id", "v", "region")
    expected = mp.read(str(wh), name, columns=["id", "v", "region"],
                       filter=[("region", "=", "r1"), ("id", "<", 100), ("v", ">", 0.3)])
    assert 0 < expected.num_rows
    assert rows(df.toArrow(), ["id"]) == rows(expected, ["id"])
    assert df.rdd.getNumPartitions() == 4
    nothing = load(spark, wh, name).where("region = 'nowhere'")  # no bucket left: one empty task
    assert nothing.count() == 0
    # a projection chosen by the option `columns`, or by a schema naming a subset
    projected = load(spark, wh, name, columns="v, id")
    assert projected.columns == ["v", "id"]
    assert rows(projected.toArrow(), ["id"]) == rows(mp.read(str(wh), name, columns=["v", "id"]), ["id"])
    import mergetree.spark
    mergetree.spark.register(spark)
    by_schema = spark.read.format("mergetree").option("paimon.warehouse", str(wh)).schema("id long, name string") \
        .load(name)
    assert rows(by_schema.toArrow(), ["id", "name"]) == rows(mp.read(str(wh), name, columns=["id", "name"]),
                                                            ["id", "name"])
    wrong = spark.read.format("mergetree").option("paimon.warehouse", str(wh)).schema("id string").load(name)
    with pytest.raises(Exception, match="not the schema given"):
        wrong.collect()
    # time travel by id and by tag
    for snapshot in ("2", "v2", "4"):
        sid = 2 if snapshot == "v2" else int(snapshot)
        assert rows(load(spark, wh, name, snapshot=snapshot).toArrow(), KEY) == \
            rows(mp.read(str(wh), name, snapshot=sid), KEY)


def test_compact_paimon_then_pypaimon_reads_the_same(spark, tmp_path) -> None:
    import mergetree.spark
    name = "db.c"
    wh, work = write(tmp_path, name, commits(7, 5))
    before = rows(pypaimon_read(wh, name, work), KEY)
    files_before = bucket_files(wh, name)
    snapshot_before = PaimonTable.open(str(wh), name).latest_snapshot_id()
    assert max(files_before.values()) >= 4

    snapshot = mergetree.spark.compact_paimon(spark, str(wh), name, full=True)
    assert snapshot == snapshot_before + 1
    files_after = bucket_files(wh, name)
    assert set(files_after) == set(files_before)
    assert all(files_after[k] == 1 < files_before[k] for k in files_before)  # one file per bucket now
    assert rows(pypaimon_read(wh, name, work), KEY) == before == rows(mp.read(str(wh), name), KEY)
    assert rows(load(spark, wh, name).toArrow(), KEY) == before
    assert not [n for n in os.listdir(PaimonTable.open(str(wh), name).path) if n.startswith(".")]  # no journal
    # nothing left to do: no snapshot
    assert mergetree.spark.compact_paimon(spark, str(wh), name, full=True) is None
    assert mergetree.spark.compact_paimon(spark, str(wh), name) is None
    # pypaimon keeps writing on top
    more = commits(8, 1)
    write_paimon(tmp_path / "work", wh, name, more, KEY, ["region"], OPTIONS)
    assert rows(pypaimon_read(wh, name, work), KEY) == rows(mp.read(str(wh), name), KEY)


def test_deletion_vector_table_compacted_and_read_by_spark(spark, tmp_path) -> None:
    """A deletion-vector table: Spark's compaction writes the buckets' index files (in its
    tasks) and one index manifest (on the driver); Spark, mergetree and pypaimon read it alike."""
    import mergetree.spark
    name = "db.dv"
    options = dict(OPTIONS, **{"deletion-vectors.enabled": "true", "num-sorted-run.compaction-trigger": "2"})
    n = 6000  # against which a few updates per bucket are small: compacted below the top level
    base = pa.table({"id": list(range(n)), "region": [f"r{i % 3}" for i in range(n)],
                     "name": [f"n{i}" for i in range(n)], "amount": [Decimal(i) / 100 for i in range(n)],
                     "ts": [T0] * n, "v": [i / n for i in range(n)], "op": ["+I"] * n}, schema=SCHEMA)
    wh, work = write(tmp_path, name, [base], options)
    assert mergetree.spark.compact_paimon(spark, str(wh), name, full=True) is not None
    updates = commits(41, 3, keys=60)[1:]
    write(tmp_path, name, updates, options)
    assert mergetree.spark.compact_paimon(spark, str(wh), name) is not None
    t = PaimonTable.open(str(wh), name)
    assert t.deletion_files(t.latest_snapshot())  # the compaction marked replaced rows
    buckets = plan(wh, name).buckets
    assert len(buckets) == len(bucket_files(wh, name)) and all(reads_files_alone(b) for b in buckets)
    expected = rows(pypaimon_read(wh, name, work), KEY)
    state = {(r["region"], r["id"]): r for r in base.to_pylist()}
    for c in updates:
        for r in c.to_pylist():
            if r["op"] == "-D":
                state.pop((r["region"], r["id"]), None)
            else:
                state[(r["region"], r["id"])] = r
    assert expected == rows(pa.Table.from_pylist(list(state.values()), schema=SCHEMA), KEY)
    df = load(spark, wh, name)
    assert rows(df.toArrow(), KEY) == expected == rows(mp.read(str(wh), name), KEY)
    # every file is resolved (read alone with its vector): a task per file, as on mergetree's tables
    assert df.rdd.getNumPartitions() == sum(bucket_files(wh, name).values())
    got = load(spark, wh, name).where("region = 'r2' and id < 300").toArrow()
    assert rows(got, KEY) == [r for r in expected if r["region"] == "r2" and r["id"] < 300]


def test_failed_task_removes_every_file_and_commits_nothing(spark, tmp_path) -> None:
    import mergetree.spark
    name = "db.f"
    wh, _ = write(tmp_path, name, commits(9, 4))
    t = PaimonTable.open(str(wh), name)
    snapshot = t.latest_snapshot_id()
    victim = next(f for f in t.live_files(t.resolve(None)) if f.partition == ("r2",))
    Path(victim.path).write_bytes(b"not parquet")  # one bucket's task fails; the others write files
    files = files_under(Path(t.path))
    with pytest.raises(CorruptTableError, match=os.path.basename(victim.path)) as caught:
        mergetree.spark.compact_paimon(spark, str(wh), name, full=True)
    assert "Spark task" in str(caught.value.__cause__)  # the executor's traceback rides along
    assert files_under(Path(t.path)) == files  # every task's files removed, no manifest, no journal
    assert PaimonTable.open(str(wh), name).latest_snapshot_id() == snapshot


def test_unsupported_table_and_writes_are_clear_errors(spark, tmp_path) -> None:
    import mergetree.spark
    name = "db.future"
    # a row-level expiry changes what a read returns: refused by name (a free-form property is not)
    wh, _ = write(tmp_path, name, commits(11, 2, keys=40), {"bucket": "2", "record-level.expire-time": "1 d"})
    with pytest.raises(Exception, match=r"UnsupportedPaimonFeatureError.*record-level\.expire-time"):
        load(spark, wh, name).collect()
    with pytest.raises(UnsupportedPaimonFeatureError, match=r"record-level\.expire-time"):
        mergetree.spark.compact_paimon(spark, str(wh), name)
    df = spark.createDataFrame([(1, "r0")], "id long, region string")
    with pytest.raises(Exception, match=r"record-level\.expire-time"):
        df.write.format("mergetree").mode("append").option("paimon.warehouse", str(wh)).save(name)


def test_task_journal_names_every_created_file(tmp_path, monkeypatch) -> None:
    """What lets the driver remove the files of a task whose process died (`table.journal`):
    each file is in the attempt's journal object before it is created, each attempt has its own
    journal, `journaled` reads every attempt's lines and `remove_journal` removes them all; a
    data file (and its ``.index``) the engine writes inside `journaling` is named there."""
    from mergetree.table.files import read_data_file
    from mergetree.table.journal import Journal, creating, journaled, journaling, remove_journal
    from mergetree.table.objects import locate
    from mergetree.table.paimon.store import paimon_directory

    store = locate(str(tmp_path / "t"))
    written = Journal(store, "journal/unit-0-a")
    with journaling(written):
        creating(store, "bucket-0/data-1.parquet")
        assert store.read("journal/unit-0-a") == b"bucket-0/data-1.parquet\n"  # in the store, before creation
        creating(store, "bucket-0/data-2.parquet", "bucket-0/data-2.parquet.index")
        creating(store)  # nothing: no line
    creating(store, "bucket-0/data-3.parquet")  # outside `journaling`: no journal
    assert written.lines == ["bucket-0/data-1.parquet", "bucket-0/data-2.parquet", "bucket-0/data-2.parquet.index"]
    other = Journal(store, "journal/unit-1-b")  # a second attempt, or another task
    elsewhere = locate(str(tmp_path / "external"))  # a file outside the table: named by its location
    with journaling(other):
        creating(elsewhere, "bucket-1/data-4.parquet")
    assert other.lines == [elsewhere.describe("bucket-1/data-4.parquet")]
    assert store.read("journal/unit-0-a").decode().splitlines() == written.lines  # each attempt its own object
    assert journaled(store, "journal") == [*written.lines, *other.lines]
    assert journaled(store, "missing") == []
    remove_journal(store, "journal")
    assert not (tmp_path / "t" / "journal").exists()
    assert journaled(store, "journal") == []

    # the engine: a Paimon table's new data file, its file index too large for the manifest
    schema = pa.schema([("k", pa.int64()), ("name", pa.string())])
    wh = tmp_path / "wh"
    write_paimon(tmp_path / "work", wh, "db.j", [pa.table({"k": range(50), "name": [f"n{i}" for i in range(50)]},
                                                         schema=schema)], ["k"],
                 options={"bucket": "1", "file-index.bloom-filter.columns": "name",
                          "file-index.in-manifest-threshold": "1 b"})
    directory = paimon_directory(PaimonTable.open(str(wh), "db.j"))
    (entry,) = directory.live_files(directory.latest_snapshot()).values()
    table_path = Path(directory.path)
    before = files_under(table_path)
    recorded: list[str] = []
    record = Journal.record

    def record_before_creation(self, storage, names):
        assert not [n for n in names if storage.exists(n)]  # journaled before the file exists
        record(self, storage, names)
        recorded.extend(names)
    monkeypatch.setattr(Journal, "record", record_before_creation)
    journal = Journal(directory.storage, ".mergetree-compact-0/unit-0-c")
    with journaling(journal):
        writer = directory.open_file(entry.partition, entry.bucket, 1)
        for batch in read_data_file(directory.storage, entry.file):
            writer.write(batch)
        meta = writer.close()
    new = files_under(table_path) - before
    assert meta.file_name in journal.lines and f"{meta.file_name}.index" in journal.lines
    assert new == {*journal.lines, ".mergetree-compact-0/unit-0-c"} and recorded == journal.lines
    assert journaled(directory.storage, ".mergetree-compact-0") == journal.lines
    directory.store.remove_journaled(journaled(directory.storage, ".mergetree-compact-0"))  # the driver's cleanup
    remove_journal(directory.storage, ".mergetree-compact-0")
    assert files_under(table_path) == before


@needs_pypaimon
def test_a_tag_reads_after_its_snapshot_expired_and_unknown_columns_are_named(tmp_path) -> None:
    """The reader keeps a tag as the snapshot its tasks read (tags outlive their snapshots), and
    a schema or `columns` naming a column the table lacks is one clear error (no Spark needed:
    the reader's own calls, as Spark makes them)."""
    from mergetree import InvalidArgumentError
    from mergetree.spark.source import PaimonReader
    schema = pa.schema([("k", pa.int64()), ("v", pa.int64())])
    wh, work = tmp_path / "wh", tmp_path / "work"
    write_paimon(work, wh, "db.t", [pa.table({"k": [1, 2, 3], "v": [1, 2, 3]}, schema=schema),
                                    pa.table({"k": [2], "v": [20]}, schema=schema)], ["k"],
                 options={"bucket": "1"}, tags={"one": 1})
    (wh / "db.db" / "t" / "snapshot" / "snapshot-1").unlink()  # expired; the tag keeps its snapshot
    reader = PaimonReader({"paimon.warehouse": str(wh), "path": "db.t", "snapshot": "one"})
    got = pa.Table.from_batches([b for p in reader.partitions() for b in reader.read(p)])
    assert sorted(got.column("v").to_pylist()) == [1, 2, 3]
    with pytest.raises(InvalidArgumentError, match=r"columns \['nope'\] are not in Paimon table db.t"):
        PaimonReader({"paimon.warehouse": str(wh), "path": "db.t", "columns": "v, nope"})


def test_spark_writes_a_paimon_table_through_the_engine(spark, tmp_path) -> None:
    """`df.write.format("mergetree").option("paimon.warehouse", ...)`: each task's rows placed by
    Paimon's bucket function, one APPEND snapshot (the `op` column, the table's `rowkind.field`,
    deletes), the touched buckets compacted; `mode("overwrite")` replaces the partitions the rows
    hold.  mergetree and pypaimon read the model."""
    import mergetree.spark
    mergetree.spark.register(spark)
    schema = pa.schema([("id", pa.int64()), ("region", pa.string()), ("name", pa.string()), ("v", pa.float64()),
                        ("op", pa.string())])
    rng = random.Random(5)

    def batch(ids, tag: str, deletes: float = 0.0) -> pa.Table:
        return pa.table({"id": ids, "region": [f"r{i % 3}" for i in ids], "name": [f"{tag}{i}" for i in ids],
                         "v": [rng.random() for _ in ids],
                         "op": ["-D" if rng.random() < deletes else "+I" for _ in ids]}, schema=schema)
    name, wh, work = "db.w", tmp_path / "wh", tmp_path / "work"
    first = batch(list(range(120)), "a")
    write_paimon(work, wh, name, [first], KEY, ["region"], OPTIONS)
    model = {(r["region"], r["id"]): r for r in first.to_pylist()}
    known = PaimonTable.open(str(wh), name).latest_snapshot_id()
    more = batch(list(range(60, 200)), "b", deletes=0.2)
    spark.createDataFrame(more.to_pandas(), "id long, region string, name string, v double, op string") \
        .repartition(3).write.format("mergetree").mode("append").option("paimon.warehouse", str(wh)).save(name)
    for r in more.to_pylist():
        if r["op"] == "-D":
            model.pop((r["region"], r["id"]), None)
        else:
            model[(r["region"], r["id"])] = r
    t = PaimonTable.open(str(wh), name)
    # one APPEND for every task's files (then a COMPACT where the rules ask for one)
    assert [t.snapshot(i)["commitKind"] for i in t.snapshot_ids() if i > known][:1] == ["APPEND"]
    expected = rows(pa.Table.from_pylist(list(model.values()), schema=schema), KEY)
    assert rows(mp.read(str(wh), name), KEY) == expected == rows(pypaimon_read(wh, name, work), KEY)
    replacement = batch([0, 3, 300], "new")  # region r0 only
    spark.createDataFrame(replacement.to_pandas(), "id long, region string, name string, v double, op string") \
        .write.format("mergetree").mode("overwrite").option("paimon.warehouse", str(wh)).save(name)
    model = {k: r for k, r in model.items() if k[0] != "r0"}
    model.update({(r["region"], r["id"]): r for r in replacement.to_pylist()})
    expected = rows(pa.Table.from_pylist(list(model.values()), schema=schema), KEY)
    assert rows(mp.read(str(wh), name), KEY) == expected == rows(pypaimon_read(wh, name, work), KEY)


def test_routed_write_gives_each_paimon_bucket_one_file_set(spark, tmp_path) -> None:
    """`mergetree.spark.write(df, "db.t", **{"paimon.warehouse": wh})` routes rows by Paimon's
    bucket function (computed in the tasks), so a DataFrame of 8 partitions writes one file per
    (partition, bucket) touched — the data source alone writes one per task and bucket — and
    every row lands in the bucket Java would put it in; pypaimon reads the model."""
    import mergetree.spark
    from mergetree.codec.buckets import buckets_of
    mergetree.spark.register(spark)
    schema = pa.schema([("id", pa.int64()), ("region", pa.string()), ("name", pa.string()), ("v", pa.float64()),
                        ("op", pa.string())])
    name, wh, work = "db.r", tmp_path / "wh", tmp_path / "work"
    first = pa.table({"id": [0], "region": ["r0"], "name": ["x"], "v": [0.0], "op": ["+I"]}, schema=schema)
    write_paimon(work, wh, name, [first], KEY, ["region"], dict(OPTIONS, **{"write-only": "true"}))
    known = PaimonTable.open(str(wh), name).latest_snapshot_id()
    ids = list(range(1, 2001))
    data = pa.table({"id": ids, "region": [f"r{i % 2}" for i in ids], "name": [f"n{i}" for i in ids],
                     "v": [i / 7 for i in ids], "op": ["+I"] * len(ids)}, schema=schema)
    df = spark.createDataFrame(data.to_pandas(), "id long, region string, name string, v double, op string") \
        .repartition(8)
    mergetree.spark.write(df, name, **{"paimon.warehouse": str(wh)})
    t = PaimonTable.open(str(wh), name)
    appended = t.snapshot(known + 1)
    assert appended["commitKind"] == "APPEND" and t.latest_snapshot_id() == known + 1  # write-only
    before = {g.file_name for g in t.live_files(t.snapshot(known))}
    new = [f for f in t.live_files(appended) if f.file_name not in before]
    touched = {(f.partition, f.bucket) for f in new}
    assert len(touched) == 8 and len(new) == len(touched)  # 2 partitions x 4 buckets, one file each
    types = [t.schema().field("id").type]
    for f in new:
        got = pq.read_table(f.path, columns=["id"]).column(0)
        assert set(buckets_of([got], types, 4).tolist()) == {f.bucket}
    model = {(r["region"], r["id"]): r for r in first.to_pylist() + data.to_pylist()}
    expected = rows(pa.Table.from_pylist(list(model.values()), schema=schema), KEY)
    assert rows(mp.read(str(wh), name), KEY) == expected == rows(pypaimon_read(wh, name, work), KEY)


def test_bucket_join_of_paimon_tables_without_a_shuffle(spark, tmp_path) -> None:
    """Two Paimon tables bucketed on the join key by Paimon's bucket function, with 2 and 4
    buckets (one count divides the other: Paimon's function keeps ``bucket mod n`` too), join
    bucket by bucket, equal to a join of what pypaimon reads; a table mergetree makes with the
    same layout joins them bucket by bucket too, and one placing rows by another bucket function
    (``mod``) is refused (or joined by Spark with ``fallback=True``)."""
    import mergetree.spark
    from mergetree import Table
    schema = pa.schema([("id", pa.int64()), ("region", pa.string()), ("name", pa.string()), ("v", pa.float64()),
                        ("op", pa.string())])

    def table(name: str, buckets: int, ids: list[int], tag: str) -> Path:
        data = pa.table({"id": ids, "region": ["r"] * len(ids), "name": [f"{tag}{i}" for i in ids],
                         "v": [i / 3 for i in ids], "op": ["+I"] * len(ids)}, schema=schema)
        wh, _ = write(tmp_path / name, name, [data], {"bucket": str(buckets), "rowkind.field": "op",
                                                       "bucket-key": "id"})
        return wh
    left_wh = table("db.a", 2, list(range(0, 300, 2)), "a")
    right_wh = table("db.b", 4, list(range(0, 300, 3)), "b")
    left_path, right_path = PaimonTable.open(str(left_wh), "db.a").path, PaimonTable.open(str(right_wh), "db.b").path
    joined = mergetree.spark.bucket_join(spark, left_path, right_path, on=["region", "id"]).toArrow()
    left, right = (pypaimon_read(wh, name, tmp_path / name / "work") for wh, name in ((left_wh, "db.a"),
                                                                                    (right_wh, "db.b")))
    expected = left.join(right, keys=["region", "id"], join_type="inner", right_suffix="_right")
    key = ["region", "id"]
    assert joined.num_rows == expected.num_rows == len(set(range(0, 300, 2)) & set(range(0, 300, 3)))
    assert rows(joined, key) == rows(expected.select(joined.column_names), key)
    own = str(tmp_path / "own")
    Table.create(own, schema, primary_key=["region", "id"], partition_by=["region"], buckets=2, bucket_key=["id"])
    Table.open(own).write(right)
    assert rows(mergetree.spark.bucket_join(spark, left_path, own, on=["region", "id"]).toArrow(), key) \
        == rows(joined, key)
    by_mod = str(tmp_path / "mod")
    Table.create(by_mod, schema, primary_key=["region", "id"], partition_by=["region"], buckets=2, bucket_key=["id"],
                 options={"bucket-function.type": "mod"})
    Table.open(by_mod).write(right)
    with pytest.raises(InvalidArgumentError, match="place rows in buckets differently"):
        mergetree.spark.bucket_join(spark, left_path, by_mod, on=["region", "id"])
    fallback = mergetree.spark.bucket_join(spark, left_path, by_mod, on=["region", "id"], fallback=True).toArrow()
    assert rows(fallback, key) == rows(joined, key)


def test_a_paimon_tables_own_directory_reads_and_writes_by_path(spark, tmp_path) -> None:
    """`load(path)` and `save(path)` of a Paimon table's own directory are Paimon reads and
    writes (tags, the snapshot's schema; the engine's write path), and `mergetree.spark.write`
    routes rows to it by Paimon's bucket function; pypaimon reads what was written."""
    import mergetree.spark
    mergetree.spark.register(spark)
    name = "db.p"
    data = commits(12, 3, keys=60)
    wh, work = write(tmp_path, name, data, tags={"v2": 2})
    path = PaimonTable.open(str(wh), name).path
    by_tag = spark.read.format("mergetree").option("snapshot", "v2").load(path).toArrow()
    assert rows(by_tag, KEY) == rows(mp.read(str(wh), name, snapshot=2), KEY)
    assert rows(spark.read.format("mergetree").load(path).toArrow(), KEY) == rows(mp.read(str(wh), name), KEY)
    extra = pa.table({"id": [1000, 1001], "region": ["r0", "r1"], "name": ["x", "y"],
                      "amount": [Decimal(1), Decimal(2)], "ts": [T0, T0], "v": [0.5, 0.25], "op": ["+I", "+I"]},
                     schema=SCHEMA)
    frame = spark.createDataFrame(extra.to_pandas(), load(spark, wh, name).schema)
    frame.write.format("mergetree").mode("append").save(path)
    more = extra.set_column(0, "id", pa.array([2000, 2001], pa.int64()))
    mergetree.spark.write(spark.createDataFrame(more.to_pandas(), load(spark, wh, name).schema), path)
    got = rows(mp.read(str(wh), name), KEY)
    assert {(r["region"], r["id"]) for r in got} >= {("r0", 1000), ("r1", 1001), ("r0", 2000), ("r1", 2001)}
    assert got == rows(pypaimon_read(wh, name, work), KEY)
