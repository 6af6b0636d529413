"""The streaming reader's admission control and the sink's exactly-once check, without a
Spark session (the reader and the check run on the driver; they are plain Python over the
table's snapshots), against models, with hypothesis."""
from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mergetree import Table

pytest.importorskip("pyspark")

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def change_schema():
    from pyspark.sql.types import LongType, StringType, StructField, StructType
    return StructType([StructField("id", LongType()), StructField("v", StringType()),
                       StructField("_row_kind", StringType()), StructField("_snapshot_id", LongType())])


# commits: a row count (an APPEND writing that many new keys) or None (a full compaction); the first
# one writes, so there is something to compact
commits_st = st.lists(st.one_of(st.integers(1, 30), st.none()), min_size=1, max_size=10).map(lambda c: [5, *c])


@settings(max_examples=25, deadline=None)
@given(commits=commits_st, max_snapshots=st.one_of(st.none(), st.integers(1, 4)),
       max_rows=st.one_of(st.none(), st.integers(1, 60)), start=st.integers(0, 10))
def test_micro_batches_are_whole_snapshots_as_many_as_the_limits_allow(tmp_path_factory, commits, max_snapshots,
                                                                        max_rows, start):
    from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxFiles, ReadMaxRows

    from mergetree.spark.streaming import MergetreeStreamReader
    path = str(tmp_path_factory.mktemp("t"))
    table = Table.create(path, SCHEMA, primary_key=["id"], options={"write-only": "true"})
    rows_of = {}  # snapshot id -> rows its commit wrote (the model)
    first = 0
    for c in commits:
        if c is None:
            snapshot = table.compact(full=True)
            if snapshot is not None:
                rows_of[snapshot.id] = 0
        else:
            snapshot = table.write(pa.table({"id": list(range(first, first + c)), "v": ["x"] * c}, schema=SCHEMA))
            first += c
            rows_of[snapshot.id] = c
    latest = max(rows_of)
    start = min(start, latest)
    options = {"path": path, "scan.mode": "from-snapshot", "scan.snapshot-id": str(start + 1)}
    if max_snapshots:
        options["read.stream.maxsnapshotspertrigger"] = str(max_snapshots)
    if max_rows:
        options["read.stream.maxrowspertrigger"] = str(max_rows)
    reader = MergetreeStreamReader(options, change_schema())
    limit = reader.getDefaultReadLimit()
    expected_limit = ReadMaxRows(max_rows) if max_rows else ReadMaxFiles(max_snapshots) if max_snapshots \
        else ReadAllAvailable()
    assert limit == expected_limit
    offset = reader.initialOffset()
    assert offset == {"snapshot": start}
    position, batches = start, 0
    while True:
        end = reader.latestOffset(offset, limit)
        if end == offset:
            break
        assert end["from"] == position and not end["fromFull"]
        taken = list(range(position + 1, end["snapshot"] + 1))
        assert taken, "a micro-batch admits at least one snapshot"
        rows = sum(rows_of.get(s, 0) for s in taken)
        if len(taken) > 1:  # over a limit only when one snapshot alone is over it
            assert max_snapshots is None or len(taken) <= max_snapshots
            assert max_rows is None or rows <= max_rows
        if end["snapshot"] < latest:  # and as many as they allow
            more = rows + rows_of.get(end["snapshot"] + 1, 0)
            assert (max_snapshots is not None and len(taken) + 1 > max_snapshots) or \
                (max_rows is not None and more > max_rows)
        position, offset, batches = end["snapshot"], end, batches + 1
        assert batches <= latest
    assert position == latest
    # ReadAllAvailable (Spark's Trigger.Once) ignores the options
    if latest > start:
        assert reader.latestOffset({"snapshot": start}, ReadAllAvailable())["snapshot"] == latest


def test_latest_full_starts_with_a_batch_of_its_own_and_trigger_available_now_stops(tmp_path):
    from pyspark.sql.streaming.datasource import ReadMaxFiles

    from mergetree.spark.streaming import MergetreeStreamReader
    table = Table.create(str(tmp_path), SCHEMA, primary_key=["id"], options={"write-only": "true"})
    for i in range(3):
        table.write(pa.table({"id": [i], "v": ["x"]}, schema=SCHEMA))
    reader = MergetreeStreamReader({"path": str(tmp_path), "read.stream.maxsnapshotspertrigger": "2"},
                                   change_schema())
    reader.prepareForTriggerAvailableNow()
    start = reader.initialOffset()
    assert start == {"snapshot": 3, "full": True}
    end = reader.latestOffset(start, ReadMaxFiles(2))
    assert end == {"snapshot": 3, "from": 3, "fromFull": True}  # the full read alone: nothing newer yet
    table.write(pa.table({"id": [9], "v": ["y"]}, schema=SCHEMA))  # after the AvailableNow target
    assert reader.latestOffset(end, ReadMaxFiles(2)) == end
    # a restart asks for the first start again: the batch is read from its logged end offset alone
    from mergetree.spark.streaming import ChangePartition, FullPartition
    parts = reader.partitions({"snapshot": 4, "full": True}, end)
    assert parts and all(isinstance(p, FullPartition) and p.snapshot_id == 3 for p in parts)
    fresh = MergetreeStreamReader({"path": str(tmp_path)}, change_schema())
    parts = fresh.partitions(end, fresh.latestOffset(end, ReadMaxFiles(5)))
    rows = [r for p in parts for b in fresh.read(p) for r in b.to_pylist()]
    assert all(isinstance(p, ChangePartition) for p in parts)
    assert rows == [{"id": 9, "v": "y", "_row_kind": "+I", "_snapshot_id": 4}]


# a commit: (query or None for another writer, batch id)
history_st = st.lists(st.tuples(st.sampled_from(["qa", "qb", None]), st.integers(0, 5)), max_size=12)


@settings(max_examples=30, deadline=None)
@given(history=history_st, expire=st.integers(0, 4))
def test_the_last_committed_batch_is_found_walking_back_to_the_query_own_snapshot(tmp_path_factory, history, expire):
    from mergetree.spark.streaming import BATCH_ID_PROPERTY, QUERY_ID_PROPERTY, last_committed_batch
    from mergetree.table.commit import Change, commit_with_rebase
    path = str(tmp_path_factory.mktemp("t"))
    directory = Table.create(path, SCHEMA, primary_key=["id"]).directory
    for query, batch in history:
        properties = {QUERY_ID_PROPERTY: query, BATCH_ID_PROPERTY: str(batch)} if query else {}
        commit_with_rebase(directory, directory.latest_snapshot(), lambda _: Change([], []), "APPEND",
                           properties=properties)
    # the oldest snapshots expired (the latest stays): a query's commits there are gone from view
    kept_from = max(1, min(expire + 1, len(history)))
    for sid in range(1, kept_from):
        directory.store.storage.delete(directory.store.snapshot_file(sid))
    latest = directory.latest_snapshot()
    for query in ("qa", "qb", "qc"):
        mine = [(i + 1, b) for i, (q, b) in enumerate(history) if q == query and i + 1 >= kept_from]
        expected = (mine[-1][1], mine[-1][0]) if mine else (None, 0)
        assert last_committed_batch(directory, latest, query) == expected
