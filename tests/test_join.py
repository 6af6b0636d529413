"""The sorted merge join against a dict model."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mergetree import join_sorted


@pytest.mark.parametrize("how", ["inner", "left", "right", "full", "semi", "anti"])
@settings(max_examples=80, deadline=None)
@given(left=st.dictionaries(st.text(max_size=3), st.integers(-5, 5), max_size=20),
       right=st.dictionaries(st.text(max_size=3), st.booleans(), max_size=20))
def test_join_sorted_matches_model(how, left, right):
    order = lambda keys: sorted(keys, key=lambda s: s.encode())  # noqa: E731  (Arrow's UTF-8 byte order)
    lt = pa.table({"k": pa.array(order(left), pa.string()), "v": pa.array([left[k] for k in order(left)], pa.int64())})
    rt = pa.table({"k": pa.array(order(right), pa.string()),
                   "w": pa.array([right[k] for k in order(right)], pa.bool_())})
    keys = {"inner": left.keys() & right.keys(), "left": left.keys(), "right": right.keys(),
            "full": left.keys() | right.keys(), "semi": left.keys() & right.keys(),
            "anti": left.keys() - right.keys()}[how]
    if how in ("semi", "anti"):  # the left's rows only
        want = [{"k": k, "v": left[k]} for k in order(keys)]
    else:
        want = [{"k": k, "v": left.get(k), "w": right.get(k)} for k in order(keys)]
    assert join_sorted(lt, rt, "k", how).to_pylist() == want


def _batches(table: pa.Table, cuts: list[int]) -> list[pa.RecordBatch]:
    """The table cut at `cuts` (positions; repeats make empty batches)."""
    out, start = [], 0
    for cut in sorted(c % (table.num_rows + 1) for c in cuts) + [table.num_rows]:
        piece = table.slice(start, max(0, cut - start))
        out.append(pa.RecordBatch.from_arrays([c.combine_chunks() for c in piece.columns], schema=table.schema))
        start = max(start, cut)
    return out


@pytest.mark.parametrize("how", ["inner", "left", "right", "full", "semi", "anti"])
@settings(max_examples=60, deadline=None)
@given(left=st.dictionaries(st.tuples(st.sampled_from(["a", "b", "é"]), st.integers(-20, 20)), st.integers(-99, 99),
                            max_size=30),
       right=st.dictionaries(st.tuples(st.sampled_from(["a", "b", "é"]), st.integers(-20, 20)), st.booleans(),
                             max_size=30),
       left_cuts=st.lists(st.integers(0, 40), max_size=6), right_cuts=st.lists(st.integers(0, 40), max_size=6))
def test_join_streams_equals_join_sorted(how, left, right, left_cuts, right_cuts):
    """Any batching of either side (empty and one-row batches included), composite string and
    integer keys: the streamed join's windows add up to the whole join."""
    from mergetree.merge.join import join_streams
    order = lambda keys: sorted(keys, key=lambda k: (k[0].encode(), k[1]))  # noqa: E731
    lk, rk = order(left), order(right)
    lt = pa.table({"s": pa.array([k[0] for k in lk], pa.string()), "i": pa.array([k[1] for k in lk], pa.int64()),
                   "v": pa.array([left[k] for k in lk], pa.int64())})
    rt = pa.table({"s": pa.array([k[0] for k in rk], pa.string()), "i": pa.array([k[1] for k in rk], pa.int64()),
                   "w": pa.array([right[k] for k in rk], pa.bool_())})
    want = join_sorted(lt, rt, ["s", "i"], how)
    parts = list(join_streams(_batches(lt, left_cuts), _batches(rt, right_cuts), ["s", "i"], how, lt.schema,
                              rt.schema))
    got = pa.concat_tables(parts) if parts else want.schema.empty_table()
    assert got.to_pylist() == want.to_pylist()


def test_join_streams_holds_about_a_batch_per_side():
    """The streamed join pulls a side's next batch only when its buffer ran dry: after each
    window it has read at most one batch ahead of what it joined, on either side."""
    from mergetree.merge.join import join_streams
    n, size = 20_000, 500
    lt = pa.table({"k": pa.array(range(0, 2 * n, 2), pa.int64()), "v": pa.array(range(n), pa.int64())})
    rt = pa.table({"k": pa.array(range(0, 3 * n, 3), pa.int64()), "w": pa.array(range(n), pa.int64())})
    pulled = [0, 0]

    def stream(table, side):
        for b in table.to_batches(max_chunksize=size):
            pulled[side] += b.num_rows
            yield b
    emitted = 0
    for out in join_streams(stream(lt, 0), stream(rt, 1), "k", "full", lt.schema, rt.schema):
        emitted += out.num_rows
        # input rows read but not yet joined (keys above the window's last) stay within a batch per side
        last = pa.compute.max(out.column("k")).as_py()
        joined_in = min(n, last // 2 + 1) + min(n, last // 3 + 1)
        assert pulled[0] + pulled[1] - joined_in <= 2 * size
    assert emitted == join_sorted(lt, rt, "k", "full").num_rows


def _sql_join(left: list[tuple], right: list[tuple], how: str) -> list[tuple]:
    """The join as SQL defines it, by nested loops: (k, v) x (k, w), a null key matches nothing."""
    match = lambda a, b: a[0] is not None and a[0] == b[0]  # noqa: E731
    rows = []
    for lrow in left:
        partners = [r for r in right if match(lrow, r)]
        if how == "semi":
            rows += [lrow] if partners else []
        elif how == "anti":
            rows += [] if partners else [lrow]
        else:
            rows += [(lrow[0], lrow[1], r[1]) for r in partners]
            if not partners and how in ("left", "full"):
                rows.append((lrow[0], lrow[1], None))
    if how in ("right", "full"):
        rows += [(r[0], None, r[1]) for r in right if not any(match(lrow, r) for lrow in left)]
    return rows


repeated_keys = st.lists(st.tuples(st.one_of(st.none(), st.integers(-3, 3)), st.integers(-99, 99)), max_size=25)


@pytest.mark.parametrize("how", ["inner", "left", "right", "full", "semi", "anti"])
@settings(max_examples=80, deadline=None)
@given(left=repeated_keys, right=repeated_keys,
       left_cuts=st.lists(st.integers(0, 30), max_size=6), right_cuts=st.lists(st.integers(0, 30), max_size=6))
def test_joins_with_repeated_and_null_keys_match_sql(how, left, right, left_cuts, right_cuts):
    """Keys that repeat on both sides (a primary key wider than the join key) give every
    pairing, null keys match nothing; the one-pass join and the streamed join (any batching,
    a key's rows spread over several batches) both equal SQL's nested-loop answer."""
    from collections import Counter

    from mergetree.merge.join import join_streams
    order = lambda rows: sorted(rows, key=lambda r: (r[0] is not None, r[0] or 0))  # noqa: E731  (nulls first)
    left, right = order(left), order(right)
    lt = pa.table({"k": pa.array([r[0] for r in left], pa.int64()), "v": pa.array([r[1] for r in left], pa.int64())})
    rt = pa.table({"k": pa.array([r[0] for r in right], pa.int64()),
                   "w": pa.array([r[1] for r in right], pa.int64())})
    want = Counter(_sql_join(left, right, how))
    whole = join_sorted(lt, rt, "k", how)
    assert Counter(tuple(r.values()) for r in whole.to_pylist()) == want
    parts = list(join_streams(_batches(lt, left_cuts), _batches(rt, right_cuts), "k", how, lt.schema, rt.schema))
    streamed = pa.concat_tables(parts) if parts else whole.schema.empty_table()
    assert streamed.to_pylist() == whole.to_pylist()


def test_a_key_group_longer_than_a_batch_joins_whole():
    """One key with 3,000 rows on each side, streamed 100 rows a batch: all 9,000,000 pairings."""
    from mergetree.merge.join import join_streams
    lt = pa.table({"k": pa.array([1] * 3000 + [2], pa.int64()), "v": pa.array(range(3001), pa.int64())})
    rt = pa.table({"k": pa.array([0] + [1] * 3000, pa.int64()), "w": pa.array(range(3001), pa.int64())})
    counts = {"inner": 9_000_000, "left": 9_000_001, "right": 9_000_001, "full": 9_000_002, "semi": 3000, "anti": 1}
    for how, want in counts.items():
        parts = join_streams(lt.to_batches(max_chunksize=100), rt.to_batches(max_chunksize=100), "k", how,
                             lt.schema, rt.schema)
        assert sum(p.num_rows for p in parts) == want, how


@pytest.mark.parametrize("how", ["inner", "left", "right", "full", "semi", "anti"])
@settings(max_examples=40, deadline=None)
@given(left_runs=st.lists(st.dictionaries(st.integers(-30, 30), st.one_of(st.none(), st.text(max_size=3)),
                                          max_size=15), max_size=4),
       right_runs=st.lists(st.dictionaries(st.integers(-30, 30), st.integers(-9, 9), max_size=15), max_size=4),
       batch=st.integers(1, 7))
def test_join_of_merge_selections_equals_join_of_merged_tables(how, left_runs, right_runs, batch):
    """Each side merged from several runs (newer runs win) and handed to the join as
    selections of the runs' batches, never copied before the join: the same rows as
    joining the two merged tables."""
    from mergetree import merge
    from mergetree.merge.join import join_selections

    def runs(dicts, column, dtype):
        tables = [pa.table({"k": pa.array(sorted(d), pa.int64()), column: pa.array([d[k] for k in sorted(d)], dtype)})
                  for d in dicts]
        return [pa.RecordBatchReader.from_batches(t.schema, t.to_batches(max_chunksize=batch)) for t in tables]
    schemas = [pa.schema([("k", pa.int64()), ("v", pa.string())]), pa.schema([("k", pa.int64()), ("w", pa.int64())])]
    merged = [merge(runs(left_runs, "v", pa.string()), "k", batch_size=batch).read_all() if left_runs else
              schemas[0].empty_table(),
              merge(runs(right_runs, "w", pa.int64()), "k", batch_size=batch).read_all() if right_runs else
              schemas[1].empty_table()]
    want = join_sorted(merged[0].cast(schemas[0]), merged[1].cast(schemas[1]), "k", how)
    sides = [merge(runs(left_runs, "v", pa.string()), "k", batch_size=batch).selections() if left_runs else [],
             merge(runs(right_runs, "w", pa.int64()), "k", batch_size=batch).selections() if right_runs else []]
    parts = list(join_selections(sides[0], sides[1], "k", how, schemas[0], schemas[1]))
    got = pa.concat_tables(parts) if parts else want.schema.empty_table()
    assert got.to_pylist() == want.to_pylist()
