"""`local_session`: the one local[2] SparkSession factory used by tests, demos and benchmarks."""
from __future__ import annotations

import os
import sys
import tempfile
from typing import Any

__all__ = ["local_session"]


def local_session(app_name: str = "mergetree", warehouse: str | None = None, shuffle_partitions: int = 2,
                  fast_start: bool = True, master: str = "local[2]", **config: str) -> Any:
    """A `local[2]` (or `master`) SparkSession with the settings that keep tests, demos and benchmarks
    quick on a small machine (UI off, few shuffle partitions, loopback, UTC, Arrow and
    Python filter pushdown on).  `fast_start` trades JIT quality for start-up time: leave
    it off for long runs that are being timed."""
    from pyspark.sql import SparkSession
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    settings = {
        "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        "spark.default.parallelism": master[len("local["):-1] if master.startswith("local[") else "2",
        "spark.driver.bindAddress": "127.0.0.1", "spark.driver.host": "127.0.0.1",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.warehouse.dir": warehouse or tempfile.mkdtemp(prefix="mergetree-spark-warehouse-"),
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.python.filterPushdown.enabled": "true",
    }
    if fast_start:
        settings["spark.driver.extraJavaOptions"] = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
    settings.update(config)
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session
