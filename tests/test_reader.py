"""MergeReader as an Arrow stream, its stats, and merges in concurrent threads."""
from __future__ import annotations

import threading

import numpy as np
import pyarrow as pa

import mergetree


def runs(seed: int, k: int = 4, n: int = 5000) -> list[pa.Table]:
    rng = np.random.default_rng(seed)
    return [pa.table({"k": np.sort(rng.choice(3 * n, n, replace=False)), "seq": np.full(n, r),
                      "v": rng.random(n)}) for r in range(k)]


def test_reader_is_an_arrow_stream():
    data = runs(1)
    expected = mergetree.merge(data, "k", sequence="seq").read_all()
    via_capsule = pa.RecordBatchReader.from_stream(mergetree.merge(data, "k", sequence="seq"))
    assert via_capsule.schema == data[0].schema
    assert via_capsule.read_all().equals(expected)
    assert pa.table(mergetree.merge(data, "k", sequence="seq")).equals(expected)


def test_iteration_yields_batches_and_stats_grow():
    reader = mergetree.merge(runs(2), "k", sequence="seq", batch_size=1000)
    assert reader.stats.rows_out == 0
    seen = 0
    for batch in reader:
        assert isinstance(batch, pa.RecordBatch) and 0 < batch.num_rows <= 1000
        seen += batch.num_rows
        assert reader.stats.rows_out == seen  # stats are live during the merge
    assert reader.stats.rows_in == 20_000


def test_concurrent_merges_in_threads_are_independent_and_correct():
    inputs = [runs(seed) for seed in range(6)]
    expected = [mergetree.merge(r, "k", sequence="seq").read_all() for r in inputs]
    results: dict[int, pa.Table] = {}

    def work(i: int) -> None:
        results[i] = mergetree.merge(inputs[i], "k", sequence="seq", batch_size=512).read_all()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(results[i].equals(expected[i]) for i in range(len(inputs)))
