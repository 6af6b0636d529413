"""``mergetree bench --table``: the primary-key table workload, against Apache Paimon from Python.

The workload: ``upserts`` rows written to a ``buckets``-bucket primary-key table in
``commits`` commits, each commit a random half of a key space of ``keys`` int64 ids
(in random order), with an int64, a float64 and a string payload column.  mergetree
writes with ``write-only`` so no compaction runs during the writes and every commit
stays a sorted run of its own in every bucket.  Then, on that table:

* a full read (merge-on-read over every unmerged sorted run);
* point lookups ``read(filter=("id", "=", k))`` for random keys (median and p95 latency);
* a full compaction (input rows per second), measured against the same files simply
  read with ``pq.read_table`` and written back with ``pq.write_table`` (the Parquet
  I/O bound);
* a full read of the compacted table (and the lookups again).

The same upserts go through ``pypaimon`` (its Python writer, and its Rust writer when
the ``write.native.enabled`` option is there and ``pypaimon_rust`` is installed); the
tables it wrote are read by pypaimon (merge-on-read in Python, and with
``read.native.enabled``) and by ``pypaimon_rust`` directly.  Neither can compact.
Their tables are written with ``file.compression=snappy``, as mergetree's files are,
so every reader decodes the same kind of Parquet (Paimon's default is zstd).

Every read's answer is compared with the answer computed independently from the input
(the newest version of every key): the same row count, the same key set and the same
values.  A reader that disagrees is reported as wrong and gets no ratio; a peer that
is not installed or fails is reported as such.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from rich.console import Group
from rich.markup import escape
from rich.text import Text

from mergetree import Table
from mergetree.cli import render

from . import timing
from .data import TABLE_KEY, TABLE_SCHEMA, TABLE_SEED, newest_rows, table_commits
from .report import compare_tables, installed_version, json_ready, rate_text

__all__ = ["TableResult", "TableWorkload", "format_table_results", "make_table_workload", "plot_table_results",
           "run_table_bench", "table_ratios"]

DEFAULT_UPSERTS = 10_000_000
DEFAULT_KEYS = 2_000_000
DEFAULT_COMMITS = 10
DEFAULT_BUCKETS = 4
DEFAULT_LOOKUPS = 200
QUICK_FACTOR = 10
SEED = TABLE_SEED

KEY = TABLE_KEY
SCHEMA = TABLE_SCHEMA
PAIMON_DATABASE = "bench"
PAIMON_COMPRESSION = "snappy"  # mergetree's data files are snappy; Paimon's default is zstd

MERGETREE = "mergetree"
PYPAIMON = "pypaimon"
PYPAIMON_NATIVE_WRITE = "pypaimon (write.native.enabled)"
PYPAIMON_NATIVE_READ = "pypaimon (read.native.enabled)"
PYPAIMON_RUST = "pypaimon-rust"
PYPAIMON_RUST_ON_NATIVE = "pypaimon-rust (Rust-written table)"
PYARROW_REWRITE = "pyarrow read+write"
READ_THEN_PYARROW_SORT = "read, then pyarrow sort_by"
READ_THEN_POLARS_SORT = "read, then polars sort"

WRITE = "write"
READ_UNMERGED = "read (unmerged runs)"
LOOKUP_UNMERGED = "point lookup (unmerged)"
COMPACT = "compact (full)"
REWRITE = "rewrite the same files"
READ_COMPACTED = "read (compacted)"
LOOKUP_COMPACTED = "point lookup (compacted)"
READ_SORTED = "read in key order (compacted)"

TARGETS = {  # ratio name -> minimum the issue asks for
    "read_vs_pypaimon": 30.0,
    "read_vs_pypaimon_rust": 1.5,
    "read_vs_pypaimon_native_read": 1.5,  # pypaimon_rust's reader too, over split groups in parallel threads
    "write_vs_pypaimon_native": 1.0,
    "compaction_vs_pyarrow_rewrite": 0.70,
}


# ---------------------------------------------------------------- workload


@dataclass
class TableWorkload:
    commits: list  # of pa.Table in SCHEMA, one per commit, rows in random key order
    keys: int      # size of the key space: ids are 0 .. keys - 1
    buckets: int
    _expected: pa.Table | None = None

    @property
    def upserts(self) -> int:
        return sum(c.num_rows for c in self.commits)

    def expected(self) -> pa.Table:
        """The newest version of every key, ascending by id, computed without mergetree."""
        if self._expected is None:
            self._expected = newest_rows(self.commits, KEY)
        return self._expected


def check_sizes(upserts: int, keys: int, commits: int, buckets: int) -> None:
    """ValueError unless every commit can hold ``upserts / commits`` distinct keys."""
    if commits < 1 or buckets < 1 or keys < 1 or upserts < commits:
        raise ValueError("the table workload needs commits, buckets, keys >= 1 and upserts >= commits")
    if upserts // commits > keys:
        raise ValueError(f"{upserts // commits:,} upserts per commit do not fit in {keys:,} distinct keys")


def quick_sizes(upserts: int, keys: int, lookups: int) -> tuple[int, int, int]:
    """The sizes ``--quick`` runs: upserts and keys divided by 10, lookups by 4."""
    return max(upserts // QUICK_FACTOR, 1), max(keys // QUICK_FACTOR, 1), max(lookups // 4, 1)


def make_table_workload(upserts: int = DEFAULT_UPSERTS, keys: int = DEFAULT_KEYS, commits: int = DEFAULT_COMMITS,
                        buckets: int = DEFAULT_BUCKETS, seed: int = SEED) -> TableWorkload:
    """``commits`` commits of ``upserts / commits`` distinct random keys each (a random half
    of the key space with the defaults), payload values that differ in every commit
    (``benchmarks/data.py``, ``table_commits``)."""
    check_sizes(upserts, keys, commits, buckets)
    return TableWorkload(table_commits(upserts, keys, commits, seed), keys, buckets)


# ---------------------------------------------------------------- results


@dataclass
class TableResult:
    engine: str
    step: str
    rows_in: int = 0      # rows read from data files, upserts written, compaction input rows
    rows_out: int = 0     # rows returned / written
    seconds: float = float("nan")
    cpu_seconds: float = float("nan")  # process CPU time (all threads) of the timed run
    check: str = "ok"     # "ok", "unavailable: ...", "failed: ...", "wrong: ..."
    notes: list = field(default_factory=list)
    latency_ms: dict | None = None  # point lookups: median, p95, min, max

    @property
    def ok(self) -> bool:
        return self.check == "ok"

    @property
    def rows_per_second(self) -> float:
        return self.rows_in / self.seconds if self.ok and self.seconds > 0 and not self.latency_ms else float("nan")

    @property
    def rows_per_cpu_second(self) -> float:
        """Rows per second of process CPU time: compares one-thread and many-thread readers."""
        usable = self.ok and self.cpu_seconds > 0 and not self.latency_ms
        return self.rows_in / self.cpu_seconds if usable else float("nan")

    def to_dict(self) -> dict:
        """JSON-ready: NaN (not measured) becomes None."""
        out = {**asdict(self), "rows_per_second": self.rows_per_second,
               "rows_per_cpu_second": self.rows_per_cpu_second}
        return json_ready(out)


# not shown: pyarrow's FutureWarnings (pypaimon uses options that newer pyarrow deprecates)
PEER_WARNINGS = (FutureWarning,)


def _timed(function: Callable, *args) -> timing.Timed:
    """One timed call (see benchmarks/timing.py), without the peers' FutureWarnings."""
    return timing.timed(function, *args, ignore_warnings=PEER_WARNINGS)


def _best_of(function: Callable, repeat: int) -> timing.Timed:
    """The fastest of ``repeat`` timed calls (see benchmarks/timing.py), without the peers' FutureWarnings."""
    return timing.best_of(function, repeat=repeat, ignore_warnings=PEER_WARNINGS)


def _runs_note(repeat: int) -> str:
    return f"best of {repeat}" if repeat > 1 else "one run"


def _sorted_by_key(table: pa.Table) -> pa.Table:
    return table.take(pc.sort_indices(table, [(KEY, "ascending")])).combine_chunks()


def compare_with_expected(got: pa.Table, expected: pa.Table) -> str:
    """'ok' when ``got`` (any row order) holds exactly the rows of ``expected``."""
    return compare_tables(got, expected.select(SCHEMA.names), KEY)


def _check_lookup(got: pa.Table, key: int, expected: pa.Table, expected_ids: np.ndarray) -> str:
    at = int(np.searchsorted(expected_ids, key))
    present = at < len(expected_ids) and expected_ids[at] == key
    if got.num_rows != int(present):
        return f"wrong: key {key} gave {got.num_rows} rows, expected {int(present)}"
    if present:
        row = got.select(SCHEMA.names).to_pylist()[0]
        want = expected.slice(at, 1).to_pylist()[0]
        if row != want:
            return f"wrong: key {key} gave {row}, expected {want}"
    return "ok"


# ---------------------------------------------------------------- mergetree


class _MergetreeSteps:
    def __init__(self, workload: TableWorkload, root: str, repeat: int) -> None:
        self.workload, self.root, self.repeat = workload, root, repeat
        self.table = None
        self.compacted = False
        self.path = os.path.join(root, "mergetree")

    def write(self) -> TableResult:
        result = TableResult(MERGETREE, WRITE, self.workload.upserts)
        self.table = Table.create(self.path, SCHEMA, primary_key=[KEY], buckets=self.workload.buckets,
                                  options={"write-only": "true"})

        def write_all():
            for commit in self.workload.commits:
                self.table.write(commit)

        result.seconds, result.cpu_seconds, _ = _timed(write_all)
        plan = self.table.plan()
        result.rows_out = sum(f.row_count for f in plan.files)
        runs = [len(section) for bucket in plan.buckets for section in bucket.sections]
        result.notes.append(f"{len(plan.files)} files in {len(plan.buckets)} buckets, "
                            f"{min(runs, default=0)}-{max(runs, default=0)} sorted runs per bucket; "
                            f"automatic compaction off (write-only)")
        return result

    def _require(self, step: str) -> None:
        if self.table is None:
            raise RuntimeError("the write failed")
        if step in (READ_COMPACTED, LOOKUP_COMPACTED) and not self.compacted:
            raise RuntimeError("the compaction failed")

    def read(self, step: str) -> TableResult:
        self._require(step)
        plan = self.table.plan()
        result = TableResult(MERGETREE, step, sum(f.row_count for f in plan.files))
        result.seconds, result.cpu_seconds, out = _best_of(self.table.read, self.repeat)
        result.rows_out = out.num_rows
        result.check = compare_with_expected(out, self.workload.expected())
        result.notes.append(f"{len(plan.files)} files; {_runs_note(self.repeat)}")
        return result

    def read_sorted(self, engine: str = MERGETREE) -> TableResult:
        """Every row in key order across the buckets: `read(sorted=True)` (a streaming merge of
        the buckets), or a plain read then a sort of the whole result by pyarrow or polars."""
        self._require(READ_COMPACTED)
        plan = self.table.plan()
        result = TableResult(engine, READ_SORTED, sum(f.row_count for f in plan.files))
        if engine == READ_THEN_POLARS_SORT:
            import polars as pl
            run: Callable = lambda: pl.from_arrow(self.table.read()).sort(KEY).to_arrow()  # noqa: E731
        elif engine == READ_THEN_PYARROW_SORT:
            run = lambda: self.table.read().sort_by(KEY)  # noqa: E731
        else:
            run = lambda: self.table.read(sorted=True)  # noqa: E731
        result.seconds, result.cpu_seconds, out = _best_of(run, self.repeat)
        result.rows_out = out.num_rows
        ids = out.column(KEY)
        ascending = len(ids) < 2 or pc.all(pc.less(ids.slice(0, len(ids) - 1), ids.slice(1))).as_py()
        result.check = compare_with_expected(out, self.workload.expected()) if ascending \
            else "wrong: the rows are not in key order"
        result.notes.append(f"{len(plan.buckets)} buckets; {_runs_note(self.repeat)}")
        return result

    def lookups(self, step: str, keys: np.ndarray) -> TableResult:
        self._require(step)
        expected = self.workload.expected()
        expected_ids = expected.column(KEY).to_numpy()
        result = TableResult(MERGETREE, step, len(keys))
        latencies, cpu, found = [], 0.0, 0
        for key in keys:
            seconds, cpu_seconds, out = _timed(self.table.read, None, (KEY, "=", int(key)))
            latencies.append(seconds)
            cpu += cpu_seconds
            found += out.num_rows
            check = _check_lookup(out, int(key), expected, expected_ids)
            if check != "ok" and result.ok:
                result.check = check
        result.rows_out = found
        result.seconds, result.cpu_seconds = float(sum(latencies)), cpu
        ms = np.array(latencies) * 1e3
        result.latency_ms = {"median": float(np.median(ms)), "p95": float(np.percentile(ms, 95)),
                             "min": float(ms.min()), "max": float(ms.max()), "count": len(ms)}
        result.notes.append(f"{len(keys)} random keys of the key space, one read(filter=('id', '=', k)) each")
        return result

    def rewrite_reference(self) -> TableResult:
        """pq.read_table + pq.write_table of every live data file: the Parquet I/O bound."""
        import pyarrow.parquet as pq

        self._require(REWRITE)
        files = self.table.plan().files
        result = TableResult(PYARROW_REWRITE, REWRITE, sum(f.row_count for f in files), sum(f.row_count for f in files))
        target = os.path.join(self.root, "rewrite")

        def rewrite():
            shutil.rmtree(target, ignore_errors=True)
            os.makedirs(target)
            for index, meta in enumerate(files):
                data = pq.read_table(os.path.join(self.table.path, meta.file_name))
                pq.write_table(data, os.path.join(target, f"{index}.parquet"))

        result.seconds, result.cpu_seconds, _ = _best_of(rewrite, self.repeat)
        shutil.rmtree(target, ignore_errors=True)
        result.notes.append(f"{len(files)} files, pyarrow defaults (threaded read, snappy); {_runs_note(self.repeat)}")
        return result

    def compact(self) -> TableResult:
        self._require(COMPACT)
        before = self.table.plan()
        result = TableResult(MERGETREE, COMPACT, sum(f.row_count for f in before.files))
        result.seconds, result.cpu_seconds, _ = _timed(self.table.compact, True)
        self.compacted = True
        after = self.table.plan()
        result.rows_out = sum(f.row_count for f in after.files)
        runs = [len(section) for bucket in after.buckets for section in bucket.sections]
        result.notes.append(f"{len(before.files)} files -> {len(after.files)}, "
                            f"{max(runs, default=0)} sorted run(s) per bucket after")
        return result


# ---------------------------------------------------------------- Paimon from Python


def _rows_of_batches(batches) -> pa.Table:
    batches = list(batches)
    if not batches:
        return pa.table({name: pa.array([], type) for name, type in zip(SCHEMA.names, SCHEMA.types)})
    return pa.Table.from_batches(batches)


class _PaimonSteps:
    """pypaimon writes the upserts into a local warehouse; pypaimon and pypaimon_rust read them."""

    def __init__(self, workload: TableWorkload, root: str, repeat: int) -> None:
        self.workload, self.repeat = workload, repeat
        self.warehouse = os.path.join(root, "paimon")
        self.catalog = None
        self.tables: dict[str, str] = {}  # writer name -> table identifier, for tables written in full
        self.input_rows: dict[str, int] = {}

    def _catalog(self):
        if self.catalog is None:
            from pypaimon import CatalogFactory

            self.catalog = CatalogFactory.create({"warehouse": self.warehouse})
            self.catalog.create_database(PAIMON_DATABASE, True)
        return self.catalog

    def write(self, native: bool) -> TableResult:
        engine = PYPAIMON_NATIVE_WRITE if native else PYPAIMON
        result = TableResult(engine, WRITE, self.workload.upserts)
        if installed_version("pypaimon") is None:
            result.check = "unavailable: pypaimon is not installed (pip install pypaimon)"
            return result
        name = "native_writer" if native else "python_writer"
        try:
            from pypaimon import Schema

            if native and not self._native_write_supported():
                result.check = (
                    "unavailable: this pypaimon has no write.native.enabled option"
                    if not self._has_option("write.native.enabled")
                    else "unavailable: write.native.enabled needs pypaimon-rust (pip install pypaimon-rust)")
                return result
            options = {"bucket": str(self.workload.buckets), "file.compression": PAIMON_COMPRESSION,
                       "write-only": "true"}
            if native:
                options["write.native.enabled"] = "true"
            identifier = f"{PAIMON_DATABASE}.{name}"
            catalog = self._catalog()
            catalog.create_table(identifier, Schema.from_pyarrow_schema(SCHEMA, primary_keys=[KEY], options=options),
                                 False)
            table = catalog.get_table(identifier)
            writers = set()

            def write_all():
                for commit in self.workload.commits:
                    builder = table.new_batch_write_builder()
                    writer, committer = builder.new_write(), builder.new_commit()
                    writers.add(type(writer).__name__)
                    writer.write_arrow(commit)
                    committer.commit(writer.prepare_commit())
                    writer.close()
                    committer.close()

            result.seconds, result.cpu_seconds, _ = _timed(write_all)
            if native and writers != {"NativeTableWrite"}:
                result.check = f"unavailable: write.native.enabled fell back to {sorted(writers)}"
                return result
            files = self._files(table)
            result.rows_out = sum(f.row_count for f in files)
            self.tables[engine] = identifier
            self.input_rows[engine] = result.rows_out
            result.notes.append(f"{len(files)} files ({PAIMON_COMPRESSION}), writer {', '.join(sorted(writers))}")
        except Exception as error:  # a failing peer is reported, not fatal
            result.check = f"failed: {type(error).__name__}: {error}"
        return result

    @staticmethod
    def _has_option(key: str) -> bool:
        """Whether pypaimon's CoreOptions declare an option named ``key``."""
        try:
            from pypaimon.common.options.core_options import CoreOptions
        except ImportError:
            return False
        for name in dir(CoreOptions):
            option = getattr(CoreOptions, name, None)
            if callable(getattr(option, "key", None)) and option.key() == key:
                return True
        return False

    def _native_write_supported(self) -> bool:
        try:
            from pypaimon.write.native_write import native_write_available
        except ImportError:
            return False
        return native_write_available()

    @staticmethod
    def _files(table) -> list:
        builder = table.new_read_builder()
        return [f for split in builder.new_scan().plan().splits() for f in split.files]

    def _table_for_read(self, writer: str) -> tuple[str | None, str]:
        identifier = self.tables.get(writer)
        if identifier is None:
            return None, f"unavailable: no table written by {writer}"
        return identifier, "ok"

    def read(self, writer: str, native: bool) -> TableResult:
        engine = PYPAIMON_NATIVE_READ if native else PYPAIMON
        result = TableResult(engine, READ_UNMERGED)
        identifier, result.check = self._table_for_read(writer)
        if identifier is None:
            return result
        result.rows_in = self.input_rows[writer]
        repeat = self.repeat if native else 1  # the Python merge takes minutes; once is enough
        try:
            table = self._catalog().get_table(identifier)
            if native:
                from pypaimon.read.native_plan import native_reader_available

                if not native_reader_available():
                    result.check = "unavailable: read.native.enabled needs pypaimon-rust (pip install pypaimon-rust)"
                    return result
                table = table.copy({"read.native.enabled": "true"})

            def read_all():
                builder = table.new_read_builder()
                return builder.new_read().to_arrow(builder.new_scan().plan().splits())

            result.seconds, result.cpu_seconds, out = _best_of(read_all, repeat)
            result.rows_out = out.num_rows
            result.check = compare_with_expected(out, self.workload.expected())
            result.notes.append(f"table written by {writer}; {_runs_note(repeat)}")
        except Exception as error:
            result.check = f"failed: {type(error).__name__}: {error}"
        return result

    def read_rust(self, writer: str) -> TableResult:
        result = TableResult(PYPAIMON_RUST_ON_NATIVE if writer == PYPAIMON_NATIVE_WRITE else PYPAIMON_RUST,
                             READ_UNMERGED)
        if installed_version("pypaimon-rust") is None:
            result.check = "unavailable: pypaimon-rust is not installed (pip install pypaimon-rust)"
            return result
        identifier, result.check = self._table_for_read(writer)
        if identifier is None:
            return result
        result.rows_in = self.input_rows[writer]
        try:
            from pypaimon_rust.datafusion import PaimonCatalog

            table = PaimonCatalog({"warehouse": self.warehouse}).get_table(tuple(identifier.split(".")))

            def read_all():
                builder = table.new_read_builder()
                return _rows_of_batches(builder.new_read().read_arrow(builder.new_scan().plan().splits()))

            result.seconds, result.cpu_seconds, out = _best_of(read_all, self.repeat)
            result.rows_out = out.num_rows
            result.check = compare_with_expected(out, self.workload.expected())
            result.notes.append(f"table written by {writer}; {_runs_note(self.repeat)}")
        except Exception as error:
            result.check = f"failed: {type(error).__name__}: {error}"
        return result


# ---------------------------------------------------------------- running


def run_table_bench(upserts: int = DEFAULT_UPSERTS, keys: int = DEFAULT_KEYS, commits: int = DEFAULT_COMMITS,
                    buckets: int = DEFAULT_BUCKETS, lookups: int = DEFAULT_LOOKUPS, repeat: int = 3,
                    quick: bool = False, peers: bool = True, directory: str | None = None,
                    progress: bool | None = None, stream=sys.stderr) -> list[TableResult]:
    """Run the table workload with mergetree and (``peers``) pypaimon / pypaimon_rust.

    ``quick`` divides the upserts and the key space by 10 and the lookups by 4.  The
    tables are written under ``directory`` (kept) or a temporary directory (removed)."""
    if quick:
        upserts, keys, lookups = quick_sizes(upserts, keys, lookups)
    check_sizes(upserts, keys, commits, buckets)
    root = directory or tempfile.mkdtemp(prefix="mergetree-bench-table-")
    if directory:
        os.makedirs(root, exist_ok=True)
    rng = np.random.default_rng(SEED + 1)
    lookup_keys = rng.choice(keys, size=min(lookups, keys), replace=False)
    state: dict = {}

    def build():
        state["workload"] = workload = make_table_workload(upserts, keys, commits, buckets)
        workload.expected()
        state["mergetree"] = _MergetreeSteps(workload, root, repeat)
        state["paimon"] = _PaimonSteps(workload, root, repeat)
        return None

    mt = lambda: state["mergetree"]  # noqa: E731
    pm = lambda: state["paimon"]  # noqa: E731
    # (engine and step reported if it raises, the step); the first builds the data
    steps: list[tuple[str, str, Callable]] = [
        ("", "", build),
        (MERGETREE, WRITE, lambda: mt().write()),
        (MERGETREE, READ_UNMERGED, lambda: mt().read(READ_UNMERGED)),
        (MERGETREE, LOOKUP_UNMERGED, lambda: mt().lookups(LOOKUP_UNMERGED, lookup_keys)),
        (PYARROW_REWRITE, REWRITE, lambda: mt().rewrite_reference()),
        (MERGETREE, COMPACT, lambda: mt().compact()),
        (MERGETREE, READ_COMPACTED, lambda: mt().read(READ_COMPACTED)),
        (MERGETREE, LOOKUP_COMPACTED, lambda: mt().lookups(LOOKUP_COMPACTED, lookup_keys)),
        (MERGETREE, READ_SORTED, lambda: mt().read_sorted()),
        (READ_THEN_PYARROW_SORT, READ_SORTED, lambda: mt().read_sorted(READ_THEN_PYARROW_SORT)),
    ]
    if peers and installed_version("polars"):
        steps.append((READ_THEN_POLARS_SORT, READ_SORTED, lambda: mt().read_sorted(READ_THEN_POLARS_SORT)))
    if peers:
        steps += [
            (PYPAIMON, WRITE, lambda: pm().write(native=False)),
            (PYPAIMON_NATIVE_WRITE, WRITE, lambda: pm().write(native=True)),
            (PYPAIMON, READ_UNMERGED, lambda: pm().read(PYPAIMON, native=False)),
            (PYPAIMON_NATIVE_READ, READ_UNMERGED, lambda: pm().read(PYPAIMON, native=True)),
            (PYPAIMON_RUST, READ_UNMERGED, lambda: pm().read_rust(PYPAIMON)),
            (PYPAIMON_RUST_ON_NATIVE, READ_UNMERGED, lambda: pm().read_rust(PYPAIMON_NATIVE_WRITE)),
        ]
    results: list[TableResult] = []
    try:
        with timing.progress_bar("table bench", "steps", len(steps), progress, stream) as advance:
            for engine, name, step in steps:
                if engine and "workload" not in state:
                    results.append(TableResult(engine, name, check="failed: the workload could not be built"))
                    continue
                try:
                    result = step()
                except Exception as error:  # reported in the table, like a failing peer
                    if not engine:
                        raise
                    result = TableResult(engine, name, check=f"failed: {type(error).__name__}: {error}")
                if result is not None:
                    results.append(result)
                advance()
    finally:
        if not directory:
            shutil.rmtree(root, ignore_errors=True)
    return results


# ---------------------------------------------------------------- reporting


def _find(results: list, engine: str, step: str, note: str | None = None) -> TableResult | None:
    for r in results:
        if r.engine == engine and r.step == step and r.ok and (note is None or any(note in n for n in r.notes)):
            return r
    return None


def _ratio(mine: TableResult | None, theirs: TableResult | None) -> float | None:
    if mine is None or theirs is None or not theirs.rows_per_second > 0:
        return None
    return mine.rows_per_second / theirs.rows_per_second


def table_ratios(results: list) -> dict:
    """Every ratio the issue sets a target for (None when one side is missing or wrong)."""
    mine_read = _find(results, MERGETREE, READ_UNMERGED)
    rust = [r for r in results if r.engine in (PYPAIMON_RUST, PYPAIMON_RUST_ON_NATIVE) and r.step == READ_UNMERGED
            and r.ok]
    fastest_rust = max(rust, key=lambda r: r.rows_per_second, default=None)
    mine_compact = _find(results, MERGETREE, COMPACT)
    mine_write = _find(results, MERGETREE, WRITE)
    lookups = {r.step: r.latency_ms for r in results if r.engine == MERGETREE and r.latency_ms and r.ok}
    return {
        "read_vs_pypaimon": _ratio(mine_read, _find(results, PYPAIMON, READ_UNMERGED)),
        "read_vs_pypaimon_native_read": _ratio(mine_read, _find(results, PYPAIMON_NATIVE_READ, READ_UNMERGED)),
        "read_vs_pypaimon_rust": _ratio(mine_read, fastest_rust),
        "write_vs_pypaimon_native": _ratio(mine_write, _find(results, PYPAIMON_NATIVE_WRITE, WRITE)),
        "write_vs_pypaimon": _ratio(mine_write, _find(results, PYPAIMON, WRITE)),
        "compaction_vs_pyarrow_rewrite": _ratio(mine_compact, _find(results, PYARROW_REWRITE, REWRITE)),
        "sorted_read_vs_read_then_pyarrow_sort": _ratio(_find(results, MERGETREE, READ_SORTED),
                                                        _find(results, READ_THEN_PYARROW_SORT, READ_SORTED)),
        "sorted_read_vs_read_then_polars_sort": _ratio(_find(results, MERGETREE, READ_SORTED),
                                                       _find(results, READ_THEN_POLARS_SORT, READ_SORTED)),
        "lookup_latency_ms": lookups,
        "read_rows_per_cpu_second": {r.engine: r.rows_per_cpu_second for r in results
                                     if r.step == READ_UNMERGED and r.ok},
        "targets": dict(TARGETS),
    }


def _table_rows(results: list) -> list:
    rows = [("engine", "step", "rows in", "rows out", "seconds", "cpu/wall", "rows/s", "")]
    for r in results:
        if r.latency_ms and r.ok:
            speed = f"p50 {r.latency_ms['median']:.1f} ms"
            shown = f"p95 {r.latency_ms['p95']:.1f} ms over {r.latency_ms['count']} lookups"
        else:
            speed = rate_text(r.rows_per_second)
            shown = "" if r.ok else escape(r.check)
        usable = r.ok or (r.seconds == r.seconds and not r.check.startswith("unavailable"))
        rows.append((r.engine, r.step, f"{r.rows_in:,}" if r.rows_in else "-",
                     f"{r.rows_out:,}" if usable and r.rows_out else "-",
                     f"{r.seconds:.3f}" if usable and r.seconds == r.seconds else "-",
                     f"{r.cpu_seconds / r.seconds:.2f}" if usable and r.seconds > 0 else "-", speed, shown))
    return rows


def _target_line(name: str | None, ratio: float | None, text: str, percent: bool = False) -> str:
    """``text`` with ``{}`` replaced by the ratio, and whether the issue's target is met."""
    if ratio is None:
        return text.format("?") + " (not measured: a side is missing, failed or wrong)"
    line = text.format(f"{ratio:.0%}" if percent else f"{ratio:.2f}x")
    target = TARGETS.get(name) if name else None
    if target is None:
        return line
    goal = f"{target:.0%}" if percent else f"{target:g}x"
    return f"{line} (target >= {goal}: {'met' if ratio >= target else 'NOT met'})"


def format_table_results(results: list) -> Group:
    """The table of every step, then the ratios against the issue's targets (print with
    `report.show`)."""
    ratios = table_ratios(results)
    lines = []
    lines.append(_target_line("read_vs_pypaimon", ratios["read_vs_pypaimon"],
                              "merge-on-read (unmerged): mergetree is {} pypaimon's read"))
    lines.append(_target_line("read_vs_pypaimon_rust", ratios["read_vs_pypaimon_rust"],
                              "merge-on-read (unmerged): mergetree is {} pypaimon-rust's read (the faster of its "
                              "two tables)"))
    if ratios["read_vs_pypaimon_native_read"] is not None:
        lines.append(_target_line("read_vs_pypaimon_native_read", ratios["read_vs_pypaimon_native_read"],
                                  "merge-on-read (unmerged): mergetree is {} pypaimon-rust's reader driven by pypaimon "
                                  "(read.native.enabled: split groups in parallel threads)"))
    per_cpu = ratios["read_rows_per_cpu_second"]
    if per_cpu:
        lines.append("merge-on-read (unmerged) rows per CPU-second: "
                     + ", ".join(f"{engine} {rate_text(rate).replace('/s', '')}"
                                 for engine, rate in per_cpu.items()))
    lines.append(_target_line("write_vs_pypaimon_native", ratios["write_vs_pypaimon_native"],
                              "write: mergetree is {} pypaimon's native (Rust) writer"))
    if ratios["write_vs_pypaimon"] is not None:
        lines.append(_target_line(None, ratios["write_vs_pypaimon"], "write: mergetree is {} pypaimon's Python writer"))
    lines.append(_target_line("compaction_vs_pyarrow_rewrite", ratios["compaction_vs_pyarrow_rewrite"],
                              "compaction: mergetree's input rows/s are {} of pyarrow reading and rewriting the "
                              "same files", percent=True))
    for peer in ("pyarrow", "polars"):
        ratio = ratios[f"sorted_read_vs_read_then_{peer}_sort"]
        if ratio is not None:
            lines.append(_target_line(None, ratio, "read in key order: read(sorted=True) is {} a read then "
                                      f"{peer}'s sort of the whole result"))
    for step, latency in ratios["lookup_latency_ms"].items():
        lines.append(f"{step}: median {latency['median']:.1f} ms, p95 {latency['p95']:.1f} ms, "
                     f"max {latency['max']:.1f} ms over {latency['count']} keys")
    lines.append("rows in: rows read from data files (reads), upserts (writes), input rows (compaction); "
                 "cpu/wall above 1 means more than one thread worked")
    lines.append(f"Paimon tables are written with file.compression={PAIMON_COMPRESSION}, like mergetree's files; "
                 "pypaimon and pypaimon-rust cannot compact")
    notes = [f"{r.engine} {r.step}: {n}" for r in results for n in r.notes]
    text = lines + ["", "notes:"] + [f"  {n}" for n in notes]
    return Group(render.text_table(_table_rows(results), right_aligned={2, 3, 4, 5, 6}), Text(),
                 *(Text(line) for line in text))


def peer_versions() -> dict:
    return {name: installed_version(name) or "not installed" for name in ("pypaimon", "pypaimon-rust")}


def plot_table_results(results: list, path: str, title: str = "") -> None:
    """Bars of rows per second (log scale) for every timed step, one panel for writes,
    reads and compaction, lookups' latency in a second panel."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rated = [r for r in results if r.ok and not r.latency_ms and r.rows_per_second > 0]
    lookups = [r for r in results if r.ok and r.latency_ms]
    figure, axes = plt.subplots(1, 2, figsize=(14, 4.8), gridspec_kw={"width_ratios": [3, 1.3]})
    axis = axes[0]
    names = [f"{r.engine}: {r.step}" for r in rated][::-1]
    speeds = [r.rows_per_second for r in rated][::-1]
    colors = ["tab:blue" if name.startswith(MERGETREE) else "tab:gray" for name in names]
    bars = axis.barh(names, speeds, color=colors)
    if speeds:
        axis.set_xscale("log")
        axis.set_xlim(min(speeds) / 3, max(speeds) * 5)
    for bar, speed in zip(bars, speeds):
        axis.text(speed * 1.1, bar.get_y() + bar.get_height() / 2, rate_text(speed), va="center", fontsize=8)
    axis.tick_params(axis="y", labelsize=8)
    axis.set_xlabel("rows per second (log scale, higher is better)")
    axis.set_title("writes (upserts), reads (rows from files), compaction (input rows)")
    axis.grid(axis="x", which="major", alpha=0.3)
    axis = axes[1]
    labels = [r.step.replace("point lookup ", "") for r in lookups]
    x = np.arange(len(lookups))
    axis.bar(x - 0.2, [r.latency_ms["median"] for r in lookups], 0.4, label="median", color="tab:blue")
    axis.bar(x + 0.2, [r.latency_ms["p95"] for r in lookups], 0.4, label="p95", color="tab:cyan")
    axis.set_xticks(x, labels, fontsize=8)
    axis.set_ylabel("ms per lookup (lower is better)")
    axis.set_title("mergetree point lookups")
    axis.legend(fontsize=8)
    if title:
        figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(path, dpi=130)
    plt.close(figure)
