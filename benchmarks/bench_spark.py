"""``mergetree bench --spark``: mergetree's PySpark integration against plain Spark.

Two tables (``left``, ``right``) of ``commits`` commits of ``upserts / commits`` distinct
random ids each over a key space of ``keys`` ids, ``buckets`` buckets, written with
``write-only`` so every commit stays a sorted run of its own in every bucket.  In one
``local[2]`` session:

* read: ``spark.read.format("mergetree")`` (one task per bucket merges its runs) vs Spark
  reading the same data files as plain Parquet and deduplicating with
  ``row_number() over (partition by key order by _SEQUENCE_NUMBER desc) = 1`` (dropping
  delete rows, ``_VALUE_KIND`` 1 or 3);
* join: ``mergetree.spark.bucket_join`` (inner, on ``id``) vs Spark's sort-merge join of the
  same unmerged files after the same deduplication (both sides pay for merging runs);
  beside it Spark's own ``bucketBy(buckets, "id").sortBy("id")`` tables (written from the
  deduplicated rows, untimed) joined;
* compaction: ``mergetree.spark.compact(spark, path, full=True)``, input rows per second.

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

__all__ = ["SparkResult", "format_spark_results", "run_spark_bench", "spark_ratios"]

DEFAULT_UPSERTS = 4_000_000
DEFAULT_KEYS = 4_000_000   # 5 commits of 800k random distinct ids: ~2.7M distinct keys in the end
DEFAULT_COMMITS = 5
DEFAULT_BUCKETS = 8
QUICK_FACTOR = 10
SEED = 20240613
KEY = "id"

TARGETS = {"read_vs_spark_dedup": 2.0, "join_vs_spark_smj": 1.5}


@dataclass
class SparkResult:
    name: str
    rows: int          # input rows the step consumed (data-file rows)
    seconds: float
    output_rows: int
    check: str = "ok"  # "ok" or what disagreed

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


def run_spark_bench(upserts: int = DEFAULT_UPSERTS, keys: int = DEFAULT_KEYS, commits: int = DEFAULT_COMMITS,
                    buckets: int = DEFAULT_BUCKETS, repeat: int = 2, quick: bool = False,
                    progress: bool | None = None) -> list[SparkResult]:
    import mergetree.spark as ms

    if quick:
        upserts, keys = upserts // QUICK_FACTOR, keys // QUICK_FACTOR
    work = tempfile.mkdtemp(prefix="mergetree-bench-spark-")
    results = []
    try:
        with timing.progress_bar("spark bench", "steps", 9, progress) as advance:
            left, right = os.path.join(work, "left"), os.path.join(work, "right")
            left_ids = write_table(left, upserts, keys, commits, buckets, SEED)
            right_ids = write_table(right, upserts, keys, commits, buckets, SEED + 1)
            join_rows = len(np.intersect1d(left_ids, right_ids, assume_unique=True))
            advance()
            spark = spark_session(os.path.join(work, "warehouse"), buckets)
            ms.register(spark)
            advance()

            def measure(name, make_df, input_rows, expected):
                seconds = _seconds(lambda: _noop(make_df()), repeat)
                got = make_df().count()
                check = "ok" if got == expected else f"WRONG: {got:,} rows, expected {expected:,}"
                results.append(SparkResult(name, input_rows, seconds, got, check))

            measure("read: mergetree data source", lambda: spark.read.format("mergetree").load(left),
                    upserts, len(left_ids))
            advance()
            measure("read: Spark parquet + row_number dedup", lambda: spark_dedup(spark, left), upserts, len(left_ids))
            advance()
            measure("join: mergetree bucket_join", lambda: ms.bucket_join(spark, left, right, on=KEY),
                    2 * upserts, join_rows)
            advance()
            measure("join: Spark SMJ (parquet + dedup)",
                    lambda: spark_dedup(spark, left).join(_suffixed(spark_dedup(spark, right)), KEY),
                    2 * upserts, join_rows)
            advance()
            for name, path in (("bl", left), ("br", right)):
                spark_dedup(spark, path).write.bucketBy(buckets, KEY).sortBy(KEY).mode("overwrite").saveAsTable(name)
            advance()
            measure("join: Spark bucketBy tables (deduped)",
                    lambda: spark.table("bl").join(_suffixed(spark.table("br")), KEY),
                    len(left_ids) + len(right_ids), join_rows)
            advance()
            seconds = _seconds(lambda: ms.compact(spark, left, full=True))
            got = spark.read.format("mergetree").load(left).count()
            check = "ok" if got == len(left_ids) else f"WRONG: {got:,} rows, expected {len(left_ids):,}"
            results.append(SparkResult("compact: mergetree.spark.compact full", upserts, seconds, got, check))
            advance()
            spark.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return results


# ---------------------------------------------------------------- reporting


def _rate(value: float) -> str:
    return f"{value / 1e6:.2f} M/s" if value >= 1e6 else f"{value / 1e3:.1f} k/s"


def spark_ratios(results: list[SparkResult]) -> dict:
    by = {r.name: r for r in results}

    def ratio(ours: str, theirs: str) -> float | None:
        a, b = by.get(ours), by.get(theirs)
        if a is None or b is None or a.check != "ok" or b.check != "ok":
            return None
        return b.seconds / a.seconds

    return {"read_vs_spark_dedup": ratio("read: mergetree data source", "read: Spark parquet + row_number dedup"),
            "join_vs_spark_smj": ratio("join: mergetree bucket_join", "join: Spark SMJ (parquet + dedup)"),
            "join_vs_spark_bucketby": ratio("join: mergetree bucket_join", "join: Spark bucketBy tables (deduped)")}


def format_spark_results(results: list[SparkResult]) -> Group:
    """The table of every step, then the ratios against the targets (print with `bench.show`)."""
    rows = [["step", "input rows", "seconds", "input rows/s", "output rows", "check"]]
    rows += [[r.name, f"{r.rows:,}", f"{r.seconds:.2f}", _rate(r.rows_per_second), f"{r.output_rows:,}",
              escape(r.check)] for r in results]
    lines = []
    for name, value in spark_ratios(results).items():
        target = TARGETS.get(name)
        shown = "-" if value is None else f"{value:.2f}x"
        verdict = ("" if target is None or value is None
                   else f" (target >= {target:.1f}x: {'met' if value >= target else 'MISSED'})")
        lines.append(f"{name}: {shown}{verdict}")
    return Group(render.text_table(rows, right_aligned={1, 2, 3, 4}), *(Text(line) for line in lines))
