"""Merge engines: aggregate functions (with retraction), partial-update, against the model."""
from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference import ReferenceError_, merge_model
from strategies import canonical

import mergetree
from mergetree import RetractionError

# column -> (Arrow type, value strategy, aggregate functions that apply)
COLUMNS = {
    "i8": (pa.int8(), st.integers(-100, 100), ["sum", "min", "max", "first_value", "last_value",
                                                "first_non_null_value", "last_non_null_value"]),
    "i64": (pa.int64(), st.integers(-(2**62), 2**62), ["sum", "product", "min", "max"]),
    "i32p": (pa.int32(), st.integers(-3, 3).filter(bool), ["product"]),
    "f64": (pa.float64(), st.floats(-1e6, 1e6, allow_nan=False), ["sum", "min", "max", "last_value"]),
    "f32": (pa.float32(), st.floats(-100, 100, width=32, allow_nan=False), ["sum"]),
    "f64p": (pa.float64(), st.sampled_from([0.5, 2.0, -4.0, 1.0]), ["product"]),
    "b": (pa.bool_(), st.booleans(), ["bool_and", "bool_or", "first_value", "last_non_null_value"]),
    "s": (pa.string(), st.text(alphabet="xyz", max_size=3), ["listagg", "min", "max", "first_non_null_value"]),
    "d": (pa.decimal128(12, 3), st.decimals(-1000, 1000, places=3, allow_nan=False, allow_infinity=False),
          ["sum", "max", "last_value"]),
}
RETRACTABLE = {"sum", "product", "last_value", "last_non_null_value"}


@st.composite
def aggregate_case(draw, retractions: bool):
    columns = draw(st.lists(st.sampled_from(sorted(COLUMNS)), min_size=1, max_size=4, unique=True))
    aggregations = {}
    for c in columns:
        choices = COLUMNS[c][2]
        if retractions:
            choices = [f for f in choices if f in RETRACTABLE and not (f == "sum" and c == "d")]
            if not choices:
                choices = ["last_non_null_value"]
        aggregations[c] = draw(st.sampled_from(choices))
    n_runs = draw(st.integers(0, 9))
    keys = list(range(draw(st.integers(1, 8))))
    runs = []
    for _r in range(n_runs):
        chosen = sorted(draw(st.sets(st.sampled_from(keys))))
        rows = []
        for k in chosen:
            row = {"k": k, "seq": draw(st.integers(0, 5)),
                   "kind": draw(st.sampled_from([0, 1, 2, 3] if retractions else [0, 2]))}
            for c in columns:
                values = COLUMNS[c][1]
                if aggregations[c] == "product":
                    values = values.filter(lambda v: v != 0)  # retraction divides
                row[c] = draw(st.one_of(st.none(), values))
            rows.append(row)
        runs.append(rows)
    schema = pa.schema([("k", pa.int64()), ("seq", pa.int64()), ("kind", pa.int8())]
                       + [(c, COLUMNS[c][0]) for c in columns])
    return runs, schema, aggregations


def merged(runs, schema, **kwargs):
    tables = [pa.Table.from_pylist(rows, schema=schema) for rows in runs]
    return mergetree.merge(tables, "k", sequence="seq", kind="kind", **kwargs).read_all()


def expected(runs, schema, **kwargs):
    types = {f.name: str(f.type) for f in schema}
    return merge_model(runs, ["k"], sequence="seq", kind="kind", column_types=types,
                       columns=schema.names, **kwargs)


@pytest.mark.parametrize("algorithm", ["loser-tree", "heap"])
@pytest.mark.parametrize("retractions", [False, True])
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_aggregate_matches_model(data, retractions, algorithm):
    runs, schema, aggregations = data.draw(aggregate_case(retractions))
    want = expected(runs, schema, engine="aggregate", aggregations=aggregations)
    got = merged(runs, schema, engine="aggregate", aggregations=aggregations, algorithm=algorithm,
                 batch_size=data.draw(st.sampled_from([1, 3, 1000])))
    assert canonical(got.to_pylist()) == canonical(want)


@pytest.mark.parametrize("algorithm", ["loser-tree", "heap"])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_partial_update_matches_model(data, algorithm):
    runs, schema, _ = data.draw(aggregate_case(True))
    keep = data.draw(st.booleans())
    want = expected(runs, schema, engine="partial-update", keep_deletes=keep)
    got = merged(runs, schema, engine="partial-update", keep_deletes=keep, algorithm=algorithm,
                 batch_size=data.draw(st.sampled_from([1, 3, 1000])))
    assert canonical(got.to_pylist()) == canonical(want)


def test_partial_update_example():
    schema = pa.schema([("k", pa.int64()), ("seq", pa.int64()), ("kind", pa.int8()),
                        ("a", pa.string()), ("b", pa.int64())])
    runs = [
        [{"k": 1, "seq": 1, "kind": 0, "a": "old", "b": 10}, {"k": 2, "seq": 1, "kind": 0, "a": "x", "b": 1}],
        [{"k": 1, "seq": 2, "kind": 2, "a": None, "b": 20}, {"k": 2, "seq": 2, "kind": 3, "a": None, "b": None}],
        [{"k": 1, "seq": 3, "kind": 2, "a": "new", "b": None}],
    ]
    got = merged(runs, schema, engine="partial-update").to_pylist()
    assert got == [{"k": 1, "seq": 3, "kind": 0, "a": "new", "b": 20}]  # key 2 was deleted


def test_aggregate_example_with_retraction():
    schema = pa.schema([("k", pa.int64()), ("seq", pa.int64()), ("kind", pa.int8()),
                        ("total", pa.int64()), ("names", pa.string())])
    runs = [
        [{"k": 1, "seq": 1, "kind": 0, "total": 5, "names": "a"}],
        [{"k": 1, "seq": 2, "kind": 0, "total": 7, "names": "b"}],
        [{"k": 1, "seq": 3, "kind": 1, "total": 5, "names": None}],
    ]
    got = merged(runs, schema, engine="aggregate",
                 aggregations={"total": "sum", "names": "last_non_null_value"}).to_pylist()
    assert got == [{"k": 1, "seq": 3, "kind": 0, "total": 7, "names": "b"}]


@pytest.mark.parametrize("fn", ["min", "max", "first_non_null_value", "listagg"])
def test_aggregate_without_retraction_support_raises(fn):
    schema = pa.schema([("k", pa.int64()), ("seq", pa.int64()), ("kind", pa.int8()), ("s", pa.string())])
    runs = [[{"k": 1, "seq": 1, "kind": 0, "s": "a"}], [{"k": 1, "seq": 2, "kind": 3, "s": "a"}]]
    with pytest.raises(ReferenceError_):
        expected(runs, schema, engine="aggregate", aggregations={"s": fn})
    with pytest.raises(RetractionError, match=r"run 1 row 0.*'s'"):
        merged(runs, schema, engine="aggregate", aggregations={"s": fn})


def test_first_row_rejects_retraction_with_location():
    schema = pa.schema([("k", pa.int64()), ("kind", pa.int8())])
    runs = [[{"k": 1, "kind": 0}, {"k": 2, "kind": 0}], [{"k": 2, "kind": 3}]]
    tables = [pa.Table.from_pylist(r, schema=schema) for r in runs]
    with pytest.raises(RetractionError, match="run 1 row 0") as info:
        mergetree.merge(tables, "k", kind="kind", engine="first-row").read_all()
    assert (info.value.run, info.value.row) == (1, 0)


def test_deduplicate_keep_deletes():
    schema = pa.schema([("k", pa.int64()), ("kind", pa.int8()), ("v", pa.int64())])
    runs = [[{"k": 1, "kind": 0, "v": 1}, {"k": 2, "kind": 0, "v": 2}], [{"k": 1, "kind": 3, "v": None}]]
    tables = [pa.Table.from_pylist(r, schema=schema) for r in runs]
    dropped = mergetree.merge(tables, "k", kind="kind").read_all().to_pylist()
    kept = mergetree.merge(tables, "k", kind="kind", keep_deletes=True).read_all().to_pylist()
    assert dropped == [{"k": 2, "kind": 0, "v": 2}]
    assert kept == [{"k": 1, "kind": 3, "v": None}, {"k": 2, "kind": 0, "v": 2}]


def test_product_retraction_by_zero_raises():
    schema = pa.schema([("k", pa.int64()), ("seq", pa.int64()), ("kind", pa.int8()), ("p", pa.int32())])
    runs = [[{"k": 1, "seq": 1, "kind": 0, "p": 3}], [{"k": 1, "seq": 2, "kind": 1, "p": 0}]]
    with pytest.raises(ZeroDivisionError, match="'p'"):
        merged(runs, schema, engine="aggregate", aggregations={"p": "product"})
