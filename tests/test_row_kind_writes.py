"""Writes of change streams: rows carrying their kind (`_row_kind`, or Debezium's `op`) are
applied as upserts, retractions and deletes, checked against a model per merge engine."""
from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mergetree import InvalidArgumentError, SchemaMismatchError, Table, kinds_of
from mergetree.errors import UnsupportedPaimonFeatureError
from mergetree.merge import symbols_of

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64())])


def test_kinds_of_reads_every_spelling():
    assert kinds_of(pa.array(["+I", "-U", "+U", "-D", "c", "r", "u", "d"])).tolist() == [0, 1, 2, 3, 0, 0, 2, 3]
    assert kinds_of(pa.array([3, 0], pa.int8())).tolist() == [3, 0]
    assert kinds_of(pa.array(["-D"]).dictionary_encode()).tolist() == [3]
    assert symbols_of(kinds_of(pa.array(["u", "d"]))).to_pylist() == ["+U", "-D"]


@pytest.mark.parametrize("column, message", [
    (pa.array(["+I", "x"]), "holds 'x' at row 1"),
    (pa.array(["+I", None]), "null at row 1"),
    (pa.array([0, 7]), "holds 7 at row 1"),
    (pa.array([1.0, 2.0]), "is double"),
])
def test_bad_kinds_are_refused_naming_the_row(column, message):
    with pytest.raises(InvalidArgumentError, match=message):
        kinds_of(column)


def _model(engine: str, events: list[tuple[int, int, str]]) -> dict[int, int]:
    state: dict[int, int] = {}
    for k, v, kind in events:
        if engine == "deduplicate":
            if kind in ("-U", "-D"):
                state.pop(k, None)
            else:
                state[k] = v
        elif engine == "first-row":
            if kind in ("+I", "+U"):
                state.setdefault(k, v)
        else:  # aggregate, sum
            sign = -1 if kind in ("-U", "-D") else 1
            state[k] = state.get(k, 0) + sign * v
    return state


KINDS = st.sampled_from(["+I", "-U", "+U", "-D"])
events_st = st.lists(st.lists(st.tuples(st.integers(0, 6), st.integers(-5, 5), KINDS), max_size=12),
                     min_size=1, max_size=4)


@settings(max_examples=40, deadline=None)
@given(commits=events_st, engine=st.sampled_from(["deduplicate", "first-row", "aggregate"]))
def test_change_rows_apply_like_the_model(tmp_path_factory, commits, engine):
    path = tmp_path_factory.mktemp("cdc")
    options = {"fields.v.aggregate-function": "sum"} if engine == "aggregate" else None
    if engine == "first-row":  # Paimon refuses a first-row table's retractions unless ignored
        options = {"ignore-delete": "true"}
    table = Table.create(path / "t", SCHEMA, primary_key=["k"], merge_engine=engine, options=options)
    everything: list[tuple[int, int, str]] = []
    for events in commits:
        if engine == "aggregate":  # a retraction in an aggregate table is of a value it holds
            events = [e for e in events if e[2] in ("+I", "+U")]
        table.write(pa.table({"k": [e[0] for e in events], "v": [e[1] for e in events],
                              "_row_kind": pa.array([e[2] for e in events], pa.string())}))
        everything += events
        got = {r["k"]: r["v"] for r in table.read().to_pylist()}
        assert got == _model(engine, everything)


def test_debezium_op_column_by_name(tmp_path):
    table = Table.create(tmp_path / "t", SCHEMA, primary_key=["k"])
    table.write({"k": [1, 2, 3], "v": [1, 2, 3]})
    table.write(pa.table({"k": [1, 2, 4], "v": [10, 0, 4], "op": ["u", "d", "c"]}), row_kind_column="op")
    assert table.read().sort_by("k").to_pylist() == [{"k": 1, "v": 10}, {"k": 3, "v": 3}, {"k": 4, "v": 4}]
    assert "op" not in table.schema.names
    with pytest.raises(SchemaMismatchError, match="lacks the row-kind column 'op'"):
        table.write({"k": [1], "v": [1]}, row_kind_column="op")


def test_an_append_table_takes_inserts_only(tmp_path):
    table = Table.create(tmp_path / "t", SCHEMA)
    table.write(pa.table({"k": [1], "v": [1], "_row_kind": ["+I"]}))
    with pytest.raises(UnsupportedPaimonFeatureError, match="append table"):
        table.write(pa.table({"k": [1], "v": [1], "_row_kind": ["-D"]}))
    assert table.read().to_pylist() == [{"k": 1, "v": 1}]
    assert len(table.snapshots()) == 1


def test_a_stream_must_carry_kinds_in_every_batch(tmp_path):
    table = Table.create(tmp_path / "t", SCHEMA, primary_key=["k"])
    with_kinds = pa.record_batch({"k": [1], "v": [1], "_row_kind": ["+I"]})
    without = pa.record_batch({"k": [2], "v": [2]})
    with pytest.raises(SchemaMismatchError, match="lacks the row-kind column"):
        table.write(iter([with_kinds, without]))
    assert table.snapshots() == []
