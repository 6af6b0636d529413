"""`mergetree bench --spark`'s ratios and report from known step results (the workload itself
needs a Spark session of its own and minutes: it runs in `mergetree bench --spark`)."""
from __future__ import annotations

import pytest
from conftest import IN_SOURCE_TREE

if not IN_SOURCE_TREE:  # the benchmarks live beside the package, in the source tree only
    pytest.skip("the benchmarks are not installed with the wheel", allow_module_level=True)

from rich.console import Console

from benchmarks.bench_spark import SparkResult, format_spark_results, spark_ratios


def _results(**overrides) -> list[SparkResult]:
    steps = [SparkResult("read: mergetree data source", 100, 2.0, 60),
             SparkResult("read: Spark parquet + row_number dedup", 100, 8.0, 60),
             SparkResult("join: mergetree bucket_join (8 x 16 buckets)", 200, 3.0, 40),
             SparkResult("join: Spark SMJ (parquet + dedup)", 200, 21.0, 40),
             SparkResult("join: Spark bucketBy tables (8 x 8, deduped)", 120, 2.4, 40),
             SparkResult("write: data source, every task every bucket", 20, 8.0, 20, files=128),
             SparkResult("write: mergetree.spark.write, routed by bucket", 20, 4.0, 20, files=18),
             SparkResult("compact: mergetree.spark.compact full", 100, 4.0, 60),
             SparkResult("join: mergetree bucket_join, both compacted (8 x 16)", 120, 2.0, 40)]
    for step in steps:
        if step.name in overrides:
            step.check = overrides[step.name]
    return steps


def test_ratios_name_the_right_steps():
    ratios = spark_ratios(_results())
    assert ratios == pytest.approx({"read_vs_spark_dedup": 4.0, "join_vs_spark_smj": 7.0, "join_vs_spark_bucketby": 0.8,
                      "compacted_join_vs_spark_bucketby": 1.2, "write_routed_vs_source": 2.0,
                      "files_per_bucket": 18 / 16})


def test_a_wrong_step_gives_no_ratio():
    ratios = spark_ratios(_results(**{"join: Spark bucketBy tables (8 x 8, deduped)": "WRONG: 1 rows"}))
    assert ratios["join_vs_spark_bucketby"] is None and ratios["compacted_join_vs_spark_bucketby"] is None
    assert ratios["join_vs_spark_smj"] == 7.0


def test_report_says_which_targets_are_met():
    console = Console(width=200, record=True)
    console.print(format_spark_results(_results()))
    text = console.export_text()
    assert "join_vs_spark_smj: 7.00x (target >= 3.0x: met)" in text
    assert "join_vs_spark_bucketby: 0.80x (target >= 1.0x: MISSED)" in text
    assert "files per commit / buckets: 1.12 (target <= 1.2: met)" in text
    assert "128" in text and "18" in text  # the files column
