"""The merge's stretches: rows of one run below every other run's head leave as a slice of
their batch, without tree work.  Every overlap pattern, engine, algorithm and key path must
give what the model gives and exactly what the plain path (stretches off) gives."""
from __future__ import annotations

import contextlib

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference import ReferenceError_, merge_model
from strategies import build_run, canonical, make_schema, run_shapes

import mergetree
from mergetree import _core
from mergetree.errors import RetractionError, UnsortedRunError

SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
ENGINES = ["deduplicate", "first-row", "partial-update", "aggregate", "none"]
PATTERNS = ["disjoint", "touching", "overlapping", "clumps"]
KEYS = {"int64": ["int64"], "string": ["string"], "composite": ["int32", "string"]}
OFF = 1 << 60  # rows a stretch would need: stretches never happen


def key_tuple(n: int, key_types: list[str]) -> tuple:
    """An order-preserving key for integer n, in the key's column types."""
    if key_types == ["int64"]:
        return (n,)
    if key_types == ["string"]:
        return (f"{n:06d}",)
    return (n // 3, f"s{n % 3}")


@st.composite
def patterned_runs(draw, key_types: list[str], with_kind: bool, kinds) -> list[list[dict]]:
    """Runs whose key ranges lie one above the other (disjoint), share one boundary key
    (touching: the same key in two runs, with its own sequence in each), overlap by a few
    keys, or take turns in clumps (interleaving stretches)."""
    pattern = draw(st.sampled_from(PATTERNS))
    n_runs = draw(st.integers(1, 5))
    keys_per_run: list[list[int]] = []
    if pattern == "clumps":
        total = draw(st.integers(0, 60))
        owner = []
        while len(owner) < total:
            owner += [draw(st.integers(0, n_runs - 1))] * draw(st.integers(1, 12))
        keys_per_run = [[n for n in range(total) if owner[n] == r] for r in range(n_runs)]
    else:
        start = 0
        for _ in range(n_runs):
            length = draw(st.integers(0, 20))
            keys_per_run.append(list(range(start, start + length)))
            if pattern == "disjoint":
                start += length + draw(st.integers(0, 2))
            elif pattern == "touching":
                start += max(length - 1, 0)
            else:
                start += max(length - draw(st.integers(0, 5)), 0)
    if draw(st.booleans()):  # the newest run need not be the highest
        keys_per_run.reverse()
    runs = []
    for keys in keys_per_run:
        rows = []
        for n in keys:
            row = {f"k{i}": v for i, v in enumerate(key_tuple(n, key_types))}
            row["seq"] = draw(st.integers(0, 3))  # ties across runs: the run order decides
            if with_kind:
                row["kind"] = draw(kinds)
            row["v"] = draw(st.one_of(st.none(), st.integers(-5, 5)))
            rows.append(row)
        runs.append(rows)
    return runs


@contextlib.contextmanager
def stretch_rules(min_rows: int, min_streak: int = _core.STRETCH_MIN_STREAK):
    """The core reads its stretch rules when a merge starts."""
    saved = _core.STRETCH_MIN_ROWS, _core.STRETCH_MIN_STREAK
    _core.STRETCH_MIN_ROWS, _core.STRETCH_MIN_STREAK = min_rows, min_streak
    try:
        yield
    finally:
        _core.STRETCH_MIN_ROWS, _core.STRETCH_MIN_STREAK = saved


def merged(runs, shapes, schema, key, **kwargs) -> tuple[pa.Table, mergetree.MergeStats]:
    reader = mergetree.merge([build_run(rows, schema, shape) for rows, shape in zip(runs, shapes)], key, **kwargs)
    return reader.read_all(), reader.stats


@pytest.mark.parametrize("algorithm", ["loser-tree", "heap"])
@pytest.mark.parametrize("keys", sorted(KEYS))
@pytest.mark.parametrize("engine", ENGINES)
@SETTINGS
@given(data=st.data())
def test_stretches_equal_model_and_plain_path(data, engine, keys, algorithm):
    key_types = KEYS[keys]
    with_kind = data.draw(st.booleans())
    # without a sequence column, versions of a key are ordered by their runs alone
    with_sequence = data.draw(st.booleans())
    kinds = st.sampled_from([0, 2]) if engine == "first-row" else st.integers(0, 3)
    runs = data.draw(patterned_runs(key_types, with_kind, kinds))
    if not with_sequence:
        runs = [[{k: v for k, v in row.items() if k != "seq"} for row in run] for run in runs]
    shapes = data.draw(run_shapes(len(runs)))
    schema = make_schema(key_types, kind=with_kind, sequence=with_sequence)
    key = [f"k{i}" for i in range(len(key_types))]
    sequence = "seq" if with_sequence else None
    kwargs = dict(engine=engine, algorithm=algorithm, keep_deletes=data.draw(st.booleans()), sequence=sequence,
                  kind="kind" if with_kind else None, batch_size=data.draw(st.sampled_from([1, 3, 65536])))
    if engine not in ("deduplicate", "partial-update"):
        kwargs["keep_deletes"] = False
    expected = merge_model(runs, key, sequence=sequence, kind=kwargs["kind"], engine=engine,
                           keep_deletes=kwargs["keep_deletes"], columns=schema.names)
    min_rows, min_streak = data.draw(st.sampled_from([(1, 1), (1, 2), (2, 1), (3, 2)]))
    with stretch_rules(OFF):
        plain, _ = merged(runs, shapes, schema, key, **kwargs)
    with stretch_rules(min_rows, min_streak):
        fast, stats = merged(runs, shapes, schema, key, **kwargs)
    assert canonical(fast.to_pylist()) == canonical(expected)
    assert fast.to_pylist() == plain.to_pylist()
    assert stats.rows_in == sum(len(r) for r in runs)
    assert all(b.num_rows <= kwargs["batch_size"] for b in fast.to_batches())


def test_model_refuses_what_merge_refuses():
    # the first-row engine refuses retractions in a stretch as it does elsewhere
    schema = make_schema(["int64"], kind=True)
    older = pa.table({"k0": [1, 2], "seq": [0, 0], "kind": pa.array([0, 0], pa.int8()), "v": [1, 2]}, schema=schema)
    newer = pa.table({"k0": list(range(10, 2010)), "seq": [0] * 2000,
                      "kind": pa.array([0] * 1999 + [3], pa.int8()), "v": [0] * 2000}, schema=schema)
    with pytest.raises(ReferenceError_):
        merge_model([older.to_pylist(), newer.to_pylist()], ["k0"], sequence="seq", kind="kind", engine="first-row")
    reader = mergetree.merge([older, newer], "k0", sequence="seq", kind="kind", engine="first-row")
    with pytest.raises(RetractionError, match="run 1 row 1999"):
        reader.read_all()


def disjoint_runs(k: int, rows: int) -> list[pa.Table]:
    return [pa.table({"k": np.arange(i * rows, (i + 1) * rows, dtype=np.int64),
                      "v": np.full(rows, i, dtype=np.int64)}) for i in range(k)]


@pytest.mark.parametrize("algorithm", ["loser-tree", "heap"])
def test_disjoint_runs_leave_as_slices_of_their_input(algorithm):
    runs = disjoint_runs(4, 10_000)
    reader = mergetree.merge(runs, "k", engine="none", algorithm=algorithm)
    out = reader.read_all()
    assert out["k"].to_numpy().tolist() == list(range(40_000))
    # the fast path really ran: all but the rows before a run's first streak went whole
    assert reader.stats.rows_stretched >= 40_000 - 4 * _core.STRETCH_MIN_STREAK
    # and a stretch is the input's memory, not a copy
    inputs = {run["k"].chunks[0].buffers()[1].address for run in runs}
    assert any(chunk.buffers()[1].address in inputs for chunk in out["k"].chunks)


@pytest.mark.parametrize("algorithm", ["loser-tree", "heap"])
def test_a_newer_run_ties_with_a_stretch_end_without_sequences(algorithm):
    # the row after a stretch climbs with run order as its only tie-break: the newer run's
    # version of the shared key comes last (and wins)
    older = pa.table({"k": np.arange(1000, dtype=np.int64), "v": np.zeros(1000, dtype=np.int64)})
    newer = pa.table({"k": np.array([999], dtype=np.int64), "v": np.array([1])})
    out = mergetree.merge([older, newer], "k", algorithm=algorithm).read_all()
    assert out.num_rows == 1000 and out.to_pylist()[-1] == {"k": 999, "v": 1}
    every = mergetree.merge([older, newer], "k", engine="none", algorithm=algorithm).read_all()
    assert every["v"].to_pylist()[-2:] == [0, 1]


def test_stretches_carry_the_merge_schema():
    schema = pa.schema([pa.field("k", pa.int64())])
    runs = [pa.table({"k": np.arange(i * 1000, (i + 1) * 1000, dtype=np.int64)},
                     schema=schema.with_metadata({"run": str(i)})) for i in range(2)]
    reader = mergetree.merge(runs, "k", engine="none")
    assert all(batch.schema.equals(reader.schema, check_metadata=True) for batch in reader)


def test_interleaved_runs_take_no_stretch():
    keys = np.arange(40_000, dtype=np.int64)
    runs = [pa.table({"k": keys[i::4]}) for i in range(4)]
    reader = mergetree.merge(runs, "k", engine="none")
    assert reader.read_all()["k"].to_numpy().tolist() == keys.tolist()
    assert reader.stats.rows_stretched == 0


def test_edges_overlap_merge_only_the_overlap():
    # two runs that share 100 keys at their edges: only those go through the tree
    older = pa.table({"k": np.arange(0, 10_000, dtype=np.int64), "seq": np.zeros(10_000, dtype=np.int64)})
    newer = pa.table({"k": np.arange(9_900, 20_000, dtype=np.int64), "seq": np.ones(10_100, dtype=np.int64)})
    reader = mergetree.merge([older, newer], "k", sequence="seq")
    out = reader.read_all()
    assert out["k"].to_numpy().tolist() == list(range(20_000))
    assert out["seq"].to_numpy()[9_900:10_000].tolist() == [1] * 100
    assert reader.stats.rows_stretched >= 20_100 - 200 - 4 * _core.STRETCH_MIN_STREAK


@pytest.mark.parametrize("key_type", [pa.int64(), pa.string()])
def test_an_unsorted_row_inside_a_stretch_is_reported(key_type):
    values = list(range(1000))
    values[500], values[501] = values[501], values[500]  # out of order in the middle of a stretch
    keys = pa.array([v if key_type == pa.int64() else f"{v:05d}" for v in values], key_type)
    for algorithm in ("loser-tree", "heap"):
        with stretch_rules(1, 1):
            reader = mergetree.merge([pa.table({"k": keys})], "k", engine="none", algorithm=algorithm)
        with pytest.raises(UnsortedRunError, match="row 501"):
            reader.read_all()


@pytest.mark.parametrize("key_type", [pa.int64(), pa.string()])
def test_table_read_merges_only_where_files_overlap(tmp_path, key_type):
    # two commits whose files share 100 keys at their edges: the read merges those
    schema = pa.schema([pa.field("id", key_type, nullable=False), pa.field("v", pa.int64())])
    table = mergetree.Table.create(tmp_path / "t", schema, primary_key="id", options={"write-only": "true"})

    def ids(lo, hi):
        return pa.array([i if key_type == pa.int64() else f"{i:06d}" for i in range(lo, hi)], key_type)

    table.write(pa.table({"id": ids(0, 10_000), "v": np.zeros(10_000, dtype=np.int64)}, schema=schema))
    table.write(pa.table({"id": ids(9_900, 20_000), "v": np.ones(10_100, dtype=np.int64)}, schema=schema))
    out = table.read().sort_by("id")
    assert out["id"].to_pylist() == ids(0, 20_000).to_pylist()
    assert out["v"].to_numpy().tolist() == [0] * 9_900 + [1] * 10_100
    stats = table.last_read
    assert stats.rows_merged == 20_100
    assert stats.rows_stretched >= 20_100 - 200 - 4 * _core.STRETCH_MIN_STREAK - 2 * _core.STRETCH_MIN_ROWS
