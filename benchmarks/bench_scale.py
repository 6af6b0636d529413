"""``mergetree bench --scale``: how the cost of writing, reading, compacting and looking up grows
with the table, up to 100M rows.

The table: ``id`` int64 (the primary key), ``v`` float64 and ``s`` a 12-character string, 2
buckets, ``write-only`` (no compaction while writing) and a 64 mb write buffer.  Row ``i`` of
``rows`` has ``id = (i * m) % (rows // 2)``, ``v = i * 0.5`` and ``s = "sku-%08d" % (i % 10**8)``,
where the multiplier ``m`` is a 61-bit prime reduced modulo ``rows // 2`` (so coprime to it):
``id`` runs through every key of ``0 .. rows // 2 - 1`` in a scattered order, then through all
of them again in the same order, so every key is written exactly twice, the second version is
the newest, and a read must return exactly ``rows // 2`` rows.

For each size (default 1M, 10M and 100M rows; ``--quick`` 100k, 1M and 10M), every operation
runs in a fresh child process (``python -m benchmarks.bench_scale --child ...``), which reports
its own wall and CPU seconds and its peak resident memory (``VmHWM`` on Linux: ``ru_maxrss``
there also counts the parent's memory at ``fork``; ``ru_maxrss`` elsewhere), so the memory is
that one operation's, on a table in a temporary directory that is removed after the size:

1. write: one ``table.write(batches)`` of a generator of 65,536-row record batches made in the
   child (the input is never whole in memory); it streams through the write buffer and spills
   level-0 files, committed once;
2. read (merge-on-read): ``table.scan()`` to the end, merging the level-0 runs; the row count
   and the sum of the ids are checked;
3. compact (full): ``table.compact(full=True)``; checked: one sorted run per bucket section,
   ``rows // 2`` rows;
4. read (compacted): the scan again, checked the same way;
5. point lookup: 200 ``table.read(filter=("id", "=", k))`` of random existing keys (fixed
   seed); each must return exactly the newest version of ``k`` (id, v and s checked).

"rows in" is what an operation consumed: rows written (write), rows in the data files it read
(reads, compaction), lookups (point lookups).  The targets: the write's peak memory stays under
write-buffer-size + 256 MB at every size, and rows/s at the largest size are within 20% of
rows/s at 10M (write, merge-on-read, compaction).

The Spark part (``--scale-spark``; with ``--scale`` whenever pyspark is importable) writes a
1-bucket table of ``--scale-spark-rows`` rows the same way (not compacted: one large bucket of
several level-0 runs), then reads it through ``spark.read.format("mergetree")`` in two child
processes, ``local[1]`` and ``local[2]``: one untimed warm-up, then the best of 2 timed
``write.format("noop")`` runs; the row count and the number of Spark partitions are taken
separately (untimed).  Target: local[2] at least 1.6x local[1].
"""
from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from importlib.util import find_spec

import numpy as np
import pyarrow as pa
from rich.console import Group
from rich.markup import escape
from rich.text import Text

from mergetree import Table
from mergetree.cli import render

from . import timing
from .data import parse_row_count, short_count
from .report import json_ready, rate_text

__all__ = ["ScaleReport", "ScaleResult", "SparkScaleResult", "format_scale_results", "parse_sizes",
           "plot_scale_results", "run_scale_bench", "scale_json", "scale_targets"]

DEFAULT_SIZES = (1_000_000, 10_000_000, 100_000_000)
QUICK_SIZES = (100_000, 1_000_000, 10_000_000)
DEFAULT_SPARK_ROWS = 10_000_000
QUICK_SPARK_ROWS = 1_000_000
BATCH_ROWS = 65_536
BUCKETS = 2
LOOKUPS = 200
SEED = 20240614
WRITE_BUFFER_MB = 64
MEMORY_SLACK_MB = 256
MEMORY_LIMIT_MIB = WRITE_BUFFER_MB + MEMORY_SLACK_MB
WRITE_OPTIONS = {"write-only": "true", "write-buffer-size": f"{WRITE_BUFFER_MB} mb"}
REFERENCE_SIZE = 10_000_000  # rows/s at the largest size are compared with rows/s here
SPEED_TARGET = 0.8
SPARK_TARGET = 1.6
SPARK_MASTERS = ("local[1]", "local[2]")
SPARK_REPEAT = 2
PRIME = 2**61 - 1  # a Mersenne prime: larger than any size, so coprime to every rows // 2
STRING_PREFIX = b"sku-"
STRING_DIGITS = 8

KEY = "id"
SCHEMA = pa.schema([(KEY, pa.int64()), ("v", pa.float64()), ("s", pa.string())])
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

WRITE = "write"
READ = "read (merge-on-read)"
COMPACT = "compact (full)"
READ_COMPACTED = "read (compacted)"
LOOKUP = "point lookup"
OPERATIONS = (WRITE, READ, COMPACT, READ_COMPACTED, LOOKUP)
SPEED_TARGETED = (WRITE, READ, COMPACT)  # READ_COMPACTED's ratio is shown beside them, without a target


# ---------------------------------------------------------------- sizes


def parse_sizes(text: str) -> list[int]:
    """``"1M,10M,100M"`` -> [1000000, 10000000, 100000000]: ascending, each once."""
    parts = [part for part in text.split(",") if part.strip()]
    if not parts:
        raise ValueError("no sizes given (write them like 1M,10M,100M)")
    return sorted({parse_row_count(part) for part in parts})


def sizes_argument(text: str) -> list[int]:
    """``parse_sizes`` for argparse: a bad list is a usage error (exit code 2) with the reason."""
    try:
        return parse_sizes(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def row_count_argument(text: str) -> int:
    try:
        return parse_row_count(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


# ---------------------------------------------------------------- the rows


def multiplier(keys: int) -> int:
    """The ``m`` of ``id = (i * m) % keys``: coprime to ``keys`` (PRIME is a prime larger than it),
    and less than ``keys``, so ``i * m`` fits in int64 for ``i < 2 * keys`` up to 2**31 keys."""
    return PRIME % keys


def _strings(i: np.ndarray) -> pa.Array:
    """``"sku-%08d" % (i % 10**8)`` for every ``i``, built from the digits with numpy."""
    width = len(STRING_PREFIX) + STRING_DIGITS
    chars = np.empty((len(i), width), dtype=np.uint8)
    chars[:, :len(STRING_PREFIX)] = np.frombuffer(STRING_PREFIX, dtype=np.uint8)
    powers = 10 ** np.arange(STRING_DIGITS - 1, -1, -1, dtype=np.int64)
    chars[:, len(STRING_PREFIX):] = (i[:, None] // powers) % 10 + ord("0")
    offsets = np.arange(0, (len(i) + 1) * width, width, dtype=np.int32)
    return pa.Array.from_buffers(pa.string(), len(i), [None, pa.py_buffer(offsets), pa.py_buffer(chars.tobytes())])


def string_of(i: int) -> str:
    return STRING_PREFIX.decode() + f"{i % 10**STRING_DIGITS:0{STRING_DIGITS}d}"


def generate(rows: int, batch_rows: int = BATCH_ROWS) -> Iterator[pa.RecordBatch]:
    """The workload's rows as record batches of ``batch_rows``, made one at a time."""
    keys = max(rows // 2, 1)
    m = multiplier(keys)
    for start in range(0, rows, batch_rows):
        i = np.arange(start, min(start + batch_rows, rows), dtype=np.int64)
        yield pa.RecordBatch.from_arrays([pa.array((i * m) % keys), pa.array(i * 0.5), _strings(i)], schema=SCHEMA)


def newest_row(key: int, rows: int) -> tuple[int, float, str]:
    """The newest version of ``key`` (the last row ``i`` with ``(i * m) % keys == key``)."""
    keys = rows // 2
    first = key * pow(multiplier(keys), -1, keys) % keys
    last = first + keys * ((rows - 1 - first) // keys)
    return key, last * 0.5, string_of(last)


# ---------------------------------------------------------------- the child: one operation


def _maxrss_mib() -> float:
    """``ru_maxrss`` of this process in MiB (KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 2**10


def _peak_rss_mib() -> float:
    """This process's peak resident memory so far, in MiB.

    On Linux ``ru_maxrss`` is kept across ``fork`` and ``exec``: a child started by a parent
    that holds 400 MiB reports at least 400 MiB however little it uses itself.  ``VmHWM`` in
    /proc/self/status is the high-water mark of this process's own address space, made at
    ``exec``: that is the figure used where it exists (``ru_maxrss`` elsewhere)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 2**10  # kB
    except OSError:
        pass
    return _maxrss_mib()


def _shape(table: Table) -> dict:
    """The live data files: how many, their rows, and the most sorted runs a bucket section holds."""
    plan = table.plan()
    runs = [len(section) for bucket in plan.buckets for section in bucket.sections]
    return {"files": len(plan.files), "file_rows": sum(f.row_count for f in plan.files),
            "file_mib": sum(f.file_size for f in plan.files) / 2**20, "max_runs": max(runs, default=0)}


def _child_write(args) -> dict:
    table = Table.create(args.path, SCHEMA, primary_key=KEY, buckets=args.buckets, options=WRITE_OPTIONS)
    run = timing.timed(table.write, generate(args.rows), pause_gc=False)
    shape = _shape(table)
    keys = args.rows // 2
    check = "ok" if keys <= shape["file_rows"] <= args.rows else (
        f"wrong: the data files hold {shape['file_rows']:,} rows, expected {keys:,} to {args.rows:,}")
    return {"seconds": run.seconds, "cpu_seconds": run.cpu_seconds, "rows_in": args.rows,
            "rows_out": shape["file_rows"], "files": shape["files"], "file_mib": shape["file_mib"],
            "max_runs": shape["max_runs"], "check": check}


def _scan_all(table: Table) -> tuple[int, int]:
    """Every row of a streaming read: the row count and the sum of the ids."""
    rows = total = 0
    for batch in table.scan():
        rows += batch.num_rows
        total += int(np.sum(batch.column(KEY).to_numpy()))
    return rows, total


def _child_read(args) -> dict:
    table = Table.open(args.path)
    shape = _shape(table)
    run = timing.timed(_scan_all, table, pause_gc=False)
    rows, total = run.output
    keys = args.rows // 2
    if rows != keys:
        check = f"wrong: {rows:,} rows, expected {keys:,}"
    elif total != keys * (keys - 1) // 2:
        check = f"wrong: the ids sum to {total:,}, expected {keys * (keys - 1) // 2:,}"
    else:
        check = "ok"
    return {"seconds": run.seconds, "cpu_seconds": run.cpu_seconds, "rows_in": shape["file_rows"],
            "rows_out": rows, "files": shape["files"], "file_mib": shape["file_mib"], "max_runs": shape["max_runs"],
            "check": check}


def _child_compact(args) -> dict:
    table = Table.open(args.path)
    before = _shape(table)
    run = timing.timed(table.compact, True, pause_gc=False)
    after = _shape(table)
    keys = args.rows // 2
    if after["max_runs"] != 1:
        check = f"wrong: a bucket section still holds {after['max_runs']} sorted runs"
    elif after["file_rows"] != keys:
        check = f"wrong: the compacted files hold {after['file_rows']:,} rows, expected {keys:,}"
    else:
        check = "ok"
    return {"seconds": run.seconds, "cpu_seconds": run.cpu_seconds, "rows_in": before["file_rows"],
            "rows_out": after["file_rows"], "files": after["files"], "file_mib": after["file_mib"],
            "max_runs": after["max_runs"],
            "files_before": before["files"], "check": check}


def _child_lookup(args) -> dict:
    table = Table.open(args.path)
    keys = args.rows // 2
    rng = np.random.default_rng(SEED)
    chosen = rng.choice(keys, size=min(args.lookups, keys), replace=False)
    latencies, cpu, found, check = [], 0.0, 0, "ok"
    for key in (int(k) for k in chosen):
        run = timing.timed(table.read, None, (KEY, "=", key), pause_gc=False)
        latencies.append(run.seconds)
        cpu += run.cpu_seconds
        found += run.output.num_rows
        got = [(r[KEY], r["v"], r["s"]) for r in run.output.to_pylist()]
        want = newest_row(key, args.rows)
        if got != [want] and check == "ok":
            check = f"wrong: id {key} gave {got[:3]}, expected [{want}]"
    ms = np.array(latencies) * 1e3
    return {"seconds": float(ms.sum() / 1e3), "cpu_seconds": cpu, "rows_in": len(chosen), "rows_out": found,
            "latency_ms": {"median": float(np.median(ms)), "p95": float(np.percentile(ms, 95)),
                           "min": float(ms.min()), "max": float(ms.max()), "count": len(ms)},
            "check": check}


def _child_spark(args) -> dict:
    import mergetree.spark
    from mergetree.spark.session import local_session

    warehouse = os.path.join(os.path.dirname(os.path.abspath(args.path)), "spark-warehouse")
    # timed runs: keep the JVM's full JIT (no fast-start flags)
    config = {"spark.driver.memory": "4g"}
    spark = local_session("scale", warehouse, 2, False, args.master, **config)  # fast_start=False
    try:
        mergetree.spark.register(spark)

        def noop() -> None:
            spark.read.format("mergetree").load(args.path).write.format("noop").mode("overwrite").save()

        noop()  # warm-up, untimed
        seconds = timing.best_of(noop, repeat=SPARK_REPEAT, pause_gc=False).seconds
        frame = spark.read.format("mergetree").load(args.path)
        count, partitions = frame.count(), frame.rdd.getNumPartitions()
    finally:
        spark.stop()
    keys = args.rows // 2
    check = "ok" if count == keys else f"wrong: {count:,} rows, expected {keys:,}"
    return {"seconds": seconds, "rows_out": count, "partitions": partitions, "check": check}


CHILD_OPERATIONS = {"write": _child_write, "read": _child_read, "compact": _child_compact,
                    "lookup": _child_lookup, "spark": _child_spark}


def child_main(argv: list[str] | None = None) -> int:
    """One operation in this process; prints its numbers as one line of JSON on standard output."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_scale",
                                     description="one operation of `mergetree bench --scale` (run by the benchmark)")
    parser.add_argument("--child", required=True, choices=sorted(CHILD_OPERATIONS))
    parser.add_argument("--path", required=True, help="the table's directory")
    parser.add_argument("--rows", type=int, required=True, help="rows written to the table")
    parser.add_argument("--buckets", type=int, default=BUCKETS)
    parser.add_argument("--lookups", type=int, default=LOOKUPS)
    parser.add_argument("--master", default=SPARK_MASTERS[0])
    args = parser.parse_args(argv)
    baseline = _peak_rss_mib()  # the interpreter with numpy, pyarrow and mergetree imported
    report = CHILD_OPERATIONS[args.child](args)
    report.update(peak_rss_mib=_peak_rss_mib(), baseline_rss_mib=baseline, ru_maxrss_mib=_maxrss_mib())
    print(json.dumps(report), flush=True)
    return 0


# ---------------------------------------------------------------- the parent


@dataclass
class ScaleResult:
    operation: str
    rows: int                        # the size: rows written to the table
    rows_in: int = 0                 # rows written, rows in the data files read, or lookups
    rows_out: int = 0                # rows in the files written, rows returned, rows found
    files: int | None = None         # data files after the write / compaction, files read by a read
    file_mib: float | None = None    # their size
    max_runs: int | None = None      # the most sorted runs a bucket section holds
    seconds: float = float("nan")
    cpu_seconds: float = float("nan")
    peak_rss_mib: float = float("nan")
    baseline_rss_mib: float = float("nan")  # the child's peak before the operation (its imports)
    ru_maxrss_mib: float = float("nan")     # getrusage's peak (on Linux the parent's RSS at fork included)
    check: str = "ok"                # "ok", "wrong: ...", "failed: ...", "skipped: ..."
    latency_ms: dict | None = None   # point lookups: median, p95, min, max, count
    notes: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.check == "ok"

    @property
    def rows_per_second(self) -> float:
        """Input rows per second; lookups per second for point lookups."""
        return self.rows_in / self.seconds if self.ok and self.seconds > 0 else float("nan")

    def to_dict(self) -> dict:
        return json_ready({**asdict(self), "rows_per_second": self.rows_per_second})


@dataclass
class SparkScaleResult:
    master: str
    rows: int                # rows written to the table
    file_rows: int = 0       # rows in its data files: what the read merges
    files: int = 0
    seconds: float = float("nan")
    partitions: int = 0      # Spark partitions of the DataFrame (read tasks)
    rows_out: int = 0        # the DataFrame's count()
    peak_rss_mib: float = float("nan")  # the Python driver's (not the JVM's)
    check: str = "ok"

    @property
    def ok(self) -> bool:
        return self.check == "ok"

    @property
    def rows_per_second(self) -> float:
        return self.file_rows / self.seconds if self.ok and self.seconds > 0 else float("nan")

    def to_dict(self) -> dict:
        return json_ready({**asdict(self), "rows_per_second": self.rows_per_second})


@dataclass
class ScaleReport:
    sizes: list
    results: list = field(default_factory=list)       # of ScaleResult, operation by operation, size by size
    spark_rows: int | None = None
    spark_write: ScaleResult | None = None
    spark: list | None = None                          # of SparkScaleResult; None when not run
    spark_skipped: str | None = None                   # why the Spark part did not run
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """Every check passed (a missed performance target does not count)."""
        spark = self.spark_write is None or self.spark_write.ok
        return all(r.ok for r in self.results) and spark and all(r.ok for r in self.spark or [])


def _run_child(operation: str, path: str, rows: int, *extra: str) -> dict:
    """Run one operation in a fresh interpreter; its JSON line, or a ``check`` that says what broke."""
    command = [sys.executable, "-m", "benchmarks.bench_scale", "--child", operation, "--path", path,
               "--rows", str(rows), *extra]
    done = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        if done.returncode < 0:
            why = f"killed by signal {-done.returncode}" + (" (out of memory?)" if done.returncode == -9 else "")
        else:
            lines = done.stderr.strip().splitlines()
            why = lines[-1] if lines else f"exit code {done.returncode}"
        return {"check": f"failed: {why}"}
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    return {"check": "failed: the child process printed no result"}


_RESULT_FIELDS = {"rows_in", "rows_out", "files", "file_mib", "max_runs", "seconds", "cpu_seconds", "peak_rss_mib",
                  "baseline_rss_mib", "ru_maxrss_mib", "check", "latency_ms"}


def _result(operation: str, rows: int, report: dict) -> ScaleResult:
    result = ScaleResult(operation, rows, **{k: v for k, v in report.items() if k in _RESULT_FIELDS})
    if "files_before" in report:
        result.notes.append(f"{report['files_before']} files before")
    return result


def _measure_size(rows: int, root: str, lookups: int, advance: Callable[[int], None]) -> list[ScaleResult]:
    """The five operations on a new table of ``rows`` rows under ``root``, each in its own child."""
    path = os.path.join(root, "table")

    def run(operation: str, child: str, *extra: str) -> ScaleResult:
        result = _result(operation, rows, _run_child(child, path, rows, *extra))
        advance(1)
        return result

    write = run(WRITE, "write")
    if not write.ok:
        advance(len(OPERATIONS) - 1)
        return [write] + [ScaleResult(op, rows, check="skipped: the write failed") for op in OPERATIONS[1:]]
    results = [write, run(READ, "read")]
    compact = run(COMPACT, "compact")
    results.append(compact)
    if compact.ok:
        results.append(run(READ_COMPACTED, "read"))
    else:
        results.append(ScaleResult(READ_COMPACTED, rows, check="skipped: the compaction failed"))
        advance(1)
    lookup = run(LOOKUP, "lookup", "--lookups", str(lookups))
    if not compact.ok:
        lookup.notes.append("on the uncompacted table (the compaction failed)")
    results.append(lookup)
    return results


def spark_missing() -> str | None:
    """Why the Spark part cannot run here, or None."""
    if find_spec("pyspark") is None:
        return "pyspark is not installed (pip install 'mergetree[spark]')"
    return None


def _measure_spark(rows: int, root: str, advance: Callable[[int], None]) -> tuple[ScaleResult, list[SparkScaleResult]]:
    path = os.path.join(root, "table")
    write = _result(WRITE, rows, _run_child("write", path, rows, "--buckets", "1"))
    write.notes.append("1 bucket, for the Spark read")
    advance(1)
    results = []
    for master in SPARK_MASTERS:
        if not write.ok:
            results.append(SparkScaleResult(master, rows, check="skipped: the write failed"))
            advance(1)
            continue
        report = _run_child("spark", path, rows, "--master", master)
        results.append(SparkScaleResult(
            master, rows, file_rows=write.rows_out, files=write.files or 0, seconds=report.get("seconds", math.nan),
            partitions=report.get("partitions", 0), rows_out=report.get("rows_out", 0),
            peak_rss_mib=report.get("peak_rss_mib", math.nan), check=report["check"]))
        advance(1)
    return write, results


def run_scale_bench(sizes=DEFAULT_SIZES, lookups: int = LOOKUPS, spark_rows: int | None = None,
                    spark_skipped: str | None = None, directory: str | None = None,
                    progress: bool | None = None, stream=sys.stderr) -> ScaleReport:
    """Measure every size (ascending), then the Spark part when ``spark_rows`` is given.

    Each size's table is made in a new temporary directory under ``directory`` (default: the
    system's temporary directory) and removed once the size is measured.  ``spark_skipped``
    records why the Spark part was left out (shown in the report)."""
    started = time.perf_counter()
    report = ScaleReport(sorted(sizes), spark_rows=spark_rows, spark_skipped=spark_skipped)
    steps = len(OPERATIONS) * len(report.sizes) + (1 + len(SPARK_MASTERS) if spark_rows else 0)
    with timing.progress_bar("scale bench", "steps", steps, progress, stream) as advance:
        for rows in report.sizes:
            root = tempfile.mkdtemp(prefix=f"mergetree-bench-scale-{short_count(rows)}-", dir=directory)
            try:
                report.results.extend(_measure_size(rows, root, lookups, advance))
            finally:
                shutil.rmtree(root, ignore_errors=True)
        if spark_rows:
            root = tempfile.mkdtemp(prefix=f"mergetree-bench-scale-spark-{short_count(spark_rows)}-", dir=directory)
            try:
                report.spark_write, report.spark = _measure_spark(spark_rows, root, advance)
            finally:
                shutil.rmtree(root, ignore_errors=True)
    report.seconds = time.perf_counter() - started
    return report


# ---------------------------------------------------------------- targets


@dataclass
class Target:
    name: str
    text: str            # the line shown
    value: float | None  # the measured figure (None: not measured)
    met: bool | None     # None: no target, or not measured


def _find(results: list, operation: str, rows: int) -> ScaleResult | None:
    for r in results:
        if r.operation == operation and r.rows == rows:
            return r
    return None


def _verdict(met: bool) -> str:
    return "met" if met else "MISSED"


def scale_targets(report: ScaleReport) -> list[Target]:
    """The memory bound, the rows/s ratios of the largest size against 10M, and Spark's speed-up."""
    targets = []
    writes = [r for r in report.results if r.operation == WRITE and r.peak_rss_mib == r.peak_rss_mib]
    head = f"write peak memory ≤ write-buffer-size + {MEMORY_SLACK_MB} MB ({MEMORY_LIMIT_MIB} MiB)"
    if writes:
        worst = max(writes, key=lambda r: r.peak_rss_mib)
        within = worst.peak_rss_mib <= MEMORY_LIMIT_MIB
        targets.append(Target("write_peak_rss_mib", f"{head}: worst {worst.peak_rss_mib:.0f} MiB at "
                              f"{worst.rows:,} rows ({_verdict(within)})", worst.peak_rss_mib, within))
    else:
        targets.append(Target("write_peak_rss_mib", f"{head}: n/a (no write measured)", None, None))
    largest = max(report.sizes, default=0)
    for operation in (*SPEED_TARGETED, READ_COMPACTED):
        name = "speed_" + operation.split(" ")[0] + ("_compacted" if operation == READ_COMPACTED else "")
        head = f"{operation}: rows/s at the largest size within 20% of rows/s at 10M"
        if REFERENCE_SIZE not in report.sizes or largest <= REFERENCE_SIZE:
            targets.append(Target(name, f"{head}: n/a (needs 10M and a larger size)", None, None))
            continue
        big, reference = _find(report.results, operation, largest), _find(report.results, operation, REFERENCE_SIZE)
        if big is None or reference is None or not big.ok or not reference.ok:
            targets.append(Target(name, f"{head}: not measured (a run failed)", None, None))
            continue
        ratio = big.rows_per_second / reference.rows_per_second
        line = (f"{head}: {rate_text(big.rows_per_second)} at {short_count(largest)} / "
                f"{rate_text(reference.rows_per_second)} at 10M = {ratio:.2f}x")
        if operation in SPEED_TARGETED:
            met: bool | None = ratio >= SPEED_TARGET
            line += f" (target ≥ {SPEED_TARGET:.2f}x: {_verdict(bool(met))})"
        else:
            met = None
            line += " (shown, no target)"
        targets.append(Target(name, line, ratio, met))
    if report.spark is not None:
        by = {r.master: r for r in report.spark}
        one, two = by.get(SPARK_MASTERS[0]), by.get(SPARK_MASTERS[1])
        head = f"Spark read of a 1-bucket table: local[2] ≥ {SPARK_TARGET}x local[1]"
        if one is None or two is None or not one.ok or not two.ok:
            targets.append(Target("spark_local2_vs_local1", f"{head}: not measured (a run failed)", None, None))
        else:
            speedup = one.seconds / two.seconds
            fast = speedup >= SPARK_TARGET
            targets.append(Target("spark_local2_vs_local1", f"{head}: {speedup:.2f}x with {one.partitions} and "
                                  f"{two.partitions} Spark partitions ({_verdict(fast)})", speedup, fast))
    return targets


# ---------------------------------------------------------------- reporting


def _ordered(results: list) -> list:
    """Operation by operation (the order they ran in), each size ascending: a cost curve per block."""
    return sorted(results, key=lambda r: (OPERATIONS.index(r.operation), r.rows))


def _number(value: float | None, digits: int = 0) -> str:
    return "-" if value is None or value != value else f"{value:,.{digits}f}"


def _table_rows(results: list) -> list:
    rows = [("operation", "rows", "rows in", "files", "file MiB", "runs", "seconds", "cpu/wall", "rows/s",
             "peak RSS MiB", "check", "")]
    for r in _ordered(results):
        usable = r.seconds == r.seconds and r.seconds > 0
        if r.latency_ms and r.ok:
            speed = f"{r.rows_per_second:,.0f} lookups/s"
            extra = f"p50 {r.latency_ms['median']:.2f} ms, p95 {r.latency_ms['p95']:.2f} ms"
        else:
            speed, extra = rate_text(r.rows_per_second), ""
        rows.append((r.operation, f"{r.rows:,}", f"{r.rows_in:,}" if r.rows_in else "-",
                     "-" if r.files is None else f"{r.files:,}", _number(r.file_mib, 1),
                     "-" if r.max_runs is None else str(r.max_runs),
                     f"{r.seconds:.2f}" if usable else "-", f"{r.cpu_seconds / r.seconds:.2f}" if usable else "-",
                     speed, _number(r.peak_rss_mib), escape(r.check), extra))
    return rows


def _spark_rows(report: ScaleReport) -> list:
    rows = [("master", "rows", "file rows", "files", "Spark partitions", "seconds", "rows/s", "count", "check")]
    for r in report.spark or []:
        rows.append((r.master, f"{r.rows:,}", f"{r.file_rows:,}", f"{r.files:,}", str(r.partitions),
                     f"{r.seconds:.2f}" if r.seconds == r.seconds else "-", rate_text(r.rows_per_second),
                     f"{r.rows_out:,}" if r.rows_out else "-", escape(r.check)))
    return rows


def format_scale_results(report: ScaleReport) -> Group:
    """The table of every operation and size, the targets, then the Spark part (print with `report.show`)."""
    parts: list = [render.text_table(_table_rows(report.results), right_aligned={1, 2, 3, 4, 5, 6, 7, 8, 9}), Text()]
    lines = [t.text for t in scale_targets(report) if not t.name.startswith("spark")]
    baselines = [r.baseline_rss_mib for r in report.results if r.baseline_rss_mib == r.baseline_rss_mib]
    lines.append("rows in: rows written (write), rows in the data files read (reads, compaction), lookups; files, "
                 "file MiB: the data files after the write or compaction, read by a read; runs: the most sorted runs "
                 "a bucket section holds")
    if baselines:
        lines.append(f"peak RSS is each operation's own child process; a child holds {min(baselines):.0f}-"
                     f"{max(baselines):.0f} MiB after its imports, before any work")
    lines.extend(f"{r.operation} at {r.rows:,} rows: {n}" for r in _ordered(report.results) for n in r.notes)
    parts.extend(Text(line) for line in lines)
    if report.spark is not None:
        write = report.spark_write
        head = f"Spark part: a 1-bucket table of {report.spark_rows:,} rows, not compacted"
        if write is not None and write.ok:
            head += (f" ({write.files} level-0 files, {write.rows_out:,} rows, {write.file_mib or 0:.1f} MiB, "
                     f"written in {write.seconds:.1f}s)")
        elif write is not None:
            head += f": the write {write.check}"
        parts += [Text(), Text(head), render.text_table(_spark_rows(report), right_aligned={1, 2, 3, 4, 5, 6, 7})]
        parts.extend(Text(t.text) for t in scale_targets(report) if t.name.startswith("spark"))
    elif report.spark_skipped:
        parts += [Text(), Text(f"Spark part skipped: {report.spark_skipped}")]
    return Group(*parts)


def scale_json(report: ScaleReport) -> dict:
    """Every number of the report, JSON-ready."""
    return {
        "sizes": list(report.sizes),
        "write_buffer_mb": WRITE_BUFFER_MB, "buckets": BUCKETS, "batch_rows": BATCH_ROWS,
        "results": [r.to_dict() for r in report.results],
        "targets": {t.name: {"text": t.text, "value": t.value, "met": t.met} for t in scale_targets(report)},
        "spark": None if report.spark is None else {
            "rows": report.spark_rows,
            "write": report.spark_write.to_dict() if report.spark_write else None,
            "results": [r.to_dict() for r in report.spark]},
        "spark_skipped": report.spark_skipped,
        "ok": report.ok,
        "seconds": report.seconds,
    }


def plot_scale_results(results: list, path: str, title: str = "") -> None:
    """Three panels against rows (log x): seconds (log y), rows/s and peak RSS, a line per operation;
    point lookups show their median latency in the seconds panel and their peak RSS."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    figure, axes = plt.subplots(1, 3, figsize=(17, 4.8))
    seconds, speed, memory = axes
    for operation in OPERATIONS:
        measured = sorted((r for r in results if r.operation == operation and r.ok), key=lambda r: r.rows)
        if not measured:
            continue
        x = [r.rows for r in measured]
        if operation == LOOKUP:
            seconds.plot(x, [r.latency_ms["median"] / 1e3 for r in measured], marker="o", linestyle="--",
                         label=f"{operation} (median, one lookup)")
        else:
            seconds.plot(x, [r.seconds for r in measured], marker="o", label=operation)
            speed.plot(x, [r.rows_per_second for r in measured], marker="o", label=operation)
        memory.plot(x, [r.peak_rss_mib for r in measured], marker="o", label=operation)
    memory.axhline(MEMORY_LIMIT_MIB, color="tab:red", linestyle="--", linewidth=1,
                   label=f"write limit: {WRITE_BUFFER_MB} + {MEMORY_SLACK_MB} MiB")
    seconds.set_yscale("log")
    seconds.set_ylabel("seconds (log scale, lower is better)")
    seconds.set_title("wall time")
    speed.set_ylabel("input rows per second (higher is better)")
    speed.yaxis.set_major_formatter(FuncFormatter(lambda value, _: rate_text(value).replace("/s", "")))
    speed.set_ylim(bottom=0)
    speed.set_title("throughput (flat = linear cost)")
    memory.set_ylabel("peak RSS of the child process, MiB")
    memory.set_ylim(bottom=0)
    memory.set_title("peak memory")
    for axis in axes:
        axis.set_xscale("log")
        axis.set_xlabel("rows written (log scale)")
        axis.grid(which="major", alpha=0.3)
        axis.legend(fontsize=8)
    if title:
        figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(path, dpi=130)
    plt.close(figure)


if __name__ == "__main__":
    sys.exit(child_main())
