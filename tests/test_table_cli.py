"""The table command line, run as a user would."""
from __future__ import annotations

import subprocess
import sys

import pyarrow as pa

from mergetree import Table


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
    expire = run("expire", path, "--retain", "1", "--orphans")
    assert expire.returncode == 0 and "expired 3 snapshot(s)" in expire.stdout
    assert len(Table.open(path).snapshots()) == 1
    bad = run("read", path, "--filter", "nope = 1")
    assert bad.returncode == 2 and "nope" in bad.stderr
