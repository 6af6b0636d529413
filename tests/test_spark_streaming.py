"""Spark Structured Streaming in and out of mergetree tables, on a real local[2] session: a file
source of CDC events -> the sink (exactly once, replays discarded) -> the change source -> a
second table; startup modes and read limits, each checked against a row-by-row model."""
from __future__ import annotations

import json
import os
import random
import shutil

import pyarrow as pa
import pytest

from mergetree import InvalidArgumentError, Table

pytest.importorskip("pyspark")

JSON_SCHEMA = "id BIGINT, v STRING, op STRING"
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


# -- a CDC model ------------------------------------------------------------------------------

def cdc_files(directory, files: int, per_file: int, keys: int, seed: int,
              key_stride: int = 1) -> dict[int, str | None]:
    """JSON files of Debezium-style events (c, u, d; values sometimes null, a key sometimes
    changed twice in one file), written oldest first; returns the model's final state.  With
    `key_stride` s, file f changes only keys k with k % s == f % s, so s files in a row never
    share a key: Spark orders no rows across the files of one micro-batch (a restart may plan
    several files into one), and then no key's outcome depends on that order."""
    rng = random.Random(seed)
    state: dict[int, str | None] = {}
    os.makedirs(directory, exist_ok=True)
    for f in range(files):
        lines = []
        for i in range(per_file):
            k = rng.randrange(f % key_stride, keys, key_stride)
            v = None if rng.random() < 0.1 else f"v{f}-{i}"
            if k not in state:
                op = "c"
            else:
                op = rng.choice("uud")
            if op == "d":
                state.pop(k)
            else:
                state[k] = v
            lines.append(json.dumps({"id": k, "v": v, "op": op}))
        path = os.path.join(directory, f"events-{f:03d}.json")
        with open(path, "w") as out:
            out.write("\n".join(lines) + "\n")
        os.utime(path, (1_700_000_000 + f, 1_700_000_000 + f))  # the file source takes the oldest first
    return state


def rows_of(table: Table) -> dict:
    got = table.read().to_pylist()
    return {r["id"]: r["v"] for r in got}


def apply_changes(state: dict, rows: list[dict]) -> dict:
    """The model applies a change stream: -U/-D remove a key, +I/+U set it."""
    state = dict(state)
    for r in rows:
        if r["_row_kind"] in ("-U", "-D"):
            assert state.get(r["id"], object()) == r["v"], r  # a retraction carries the old row exactly
            state.pop(r["id"])
        else:
            state[r["id"]] = r["v"]
    return state


def sink_snapshots(table: Table) -> list:
    """The snapshots a streaming sink committed, oldest first."""
    store = table.directory.store
    snaps = [store.snapshot(i) for i in store.snapshot_ids()]
    return [s for s in snaps if "spark.query-id" in s.properties]


def commits_once(table: Table, query_id: str) -> list[int]:
    """The batch ids query `query_id` committed, checked to be each once."""
    batches = [int(s.properties["spark.batch-id"]) for s in sink_snapshots(table)
               if s.properties["spark.query-id"] == query_id]
    assert len(batches) == len(set(batches)), batches
    return batches


def checkpoint_query_id(checkpoint) -> str:
    with open(os.path.join(checkpoint, "metadata")) as f:
        return json.load(f)["id"]


def table_files(path) -> set[str]:
    """The table's own Parquet files: data and changelog files, not the query log beside them
    (a read's record is appended in the background, whenever its buffer is flushed)."""
    found = {os.path.relpath(os.path.join(d, f), path) for d, _, fs in os.walk(path) for f in fs
             if f.endswith(".parquet")}
    return {f for f in found if not f.startswith(("queries/", "optimizer/"))}


def registered(spark):
    import mergetree.spark
    mergetree.spark.register(spark)
    return spark


def write_commits(table: Table, commits: int, keys: int, seed: int, state: dict) -> dict:
    """Random upserts and deletes through Table.write (each commit then compacts: COMPACT
    snapshots in between); returns the model's state."""
    rng = random.Random(seed)
    for c in range(commits):
        rows, kinds = [], []
        for k in rng.sample(range(keys), min(keys, 12)):
            if k in state and rng.random() < 0.3:
                rows.append({"id": k, "v": state.pop(k)})
                kinds.append("-D")
            else:
                v = f"s{seed}-c{c}-k{k}"
                kinds.append("+U" if k in state else "+I")
                state[k] = v
                rows.append({"id": k, "v": v})
        data = pa.Table.from_pylist(rows, SCHEMA).append_column("_row_kind", pa.array(kinds))
        table.write(data)
    return state


def changes_per_commit(table: Table, start: int, end: int | None = None) -> list[dict]:
    return table.changes(start, end, per_commit=True).read_all().to_pylist()


def key(row: dict) -> tuple:
    return (row["_snapshot_id"], row["id"], row["_row_kind"], row["v"] or "")


def collect(stream, checkpoint, **options) -> list[tuple[int, list[dict]]]:
    """Run a stream (availableNow) into foreachBatch: [(batch id, rows)]."""
    got: list[tuple[int, list[dict]]] = []

    def each(df, batch_id):
        got.append((batch_id, [r.asDict() for r in df.collect()]))
    writer = stream.writeStream.foreachBatch(each).option("checkpointLocation", str(checkpoint))
    for k, v in options.items():
        writer = writer.option(k, v)
    writer.trigger(availableNow=True).start().awaitTermination()
    return got


def change_stream(spark, path, **options):
    reader = registered(spark).readStream.format("mergetree").option("read.changelog", "true")
    for k, v in options.items():
        reader = reader.option(k, str(v))
    return reader.load(str(path))


# -- the sink -------------------------------------------------------------------------------

def test_sink_applies_cdc_events_once_per_micro_batch_and_discards_a_replay(spark, tmp_path):
    events, t1, checkpoint = tmp_path / "events", tmp_path / "t1", tmp_path / "ck"
    model = cdc_files(events, files=5, per_file=60, keys=25, seed=1)
    stream = registered(spark).readStream.schema(JSON_SCHEMA).option("maxFilesPerTrigger", 1).json(str(events))
    Table.create(str(t1), SCHEMA, primary_key="id", buckets=2, options={"changelog-producer": "lookup"})

    def run():
        (stream.writeStream.format("mergetree").option("checkpointLocation", str(checkpoint))
         .option("primaryKey", "id").option("buckets", "2").option("rowKindColumn", "op")
         .option("changelog-producer", "lookup")  # a table option (its changelog: test_sink_publishes_...)
         .trigger(availableNow=True).start(str(t1)).awaitTermination())
    run()
    table = Table.open(str(t1))
    assert table.schema.names == ["id", "v"]  # the kinds are not a column
    assert rows_of(table) == model
    query = checkpoint_query_id(checkpoint)
    assert sorted(commits_once(table, query)) == [0, 1, 2, 3, 4]  # one commit per file, each once
    # Spark replays a batch whose commit it did not record (as after a crash between the
    # table's commit and Spark's): the sink finds it committed and commits nothing
    before, files = table.latest_snapshot().id, table_files(t1)
    for name in ("4", ".4.crc"):  # the commit log entry and Hadoop's checksum of it
        if (checkpoint / "commits" / name).exists():
            os.remove(checkpoint / "commits" / name)
    run()
    table = Table.open(str(t1))
    # nothing new, no file left (data or changelog)
    assert table.latest_snapshot().id == before and table_files(t1) == files
    assert rows_of(table) == model
    # a new file continues the stream
    more = cdc_files(tmp_path / "more", files=1, per_file=30, keys=25, seed=2)
    shutil.copy(tmp_path / "more" / "events-000.json", events / "events-100.json")
    run()
    table = Table.open(str(t1))
    assert sorted(commits_once(table, query)) == [0, 1, 2, 3, 4, 5]
    expected = dict(model)
    for line in open(events / "events-100.json"):
        e = json.loads(line)
        if e["op"] == "d":
            expected.pop(e["id"], None)
        else:
            expected[e["id"]] = e["v"]
    assert more is not None and rows_of(table) == expected


def test_sink_publishes_a_lookup_changelog_for_each_micro_batch(spark, tmp_path):
    """On a ``changelog-producer`` lookup table each micro-batch's commit is followed, as Java's
    writers do, by the COMPACT snapshot holding its exact changelog: read as written, applied
    commit after commit, it gives the table's rows."""
    events, t1, checkpoint = tmp_path / "events", tmp_path / "t1", tmp_path / "ck"
    model = cdc_files(events, files=3, per_file=40, keys=20, seed=9)
    stream = registered(spark).readStream.schema(JSON_SCHEMA).option("maxFilesPerTrigger", 1).json(str(events))
    Table.create(str(t1), SCHEMA, primary_key="id", buckets=2, options={"changelog-producer": "lookup"})
    (stream.writeStream.format("mergetree").option("checkpointLocation", str(checkpoint))
     .option("rowKindColumn", "op").trigger(availableNow=True).start(str(t1)).awaitTermination())
    table = Table.open(str(t1))
    assert rows_of(table) == model
    store = table.directory.store
    snapshots = [store.snapshot(i) for i in store.snapshot_ids()]
    sinks = [i for i, s in enumerate(snapshots) if "spark.query-id" in s.properties]
    assert len(sinks) == 3
    for i in sinks:  # the sink's commit, then the compaction that publishes its changelog
        assert i + 1 < len(snapshots), [(s.id, s.commit_kind) for s in snapshots]
        after = snapshots[i + 1]
        assert after.commit_kind == "COMPACT" and after.changelog_manifest_list, after
    rows = table.changes(0, per_commit=True, source="changelog").read_all().to_pylist()
    assert apply_changes({}, rows) == model


def test_sink_needs_a_stable_query_id(spark, tmp_path):
    from mergetree.spark.streaming import stream_query_id
    with pytest.raises(InvalidArgumentError, match="checkpointLocation"):
        stream_query_id({"path": str(tmp_path)})
    with pytest.raises(InvalidArgumentError, match="queryId"):
        stream_query_id({"checkpointlocation": str(tmp_path / "nowhere")})
    assert stream_query_id({"queryid": "q1", "checkpointlocation": str(tmp_path)}) == "q1"


# -- the source -----------------------------------------------------------------------------

def test_source_to_a_second_table_equals_the_model_and_resumes(spark, tmp_path):
    t1, t2, checkpoint = tmp_path / "t1", tmp_path / "t2", tmp_path / "ck"
    table = Table.create(str(t1), SCHEMA, primary_key=["id"], buckets=3)
    model = write_commits(table, commits=4, keys=30, seed=3, state={})

    def run():
        (change_stream(spark, t1).drop("_snapshot_id").writeStream.format("mergetree")
         .option("checkpointLocation", str(checkpoint)).option("primaryKey", "id").option("buckets", "2")
         .trigger(availableNow=True).start(str(t2)).awaitTermination())
    run()
    assert rows_of(Table.open(str(t2))) == rows_of(table) == model
    model = write_commits(table, commits=3, keys=30, seed=4, state=model)
    run()  # resumes from the checkpoint: only the new commits
    out = Table.open(str(t2))
    assert rows_of(out) == rows_of(table) == model
    assert len(commits_once(out, checkpoint_query_id(checkpoint))) == 2


def test_each_change_arrives_once_under_a_snapshot_limit(spark, tmp_path):
    t1 = tmp_path / "t1"
    table = Table.create(str(t1), SCHEMA, primary_key=["id"], buckets=2)
    model = write_commits(table, commits=4, keys=20, seed=5, state={})
    latest = table.latest_snapshot().id  # 8: each write commits, then compacts
    got = collect(change_stream(spark, t1, **{"scan.mode": "from-snapshot", "scan.snapshot-id": 1,
                                              "read.stream.maxSnapshotsPerTrigger": 3}), tmp_path / "ck")
    assert len(got) == -(-latest // 3)  # whole snapshots, three per micro-batch (compactions count, give no rows)
    rows = [r for _, batch in got for r in batch]
    assert sorted(map(key, rows)) == sorted(map(key, changes_per_commit(table, 0)))
    per_batch = [{r["_snapshot_id"] for r in batch} for _, batch in got]
    for i, ids in enumerate(per_batch):  # each batch's rows come from its own three snapshots
        assert ids <= set(range(3 * i + 1, 3 * i + 4)), (i, ids)
    ordered = sorted(rows, key=lambda r: r["_snapshot_id"])
    assert apply_changes({}, ordered) == model


def test_row_limit_admits_whole_snapshots(spark, tmp_path):
    t1 = tmp_path / "t1"
    table = Table.create(str(t1), SCHEMA, primary_key=["id"], options={"write-only": "true"})
    for c in range(5):  # 10 rows per commit, no compactions
        table.write(pa.table({"id": list(range(c * 10, c * 10 + 10)), "v": [f"c{c}"] * 10}, schema=SCHEMA))
    got = collect(change_stream(spark, t1, **{"scan.mode": "from-snapshot", "scan.snapshot-id": 1,
                                              "read.stream.maxRowsPerTrigger": 25}), tmp_path / "ck")
    assert [len(batch) for _, batch in got] == [20, 20, 10]
    # a limit below one snapshot still admits one snapshot per batch
    got = collect(change_stream(spark, t1, **{"scan.mode": "from-snapshot", "scan.snapshot-id": 4,
                                              "read.stream.maxRowsPerTrigger": 3}), tmp_path / "ck2")
    assert [len(batch) for _, batch in got] == [10, 10]


def test_startup_modes(spark, tmp_path):
    t1 = tmp_path / "t1"
    table = Table.create(str(t1), SCHEMA, primary_key=["id"], buckets=2)
    model = write_commits(table, commits=3, keys=15, seed=6, state={})
    first = table.latest_snapshot().id
    # latest-full (the default): the latest snapshot whole as +I, then what follows
    full = change_stream(spark, t1)
    got = collect(full, tmp_path / "full")
    rows = [r for _, batch in got for r in batch]
    assert {r["_row_kind"] for r in rows} == {"+I"} and {r["_snapshot_id"] for r in rows} == {first}
    assert {r["id"]: r["v"] for r in rows} == model and len(rows) == len(model)
    # latest: nothing of what is there at start
    assert [r for _, b in collect(change_stream(spark, t1, **{"scan.mode": "latest"}), tmp_path / "latest")
            for r in b] == []
    model = write_commits(table, commits=2, keys=15, seed=7, state=model)
    new = sorted(map(key, changes_per_commit(table, first)))
    for checkpoint in ("full", "latest"):  # both resume after `first`
        resumed = collect(change_stream(spark, t1, **({"scan.mode": "latest"} if checkpoint == "latest" else {})),
                          tmp_path / checkpoint)
        assert sorted(key(r) for _, b in resumed for r in b) == new
    # from-snapshot and from-timestamp (the first snapshot committed at or after it)
    third = table.directory.store.snapshot(3)
    expected = sorted(map(key, changes_per_commit(table, 2)))
    by_id = collect(change_stream(spark, t1, **{"scan.mode": "from-snapshot", "scan.snapshot-id": 3}),
                    tmp_path / "from-id")
    by_time = collect(change_stream(spark, t1, **{"scan.mode": "from-timestamp",
                                                  "scan.timestamp-millis": third.time_millis}), tmp_path / "from-ts")
    assert sorted(key(r) for _, b in by_id for r in b) == expected
    # the first snapshot committed at or after the moment (2, if it landed in the same millisecond)
    first = min(s.id for s in table.snapshots() if s.time_millis >= third.time_millis)
    assert sorted(key(r) for _, b in by_time for r in b) == sorted(map(key, changes_per_commit(table, first - 1)))


def test_bad_stream_options_fail_clearly(spark, tmp_path):
    t1 = tmp_path / "t1"
    Table.create(str(t1), SCHEMA, primary_key=["id"]).write(pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA))
    registered(spark)
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    from mergetree.spark.streaming import MergetreeStreamReader
    changes = StructType([StructField("id", LongType()), StructField("v", StringType()),
                          StructField("_row_kind", StringType()), StructField("_snapshot_id", LongType())])
    plain = StructType(changes.fields[:2])
    with pytest.raises(InvalidArgumentError, match="read.changelog"):
        MergetreeStreamReader({"path": str(t1)}, plain)
    for options, message in [({"scan.mode": "earliest"}, "scan.mode must be one of"),
                             ({"scan.mode": "from-snapshot"}, "needs the option scan.snapshot-id"),
                             ({"scan.mode": "from-timestamp"}, "needs the option scan.timestamp-millis"),
                             ({"scan.snapshot-id": "0", "scan.mode": "from-snapshot"}, "positive integer"),
                             ({"read.stream.maxrowspertrigger": "-1"}, "positive integer")]:
        with pytest.raises(InvalidArgumentError, match=message):
            MergetreeStreamReader({"path": str(t1), **options}, changes)


def test_a_batch_read_with_read_changelog_says_where_batch_changes_are(spark, tmp_path):
    t1 = tmp_path / "t1"
    Table.create(str(t1), SCHEMA, primary_key=["id"]).write(pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA))
    registered(spark)
    with pytest.raises(Exception, match="is for stream reads"):
        spark.read.format("mergetree").option("read.changelog", "true").load(str(t1)).collect()


def test_complete_mode_replaces_the_table_each_micro_batch(spark, tmp_path):
    events, t = tmp_path / "events", tmp_path / "t"
    cdc_files(events, files=3, per_file=20, keys=6, seed=8)
    counts: dict[int, int] = {}
    for name in sorted(os.listdir(events)):
        for line in open(events / name):
            k = json.loads(line)["id"]
            counts[k] = counts.get(k, 0) + 1
    frame = (registered(spark).readStream.schema(JSON_SCHEMA).option("maxFilesPerTrigger", 1).json(str(events))
             .groupBy("id").count())
    (frame.writeStream.outputMode("complete").format("mergetree").option("checkpointLocation", str(tmp_path / "ck"))
     .option("primaryKey", "id").trigger(availableNow=True).start(str(t)).awaitTermination())
    table = Table.open(str(t))
    assert {r["id"]: r["count"] for r in table.read().to_pylist()} == counts
    kinds = [table.directory.store.snapshot(i).commit_kind for i in table.directory.store.snapshot_ids()]
    assert kinds == ["OVERWRITE"] * 3
    assert sorted(commits_once(table, checkpoint_query_id(tmp_path / "ck"))) == [0, 1, 2]
