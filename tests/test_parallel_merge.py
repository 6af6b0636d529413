"""merge(threads=N): the same batches as threads=1 — same rows, same batch boundaries,
in key order — for every engine and both algorithms, with skewed keys (one range holds
almost everything), string and composite keys, nulls, empty runs and unsorted input."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import build_run, make_schema, run_shapes, sorted_runs

import mergetree
from mergetree.errors import RetractionError, UnsortedRunError
from mergetree.merge import reader as merge_reader

ENGINES = ["deduplicate", "first-row", "none", "partial-update", "aggregate"]


@pytest.fixture(autouse=True)
def small_ranges(monkeypatch):
    # split even tiny merges, so the properties exercise the cuts
    monkeypatch.setattr(merge_reader, "MIN_ROWS_PER_THREAD", 1)


def batches_of(runs, key, **kwargs):
    reader = mergetree.merge(runs, key, **kwargs)
    return reader, list(reader)


@pytest.mark.parametrize("algorithm", ["loser-tree", "heap"])
@pytest.mark.parametrize("engine", ENGINES)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_threads_give_the_same_batches(data, engine, algorithm):
    type_names = data.draw(st.sampled_from([["int64"], ["string"], ["int32", "string"]]))
    with_kind = engine != "first-row" and data.draw(st.booleans())
    runs_rows = data.draw(sorted_runs(type_names, with_kind=with_kind, max_runs=8))
    shapes = data.draw(run_shapes(len(runs_rows)))
    schema = make_schema(type_names, kind=with_kind)
    key = [f"k{i}" for i in range(len(type_names))]
    kwargs = dict(sequence="seq", kind="kind" if with_kind else None, engine=engine, algorithm=algorithm,
                  batch_size=data.draw(st.sampled_from([1, 3, 65536])))
    threads = data.draw(st.sampled_from([2, 3, 5]))
    outcomes = []
    for n in (1, threads):
        runs = [build_run(rows, schema, shape) for rows, shape in zip(runs_rows, shapes)]
        try:
            reader, batches = batches_of(runs, key, threads=n, **kwargs)
            outcomes.append(("ok", [b.to_pylist() for b in batches], reader.stats.rows_in, reader.stats.rows_out))
        except RetractionError as error:
            outcomes.append(("retraction", error.run, error.row))
    assert outcomes[0] == outcomes[1]


@pytest.mark.parametrize("engine", ENGINES)
def test_skewed_keys_one_range_holds_almost_everything(engine):
    # 300 runs hold the one key 7 and one run spreads over 0..29: most rows (and samples) are
    # key 7, a group no cut can split, so the cuts pile up at 7 and one range holds almost all
    runs = [pa.table({"k": np.array([7], np.int64), "seq": np.array([r], np.int64), "v": np.array([r], np.int64)})
            for r in range(300)]
    runs.append(pa.table({"k": np.arange(30, dtype=np.int64), "seq": np.full(30, 999, np.int64),
                          "v": np.ones(30, np.int64)}))
    _, one = batches_of(runs, "k", sequence="seq", engine=engine, batch_size=500, threads=1)
    many_reader, many = batches_of(runs, "k", sequence="seq", engine=engine, batch_size=500, threads=4)
    parts = [p.stats.rows_in for p in many_reader._parts]
    assert max(parts) >= 0.9 * sum(parts)   # the skew really happened
    assert [b.num_rows for b in one] == [b.num_rows for b in many]
    assert pa.Table.from_batches(one).equals(pa.Table.from_batches(many))


def test_unsorted_runs_are_caught_at_the_cuts():
    # each piece is sorted on its own; only the seam between them is not
    run = pa.table({"k": np.concatenate([np.arange(0, 20_000, 2), np.arange(1, 20_000, 2)]).astype(np.int64)})
    other = pa.table({"k": np.arange(0, 20_000, 3, dtype=np.int64)})
    with pytest.raises(UnsortedRunError) as one:
        mergetree.merge([run, other], "k").read_all()
    with pytest.raises(UnsortedRunError) as many:
        mergetree.merge([run, other], "k", threads=2).read_all()
    assert (many.value.run, many.value.row) == (one.value.run, one.value.row) == (0, 10_000)


def test_streams_and_empty_runs():
    schema = pa.schema([("k", pa.int64())])
    runs = [pa.RecordBatchReader.from_batches(schema, iter([pa.record_batch({"k": np.arange(5000)})])),
            [], (b for b in [pa.record_batch({"k": np.arange(2500, 7000)})]), schema.empty_table()]
    out = mergetree.merge(runs, "k", threads=0).read_all()
    assert out["k"].to_pylist() == list(range(7000))


@pytest.mark.parametrize("bad", [-1, 1.5, True, "2"])
def test_threads_must_be_a_count(bad):
    with pytest.raises(mergetree.InvalidArgumentError):
        mergetree.merge([pa.table({"k": [1]})], "k", threads=bad)


@pytest.mark.parametrize("engine", ["deduplicate", "partial-update", "aggregate"])
def test_a_one_bucket_table_read_splits_its_merge_and_reads_the_same(tmp_path, engine):
    schema = pa.schema([("id", pa.int64()), ("a", pa.int64()), ("b", pa.string())])
    options = {"write-only": "true"}
    if engine == "aggregate":
        options["fields.a.aggregate-function"] = "sum"
    t = mergetree.Table.create(tmp_path / "t", schema, primary_key="id", buckets=1, merge_engine=engine,
                               options=options)
    rng = np.random.default_rng(3)
    for commit in range(3):
        ids = np.sort(rng.choice(60_000, 30_000, replace=False))
        b = pa.array([None if i % 7 == commit else f"v{commit}-{i}" for i in ids])
        t.write(pa.table({"id": ids, "a": np.full(len(ids), commit + 1), "b": b}, schema=schema))
    one = t.read(threads=1)
    two = t.read(threads=2)     # one bucket, two threads: the merge splits by key range
    assert two.equals(one)
    assert t.read(columns=["b"], threads=2).equals(one.select(["b"]))
