"""The tiered background optimizer: a minor pass merges small new files, a major pass lays out
data once the threshold of it waits; both only touch data not yet optimized, are idempotent,
survive a writer in another process and a SIGKILL mid-pass."""
from __future__ import annotations

import datetime as dt
import math
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pyarrow as pa
import pytest
from disk import table_files

from mergetree import InvalidArgumentError, Table
from mergetree.organize import history, pending, run_daemon, run_once
from mergetree.table.housekeeping import referenced_files
from mergetree.table.levers.optimize import optimized_tier
from mergetree.table.read import top_rows

SCHEMA = pa.schema([("id", pa.int64()), ("a", pa.int64()), ("b", pa.float64())])


def rows(seed: int, n: int = 2_000) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({"id": np.arange(seed * 1_000_000, seed * 1_000_000 + n), "a": rng.integers(0, 10**6, n),
                     "b": rng.normal(size=n)}, schema=SCHEMA)


def canonical(t: pa.Table) -> pa.Table:
    return top_rows(t, [("id", "asc")], None)


def make(path, **options) -> Table:
    return Table.create(str(path), SCHEMA, options={
        "write-only": "true", "target-file-size": "400 kb", "optimize.minor-min-files": "4",
        "optimize.major-threshold": "300 kb", "clustering.columns": "a,b", "clustering.strategy": "hilbert",
        **options})


def live(t: Table) -> list:
    return [e.file for e in t.directory.live_files(t.latest_snapshot()).values()]


def tiers(t: Table) -> list:
    """Each live file's tier as the optimizer sees it: "major" (laid out for the current
    layout, above level 0), None (level 0: as written, or only merged by a minor pass)."""
    return sorted(str(optimized_tier(m, t.directory.options)) for m in live(t))


def test_minor_then_major_then_nothing(tmp_path):
    t = make(tmp_path / "t", **{"optimize.major-threshold": "10 mb"})
    for seed in range(6):
        t.write(rows(seed))                      # six small files, ~30 KiB each
    expected = canonical(t.read())
    work = pending(t.directory)
    assert not work["major"] and sum(len(f) for f in work["minor"].values()) == 6
    reports = {r.tier: r for r in run_once(t.path)}
    assert reports["major"].status == "nothing"
    minor = reports["minor"]
    assert minor.status == "committed" and minor.files_in == 6 and minor.files_out == 1
    t = Table.open(t.path)
    # a minor pass only merges: one level-0 file of every row, not laid out (a major pass would take it)
    [merged] = live(t)
    assert merged.level == 0 and merged.row_count == 6 * 2_000 and tiers(t) == ["None"]
    assert canonical(t.read()).equals(expected)
    # running again changes nothing
    assert {r.status for r in run_once(t.path)} == {"nothing"}
    assert Table.open(t.path).latest_snapshot().id == t.latest_snapshot().id
    # enough waiting data: the major pass lays it out, once
    t.set_options({"optimize.major-threshold": "200 kb"})
    for seed in range(6, 10):
        t.write(rows(seed))
    reports = {r.tier: r for r in run_once(t.path)}
    assert reports["major"].status == "committed" and reports["major"].layout == "hilbert(a,b)"
    assert reports["major"].files_in == 5  # the minor file and the four new ones
    t = Table.open(t.path)
    assert set(tiers(t)) == {"major"} and canonical(t.read()).equals(canonical(pa.concat_tables(
        [expected, *(rows(s) for s in range(6, 10))])))
    assert {r.status for r in run_once(t.path)} == {"nothing"}
    recorded = history(t.path)
    assert recorded.column("tier").to_pylist() == ["minor", "major"]
    assert recorded.column("files_in").to_pylist() == [6, 5]


def test_a_new_layout_makes_laid_out_data_pending_again(tmp_path):
    t = make(tmp_path / "t")
    for seed in range(12):  # ~370 KiB of zstd files: above the 300 KiB major threshold
        t.write(rows(seed))
    run_once(t.path)
    t = Table.open(t.path)
    assert not any(pending(t.directory).values())
    t.set_options({"clustering.columns": "b", "clustering.strategy": "linear"})
    assert pending(Table.open(t.path).directory)["major"]


def test_primary_key_tables_compact_and_index(tmp_path):
    t = Table.create(str(tmp_path / "t"), SCHEMA, primary_key="id",
                     options={"write-only": "true", "file-index.bloom-filter.columns": "a"})
    for seed in range(6):
        t.write(rows(seed % 3))  # updates of the same keys
    expected = canonical(t.read())
    statuses = {r.tier: r.status for r in run_once(t.path)}
    assert statuses["minor"] == "committed"
    assert canonical(Table.open(t.path).read()).equals(expected)


DAEMON = textwrap.dedent("""
    import sys
    from mergetree.organize import run_daemon
    run_daemon([sys.argv[1]], interval=0.05)
""")

WRITER = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, sys.argv[3])
    from test_scheduler import rows
    from mergetree import Table
    t = Table.open(sys.argv[1])
    for seed in range(int(sys.argv[2]), int(sys.argv[2]) + 12):
        t.write(rows(seed))
        time.sleep(0.15)
""")


def test_a_writer_in_another_process_and_kills_mid_pass_lose_nothing(tmp_path):
    path = str(tmp_path / "t")
    t = make(path)
    for seed in range(4):
        t.write(rows(seed))
    here = os.path.dirname(os.path.abspath(__file__))
    writer = subprocess.Popen([sys.executable, "-c", WRITER, path, "100", here], stderr=subprocess.PIPE)
    kills = 0
    deadline = time.monotonic() + 90
    rng = np.random.default_rng(11)
    while writer.poll() is None and time.monotonic() < deadline:
        daemon = subprocess.Popen([sys.executable, "-c", DAEMON, path], stderr=subprocess.PIPE)
        time.sleep(rng.uniform(0.4, 1.2))  # Python starts in ~0.3 s: kills land in rounds
        if daemon.poll() is None:
            daemon.send_signal(signal.SIGKILL)
            kills += 1
        daemon.wait()
        canonical(Table.open(path).read())  # readable at every moment
    assert writer.wait(timeout=120) == 0, writer.stderr.read().decode()[-2000:]
    assert kills >= 1
    for _ in range(3):  # finish the work, then nothing is left
        run_once(path)
    table = Table.open(path)
    expected = canonical(pa.concat_tables([rows(s) for s in [*range(4), *range(100, 112)]]))
    assert canonical(table.read()).equals(expected)
    assert not any(pending(table.directory).values())
    assert {r.status for r in run_once(path)} == {"nothing"}
    table.remove_orphan_files(older_than=dt.timedelta(0))
    referenced = set(referenced_files(table.directory, table.directory.store.snapshot_ids()))
    leftovers = {p for p in table_files(path) - referenced if not p.startswith(("snapshot/", "schema/"))
                 and not p.startswith("optimizer/")}
    assert leftovers == set()


@pytest.mark.parametrize("interval", [0, -1, 0.0, math.nan, math.inf, dt.timedelta(0), dt.timedelta(seconds=-5),
                                      "5", None, True, 1e300])
def test_a_non_positive_or_non_finite_interval_is_refused(tmp_path, interval):
    path = str(tmp_path / "t")
    make(path)
    rounds = []
    with pytest.raises(InvalidArgumentError, match="interval"):
        run_daemon([path], interval=interval, once=True, on_report=rounds.append)
    assert rounds == []  # refused before any round


def test_the_interval_is_seconds_or_a_timedelta(tmp_path):
    path = str(tmp_path / "t")
    make(path)
    stop = threading.Event()
    rounds: list = []

    def count(report) -> None:
        rounds.append(report)
        if len(rounds) >= 4:  # two rounds of two passes
            stop.set()
    started = time.monotonic()
    run_daemon([path], interval=dt.timedelta(milliseconds=300), on_report=count, stop=stop)
    assert len(rounds) == 4 and time.monotonic() - started >= 0.3  # it waited between the rounds


@pytest.mark.parametrize("interval", ["0", "-1", "nan", "inf", "-0.5"])
def test_the_daemon_cli_refuses_a_bad_interval_in_one_line(tmp_path, interval):
    path = str(tmp_path / "t")
    make(path)
    started = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "mergetree", "optimize-daemon", path, f"--interval={interval}"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and time.monotonic() - started < 30
    assert out.stderr.count("\n") == 1 and "--interval must be" in out.stderr, out.stderr
    assert not os.path.exists(os.path.join(path, "optimizer"))  # no round ran
