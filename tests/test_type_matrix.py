"""The type matrix: every type the type policy lists (its stored examples and the input types it
normalizes) through every path, against a plain pyarrow computation of the same answer on the
same data, in both table formats `Table.create` makes (mergetree's own and Paimon's).  What the
policy says a type supports must work and give the right answer; what it says a type cannot do
(or a format cannot store) must be refused up front with UnsupportedTypeError naming the column —
never a raw Arrow error.  Generated from `mergetree.table.type_policy`, not hand-listed."""
from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from typed_data import POLICY_TYPES, comparable, random_array, sql_mask, type_id

from mergetree import Table
from mergetree.errors import UnsupportedTypeError
from mergetree.merge.arrow_input import sort_indices
from mergetree.table import type_policy
from mergetree.table.workload import querylog

N = 600
FORMATS = type_policy.FORMATS


def _cases(keep) -> pytest.MarkDecorator:
    """(format, type) for every type a format stores that `keep(format, type)` accepts."""
    cases = [(f, t) for f in FORMATS for t in POLICY_TYPES if type_policy.storable(t, f) and keep(f, t)]
    return pytest.mark.parametrize("table_format,dtype", cases, ids=[f"{f}-{type_id(t)}" for f, t in cases])


params = _cases(lambda f, t: True)


def params_for(*capabilities: str):
    """The types that support any of `capabilities` (the others' refusals are tested)."""
    return _cases(lambda f, t: any(type_policy.supports(t, c, f) for c in capabilities))


def supports(dtype: pa.DataType, capability: str, table_format: str) -> bool:
    return type_policy.supports(dtype, capability, table_format)


def _index_options(index: str, table_format: str) -> dict[str, str]:
    """A table's options giving column c a Bloom filter or a bitmap (Parquet's own Bloom filters on
    a Paimon table, which Java's writers write too; its bitmaps are Paimon's file index)."""
    if index == "bloom":
        return {"parquet.bloom.filter.enabled#c": "true"} if table_format == "paimon" else \
            {"file-index.bloom-filter.columns": "c"}
    return {"file-index.bitmap.columns": "c"}


def _data(dtype: pa.DataType, seed: int, n: int = N, first_id: int = 0, distinct: int = 64) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({"id": pa.array(np.arange(first_id, first_id + n), pa.int64()),
                     "g": pa.array(rng.integers(0, 4, n), pa.int32()),
                     "c": random_array(dtype, n, rng, distinct=distinct)})


def _stored(table: pa.Table, table_format: str) -> pa.Table:
    """The reference copy: the same rows with the column cast to its stored type."""
    stored = type_policy.stored_type(table.schema.field("c").type, "c", table_format)
    c = table.column("c")
    if pa.types.is_dictionary(c.type):
        c = c.cast(c.type.value_type)
    return table.set_column(2, pa.field("c", stored), c.cast(stored))


def _rows(table: pa.Table) -> list[Any]:
    return comparable(table.select(["id", "g", "c"]).sort_by("id").to_pylist())


def _probe_values(ref: pa.Table, table_format: str) -> list[Any]:
    """Two values present in the data (the most common first), for filters."""
    valid = ref.column("c").drop_null()
    if not type_policy.supports(valid.type, "filter_eq", table_format):
        return valid.to_pylist()[:1]
    if pa.types.is_floating(valid.type):
        valid = valid.filter(pc.invert(pc.is_nan(valid)))
    counts = pc.value_counts(valid).to_pylist()
    counts.sort(key=lambda d: (-d["counts"], str(d["values"])))
    return [d["values"] for d in counts[:2]]


def _filters(dtype: pa.DataType, ref: pa.Table, table_format: str) -> list[tuple]:
    out: list[tuple] = [("c", "is null"), ("c", "is not null")]
    values = _probe_values(ref, table_format)
    if supports(dtype, "filter_eq", table_format) and values:
        out += [("c", "=", values[0]), ("c", "!=", values[0]), ("c", "in", values), ("c", "not in", values[:1])]
    if supports(dtype, "filter_range", table_format) and values:
        out += [("c", "<", values[0]), ("c", ">=", values[0]), ("c", "<=", values[-1])]
    return out


def _expected(ref: pa.Table, f: tuple) -> list[Any]:
    mask = sql_mask(ref.column("c"), f[1], f[2] if len(f) == 3 else None)
    return _rows(ref.filter(mask))


def _pk_model(dtype: pa.DataType, table_format: str) -> tuple[list[pa.Table], pa.Table, pa.Table]:
    """Three commits (inserts, upserts of a third of the keys, deletes of a tenth) and the
    table they leave (the reference, in stored types)."""
    first = _data(dtype, 1)
    upserts = _data(dtype, 2, n=N // 3, first_id=N // 2)
    deletes = pa.table({"id": pa.array(np.arange(0, N, 10), pa.int64())})
    model = {r["id"]: r for r in _stored(first, table_format).to_pylist()}
    model.update({r["id"]: r for r in _stored(upserts, table_format).to_pylist()})
    for i in deletes.column("id").to_pylist():
        model.pop(i, None)
    ref = pa.Table.from_pylist([model[i] for i in sorted(model)], schema=_stored(first, table_format).schema)
    return [first, upserts, deletes], ref, first


@params
def test_primary_key_table_every_filter(tmp_path, table_format, dtype):
    commits, ref, first = _pk_model(dtype, table_format)
    t = Table.create(str(tmp_path / "t"), first.schema, primary_key="id", buckets=2, format=table_format)
    assert t.schema.field("c").type == type_policy.stored_type(dtype, "c", table_format)
    t.write(commits[0])
    t.write(commits[1])
    t.delete(commits[2])
    assert _rows(t.read()) == _rows(ref)
    for f in _filters(dtype, ref, table_format):
        assert _rows(t.read(filter=f)) == _expected(ref, f), f
        assert _rows(pa.table(t.scan(filter=f))) == _expected(ref, f), f


@params
def test_refusals_name_the_column(tmp_path, table_format, dtype):
    """What the policy says a type cannot do is an UnsupportedTypeError naming the column."""
    t = Table.create(str(tmp_path / "t"), _data(dtype, 1).schema, format=table_format)
    t.write(_data(dtype, 1))
    value = _probe_values(_stored(_data(dtype, 1), table_format), table_format)
    probe = value[0] if value else 1
    attempts = []
    if not supports(dtype, "filter_eq", table_format):
        attempts.append(lambda: t.read(filter=("c", "=", probe)))
    if not supports(dtype, "filter_range", table_format):
        attempts.append(lambda: t.read(filter=("c", ">", probe)))
    if not supports(dtype, "order", table_format):
        attempts += [lambda: t.read(order_by="c", limit=3), lambda: t.optimize(order=["c"])]
    if not supports(dtype, "key", table_format):
        attempts.append(lambda: Table.create(str(tmp_path / "k"), _data(dtype, 1).schema, primary_key="c",
                                             format=table_format))
    if not supports(dtype, "partition", table_format):
        attempts.append(lambda: Table.create(str(tmp_path / "p"), _data(dtype, 1).schema, partition_by="c",
                                             format=table_format))
    for option in ("bloom", "bitmap"):
        if not supports(dtype, option, table_format):
            attempts.append(lambda option=option: Table.create(
                str(tmp_path / option), _data(dtype, 1).schema, options=_index_options(option, table_format),
                format=table_format))
    for attempt in attempts:
        with pytest.raises(UnsupportedTypeError, match="'c'"):
            attempt()
    assert _rows(t.read()) == _rows(_stored(_data(dtype, 1), table_format))  # nothing was changed by a refusal


@params_for("order")
def test_top_n(tmp_path, table_format, dtype):
    t = Table.create(str(tmp_path / "t"), _data(dtype, 1).schema, format=table_format)
    ref = pa.concat_tables([_stored(_data(dtype, s, first_id=s * N), table_format) for s in range(3)])
    for s in range(3):
        t.write(_data(dtype, s, first_id=s * N))
    for direction in ("ascending", "descending"):
        got = t.read(order_by=[("c", direction[:3] if direction == "ascending" else "desc")], limit=7)
        ordered = ref.take(sort_indices(ref, [("c", direction)], "at_end"))
        assert comparable(got.column("c").to_pylist()) == comparable(ordered.column("c").to_pylist()[:7]), direction


@params_for("order")
@pytest.mark.parametrize("strategy", ["linear", "zorder", "hilbert", "sort_within"])
def test_optimize_changes_no_answer(tmp_path, table_format, dtype, strategy):
    t = Table.create(str(tmp_path / "t"), _data(dtype, 1).schema, format=table_format)
    ref = pa.concat_tables([_stored(_data(dtype, s, n=200, first_id=s * 200), table_format) for s in range(4)])
    for s in range(4):
        t.write(_data(dtype, s, n=200, first_id=s * 200))
    if strategy == "sort_within":
        t.optimize(sort_within="c")
    else:
        t.optimize(order=["c", "id"], strategy=strategy)
    assert t.info().files >= 1
    assert _rows(t.read()) == _rows(ref)
    for f in _filters(dtype, ref, table_format):
        assert _rows(t.read(filter=f)) == _expected(ref, f), f


_INDEX_CASES = [(f, t, i) for f in FORMATS for i in ("bloom", "bitmap", "partition") for t in POLICY_TYPES
                if type_policy.storable(t, f) and type_policy.supports(t, i, f)]


@pytest.mark.parametrize("table_format,dtype,index", _INDEX_CASES,
                         ids=[f"{f}-{i}-{type_id(t)}" for f, t, i in _INDEX_CASES])
def test_indexes_and_partitions_only_skip(tmp_path, table_format, dtype, index):
    options = {} if index == "partition" else _index_options(index, table_format)
    t = Table.create(str(tmp_path / "t"), _data(dtype, 1).schema, options=options,
                     partition_by="c" if index == "partition" else None, format=table_format)
    distinct = 6 if index == "partition" else 64  # a partition per value: few values, few directories
    ref = pa.concat_tables([_stored(_data(dtype, s, n=150, first_id=s * 150, distinct=distinct), table_format)
                            for s in range(4)])
    for s in range(4):
        t.write(_data(dtype, s, n=150, first_id=s * 150, distinct=distinct))
    assert _rows(t.read()) == _rows(ref)
    for f in _filters(dtype, ref, table_format):
        assert _rows(t.read(filter=f)) == _expected(ref, f), f


@params_for("key")
def test_key_and_bucket_column(tmp_path, table_format, dtype):
    """The column as the primary key (and, where Spark can hash it, the bucket key of 3 buckets)."""
    buckets = 3 if supports(dtype, "bucket", table_format) else 1
    schema = pa.schema([("c", dtype), ("id", pa.int64())])
    t = Table.create(str(tmp_path / "t"), schema, primary_key="c", buckets=buckets, format=table_format)
    model: dict = {}
    for s in range(3):
        stored = _stored(_data(dtype, s, n=200, first_id=s * 200), table_format).drop_null()
        c = stored.column("c")
        c = pc.dictionary_encode(c).cast(dtype) if pa.types.is_dictionary(dtype) else c.cast(dtype)
        written = stored.set_column(2, pa.field("c", dtype), c)
        t.write(written.select(["c", "id"]))
        for r in stored.to_pylist():
            key = comparable([r["c"]])[0]
            model[json.dumps(key, default=str)] = r["id"]
    got = t.read()
    assert sorted(got.column("id").to_pylist()) == sorted(model.values())


@params_for("measure_sum", "measure_minmax")
def test_measures(tmp_path, table_format, dtype):
    measures = {f: "c" for f, cap in (("sum", "measure_sum"), ("min", "measure_minmax"), ("max", "measure_minmax"))
                if supports(dtype, cap, table_format)}
    t = Table.create(str(tmp_path / "t"), _data(dtype, 1).schema, format=table_format)
    t.add_aggregate("by_g", group_by=["g"], measures={"c": list(measures), "*": "count"})
    ref = pa.concat_tables([_stored(_data(dtype, s, n=200, first_id=s * 200), table_format) for s in range(3)])
    for s in range(3):
        t.write(_data(dtype, s, n=200, first_id=s * 200))
    got = t.aggregate("g", {"c": list(measures)}).sort_by("g")
    # the reference by plain Python per group (pyarrow's hash kernels lack durations)
    groups: dict = {}
    for r in ref.to_pylist():
        if r["c"] is not None:
            groups.setdefault(r["g"], []).append(r["c"])
    want = {"sum": lambda v: sum(v), "min": min, "max": max}
    for f in measures:
        expected = [want[f](groups[g]) if g in groups else None for g in got.column("g").to_pylist()]
        assert comparable(got.column(f"c_{f}").to_pylist()) == comparable(expected), f


@pytest.mark.parametrize("dtype", POLICY_TYPES, ids=[type_id(t) for t in POLICY_TYPES])
def test_paimon_refuses_by_name_what_it_cannot_store(tmp_path, dtype):
    """A type Paimon's schema cannot say is refused by `Table.create` naming the column and what
    to cast it to, with nothing written; every other type is created as the policy says."""
    schema = _data(dtype, 1).schema
    path = tmp_path / "t"
    if type_policy.storable(dtype, "paimon"):
        t = Table.create(str(path), schema, format="paimon")
        assert t.schema.field("c").type == type_policy.stored_type(dtype, "c", "paimon")
        return
    with pytest.raises(UnsupportedTypeError, match="'c'.*(cast|give it)"):
        Table.create(str(path), schema, format="paimon")
    assert not path.exists() or not any(path.rglob("*"))
    with pytest.raises(UnsupportedTypeError, match="'c'"):
        type_policy.stored_type(dtype, "c", "paimon")


@params
def test_query_log_keeps_filter_values(table_format, dtype):
    """A logged filter comes back with the same typed values (the advisor replays them)."""
    ref = _stored(_data(dtype, 1), table_format)
    schema = ref.schema
    from mergetree.table import filters as flt
    for f in _filters(dtype, ref, table_format):
        normalized = flt.normalize(f, schema)
        back = querylog.filter_from_json(querylog.filter_to_json(normalized))
        assert comparable([back]) == comparable([normalized]), f


@params
def test_workload_loop(tmp_path, table_format, dtype):
    """Reads filtered on the column are logged, then the advisor samples and simulates, replay
    re-plans the logged queries on the table and on a layout of the column, the report renders,
    and a qd-tree layout built from that workload changes no answer."""
    from mergetree.organize.replay import replay
    from mergetree.organize.report import build_report, render_html
    t = Table.create(str(tmp_path / "t"), _data(dtype, 1).schema, format=table_format)
    ref = pa.concat_tables([_stored(_data(dtype, s, n=150, first_id=s * 150), table_format) for s in range(4)])
    for s in range(4):
        t.write(_data(dtype, s, n=150, first_id=s * 150))
    filters = _filters(dtype, ref, table_format)
    for f in filters:
        t.read(filter=f)
    advice = t.advise()
    assert advice.queries >= len(filters)
    assert len(replay(t.path).queries) + replay(t.path).skipped >= len(filters)
    if supports(dtype, "order", table_format):
        replay(t.path, layout="linear:c")
    assert "<svg" in render_html(build_report(t.path))
    if supports(dtype, "order", table_format):
        from mergetree.table import filters as flt
        from mergetree.table.levers.qdtree import build_qdtree, query_box
        boxes = [query_box(flt.normalize(f, ref.schema)) for f in filters]
        tree = build_qdtree(ref, boxes, 4, columns=["c"])
        if supports(dtype, "filter_range", table_format) and not pa.types.is_boolean(ref.schema.field("c").type):
            assert tree.nodes, "the logged range bounds give the tree cuts on every orderable type"
        t.set_options({"clustering.columns": "c", "clustering.strategy": "qdtree", "clustering.qdtree": tree.to_json()})
        t.optimize()
        assert _rows(t.read()) == _rows(ref)
        for f in filters:
            assert _rows(t.read(filter=f)) == _expected(ref, f), f
