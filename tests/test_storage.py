"""The storage layer against real parts only: a local directory and a real S3 HTTP server
(moto's standalone server on 127.0.0.1, signatures checked; `s3_server` in conftest.py).  The
same tests run on both; bad inputs get one clear error naming the URI and never a secret."""
from __future__ import annotations

import base64
import http.client
import multiprocessing
import os
import pickle
import threading
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mergetree.errors import InvalidArgumentError, MergeTreeError
from mergetree.storage import (
    ArrowFileSystemStore,
    ConditionalCreateUnsupportedError,
    LocalDiskStore,
    ObjectExistsError,
    ObjectNotFoundError,
    StorageAccessError,
    StorageError,
    Store,
    coalesce_ranges,
    parse_location,
    resolve,
)

SECRET = "SECRET-do-not-print-123"
MB = 1024 * 1024


@pytest.fixture(params=["local", "s3"])
def make_store(request, tmp_path) -> Callable[[], Store]:
    """A function giving a fresh, empty store: a local directory, or a unique prefix of the S3 server's bucket."""
    if request.param == "local":
        return lambda: resolve(tmp_path / uuid.uuid4().hex)
    server = request.getfixturevalue("s3_server")
    return lambda: resolve(f"s3://lake/{uuid.uuid4().hex}", server.options())


@pytest.fixture
def store(make_store) -> Store:
    return make_store()


def assert_no_secret(*things: object) -> None:
    for thing in things:
        assert SECRET not in str(thing) and SECRET not in repr(thing)


# ------------------------------------------------------------------------------------------ basics


def test_write_read_size_exists_delete(store):
    data = bytes(range(256)) * 40
    store.write("data/a.bin", data)
    assert store.read("data/a.bin") == data
    assert store.size("data/a.bin") == len(data)
    assert store.exists("data/a.bin") and not store.exists("data/b.bin")
    assert store.read_range("data/a.bin", 100, 50) == data[100:150]
    assert store.read_range("data/a.bin", len(data) - 10, 100) == data[-10:]  # fewer bytes at the end
    assert store.read_ranges("data/a.bin", [(0, 3), (5000, 7), (9, 0), (10, 1)]) == [
        data[:3], data[5000:5007], b"", data[10:11]]
    store.write("data/a.bin", b"replaced")  # write overwrites
    assert store.read("data/a.bin") == b"replaced"
    store.delete("data/a.bin")
    store.delete("data/a.bin")  # deleting what is not there is not an error, as on S3
    assert not store.exists("data/a.bin")
    for call in (lambda: store.read("data/a.bin"), lambda: store.size("data/a.bin"),
                 lambda: store.read_range("data/a.bin", 0, 1)):
        with pytest.raises(ObjectNotFoundError, match="data/a.bin does not exist") as info:
            call()
        assert isinstance(info.value, FileNotFoundError) and info.value.uri == store.uri


def test_a_range_past_the_end_is_an_error(store):
    store.write("x", b"abc")
    with pytest.raises(StorageError, match="past the object's end"):
        store.read_range("x", 3, 1)


def test_list_by_string_prefix_with_sizes_and_the_stores_own_timestamps(store):
    before = datetime.now(timezone.utc) - timedelta(seconds=2)
    names = ["snapshot/snapshot-1", "snapshot/snapshot-2", "snapshot/LATEST", "manifest/m-1", "bucket-0/f.parquet"]
    for i, name in enumerate(names):
        store.write(name, b"x" * i)
    listed = {o.path: o for o in store.list()}
    assert set(listed) == set(names)
    assert {o.path for o in store.list("snapshot/snap")} == {"snapshot/snapshot-1", "snapshot/snapshot-2"}
    assert {o.path for o in store.list("snapshot/")} == {"snapshot/snapshot-1", "snapshot/snapshot-2",
                                                         "snapshot/LATEST"}
    assert [o.path for o in store.list("bucket")] == ["bucket-0/f.parquet"]
    assert list(store.list("nothing/")) == []
    for i, name in enumerate(names):
        assert listed[name].size == i
        assert before <= listed[name].last_modified <= datetime.now(timezone.utc) + timedelta(seconds=2)


def test_bad_object_paths_are_refused(store):
    for bad in ("", "/abs", "a/../b", "a//b", "./a"):
        with pytest.raises(InvalidArgumentError):
            store.write(bad, b"x")


# ------------------------------------------------------------------------------ conditional create


def test_create_twice_the_second_loses(store):
    store.create("snapshot/snapshot-1", b"first")
    with pytest.raises(ObjectExistsError, match="snapshot-1 already exists") as info:
        store.create("snapshot/snapshot-1", b"second")
    assert isinstance(info.value, FileExistsError)
    assert store.read("snapshot/snapshot-1") == b"first"
    store.require_conditional_create()


def test_create_leaves_no_temporary_file_behind(tmp_path):
    store = resolve(tmp_path / "t")
    store.create("snapshot/snapshot-1", b"1")
    with pytest.raises(ObjectExistsError):
        store.create("snapshot/snapshot-1", b"2")
    assert sorted(os.listdir(tmp_path / "t" / "snapshot")) == ["snapshot-1"]


def race_worker(uri: str, options: dict | None, count: int, who: str, barrier, results) -> None:
    """One racing writer (a separate process): create race/0..count-1, each after a barrier."""
    store = resolve(uri, options)
    won, other = [], []
    for i in range(count):
        barrier.wait(timeout=60)
        try:
            store.create(f"race/{i}", who.encode())
            won.append(i)
        except ObjectExistsError:
            pass
        except Exception as exc:
            other.append(repr(exc))
    results.put((who, won, other))


def test_two_processes_racing_create_exactly_one_wins_each_time(make_store):
    store = make_store()
    options = store.location.options
    raw = None
    if store.location.backend == "s3":  # the workers resolve the same location themselves
        raw = {"aws_endpoint_url": options.config["endpoint"], "aws_access_key_id": options.config["access_key_id"],
               "aws_secret_access_key": options.config["secret_access_key"], "aws_region": "us-east-1",
               "aws_allow_http": "true"}
    uri = store.location.uri
    count = 15
    ctx = multiprocessing.get_context("spawn")  # never fork a process holding obstore's runtime threads
    barrier, results = ctx.Barrier(2), ctx.Queue()
    workers = [ctx.Process(target=race_worker, args=(uri, raw, count, who, barrier, results)) for who in "AB"]
    for w in workers:
        w.start()
    outcome = {}
    for _ in workers:
        who, won, other = results.get(timeout=120)
        outcome[who] = (won, other)
    for w in workers:
        w.join(30)
    assert outcome["A"][1] == [] and outcome["B"][1] == [], outcome
    assert sorted(outcome["A"][0] + outcome["B"][0]) == list(range(count)), outcome  # exactly one each time
    for i in range(count):  # and the object holds the winner's bytes
        winner = "A" if i in outcome["A"][0] else "B"
        assert store.read(f"race/{i}") == winner.encode()


# --------------------------------------------------------------------------- streams and Parquet


def test_a_20_mb_streamed_write_reads_back_equal(store):
    chunk = os.urandom(MB)
    store.requests.reset()
    with store.open_output("big/object.bin") as out:
        for _ in range(20):
            out.write(chunk)
        assert out.tell() == 20 * MB
    assert store.size("big/object.bin") == 20 * MB
    assert store.read("big/object.bin") == chunk * 20
    if store.location.backend == "s3":  # a multipart upload: create, 3 parts of 8 MiB, complete
        assert store.requests["PUT"] == 5


def test_a_stream_that_fails_leaves_nothing(store):
    with pytest.raises(RuntimeError), store.open_output("big/failed.bin") as out:
        out.write(b"x" * (9 * MB))  # past one part: the multipart upload has begun
        raise RuntimeError("writer failed")
    assert not store.exists("big/failed.bin")
    assert [o.path for o in store.list("big/")] == []


def test_parquet_written_through_open_output_and_read_by_row_groups_through_open_input(store):
    table = pa.table({"id": pa.array(range(200_000), pa.int64()), "s": [f"value-{i}" for i in range(200_000)]})
    with store.open_output("bucket-0/data.parquet") as out:
        pq.write_table(table, out, row_group_size=20_000)
    size = store.size("bucket-0/data.parquet")
    store.requests.reset()
    f = pq.ParquetFile(store.open_input("bucket-0/data.parquet", size=size), pre_buffer=True)
    assert f.metadata.num_row_groups == 10
    got = f.read_row_groups([2, 7])
    assert got.equals(pa.concat_tables([table.slice(40_000, 20_000), table.slice(140_000, 20_000)]))
    assert store.requests["HEAD"] == 0  # the size was given
    if store.location.backend == "s3":
        assert store.requests["GET"] <= 6  # the footer and the two row groups' ranges, not the file
    assert pq.read_table(store.open_input("bucket-0/data.parquet")).equals(table)


def test_filesystem_reads_the_same_files(store):
    store.write("f/x.bin", b"through pyarrow")
    fs, root = store.filesystem()
    with fs.open_input_stream(f"{root}/f/x.bin") as f:
        assert f.read() == b"through pyarrow"


# ---------------------------------------------------------------------------------- read_ranges


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ranges=st.lists(st.tuples(st.integers(0, 3 * MB - 1), st.integers(0, 300_000)), min_size=1, max_size=12))
def test_coalesced_range_reads_equal_single_reads(store, ranges):
    if not store.exists("ranges.bin"):
        store.write("ranges.bin", bytes(range(256)) * (3 * MB // 256))
    data_len = 3 * MB
    expected = [store.read_range("ranges.bin", o, n) if n else b"" for o, n in ranges]
    assert [len(e) for e in expected] == [min(n, data_len - o) for o, n in ranges]
    before = store.requests["GET"]
    assert store.read_ranges("ranges.bin", ranges) == expected
    assert store.requests["GET"] - before == len(coalesce_ranges(ranges))


def test_coalesce_ranges_joins_close_ranges_only():
    assert coalesce_ranges([(0, 10), (15, 5), (100, 1)], gap=10) == [(0, 20), (100, 101)]
    assert coalesce_ranges([(50, 10), (0, 100), (5, 0)], gap=0) == [(0, 100)]
    assert coalesce_ranges([]) == []


# ----------------------------------------------------------------------------------- requests


def test_requests_are_counted_by_kind(store):
    store.requests.reset()
    store.write("a", b"1")
    store.read("a")
    store.exists("a")
    list(store.list())
    store.delete("a")
    assert store.requests.counts() == {"GET": 1, "PUT": 1, "LIST": 1, "HEAD": 1, "DELETE": 1}
    assert store.requests.reset()["PUT"] == 1 and store.requests.total == 0


# ---------------------------------------------------------------------------------- locations


def test_uris_resolve_to_their_backends(tmp_path):
    assert isinstance(resolve(str(tmp_path)), LocalDiskStore)
    assert resolve(f"file://{tmp_path}/t").location.root == f"{tmp_path}/t"
    s3 = parse_location("s3://lake/some/table/")
    assert (s3.backend, s3.container, s3.root) == ("s3", "lake", "some/table")
    gs = parse_location("gs://bucket/t")
    assert (gs.backend, gs.container, gs.root) == ("gcs", "bucket", "t")
    az = parse_location("abfss://container@account.dfs.core.windows.net/lake/t")
    assert (az.backend, az.container, az.account, az.root) == ("azure", "container", "account", "lake/t")
    assert parse_location("az://container/t").backend == "azure"
    hdfs = parse_location("hdfs://namenode:8020/warehouse/t")
    assert (hdfs.backend, hdfs.container, hdfs.root) == ("hdfs", "namenode:8020", "/warehouse/t")


@pytest.mark.parametrize("uri", ["foo://x/y", "s3:/lake/events", "s3:lake", "file://otherhost/x", "s3:///nobucket"])
def test_bad_uris_are_refused_and_never_become_local_directories(uri, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidArgumentError) as info:
        resolve(uri)
    assert uri.split(":")[0] in str(info.value)
    assert os.listdir(tmp_path) == []


def test_unknown_and_misplaced_storage_options_name_the_key_never_the_value():
    with pytest.raises(InvalidArgumentError, match="unknown storage option 'aws_secret_key'") as info:
        resolve("s3://lake/t", {"aws_secret_key": SECRET})
    assert "s3://lake/t" in str(info.value)
    assert_no_secret(info.value)
    with pytest.raises(InvalidArgumentError, match="'aws_region' does not apply to 'gs://bucket/t'"):
        resolve("gs://bucket/t", {"aws_region": "eu-west-1"})
    with pytest.raises(InvalidArgumentError, match="does not apply to a local path"):
        resolve("/tmp/t", {"aws_region": "eu-west-1"})
    with pytest.raises(InvalidArgumentError, match="'aws_allow_http' must be true or false"):
        resolve("s3://lake/t", {"aws_allow_http": "perhaps"})
    with pytest.raises(InvalidArgumentError, match=r"must be a string, got \*\*\*"):
        resolve("s3://lake/t", {"aws_secret_access_key": 12345})


def test_option_keys_are_case_insensitive_and_secrets_are_redacted():
    store = resolve("s3://lake/t", {"AWS_SECRET_ACCESS_KEY": SECRET, "AWS_ACCESS_KEY_ID": "AKIAEXAMPLE",
                                    "endpoint_url": "http://127.0.0.1:1", "region": "eu-west-1"})
    assert store.location.options.config["secret_access_key"] == SECRET
    assert "secret_access_key: ***" in repr(store) and "AKIAEXAMPLE" in repr(store)
    assert_no_secret(store, store.location, store.location.options.shown)
    key = base64.b64encode(SECRET.encode()).decode()  # Azure keys are base64
    azure = resolve("az://container/t", {"azure_storage_account_name": "acct", "azure_storage_account_key": key})
    assert key not in repr(azure) and key not in str(azure.location)


def test_a_password_or_sas_token_in_the_uri_is_redacted():
    location = parse_location(f"s3://user:{SECRET}@lake/t")
    assert_no_secret(location)
    assert str(parse_location(f"abfss://c@acct.dfs.core.windows.net/t?sig={SECRET}".split("?")[0]))


# ---------------------------------------------------------------------- errors on the S3 server


def s3_errors(call: Callable[[], object], capsys, secret: str = SECRET) -> StorageError:
    with pytest.raises(StorageError) as info:
        call()
    out = capsys.readouterr()
    for text in (str(info.value), repr(info.value), out.out, out.err):
        assert secret not in text
    assert isinstance(info.value, MergeTreeError)
    assert info.value.__cause__ is None and info.value.__suppress_context__  # no raw obstore traceback
    return info.value


def test_a_missing_bucket_is_one_clear_error(s3_server, capsys):
    store = resolve("s3://no-such-bucket/t", s3_server.options())
    for call in (lambda: store.read("x"), lambda: store.write("x", b"1"), lambda: list(store.list()),
                 lambda: store.create("x", b"1")):
        error = s3_errors(call, capsys, secret=s3_server.secret_access_key)
        assert "s3://no-such-bucket/t" in str(error) and "'no-such-bucket' does not exist" in str(error)
    assert s3_server.secret_access_key not in repr(store)


def test_wrong_or_missing_credentials_are_one_clear_error(s3_server, capsys):
    wrong_secret = resolve("s3://lake/t", s3_server.options(aws_secret_access_key=SECRET))
    unknown_key = resolve("s3://lake/t", s3_server.options(aws_access_key_id="AKIANOSUCHKEY",
                                                           aws_secret_access_key=SECRET))
    # (unsigned requests are not tried: moto's server answers them 500 once it checks signatures)
    for store in (wrong_secret, unknown_key):
        for call in (lambda s=store: s.read("x"), lambda s=store: s.write("x", b"1"),
                     lambda s=store: list(s.list())):
            error = s3_errors(call, capsys)
            assert isinstance(error, StorageAccessError) and isinstance(error, PermissionError)
            assert "s3://lake/t" in str(error) and "check the credentials" in str(error)


def test_a_read_only_store_reads_and_refuses_writes_and_commits(s3_server, capsys):
    admin = resolve("s3://lake/ro", s3_server.options())
    admin.write("data", b"1")
    reader = resolve("s3://lake/ro", s3_server.options(aws_access_key_id=s3_server.read_only_key_id,
                                                       aws_secret_access_key=s3_server.read_only_secret))
    assert reader.read("data") == b"1"
    for call in (lambda: reader.write("x", b"1"), lambda: reader.create("snapshot-1", b"1"),
                 lambda: reader.delete("data")):
        assert isinstance(s3_errors(call, capsys, secret=s3_server.read_only_secret), StorageAccessError)
    assert not admin.exists("snapshot-1") and admin.exists("data")


def test_a_refused_connection_is_one_clear_error(capsys):
    from s3_server import free_port

    endpoint = f"http://127.0.0.1:{free_port()}"
    store = resolve("s3://lake/t", {"aws_endpoint_url": endpoint, "aws_allow_http": "true", "max_retries": "1",
                                    "aws_access_key_id": "AKIAEXAMPLE", "aws_secret_access_key": SECRET})
    error = s3_errors(lambda: store.read("x"), capsys)
    assert endpoint in str(error) and "did not answer" in str(error) and "s3://lake/t/x" in str(error)


class ThrottlingProxy:
    """An HTTP proxy in front of the S3 server answering the first `throttled` requests with
    503 SlowDown, as S3 does under load, and forwarding the rest unchanged (Host header kept,
    so the signatures still hold)."""

    def __init__(self, upstream: str, throttled: int) -> None:
        host, port = upstream.removeprefix("http://").split(":")
        proxy = self
        self.throttled = throttled
        self.answered_503 = 0
        self.lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def handle_one(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with proxy.lock:
                    throttle = proxy.answered_503 < proxy.throttled
                    proxy.answered_503 += throttle
                if throttle:
                    payload = b"<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>"
                    self.send_response(503)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                conn = http.client.HTTPConnection(host, int(port), timeout=30)
                conn.request(self.command, self.path, body=body, headers=dict(self.headers.items()))
                response = conn.getresponse()
                data = response.read()
                self.send_response(response.status)
                for key, value in response.getheaders():
                    if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = handle_one

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_throttling_is_retried_with_bounded_backoff(s3_server, capsys):
    proxy = ThrottlingProxy(s3_server.endpoint, throttled=3)
    try:
        store = resolve("s3://lake/throttled", s3_server.options(aws_endpoint_url=proxy.endpoint))
        store.write("a", b"after three 503s")
        assert proxy.answered_503 == 3
        assert store.read("a") == b"after three 503s"
        proxy.throttled, proxy.answered_503 = 1000, 0
        bounded = resolve("s3://lake/throttled", s3_server.options(aws_endpoint_url=proxy.endpoint, max_retries="2",
                                                                   aws_secret_access_key=SECRET))
        error = s3_errors(lambda: bounded.read("a"), capsys)
        assert "throttled" in str(error) and proxy.answered_503 == 3  # the first try and two retries
    finally:
        proxy.close()


# --------------------------------------------------------------------- stores without create


def test_a_store_without_conditional_create_refuses_commits(tmp_path):
    location = parse_location(tmp_path / "t")
    store = ArrowFileSystemStore(location, pafs.LocalFileSystem(), str(tmp_path / "t"))
    store.write("data/a", b"123")  # everything else works
    assert store.read("data/a") == b"123" and store.read_ranges("data/a", [(1, 2)]) == [b"23"]
    assert [o.path for o in store.list("data/")] == ["data/a"] and store.size("data/a") == 3
    with pytest.raises(ConditionalCreateUnsupportedError, match="commits are refused: put the table on a store with "
                                                                "conditional create"):
        store.create("snapshot/snapshot-1", b"1")
    with pytest.raises(ConditionalCreateUnsupportedError, match=str(tmp_path)):
        store.require_conditional_create()
    assert not store.exists("snapshot/snapshot-1")


def test_hdfs_without_libhdfs_is_a_clear_error():
    try:
        resolve("hdfs://127.0.0.1:1/warehouse/t")
    except InvalidArgumentError as exc:
        assert "hdfs://127.0.0.1:1/warehouse/t" in str(exc) and "libhdfs" in str(exc)
    else:  # pragma: no cover - a machine with Hadoop
        pytest.skip("libhdfs is installed here")


def test_errors_survive_pickling():
    error = ObjectExistsError("s3://lake/t/x already exists", uri="s3://lake/t", path="x")
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is ObjectExistsError and (again.uri, again.path, str(again)) == (error.uri, "x", str(error))


def test_a_location_opened_again_with_other_credentials_is_found_inside_the_new_store():
    """A table found inside a warehouse store (an unpickled Paimon table in a Spark task) is
    found inside the warehouse's newer store once a later job opens it with other credentials."""
    from mergetree.table.objects import locate
    old = {"aws_access_key_id": "AKIAOLD", "aws_secret_access_key": "old", "aws_region": "us-east-1"}
    new = {"aws_access_key_id": "AKIANEW", "aws_secret_access_key": "new", "aws_region": "us-east-1"}
    locate("s3://rotated/wh", old)
    assert "AKIAOLD" in repr(locate("s3://rotated/wh/db.db/t"))
    locate("s3://rotated/wh", new)
    inside = locate("s3://rotated/wh/db.db/t")
    assert "AKIANEW" in repr(inside) and "AKIAOLD" not in repr(inside)
