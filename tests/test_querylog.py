"""The query log: every read kind is recorded with its shape and cost; logging never changes a
result nor fails a read; it is off when disabled; logged filters replay exactly."""
from __future__ import annotations

import datetime as dt
import json
import logging
import math
import os
import subprocess
import sys
import threading
import time
import warnings
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mergetree import Table
from mergetree.table import filters as flt
from mergetree.table.paimon.store import clear_caches, open_directory
from mergetree.table.workload import querylog
from mergetree.table.workload.history import HISTORY_DIR, PassReport, history, record_pass
from mergetree.table.workload.logtables import DamagedLogWarning

SCHEMA = pa.schema([("id", pa.int64()), ("a", pa.string()), ("v", pa.float64()), ("d", pa.date32())])


def make(path, options: dict | None = None) -> Table:
    t = Table.create(str(path), SCHEMA, options=options)
    t.write({"id": list(range(10)), "a": [f"s{i % 3}" for i in range(10)], "v": [i / 2 for i in range(10)],
             "d": [dt.date(2024, 1, 1 + i) for i in range(10)]})
    return t


def logged(path) -> list[dict]:
    querylog.flush()
    log = querylog.log_path(str(path))
    if not os.path.exists(log):
        return []
    return Table.open(log).read().sort_by("ts").to_pylist()


def test_every_read_kind_is_logged_with_its_shape_and_cost(tmp_path):
    t = make(tmp_path / "t")
    t.read(filter=[("id", ">=", 2), ("or", [("a", "in", ["s1", "s2"]), ("v", "is null")])])
    t.read(columns=["id"], order_by=[("v", "desc")], limit=3)
    t.aggregate("a", {"v": ["sum", "max"], "*": "count"}, filter=("a", "=", "s0"))
    assert sum(b.num_rows for b in t.scan(filter=("d", "<", dt.date(2024, 1, 4)))) == 3
    rows = logged(tmp_path / "t")
    assert [r["kind"] for r in rows] == ["read", "read", "aggregate", "scan"]
    first, top, agg, scan = rows
    assert first["filter_columns"] == ["a", "id", "v"]
    assert first["predicates"] == [{"column": "id", "kind": "range"}, {"column": "a", "kind": "in"},
                                   {"column": "v", "kind": "is_null"}]
    assert first["rows_out"] == 5 and first["files_scanned"] == 1 and first["files_total"] == 1
    assert first["bytes_scanned"] > 0 and first["duration_ms"] > 0 and first["source"] == "python"
    assert top["order_by"] == [{"column": "v", "direction": "desc"}] and top["limit"] == 3
    assert top["columns"] == ["id"] and top["filter"] is None and top["rows_out"] == 3
    assert agg["group_by"] == ["a"] and agg["rows_out"] == 1
    assert agg["measures"] == [{"column": "v", "function": "sum"}, {"column": "v", "function": "max"},
                               {"column": "*", "function": "count"}]
    assert scan["predicates"] == [{"column": "d", "kind": "range"}] and scan["rows_out"] == 3
    assert all(r["snapshot_id"] == t.latest_snapshot().id for r in rows)
    assert len({r["query_id"] for r in rows}) == 4
    # the logged filter replays to the same answer
    replayed = t.read(filter=querylog.filter_from_json(first["filter"]))
    assert replayed.num_rows == first["rows_out"]


def test_the_log_is_written_in_the_background(tmp_path):
    t = make(tmp_path / "t")
    t.read(filter=("id", "=", 3))
    deadline = time.monotonic() + 10
    log = querylog.log_path(str(tmp_path / "t"))
    rows = 0
    while time.monotonic() < deadline and rows == 0:  # no flush() here: the writer thread does it
        time.sleep(0.05)
        if os.path.exists(os.path.join(log, "snapshot", "snapshot-1")):  # a Paimon append table
            rows = Table.open(log).read().num_rows
    assert rows == 1


def test_logging_never_changes_a_result(tmp_path, monkeypatch):
    t = make(tmp_path / "t")
    filters = [None, ("id", "in", [1, 5, 9]), [("v", ">", 1.0), ("a", "!=", "s1")], ("d", "is not null")]
    with_log = [t.read(filter=f) for f in filters] + [t.aggregate("a", {"v": "sum"})]
    monkeypatch.setenv("MERGETREE_QUERY_LOG", "0")
    without = [t.read(filter=f) for f in filters] + [t.aggregate("a", {"v": "sum"})]
    assert all(x.equals(y) for x, y in zip(with_log, without))


def test_a_failing_log_never_fails_a_read_and_is_reported_once(tmp_path, caplog):
    t = make(tmp_path / "t")
    (tmp_path / "t" / querylog.QUERY_LOG_DIR).write_text("in the way")  # the log cannot be created
    with caplog.at_level(logging.WARNING, logger="mergetree.querylog"):
        for i in range(3):
            assert t.read(filter=("id", "=", i)).num_rows == 1
            querylog.flush()
    reports = [r for r in caplog.records if r.name == "mergetree.querylog"]
    assert len(reports) == 1 and "cannot be written" in reports[0].getMessage()
    assert (tmp_path / "t" / querylog.QUERY_LOG_DIR).read_text() == "in the way"


def test_logging_is_off_when_disabled(tmp_path, monkeypatch):
    t = make(tmp_path / "t", {"query-log.enabled": "false"})
    t.read()
    t.aggregate("a", {"v": "sum"})
    assert logged(tmp_path / "t") == []
    u = make(tmp_path / "u")
    monkeypatch.setenv("MERGETREE_QUERY_LOG", "0")
    u.read()
    assert logged(tmp_path / "u") == []
    monkeypatch.delenv("MERGETREE_QUERY_LOG")
    u.set_options({"query-log.enabled": "false"})
    u.read()
    assert logged(tmp_path / "u") == []
    u.set_options({"query-log.enabled": "true"})
    u.read()
    assert len(logged(tmp_path / "u")) == 1


def test_the_log_does_not_log_itself(tmp_path):
    t = make(tmp_path / "t")
    t.read()
    assert logged(tmp_path / "t")
    log = Table.open(querylog.log_path(str(tmp_path / "t")))
    log.read()
    querylog.flush()
    assert not os.path.exists(querylog.log_path(log.path))


def test_concurrent_readers_each_get_one_record(tmp_path):
    t = make(tmp_path / "t")
    threads = [threading.Thread(target=lambda: [t.read(filter=("id", "<", 5)) for _ in range(25)]) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    rows = logged(tmp_path / "t")
    assert len(rows) == 100 and all(r["rows_out"] == 5 for r in rows)


def test_the_cli_logs_as_cli(tmp_path):
    make(tmp_path / "t")
    out = subprocess.run([sys.executable, "-m", "mergetree", "read", str(tmp_path / "t"), "--filter", "id = 4"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    rows = logged(tmp_path / "t")
    assert [(r["source"], r["kind"], r["filter_columns"]) for r in rows] == [("cli", "read", ["id"])]


values = st.one_of(st.integers(-2**63, 2**63 - 1), st.floats(allow_nan=True), st.text(max_size=8),
                   st.binary(max_size=8), st.dates(), st.datetimes(timezones=st.just(dt.timezone.utc)),
                   st.decimals(allow_nan=False, allow_infinity=False, places=3), st.booleans())
leaf = st.one_of(
    st.tuples(st.sampled_from(["a", "b"]), st.sampled_from(["=", "!=", "<", "<=", ">", ">="]), values),
    st.tuples(st.sampled_from(["a", "b"]), st.sampled_from(["in", "not in"]), st.lists(values, max_size=4)),
    st.tuples(st.sampled_from(["a", "b"]), st.sampled_from(["is null", "is not null"]), st.none()))
filters = st.recursive(leaf, lambda inner: st.tuples(st.sampled_from(["and", "or"]), st.lists(inner, min_size=1,
                                                                                                  max_size=3)),
                       max_leaves=8)


def same(x, y) -> bool:
    if isinstance(x, float) and isinstance(y, float) and math.isnan(x):
        return math.isnan(y)
    if isinstance(x, (list, tuple)) and isinstance(y, (list, tuple)):
        return len(x) == len(y) and all(same(a, b) for a, b in zip(x, y))
    return (type(x) is type(y) and x == y) or (isinstance(x, Decimal) and x == y)


@settings(max_examples=200, deadline=None)
@given(f=filters)
def test_logged_filters_round_trip_exactly(f):
    text = querylog.filter_to_json(f)
    assert text is not None
    assert same(querylog.filter_from_json(text), f)
    kinds = querylog.predicate_kinds(f)
    assert {c for c, _ in kinds} == flt.columns_of(f)
    assert all(k in querylog.PREDICATE_KINDS for _, k in kinds)


def test_huge_filters_are_logged_by_shape_only(tmp_path):
    t = make(tmp_path / "t")
    t.read(filter=("id", "in", list(range(50_000))))
    (row,) = logged(tmp_path / "t")
    assert row["filter"] is None and row["predicates"] == [{"column": "id", "kind": "in"}]
    with pytest.raises(Exception, match="cannot be read back"):
        querylog.filter_from_json("[1, 2")


# -- the loop as a user meets it: a script's own reads, a damaged log, repair ------------------

def test_a_scripts_own_reads_reach_its_advise_and_optimize(tmp_path, monkeypatch):
    """The user's script, in process: reads, then advise(apply=True), then optimize() — with no
    flush in between (the background writer is kept asleep, so only advise's own flush helps)."""
    monkeypatch.setattr(querylog, "FLUSH_SECONDS", 3600.0)
    querylog.flush()
    querylog._wake.set()  # a writer thread from earlier tests goes back to sleep, now for an hour
    time.sleep(0.2)
    rng = np.random.default_rng(5)
    n, files = 40_000, 16
    data = pa.table({"id": np.arange(n), "a": rng.integers(0, 10**6, n), "b": rng.normal(size=n)})
    t = Table.create(str(tmp_path / "t"), data.schema,
                     options={"target-file-size": str(data.nbytes // files), "write-only": "true"})
    for i in range(files):
        t.write(data.slice(i * (n // files), n // files))
    for _ in range(40):
        low = int(rng.integers(0, 10**6 - 20_000))
        t.read(filter=[("a", ">=", low), ("a", "<", low + 20_000)])
    assert not os.path.exists(querylog.log_path(t.path))  # nothing written yet: the records wait in memory
    advice = t.advise(apply=True)
    assert advice.queries == 40
    assert t.options.clustering.columns == ("a",)
    assert t.optimize() is not None  # the layout advise wrote: no "this table has no layout yet"
    low = 500_000
    assert len(t.plan([("a", ">=", low), ("a", "<", low + 20_000)]).files) < files / 2


DAMAGES = ["truncated", "garbage in the middle", "data file deleted", "snapshot", "manifest", "schema"]


def logged_table(path, commits: int = 4, per_commit: int = 5) -> Table:
    """A table whose log holds `commits` data files of `per_commit` queries each (one snapshot each)."""
    t = make(path)
    for _ in range(commits):
        for i in range(per_commit):
            t.read(filter=("id", "<", i))
        querylog.flush()
    return t


def damage_log(t: Table, how: str) -> str:
    """Damage the second data file (or the newest metadata) of the table's log; what was hit."""
    log = open_directory(querylog.log_path(t.path))  # a Paimon append table
    snapshot = log.latest_snapshot()
    names = sorted(e.file.file_name for e in log.live_files(snapshot).values())
    if how == "snapshot":
        relative = log.store.snapshot_file(snapshot.id)
    elif how == "manifest":
        relative = "manifest/" + log.store.manifest_names(snapshot.delta_manifest_list)[0]
    elif how == "schema":
        relative = "schema/schema-0"
    else:
        relative = names[1]
    path = os.path.join(log.path, relative)
    raw = open(path, "rb").read()
    if how == "data file deleted":
        os.unlink(path)
    elif how == "truncated":
        open(path, "wb").write(raw[: len(raw) // 2])
    elif how == "garbage in the middle":
        middle = len(raw) // 2
        open(path, "wb").write(raw[:middle - 32] + b"\xff" * 64 + raw[middle + 32:])
    else:
        open(path, "wb").write(b"{not what was here")
    clear_caches()  # damaged under this process, which trusts a Paimon file's name: read afresh
    return relative


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mergetree", *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("how", DAMAGES)
def test_a_damaged_log_is_left_out_with_a_warning_and_repair_drops_it(tmp_path, how):
    t = logged_table(tmp_path / "t")
    hit = damage_log(t, how)
    # what survives: a data file's 5 queries are lost; a damaged newest snapshot (or its delta
    # manifest) leaves the log as of the snapshot before (the last commit's 5 queries); a
    # damaged schema, the whole log
    left = {"schema": 0}.get(how, 15)
    with pytest.warns(DamagedLogWarning) as caught:
        advice = t.advise()
    assert advice.queries == left
    message = str(caught[0].message)
    assert querylog.log_path(t.path) in message and f"mergetree repair {t.path}" in message
    assert hit.split("/")[-1] in message
    with pytest.warns(DamagedLogWarning):
        assert len(querylog.read_rows(t.path)) == left
    # the command line: the summary, and the warning as one line on stderr
    show = cli("queries", "show", t.path)
    assert show.returncode == 0, show.stderr
    assert show.stderr.startswith("mergetree queries: warning: the query log at ") and show.stderr.count("\n") == 1
    assert (f"{left} queries logged" if left else "no queries logged yet") in show.stdout
    advise = cli("advise", t.path, "--json")
    assert advise.returncode == 0 and json.loads(advise.stdout)["queries"] == left, advise.stderr
    # repair drops what is damaged and says what it dropped; afterwards the log reads clean
    repair = cli("repair", t.path)
    assert repair.returncode == 0, repair.stderr
    lines = [line for line in repair.stdout.splitlines() if line.startswith("repaired: queries/")]
    assert len(lines) == 1, repair.stdout
    assert {"truncated": "unreadable", "garbage in the middle": "unreadable", "data file deleted": "missing",
            "snapshot": "damaged: moved to queries/snapshot/damaged/",
            "manifest": "damaged: moved to queries/snapshot/damaged/",
            "schema": "the whole query log moved to queries.damaged-"}[how] in lines[0]
    if how not in ("snapshot", "manifest", "schema"):
        assert hit in lines[0] and "5 rows lost" in lines[0]
    again = cli("repair", t.path)
    assert again.returncode == 0 and again.stdout.startswith("nothing to repair"), again.stdout
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning left
        assert t.advise().queries == left
        t.read(filter=("id", "=", 1))  # the log goes on
        assert len(querylog.read_rows(t.path)) == left + 1


@pytest.mark.parametrize("how", ["truncated", "schema"])
def test_repair_of_the_log_directory_itself(tmp_path, how):
    t = logged_table(tmp_path / "t")
    damage_log(t, how)
    log = querylog.log_path(t.path)
    repair = cli("repair", log)
    assert repair.returncode == 0, repair.stderr
    assert repair.stdout.startswith("repaired: queries/"), repair.stdout
    assert cli("repair", log).stdout.startswith("nothing to repair: the query log at") or how == "schema"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(querylog.read_rows(t.path)) == (15 if how == "truncated" else 0)
    assert Table.repair(t.path) == []  # the table and its logs: all intact now


def test_a_damaged_optimizer_history_is_left_out_and_repaired(tmp_path):
    t = make(tmp_path / "t")
    for i in range(3):
        record_pass(PassReport(t.path, "minor", "committed", files_in=i))
    history_dir = os.path.join(t.path, HISTORY_DIR)
    live = Table.open(history_dir).directory
    name = sorted(e.file.file_name for e in live.live_files(live.latest_snapshot()).values())[1]
    os.unlink(os.path.join(history_dir, name))
    with pytest.warns(DamagedLogWarning, match="optimizer history"):
        assert len(history(t.path)) == 2
    done = Table.repair(t.path)
    assert len(done) == 1 and done[0].startswith(f"optimizer/{name} (missing): dropped from the optimizer history")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(history(t.path)) == 2


def test_the_logs_small_files_are_merged_as_flushes_pile_up(tmp_path):
    """The log is an append table: a flush is a file, and every COMPACT_FILES of them are merged
    (a compaction by key does nothing there), so its reads do not slow down file by file."""
    t = Table.create(str(tmp_path / "t"), pa.schema([("a", pa.int64())]), options={"query-log.enabled": "false"})
    flushes = querylog.COMPACT_FILES * 2 + 3
    for i in range(flushes):
        querylog.append_rows(t.path, [querylog.QueryRecord("read", ("a", "=", i), source="import").to_row()])
    log = Table.open(querylog.log_path(t.path))
    files = log.directory.live_files(log.directory.latest_snapshot())
    assert len(files) < querylog.COMPACT_FILES
    values = sorted(json.loads(f)[2] for f in log.read(columns=["filter"]).column("filter").to_pylist())
    assert values == list(range(flushes))  # every record kept, once


def test_a_side_table_another_writer_is_creating_is_waited_for(tmp_path) -> None:
    """Two writers recording at once (the scheduler's concurrent tasks, two queries' log
    lines): the second finds the side table's directory before the first has published its
    schema, and neither fails (nor loses its line): whichever publishes first, both open it."""
    from mergetree.storage import ObjectExistsError
    from mergetree.table.objects import locate
    from mergetree.table.paimon.create import open_or_create
    schema = pa.schema([("a", pa.int64())])
    # the schema file the first writer publishes: the one it makes for such a side table
    body = locate(str(open_or_create(str(tmp_path / "reference"), schema, {}).path)).read("schema/schema-0")
    path = tmp_path / "side"
    (path / "schema").mkdir(parents=True)  # the first writer mid-creation: no schema yet

    def publish() -> None:  # the first writer's exclusive create: it may find the second's published
        try:
            locate(str(path)).create("schema/schema-0", body)
        except ObjectExistsError:
            pass
    first = threading.Timer(0.2, publish)
    first.start()
    try:
        directory = open_or_create(str(path), schema, {})
    finally:
        first.join()
    assert directory.schema.schema == schema
    assert open_directory(str(path)).schema.schema == schema  # and it opens as it was published
