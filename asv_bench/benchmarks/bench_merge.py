"""asv benchmarks of mergetree.merge, with Python's heapq.merge as the baseline.

Every benchmark merges K sorted runs that together hold about 200,000 rows.
Each run draws its keys without replacement from a key space twice its size,
so a key is found in about half of the runs.  Payload columns are 20% null so
the partial-update engine has gaps to fill.
"""
import heapq
from operator import itemgetter

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import mergetree

ROWS = 200_000
CHUNK_ROWS = 65_536
STRING_KEY_LENGTH = 128
RUN_COUNTS = [2, 8, 32, 128]
ENGINES = ["deduplicate", "first-row", "partial-update", "aggregate", "none"]
ALGORITHMS = ["loser-tree", "heap"]
KEY_TYPES = ["int64", "string128", "prefix128"]  # prefix128: the first 100 characters shared
SHARED_PREFIX = b"https://shop.example.com/catalog/".ljust(100, b"x")
AGGREGATIONS = {"v_int": "sum", "v_float": "max"}
_ALPHABET = np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", dtype=np.uint8)


def _int_key_space(rng, size):
    return pa.array(np.arange(size, dtype=np.int64))


def _string_key_space(rng, size, prefix=b""):
    letters = _ALPHABET[rng.integers(0, len(_ALPHABET), size=(size, STRING_KEY_LENGTH), dtype=np.uint8)]
    letters[:, :len(prefix)] = np.frombuffer(prefix, dtype=np.uint8)
    ordered = np.sort(letters.view(f"S{STRING_KEY_LENGTH}").ravel())
    offsets = np.arange(0, (size + 1) * STRING_KEY_LENGTH, STRING_KEY_LENGTH, dtype=np.int64)
    buffers = [None, pa.py_buffer(offsets), pa.py_buffer(ordered.tobytes())]
    return pc.cast(pa.Array.from_buffers(pa.large_string(), size, buffers), pa.string())


def _with_nulls(rng, values):
    return pa.array(values, mask=rng.random(len(values)) < 0.2)


def make_runs(rows, runs, key_type, seed=7):
    """``runs`` sorted pa.Tables (chunks of 65,536 rows) with key ``k`` and sequence ``seq``."""
    rng = np.random.default_rng(seed)
    per_run = max(rows // runs, 1)
    if key_type == "int64":
        space = _int_key_space(rng, 2 * per_run)
    else:
        space = _string_key_space(rng, 2 * per_run, SHARED_PREFIX if key_type == "prefix128" else b"")
    tables = []
    for index in range(runs):
        picked = np.sort(rng.choice(len(space), size=per_run, replace=False))
        table = pa.table({
            "k": space.take(pa.array(picked)),
            "seq": pa.array(np.arange(index * per_run, (index + 1) * per_run, dtype=np.int64)),
            "v_int": _with_nulls(rng, rng.integers(0, 1000, size=per_run)),
            "v_float": _with_nulls(rng, rng.random(per_run)),
        })
        tables.append(pa.Table.from_batches(table.to_batches(max_chunksize=CHUNK_ROWS), table.schema))
    return tables


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
