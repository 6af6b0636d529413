"""A small, fast local SparkSession for tests (settings from shared/notes/spark.md).

One session per test run: call `spark_session()` from a session-scoped fixture and
`stop_spark_session()` when the run ends.  Importing this module never imports pyspark.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
from typing import Any

_session: Any = None
_warehouse: str | None = None


def java_available() -> bool:
    return shutil.which("java") is not None


def spark_session() -> Any:
    """The run's `local[2]` SparkSession, started on first use (about 5 s)."""
    global _session, _warehouse
    if _session is not None:
        return _session
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    _warehouse = tempfile.mkdtemp(prefix="mergetree-spark-warehouse-")
    jvm_options = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
    _session = (
        SparkSession.builder.master("local[2]")
        .appName("mergetree-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.warehouse.dir", _warehouse)
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.python.filterPushdown.enabled", "true")
        .config("spark.driver.extraJavaOptions", jvm_options)
        .getOrCreate()
    )
    _session.sparkContext.setLogLevel("ERROR")
    return _session


def stop_spark_session() -> None:
    global _session, _warehouse
    if _session is not None:
        _session.stop()
        _session = None
    if _warehouse is not None:
        shutil.rmtree(_warehouse, ignore_errors=True)
        _warehouse = None
