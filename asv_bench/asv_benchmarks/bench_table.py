"""asv benchmarks of the primary-key table layer (a small `mergetree bench --table`).

200,000 upserts in 5 commits of 40,000 distinct random keys each (drawn from a key space of
80,000, so a commit touches half of it; the generator of `mergetree bench --table`,
``benchmarks/data.py``) into a 4-bucket table written with ``write-only``:
every commit stays a sorted run of its own in every bucket, so reads merge 5 runs per bucket.
"""
import os
import shutil
import tempfile

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from benchmarks import data
from mergetree import Table

UPSERTS = 200_000
COMMITS = 5
KEYS = 80_000
BUCKETS = 4
LOOKUPS = 20
SCHEMA = data.TABLE_SCHEMA


def make_commits(upserts=UPSERTS, commits=COMMITS, keys=KEYS, seed=11):
    """The table workload's upserts (``benchmarks/data.py``, ``table_commits``)."""
    return data.table_commits(upserts, keys, commits, seed)


def write_table(path, commits):
    table = Table.create(path, SCHEMA, primary_key=["id"], buckets=BUCKETS, options={"write-only": "true"})
    for commit in commits:
        table.write(commit)
    return table


class _TableDirectory:
    """Each setup gets a fresh directory, removed in teardown."""

    def _fresh(self):
        self.root = tempfile.mkdtemp(prefix="mergetree-asv-")
        return os.path.join(self.root, "t")

    def teardown(self, *args):
        shutil.rmtree(self.root, ignore_errors=True)


class TableWrite(_TableDirectory):
    """Five commits into an empty table (with compaction off)."""

    number = 1  # every timed call needs an empty table: setup runs before each
    repeat = 5
    timeout = 300

    def setup(self):
        self.commits = make_commits()
        self.path = self._fresh()

    def time_write(self):
        write_table(self.path, self.commits)


class TableRead(_TableDirectory):
    """Reads of the unmerged table: 5 sorted runs per bucket."""

    timeout = 300

    def setup(self):
        self.table = write_table(self._fresh(), make_commits())
        self.keys = [int(k) for k in np.random.default_rng(3).choice(KEYS, size=LOOKUPS, replace=False)]
        self.calls = 0

    def time_read_unmerged(self):
        self.table.read()

    def peakmem_read(self):
        self.table.read()

    def time_read_sorted(self):
        """Every row in key order across the buckets (the buckets' runs merged as they stream)."""
        self.table.read(sorted=True)

    def peakmem_scan_sorted(self):
        """A sorted scan read to its end a batch at a time: memory is batches, not the table."""
        for _ in self.table.scan(sorted=True):
            pass

    def time_point_lookup(self):
        """One read(filter=("id", "=", k)); successive calls cycle through LOOKUPS random keys."""
        self.calls += 1
        self.table.read(filter=("id", "=", self.keys[self.calls % len(self.keys)]))

    def track_point_lookup_ms(self):
        """Mean latency of a lookup over the LOOKUPS random keys."""
        import time

        start = time.perf_counter()
        for key in self.keys:
            self.table.read(filter=("id", "=", key))
        return (time.perf_counter() - start) * 1e3 / len(self.keys)

    track_point_lookup_ms.unit = "ms per lookup"


class TableCompact(_TableDirectory):
    """A full compaction of the 5 unmerged runs in every bucket."""

    number = 1  # compaction changes the table: setup writes a fresh one before each timed call
    repeat = 5
    timeout = 300

    def setup(self):
        self.table = write_table(self._fresh(), make_commits())

    def time_compact_full(self):
        self.table.compact(full=True)


def stream_batches(rows, batch_rows=16_384, seed=5):
    """A generated stream of upserts (the input is never whole in memory)."""
    rng = np.random.default_rng(seed)
    for start in range(0, rows, batch_rows):
        ids = rng.integers(0, rows, size=min(batch_rows, rows - start), dtype=np.int64)
        yield pa.record_batch([pa.array(ids), pa.array(ids * 3), pa.array(rng.random(len(ids))),
                               pc.binary_join_element_wise("s-", pc.cast(pa.array(ids), pa.string()), "")],
                              schema=SCHEMA)


class StreamingWrite(_TableDirectory):
    """One streamed write of 1,000,000 rows (about 35 MB as Arrow) through an 8 MB write
    buffer: time, and peak memory, which should stay about the buffer above the baseline."""

    number = 1
    repeat = 3
    timeout = 300
    ROWS = 1_000_000

    def setup(self):
        self.path = self._fresh()
        self.table = Table.create(self.path, SCHEMA, primary_key=["id"], buckets=2,
                                  options={"write-only": "true", "write-buffer-size": "8 mb"})

    def time_stream_write(self):
        self.table.write(stream_batches(self.ROWS))

    def peakmem_stream_write(self):
        self.table.write(stream_batches(self.ROWS))


class BucketJoin(_TableDirectory):
    """The work of `mergetree.spark.bucket_join`'s tasks without Spark: two unmerged tables of 4
    and 8 buckets, each bucket of the first joined (inner, on id) with buckets i and i+4 of the
    second, streamed as row selections (only joined rows copied); against reading both tables
    whole and joining them with `join_sorted` per bucket pair."""

    timeout = 300

    def setup(self):
        root = self._fresh()
        self.left = write_table(root + "-left", make_commits(seed=11))
        right = Table.create(root + "-right", SCHEMA, primary_key=["id"], buckets=2 * BUCKETS,
                             options={"write-only": "true"})
        for commit in make_commits(seed=12):
            right.write(commit)
        self.right = right
        self.plans = [{b.bucket: b for b in t.plan().buckets} for t in (self.left, self.right)]

    def _sides(self, i):
        return [self.plans[0][i]], [self.plans[1][b] for b in (i, i + BUCKETS) if b in self.plans[1]]

    def time_join_selections(self):
        from mergetree.merge.join import join_selections
        from mergetree.table.read import combine_buckets, select_bucket
        for i in range(BUCKETS):
            left, right = self._sides(i)
            streams = [select_bucket(t.directory, combine_buckets(p), SCHEMA.names)
                       for t, p in ((self.left, left), (self.right, right))]
            for _ in join_selections(streams[0], streams[1], "id", "inner", SCHEMA, SCHEMA):
                pass

    def time_read_then_join_sorted(self):
        from mergetree.merge.join import join_sorted
        from mergetree.table.read import combine_buckets, read_bucket
        for i in range(BUCKETS):
            left, right = self._sides(i)
            tables = [pa.Table.from_batches(list(read_bucket(t.directory, combine_buckets(p), SCHEMA.names,
                                                             None, None)), schema=t.schema)
                      for t, p in ((self.left, left), (self.right, right))]
            join_sorted(tables[0], tables[1], "id", "inner")


def _ids_and_names(seed: int, n: int = 1_000_000) -> tuple[pa.Array, pa.Array]:
    """`n` random 40-bit ids and as many ``customer-<number>`` strings (the Paimon benchmarks' keys)."""
    rng = np.random.default_rng(seed)
    ints = pa.array(rng.integers(0, 1 << 40, n))
    strings = pc.binary_join_element_wise("customer-", pc.cast(pa.array(rng.integers(0, 1 << 30, n)), pa.string()),
                                          "")
    return ints, strings


class PaimonBucketHash:
    """Paimon's default bucket function (`mergetree.codec.buckets.buckets_of`: each row's
    BinaryRow laid out and Murmur3-hashed in the compiled core) over 1M rows: the placement
    every write into a fixed-bucket Paimon table pays, per key shape."""

    params = (["bigint", "string", "int+string"],)
    param_names = ("key",)

    def setup(self, key):
        from mergetree.codec.types import parse_type
        ints, strings = _ids_and_names(3)
        self.columns, self.types = {
            "bigint": ([ints], [parse_type("BIGINT")]),
            "string": ([strings], [parse_type("STRING")]),
            "int+string": ([pc.cast(pc.bit_wise_and(ints, 1023), pa.int32()), strings],
                           [parse_type("INT"), parse_type("STRING")]),
        }[key]

    def time_buckets_of(self, key):
        from mergetree.codec.buckets import buckets_of
        buckets_of(self.columns, self.types, 16)


class PaimonFileIndex:
    """Paimon's file-index encoders (`mergetree.codec.file_index`) over one data file's column
    of 1M rows: what a write into a table declaring ``file-index.bloom-filter.columns`` or
    ``file-index.bitmap.columns`` pays per file (Bloom: every value hashed; bitmap: one Roaring
    bitmap per distinct value, so on a low-cardinality column)."""

    params = (["bloom-bigint", "bloom-string", "bitmap-int-100"],)
    param_names = ("index",)

    def setup(self, index):
        from mergetree.codec.types import parse_type
        ints, strings = _ids_and_names(5)
        self.values, self.type = {
            "bloom-bigint": (ints, parse_type("BIGINT")),
            "bloom-string": (strings, parse_type("STRING")),
            "bitmap-int-100": (pa.array(np.random.default_rng(5).integers(0, 100, len(ints)), pa.int32()),
                               parse_type("INT")),
        }[index]
        self.kind = index.split("-")[0]

    def time_encode(self, index):
        from mergetree.codec.file_index import encode_bitmap, encode_bloom
        if self.kind == "bloom":
            encode_bloom(self.values, self.type)
        else:
            encode_bitmap(self.values, self.type)
