"""Hypothesis strategies for sorted runs, and their conversion to Arrow in every shape
`merge` accepts (tables, batch lists, generators, readers; sliced and split batches)."""
from __future__ import annotations

import datetime as dt
import string

import numpy as np
import pyarrow as pa
from hypothesis import strategies as st
from reference import order_key

UTC = dt.timezone.utc

# name -> (Arrow type, strategy of Python values)
KEY_TYPES: dict[str, tuple[pa.DataType, st.SearchStrategy]] = {
    "int8": (pa.int8(), st.integers(-128, 127)),
    "int16": (pa.int16(), st.integers(-(2**15), 2**15 - 1)),
    "int32": (pa.int32(), st.integers(-(2**31), 2**31 - 1)),
    "int64": (pa.int64(), st.integers(-(2**63), 2**63 - 1)),
    "uint8": (pa.uint8(), st.integers(0, 255)),
    "uint16": (pa.uint16(), st.integers(0, 2**16 - 1)),
    "uint32": (pa.uint32(), st.integers(0, 2**32 - 1)),
    "uint64": (pa.uint64(), st.integers(0, 2**64 - 1)),
    "float32": (pa.float32(), st.floats(width=32)),
    "float64": (pa.float64(), st.floats()),
    "float16": (pa.float16(), st.sampled_from([-2.0, -0.0, 0.0, 0.5, 1.0, float("inf"), float("nan")])),
    "bool": (pa.bool_(), st.booleans()),
    "date32": (pa.date32(), st.dates()),
    "date64": (pa.date64(), st.dates(min_value=dt.date(1900, 1, 1))),
    "time32": (pa.time32("ms"), st.times().map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000))),
    "time64": (pa.time64("us"), st.times()),
    "timestamp": (pa.timestamp("us"), st.datetimes(min_value=dt.datetime(1900, 1, 1))),
    "timestamp_tz": (pa.timestamp("ns", tz="UTC"),
                     st.datetimes(min_value=dt.datetime(1700, 1, 1), max_value=dt.datetime(2200, 1, 1))
                     .map(lambda d: d.replace(tzinfo=UTC))),
    "duration": (pa.duration("s"), st.integers(-(10**9), 10**9).map(lambda s: dt.timedelta(seconds=s))),
    "decimal128": (pa.decimal128(20, 2), st.decimals(min_value=-(10**17), max_value=10**17, places=2,
                                                     allow_nan=False, allow_infinity=False)),
    "string": (pa.string(), st.text(alphabet="ab\x00é\U0001F600", max_size=12)),
    "string128": (pa.string(), st.text(alphabet=string.ascii_letters, min_size=128, max_size=128)),
    "string128_shared_prefix": (pa.string(), st.text(alphabet="xy", min_size=8, max_size=8)
                                .map(lambda s: "p" * 120 + s)),
    "large_string": (pa.large_string(), st.text(max_size=20)),
    "string_view": (pa.string_view(), st.text(alphabet="abc", max_size=20)),
    "binary": (pa.binary(), st.binary(max_size=12)),
    "large_binary": (pa.large_binary(), st.binary(max_size=12)),
    "fixed_binary3": (pa.binary(3), st.binary(min_size=3, max_size=3)),
    "fixed_binary12": (pa.binary(12), st.binary(min_size=12, max_size=12)),
    "dictionary": (pa.dictionary(pa.int32(), pa.string()), st.text(alphabet="abc", max_size=4)),
}


def distinct(values: list, key=order_key) -> list:
    seen, out = set(), []
    for v in values:
        k = key(v)
        if k not in seen:
            seen.add(k)
            out.append(v)
    return out


@st.composite
def key_pool(draw, type_names: list[str], nullable: bool, max_size: int = 24) -> list[tuple]:
    """Distinct composite key values (tuples), drawn from a small pool so runs overlap."""
    columns = []
    for name in type_names:
        values = st.one_of(st.none(), KEY_TYPES[name][1]) if nullable else KEY_TYPES[name][1]
        columns.append(values)
    tuples = draw(st.lists(st.tuples(*columns), min_size=1, max_size=max_size))
    return distinct(tuples, key=lambda t: tuple(order_key(v) for v in t))


@st.composite
def sorted_runs(draw, type_names: list[str], *, max_runs: int = 64, nullable: bool = True,
                payload: st.SearchStrategy | None = None, with_sequence: bool = True,
                with_kind: bool = False, kinds=st.integers(0, 3)) -> list[list[dict]]:
    """Runs of row dicts, each strictly ascending by key (k0, k1, ...)."""
    pool = draw(key_pool(type_names, nullable))
    n_runs = draw(st.integers(0, max_runs))
    payload = payload if payload is not None else st.one_of(st.none(), st.integers(-5, 5))
    runs = []
    for _ in range(n_runs):
        chosen = draw(st.lists(st.sampled_from(pool), max_size=len(pool),
                               unique_by=lambda t: tuple(order_key(v) for v in t)))
        chosen.sort(key=lambda t: tuple(order_key(v) for v in t))
        rows = []
        for t in chosen:
            row = {f"k{i}": v for i, v in enumerate(t)}
            if with_sequence:
                row["seq"] = draw(st.integers(0, 6))  # small: ties across runs happen
            if with_kind:
                row["kind"] = draw(kinds)
            row["v"] = draw(payload)
            rows.append(row)
        runs.append(rows)
    return runs


@st.composite
def run_shapes(draw, n_runs: int) -> list[dict]:
    """How each run is presented: container, batch cuts, empty batches, slicing."""
    shapes = []
    for _ in range(n_runs):
        shapes.append({
            "container": draw(st.sampled_from(["table", "batches", "generator", "reader", "batch"])),
            "max_batch": draw(st.sampled_from([1, 2, 3, 7, 1000])),
            "empty_batches": draw(st.booleans()),
            "slice_pad": draw(st.sampled_from([0, 0, 1, 5])),
        })
    return shapes


def batch_from_rows(rows: list[dict], schema: pa.Schema) -> pa.RecordBatch:
    """RecordBatch.from_pylist; float16 goes through float32 (older pyarrow builds
    float16 only from numpy halves)."""
    halves = [i for i, f in enumerate(schema) if pa.types.is_float16(f.type)]
    if not halves:
        return pa.RecordBatch.from_pylist(rows, schema=schema)
    wide = schema
    for i in halves:
        wide = wide.set(i, wide.field(i).with_type(pa.float32()))
    batch = pa.RecordBatch.from_pylist(rows, schema=wide)
    return pa.RecordBatch.from_arrays(
        [c.cast(schema.field(i).type) for i, c in enumerate(batch.columns)], schema=schema)


def build_run(rows: list[dict], schema: pa.Schema, shape: dict):
    """An Arrow run holding `rows` in the requested shape."""
    pad = shape["slice_pad"]
    batches = []
    step = shape["max_batch"]
    for start in range(0, len(rows), step):
        chunk = rows[start:start + step]
        if pad and chunk:
            # build a bigger batch and slice the rows out of its middle (non-zero offsets)
            padded = [chunk[0]] * pad + chunk + [chunk[-1]] * pad
            batch = batch_from_rows(padded, schema).slice(pad, len(chunk))
        else:
            batch = batch_from_rows(chunk, schema)
        if shape["empty_batches"]:
            batches.append(batch.slice(0, 0))
        batches.append(batch)
    if shape["empty_batches"]:
        batches.append(batch_from_rows([], schema))
    container = shape["container"]
    if container == "batch":
        return pa.Table.from_batches(batches, schema=schema).combine_chunks().to_batches()[0] \
            if rows else batch_from_rows([], schema)
    if container == "table":
        return pa.Table.from_batches(batches, schema=schema)
    if container == "batches":
        return batches
    if container == "generator":
        return (b for b in batches)
    return pa.RecordBatchReader.from_batches(schema, iter(batches))


def make_schema(type_names: list[str], *, sequence: bool = True, kind: bool = False,
                value_type: pa.DataType = pa.int64()) -> pa.Schema:
    fields = [pa.field(f"k{i}", KEY_TYPES[name][0]) for i, name in enumerate(type_names)]
    if sequence:
        fields.append(pa.field("seq", pa.int64()))
    if kind:
        fields.append(pa.field("kind", pa.int8()))
    fields.append(pa.field("v", value_type))
    return pa.schema(fields)


def canonical(rows: list[dict]) -> list[dict]:
    """Make rows comparable with ==: NaN equals NaN, -0.0 differs from 0.0."""
    def fix(v):
        if isinstance(v, np.generic):  # older pyarrow returns float16 as numpy halves
            v = v.item()
        if isinstance(v, float):
            return ("float", repr(v))
        return v
    return [{k: fix(v) for k, v in row.items()} for row in rows]
