"""asv benchmarks of data organization (a small `mergetree bench --layout`).

An append table of 200,000 random rows written as 40 files of 5,000 (``id`` unique, ``a``
uniform int64, ``b`` normal float64, a ``category`` and an ``amount``), with a Bloom filter on
``id``: the time of ``optimize(order=["a", "b"], strategy="hilbert")``, the time of a point
lookup on the Hilbert-clustered table (min/max cannot skip: the Bloom filter does), and the
share of files a 50% ``a`` range / 50% ``b`` range workload (1% of the rows each) reads.
"""
import os
import shutil
import tempfile

import numpy as np
import pyarrow as pa

from mergetree.table import Table

ROWS = 200_000
FILES = 40
QUERIES = 100
LOOKUPS = 20
A_SPAN = 1_000_000_000
SCHEMA = pa.schema([("id", pa.int64()), ("a", pa.int64()), ("b", pa.float64()), ("category", pa.string()),
                    ("amount", pa.float64())])
OPTIONS = {"file-index.bloom-filter.columns": "id", "file-index.bloom-filter.fpp": "0.01"}


def make_rows(rows=ROWS, seed=17):
    rng = np.random.default_rng(seed)
    return pa.table({
        "id": pa.array(rng.permutation(rows).astype(np.int64) * 2),
        "a": pa.array(rng.integers(0, A_SPAN, rows, dtype=np.int64)),
        "b": pa.array(rng.normal(0.0, 1.0, rows)),
        "category": pa.array([f"cat-{i:02d}" for i in rng.integers(0, 20, rows)]),
        "amount": pa.array(rng.lognormal(3.0, 1.0, rows)),
    }, schema=SCHEMA)


def target_file_size(rows):
    return int(rows.nbytes / FILES * 1.01)  # a little slack: FILES files, not FILES + 1


def write_unorganized(path, rows):
    """FILES writes of random rows: every file spans the whole range of every column."""
    table = Table.create(path, SCHEMA, options={**OPTIONS, "target-file-size": str(int(target_file_size(rows) * 1.05))})
    per = rows.num_rows // FILES
    for i in range(FILES):
        table.write(rows.slice(i * per, per))
    return table


def workload_50_50(rows, count=QUERIES, seed=5):
    """Half a range on a, half a range on b, each selecting about 1% of the rows."""
    rng = np.random.default_rng(seed)
    b_sorted = np.sort(rows.column("b").to_numpy())
    queries = []
    for _ in range(count):
        if rng.random() < 0.5:
            low = int(rng.integers(0, A_SPAN * 99 // 100))
            queries.append([("a", ">=", low), ("a", "<", low + A_SPAN // 100)])
        else:
            q = rng.uniform(0.0, 0.99)
            queries.append([("b", ">=", float(b_sorted[int(q * (len(b_sorted) - 1))])),
                            ("b", "<", float(b_sorted[int((q + 0.01) * (len(b_sorted) - 1))]))])
    return queries


class _TableDirectory:
    """Each setup gets a fresh directory, removed in teardown."""

    def _fresh(self):
        self.root = tempfile.mkdtemp(prefix="mergetree-asv-layout-")
        return os.path.join(self.root, "t")

    def teardown(self, *args):
        shutil.rmtree(self.root, ignore_errors=True)


class LayoutOptimize(_TableDirectory):
    """optimize(hilbert) of the unorganized table: read, rank, curve keys, sort, rewrite 40 files."""

    number = 1  # optimize changes the table: setup writes a fresh one before each timed call
    repeat = 5
    timeout = 300

    def setup(self):
        self.rows = make_rows()
        self.table = write_unorganized(self._fresh(), self.rows)

    def time_optimize_hilbert(self):
        self.table.optimize(order=["a", "b"], strategy="hilbert", target_file_size=target_file_size(self.rows))


class LayoutRead(_TableDirectory):
    """Reads of the Hilbert-clustered table (with its Bloom filter on id)."""

    timeout = 300

    def setup(self):
        self.rows = make_rows()
        self.table = write_unorganized(self._fresh(), self.rows)
        self.table.optimize(order=["a", "b"], strategy="hilbert", target_file_size=target_file_size(self.rows))
        ids = self.rows.column("id").to_numpy()
        self.keys = [int(k) for k in np.random.default_rng(3).choice(ids, size=LOOKUPS, replace=False)]
        self.queries = workload_50_50(self.rows)
        self.calls = 0

    def time_point_lookup_bloom(self):
        """One read(filter=("id", "=", k)); successive calls cycle through LOOKUPS existing keys."""
        self.calls += 1
        self.table.read(filter=("id", "=", self.keys[self.calls % len(self.keys)]))

    def track_point_lookup_files_percent(self):
        """Mean % of the files a point lookup reads (min/max cannot skip; the Bloom filter does)."""
        read = 0
        for key in self.keys:
            self.table.read(filter=("id", "=", key))
            read += self.table.last_read.files_read / self.table.last_read.files_total
        return 100 * read / len(self.keys)

    track_point_lookup_files_percent.unit = "% of files"

    def track_files_scanned_50_50(self):
        """Mean % of the files a query of the 50% a / 50% b workload reads."""
        read = 0
        for query in self.queries:
            plan = self.table.plan(query)
            read += len(plan.files) / plan.files_total
        return 100 * read / len(self.queries)

    track_files_scanned_50_50.unit = "% of files"
