"""Tables on a real S3 server (moto's, tests/s3_server.py): every operation answers as the same
operations on a local table do, commits race safely between processes, secrets stay out of
every file and message, and requests per operation are counted."""
from __future__ import annotations

import multiprocessing
import os
import sys
import uuid

import pyarrow as pa
import pytest

from mergetree import InvalidArgumentError, MergeTreeError, Table
from mergetree.storage import resolve

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("n", pa.int64())])
OPTIONS = {"file-index.bloom-filter.columns": "v", "file-index.bitmap.columns": "v"}


@pytest.fixture(autouse=True)
def _no_query_log(monkeypatch):
    # the query log is flushed by a background thread and at exit, possibly after the server
    # of this session stopped; it is tested on its own below
    monkeypatch.setenv("MERGETREE_QUERY_LOG", "0")


def _uri() -> str:
    return f"s3://lake/t-{uuid.uuid4().hex[:12]}"


def _rows(start: int, count: int, tag: str) -> dict:
    ids = list(range(start, start + count))
    return {"id": ids, "v": [f"{tag}{i % 7}" for i in ids], "n": [i * 10 for i in ids]}


def _apply(t: Table) -> list:
    """The same operations on any table; what each read answered."""
    out = []
    t.write(_rows(0, 3000, "a"))
    t.write(_rows(1500, 3000, "b"))
    out.append(t.read().sort_by("id"))
    t.delete({"id": list(range(100, 200))})
    out.append(t.read(filter=("id", "=", 2000)))
    out.append(t.read(filter=("v", "=", "b3")).sort_by("id"))
    t.compact(full=True)
    out.append(t.read().sort_by("id"))
    t.write(_rows(4000, 500, "c"))
    t.optimize()
    out.append(t.read().sort_by("id"))
    out.append(t.read(filter=("id", "in", [5, 150, 4400])).sort_by("id"))
    out.append(t.aggregate("v", {"n": "sum", "*": "count"}))
    out.append(len(t.expire_snapshots()))
    out.append(t.remove_orphan_files(0))
    out.append(t.read().sort_by("id"))
    out.append([s.id for s in t.snapshots()])
    return out


def test_a_table_on_s3_answers_as_a_local_one(s3_server, tmp_path):
    local = Table.create(tmp_path / "t", SCHEMA, primary_key=["id"], buckets=2, options=OPTIONS)
    uri = _uri()
    remote = Table.create(uri, SCHEMA, primary_key=["id"], buckets=2, options=OPTIONS,
                          storage_options=s3_server.options())
    assert remote.path == uri
    expected = _apply(local)
    got = _apply(remote)
    assert got == expected
    reopened = Table.open(uri, storage_options=s3_server.options())
    assert reopened.read().sort_by("id") == local.read().sort_by("id")
    names = {i.path for i in remote.directory.storage.list("")}
    assert "schema/schema-0" in names and any(n.startswith("snapshot/snapshot-") for n in names)
    assert not os.path.exists("s3:") and not os.path.exists(tmp_path / "s3:")


def test_create_twice_open_missing_and_bad_scheme(s3_server):
    from mergetree.errors import InvalidArgumentError, TableExistsError, TableNotFoundError

    uri = _uri()
    Table.create(uri, SCHEMA, primary_key=["id"], storage_options=s3_server.options())
    with pytest.raises(TableExistsError):
        Table.create(uri, SCHEMA, primary_key=["id"], storage_options=s3_server.options())
    with pytest.raises(TableNotFoundError, match="no Paimon table"):
        Table.open(_uri(), storage_options=s3_server.options())
    with pytest.raises(InvalidArgumentError, match="ftp://"):
        Table.create("ftp://host/t", SCHEMA)


def _writer(uri: str, options: dict, worker: int, writes: int, queue) -> None:
    os.environ["MERGETREE_QUERY_LOG"] = "0"
    t = Table.open(uri, storage_options=options)
    ids = []
    for i in range(writes):
        base = worker * 100_000 + i * 10
        t.write({"id": list(range(base, base + 10)), "v": [f"w{worker}"] * 10, "n": [i] * 10})
        ids.append(base)
    queue.put((worker, ids))


def test_two_writer_processes_commit_to_one_s3_table(s3_server):
    uri = _uri()
    options = s3_server.options()
    t = Table.create(uri, SCHEMA, primary_key=["id"], buckets=2, storage_options=options)
    context = multiprocessing.get_context("spawn")  # obstore's runtime threads: no fork
    queue = context.Queue()
    writes = 6
    sys_path = os.pathsep.join(sys.path)
    env_before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = sys_path
    try:
        workers = [context.Process(target=_writer, args=(uri, options, w, writes, queue)) for w in range(2)]
        for p in workers:
            p.start()
        results = [queue.get(timeout=240) for _ in workers]
        for p in workers:
            p.join(60)
            assert p.exitcode == 0
    finally:
        if env_before is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = env_before
    assert len(results) == 2
    snapshots = t.snapshots()
    assert [s.id for s in snapshots] == list(range(1, len(snapshots) + 1))  # contiguous
    # every write committed once (writes may also trigger compactions of their own)
    assert sum(s.commit_kind == "APPEND" for s in snapshots) == 2 * writes
    rows = t.read()
    assert rows.num_rows == 2 * writes * 10
    assert sorted(rows.column("id").to_pylist()) == sorted(
        b + k for _, bases in results for b in bases for k in range(10))


def test_a_secret_is_in_no_file_message_or_repr(s3_server, capsys):
    from mergetree.errors import MergeTreeError

    options = s3_server.options()
    secret = options["aws_secret_access_key"]
    assert isinstance(secret, str) and len(secret) >= 16
    uri = _uri()
    t = Table.create(uri, SCHEMA, primary_key=["id"], options=OPTIONS, storage_options=options)
    t.write(_rows(0, 100, "s"))
    t.compact(full=True)
    t.add_aggregate("by_v", "v", {"*": "count"})
    assert secret not in repr(t) and secret not in t.path and secret not in repr(t.directory.storage)
    storage = resolve(uri, options)
    for info in storage.list(""):
        assert secret.encode() not in storage.read(info.path), info.path
    wrong = dict(options, aws_secret_access_key=secret[::-1])
    with pytest.raises(MergeTreeError) as caught:
        Table.open(_uri(), storage_options=wrong)
    assert secret[::-1] not in str(caught.value) and secret not in str(caught.value)
    captured = capsys.readouterr()
    assert secret not in captured.out + captured.err


def test_requests_per_operation(s3_server):
    uri = _uri()
    t = Table.create(uri, SCHEMA, primary_key=["id"], buckets=1, storage_options=s3_server.options())
    storage = t.directory.storage
    t.write(_rows(100000, 10, "r"))  # the table's first snapshot: later writes find it from the hint
    storage.requests.reset()
    t.write(_rows(0, 20000, "r"))
    write = storage.requests.reset()
    # PUTs: the data file, a manifest, two manifest lists, the snapshot, the LATEST hint; the
    # reads: the schema check (LIST schema/, GET schema-0), the hint, the snapshot and a HEAD
    # probe for the next id at the write's start, at its commit and at the compaction check
    # after it (which reads the bucket's manifests and the data file's keys)
    assert write == {"GET": 14, "PUT": 6, "LIST": 1, "HEAD": 3, "DELETE": 0}, write
    t.read(filter=("id", "=", 12345))  # metadata and the footer now cached
    storage.requests.reset()
    assert t.read(filter=("id", "=", 12345)).column("n").to_pylist() == [123450]
    lookup = storage.requests.reset()
    # the schema check (LIST schema/, GET schema-0), the LATEST hint, the snapshot, a HEAD probe
    # for the next snapshot (absent), one row group: the manifests and the file's footer are cached
    assert lookup == {"GET": 4, "PUT": 0, "LIST": 1, "HEAD": 1, "DELETE": 0}, lookup
    # the read's own count starts after the schema check the table makes as it opens its files
    assert t.last_read.requests == {"GET": 3, "HEAD": 1}
    plan = t.plan(filter=("id", "=", 12345))
    assert plan.requests == {"GET": 2, "HEAD": 1}  # the hint, the snapshot, the probe; the row group is read later
    assert ["store requests to plan", "GET 2, HEAD 1", ""] in plan.explain()
    storage.requests.reset()
    t.read()
    full = storage.requests.reset()
    assert full["HEAD"] == 1  # the probe for the next snapshot: the manifests name every file with its size


def test_a_lagging_hint_still_finds_the_newest_snapshot(s3_server):
    """Planning follows the LATEST hint, then probes the next ids: a hint left behind (a slower
    committer, another process's commits) never hides a newer snapshot."""
    uri = _uri()
    t = Table.create(uri, SCHEMA, primary_key=["id"], storage_options=s3_server.options())
    t.write(_rows(0, 10, "h"))
    assert t.read().num_rows == 10  # snapshot 1 now cached by this reader
    other = Table.open(uri, storage_options=s3_server.options())
    other.write(_rows(10, 10, "h"))
    other.write(_rows(20, 10, "h"))
    t.directory.storage.write("snapshot/LATEST", b"1")
    assert t.directory.storage.read("snapshot/LATEST") == b"1"
    assert t.read().num_rows == 30
    assert [s.id for s in t.snapshots()] == [1, 2, 3]
    t.directory.storage.delete("snapshot/LATEST")  # no hint at all: the listing decides
    assert t.read().num_rows == 30


def test_query_log_and_repair_on_s3(s3_server, monkeypatch):
    from mergetree.table.workload import querylog

    monkeypatch.setenv("MERGETREE_QUERY_LOG", "1")
    uri = _uri()
    t = Table.create(uri, SCHEMA, primary_key=["id"], storage_options=s3_server.options())
    t.write(_rows(0, 10, "q"))
    t.read(filter=("id", "=", 3))
    querylog.flush(uri)
    logged = querylog.read_rows(uri)
    assert logged.num_rows == 1
    storage = t.directory.storage
    assert any(i.path.startswith("queries/snapshot/") for i in storage.list("queries/"))
    # a damaged top snapshot is set aside (copied, then deleted) and the table continues
    t.write(_rows(10, 10, "q"))
    storage.write("snapshot/snapshot-2", b"{ damaged")
    done = Table.repair(uri, storage_options=s3_server.options())
    assert any("snapshot-2" in line for line in done), done
    assert Table.open(uri, storage_options=s3_server.options()).read().num_rows == 10
    assert any(i.path.startswith("snapshot/damaged/") for i in storage.list("snapshot/"))
    querylog.flush()  # before the server of this session stops


def test_credentials_from_an_aws_profile(s3_server, tmp_path, monkeypatch):
    """Keys, region and endpoint from the AWS shared files, as the AWS SDKs read them: the
    named profile, then AWS_PROFILE, then default; options and the environment win over them."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION",
                 "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_PROFILE", "AWS_DEFAULT_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    credentials, config = tmp_path / "credentials", tmp_path / "config"
    credentials.write_text(f"[default]\naws_access_key_id = nobody\naws_secret_access_key = nothing-at-all\n\n"
                           f"[lake]\naws_access_key_id = {s3_server.access_key_id}\n"
                           f"aws_secret_access_key = {s3_server.secret_access_key}\n")
    config.write_text(f"[profile lake]\nregion = us-east-1\nendpoint_url = {s3_server.endpoint}\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(credentials))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    uri = _uri()
    t = Table.create(uri, SCHEMA, primary_key=["id"], storage_options={"profile": "lake", "allow_http": "true"})
    t.write(_rows(0, 5, "p"))
    assert s3_server.secret_access_key not in repr(t.directory.storage)
    monkeypatch.setenv("AWS_PROFILE", "lake")
    assert Table.open(uri, storage_options={"allow_http": "true"}).read().num_rows == 5
    monkeypatch.delenv("AWS_PROFILE")
    with pytest.raises(MergeTreeError, match="access|denied|credentials|InvalidAccessKeyId|endpoint"):
        # the default profile's keys (wrong), and no endpoint: it must not reach this server
        Table.open(uri, storage_options={"allow_http": "true", "endpoint_url": s3_server.endpoint,
                                         "region": "us-east-1"})
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "from-the-environment")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong-but-first")
    with pytest.raises(MergeTreeError) as caught:  # the environment wins over the profile
        Table.open(uri, storage_options={"profile": "lake", "allow_http": "true"})
    assert "wrong-but-first" not in str(caught.value)
    with pytest.raises(InvalidArgumentError, match="'missing'"):
        Table.open(uri, storage_options={"profile": "missing"})


def test_a_secret_stays_out_of_the_log_the_history_and_the_report(s3_server, tmp_path, monkeypatch, capsys):
    """Issue 24's secrets check across what a table writes around itself: the query log, the
    optimizer's history, the report page; and nothing printed."""
    from mergetree.organize import build_report, history, render_html, run_once
    from mergetree.table.workload import querylog

    monkeypatch.setenv("MERGETREE_QUERY_LOG", "1")
    options = s3_server.options()
    secret = str(options["aws_secret_access_key"])
    uri = _uri()
    t = Table.create(uri, SCHEMA, options=OPTIONS, storage_options=options)  # append: the optimizer's
    for start in range(0, 800, 100):  # minor pass merges these small files
        t.write(_rows(start, 100, "s"))
    t.read(filter=("v", "=", "s3"))
    t.read(filter=("id", "in", [5, 250]))
    querylog.flush(uri)
    passes = run_once(uri)
    assert any(p.status == "committed" for p in passes), passes
    assert len(history(uri)) >= 1
    report = build_report(uri)
    assert report.rows == 800 and all(p.last_write is not None for p in report.partitions)
    page = render_html(report)
    (tmp_path / "report.html").write_text(page)
    assert secret not in page and secret not in repr(report)
    storage = resolve(uri, options)
    names = [info.path for info in storage.list("")]
    assert any(n.startswith("queries/") for n in names) and any(n.startswith("optimizer/") for n in names), names
    for name in names:
        assert secret.encode() not in storage.read(name), name
    captured = capsys.readouterr()
    assert secret not in captured.out + captured.err
    querylog.flush()


def test_bad_buckets_credentials_and_read_only_stores_fail_cleanly(s3_server, tmp_path, monkeypatch):
    """Issue 24 item 6 at the table level: one error naming the URI, nothing written."""
    from mergetree.errors import StorageAccessError, StorageError

    monkeypatch.chdir(tmp_path)
    options = s3_server.options()
    with pytest.raises(StorageError, match="s3://no-such-bucket/t"):
        Table.create("s3://no-such-bucket/t", SCHEMA, primary_key=["id"], storage_options=options)
    with pytest.raises(StorageAccessError, match="s3://lake/"):
        Table.create(_uri(), SCHEMA, primary_key=["id"],
                     storage_options=dict(options, aws_secret_access_key="not-the-secret-key"))
    with pytest.raises(InvalidArgumentError, match="s3:/lake"):
        Table.create("s3:/lake/t", SCHEMA, primary_key=["id"])
    assert list(tmp_path.iterdir()) == []  # never a local directory named "s3:"

    uri = _uri()
    t = Table.create(uri, SCHEMA, primary_key=["id"], storage_options=options)
    t.write(_rows(0, 50, "r"))
    storage = resolve(uri, options)
    before = sorted((i.path, i.size) for i in storage.list(""))
    reader = dict(options, aws_access_key_id=s3_server.read_only_key_id,
                  aws_secret_access_key=s3_server.read_only_secret)
    read_only = Table.open(uri, storage_options=reader)
    assert read_only.read().num_rows == 50
    for change in (lambda: read_only.write(_rows(50, 10, "x")), lambda: read_only.compact(full=True),
                   lambda: read_only.delete({"id": [1]})):
        with pytest.raises(StorageAccessError) as caught:
            change()
        assert uri in str(caught.value) and s3_server.read_only_secret not in str(caught.value)
    assert sorted((i.path, i.size) for i in storage.list("")) == before  # nothing written
    assert Table.open(uri, storage_options=options).read().num_rows == 50
