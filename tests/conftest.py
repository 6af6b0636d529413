"""Shared fixtures."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
IN_SOURCE_TREE = (REPO_ROOT / "Makefile").exists()


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "private_format: a test of mergetree's own table format (its files, or semantics Paimon's "
                   "format does not share): `Table.create` makes tables of that format in it, and in the "
                   "processes it starts. Issue 37 migrates the format away and deletes these tests.")


@pytest.fixture(autouse=True)
def _private_format(request, monkeypatch):
    """Tables of mergetree's own format for a test marked `private_format` (Paimon's otherwise)."""
    if request.node.get_closest_marker("private_format") is not None:
        monkeypatch.setenv("MERGETREE_CREATE_FORMAT", "mergetree")


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
