"""A small, fast local SparkSession for tests (settings from shared/notes/spark.md).

One session per test run: call `spark_session()` from a session-scoped fixture and
`stop_spark_session()` when the run ends.  Importing this module never imports pyspark.
"""
from __future__ import annotations

import shutil
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
    from mergetree.spark import local_session

    _warehouse = tempfile.mkdtemp(prefix="mergetree-spark-warehouse-")
    _session = local_session("mergetree-tests", _warehouse)
    return _session


def stop_spark_session() -> None:
    global _session, _warehouse
    if _session is not None:
        _session.stop()
        _session = None
    if _warehouse is not None:
        shutil.rmtree(_warehouse, ignore_errors=True)
        _warehouse = None
