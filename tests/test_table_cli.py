"""The table command line, run as a user would."""
from __future__ import annotations

import os
import subprocess
import sys

import pyarrow as pa

from mergetree import Table
from mergetree.table.workload import querylog


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mergetree", *args], capture_output=True, text=True)


def test_info_read_compact_expire(tmp_path):
    path = str(tmp_path / "t")
    t = Table.create(path, pa.schema([("id", pa.int64()), ("name", pa.string())]), primary_key="id",
                     buckets=2, options={"write-only": "true"})
    for i in range(3):
        t.write(pa.table({"id": [i, i + 10], "name": [f"n{i}", f"m{i}"]}))
    info = run("info", path)
    assert info.returncode == 0, info.stderr
    assert "primary key: ['id']" in info.stdout and "APPEND" in info.stdout and "L0" in info.stdout
    read = run("read", path, "--filter", "id in 1,11", "--columns", "id,name")
    assert read.returncode == 0 and "(2 rows)" in read.stdout and "m1" in read.stdout
    compact = run("compact", path, "--full")
    assert compact.returncode == 0 and "committed snapshot" in compact.stdout
    assert Table.open(path).latest_snapshot().commit_kind == "COMPACT"
    expire = run("expire", path, "--retain", "1", "--older-than-hours", "0", "--orphans")
    assert expire.returncode == 0 and "expired 3 snapshot(s)" in expire.stdout
    assert len(Table.open(path).snapshots()) == 1
    bad = run("read", path, "--filter", "nope = 1")
    assert bad.returncode == 2 and "nope" in bad.stderr


def test_repair_checks_the_table_and_its_logs(tmp_path):
    path = str(tmp_path / "t")
    t = Table.create(path, pa.schema([("id", pa.int64())]), primary_key="id")
    t.write({"id": [1, 2]})
    t.read()
    querylog.flush()
    assert os.path.isdir(querylog.log_path(path))
    out = run("repair", path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ("nothing to repair: the latest snapshot is intact, and so are the query log and "
                                  "the optimizer history").split()
    log = run("repair", querylog.log_path(path))
    assert log.returncode == 0 and log.stdout.startswith("nothing to repair: the query log at"), log.stdout


def test_hours_are_finite_and_not_negative(tmp_path):
    path = str(tmp_path / "t")
    Table.create(path, pa.schema([("id", pa.int64())]), primary_key="id").write({"id": [1]})
    for args in (("--older-than-hours", "inf"), ("--older-than-hours", "nan"), ("--older-than-hours", "1e300"),
                 ("--orphans", "--orphans-older-than-hours", "inf"), ("--older-than-hours=-2",)):
        out = run("expire", path, *args)
        assert out.returncode == 2, (args, out.stdout)
        assert "must be 0 or more hours" in out.stderr.splitlines()[-1] and "Traceback" not in out.stderr, args
    assert run("expire", path, "--older-than-hours", "1e6").returncode == 0
