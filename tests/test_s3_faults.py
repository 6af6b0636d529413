"""Faults on a real S3 server (moto's, tests/s3_server.py), through a proxy that can cut it
(tests/s3_proxy.py): writers SIGKILLed at chosen requests mid-write and mid-commit, two writer
processes and a compactor racing for snapshots, the server gone in the middle of an upload and
around the snapshot's conditional create, and throttling (503 SlowDown).  After every fault
the table holds exactly its committed operations (nothing half-visible), the error is a
`StorageError` naming the object, the retry succeeds and orphan cleanup removes the debris.

The faults are placed by request, not by time: the proxy kills the writer, drops the request
or loses its answer when it sees the n-th request (or the snapshot's create), so every run
tests the same points."""
from __future__ import annotations

import datetime as dt
import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import uuid

import pyarrow as pa
import pytest
from s3_proxy import DROP, DROP_MID_BODY, FORWARD, LOSE_ANSWER, SLOW_DOWN, Request, S3Proxy
from test_table_crash import table_state  # the local crash test's reading of a table as {id: row}

from mergetree import Table
from mergetree.errors import StorageError
from mergetree.table.housekeeping import referenced_files

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64()), ("s", pa.string())])
TABLE_OPTIONS = {"num-sorted-run.compaction-trigger": "2", "target-file-size": "16 kb"}
# A cut server answers quickly: two retries, about 0.3 s of backoff
FAST_FAIL = {"max_retries": "2", "retry_timeout": "5"}


@pytest.fixture(autouse=True)
def _no_query_log(monkeypatch):
    # the query log is flushed by a background thread and at exit, possibly after the server stopped
    monkeypatch.setenv("MERGETREE_QUERY_LOG", "0")


@pytest.fixture
def proxy(s3_server):
    with S3Proxy(s3_server.endpoint) as p:
        yield p


def _uri() -> str:
    return f"s3://lake/faults-{uuid.uuid4().hex[:12]}"


def _key(uri: str) -> str:
    return uri.removeprefix("s3://lake/")


# Operation i is a pure function of i, so the state after k committed operations is known.
OPS = textwrap.dedent("""
    import numpy as np, pyarrow as pa
    KEYS = 3000

    def operation(i, base=0):
        rng = np.random.default_rng(i + 7919 * base)
        if i % 4 == 3:
            return "delete", pa.table({"id": base + rng.choice(KEYS, 60, replace=False).astype(np.int64)})
        ids = base + rng.choice(KEYS, 300, replace=False).astype(np.int64)
        return "write", pa.table({"id": ids, "v": np.full(300, i, dtype=np.int64),
                                  "s": pa.array([f"op{i}-{k}" for k in ids])})
""")

namespace: dict = {}
exec(OPS, namespace)
operation = namespace["operation"]


def model(ops: range | int, base: int = 0) -> dict[int, tuple]:
    state: dict[int, tuple] = {}
    for i in range(ops) if isinstance(ops, int) else ops:
        kind, data = operation(i, base)
        if kind == "write":
            for row in data.to_pylist():
                state[row["id"]] = (row["v"], row["s"])
        else:
            for k in data.column("id").to_pylist():
                state.pop(k, None)
    return state


def appends(table: Table) -> int:
    return sum(1 for s in table.snapshots() if s.commit_kind == "APPEND")


def _spawn(script: str, *args: str, options: dict) -> subprocess.Popen:
    """A fresh interpreter (obstore's runtime does not survive a fork), the storage options
    (credentials) in its environment rather than its command line."""
    env = dict(os.environ, MERGETREE_QUERY_LOG="0", FAULT_TEST_OPTIONS=json.dumps(options))
    return subprocess.Popen([sys.executable, "-c", script, *args], env=env, stderr=subprocess.PIPE)


def _no_leftovers(table: Table) -> None:
    """Every object under the table is a snapshot, the schema, the hint, or referenced."""
    referenced = set(referenced_files(table.directory, table.directory.store.snapshot_ids()))
    names = {info.path for info in table.directory.storage.list("")}
    leftovers = {n for n in names - referenced
                 if not n.startswith(("snapshot/snapshot-", "schema/")) and n != "snapshot/LATEST"}
    assert not leftovers, leftovers


# ------------------------------------------------------------------ SIGKILL mid-write, mid-commit

CRASH_CHILD = OPS + textwrap.dedent("""
    import json, os, sys
    from mergetree import Table
    table = Table.open(sys.argv[1], storage_options=json.loads(os.environ["FAULT_TEST_OPTIONS"]))
    done = sum(1 for s in table.snapshots() if s.commit_kind == "APPEND")
    with open(sys.argv[2], "a") as report:
        for i in range(done, done + 1000):
            kind, data = operation(i)
            table.write(data) if kind == "write" else table.delete(data)
            report.write(f"{i}\\n")  # durable: the commit returned
            report.flush()
            if i % 3 == 2:
                table.compact(full=(i % 6 == 5))
""")


class KillAt:
    """A proxy rule: SIGKILL the writer when its `at`-th request (or its `at`-th snapshot
    create) arrives, then forward that request (it was on the wire) or drop it."""

    def __init__(self, pid: int, at: int, then: str, snapshot_creates_only: bool) -> None:
        self.pid, self.at, self.then, self.only = pid, at, then, snapshot_creates_only
        self.count = 0
        self.fired: Request | None = None
        self.lock = threading.Lock()

    def __call__(self, request: Request) -> str:
        with self.lock:
            if self.fired is not None:
                return FORWARD  # already in flight from another thread of the killed writer
            if self.only and not request.is_put("/snapshot/snapshot-"):
                return FORWARD
            self.count += 1
            if self.count < self.at:
                return FORWARD
            os.kill(self.pid, signal.SIGKILL)
            self.fired = request
            return self.then


def test_sigkill_mid_write_and_mid_commit_leaves_exactly_the_committed_operations(s3_server, proxy, tmp_path):
    uri = _uri()
    direct = s3_server.options()
    Table.create(uri, SCHEMA, primary_key="id", buckets=2, options=TABLE_OPTIONS, storage_options=direct)
    report = tmp_path / "durable"
    report.touch()
    rng = random.Random(24)
    # (kill at the n-th request | the n-th snapshot create, then forward it | drop it)
    rounds = [(rng.randrange(4, 60), rng.choice([FORWARD, DROP]), False) for _ in range(3)]
    rounds += [(1, FORWARD, True), (2, DROP, True), (1, DROP, True), (3, FORWARD, True)]
    forwarded_creates = dropped_creates = start = 0
    for at, then, creates_only in rounds:
        child = _spawn(CRASH_CHILD, uri, str(report), options=s3_server.options(aws_endpoint_url=proxy.endpoint))
        rule = KillAt(child.pid, at, then, creates_only)
        proxy.rule = rule
        try:
            _, stderr = child.communicate(timeout=120)
        finally:
            proxy.rule = None
        assert child.returncode == -signal.SIGKILL, stderr.decode()[-3000:]
        proxy.wait_idle()  # a forwarded request has reached the server
        table = Table.open(uri, storage_options=direct)
        durable = [int(line) for line in report.read_text().split()]
        ops = appends(table)
        # every operation whose commit returned is there, and at most the one in flight besides
        assert durable == sorted(set(durable)) and all(i < ops for i in durable), (durable, ops)
        this_round = [i for i in durable if i >= start]
        assert this_round == list(range(start, start + len(this_round)))
        assert ops - (start + len(this_round)) in (0, 1), (start, this_round, ops)
        start = ops
        assert table_state(table) == model(ops)  # exactly the committed operations, nothing half-visible
        fired = rule.fired
        assert fired is not None
        if fired.is_put("/snapshot/snapshot-"):
            name = fired.key.removeprefix(_key(uri) + "/")
            exists = table.directory.storage.exists(name)
            assert exists == (then == FORWARD), (name, then)  # a snapshot created as its writer died counts
            forwarded_creates += then == FORWARD
            dropped_creates += then == DROP
    assert forwarded_creates >= 2 and dropped_creates >= 2
    table = Table.open(uri, storage_options=direct)
    assert appends(table) > 5  # the writers really got work done
    assert Table.repair(uri, storage_options=direct) == []  # nothing damaged: no snapshot set aside
    before = table_state(table)
    removed = table.remove_orphan_files(older_than=dt.timedelta(0))
    assert removed, "a dropped snapshot create leaves its manifests behind: there must be debris"
    assert any(name.startswith("manifest/") for name in removed)
    table = Table.open(uri, storage_options=direct)
    assert table_state(table) == before
    _no_leftovers(table)
    for s in table.snapshots():  # every snapshot that survived the kills still reads
        table.read(snapshot=s.id)


# ------------------------------------------------------------- the server gone mid-write, mid-commit

def _through(proxy: S3Proxy, s3_server, uri: str, **table: object) -> Table:
    """The table created directly, opened through the proxy with quick-failing retries."""
    if table:
        Table.create(uri, SCHEMA, primary_key="id", storage_options=s3_server.options(), **table)  # type: ignore[arg-type]
    return Table.open(uri, storage_options=s3_server.options(aws_endpoint_url=proxy.endpoint, **FAST_FAIL))


def _cut_at(proxy: S3Proxy, match, action: str):
    """A rule: at the first request `match` accepts, cut the proxy (the server is gone) and
    treat that request with `action`; the proxy stays cut until `restore()`."""
    def rule(request: Request) -> str:
        if proxy.down or not match(request):
            return FORWARD
        proxy.cut()
        return action
    return rule


def _batch(i: int) -> pa.Table:
    return operation(4 * i)[1]  # a write


def test_the_server_gone_mid_upload_leaves_nothing_and_the_retry_succeeds(s3_server, proxy):
    uri = _uri()
    table = _through(proxy, s3_server, uri, buckets=1, options=TABLE_OPTIONS)
    table.write(_batch(0))
    proxy.rule = _cut_at(proxy, lambda r: r.is_put("/bucket-0/data-"), DROP_MID_BODY)
    with pytest.raises(StorageError) as caught:
        table.write(_batch(1))
    proxy.rule = None
    proxy.restore()
    cut = proxy.requests("PUT", "/bucket-0/data-")
    upload = f"s3://lake/{cut[-1].key}"
    assert f"cannot write {upload}" in str(caught.value), caught.value  # the write's own error, not a cleanup's
    assert "did not answer" in str(caught.value)
    assert len([r for r in cut if r.key == cut[-1].key]) == 3  # the first try and two retries
    direct = Table.open(uri, storage_options=s3_server.options())
    assert [s.id for s in direct.snapshots()] == [1]
    assert table_state(direct) == model(range(0, 1))
    assert not direct.directory.storage.exists(upload.removeprefix(uri + "/"))
    table.write(_batch(1))  # the retry
    assert table_state(Table.open(uri, storage_options=s3_server.options())) == model(range(0, 5, 4))


def test_the_server_gone_mid_multipart_upload_leaves_nothing(s3_server, proxy):
    """A data file larger than a part (8 MiB) streams up as a multipart upload; the server
    going away in the middle of a part leaves no object and no snapshot."""
    import numpy as np

    uri = _uri()
    schema = pa.schema([("id", pa.int64()), ("blob", pa.binary())])
    Table.create(uri, schema, primary_key="id", storage_options=s3_server.options())
    table = Table.open(uri, storage_options=s3_server.options(aws_endpoint_url=proxy.endpoint, **FAST_FAIL))
    rng = np.random.default_rng(5)
    big = pa.table({"id": np.arange(1200, dtype=np.int64),
                    "blob": pa.array([rng.bytes(10_000) for _ in range(1200)], pa.binary())})  # 12 MB, incompressible
    # the parts go up in parallel: the second to arrive is cut in the middle of its body
    proxy.rule = _cut_at(proxy, lambda r: "partNumber=" in r.query and sum(
        "partNumber=" in p.query for p in proxy.requests("PUT")) == 2, DROP_MID_BODY)
    with pytest.raises(StorageError) as caught:
        table.write(big)
    proxy.rule = None
    proxy.restore()
    uploads = proxy.requests("POST")
    parts = [r for r in proxy.requests("PUT") if "partNumber=" in r.query]
    assert any(r.query.startswith("uploads") for r in uploads)  # a multipart upload was started
    assert parts[1].action == DROP_MID_BODY
    assert not any(r.query.startswith("uploadId=") for r in uploads)  # and never completed
    assert f"s3://lake/{parts[1].key}" in str(caught.value), caught.value
    direct = Table.open(uri, storage_options=s3_server.options())
    assert direct.snapshots() == []
    assert not [i for i in direct.directory.storage.list("") if "/data-" in i.path]
    table.write(big)  # the retry
    assert Table.open(uri, storage_options=s3_server.options()).read().num_rows == 1200


def _snapshot_create(uri: str, snapshot_id: int):
    name = f"{_key(uri)}/snapshot/snapshot-{snapshot_id}"
    return lambda r: r.method == "PUT" and r.key == name


def test_the_server_gone_before_the_snapshot_create(s3_server, proxy):
    uri = _uri()
    table = _through(proxy, s3_server, uri, buckets=2, options=TABLE_OPTIONS)
    table.write(_batch(0))
    proxy.rule = _cut_at(proxy, _snapshot_create(uri, 2), DROP)
    with pytest.raises(StorageError) as caught:
        table.write(_batch(1))
    proxy.rule = None
    proxy.restore()
    assert f"cannot create {uri}/snapshot/snapshot-2" in str(caught.value), caught.value
    assert "unknown" in str(caught.value)  # sent, never answered: the writer cannot know
    direct = Table.open(uri, storage_options=s3_server.options())
    assert [s.id for s in direct.snapshots()] == [1]
    assert table_state(direct) == model(1)
    removed = direct.remove_orphan_files(dt.timedelta(0))  # its data files and manifests, left while cut
    assert any(n.startswith("bucket-") for n in removed) and any(n.startswith("manifest/") for n in removed)
    _no_leftovers(direct)
    table.write(_batch(1))  # the retry
    direct = Table.open(uri, storage_options=s3_server.options())
    assert appends(direct) == 2 and table_state(direct) == model(range(0, 5, 4))


def test_the_server_gone_as_the_snapshot_is_created_and_back_for_the_cleanup(s3_server, proxy):
    """The snapshot's create reaches the server, its answer is lost and the server is gone for
    the create's retries, then back: the commit's outcome was unknown to the writer, so it
    must not delete the files the published snapshot references."""
    uri = _uri()
    table = _through(proxy, s3_server, uri, buckets=2, options=TABLE_OPTIONS)
    table.write(_batch(0))

    def rule(request: Request) -> str:
        if _snapshot_create(uri, 2)(request) and not proxy.requests("PUT", "/snapshot/snapshot-2", LOSE_ANSWER):
            proxy.cut()
            return LOSE_ANSWER
        if proxy.down and not _snapshot_create(uri, 2)(request):  # back once the create gave up
            proxy.restore()
        return FORWARD
    proxy.rule = rule
    with pytest.raises(StorageError, match="snapshot-2 was created is unknown"):
        table.write(_batch(1))  # the create's retry got no answer either
    proxy.rule = None
    proxy.restore()
    direct = Table.open(uri, storage_options=s3_server.options())
    assert [s.id for s in direct.snapshots()] == [1, 2]  # published: its answer was lost, not its request
    assert table_state(direct) == model(range(0, 5, 4))  # and readable: no file of it deleted


def test_a_lost_answer_to_the_snapshot_create_is_the_writers_own_commit(s3_server, proxy):
    uri = _uri()
    table = _through(proxy, s3_server, uri, buckets=2, options=TABLE_OPTIONS)
    table.write(_batch(0))
    proxy.rule = lambda r: LOSE_ANSWER if _snapshot_create(uri, 2)(r) and not proxy.requests(
        "PUT", "/snapshot/snapshot-2", LOSE_ANSWER) else FORWARD
    snapshot = table.write(_batch(1))  # the create sent again: 412, and the object holds its bytes
    proxy.rule = None
    creates = proxy.requests("PUT", "/snapshot/snapshot-2")
    assert [(r.action, r.status) for r in creates] == [(LOSE_ANSWER, 200), (FORWARD, 412)]
    assert snapshot is not None and snapshot.id == 2
    direct = Table.open(uri, storage_options=s3_server.options())
    assert [(s.id, s.commit_retries) for s in direct.snapshots() if s.commit_kind == "APPEND"] == [(1, 0), (2, 0)]
    assert table_state(direct) == model(range(0, 5, 4))


def test_a_failing_latest_hint_does_not_fail_a_published_commit(s3_server, proxy):
    """The LATEST hint is written after the snapshot is published: throttled past its retries,
    the commit still stands (the write returns it) and keeps its files."""
    uri = _uri()
    table = _through(proxy, s3_server, uri, buckets=2, options=TABLE_OPTIONS)
    table.write(_batch(0))
    hint = f"{_key(uri)}/snapshot/LATEST"
    proxy.rule = lambda r: SLOW_DOWN if r.method == "PUT" and r.key == hint else FORWARD
    snapshot = table.write(_batch(1))
    proxy.rule = None
    assert snapshot is not None and len(proxy.requests("PUT", "/snapshot/LATEST", SLOW_DOWN)) >= 3
    direct = Table.open(uri, storage_options=s3_server.options())
    assert direct.directory.storage.read("snapshot/LATEST") == b"1"  # left behind
    assert direct.latest_snapshot().id == direct.snapshots()[-1].id >= snapshot.id == 2  # found past it
    assert appends(direct) == 2 and table_state(direct) == model(range(0, 5, 4))


# ------------------------------------------------------------- two writer processes and a compactor

WRITER = OPS + textwrap.dedent("""
    import json, os, sys
    from mergetree import Table
    table = Table.open(sys.argv[1], storage_options=json.loads(os.environ["FAULT_TEST_OPTIONS"]))
    base, count = int(sys.argv[2]), int(sys.argv[3])
    for i in range(count):
        kind, data = operation(i, base)
        table.write(data) if kind == "write" else table.delete(data)
""")

COMPACTOR = textwrap.dedent("""
    import json, os, sys, time
    from mergetree import Table
    from mergetree.errors import CompactionConflictError
    table = Table.open(sys.argv[1], storage_options=json.loads(os.environ["FAULT_TEST_OPTIONS"]))
    committed = tries = 0
    while not os.path.exists(sys.argv[2]):
        tries += 1
        try:
            committed += table.compact(full=tries % 2 == 0) is not None
        except CompactionConflictError:
            pass  # a writer's commit changed the files it was merging: the next round plans again
        time.sleep(0.05)
    print(json.dumps({"committed": committed, "tries": tries}))
""")


def test_two_writer_processes_and_a_compactor_land_every_write_exactly_once(s3_server, proxy, tmp_path):
    uri = _uri()
    direct = s3_server.options()
    Table.create(uri, SCHEMA, primary_key="id", buckets=2,
                 options={**TABLE_OPTIONS, "write-only": "true"},  # only the compactor compacts
                 storage_options=direct)
    first_create = threading.Event()

    def race(request: Request) -> str:
        """Hold the first snapshot create until another process has created that snapshot:
        a race for one id, decided by the server's conditional create."""
        if request.method == "PUT" and "/snapshot/snapshot-" in request.key and not first_create.is_set():
            first_create.set()
            proxy.wait_until(lambda seen: any(r is not request and r.key == request.key and r.status == 200
                                              for r in seen))
        return FORWARD
    proxy.rule = race
    options = s3_server.options(aws_endpoint_url=proxy.endpoint)
    writes, bases = 6, (0, 100_000)
    stop = tmp_path / "stop"
    compactor = subprocess.Popen([sys.executable, "-c", COMPACTOR, uri, str(stop)], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, env=dict(os.environ, MERGETREE_QUERY_LOG="0",
                                                                  FAULT_TEST_OPTIONS=json.dumps(options)))
    writers = [_spawn(WRITER, uri, str(base), str(writes), options=options) for base in bases]
    try:
        for w in writers:
            _, stderr = w.communicate(timeout=180)
            assert w.returncode == 0, stderr.decode()[-3000:]
    finally:
        stop.touch()
        out, err = compactor.communicate(timeout=120)
        proxy.rule = None
    assert compactor.returncode == 0, err.decode()[-3000:]
    compactions = json.loads(out)
    table = Table.open(uri, storage_options=direct)
    snapshots = table.snapshots()
    assert [s.id for s in snapshots] == list(range(1, len(snapshots) + 1))
    # every write and delete committed exactly once: a lost one or one applied twice (a delete's
    # keys written again by a replay) would change the model's answer
    assert appends(table) == len(bases) * writes
    expected = {**model(writes, bases[0]), **model(writes, bases[1])}
    assert table_state(table) == expected
    assert sum(s.commit_kind == "COMPACT" for s in snapshots) == compactions["committed"]
    # the held create lost its race on the server (412 PreconditionFailed) and rebased: its write
    # is in the model's answer above (a Paimon snapshot records no count of lost races)
    lost = [r for r in proxy.requests("PUT", "/snapshot/snapshot-") if r.status == 412]
    assert lost


# ------------------------------------------------------------------------------------ throttling

def test_throttled_requests_are_retried_with_backoff_and_the_table_answers_as_usual(s3_server, proxy):
    uri = _uri()
    table = _through(proxy, s3_server, uri, buckets=2, options=TABLE_OPTIONS)
    attempts: dict[tuple[str, str, str], int] = {}
    lock = threading.Lock()

    def throttle(request: Request) -> str:
        """S3 under load: every third request refused, twice for a snapshot's create."""
        with lock:
            what = (request.method, request.key, request.query)
            n = attempts[what] = attempts.get(what, 0) + 1
            limit = 2 if request.is_put("/snapshot/snapshot-") else 1 if len(attempts) % 3 == 0 else 0
        return SLOW_DOWN if n <= limit else FORWARD
    proxy.rule = throttle
    for i in range(2):
        table.write(_batch(i))
    table.compact(full=True)
    got = table_state(table)
    proxy.rule = None
    assert got == model(range(0, 5, 4))
    slowed = proxy.requests(action=SLOW_DOWN)
    assert len(slowed) > 10 and all(r.status is None for r in slowed)
    assert len(proxy.requests("PUT", "/snapshot/snapshot-", SLOW_DOWN)) == 2 * len(table.snapshots())
    # each throttled request was sent again and then answered by the server
    for r in slowed:
        again = [x for x in proxy.requests(r.method, r.key) if x.query == r.query and x.action == FORWARD]
        assert again and again[0].status is not None and again[0].status < 500, r


def test_throttling_without_end_fails_bounded_with_a_clear_error(s3_server, proxy):
    uri = _uri()
    Table.create(uri, SCHEMA, primary_key="id", buckets=2, options=TABLE_OPTIONS,
                 storage_options=s3_server.options())
    proxy.rule = lambda r: SLOW_DOWN if r.is_put("/snapshot/snapshot-") else FORWARD
    table = Table.open(uri, storage_options=s3_server.options(aws_endpoint_url=proxy.endpoint, max_retries="3",
                                                              retry_timeout="30"))
    with pytest.raises(StorageError) as caught:
        table.write(_batch(0))
    message = str(caught.value)
    assert f"cannot create {uri}/snapshot/snapshot-1" in message and "503 SlowDown (throttled)" in message
    assert "through 3 retries" in message and "max_retries" in message
    assert len(proxy.requests("PUT", "/snapshot/snapshot-1")) == 4  # the first try and three retries
    # bounded by time too: a thousand retries allowed, but none started past retry_timeout (1 s:
    # backoff from 0.1 s doubling, about 4 tries)
    proxy.clear()
    table = Table.open(uri, storage_options=s3_server.options(aws_endpoint_url=proxy.endpoint, max_retries="1000",
                                                              retry_timeout="1"))
    with pytest.raises(StorageError, match="throttled"):
        table.write(_batch(0))
    assert 2 <= len(proxy.requests("PUT", "/snapshot/snapshot-1")) < 20
    proxy.rule = None
    direct = Table.open(uri, storage_options=s3_server.options())
    assert direct.snapshots() == []  # nothing half-visible
    # the failed commits deleted their own data files and manifests: the create was refused, so
    # nothing of them can be published
    assert [i.path for i in direct.directory.storage.list("")] == ["schema/schema-0"]
    assert direct.remove_orphan_files(dt.timedelta(0)) == []
    table.write(_batch(0))  # the throttling over: the retry succeeds
    assert table_state(Table.open(uri, storage_options=s3_server.options())) == model(1)
