"""Payload columns of every kind survive the merge unchanged (assembly uses take)."""
from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference import merge_model
from strategies import batch_from_rows, canonical

import mergetree

PAYLOADS = {
    "b": (pa.bool_(), st.booleans()),
    "s": (pa.string(), st.text(max_size=6)),
    "ls": (pa.large_string(), st.text(max_size=6)),
    "sv": (pa.string_view(), st.text(max_size=20)),
    "bin": (pa.binary(4), st.binary(min_size=4, max_size=4)),
    "dec": (pa.decimal128(9, 3), st.decimals(-999, 999, places=3, allow_nan=False, allow_infinity=False)),
    "ts": (pa.timestamp("ms", tz="Europe/Paris"),
           st.datetimes(min_value=dt.datetime(2000, 1, 1), max_value=dt.datetime(2030, 1, 1))
           .map(lambda d: d.replace(microsecond=0, tzinfo=dt.timezone.utc))),
    "dict": (pa.dictionary(pa.int8(), pa.string()), st.sampled_from(["red", "green", "blue"])),
    "list": (pa.list_(pa.int32()), st.lists(st.integers(-5, 5), max_size=3)),
    "struct": (pa.struct([("x", pa.int16()), ("y", pa.string())]),
               st.fixed_dictionaries({"x": st.integers(-9, 9), "y": st.text(max_size=2)})),
    "f16": (pa.float16(), st.sampled_from([0.5, -1.0, 2.0])),
}


@pytest.mark.parametrize("engine", ["deduplicate", "none", "partial-update"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_payload_columns_round_trip(data, engine):
    names = data.draw(st.lists(st.sampled_from(sorted(PAYLOADS)), min_size=1, max_size=4, unique=True))
    schema = pa.schema([("k", pa.int32()), ("seq", pa.int64())] + [(n, PAYLOADS[n][0]) for n in names])
    runs = []
    for _ in range(data.draw(st.integers(1, 6))):
        keys = sorted(data.draw(st.sets(st.integers(0, 12), max_size=8)))
        rows = [{"k": k, "seq": data.draw(st.integers(0, 3)),
                 **{n: data.draw(st.one_of(st.none(), PAYLOADS[n][1])) for n in names}} for k in keys]
        runs.append(rows)
    tables = [pa.Table.from_batches([batch_from_rows(rows, schema)]) for rows in runs]
    batch_size = data.draw(st.sampled_from([1, 4, 1000]))
    got = mergetree.merge(tables, "k", sequence="seq", engine=engine, batch_size=batch_size).read_all()
    assert got.schema == schema
    want = merge_model([t.to_pylist() for t in tables], ["k"], sequence="seq", engine=engine,
                       columns=schema.names)
    assert canonical(got.to_pylist()) == canonical(want)
