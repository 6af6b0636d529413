"""The type matrix: every type the type policy lists (its stored examples and the input types it
normalizes) through every path, against a plain pyarrow computation of the same answer on the
same data, on the Paimon tables `Table.create` makes.  What the policy says a type supports must
work and give the right answer; what it says a type cannot do (or a table cannot store) must be
refused up front with UnsupportedTypeError naming the column — never a raw Arrow error.
Generated from `mergetree.table.type_policy`, not hand-listed."""
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
from mergetree.table.text_values import takes_text
from mergetree.table.workload import querylog

N = 600


def _cases(keep) -> pytest.MarkDecorator:
    """Every type a table stores that `keep(type)` accepts."""
    cases = [t for t in POLICY_TYPES if type_policy.storable(t) and keep(t)]
    return pytest.mark.parametrize("dtype", cases, ids=[type_id(t) for t in cases])


params = _cases(lambda t: True)


def params_for(*capabilities: str):
    """The types that support any of `capabilities` (the others' refusals are tested)."""
    return _cases(lambda t: any(type_policy.supports(t, c) for c in capabilities))


def supports(dtype: pa.DataType, capability: str) -> bool:
    return type_policy.supports(dtype, capability)


def _index_options(index: str) -> dict[str, str]:
    """A table's options giving column c a Bloom filter or a bitmap (Parquet's own Bloom filters,
    which Java's writers write too; its bitmaps are Paimon's file index)."""
    if index == "bloom":
        return {"parquet.bloom.filter.enabled#c": "true"}
    return {"file-index.bitmap.columns": "c"}


def _data(dtype: pa.DataType, seed: int, n: int = N, first_id: int = 0, distinct: int = 64) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({"id": pa.array(np.arange(first_id, first_id + n), pa.int64()),
                     "g": pa.array(rng.integers(0, 4, n), pa.int32()),
                     "c": random_array(dtype, n, rng, distinct=distinct)})


def _stored(table: pa.Table) -> pa.Table:
    """The reference copy: the same rows with the column cast to its stored type."""
    stored = type_policy.stored_type(table.schema.field("c").type, "c")
    c = table.column("c")
    if pa.types.is_dictionary(c.type):
        c = c.cast(c.type.value_type)
    return table.set_column(2, pa.field("c", stored), c.cast(stored))


def _rows(table: pa.Table) -> list[Any]:
    return comparable(table.select(["id", "g", "c"]).sort_by("id").to_pylist())


def _probe_values(ref: pa.Table) -> list[Any]:
    """Two values present in the data (the most common first), for filters."""
    valid = ref.column("c").drop_null()
    if not type_policy.supports(valid.type, "filter_eq"):
        return valid.to_pylist()[:1]
    if pa.types.is_floating(valid.type):
        valid = valid.filter(pc.invert(pc.is_nan(valid)))
    counts = pc.value_counts(valid).to_pylist()
    counts.sort(key=lambda d: (-d["counts"], str(d["values"])))
    return [d["values"] for d in counts[:2]]


def _filters(dtype: pa.DataType, ref: pa.Table) -> list[tuple]:
    out: list[tuple] = [("c", "is null"), ("c", "is not null")]
    values = _probe_values(ref)
    if supports(dtype, "filter_eq") and values:
        out += [("c", "=", values[0]), ("c", "!=", values[0]), ("c", "in", values), ("c", "not in", values[:1])]
    if supports(dtype, "filter_range") and values:
        out += [("c", "<", values[0]), ("c", ">=", values[0]), ("c", "<=", values[-1])]
    return out


def _expected(ref: pa.Table, f: tuple) -> list[Any]:
    mask = sql_mask(ref.column("c"), f[1], f[2] if len(f) == 3 else None)
    return _rows(ref.filter(mask))


def _pk_model(dtype: pa.DataType) -> tuple[list[pa.Table], pa.Table, pa.Table]:
    """Three commits (inserts, upserts of a third of the keys, deletes of a tenth) and the
    table they leave (the reference, in stored types)."""
    first = _data(dtype, 1)
    upserts = _data(dtype, 2, n=N // 3, first_id=N // 2)
    deletes = pa.table({"id": pa.array(np.arange(0, N, 10), pa.int64())})
    model = {r["id"]: r for r in _stored(first).to_pylist()}
    model.update({r["id"]: r for r in _stored(upserts).to_pylist()})
    for i in deletes.column("id").to_pylist():
        model.pop(i, None)
    ref = pa.Table.from_pylist([model[i] for i in sorted(model)], schema=_stored(first).schema)
    return [first, upserts, deletes], ref, first


@params
def test_primary_key_table_every_filter(tmp_path, dtype):
    commits, ref, first = _pk_model(dtype)
    t = Table.create(str(tmp_path / "t"), first.schema, primary_key="id", buckets=2)
    assert t.schema.field("c").type == type_policy.stored_type(dtype, "c")
    t.write(commits[0])
    t.write(commits[1])
    t.delete(commits[2])
    assert _rows(t.read()) == _rows(ref)
    for f in _filters(dtype, ref):
        assert _rows(t.read(filter=f)) == _expected(ref, f), f
        assert _rows(pa.table(t.scan(filter=f))) == _expected(ref, f), f


@params
def test_refusals_name_the_column(tmp_path, dtype):
    """What the policy says a type cannot do is an UnsupportedTypeError naming the column."""
    t = Table.create(str(tmp_path / "t"), _data(dtype, 1).schema)
    t.write(_data(dtype, 1))
    value = _probe_values(_stored(_data(dtype, 1)))
    probe = value[0] if value else 1
    attempts = []
    if not supports(dtype, "filter_eq"):
        attempts.append(lambda: t.read(filter=("c", "=", probe)))
    if not supports(dtype, "filter_range"):
        attempts.append(lambda: t.read(filter=("c", ">", probe)))
    if not supports(dtype, "order"):
        attempts += [lambda: t.read(order_by="c", limit=3), lambda: t.optimize(order=["c"])]
    if not supports(dtype, "key"):
        attempts.append(lambda: Table.create(str(tmp_path / "k"), _data(dtype, 1).schema, primary_key="c"))
    if not supports(dtype, "partition"):
        attempts.append(lambda: Table.create(str(tmp_path / "p"), _data(dtype, 1).schema, partition_by="c"))
    for option in ("bloom", "bitmap"):
        if not supports(dtype, option):
            attempts.append(lambda option=option: Table.create(
                str(tmp_path / option), _data(dtype, 1).schema, options=_index_options(option)))
    for attempt in attempts:
        with pytest.raises(UnsupportedTypeError, match="'c'"):
            attempt()
    assert _rows(t.read()) == _rows(_stored(_data(dtype, 1)))  # nothing was changed by a refusal


@params_for("order")
def test_top_n(tmp_path, dtype):
    t = Table.create(str(tmp_path / "t"), _data(dtype, 1).schema)
    ref = pa.concat_tables([_stored(_data(dtype, s, first_id=s * N)) for s in range(3)])
    for s in range(3):
        t.write(_data(dtype, s, first_id=s * N))
    for direction in ("ascending", "descending"):
        got = t.read(order_by=[("c", direction[:3] if direction == "ascending" else "desc")], limit=7)
        ordered = ref.take(sort_indices(ref, [("c", direction)], "at_end"))
        assert comparable(got.column("c").to_pylist()) == comparable(ordered.column("c").to_pylist()[:7]), direction


@params_for("order")
@pytest.mark.parametrize("strategy", ["linear", "zorder", "hilbert", "sort_within"])
def test_optimize_changes_no_answer(tmp_path, dtype, strategy):
    t = Table.create(str(tmp_path / "t"), _data(dtype, 1).schema)
    ref = pa.concat_tables([_stored(_data(dtype, s, n=200, first_id=s * 200)) for s in range(4)])
    for s in range(4):
        t.write(_data(dtype, s, n=200, first_id=s * 200))
    if strategy == "sort_within":
        t.optimize(sort_within="c")
    else:
        t.optimize(order=["c", "id"], strategy=strategy)
    assert t.info().files >= 1
    assert _rows(t.read()) == _rows(ref)
    for f in _filters(dtype, ref):
        assert _rows(t.read(filter=f)) == _expected(ref, f), f


_INDEX_CASES = [(t, i) for i in ("bloom", "bitmap", "partition") for t in POLICY_TYPES
                if type_policy.storable(t) and type_policy.supports(t, i)]


@pytest.mark.parametrize("dtype,index", _INDEX_CASES, ids=[f"{i}-{type_id(t)}" for t, i in _INDEX_CASES])
def test_indexes_and_partitions_only_skip(tmp_path, dtype, index):
    options = {} if index == "partition" else _index_options(index)
    t = Table.create(str(tmp_path / "t"), _data(dtype, 1).schema, options=options,
                     partition_by="c" if index == "partition" else None)
    distinct = 6 if index == "partition" else 64  # a partition per value: few values, few directories
    ref = pa.concat_tables([_stored(_data(dtype, s, n=150, first_id=s * 150, distinct=distinct))
                            for s in range(4)])
    for s in range(4):
        t.write(_data(dtype, s, n=150, first_id=s * 150, distinct=distinct))
    assert _rows(t.read()) == _rows(ref)
    for f in _filters(dtype, ref):
        assert _rows(t.read(filter=f)) == _expected(ref, f), f


@params_for("key")
def test_key_and_bucket_column(tmp_path, dtype):
    """The column as the primary key (and, where Spark can hash it, the bucket key of 3 buckets)."""
    buckets = 3 if supports(dtype, "bucket") else 1
    schema = pa.schema([("c", dtype), ("id", pa.int64())])
    t = Table.create(str(tmp_path / "t"), schema, primary_key="c", buckets=buckets)
    model: dict = {}
    for s in range(3):
        stored = _stored(_data(dtype, s, n=200, first_id=s * 200)).drop_null()
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
def test_measures(tmp_path, dtype):
    measures = {f: "c" for f, cap in (("sum", "measure_sum"), ("min", "measure_minmax"), ("max", "measure_minmax"))
                if supports(dtype, cap)}
    t = Table.create(str(tmp_path / "t"), _data(dtype, 1).schema)
    t.add_aggregate("by_g", group_by=["g"], measures={"c": list(measures), "*": "count"})
    ref = pa.concat_tables([_stored(_data(dtype, s, n=200, first_id=s * 200)) for s in range(3)])
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


ALL_TYPES = POLICY_TYPES + list(type_policy.REFUSED_EXAMPLES)


@pytest.mark.parametrize("dtype", ALL_TYPES, ids=[type_id(t) for t in ALL_TYPES])
def test_refuses_by_name_what_it_cannot_store(tmp_path, dtype):
    """A type Paimon's schema cannot say is refused by `Table.create` naming the column and what
    to cast it to, with nothing written; every other type is created as the policy says."""
    schema = pa.schema([("id", pa.int64()), ("g", pa.int32()), ("c", dtype)])
    path = tmp_path / "t"
    if type_policy.storable(dtype):
        assert dtype not in type_policy.REFUSED_EXAMPLES
        t = Table.create(str(path), schema)
        assert t.schema.field("c").type == type_policy.stored_type(dtype, "c")
        return
    assert dtype in type_policy.REFUSED_EXAMPLES
    with pytest.raises(UnsupportedTypeError, match="'c'.*(cast|give it)"):
        Table.create(str(path), schema)
    assert not path.exists() or not any(path.rglob("*"))
    with pytest.raises(UnsupportedTypeError, match="'c'"):
        type_policy.stored_type(dtype, "c")


@params
def test_query_log_keeps_filter_values(dtype):
    """A logged filter comes back with the same typed values (the advisor replays them)."""
    ref = _stored(_data(dtype, 1))
    schema = ref.schema
    from mergetree.table import filters as flt
    for f in _filters(dtype, ref):
        normalized = flt.normalize(f, schema)
        back = querylog.filter_from_json(querylog.filter_to_json(normalized))
        assert comparable([back]) == comparable([normalized]), f


@params
def test_workload_loop(tmp_path, dtype):
    """Reads filtered on the column are logged, then the advisor samples and simulates, replay
    re-plans the logged queries on the table and on a layout of the column, the report renders,
    and a qd-tree layout built from that workload changes no answer."""
    from mergetree.organize.replay import replay
    from mergetree.organize.report import build_report, render_html
    t = Table.create(str(tmp_path / "t"), _data(dtype, 1).schema)
    ref = pa.concat_tables([_stored(_data(dtype, s, n=150, first_id=s * 150)) for s in range(4)])
    for s in range(4):
        t.write(_data(dtype, s, n=150, first_id=s * 150))
    filters = _filters(dtype, ref)
    for f in filters:
        t.read(filter=f)
    advice = t.advise()
    assert advice.queries >= len(filters)
    assert len(replay(t.path).queries) + replay(t.path).skipped >= len(filters)
    if supports(dtype, "order"):
        replay(t.path, layout="linear:c")
    assert "<svg" in render_html(build_report(t.path))
    if supports(dtype, "order"):
        from mergetree.table import filters as flt
        from mergetree.table.levers.qdtree import build_qdtree, query_box
        boxes = [query_box(flt.normalize(f, ref.schema)) for f in filters]
        tree = build_qdtree(ref, boxes, 4, columns=["c"])
        if supports(dtype, "filter_range") and not pa.types.is_boolean(ref.schema.field("c").type):
            assert tree.nodes, "the logged range bounds give the tree cuts on every orderable type"
        t.set_options({"clustering.columns": "c", "clustering.strategy": "qdtree", "clustering.qdtree": tree.to_json()})
        t.optimize()
        assert _rows(t.read()) == _rows(ref)
        for f in filters:
            assert _rows(t.read(filter=f)) == _expected(ref, f), f


_TEXT_CASES = [t for t in POLICY_TYPES if type_policy.storable(t) and takes_text(type_policy.stored_type(t, "c"))]


def _as_text(value: Any, dtype: pa.DataType) -> str:
    """A value as people write it: Arrow's own text of it (ISO-8601 times, decimal digits)."""
    return pc.cast(pa.scalar(value, dtype), pa.string()).as_py()


@pytest.mark.parametrize("dtype", _TEXT_CASES, ids=[type_id(t) for t in _TEXT_CASES])
def test_text_values_write_filter_and_delete(tmp_path, dtype):
    """Dates, times, timestamps and decimals given as text: a column of text written, every
    filter with its values as text, and a delete by a text condition, each the same as with
    typed values."""
    data = _data(dtype, 1)
    ref = _stored(data)
    stored = ref.schema.field("c").type
    text_column = pc.cast(ref.column("c"), pa.string()).to_pylist()
    t = Table.create(str(tmp_path / "t"), data.schema, primary_key="id", buckets=2)
    t.write({"id": ref.column("id").to_pylist(), "g": ref.column("g").to_pylist(), "c": text_column})
    assert _rows(t.read()) == _rows(ref)
    for f in _filters(dtype, ref):
        if len(f) == 2:
            continue
        value = [_as_text(v, stored) for v in f[2]] if isinstance(f[2], list) else _as_text(f[2], stored)
        assert _rows(t.read(filter=(f[0], f[1], value))) == _expected(ref, f), f
    probe = _probe_values(ref)[0]
    t.delete(filter=("c", "=", _as_text(probe, stored)))
    assert _rows(t.read()) == _rows(ref.filter(pc.invert(sql_mask(ref.column("c"), "=", probe))))
