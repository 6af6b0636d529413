"""asv benchmarks of mergetree.merge, with Python's heapq.merge as the baseline.

Every benchmark merges K sorted runs that together hold about 200,000 rows, made by the
generator of `mergetree bench` (``benchmarks/data.py``, ``sorted_runs``): each run draws its keys
without replacement from a key space twice its size, so a key is found in about half of the
runs; columns ``k``, ``seq``, ``v_int``, ``v_float`` and ``v_str``.  ``v_int`` and ``v_float`` are
20% null so the partial-update engine has gaps to fill.
"""
import heapq
from operator import itemgetter

import pyarrow as pa

import mergetree
from benchmarks import data

ROWS = 200_000
RUN_COUNTS = [2, 8, 32, 128]
ENGINES = ["deduplicate", "first-row", "partial-update", "aggregate", "none"]
ALGORITHMS = ["loser-tree", "heap"]
KEY_TYPES = ["int64", "string128", "prefix128"]  # prefix128: the first 100 characters shared
AGGREGATIONS = {"v_int": "sum", "v_float": "max"}
NULL_FRACTION = 0.2


def make_runs(rows, runs, key_type, seed=7):
    """``runs`` sorted pa.Tables (chunks of 65,536 rows) with key ``k`` and sequence ``seq``."""
    return data.sorted_runs(key_type, rows, runs, seed=seed, null_fraction=NULL_FRACTION)


def merge_all(runs, engine="deduplicate", algorithm="loser-tree"):
    aggregations = AGGREGATIONS if engine == "aggregate" else None
    reader = mergetree.merge(runs, "k", sequence="seq", engine=engine, aggregations=aggregations,
                             algorithm=algorithm)
    return reader.read_all()


def as_row_lists(runs):
    return [list(zip(*(column.to_pylist() for column in run.columns))) for run in runs]


def heapq_newest_per_key(row_lists):
    """Newest row of every key with heapq.merge (rows are (k, seq, ...) tuples)."""
    newest = []
    for row in heapq.merge(*row_lists, key=itemgetter(0, 1)):
        if newest and newest[-1][0] == row[0]:
            newest[-1] = row
        else:
            newest.append(row)
    return newest


class MergeEngines:
    """Every engine and both tree shapes, over K and both key types."""

    params = (KEY_TYPES, RUN_COUNTS, ENGINES, ALGORITHMS)
    param_names = ("key", "runs", "engine", "algorithm")
    timeout = 120

    def setup(self, key_type, runs, engine, algorithm):
        self.runs = make_runs(ROWS, runs, key_type)

    def time_merge(self, key_type, runs, engine, algorithm):
        merge_all(self.runs, engine, algorithm)

    def peakmem_merge(self, key_type, runs, engine, algorithm):
        merge_all(self.runs, engine, algorithm)


class Streaming:
    """Deduplicate, iterating over batches without collecting a table."""

    params = (KEY_TYPES, [8, 128])
    param_names = ("key", "runs")

    def setup(self, key_type, runs):
        self.runs = make_runs(ROWS, runs, key_type)

    def time_iterate_batches(self, key_type, runs):
        for _ in mergetree.merge(self.runs, "k", sequence="seq"):
            pass

    def track_key_comparisons_per_row(self, key_type, runs):
        reader = mergetree.merge(self.runs, "k", sequence="seq")
        reader.read_all()
        return reader.stats.key_comparisons / max(reader.stats.rows_in, 1)

    track_key_comparisons_per_row.unit = "comparisons per input row"


class HeapqBaseline:
    """Python's heapq.merge doing the deduplicate merge on the same runs."""

    params = (KEY_TYPES, RUN_COUNTS)
    param_names = ("key", "runs")
    timeout = 300

    def setup(self, key_type, runs):
        self.runs = make_runs(ROWS, runs, key_type)
        self.row_lists = as_row_lists(self.runs)

    def time_heapq_merge_tuples(self, key_type, runs):
        """The merge alone, on rows already converted to Python tuples."""
        heapq_newest_per_key(self.row_lists)

    def time_heapq_arrow_to_arrow(self, key_type, runs):
        """Arrow runs in, Arrow table out, as mergetree.merge is measured."""
        newest = heapq_newest_per_key(as_row_lists(self.runs))
        pa.table(list(zip(*newest)), schema=self.runs[0].schema)

    def peakmem_heapq_arrow_to_arrow(self, key_type, runs):
        newest = heapq_newest_per_key(as_row_lists(self.runs))
        pa.table(list(zip(*newest)), schema=self.runs[0].schema)


class Threads:
    """Deduplicate of 8 runs in 1, 2 and all threads (``merge(threads=N)``)."""

    params = (["int64", "string128"], [1, 2, 0])
    param_names = ("key", "threads")

    def setup(self, key_type, threads):
        self.runs = make_runs(4 * ROWS, 8, key_type)

    def time_merge(self, key_type, threads):
        mergetree.merge(self.runs, "k", sequence="seq", threads=threads).read_all()
