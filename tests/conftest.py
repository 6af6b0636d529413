"""Shared fixtures."""
from __future__ import annotations

import inspect
import shutil
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
IN_SOURCE_TREE = (REPO_ROOT / "Makefile").exists()

# What Windows lacks: SIGKILL, process groups, getrusage.  A test that uses one of them, itself
# or through a module-level helper or child script it names, is skipped in the wheels' test run
# there (tests/test_portability.py checks the crash tests are found).
POSIX_PROCESS_CALLS = ("SIGKILL", "killpg", "resource.")


def uses_posix_process_calls(function) -> bool:
    """Whether a test function, or a module-level function, class or string it names, mentions
    a POSIX-only process call."""
    def mentions(obj) -> bool:
        if isinstance(obj, str):
            return any(call in obj for call in POSIX_PROCESS_CALLS)
        if inspect.isfunction(obj) or inspect.isclass(obj):
            try:
                return mentions(inspect.getsource(obj))
            except (OSError, TypeError):
                return False
        return False

    module_globals = function.__globals__
    return mentions(function) or any(
        mentions(module_globals[name]) for name in function.__code__.co_names if name in module_globals
        and (isinstance(module_globals[name], str) or getattr(module_globals[name], "__module__", None)
             == function.__module__))


# The modules whose tests take longest (tens of seconds of wall time each: Spark in processes of
# their own, fresh environments, kill loops), run first: two xdist workers then end on short tests
# together instead of one waiting out a long one started late (alphabetically, most are late)
SLOW_MODULES_FIRST = ("test_spark_s3", "test_spark_streaming_kill", "test_table_crash", "test_demo_setup",
                      "test_bench_paimon", "test_spark_memory", "test_dependency_floors", "test_readme",
                      "test_spark_types", "test_s3_faults", "test_demo_spark", "test_table_model",
                      "test_bench_advisor", "test_spark_paimon", "test_paimon_s3", "test_optimize_crash")


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(SLOW_MODULES_FIRST)}
    items.sort(key=lambda item: rank.get(getattr(getattr(item, "module", None), "__name__", ""), len(rank)))
    if sys.platform != "win32":
        return
    skip = pytest.mark.skip(reason="kills or measures a process with POSIX-only calls: not on Windows")
    for item in items:
        function = getattr(item, "function", None)
        if function is not None and uses_posix_process_calls(function):
            item.add_marker(skip)


@pytest.fixture(scope="session")
def spark():
    """The run's local[2] SparkSession (started once, about 5 s)."""
    if shutil.which("java") is None:
        pytest.skip("no java on PATH: the real-Spark checks need a JVM")
    try:
        import pyspark  # noqa: F401
    except ImportError:
        if IN_SOURCE_TREE:  # `make test` installs pyspark: its absence is a broken setup
            pytest.fail("pyspark is not installed: run `.venv/bin/python -m pip install 'pyspark[sql]' "
                        "'pandas<3'` (or delete .venv/.deps-installed and `make test`)")
        # tests copied away from the source tree (the installed-wheel checks) get only
        # pytest and hypothesis
        pytest.skip("pyspark is not installed where the tests run outside the source tree")
    from spark_session import spark_session, stop_spark_session
    yield spark_session()
    stop_spark_session()


@pytest.fixture(scope="session")
def s3_server():
    """The run's S3 server: moto's standalone server on 127.0.0.1 (started once per session and
    xdist worker, about 1 s), with signed requests checked; see tests/s3_server.py."""
    try:
        import boto3  # noqa: F401
        import moto.server  # noqa: F401
    except ImportError:
        # `make test` installs the test extra's moto[server]; the installed-wheel checks do not
        pytest.skip("moto[server] is not installed: the S3 tests need its standalone server "
                    "(pip install 'moto[server]')")
    from s3_server import MotoS3Server
    server = MotoS3Server.start()
    yield server
    server.stop()
