"""asv benchmarks of data organization (a small `mergetree bench --layout`).

An append table of 200,000 random rows written as 40 files of 5,000, the layout workload's rows
(``benchmarks/data.py``, ``make_layout_data``: ``id`` unique, ``a`` uniform int64, ``b`` normal
float64, ``z``, ``ts``, a ``category`` and the measures ``amount`` and ``qty``), with a Bloom filter
on ``id``: the time of ``optimize(order=["a", "b"], strategy="hilbert")``, the time of a point
lookup on the Hilbert-clustered table (min/max cannot skip: the Bloom filter does), and the
share of files the layout workload's ``50/50 a|b`` queries (``benchmarks/queries.py``: half a
range on ``a``, half a range on ``b``, 1% of the rows each) read.
"""
import os
import shutil
import tempfile

import numpy as np

from benchmarks import data, queries
from mergetree import Table

ROWS = 200_000
FILES = 40
QUERIES = 100
LOOKUPS = 20
SCHEMA = data.LAYOUT_SCHEMA
OPTIONS = {"file-index.bloom-filter.columns": "id", "file-index.bloom-filter.fpp": "0.01"}


def make_rows(rows=ROWS, seed=17):
    """The layout workload's rows, to be written as FILES files."""
    return data.make_layout_data(rows, FILES, seed)


def target_file_size(rows):
    return int(rows.table.nbytes / FILES * 1.01)  # a little slack: FILES files, not FILES + 1


def write_unorganized(path, rows):
    """FILES writes of random rows: every file spans the whole range of every column."""
    table = Table.create(path, SCHEMA, options={**OPTIONS, "target-file-size": str(int(target_file_size(rows) * 1.05))})
    for part in data.file_slices(rows):
        table.write(part)
    return table


def workload_50_50(rows, count=QUERIES, seed=5):
    """Half a range on a, half a range on b, each selecting about 1% of the rows (filters)."""
    return [q.filter for q in queries.make_queries(rows, queries.W_A_B, count, seed)]


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
        ids = self.rows.columns["id"]
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
