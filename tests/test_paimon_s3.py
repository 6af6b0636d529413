"""Paimon warehouses on a real S3 server (moto's, tests/s3_server.py): tables written there by
pypaimon itself (its own S3 filesystem, catalog options ``fs.s3.*``) are read by
`mergetree.paimon` as the same tables written to a local directory are, compacted on the
server (the snapshot published by a conditional create, a lost race rebased), and read back by
pypaimon; bad locations and credentials fail with one error naming the location; a store
without conditional create refuses to compact."""
from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path

import pyarrow as pa
import pytest
from paimon_fixtures import PAIMON_PYTHON, _ipc, needs_pypaimon, rows
from test_paimon import _commits, _key, _options, model

import mergetree.paimon as mp
from mergetree.errors import (
    CompactionConflictError,
    ConditionalCreateUnsupportedError,
    InvalidArgumentError,
    StorageAccessError,
    StorageError,
)
from mergetree.paimon.handle import PaimonTableHandle
from mergetree.table.compaction.runner import execute_unit, plan_units
from mergetree.table.compaction.transaction import rewrite_transaction
from mergetree.table.directory import TableDirectory
from mergetree.table.paimon.metadata import PaimonTable
from mergetree.table.snapshots import FileEntry, Snapshot

pytestmark = needs_pypaimon

TESTS = Path(__file__).resolve().parent
KEY = _key(True)
OPTIONS = _options("deduplicate", 2, True, False)
# partition values some writers escape (':', '=') or that a directory name keeps as they are
# (' '): their files are found by one listing, not by the spelled-out path
ODD_REGIONS = {"r0": "a b", "r1": "x:y", "r2": "p=q"}

# pypaimon's side: paimon_tool's write and read with the S3 catalog options from the environment
_DRIVER = """
import json, os, sys
sys.path.insert(0, sys.argv[1])
import paimon_tool
from pypaimon import CatalogFactory
options = json.loads(os.environ["MERGETREE_TEST_PAIMON_CATALOG"])
paimon_tool._catalog = lambda warehouse: CatalogFactory.create({"warehouse": warehouse, **options})
for command, *args in json.loads(sys.argv[2]):
    getattr(paimon_tool, command)(*args)
"""


@pytest.fixture(autouse=True)
def _no_query_log(monkeypatch):
    monkeypatch.setenv("MERGETREE_QUERY_LOG", "0")


def _catalog(server) -> dict[str, str]:
    """pypaimon's catalog options for the server (its PyArrowFileIO's keys)."""
    return {"fs.s3.endpoint": server.endpoint, "fs.s3.accessKeyId": server.access_key_id,
            "fs.s3.accessKeySecret": server.secret_access_key, "fs.s3.region": "us-east-1",
            "fs.s3.path-style-access": "true"}


class Pypaimon:
    """Runs pypaimon (its own interpreter, one process per `run`) against local warehouses
    and the S3 server."""

    def __init__(self, server, work: Path) -> None:
        self.server, self.work = server, work
        work.mkdir(parents=True, exist_ok=True)
        self.ops: list[list[str]] = []
        self.reads: list[Path] = []

    def write(self, warehouse: str, table: str, commits: list[pa.Table], options: dict,
              partition_keys: tuple[str, ...] = ("region",)) -> None:
        n = len(list(self.work.glob("spec-*.json")))
        files = [_ipc(self.work / f"commit-{n}-{i}.arrow", c) for i, c in enumerate(commits)]
        spec = {"warehouse": warehouse, "table": table, "primary_keys": KEY, "partition_keys": list(partition_keys),
                "options": options, "schema": files[0], "commits": files, "tags": {}, "alter": []}
        path = self.work / f"spec-{n}.json"
        path.write_text(json.dumps(spec))
        self.ops.append(["write", str(path)])

    def read(self, warehouse: str, table: str) -> int:
        out = self.work / f"read-{uuid.uuid4().hex}.arrow"
        self.ops.append(["read", warehouse, table, str(out)])
        self.reads.append(out)
        return len(self.reads) - 1

    def run(self) -> list[pa.Table]:
        """Everything queued, in one pypaimon process; the tables read, in order."""
        env = {**os.environ, "MERGETREE_TEST_PAIMON_CATALOG": json.dumps(_catalog(self.server))}
        done = subprocess.run([PAIMON_PYTHON, "-c", _DRIVER, str(TESTS), json.dumps(self.ops)], capture_output=True,
                              text=True, timeout=600, env=env)
        assert done.returncode == 0, f"pypaimon failed:\n{done.stderr[-4000:]}"
        tables = []
        for path in self.reads:
            with pa.OSFile(str(path), "rb") as f:
                tables.append(pa.ipc.open_file(f).read_all())
        self.ops, self.reads = [], []
        return tables


def _odd(table: pa.Table) -> pa.Table:
    regions = [ODD_REGIONS[r] for r in table.column("region").to_pylist()]
    return table.set_column(table.schema.get_field_index("region"), "region", pa.array(regions, pa.string()))


def _rewritten(directory: TableDirectory, full: bool) -> tuple[Snapshot, list[FileEntry], list[FileEntry], list[str]]:
    """A compaction of every bucket planned and carried out on the engine, not committed:
    (base snapshot, adds, deletes, where its new data files are: local paths or URIs)."""
    base, units = plan_units(directory, None, full)
    assert base is not None and units
    adds: list[FileEntry] = []
    deletes: list[FileEntry] = []
    for unit in units:
        a, d = execute_unit(directory, unit)
        adds += a
        deletes += d
    inputs = {e.file.file_name for e in deletes}
    return base, adds, deletes, [e.file.origin.path for e in adds if e.file.file_name not in inputs]


def _commit(directory: TableDirectory, base: Snapshot, adds: list[FileEntry], deletes: list[FileEntry]) -> Snapshot:
    """Commit a rewrite over `base` (rebased over commits that kept its inputs); a failure
    removes its new files."""
    with rewrite_transaction(directory, base.id) as rewrite:
        rewrite.replace(deletes, adds)
        snapshot = rewrite.commit()
    assert snapshot is not None
    return snapshot


def _objects(server, prefix: str) -> dict[str, int]:
    client = server.client("s3", server.access_key_id, server.secret_access_key)
    out: dict[str, int] = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket="lake", Prefix=prefix):
        out.update({o["Key"]: o["Size"] for o in page.get("Contents", [])})
    return out


@pytest.fixture(scope="module")
def tables(s3_server, tmp_path_factory):
    """Two pypaimon tables, each written both to a local warehouse and to the S3 server: db.t
    (Parquet, partitions r0..r2, retractions) and db.o (ORC, partition values with ' ', ':'
    and '=').  Read-only for the tests that use them."""
    base = tmp_path_factory.mktemp("paimon-s3")
    local, uri = base / "wh", f"s3://lake/wh-{uuid.uuid4().hex[:10]}"
    commits = _commits(77, 4, 150, True, True)
    odd = [_odd(c) for c in commits]
    driver = Pypaimon(s3_server, base / "work")
    for warehouse in (str(local), uri):
        driver.write(warehouse, "db.t", commits, OPTIONS)
        driver.write(warehouse, "db.o", odd, {**OPTIONS, "file.format": "orc"})
    driver.read(uri, "db.t")
    driver.read(uri, "db.o")
    theirs, theirs_odd = driver.run()
    return {"local": local, "uri": uri, "commits": commits, "odd": odd, "pypaimon": theirs, "pypaimon_odd": theirs_odd}


def test_a_pypaimon_table_on_s3_reads_as_the_local_one(s3_server, tables) -> None:
    uri, local, opts = tables["uri"], str(tables["local"]), s3_server.options()
    expected = model("deduplicate", tables["commits"], KEY)
    ours = mp.read(uri, "db.t", storage_options=opts)
    assert ours.schema == mp.read(local, "db.t").schema
    assert rows(ours, KEY) == rows(mp.read(local, "db.t"), KEY) == expected == rows(tables["pypaimon"], KEY)
    assert rows(mp.scan(uri, "db.t", threads=2, storage_options=opts).read_all(), KEY) == expected
    assert rows(mp.read(uri, "db.o", storage_options=opts), KEY) == model("deduplicate", tables["odd"], KEY) \
        == rows(tables["pypaimon_odd"], KEY) == rows(mp.read(local, "db.o"), KEY)

    # filters (a point read, a range, a value filter), projection and time travel answer as locally
    first = expected[0]
    for f in ([("region", "=", first["region"]), ("name", "=", first["name"]), ("id", "=", first["id"])],
              [("region", "=", "r1"), ("id", "<", 60)], ("v", ">", 0.5)):
        got = mp.read(uri, "db.t", columns=["id", "region", "name", "v"], filter=f, storage_options=opts)
        assert got.num_rows > 0
        assert rows(got, KEY) == rows(mp.read(local, "db.t", columns=["id", "region", "name", "v"], filter=f), KEY)
    assert rows(mp.read(uri, "db.t", snapshot=2, storage_options=opts), KEY) == \
        model("deduplicate", tables["commits"][:2], KEY)

    remote, here = mp.info(uri, "db.t", storage_options=opts), mp.info(local, "db.t")
    assert remote.path == f"{uri}/db.db/t" and remote.snapshot_id == here.snapshot_id == 4
    assert [(s.id, s.commit_kind, s.total_record_count) for s in remote.snapshots] == \
        [(s.id, s.commit_kind, s.total_record_count) for s in here.snapshots]
    assert [(b.partition, b.bucket, b.sorted_runs, b.files_per_level, b.rows) for b in remote.buckets] == \
        [(b.partition, b.bucket, b.sorted_runs, b.files_per_level, b.rows) for b in here.buckets]


def test_reading_data_files_on_s3_makes_no_listing_and_no_head(s3_server, tables) -> None:
    """The manifests name every file and record its size: data files are fetched by ranged GETs
    without a HEAD, and a table whose partition values every writer spells alike is read
    without a listing (the odd one's files are found by one)."""
    from mergetree.table.paimon import metadata
    from mergetree.table.paimon import store as paimon_store
    from mergetree.table.read import prepare_read, read_table

    for name, lists in (("db.t", 0), ("db.o", 1)):
        # the snapshot's files as a cold read finds them (the codec's and the engine's caches)
        metadata._live_cache.clear()
        paimon_store._live.clear()
        directory = PaimonTableHandle(tables["uri"], s3_server.options(), name).at().directory
        prepared = prepare_read(directory, None, None, None)
        storage = directory.storage
        counts = storage.requests.reset()
        # LIST schema/ (and the odd table's files); GET LATEST, snapshot, schema, manifests; HEAD the next id
        assert counts["LIST"] == 1 + lists and counts["HEAD"] == 1, counts
        out = read_table(directory, prepared, 1)
        counts = storage.requests.reset()
        assert out.num_rows == len(model("deduplicate", tables["commits"], KEY))
        # (GETs: none when an earlier test of this worker read these files: footers and key columns
        # are cached by name and size)
        assert counts["HEAD"] == 0 and counts["LIST"] == 0, counts


def test_compaction_on_s3_rebases_on_a_lost_race_and_pypaimon_reads_it(s3_server, tmp_path) -> None:
    uri, opts, name = f"s3://lake/wh-{uuid.uuid4().hex[:10]}", s3_server.options(), "db.t"
    commits = _commits(78, 5, 150, True, True)
    driver = Pypaimon(s3_server, tmp_path / "work")
    driver.write(uri, name, commits[:3], OPTIONS)
    driver.write(uri, "db.o", [_odd(c) for c in commits[:3]], {**OPTIONS, "file.format": "orc"})
    driver.run()

    # a full compaction planned and merged at snapshot 3; pypaimon appends snapshot 4 meanwhile:
    # the conditional create of snapshot-4 loses (412 from the server), the commit rebases to 5
    directory = PaimonTableHandle(uri, opts, name).at().directory
    base, adds, deletes, written = _rewritten(directory, True)
    assert base.id == 3
    assert written and all(p.startswith(f"{uri}/db.db/t/") for p in written)
    driver.write(uri, name, commits[3:4], OPTIONS)
    driver.run()
    assert _commit(directory, base, adds, deletes).id == 5
    t = PaimonTable.open(uri, name, opts)
    assert [t.snapshot(i)["commitKind"] for i in (4, 5)] == ["APPEND", "COMPACT"]
    assert t.latest_snapshot_id() == 5
    expected = model("deduplicate", commits[:4], KEY)
    assert rows(mp.read(uri, name, storage_options=opts), KEY) == expected

    # a compaction whose inputs another one replaced: refused, and its files removed from the server
    directory = PaimonTableHandle(uri, opts, name).at().directory
    stale, stale_adds, stale_deletes, stale_written = _rewritten(directory, True)
    assert mp.compact(uri, name, full=True, storage_options=opts) == 6
    with pytest.raises(CompactionConflictError, match="replaced"):
        _commit(directory, stale, stale_adds, stale_deletes)  # the transaction removes its files
    assert PaimonTable.open(uri, name, opts).latest_snapshot_id() == 6  # nothing committed
    left = _objects(s3_server, uri[len("s3://lake/"):] + "/")
    assert stale_written and not [p for p in stale_written if p[len("s3://lake/"):] in left]
    assert mp.info(uri, name, storage_options=opts).max_sorted_runs == 1

    # the ORC table with escaped partition values compacts on the server too
    runs = mp.info(uri, "db.o", storage_options=opts).max_sorted_runs
    assert runs > 1 and mp.compact(uri, "db.o", full=True, storage_options=opts) == 4
    assert mp.info(uri, "db.o", storage_options=opts).max_sorted_runs == 1
    new = [k for k in _objects(s3_server, uri[len("s3://lake/"):] + "/db.db/o/") if k not in left]
    data = [k for k in new if "/bucket-" in k]
    assert data and all(k.endswith(".orc") for k in data)
    assert any("/manifest/manifest-list-" in k for k in new) and any(k.endswith("/snapshot/snapshot-4") for k in new)

    # pypaimon reads both compacted tables, and keeps writing on top of the compaction
    first = driver.read(uri, name)
    odd = driver.read(uri, "db.o")
    driver.write(uri, name, commits[4:], OPTIONS)
    after = driver.read(uri, name)
    theirs = driver.run()
    assert rows(theirs[first], KEY) == expected
    assert rows(theirs[odd], KEY) == model("deduplicate", [_odd(c) for c in commits[:3]], KEY) == \
        rows(mp.read(uri, "db.o", storage_options=opts), KEY)
    assert rows(theirs[after], KEY) == model("deduplicate", commits, KEY) == \
        rows(mp.read(uri, name, storage_options=opts), KEY)


def test_bad_locations_and_credentials_are_one_error_naming_the_location(s3_server, tables) -> None:
    uri = tables["uri"]
    secret = "recognizable-secret-" + uuid.uuid4().hex
    with pytest.raises(InvalidArgumentError, match="foo://lake/wh"):
        mp.read("foo://lake/wh", "db.t")
    with pytest.raises(InvalidArgumentError, match="aws_region"):
        mp.read(str(tables["local"]), "db.t", storage_options={"aws_region": "us-east-1"})
    missing = f"s3://no-such-bucket-{uuid.uuid4().hex[:8]}/wh"
    for call in (lambda: mp.read(missing, "db.t", storage_options=s3_server.options()),
                 lambda: mp.compact(missing, "db.t", storage_options=s3_server.options())):
        with pytest.raises(StorageError, match=missing) as raised:
            call()
        assert "no-such-bucket" in str(raised.value)
    for options in (s3_server.options(aws_secret_access_key=secret),
                    s3_server.options(aws_access_key_id="AKIANOSUCHKEY0000000", aws_secret_access_key=secret)):
        with pytest.raises(StorageAccessError, match=uri) as raised:
            mp.info(uri, "db.t", storage_options=options)
        assert secret not in str(raised.value) and secret not in repr(raised.value)

    # a read-only user reads; compacting is refused and leaves nothing on the server
    reader = s3_server.options(aws_access_key_id=s3_server.read_only_key_id,
                               aws_secret_access_key=s3_server.read_only_secret)
    before = _objects(s3_server, uri[len("s3://lake/"):] + "/")
    assert rows(mp.read(uri, "db.t", storage_options=reader), KEY) == model("deduplicate", tables["commits"], KEY)
    with pytest.raises(StorageAccessError, match=uri):
        mp.compact(uri, "db.t", full=True, storage_options=reader)
    assert _objects(s3_server, uri[len("s3://lake/"):] + "/") == before


def test_a_store_without_conditional_create_reads_but_refuses_to_compact(tables, monkeypatch) -> None:
    """A warehouse on a store with no conditional create (HDFS's store, here over pyarrow's
    local filesystem) is read; compacting it is refused before anything is written."""
    import pyarrow.fs as pafs

    import mergetree.table.paimon.metadata as metadata
    from mergetree.storage import ArrowFileSystemStore, parse_location

    local = tables["local"]

    def no_conditional_create(path, storage_options=None, what=""):
        return ArrowFileSystemStore(parse_location(str(local)), pafs.LocalFileSystem(), str(local))
    monkeypatch.setattr(metadata, "locate", no_conditional_create)
    assert rows(mp.read("hdfs-like", "db.t"), KEY) == model("deduplicate", tables["commits"], KEY)
    before = sorted(p.relative_to(local) for p in local.rglob("*"))
    with pytest.raises(ConditionalCreateUnsupportedError, match="conditional create"):
        mp.compact("hdfs-like", "db.t", full=True)
    assert sorted(p.relative_to(local) for p in local.rglob("*")) == before


def test_pickled_tables_carry_no_options(s3_server, tables) -> None:
    """A table pickled into a Spark task's plan is its path and name: never its credentials."""
    import pickle

    plan = PaimonTableHandle(tables["uri"], s3_server.options(), "db.t").at().plan()
    assert plan.files and all(isinstance(m.origin.table, PaimonTable) for m in plan.files)
    payload = pickle.dumps(plan)
    assert s3_server.secret_access_key.encode() not in payload
    assert s3_server.access_key_id.encode() not in payload
    again = pickle.loads(payload)
    assert [m.file_name for m in again.files] == [m.file_name for m in plan.files]
    for before, after in zip(plan.files, again.files):
        assert after.origin.table.path == before.origin.table.path and after.origin.table.name == "db.t"


def test_the_paimon_command_line_reaches_a_warehouse_on_s3(s3_server, tables) -> None:
    """`mergetree paimon info/read` with `--storage-option KEY=VALUE`, as a user types them:
    the same answer as the library, and the secret key in no output."""
    import sys

    uri, opts = tables["uri"], s3_server.options()
    secret = str(opts["aws_secret_access_key"])
    flags = [w for k, v in opts.items() for w in ("--storage-option", f"{k}={v}")]
    env = dict(os.environ, MERGETREE_QUERY_LOG="0")
    expected = mp.read(uri, "db.t", storage_options=opts).num_rows
    for command in (["info"], ["read", "--limit", "0", "--no-progress"]):
        out = subprocess.run([sys.executable, "-m", "mergetree", "paimon", *command, uri, "db.t", *flags],
                             capture_output=True, text=True, env=env, timeout=180)
        assert out.returncode == 0, out.stderr[-2000:]
        assert secret not in out.stdout + out.stderr
        if command[0] == "read":
            assert f"{expected:,}" in out.stdout or str(expected) in out.stdout, out.stdout
    wrong = [w if w != f"aws_secret_access_key={secret}" else "aws_secret_access_key=wrong-secret-value"
             for w in flags]
    out = subprocess.run([sys.executable, "-m", "mergetree", "paimon", "info", uri, "db.t", *wrong],
                         capture_output=True, text=True, env=env, timeout=180)
    assert out.returncode != 0 and uri in out.stdout + out.stderr
    assert "wrong-secret-value" not in out.stdout + out.stderr
