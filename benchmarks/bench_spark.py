"""``mergetree bench --spark``: mergetree's PySpark integration against plain Spark.

Two tables (``left``, ``right``) of ``upserts`` rows each (10M) written in ``commits`` (5)
commits of distinct random ids over a key space of ``keys`` ids, ``left`` in 8 buckets and
``right`` in 16, written with ``write-only`` so every commit stays a sorted run of its own in
every bucket.  In one ``local[2]`` session:

* read: ``spark.read.format("mergetree")`` (one task per bucket merges its runs) vs Spark
  reading the same data files as plain Parquet and deduplicating with
  ``row_number() over (partition by key order by _SEQUENCE_NUMBER desc) = 1`` (dropping
  delete rows, ``_VALUE_KIND`` 1 or 3);
* join: ``mergetree.spark.bucket_join`` (inner, on ``id``; 8 buckets joined with 16, so each
  task merges two buckets of the right side) vs Spark's sort-merge join of the same unmerged
  files after the same deduplication (both sides pay for merging runs), and vs Spark's own
  ``bucketBy(8, "id").sortBy("id")`` tables (written from the deduplicated rows, untimed: Spark
  joins bucketed tables without a shuffle only when the counts are equal), whose plan is checked
  to hold no Exchange;
* write: one commit of ``upserts / commits`` rows from a DataFrame of 8 partitions into a
  16-bucket table, through the data source (every task writes every bucket it holds rows of)
  and through ``mergetree.spark.write`` (rows routed by bucket first): seconds and files per
  commit;
* compaction: ``mergetree.spark.compact(spark, path, full=True)``, input rows per second; then,
  with the right table compacted too (untimed), ``bucket_join`` again: like for like with the
  deduplicated ``bucketBy`` tables (one sorted run per bucket on each side).

Every query is forced in full with ``df.write.format("noop")``; row counts are checked
separately (untimed) against the counts computed from the input with numpy.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import asdict, dataclass

import numpy as np
import pyarrow as pa
from rich.console import Group
from rich.markup import escape
from rich.text import Text

from mergetree import RowKind, Table
from mergetree.cli import render
from mergetree.table.schema import KEY_PREFIX, KIND_COLUMN, SEQUENCE_COLUMN

from . import timing
from .report import rate_text

__all__ = ["SparkResult", "format_spark_results", "run_spark_bench", "spark_ratios"]

DEFAULT_UPSERTS = 10_000_000
DEFAULT_KEYS = 10_000_000   # 5 commits of 2M random distinct ids: ~6.7M distinct keys in the end
DEFAULT_COMMITS = 5
DEFAULT_BUCKETS = 8         # the left table's, and Spark's bucketBy tables'
RIGHT_BUCKETS = 16          # the right table's: bucket i of 8 joins buckets i and i+8 of 16
WRITE_PARTITIONS = 8        # input partitions of the write step's DataFrame
QUICK_FACTOR = 10
SEED = 20240613
KEY = "id"

# ratios are "times faster than"; files_per_bucket is files per commit / buckets (lower is better)
TARGETS = {"read_vs_spark_dedup": 2.0, "join_vs_spark_smj": 3.0, "join_vs_spark_bucketby": 1.0}
MAX_FILES_PER_BUCKET = 1.2
JOIN_RUNS = 5  # the bucket joins and the bucketBy join: best of 5 (the 2-core machine is noisy: ~10% run to run)


@dataclass
class SparkResult:
    name: str
    rows: int          # input rows the step consumed (data-file rows)
    seconds: float
    output_rows: int
    check: str = "ok"  # "ok" or what disagreed
    files: int | None = None  # data files one commit added (write steps)

    @property
    def rows_per_second(self) -> float:
        return self.rows / self.seconds if self.seconds > 0 else float("nan")

    def to_dict(self) -> dict:
        return {**asdict(self), "rows_per_second": self.rows_per_second}


# ---------------------------------------------------------------- session and tables


def spark_session(warehouse: str, partitions: int):
    import mergetree.spark

    # timed runs: keep the JVM's full JIT (no fast-start flags)
    return mergetree.spark.local_session("mergetree-bench", warehouse, partitions, fast_start=False,
                                         **{"spark.driver.memory": "4g"})


def write_table(path: str, upserts: int, keys: int, commits: int, buckets: int, seed: int) -> np.ndarray:
    """Write the table; returns its distinct ids (the expected answer of a read)."""
    schema = pa.schema([(KEY, pa.int64()), ("v_int", pa.int64()), ("v_float", pa.float64()), ("v_str", pa.string())])
    table = Table.create(path, schema, primary_key=[KEY], buckets=buckets, options={"write-only": "true"})
    rng = np.random.default_rng(seed)
    per_commit = upserts // commits
    seen = []
    for c in range(commits):
        ids = rng.choice(keys, size=per_commit, replace=False).astype(np.int64)
        seen.append(ids)
        table.write(pa.table({KEY: ids, "v_int": ids * 7 + c, "v_float": ids * 0.5 + c,
                              "v_str": pa.array(np.char.add(f"v{c}-", (ids % 100_000).astype(str)))}))
    return np.unique(np.concatenate(seen))


def data_files(path: str) -> list[str]:
    """Every live data file of the table (an unfiltered plan prunes none)."""
    return sorted(os.path.join(path, f.file_name) for f in Table.open(path).plan().files)


def spark_dedup(spark, path: str):
    """The table's rows from its data files as plain Parquet, newest version of each key."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    retractions = (int(RowKind.UPDATE_BEFORE), int(RowKind.DELETE))
    raw = spark.read.parquet(*data_files(path))
    newest = Window.partitionBy(KEY_PREFIX + KEY).orderBy(F.col(SEQUENCE_COLUMN).desc())
    return (raw.withColumn("_rn", F.row_number().over(newest))
            .where((F.col("_rn") == 1) & ~F.col(KIND_COLUMN).isin(*retractions))
            .select(*Table.open(path).schema.names))


def _suffixed(df):
    return df.select(*[df[c].alias(c if c == KEY else c + "_right") for c in df.columns])


# ---------------------------------------------------------------- measuring


def _noop(df) -> None:
    df.write.format("noop").mode("overwrite").save()


def _seconds(function, repeat: int = 1) -> float:
    """Wall seconds of the fastest of ``repeat`` calls.  The work runs in the JVM, so
    Python's collector is left running (pausing it changes nothing there)."""
    return timing.best_of(function, repeat=repeat, pause_gc=False).seconds


def write_frame(spark, rows: int, keys: int, partitions: int):
    """`rows` distinct ids of the key space (a stride coprime to it) in `partitions` partitions."""
    stride = 7919  # prime, and no factor of a key space of 2s and 5s
    return spark.range(0, rows, numPartitions=partitions).selectExpr(
        f"(id * {stride}) % {keys} as {KEY}", "id * 7 as v_int", "id * 0.5 as v_float",
        "concat('w-', cast(id % 100000 as string)) as v_str")


def _files(path: str) -> int:
    return len(Table.open(path).plan().files)


def run_spark_bench(upserts: int = DEFAULT_UPSERTS, keys: int = DEFAULT_KEYS, commits: int = DEFAULT_COMMITS,
                    buckets: int = DEFAULT_BUCKETS, right_buckets: int = RIGHT_BUCKETS, repeat: int = 2,
                    quick: bool = False, progress: bool | None = None) -> list[SparkResult]:
    import mergetree.spark as ms

    if quick:
        upserts, keys = upserts // QUICK_FACTOR, keys // QUICK_FACTOR
    work = tempfile.mkdtemp(prefix="mergetree-bench-spark-")
    results = []
    try:
        with timing.progress_bar("spark bench", "steps", 12, progress) as advance:
            left, right = os.path.join(work, "left"), os.path.join(work, "right")
            left_ids = write_table(left, upserts, keys, commits, buckets, SEED)
            right_ids = write_table(right, upserts, keys, commits, right_buckets, SEED + 1)
            join_rows = len(np.intersect1d(left_ids, right_ids, assume_unique=True))
            advance()
            spark = spark_session(os.path.join(work, "warehouse"), buckets)
            ms.register(spark)
            advance()

            def measure(name, make_df, input_rows, expected, runs=repeat):
                seconds = _seconds(lambda: _noop(make_df()), runs)
                got = make_df().count()
                check = "ok" if got == expected else f"WRONG: {got:,} rows, expected {expected:,}"
                results.append(SparkResult(name, input_rows, seconds, got, check))

            measure("read: mergetree data source", lambda: spark.read.format("mergetree").load(left),
                    upserts, len(left_ids))
            advance()
            measure("read: Spark parquet + row_number dedup", lambda: spark_dedup(spark, left), upserts, len(left_ids))
            advance()
            measure(f"join: mergetree bucket_join ({buckets} x {right_buckets} buckets)",
                    lambda: ms.bucket_join(spark, left, right, on=KEY), 2 * upserts, join_rows, runs=JOIN_RUNS)
            advance()
            measure("join: Spark SMJ (parquet + dedup)",
                    lambda: spark_dedup(spark, left).join(_suffixed(spark_dedup(spark, right)), KEY),
                    2 * upserts, join_rows)
            advance()
            for name, path in (("bl", left), ("br", right)):
                spark_dedup(spark, path).write.bucketBy(buckets, KEY).sortBy(KEY).mode("overwrite").saveAsTable(name)
            bucketed = spark.table("bl").join(_suffixed(spark.table("br")), KEY)
            plan = bucketed._jdf.queryExecution().executedPlan().toString()
            advance()
            measure(f"join: Spark bucketBy tables ({buckets} x {buckets}, deduped)",
                    lambda: spark.table("bl").join(_suffixed(spark.table("br")), KEY),
                    len(left_ids) + len(right_ids), join_rows, runs=JOIN_RUNS)
            if "Exchange" in plan:
                results[-1].check = "WRONG: Spark shuffled its bucketed tables"
            advance()
            rows = upserts // commits
            options = {"primaryKey": KEY, "buckets": str(right_buckets), "write-only": "true"}
            for name, how in (("write: data source, every task every bucket", "source"),
                              ("write: mergetree.spark.write, routed by bucket", "routed")):
                path = os.path.join(work, f"write-{how}")
                frame = write_frame(spark, rows, keys, WRITE_PARTITIONS)
                if how == "source":
                    writer = frame.write.format("mergetree").mode("append")
                    for k, v in options.items():
                        writer = writer.option(k, v)
                    seconds = _seconds(lambda: writer.save(path))  # noqa: B023 (called at once)
                else:
                    seconds = _seconds(lambda: ms.write(frame, path, **options))  # noqa: B023
                got = Table.open(path).read(columns=[KEY]).num_rows
                check = "ok" if got == rows else f"WRONG: {got:,} rows, expected {rows:,}"
                results.append(SparkResult(name, rows, seconds, got, check, files=_files(path)))
                advance()
            seconds = _seconds(lambda: ms.compact(spark, left, full=True))
            got = spark.read.format("mergetree").load(left).count()
            check = "ok" if got == len(left_ids) else f"WRONG: {got:,} rows, expected {len(left_ids):,}"
            results.append(SparkResult("compact: mergetree.spark.compact full", upserts, seconds, got, check))
            advance()
            # like for like with the bucketBy tables: both sides compacted (one run per bucket)
            ms.compact(spark, right, full=True)
            measure(f"join: mergetree bucket_join, both compacted ({buckets} x {right_buckets})",
                    lambda: ms.bucket_join(spark, left, right, on=KEY), len(left_ids) + len(right_ids), join_rows,
                    runs=JOIN_RUNS)
            advance()
            spark.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return results


# ---------------------------------------------------------------- reporting


def _find(results: list[SparkResult], prefix: str) -> SparkResult | None:
    return next((r for r in results if r.name.startswith(prefix) and r.check == "ok"), None)


def spark_ratios(results: list[SparkResult]) -> dict:
    """How many times faster mergetree is than each peer, and the routed write's files per
    commit per bucket (None where a step is missing or wrong)."""
    def ratio(ours: str, theirs: str) -> float | None:
        a, b = _find(results, ours), _find(results, theirs)
        return None if a is None or b is None else b.seconds / a.seconds

    routed = _find(results, "write: mergetree.spark.write")
    return {"read_vs_spark_dedup": ratio("read: mergetree", "read: Spark"),
            "join_vs_spark_smj": ratio("join: mergetree bucket_join (", "join: Spark SMJ"),
            "join_vs_spark_bucketby": ratio("join: mergetree bucket_join (", "join: Spark bucketBy"),
            "compacted_join_vs_spark_bucketby": ratio("join: mergetree bucket_join, both compacted",
                                                      "join: Spark bucketBy"),
            "write_routed_vs_source": ratio("write: mergetree.spark.write", "write: data source"),
            "files_per_bucket": None if routed is None or routed.files is None else routed.files / RIGHT_BUCKETS}


def format_spark_results(results: list[SparkResult]) -> Group:
    """The table of every step, then the ratios against the targets (print with `report.show`)."""
    rows = [["step", "input rows", "seconds", "input rows/s", "output rows", "files", "check"]]
    rows += [[r.name, f"{r.rows:,}", f"{r.seconds:.2f}", rate_text(r.rows_per_second), f"{r.output_rows:,}",
              "" if r.files is None else f"{r.files:,}", escape(r.check)] for r in results]
    lines = []
    for name, value in spark_ratios(results).items():
        if name == "files_per_bucket":
            verdict = "" if value is None else \
                f" (target <= {MAX_FILES_PER_BUCKET}: {'met' if value <= MAX_FILES_PER_BUCKET else 'MISSED'})"
            lines.append(f"routed write, files per commit / buckets: {'-' if value is None else f'{value:.2f}'}"
                         f"{verdict}")
            continue
        target = TARGETS.get(name)
        shown = "-" if value is None else f"{value:.2f}x"
        verdict = ("" if target is None or value is None
                   else f" (target >= {target:.1f}x: {'met' if value >= target else 'MISSED'})")
        lines.append(f"{name}: {shown}{verdict}")
    return Group(render.text_table(rows, right_aligned={1, 2, 3, 4, 5}), *(Text(line) for line in lines))
