"""`read(sorted=True)` / `scan(sorted=True)`: rows in primary-key order across buckets and
partitions, merged from the bucket sections as they are read, against a plain model of the
table (upserts, deletes, compactions; deletion vectors on and off; composite string keys;
filters, projections without the key, limits)."""
from __future__ import annotations

import subprocess
import sys

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mergetree import Table
from mergetree.errors import InvalidArgumentError

SCHEMA = pa.schema([("region", pa.string()), ("id", pa.int32()), ("day", pa.string()), ("v", pa.int64())])
KEY = ["region", "id", "day"]
REGIONS = ["", "a", "b", "é", "\U0001F600"]  # code-point order is UTF-8 byte order
DAYS = ["2024-01-01", "2024-01-02"]

row_keys = st.tuples(st.sampled_from(REGIONS), st.integers(-50, 50), st.sampled_from(DAYS))
operations = st.lists(st.one_of(
    st.tuples(st.just("write"), st.lists(row_keys, min_size=1, max_size=40, unique=True)),
    st.tuples(st.just("delete"), st.lists(row_keys, min_size=1, max_size=10, unique=True)),
    st.tuples(st.just("compact"), st.booleans())), min_size=1, max_size=6)


def _model_rows(model: dict, columns: list[str]) -> list[dict]:
    return [{c: row[c] for c in columns} for _, row in sorted(model.items())]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=operations, buckets=st.sampled_from([1, 3, -1]), partitioned=st.booleans(),
       deletion_vectors=st.booleans(), limit=st.one_of(st.none(), st.integers(0, 30)),
       keyless_projection=st.booleans(), low=st.integers(-60, 60))
def test_sorted_read_is_the_model_in_key_order(tmp_path_factory, ops, buckets, partitioned, deletion_vectors,
                                               limit, keyless_projection, low):
    path = str(tmp_path_factory.mktemp("t") / "t")
    options = {"deletion-vectors.enabled": "true"} if deletion_vectors else {}
    t = Table.create(path, SCHEMA, primary_key=KEY, buckets=buckets,
                     partition_by="day" if partitioned else None, options=options)
    model: dict[tuple, dict] = {}
    for step, (op, arg) in enumerate(ops):
        if op == "write":
            rows = [{"region": r, "id": i, "day": d, "v": step * 1000 + n} for n, (r, i, d) in enumerate(arg)]
            t.write(pa.Table.from_pylist(rows, schema=SCHEMA))
            model.update({(r["region"], r["id"], r["day"]): r for r in rows})
        elif op == "delete":
            t.delete(pa.Table.from_pylist([{"region": r, "id": i, "day": d} for r, i, d in arg],
                                          schema=pa.schema([SCHEMA.field(c) for c in KEY])))
            for k in arg:
                model.pop(k, None)
        else:
            t.compact(full=arg)
    everything = t.read(sorted=True)
    assert everything.to_pylist() == _model_rows(model, SCHEMA.names)
    assert pa.table(t.scan(sorted=True)).to_pylist() == everything.to_pylist()

    columns = ["v"] if keyless_projection else ["id", "v"]
    kept = {k: r for k, r in model.items() if r["id"] >= low}
    want = _model_rows(kept, columns)[:limit]
    got = t.read(columns=columns, filter=("id", ">=", low), limit=limit, sorted=True)
    assert got.schema.names == columns and got.to_pylist() == want
    streamed = t.scan(columns=columns, filter=("id", ">=", low), limit=limit, sorted=True)
    assert streamed.schema.names == columns and pa.table(streamed).to_pylist() == want


def test_a_point_lookup_comes_sorted(tmp_path):
    t = Table.create(str(tmp_path / "t"), SCHEMA, primary_key=KEY, buckets=4)
    rows = [{"region": r, "id": i, "day": DAYS[0], "v": i} for r in REGIONS for i in range(20)]
    t.write(pa.Table.from_pylist(rows, schema=SCHEMA))
    keys = [("b", 3, DAYS[0]), ("", 19, DAYS[0]), ("a", 7, DAYS[0])]
    f = ("or", [("and", [("region", "=", r), ("id", "=", i), ("day", "=", d)]) for r, i, d in keys])
    got = t.read(filter=f, sorted=True)
    assert [(r["region"], r["id"], r["day"]) for r in got.to_pylist()] == sorted(keys)


def test_a_sorted_scan_streams(tmp_path):
    """The first batch (65,536 rows) comes after the first two sections of each bucket (and a
    third each reads ahead), not after every file: the table is never held whole."""
    t = Table.create(str(tmp_path / "t"), pa.schema([("id", pa.int64()), ("v", pa.int64())]),
                     primary_key="id", buckets=2, options={"write-only": "true"})
    for part in range(6):  # six key-disjoint level-0 files per bucket: six sections each, one chain
        ids = pa.array(range(part * 40_000, part * 40_000 + 40_000), pa.int64())
        t.write(pa.table({"id": ids, "v": ids}))
    reader = t.scan(sorted=True)
    first = reader.read_next_batch()
    assert first.column("id")[0].as_py() == 0
    assert t.last_read.files_read <= 6 < t.last_read.files_total == 12
    rest = pa.Table.from_batches([first, *reader])
    assert rest.column("id").to_pylist() == list(range(240_000))
    assert t.last_read.files_read == 12


def test_what_cannot_be_sorted_is_refused(tmp_path):
    t = Table.create(str(tmp_path / "t"), SCHEMA, primary_key=KEY)
    with pytest.raises(InvalidArgumentError, match="order_by"):
        t.read(sorted=True, order_by="v", limit=3)
    with pytest.raises(InvalidArgumentError, match="True or False"):
        t.scan(sorted="yes")
    append = Table.create(str(tmp_path / "a"), SCHEMA)
    append.write(pa.Table.from_pylist([{"region": "a", "id": 1, "day": DAYS[0], "v": 1}], schema=SCHEMA))
    with pytest.raises(InvalidArgumentError, match="append table has no primary key"):
        append.read(sorted=True)
    assert append.read(order_by="id").num_rows == 1


def test_the_cli_reads_sorted(tmp_path):
    t = Table.create(str(tmp_path / "t"), pa.schema([("id", pa.int64()), ("v", pa.int64())]),
                     primary_key="id", buckets=4)
    t.write(pa.table({"id": pa.array([9, 2, 7, 4, 1], pa.int64()), "v": pa.array([0] * 5, pa.int64())}))
    out = subprocess.run([sys.executable, "-m", "mergetree", "read", t.path, "--sorted", "--columns", "id",
                          "--limit", "5"], capture_output=True, text=True, check=True).stdout
    assert [int(tok) for tok in out.split() if tok.isdigit()][:5] == [1, 2, 4, 7, 9]
