"""The query log's retention (`workload.retention.expire`, option `query-log.retention`): records
older than the retention are gone, newer ones kept, whole files dropped and straddling ones
rewritten in one commit; records appended and compactions committed meanwhile survive; the
advisor still reads the log; a process killed mid-expire leaves the log readable as it was;
bad retentions are refused naming the option or argument."""
from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
import textwrap

import pyarrow as pa
import pytest

from mergetree import InvalidArgumentError, Table
from mergetree.table.paimon.store import open_directory
from mergetree.table.workload import querylog, retention
from mergetree.table.workload.advise import read_log

SCHEMA = pa.schema([("id", pa.int64()), ("a", pa.int64())])
NOW = dt.datetime(2024, 6, 1, 12, tzinfo=dt.timezone.utc)


def make(path, options=None) -> Table:
    t = Table.create(str(path), SCHEMA, options={"query-log.enabled": "false", **(options or {})})
    t.write({"id": list(range(100)), "a": list(range(100))})
    return t


def log(t: Table, *days_ago: float) -> None:
    """One flush of the log (one data file): a record per age, in days before NOW."""
    querylog.append_rows(t.path, [querylog.QueryRecord("read", ("a", ">=", int(d)), ts=NOW - dt.timedelta(days=d),
                                                       source="import").to_row() for d in days_ago])


def ages(t: Table) -> list[float]:
    rows = Table.open(querylog.log_path(t.path)).read(columns=["ts"]).column("ts").to_pylist()
    return sorted((NOW - ts) / dt.timedelta(days=1) for ts in rows)


def live_files(t: Table) -> set[str]:
    d = open_directory(querylog.log_path(t.path))
    return set(d.live_files(d.latest_snapshot()))


def test_records_older_than_the_retention_are_removed_and_newer_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(retention, "SNAPSHOT_GRACE", dt.timedelta(0))   # delete the old files at once
    t = make(tmp_path / "t")
    log(t, 90, 60, 45)              # a file older than the retention: dropped whole
    log(t, 40, 20, 1)               # a file across it: rewritten with its newer records
    log(t, 2, 0.5)                  # a file within it: kept as it is
    before = live_files(t)
    out = retention.expire(t.path, "30d", now=NOW)
    assert ages(t) == [0.5, 1, 2, 20]
    assert out.cutoff == NOW - dt.timedelta(days=30) and out.rows == 4
    assert len(out.dropped) == len(out.rewritten) == 1 and set(out.dropped + out.rewritten) < before
    after = live_files(t)
    assert after & before == before - set(out.dropped) - set(out.rewritten)
    for name in out.dropped + out.rewritten:         # really deleted, not only left out of the log
        assert not os.path.exists(os.path.join(querylog.log_path(t.path), name))
    assert out.snapshots                               # the log's history before the expire is gone
    again = retention.expire(t.path, "30d", now=NOW)
    assert again.rows == 0 and not again.dropped and not again.rewritten and ages(t) == [0.5, 1, 2, 20]


def test_the_tables_option_is_the_default_and_30_days_without_it(tmp_path):
    t = make(tmp_path / "t")
    log(t, 31, 29)
    assert t.options.query_log_retention == dt.timedelta(days=30)
    assert retention.expire(t.path, now=NOW).rows == 1 and ages(t) == [29]
    t.set_options({"query-log.retention": "1w"})
    assert retention.expire(t.path, now=NOW).rows == 1 and ages(t) == []
    u = make(tmp_path / "u", {"query-log.retention": "forever"})
    log(u, 3650)
    out = retention.expire(u.path, now=NOW)
    assert out.cutoff is None and out.rows == 0 and ages(u) == [3650]


def test_no_log_nothing_to_expire(tmp_path):
    t = make(tmp_path / "t")
    assert retention.expire(t.path, 3600, now=NOW) == retention.Expired(cutoff=NOW - dt.timedelta(hours=1))
    assert not os.path.exists(querylog.log_path(t.path))


def test_the_advisor_reads_the_log_after_an_expire(tmp_path):
    t = make(tmp_path / "t", {"target-file-size": "1 kb", "write-only": "true"})
    for i in range(8):
        t.write({"id": list(range(i * 100, i * 100 + 100)), "a": list(range(i * 100, i * 100 + 100))})
    log(t, *([40] * 30))
    now = dt.datetime.now(dt.timezone.utc)
    querylog.append_rows(t.path, [querylog.QueryRecord("read", [("a", ">=", i), ("a", "<", i + 50)], ts=now,
                                                       source="import").to_row() for i in range(20)])
    retention.expire(t.path, "30d")
    assert len(read_log(t.path)) == 20
    advice = t.advise()
    assert advice.queries == 20 and advice.replayed == 20


def test_records_appended_during_an_expire_are_kept(tmp_path, monkeypatch):
    t = make(tmp_path / "t")
    log(t, 60, 10)
    commit = retention._commit

    def racing(directory, base, adds, deletes):
        log(t, 3)                                      # a flush commits first: the expire rebases on it
        commit(directory, base, adds, deletes)

    monkeypatch.setattr(retention, "_commit", racing)
    assert retention.expire(t.path, "30d", now=NOW).rows == 1
    assert ages(t) == [3, 10]


def test_files_replaced_during_an_expire_make_it_plan_again(tmp_path, monkeypatch):
    t = make(tmp_path / "t")
    log(t, 60, 50)
    log(t, 40, 10)
    commit = retention._commit
    calls = []

    def racing(directory, base, adds, deletes):
        calls.append(len(deletes))
        if len(calls) == 1:              # another process expires the same files first
            assert retention.expire(t.path, "30d", now=NOW).rows == 3
        commit(directory, base, adds, deletes)

    monkeypatch.setattr(retention, "_commit", racing)
    out = retention.expire(t.path, "30d", now=NOW)
    assert calls == [2, 2] and out.rows == 0 and ages(t) == [10]   # planned again: nothing left to remove


KILLED = textwrap.dedent("""
    import datetime as dt, os, signal, sys
    from mergetree.table.workload import retention
    from mergetree.table import housekeeping
    where = sys.argv[2]
    if where == "before-commit":      # the kept records are written, the commit not made
        commit = retention._commit
        def die(directory, base, adds, deletes):
            os.kill(os.getpid(), signal.SIGKILL)
        retention._commit = die
    else:                             # committed; killed while deleting what the old snapshots used
        unlink = os.unlink
        count = [0]
        def dying_unlink(path, *args, **kwargs):
            count[0] += 1
            if count[0] == 2:
                os.kill(os.getpid(), signal.SIGKILL)
            unlink(path, *args, **kwargs)
        retention.SNAPSHOT_GRACE = dt.timedelta(0)
        os.unlink = dying_unlink
    retention.expire(sys.argv[1], "30d", now=dt.datetime(2024, 6, 1, 12, tzinfo=dt.timezone.utc))
    print("not killed")
""")


@pytest.mark.parametrize("where", ["before-commit", "mid-cleanup"])
def test_a_process_killed_mid_expire_leaves_a_readable_log(tmp_path, monkeypatch, where):
    t = make(tmp_path / "t")
    log(t, 90, 60)
    log(t, 40, 20, 1)
    log(t, 2)
    before = ages(t)
    child = subprocess.run([sys.executable, "-c", KILLED, t.path, where], capture_output=True, text=True, timeout=120)
    assert child.returncode == -signal.SIGKILL, child.stdout + child.stderr
    expired = [a for a in before if a <= 30]
    assert ages(t) == (before if where == "before-commit" else expired)   # the log as it was, or as expired
    assert len(read_log(t.path)) == len(ages(t))
    # the next expire finishes the work; the dead process's files are orphans, deleted once old enough
    log_dir = querylog.log_path(t.path)
    old = (NOW - dt.timedelta(days=1)).timestamp()
    for folder, _, names in os.walk(log_dir):
        for name in names:
            os.utime(os.path.join(folder, name), (old, old))
    monkeypatch.setattr(retention, "SNAPSHOT_GRACE", dt.timedelta(0))
    out = retention.expire(t.path, "30d", now=NOW)
    assert ages(t) == expired
    if where == "before-commit":
        assert out.deleted, "the killed expire's written files were not removed"
    referenced = live_files(t)                        # and no other data file is left
    data = {os.path.relpath(os.path.join(f, n), log_dir) for f, _, ns in os.walk(log_dir) for n in ns
            if n.endswith(".parquet")}
    assert data == referenced


@pytest.mark.parametrize("value", ["abc", "30", "-1d", "0d", "0s"])
def test_a_bad_retention_option_is_refused_naming_it(tmp_path, value):
    with pytest.raises(InvalidArgumentError, match="query-log.retention"):
        make(tmp_path / "t", {"query-log.retention": value})
    t = make(tmp_path / "u")
    with pytest.raises(InvalidArgumentError, match="query-log.retention"):
        t.set_options({"query-log.retention": value})


@pytest.mark.parametrize("value", ["abc", -5, 0, float("nan"), dt.timedelta(seconds=-1), True, [1]])
def test_a_bad_retention_argument_is_refused_naming_it(tmp_path, value):
    t = make(tmp_path / "t")
    log(t, 60)
    with pytest.raises(InvalidArgumentError, match="retention"):
        retention.expire(t.path, value, now=NOW)
    assert ages(t) == [60]


def test_table_expire_queries_and_the_cli_command(tmp_path):
    t = make(tmp_path / "t", {"query-log.retention": "7d"})
    now = dt.datetime.now(dt.timezone.utc)
    querylog.append_rows(t.path, [querylog.QueryRecord("read", ("a", ">=", d), ts=now - dt.timedelta(days=d),
                                                       source="import").to_row() for d in (30, 10, 1)])
    out = Table.open(t.path).expire_queries()  # the table's option: a week
    assert out.rows == 2 and Table.open(querylog.log_path(t.path)).read().num_rows == 1
    done = subprocess.run([sys.executable, "-m", "mergetree", "queries", "expire", t.path, "--retention", "12h"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "removed 1 queries" in done.stdout and Table.open(querylog.log_path(t.path)).read().num_rows == 0
    bad = subprocess.run([sys.executable, "-m", "mergetree", "queries", "expire", t.path, "--retention", "soon"],
                         capture_output=True, text=True)
    assert bad.returncode != 0 and "retention" in bad.stderr and "Traceback" not in bad.stderr


def test_a_daemon_round_keeps_the_log_to_its_retention(tmp_path):
    from mergetree.organize import run_daemon
    t = make(tmp_path / "t", {"query-log.retention": "7d"})
    now = dt.datetime.now(dt.timezone.utc)
    querylog.append_rows(t.path, [querylog.QueryRecord("read", ("a", ">=", d), ts=now - dt.timedelta(days=d),
                                                       source="import").to_row() for d in (30, 10, 1)])
    reports = []
    run_daemon([t.path], once=True, on_report=reports.append)
    assert Table.open(querylog.log_path(t.path)).read().num_rows == 1
    assert not [r for r in reports if r.status.startswith("failed")]
