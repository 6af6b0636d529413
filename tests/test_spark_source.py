"""The `mergetree` Spark data source in a real local[2] session."""
from __future__ import annotations

import datetime as dt
import itertools
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from mergetree import InvalidArgumentError, Table
from mergetree.errors import UnsupportedPaimonFeatureError

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.large_string()), ("amount", pa.decimal128(12, 2)),
                    ("at", pa.timestamp("ms", tz="Europe/Paris")), ("day", pa.date32()), ("ok", pa.bool_())])


def rows(ids, tag):
    return pa.table({
        "id": ids, "name": [None if i % 7 == 0 else f"{tag}-{i}-é" for i in ids],
        "amount": [Decimal(int(i)) / 4 for i in ids],
        "at": [dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(minutes=int(i)) for i in ids],
        "day": [dt.date(2024, 1, 1) + dt.timedelta(days=int(i) % 30) for i in ids],
        "ok": [i % 2 == 0 for i in ids]}, schema=SCHEMA)


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("spark") / "t")
    t = Table.create(path, SCHEMA, primary_key="id", buckets=4, options={"write-only": "true"})
    rng = np.random.default_rng(5)
    for c in range(4):
        t.write(rows(rng.choice(300, 120, replace=False).astype(np.int64), f"c{c}"))
    t.delete(pa.table({"id": pa.array([1, 2, 3], pa.int64())}))
    return t


def spark_rows(df):
    return sorted((r.asDict() for r in df.collect()), key=lambda r: r["id"])


def local_rows(table, **kwargs):
    out = []
    for r in table.read(**kwargs).to_pylist():
        r["at"] = r["at"].astimezone(dt.timezone.utc).replace(tzinfo=None)  # session time zone UTC
        out.append(r)
    return sorted(out, key=lambda r: r["id"])


def test_read_equals_table_read(spark, table):
    import mergetree.spark
    mergetree.spark.register(spark)
    df = spark.read.format("mergetree").load(table.path)
    assert df.rdd.getNumPartitions() == 4  # one task per bucket
    assert spark_rows(df) == local_rows(table)


def ids_in_two_buckets(table):
    """Two ids of the table that live in different buckets."""
    ids = [r["id"] for r in local_rows(table)]
    buckets = table.directory.bucket_ids(pa.table({"id": pa.array(ids, pa.int64())})).tolist()
    return ids[0], next(i for i, b in zip(ids, buckets) if b != buckets[0])


def test_one_dataframe_queried_with_and_without_a_filter_answers_both(spark, table):
    """pyspark <= 4.3 reuse the read planned during a filter's pushdown for the same
    DataFrame's later queries that push no filter, and for its other filtered scans in the same
    query, so a source that took the filter answered `df.count()` after `df.where(...)` with the
    filtered count.  By default the source takes no filter there (Spark applies them);
    `pushFilters` opts in, for a DataFrame of its own."""
    import mergetree.spark
    from mergetree.spark.source import push_filters_option
    mergetree.spark.register(spark)
    total = table.read().num_rows
    first, second = ids_in_two_buckets(table)
    df = spark.read.format("mergetree").load(table.path)
    assert df.count() == total
    assert df.where("id < 10").count() == len([r for r in local_rows(table) if r["id"] < 10])
    df.where(f"id = {first}").explain()
    assert df.count() == total  # not the filtered rows of the queries before
    assert df.groupBy().count().collect()[0][0] == total
    assert [r["id"] for r in df.where(f"id = {second}").collect()] == [second]
    both = df.where(f"id = {first}").union(df.where(f"id = {second}"))
    assert sorted(r["id"] for r in both.collect()) == sorted([first, second])
    assert df.count() == total
    assert push_filters_option({"pushfilters": "TRUE"}) and not push_filters_option({"pushfilters": "false"})
    with pytest.raises(InvalidArgumentError, match="pushFilters"):
        push_filters_option({"pushfilters": "yes please"})


def test_pushfilters_default_matches_how_this_pyspark_reuses_a_pushed_read(spark, table):
    """Measures on the installed pyspark what STALE_PUSHDOWN_SPARK assumes: with `pushFilters`,
    one DataFrame's unfiltered query after a filtered one, and a union of two filtered views
    of it, answer right only where Spark keeps each pushed read in its own scan.  The default
    is on exactly there; if this fails, pyspark changed and the default must follow."""
    import mergetree.spark
    from mergetree.spark.source import push_filters_option
    mergetree.spark.register(spark)
    total = table.read().num_rows
    first, second = ids_in_two_buckets(table)
    pushing = spark.read.format("mergetree").option("pushFilters", "true").load(table.path)
    assert pushing.where(f"id = {first}").rdd.getNumPartitions() == 1  # it took the filter: one bucket
    count_right = pushing.count() == total
    both = pushing.where(f"id = {first}").union(pushing.where(f"id = {second}"))
    union_right = sorted(r["id"] for r in both.collect()) == sorted([first, second])
    assert count_right == union_right  # one cause: the data source's single planned read
    assert push_filters_option({}) == count_right
    # the default, and pushFilters=false, read every bucket where reuse is unsafe
    default = spark.read.format("mergetree").load(table.path).where(f"id = {first}")
    assert default.rdd.getNumPartitions() == (1 if count_right else 4)
    off = spark.read.format("mergetree").option("pushFilters", "false").load(table.path).where(f"id = {first}")
    assert off.rdd.getNumPartitions() == 4 and [r["id"] for r in off.collect()] == [first]


def test_pushdown_prunes_buckets_and_stays_exact(spark, table, tmp_path):
    import mergetree.spark
    mergetree.spark.register(spark)
    for where, wanted in [("id in (17, 42)", {17, 42}), ("id = 17", {17})]:
        df = spark.read.format("mergetree").option("pushFilters", "true").load(table.path).where(where)
        assert spark_rows(df) == [r for r in local_rows(table) if r["id"] in wanted]
        # the pushed filter reached the plan: one Spark partition per bucket that can hold the ids
        buckets = {int(b) for b in table.directory.bucket_ids(pa.table({"id": pa.array(sorted(wanted), pa.int64())}))}
        assert df.rdd.getNumPartitions() == len(buckets) < 4
    # no bucket pruning for a range: every bucket is read
    pushing = spark.read.format("mergetree").option("pushFilters", "true")
    assert pushing.load(table.path).where("id > 5").rdd.getNumPartitions() == 4
    # a filter on a value column must see merged rows, never an older version
    names = spark_rows(pushing.load(table.path).where("name like 'c0-%'"))
    assert names == [r for r in local_rows(table) if r["name"] and r["name"].startswith("c0-")]


def test_time_travel_option(spark, table):
    import mergetree.spark
    mergetree.spark.register(spark)
    first = table.snapshots()[0].id
    df = spark.read.format("mergetree").option("snapshot", str(first)).load(table.path)
    assert spark_rows(df) == local_rows(table, snapshot=first)


def spark_frame(spark, ids, tag):
    import datetime as _dt
    from decimal import Decimal as _D
    data = [(int(i), None if i % 5 == 0 else f"{tag}-{i}-ü", _D(int(i)) / 8,
             _dt.datetime(2024, 3, 1) + _dt.timedelta(seconds=int(i)), i % 3 == 0) for i in ids]
    return spark.createDataFrame(data, "id long, name string, amount decimal(10,3), at timestamp, flag boolean")


def test_write_then_read_round_trip(spark, tmp_path):
    import mergetree.spark
    from mergetree.table.files import read_data_file
    mergetree.spark.register(spark)
    path = str(tmp_path / "w")
    first = spark_frame(spark, range(0, 200), "a").repartition(3)
    first.write.format("mergetree").mode("append").option("primaryKey", "id").option("buckets", "4").save(path)
    second = spark_frame(spark, range(100, 300), "b").repartition(2)
    second.write.format("mergetree").mode("append").save(path)
    table = Table.open(path)
    assert table.table_schema.buckets == 4 and table.table_schema.primary_key == ("id",)
    kinds = [s.commit_kind for s in table.snapshots()]
    assert [k for k in kinds if k != "COMPACT"] == ["APPEND", "APPEND"]  # one snapshot per job (and compactions)
    expected = {r["id"]: r for r in (spark_rows(first) + spark_rows(second))}  # later job wins
    got = spark_rows(spark.read.format("mergetree").load(path))
    assert got == [expected[k] for k in sorted(expected)]
    # rows sit in the buckets the table's bucket function names
    for entry in table.directory.live_files(table.latest_snapshot()).values():
        ids = pa.Table.from_batches(list(read_data_file(table.directory.storage, entry.file, ["id"])))
        assert set(table.directory.bucket_ids(ids).tolist()) == {entry.bucket}


def test_overwrite_replaces_everything(spark, tmp_path):
    import mergetree.spark
    mergetree.spark.register(spark)
    path = str(tmp_path / "o")
    spark_frame(spark, range(50), "a").write.format("mergetree").mode("append").option("primaryKey", "id") \
        .option("buckets", "2").save(path)
    spark_frame(spark, range(40, 60), "b").write.format("mergetree").mode("overwrite").save(path)
    got = spark_rows(spark.read.format("mergetree").load(path))
    assert [r["id"] for r in got] == list(range(40, 60))
    assert Table.open(path).snapshots()[-1].commit_kind == "OVERWRITE"


def test_failed_job_leaves_the_table_unchanged(spark, tmp_path):
    from pyspark.sql import functions as F

    import mergetree.spark
    mergetree.spark.register(spark)
    path = str(tmp_path / "f")
    spark_frame(spark, range(20), "a").write.format("mergetree").mode("append").option("primaryKey", "id").save(path)
    before = Table.open(path).read()

    @F.udf("long")
    def explode(i):
        if i == 77:
            raise ValueError("task failure on purpose")
        return i

    bad = spark_frame(spark, range(60, 90), "b").repartition(3).withColumn("id", explode("id"))
    with pytest.raises(Exception, match="task failure on purpose"):
        bad.write.format("mergetree").mode("append").save(path)
    table = Table.open(path)
    assert len(table.snapshots()) == 1 and table.read().equals(before)
    import datetime as _dt
    table.remove_orphan_files(older_than=_dt.timedelta(0))  # debris of tasks that wrote before the failure
    assert table.read().equals(before)


def test_distributed_compaction_equals_local(spark, tmp_path):
    import shutil

    import mergetree.spark
    from mergetree.table.compaction.runner import bucket_levels
    base = str(tmp_path / "c")
    t = Table.create(base, SCHEMA, primary_key="id", buckets=3, options={"write-only": "true"})
    rng = np.random.default_rng(9)
    for c in range(6):
        t.write(rows(rng.choice(400, 150, replace=False).astype(np.int64), f"c{c}"))
    t.delete(pa.table({"id": pa.array(range(0, 400, 9), pa.int64())}))
    shutil.copytree(base, str(tmp_path / "local"))
    local = Table.open(str(tmp_path / "local"))
    local.compact(full=True)
    snapshot = mergetree.spark.compact(spark, base, full=True)
    assert snapshot is not None and snapshot.commit_kind == "COMPACT"
    distributed = Table.open(base)
    key = lambda r: r["id"]  # noqa: E731
    assert sorted(distributed.read().to_pylist(), key=key) == sorted(local.read().to_pylist(), key=key)
    for levels in bucket_levels(distributed.directory).values():  # one sorted run per bucket, no deletes left
        assert levels.number_of_sorted_runs() == 1
        assert all(f.delete_count == 0 for f in levels.all_files())
    assert mergetree.spark.compact(spark, base, full=True) is None  # nothing left to do


def test_merge_sorted_runs_in_map_in_arrow(spark):
    from reference import merge_model

    import mergetree
    import mergetree.spark
    rng = np.random.default_rng(3)
    rows_ = []
    for run in range(5):
        for bucket in range(3):
            for k in sorted(rng.choice(60, 25, replace=False).tolist()):
                rows_.append((bucket, run, k * 3 + bucket, f"r{run}", run * 1000 + k))
    df = spark.createDataFrame(rows_, "bucket int, run int, k long, v string, seq long")
    # 5 partitions for 3 buckets: some tasks get no rows at all
    prepared = df.repartition(5, "bucket").sortWithinPartitions("bucket", "run", "k")
    merged = prepared.mapInArrow(mergetree.spark.merge_sorted_runs("k", group="bucket", sequence="seq"),
                                 df.schema)
    got = sorted((r.asDict() for r in merged.collect()), key=lambda r: r["k"])
    runs = [[dict(zip(("bucket", "run", "k", "v", "seq"), r)) for r in rows_ if r[1] == i] for i in range(5)]
    runs = [sorted(r, key=lambda x: x["k"]) for r in runs]
    want = merge_model(runs, ["k"], sequence="seq", columns=["bucket", "run", "k", "v", "seq"])
    assert got == sorted(want, key=lambda r: r["k"])


def test_readme_map_in_arrow_example(spark):
    import re
    from pathlib import Path

    import mergetree.spark
    readme = Path(__file__).resolve().parent.parent / "README.md"
    if not readme.exists():
        pytest.skip("README.md is not beside the tests")
    # the README's block starts its own session; the test's is the same local one
    code = re.search(r"```python\n[^`]*?(rows = \[\(b, run.*?)```", readme.read_text(), re.S).group(1)
    namespace = {"spark": spark, "mergetree": mergetree}
    exec(compile(code.replace(".show(3)", ".limit(3)"), "README mapInArrow", "exec"), namespace)
    got = [r.asDict() for r in namespace["merged"].orderBy("k").collect()]
    assert len(got) == 10 and all(r["run"] == 2 for r in got)  # the newest run wins every key


@pytest.mark.parametrize("engine", ["deduplicate", "partial-update", "aggregate", "first-row"])
def test_read_equals_table_read_for_every_engine(spark, tmp_path, engine):
    import mergetree.spark
    mergetree.spark.register(spark)
    schema = pa.schema([("id", pa.int32()), ("city", pa.string()), ("n", pa.int64())])
    t = Table.create(str(tmp_path / engine), schema, primary_key="id", buckets=3, merge_engine=engine,
                     options={"write-only": "true",
                              **({"fields.n.aggregate-function": "sum"} if engine == "aggregate" else {})})
    rng = np.random.default_rng(len(engine))
    for c in range(4):
        ids = rng.choice(80, 40, replace=False).astype(np.int32)
        t.write(pa.table({"id": ids, "city": [None if (i + c) % 4 == 0 else f"c{c}" for i in ids],
                          "n": [None if (i * c) % 5 == 0 else int(i) + c for i in ids]}, schema=schema))
    deleted = pa.table({"id": pa.array([1, 2, 3, 5, 8], pa.int32())})
    if engine == "deduplicate":
        t.delete(deleted)
    elif engine == "partial-update":  # Paimon's partial-update takes no deletes (without 'ignore-delete')
        with pytest.raises(UnsupportedPaimonFeatureError, match="retraction"):
            t.delete(deleted)
    got = sorted((r.asDict() for r in spark.read.format("mergetree").load(t.path).collect()), key=lambda r: r["id"])
    assert got == sorted(t.read().to_pylist(), key=lambda r: r["id"])


@pytest.fixture(scope="module")
def join_tables(tmp_path_factory):
    root = tmp_path_factory.mktemp("join")
    rng = np.random.default_rng(11)
    paths = []
    for side, n in (("l", 400), ("r", 300)):
        schema = pa.schema([("id", pa.int64()), (f"{side}_name", pa.string()), ("shared", pa.int64())])
        t = Table.create(str(root / side), schema, primary_key="id", buckets=4, options={"write-only": "true"})
        for c in range(3):
            ids = rng.choice(600, n // 2, replace=False).astype(np.int64)
            t.write(pa.table({"id": ids, f"{side}_name": [f"{side}{c}-{i}" for i in ids],
                              "shared": ids * (c + 1)}, schema=schema))
        paths.append(t.path)
    return paths


@pytest.mark.parametrize("how", ["inner", "left", "right", "full", "semi", "anti"])
def test_bucket_join_equals_spark_join_without_exchange(spark, join_tables, how):
    import mergetree.spark
    mergetree.spark.register(spark)
    left_path, right_path = join_tables
    joined = mergetree.spark.bucket_join(spark, left_path, right_path, "id", how)
    plan = joined._jdf.queryExecution().executedPlan().toString()
    assert "Exchange" not in plan and "Sort" not in plan, plan
    # the 4 buckets spread over as many tasks as Spark runs at once
    assert joined.rdd.getNumPartitions() == min(4, spark.sparkContext.defaultParallelism)
    reader = spark.read.format("mergetree")
    expected = (reader.load(left_path).join(reader.load(right_path).withColumnRenamed("shared", "shared_right"),
                                            on="id", how=mergetree.spark.jobs.SPARK_JOINS[how]))
    key = lambda r: r["id"]  # noqa: E731
    got = sorted((r.asDict() for r in joined.collect()), key=key)
    want = sorted((r.asDict() for r in expected.select(*joined.columns).collect()), key=key)
    assert got == want and got


def _join_side(root, side: str, buckets: int, n: int, seed: int) -> str:
    rng = np.random.default_rng(seed)
    schema = pa.schema([("id", pa.int64()), (f"{side}_name", pa.string()), ("shared", pa.int64())])
    t = Table.create(str(root / f"{side}{buckets}"), schema, primary_key="id", buckets=buckets,
                     options={"write-only": "true"})
    for c in range(3):
        ids = rng.choice(900, n // 2, replace=False).astype(np.int64)
        t.write(pa.table({"id": ids, f"{side}_name": [f"{side}{c}-{i}" for i in ids], "shared": ids * (c + 1)},
                         schema=schema))
    return t.path


@pytest.mark.parametrize(("left_buckets", "right_buckets"), [(4, 8), (12, 3)])
@pytest.mark.parametrize("how", ["inner", "left", "right", "full", "semi", "anti"])
def test_bucket_join_across_divisible_bucket_counts(spark, tmp_path, left_buckets, right_buckets, how):
    """Bucket i of n joins buckets i, i+n, ... of k*n, merged in the task: no Exchange, no Sort,
    one task per bucket of the smaller count (asked for more tasks than that), the same rows
    as Spark's own join."""
    import mergetree.spark
    mergetree.spark.register(spark)
    left_path = _join_side(tmp_path, "l", left_buckets, 500, 1)
    right_path = _join_side(tmp_path, "r", right_buckets, 400, 2)
    joined = mergetree.spark.bucket_join(spark, left_path, right_path, "id", how, tasks=64)
    plan = joined._jdf.queryExecution().executedPlan().toString()
    assert "Exchange" not in plan and "Sort" not in plan, plan
    assert joined.rdd.getNumPartitions() == min(left_buckets, right_buckets)
    reader = spark.read.format("mergetree")
    expected = (reader.load(left_path).join(reader.load(right_path).withColumnRenamed("shared", "shared_right"),
                                            on="id", how=mergetree.spark.jobs.SPARK_JOINS[how]))
    key = lambda r: r["id"]  # noqa: E731
    got = sorted((r.asDict() for r in joined.collect()), key=key)
    want = sorted((r.asDict() for r in expected.select(*joined.columns).collect()), key=key)
    assert got == want and got


@pytest.mark.parametrize("how", ["inner", "left", "right", "full", "semi", "anti"])
def test_bucket_join_of_partitioned_tables(spark, tmp_path, how):
    """Partitioned tables join (partition, bucket) by (partition, bucket), partitions paired by
    value (some only on one side), 2 and 4 buckets: Spark's join's rows, no Exchange or Sort."""
    import mergetree.spark
    mergetree.spark.register(spark)
    paths = []
    for side, buckets, regions, seed in (("l", 2, ["eu", "us", "apac"], 3), ("r", 4, ["eu", "us", "latam"], 4)):
        rng = np.random.default_rng(seed)
        schema = pa.schema([("region", pa.string()), ("id", pa.int64()), (f"{side}_v", pa.int64())])
        t = Table.create(str(tmp_path / side), schema, primary_key=["region", "id"], partition_by="region",
                         buckets=buckets, options={"write-only": "true"})
        for c in range(2):
            ids = rng.choice(300, 120, replace=False).astype(np.int64)
            t.write(pa.table({"region": [regions[i % 3] for i in ids], "id": ids, f"{side}_v": ids * 10 + c},
                             schema=schema))
        paths.append(t.path)
    joined = mergetree.spark.bucket_join(spark, paths[0], paths[1], ["region", "id"], how, tasks=3)
    plan = joined._jdf.queryExecution().executedPlan().toString()
    assert "Exchange" not in plan and "Sort" not in plan, plan
    assert joined.rdd.getNumPartitions() == 3  # eu, us, apac, latam x 2 buckets: 8 units in 3 tasks
    reader = spark.read.format("mergetree")
    expected = reader.load(paths[0]).join(reader.load(paths[1]), on=["region", "id"],
                                          how=mergetree.spark.jobs.SPARK_JOINS[how])
    key = lambda r: (r["region"], r["id"])  # noqa: E731
    got = sorted((r.asDict() for r in joined.collect()), key=key)
    want = sorted((r.asDict() for r in expected.select(*joined.columns).collect()), key=key)
    assert got == want and got


@pytest.mark.parametrize("tasks", [0, -1, 1.5, True, "2"])
def test_bucket_join_refuses_a_bad_task_count(spark, join_tables, tasks):
    import mergetree.spark
    with pytest.raises(InvalidArgumentError, match="tasks must be a positive integer"):
        mergetree.spark.bucket_join(spark, join_tables[0], join_tables[1], "id", tasks=tasks)


def test_spread_units_balances_bytes():
    """The largest unit first, onto the least loaded task (the lower on a tie); each task's
    units in index order; never more tasks than units."""
    pytest.importorskip("pyspark")  # mergetree.spark needs it; no session is started
    from mergetree.spark.jobs import spread_units
    assert spread_units([5, 1, 4, 2, 3], 2) == [[0, 1, 3], [2, 4]]  # 5+2+1=8 vs 4+3=7
    assert spread_units([1, 1, 1], 8) == [[0], [1], [2]]
    assert spread_units([7], 1) == [[0]]
    assert spread_units([3, 3, 3, 3], 2) == [[0, 2], [1, 3]]
    assert spread_units([0, 0], 1) == [[0, 1]]


def _wide_key_side(root, side: str, buckets: int, partitioned: bool, seed: int) -> str:
    """A table keyed wider than the join key: (user, <side>_seq) bucketed on user, 3 commits
    that overwrite and add rows, a delete; with `partitioned`, (region, user, seq) by region."""
    rng = np.random.default_rng(seed)
    seq = f"{side}_seq"
    columns = [("user", pa.int64()), (seq, pa.int32()), ("payload", pa.string())]
    pk = ["user", seq]
    if partitioned:
        columns.insert(0, ("region", pa.string()))
        pk.insert(0, "region")
    schema = pa.schema(columns)
    t = Table.create(str(root / side), schema, primary_key=pk, bucket_key="user", buckets=buckets,
                     partition_by="region" if partitioned else None, options={"write-only": "true"})
    for c in range(3):
        users = rng.integers(0, 120, 300) + (0 if side == "l" else 40)  # some users on one side only
        seqs = rng.integers(0, 6, 300).astype(np.int32)
        rows = {"user": users, seq: seqs, "payload": [f"{side}{c}-{u}-{q}" for u, q in zip(users, seqs)]}
        if partitioned:
            rows["region"] = [["eu", "us", "apac" if side == "l" else "latam"][u % 3] for u in users]
        t.write(pa.table(rows, schema=schema).group_by(pk).aggregate([("payload", "max")])
                .rename_columns([*pk, "payload"]).select(schema.names).cast(schema))
    gone = {"user": list(range(0, 160, 7)), seq: [0] * len(range(0, 160, 7))}
    if partitioned:
        gone["region"] = [["eu", "us", "apac" if side == "l" else "latam"][u % 3] for u in gone["user"]]
    t.delete(pa.table(gone).select(pk).cast(pa.schema([schema.field(c) for c in pk])))
    return t.path


@pytest.mark.parametrize("partitioned", [False, True], ids=["unpartitioned", "partitioned"])
@pytest.mark.parametrize("how", ["inner", "left", "right", "full", "semi", "anti"])
def test_bucket_join_on_a_key_narrower_than_the_primary_key(spark, tmp_path, partitioned, how):
    """Primary keys (user, seq) bucketed on user join on user: a user's rows on both sides pair
    up (many to many) like Spark's join, with divisible bucket counts, partitions paired by
    value, and no Exchange or Sort."""
    import mergetree.spark
    mergetree.spark.register(spark)
    left_path = _wide_key_side(tmp_path, "l", 2 if partitioned else 4, partitioned, 21)
    right_path = _wide_key_side(tmp_path, "r", 4 if partitioned else 8, partitioned, 22)
    on = ["region", "user"] if partitioned else ["user"]
    joined = mergetree.spark.bucket_join(spark, left_path, right_path, on, how)
    plan = joined._jdf.queryExecution().executedPlan().toString()
    assert "Exchange" not in plan and "Sort" not in plan, plan
    reader = spark.read.format("mergetree")
    expected = (reader.load(left_path).join(reader.load(right_path).withColumnRenamed("payload", "payload_right"),
                                            on=on, how=mergetree.spark.jobs.SPARK_JOINS[how]))
    key = lambda r: tuple(str(v) for v in r.values())  # noqa: E731
    got = sorted((r.asDict() for r in joined.collect()), key=key)
    want = sorted((r.asDict() for r in expected.select(*joined.columns).collect()), key=key)
    assert got == want and got
    if how == "inner":  # keys do repeat on both sides: more rows than either side has
        assert len(got) > max(Table.open(p).read().num_rows for p in (left_path, right_path))


def test_bucket_join_refuses_mismatched_tables_or_falls_back(spark, join_tables, tmp_path):
    import mergetree.spark
    from mergetree import InvalidArgumentError
    left_path, _ = join_tables
    other = Table.create(str(tmp_path / "o"), pa.schema([("id", pa.int64()), ("x", pa.int64())]),
                         primary_key="id", buckets=3)
    other.write(pa.table({"id": [1, 2, 3], "x": [1, 2, 3]}))
    with pytest.raises(InvalidArgumentError, match="neither divides the other"):
        mergetree.spark.bucket_join(spark, left_path, other.path, "id")
    df = mergetree.spark.bucket_join(spark, left_path, other.path, "id", fallback=True)
    local = Table.open(left_path).read(filter=("id", "in", [1, 2, 3]))
    assert df.count() == local.num_rows
    # the fallback returns what a bucket join would: the left's columns, then the right's others
    assert df.columns == ["id", "l_name", "shared", "x"]
    full = mergetree.spark.bucket_join(spark, left_path, join_tables[1], "id", "full", fallback=True)
    assert full.columns == ["id", "l_name", "shared", "r_name", "shared_right"]


def _keyed(path, primary_key, bucket_key=None, partition_by=None, buckets=4):
    schema = pa.schema([("region", pa.string()), ("user", pa.int64()), ("seq", pa.int64()), ("v", pa.int64())])
    return Table.create(str(path), schema, primary_key=primary_key, bucket_key=bucket_key, partition_by=partition_by,
                        buckets=buckets)


@pytest.mark.parametrize(("left", "right", "on", "message"), [
    (dict(primary_key=["user", "seq"], bucket_key="user"), dict(primary_key=["seq", "user"], bucket_key="user"),
     "user", "primary key .* does not start with the join key"),
    (dict(primary_key=["user", "seq"], bucket_key="user"), dict(primary_key=["user", "seq"]),
     "user", "bucketed on different keys"),
    (dict(primary_key=["user", "seq"]), dict(primary_key=["user", "seq"]), "user", "bucket key .* not within"),
    (dict(primary_key=["region", "user"], partition_by="region"),
     dict(primary_key=["region", "user"], partition_by="region"), "user", "must include the partition columns"),
    (dict(primary_key=["user", "seq"], bucket_key="user"), dict(primary_key=["seq", "user"], bucket_key="user"),
     ["seq", "user"], "order the join key differently"),
])
def test_bucket_join_says_why_tables_are_not_joinable(tmp_path, left, right, on, message):
    """Each rule a bucket join needs is checked before any task runs, and named."""
    pytest.importorskip("pyspark")  # mergetree.spark needs it; no session is started
    from mergetree import InvalidArgumentError
    from mergetree.spark.jobs import _merge_join_key
    a, b = _keyed(tmp_path / "a", **left), _keyed(tmp_path / "b", **right)
    with pytest.raises(InvalidArgumentError, match=message):
        _merge_join_key(a, b, [on] if isinstance(on, str) else on)
    # joinable: a pk wider than the join key, partition columns anywhere in `on`
    c = _keyed(tmp_path / "c", ["region", "user", "seq"], bucket_key="user", partition_by="region")
    d = _keyed(tmp_path / "d", ["region", "user", "v"], bucket_key="user", partition_by="region", buckets=8)
    assert _merge_join_key(c, d, ["user", "region"]) == ["region", "user"]
    assert _merge_join_key(c, c, ["seq", "user", "region"]) == ["region", "user", "seq"]  # `on` in any order


def test_distributed_optimize_clusters_like_the_local_one(spark, tmp_path):
    import mergetree.spark
    from mergetree.table.read import top_rows
    schema = pa.schema([("id", pa.int64()), ("a", pa.int64()), ("b", pa.float64()), ("name", pa.large_string()),
                        ("at", pa.timestamp("ns"))])
    rng = np.random.default_rng(11)
    t = Table.create(str(tmp_path / "t"), schema, options={"target-file-size": "64 kb"})
    for _ in range(6):
        n = 4000
        t.write(pa.table({"id": rng.integers(0, 10**12, n), "a": rng.integers(0, 10**6, n), "b": rng.normal(size=n),
                          "name": [f"n{i}" for i in rng.integers(0, 50, n)],
                          "at": pa.array(rng.integers(0, 10**18, n)).cast(pa.timestamp("ns"))}, schema=schema))
    before = top_rows(t.read(), [("id", "asc")], None)
    files_before = t.info().files
    snapshot = mergetree.spark.optimize(spark, t.path, order=["a", "b"], strategy="hilbert")
    assert snapshot is not None and snapshot.commit_kind == "COMPACT"
    after = Table.open(t.path)
    assert top_rows(after.read(), [("id", "asc")], None).equals(before)  # every row, exact (ns kept)
    info = after.info()
    assert info.clustering == ("a", "b") and info.strategy == "hilbert"
    depth = {c.column: c.depth for c in info.column_clustering}
    assert depth["a"] < info.files / 2 and depth["b"] < info.files / 2, (depth, info.files, files_before)
    from mergetree.organize import history
    recorded = history(after.path).to_pylist()  # a layout change by a Spark job is in the history too
    assert [(r["tier"], r["files_out"] == info.files) for r in recorded] == [("optimize", True)]


def test_pushed_filters_use_bloom_filters(spark, tmp_path):
    import mergetree.spark
    mergetree.spark.register(spark)
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    t = Table.create(str(tmp_path / "b"), schema, options={"file-index.bloom-filter.columns": "id"})
    t.write(pa.table({"id": pa.array(range(0, 20_000, 2), pa.int64()), "v": ["x"] * 10_000}))
    assert t.plan(("id", "=", 7)).steps["file-index"].files == 1  # inside min/max, absent: only the Bloom filter knows
    from pyspark.sql.datasource import EqualTo

    from mergetree.spark.source import to_mergetree_filter
    pushed = to_mergetree_filter(EqualTo(("id",), 7), t.schema)  # what the source keeps of Spark's filter
    assert pushed == ("id", "=", 7) and t.plan(pushed).files == []  # ... and the plan it makes from it
    df = spark.read.format("mergetree").load(t.path)
    assert df.where("id = 7").count() == 0 and df.where("id = 8").count() == 1


def test_spark_reads_are_logged_by_the_driver(spark, tmp_path):
    import mergetree.spark
    from mergetree.table.workload import querylog
    mergetree.spark.register(spark)
    t = Table.create(str(tmp_path / "t"), SCHEMA, primary_key="id", buckets=4)
    t.write(rows(np.arange(50, dtype=np.int64), "x"))
    df = spark.read.format("mergetree").option("pushFilters", "true").load(t.path).where(
        "id = 17 and day >= date'2024-01-05'")
    assert [r["id"] for r in df.collect()] == [17]
    querylog.flush()
    logged = [r for r in Table.open(querylog.log_path(t.path)).read().to_pylist() if r["source"] == "spark"]
    assert logged, "the Spark read left no record"
    last = logged[-1]
    assert last["filter_columns"] == ["day", "id"] and last["kind"] == "read"
    assert {"column": "id", "kind": "eq"} in last["predicates"]
    assert last["files_scanned"] == 1 < last["files_total"] == 4  # bucket pruning, as planned
    replayed = t.read(filter=querylog.filter_from_json(last["filter"]))
    assert replayed.column("id").to_pylist() == [17]


OPT_SCHEMA = pa.schema([("id", pa.int64()), ("a", pa.int64()), ("b", pa.float64())])


def _waiting_append_table(path: str, columns: str, strategy: str, commits: int, seed: int) -> Table:
    """An append table with a layout and `commits` small unoptimized files, over the major threshold."""
    t = Table.create(path, OPT_SCHEMA, options={
        "write-only": "true", "target-file-size": "200 kb", "optimize.major-threshold": "100 kb",
        "clustering.columns": columns, "clustering.strategy": strategy})
    rng = np.random.default_rng(seed)
    for i in range(commits):
        t.write(pa.table({"id": np.arange(i * 3000, (i + 1) * 3000), "a": rng.integers(0, 10**6, 3000),
                          "b": rng.normal(size=3000)}, schema=OPT_SCHEMA))
    return t


def test_optimize_pending_lays_out_waiting_data_once(spark, tmp_path):
    import mergetree.spark
    from mergetree.organize import history
    t = _waiting_append_table(str(tmp_path / "t"), "a,b", "hilbert", commits=6, seed=8)
    expected = t.read().sort_by("id")
    reports = {r.tier: r for r in mergetree.spark.optimize_pending(spark, t.path)}
    assert reports["major"].status == "committed" and reports["major"].files_in == 6
    t = Table.open(t.path)
    assert t.read().sort_by("id").equals(expected)
    levels = {e.file.level for e in t.directory.live_files(t.latest_snapshot()).values()}
    assert levels == {t.directory.store.clustered_level(t.directory.options)}  # laid out, not waiting
    assert history(t.path).column("layout").to_pylist() == ["hilbert(a,b)"]
    assert {r.status for r in mergetree.spark.optimize_pending(spark, [t.path])} == {"nothing"}
    assert history(t.path).column("tier").to_pylist() == ["major"]


def test_a_single_large_bucket_is_read_by_several_tasks(spark, tmp_path):
    """A 1-bucket table of overlapping level-0 runs, read with a small splitSize: several
    partitions (key ranges of the bucket), and exactly the Python read."""
    import mergetree.spark
    mergetree.spark.register(spark)
    path = str(tmp_path / "one")
    schema = pa.schema([("id", pa.int64()), ("v", pa.int64()), ("s", pa.string())])
    table = Table.create(path, schema, primary_key="id", options={"write-only": "true"})
    rng = np.random.default_rng(11)
    for c in range(4):
        ids = rng.choice(100_000, 40_000, replace=False).astype(np.int64)
        table.write(pa.table({"id": ids, "v": ids * c, "s": [f"c{c}-{i}" for i in ids]}, schema=schema))
    table.delete(pa.table({"id": pa.array(range(0, 100_000, 97), pa.int64())}))
    whole = spark.read.format("mergetree").load(path)
    assert whole.rdd.getNumPartitions() == 1  # under the default splitSize
    df = spark.read.format("mergetree").option("splitSize", "256kb").load(path)
    assert df.rdd.getNumPartitions() > 1
    got = sorted((r.asDict() for r in df.collect()), key=lambda r: r["id"])
    assert got == table.read().sort_by("id").to_pylist()
    # the partitions are key ranges: each holds a contiguous, disjoint slice of the keys
    spans = df.rdd.mapPartitions(lambda rows: [[r.id for r in rows]]).collect()
    spans = [(min(s), max(s)) for s in spans if s]
    assert len(spans) > 1 and all(a[1] < b[0] for a, b in itertools.pairwise(spans))


def test_write_tasks_stream_through_a_small_write_buffer(spark, tmp_path):
    """Each task spills its rows a write buffer at a time: many level-0 files, one commit."""
    import mergetree.spark
    mergetree.spark.register(spark)
    path = str(tmp_path / "stream")
    frame = spark.range(0, 60_000).selectExpr("id", "cast(id * 3 as bigint) as v").repartition(2)
    frame.write.format("mergetree").mode("append").option("primaryKey", "id") \
        .option("write-buffer-size", "256kb").option("write-only", "true").save(path)
    table = Table.open(path)
    assert [s.commit_kind for s in table.snapshots()] == ["APPEND"]
    assert len(table.plan().files) > 4  # more than one spill per task
    got = table.read().sort_by("id")
    assert got.column("id").to_pylist() == list(range(60_000))
    assert got.column("v").to_pylist() == [3 * i for i in range(60_000)]


def test_spark_optimizer_passes_are_the_daemons(spark, tmp_path):
    """optimize_pending runs the daemon's own round (organize.scheduler.run_pass), so the three
    ways the Spark form drifted from it cannot come back: its reports carry the files and bytes
    written, a primary-key table's passes are recorded in the optimizer history, and its major
    pass builds the indexes the options declare."""
    import mergetree.spark
    from mergetree.codec import file_index
    from mergetree.organize import history
    t = _waiting_append_table(str(tmp_path / "append"), "a", "linear", commits=4, seed=3)
    schema, rng = OPT_SCHEMA, np.random.default_rng(3)
    major = {r.tier: r for r in mergetree.spark.optimize_pending(spark, t.path)}["major"]
    assert major.status == "committed" and major.files_out >= 1 and major.bytes_out > 0
    recorded = history(t.path).to_pylist()
    assert [(r["tier"], r["files_out"] >= 1, r["bytes_out"] > 0) for r in recorded] == [("major", True, True)]

    pk = Table.create(str(tmp_path / "pk"), schema, primary_key="id", options={"write-only": "true"})
    for _ in range(2):
        pk.write(pa.table({"id": np.arange(0, 2000), "a": rng.integers(0, 100, 2000),
                           "b": rng.normal(size=2000)}, schema=schema))
    pk.set_options({"file-index.bloom-filter.columns": "a"})  # the files written before have no Bloom filter
    reports = {r.tier: r for r in mergetree.spark.optimize_pending(spark, pk.path)}
    pk = Table.open(pk.path)
    paimon = pk.directory.store.table
    live = paimon.live_files(paimon.resolve(None))
    assert live
    for f in live:  # each file's Paimon file index (embedded in the manifest, or a file beside it) holds 'a'
        blob = f.record["_FILE"]["_EMBEDDED_FILE_INDEX"]
        if blob is None:
            blob = (Path(f.path).parent / f.record["_FILE"]["_EXTRA_FILES"][0]).read_bytes()
        assert set(file_index.decode_container(blob)) == {"a"}, f.name
    committed = [tier for tier, r in reports.items() if r.status == "committed"]
    assert committed and sorted(history(pk.path).column("tier").to_pylist()) == sorted(committed)
