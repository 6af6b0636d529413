"""The table command line on a real S3 server (moto's, tests/s3_server.py), run as a user would:
`--storage-option KEY=VALUE` reaches the store, every command answers as the table API does,
and the secret key given on the command line is in no output, error or file the commands wrote."""
from __future__ import annotations

import os
import subprocess
import sys
import uuid

import pyarrow as pa
import pytest

from mergetree import Table
from mergetree.storage import resolve

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


@pytest.fixture(autouse=True)
def _no_query_log(monkeypatch):
    # this process's reads log nothing (its log would be flushed at exit, after the server stopped);
    # the commands' own processes log theirs and flush it before they exit
    monkeypatch.setenv("MERGETREE_QUERY_LOG", "0")


def _uri() -> str:
    return f"s3://lake/cli-{uuid.uuid4().hex[:12]}"


def _flags(options: dict) -> list[str]:
    return [word for key, value in options.items() for word in ("--storage-option", f"{key}={value}")]


def run(*args: str, secret: str, log: bool = False) -> subprocess.CompletedProcess:
    env = dict(os.environ, MERGETREE_QUERY_LOG="1" if log else "0")
    out = subprocess.run([sys.executable, "-m", "mergetree", *args], capture_output=True, text=True, env=env,
                         timeout=180)
    assert secret not in out.stdout + out.stderr, args[:2]
    return out


def _table(s3_server, uri: str) -> Table:
    t = Table.create(uri, SCHEMA, primary_key="id", buckets=2, options={"write-only": "true"},
                     storage_options=s3_server.options())
    for i in range(3):
        t.write(pa.table({"id": [i, i + 10], "name": [f"n{i}", f"m{i}"]}))
    return t


def test_the_table_commands_on_s3(s3_server, tmp_path):
    options = s3_server.options()
    secret = options["aws_secret_access_key"]
    uri = _uri()
    _table(s3_server, uri)
    flags = _flags(options)

    info = run("info", uri, *flags, secret=secret)
    assert info.returncode == 0, info.stderr
    assert f"table {uri}" in info.stdout and "primary key: ['id']" in info.stdout and "APPEND" in info.stdout
    read = run("read", uri, "--filter", "id in 1,11", "--columns", "id,name", "--explain", *flags, secret=secret,
               log=True)
    assert read.returncode == 0, read.stderr
    assert "(2 rows)" in read.stdout and "m1" in read.stdout and "store requests to plan" in read.stdout
    compact = run("compact", uri, "--full", "--no-progress", *flags, secret=secret)
    assert compact.returncode == 0 and "committed snapshot 4" in compact.stdout, compact.stderr
    reopened = Table.open(uri, storage_options=options)
    assert reopened.latest_snapshot().commit_kind == "COMPACT"
    assert sorted(reopened.read().column("id").to_pylist()) == [0, 1, 2, 10, 11, 12]
    # the read command's process flushed its query log to the table's store before it exited
    shown = run("queries", "show", uri, *flags, secret=secret)
    assert shown.returncode == 0 and "1 queries logged" in shown.stdout and "cli" in shown.stdout, shown.stdout
    page = tmp_path / "report.html"
    report = run("report", uri, "--html", str(page), *flags, secret=secret)
    assert report.returncode == 0 and secret not in page.read_text(), report.stderr
    expire = run("expire", uri, "--retain", "1", "--older-than-hours", "0", "--orphans", *flags, secret=secret)
    assert expire.returncode == 0 and "expired 3 snapshot(s)" in expire.stdout, expire.stderr
    assert [s.id for s in Table.open(uri, storage_options=options).snapshots()] == [4]
    repair = run("repair", uri, *flags, secret=secret)
    assert repair.returncode == 0 and repair.stdout.startswith("nothing to repair"), repair.stderr
    log = run("repair", f"{uri}/queries", *flags, secret=secret)
    assert log.returncode == 0 and "the query log at" in log.stdout and "is intact" in log.stdout, log.stderr
    daemon = run("optimize-daemon", uri, "--once", *flags, secret=secret)
    assert daemon.returncode == 0 and f"{uri}: " in daemon.stdout, daemon.stderr
    storage = resolve(uri, options)
    for item in storage.list(""):  # what the commands wrote: snapshots, manifests, the query log, ...
        assert secret.encode() not in storage.read(item.path), item.path


def test_bad_storage_options_are_one_line_without_the_secret(s3_server):
    options = s3_server.options()
    secret = options["aws_secret_access_key"]
    uri = _uri()
    _table(s3_server, uri)
    flags = _flags(options)

    def refused(*args: str, code: int = 2) -> str:
        out = run("read", uri, *args, secret=secret)
        assert out.returncode == code, (args, out.stdout, out.stderr)
        assert "Traceback" not in out.stderr and out.stdout == "", args
        return out.stderr.strip().splitlines()[-1]

    assert "--storage-option #1 is not KEY=VALUE" in refused("--storage-option", secret)
    assert "is not KEY=VALUE" in refused("--storage-option", f"={secret}")
    assert "is not KEY=VALUE" in refused("--storage-option", f"{secret[:8]} x={secret}")
    assert "gives no value for 'aws_region'" in refused("--storage-option", "aws_region=")
    assert "'AWS_SECRET_ACCESS_KEY' is given twice" in refused(*flags, "--storage-option",
                                                               f"AWS_SECRET_ACCESS_KEY={secret}")
    assert "unknown storage option 'no_such_key'" in refused(*flags, "--storage-option", "no_such_key=1")
    # a mistyped flag: argparse's usage error lists the words it did not know, without their values
    assert "--storage-options aws_secret_access_key=***" in refused("--storage-options",
                                                                   f"aws_secret_access_key={secret}")
    # a wrong secret: the server refuses, the error names the URI, neither secret is shown
    wrong = dict(options, aws_secret_access_key=secret[::-1])
    out = run("read", uri, *_flags(wrong), secret=secret)
    assert out.returncode == 1 and uri in out.stderr and "access denied" in out.stderr, out.stderr
    assert secret[::-1] not in out.stderr + out.stdout
    # the read-only user reads, and cannot compact
    reader = dict(options, aws_access_key_id=s3_server.read_only_key_id,
                  aws_secret_access_key=s3_server.read_only_secret)
    assert run("read", uri, *_flags(reader), secret=secret).returncode == 0
    out = run("compact", uri, "--full", "--no-progress", *_flags(reader), secret=secret)
    assert out.returncode == 1 and s3_server.read_only_secret not in out.stderr + out.stdout, out.stderr
    assert Table.open(uri, storage_options=options).latest_snapshot().id == 3  # nothing committed


def test_storage_options_parse_on_their_own():
    import argparse

    from mergetree.cli.options import redact_arguments, storage_options
    from mergetree.errors import InvalidArgumentError

    def parse(*items: str):
        return storage_options(argparse.Namespace(storage_option=list(items)))

    assert parse() is None and storage_options(argparse.Namespace()) is None
    assert parse("aws_region=eu-west-1", "s3.endpoint=http://h:1/a=b") == {
        "aws_region": "eu-west-1", "s3.endpoint": "http://h:1/a=b"}  # the value may hold '='
    for bad in ("Sekrit-1", "=Sekrit-1", " =Sekrit-1", "a b=Sekrit-1", "region="):
        with pytest.raises(InvalidArgumentError) as caught:
            parse("aws_region=x", bad)
        assert ("#2" in str(caught.value) or "'region'" in str(caught.value)) and "Sekrit" not in str(caught.value)
    assert redact_arguments(["--x", "k=v=w", "=s", "plain"]) == ["--x", "k=***", "=***", "plain"]
