"""A named consumer reading a table's changes: it resumes where it stopped, moves only when a
change is read to its end, and holds back expiry so that its next change can still be computed."""
from __future__ import annotations

import pyarrow as pa
import pytest

from mergetree import ConsumerNotFoundError, InvalidArgumentError, Table

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])


def _apply(state: dict, change: pa.Table) -> dict:
    state = dict(state)
    for row in change.to_pylist():
        if row["_row_kind"] in ("-U", "-D"):
            state.pop(row["k"], None)
        else:
            state[row["k"]] = row["v"]
    return state


def _rows(table: Table) -> dict:
    return {r["k"]: r["v"] for r in table.read().to_pylist()}


@pytest.mark.parametrize("producer", ["none", "lookup"])
def test_a_consumer_resumes_and_holds_back_expiry(tmp_path, producer):
    table = Table.create(tmp_path / "t", SCHEMA, primary_key=["k"], options={"changelog-producer": producer})
    table.write({"k": [1, 2, 3], "v": ["a", "b", "c"]})
    seen = _apply({}, table.changes(0, consumer_id="etl").read_all())
    assert seen == _rows(table)
    assert table.consumer("etl").next_snapshot == table.latest_snapshot().id + 1
    for i in range(4):  # commits the consumer has not read yet, then expiry of all but the newest
        table.write({"k": [i, 10 + i], "v": [f"u{i}", "n"]})
        table.delete({"k": [2]}) if i == 1 else None
    table.expire_snapshots(retain_last=1, older_than=0)
    change = table.changes(consumer_id="etl").read_all()  # what it has not seen, computed or from the changelog
    seen = _apply(seen, change)
    assert seen == _rows(table)
    assert table.changes(consumer_id="etl").read_all().num_rows == 0  # nothing new
    table.expire_snapshots(retain_last=1, older_than=0)  # now it holds back only what it reads next
    assert len(table.snapshots()) <= 2


def test_a_reader_not_read_to_its_end_does_not_move_the_consumer(tmp_path):
    table = Table.create(tmp_path / "t", SCHEMA, primary_key=["k"])
    table.write({"k": [1], "v": ["a"]})
    table.reset_consumer("etl", 1)
    table.write({"k": [2], "v": ["b"]})
    reader = table.changes(consumer_id="etl")
    del reader  # dropped unread
    assert table.consumer("etl").next_snapshot == 1
    assert table.changes(consumer_id="etl").read_all().column("k").to_pylist() == [1, 2]
    assert table.consumer("etl").next_snapshot == 3


def test_bad_consumer_calls_raise_one_clear_error_each(tmp_path):
    table = Table.create(tmp_path / "t", SCHEMA, primary_key=["k"])
    table.write({"k": [1], "v": ["a"]})
    with pytest.raises(ConsumerNotFoundError, match="nobody"):
        table.changes(consumer_id="nobody")
    with pytest.raises(InvalidArgumentError, match="start"):
        table.changes()
    with pytest.raises(InvalidArgumentError, match="consumer id"):
        table.changes(0, consumer_id="no/slashes")
    assert table.consumers() == []
