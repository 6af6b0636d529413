"""Durations, ages and moments as arguments: one reading (`mergetree.table.durations`) for Python
and the command line.  `since` takes the same forms in `Table.advise`, `replay`, the report and
on the CLI's --since, with the same answers; every bad value is refused with the argument's
name, in Python as an InvalidArgumentError and on the CLI as one line and a non-zero status."""
from __future__ import annotations

import datetime as dt
import json
import math
import subprocess
import sys

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mergetree import InvalidArgumentError, Table
from mergetree.organize import build_report, replay
from mergetree.table.durations import (
    AGE_UNITS,
    MAX_SECONDS,
    java_duration,
    parse_age,
    parse_since,
    seconds,
    since_moment,
)
from mergetree.table.workload import querylog
from mergetree.table.workload.advise import read_log

UTC = dt.timezone.utc


# -- the grammar ---------------------------------------------------------------------------------

@settings(max_examples=300, deadline=None)
@given(number=st.one_of(st.integers(0, 10**6), st.decimals(0, 10**6, places=3, allow_nan=False)),
       unit=st.sampled_from(sorted(AGE_UNITS)), upper=st.booleans(), space=st.sampled_from(["", " "]))
def test_an_age_is_a_number_and_a_unit(number, unit, upper, space):
    text = f"{number}{space}{unit.upper() if upper else unit}"
    expected = dt.timedelta(seconds=float(str(number)) * AGE_UNITS[unit])  # the reference: number times unit
    assert parse_age(text) == expected
    assert parse_since(text) == expected
    now = dt.datetime(2024, 6, 1, tzinfo=UTC)
    try:
        moment = now - expected
    except OverflowError:  # an age reaching before year 1: all of time
        moment = dt.datetime.min.replace(tzinfo=UTC)
    assert since_moment(text, now=now) == moment


@pytest.mark.parametrize(("text", "moment"), [
    ("2024-05-01", dt.datetime(2024, 5, 1, tzinfo=UTC)),
    ("2024-05-01T12:30", dt.datetime(2024, 5, 1, 12, 30, tzinfo=UTC)),           # naive: UTC, as the log shows
    ("2024-05-01 12:30:15Z", dt.datetime(2024, 5, 1, 12, 30, 15, tzinfo=UTC)),
    ("2024-05-01T12:00+02:00", dt.datetime(2024, 5, 1, 10, 0, tzinfo=UTC)),
])
def test_a_moment_is_iso_8601(text, moment):
    assert since_moment(text) == moment
    assert parse_since(text) == moment


@pytest.mark.parametrize(("text", "age"), [
    ("1 day", dt.timedelta(days=1)), ("2 days", dt.timedelta(days=2)), ("30 min", dt.timedelta(minutes=30)),
    ("1 hour", dt.timedelta(hours=1)), ("45 seconds", dt.timedelta(seconds=45)),
    ("500 ms", dt.timedelta(milliseconds=500)), ("3 HOURS", dt.timedelta(hours=3)),
])
def test_an_age_in_javas_spelling(text, age):
    """Paimon's duration options as Java writes them ('2 days', '30 min') read as they mean."""
    assert parse_age(text) == age and parse_since(text) == age
    assert java_duration(text, "x") == age


@pytest.mark.parametrize("text", ["5 mins", "2w", "1.5 h", "1_0", "5\xa0min", "\uff15 min", ".5d", "1 parsec", "",
                                  "99999999999999999999 ms"])
def test_a_java_duration_is_what_java_reads_and_nothing_more(text):
    """Java's `TimeUtils.parseDuration`: whole ASCII digits, Java's unit labels, no weeks."""
    with pytest.raises(InvalidArgumentError, match="whole number and a unit|too long"):
        java_duration(text, "x")


def test_a_java_duration_without_a_unit_is_milliseconds():
    assert java_duration("3600000", "x") == dt.timedelta(hours=1)
    assert java_duration(" 5 s ", "x") == dt.timedelta(seconds=5) and parse_age("30 mins") == dt.timedelta(minutes=30)
    with pytest.raises(InvalidArgumentError, match="since"):
        parse_since("3600000")  # mergetree's own arguments take no bare number of milliseconds


def test_python_values():
    assert parse_since(None) is None and since_moment(None) is None
    assert parse_since(dt.timedelta(hours=2)) == dt.timedelta(hours=2)
    assert parse_since(dt.datetime(2024, 5, 1)) == dt.datetime(2024, 5, 1, tzinfo=UTC)
    assert parse_since(dt.date(2024, 5, 1)) == dt.datetime(2024, 5, 1, tzinfo=UTC)
    assert since_moment(dt.timedelta(days=999_999_999)) == dt.datetime.min.replace(tzinfo=UTC)  # all of time
    assert seconds(dt.timedelta(minutes=2), "x") == 120 and seconds(3, "x") == 3.0 and seconds(0, "x") == 0


@pytest.mark.parametrize("bad", ["-1d", "30", "1y", "", "d", "1e3d", "1 parsec", "yesterday", "2024-13-01", "inf",
                                 "nan", "99999999999999999999w", 30, 1.5, True, dt.timedelta(seconds=-1), [1]])
def test_bad_since_is_refused_naming_the_argument(bad):
    with pytest.raises(InvalidArgumentError, match="since"):
        parse_since(bad)


@pytest.mark.parametrize("bad", [-1, -0.5, math.nan, math.inf, -math.inf, MAX_SECONDS * 2, "1h", None, True,
                                 dt.timedelta(seconds=-1)])
def test_bad_durations_are_refused(bad):
    with pytest.raises(InvalidArgumentError, match="older_than"):
        seconds(bad, "older_than")


@pytest.mark.parametrize("bad", [0, 0.0, dt.timedelta(0)])
def test_positive_durations_refuse_zero(bad):
    with pytest.raises(InvalidArgumentError, match="interval must be more than 0"):
        seconds(bad, "interval", positive=True)


def test_housekeeping_refuses_non_finite_ages(tmp_path):
    t = Table.create(str(tmp_path / "t"), pa.schema([("id", pa.int64())]), primary_key="id")
    t.write({"id": [1]})
    for bad in (math.inf, math.nan, -1):
        with pytest.raises(InvalidArgumentError, match="older_than"):
            t.expire_snapshots(older_than=bad)
        with pytest.raises(InvalidArgumentError, match="older_than"):
            t.remove_orphan_files(older_than=bad)


# -- the same forms, the same answers: Python and the CLI ------------------------------------------

NOW = dt.datetime.now(UTC)
AGES = {"10 days ago": NOW - dt.timedelta(days=10), "2 hours ago": NOW - dt.timedelta(hours=2),
        "10 minutes ago": NOW - dt.timedelta(minutes=10)}


@pytest.fixture(scope="module")
def logged(tmp_path_factory) -> str:
    t = Table.create(str(tmp_path_factory.mktemp("since") / "t"), pa.schema([("id", pa.int64()), ("a", pa.int64())]),
                     options={"query-log.enabled": "false"})  # only the records below are in the log
    t.write({"id": list(range(100)), "a": list(range(100))})
    querylog.append_rows(t.path, [querylog.QueryRecord("read", ("a", "<", 5), ts=ts, files_scanned=1, files_total=1,
                                                       bytes_scanned=10, bytes_total=10).to_row()
                                  for ts in AGES.values()])
    return t.path


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mergetree", *args], capture_output=True, text=True, timeout=120)


# ids without the clock: pytest-xdist's workers collect separately and must see the same ids
# (a date computed at collection differs between them across a minute or midnight)
# each form on one of the two commands (their --since is one parser; a command's start is a
# second of the test), and every form in every Python call
@pytest.mark.parametrize(("since", "count", "command"), [
    ("30d", 3, "show"), ("1w", 2, "advise"), ("1.5h", 1, "show"), ("3h", 2, "advise"), ("90m", 1, "show"),
    ("1m", 0, "advise"), ("45s", 0, "show"),
    pytest.param((NOW - dt.timedelta(days=5)).strftime("%Y-%m-%dT%H:%M"), 2, "advise", id="5-days-ago-minute"),
    pytest.param((NOW - dt.timedelta(days=30)).date().isoformat(), 3, "show", id="30-days-ago-date"),
])
def test_since_takes_the_same_forms_in_python_and_on_the_cli(logged, since, count, command):
    assert len(read_log(logged, since)) == count
    assert Table.open(logged).advise(since=since).queries == count
    assert len(replay(logged, since=since).queries) == count
    if command == "show":
        show = cli("queries", "show", logged, "--since", since)
        assert show.returncode == 0, show.stderr
        assert (f"{count:,} queries logged" if count else "no queries in that period") in show.stdout
    else:
        advise = cli("advise", logged, "--since", since, "--json")
        assert advise.returncode == 0 and json.loads(advise.stdout)["queries"] == count, advise.stderr


# each bad value on one of the commands (one parser of --since serves them all; a command's start
# is a second of the test), and every bad value in every Python call
@pytest.mark.parametrize(("bad", "command"), [("-1d", ["queries", "show"]), ("30", ["advise"]),
                                              ("tomorrow", ["replay"]),
                                              ("1e400d", ["report", "--html", "/dev/null"])])
def test_bad_since_is_refused_in_python_and_on_the_cli(logged, bad, command):
    for call in (lambda: Table.open(logged).advise(since=bad), lambda: replay(logged, since=bad),
                 lambda: read_log(logged, bad), lambda: build_report(logged, since=bad)):
        with pytest.raises(InvalidArgumentError, match="since"):
            call()
    out = cli(*command, logged, f"--since={bad}")
    assert out.returncode == 2, (command, out.stderr)
    assert "argument --since: since:" in out.stderr.splitlines()[-1] and "Traceback" not in out.stderr
