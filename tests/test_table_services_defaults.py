"""Table services with Paimon's defaults: snapshot expiry by ``snapshot.num-retained.min`` (10),
``.max`` and ``snapshot.time-retained`` (an hour) — explicitly, from the CLI, and after every
commit as Java's commits run it (``snapshot.expire.limit`` at a time, never ``write-only``) —,
orphan cleaning's default age (a day), free-form properties, and statistics truncated as Paimon
truncates them (a huge value never makes a huge manifest)."""
from __future__ import annotations

import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pyarrow as pa
import pytest

import mergetree as mt
from mergetree import CommittedWarning, InvalidArgumentError
from mergetree.table import expiry

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
HOUR_MS = 3_600_000


def _table(tmp_path: Path, commits: int, **options: str) -> mt.Table:
    t = mt.Table.create(tmp_path / "t", SCHEMA, primary_key=["id"], buckets=1,
                        options={"write-only": "true", **options})  # one snapshot per write
    for i in range(commits):
        t.write(pa.table({"id": [i], "v": [f"v{i}"]}))
    return t


def _ids(t: mt.Table) -> list[int]:
    return [s.id for s in t.snapshots()]


def test_expiry_by_default_keeps_ten_and_everything_younger_than_an_hour(tmp_path):
    t = _table(tmp_path, 15)
    assert t.expire_snapshots() == [] and len(_ids(t)) == 15  # all younger than an hour
    now = int(time.time() * 1000)
    later = expiry.expire_snapshots(t.directory, now_millis=now + 2 * HOUR_MS)
    assert later == list(range(1, 6)) and _ids(t) == list(range(6, 16))  # the newest ten stay
    assert t.read(snapshot=6).num_rows == 6 and t.read().num_rows == 15


def test_the_tables_options_and_the_arguments_set_what_stays(tmp_path):
    t = _table(tmp_path, 12, **{"snapshot.num-retained.min": "3", "snapshot.num-retained.max": "8"})
    assert t.expire_snapshots() == [1, 2, 3, 4]  # beyond the newest 8 whatever their age; the rest are young
    assert t.expire_snapshots(older_than=0) == [5, 6, 7, 8, 9]  # then down to the minimum
    assert _ids(t) == [10, 11, 12]
    with pytest.raises(InvalidArgumentError, match="at least"):
        t.expire_snapshots(retain_last=0)
    with pytest.raises(InvalidArgumentError, match="retain_max"):
        t.expire_snapshots(retain_last=3, retain_max=2)
    assert t.expire_snapshots(retain_last=1, older_than=0) == [10, 11]


def test_every_commit_expires_as_javas_commit_does(tmp_path):
    t = mt.Table.create(tmp_path / "t", SCHEMA, primary_key=["id"], buckets=1,
                        options={"snapshot.num-retained.min": "2", "snapshot.time-retained": "50 ms",
                                 "snapshot.expire.limit": "3"})
    for i in range(8):
        t.write(pa.table({"id": [i], "v": ["x"]}))
        time.sleep(0.06)
    ids = _ids(t)
    # each commit removes at most three of those past the two newest and older than 50 ms
    assert len(ids) <= 2 + 3 and ids[-1] == t.latest_snapshot().id
    assert t.read().num_rows == 8
    assert (tmp_path / "t" / "snapshot" / "EARLIEST").read_text().strip() == str(ids[0])


def test_a_write_only_table_and_a_young_history_expire_nothing_after_commits(tmp_path):
    t = _table(tmp_path, 14, **{"snapshot.num-retained.min": "2", "snapshot.time-retained": "1 ms"})
    assert len(_ids(t)) == 14  # write-only: Java's commits do not expire either
    young = mt.Table.create(tmp_path / "young", SCHEMA, primary_key=["id"], options={"snapshot.num-retained.min": "2"})
    for i in range(14):
        young.write(pa.table({"id": [i], "v": ["x"]}))
    assert len(_ids(young)) >= 14  # younger than an hour


def test_a_failed_expiry_after_a_commit_is_a_warning_and_the_commit_stands(tmp_path, monkeypatch):
    t = mt.Table.create(tmp_path / "t", SCHEMA, primary_key=["id"], buckets=1,
                        options={"snapshot.num-retained.min": "1", "snapshot.time-retained": "1 ms"})
    t.write(pa.table({"id": [1], "v": ["x"]}))
    time.sleep(0.01)

    def broken(*args, **kwargs):
        raise mt.CorruptTableError("a damaged snapshot", path="snapshot/snapshot-1")
    monkeypatch.setattr(expiry, "expire_snapshots", broken)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t.write(pa.table({"id": [2], "v": ["y"]}))
    assert any(issubclass(w.category, CommittedWarning) and "expiring old snapshots" in str(w.message)
               for w in caught)
    assert t.read().num_rows == 2


def test_the_cli_expires_with_the_tables_retention(tmp_path):
    t = _table(tmp_path, 12)

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "mergetree", *args], capture_output=True, text=True)

    done = cli("expire", t.path)
    assert done.returncode == 0 and "expired 0 snapshot(s)" in done.stdout, done.stderr
    done = cli("expire", t.path, "--older-than-hours", "0")
    assert done.returncode == 0 and "expired 2 snapshot(s)" in done.stdout  # down to Paimon's ten
    done = cli("expire", t.path, "--retain", "3", "--older-than-hours", "0", "--orphans")
    assert done.returncode == 0 and len(_ids(t)) == 3 and "removed 0 orphan" in done.stdout


def test_orphan_cleaning_waits_a_day_by_default(tmp_path):
    t = _table(tmp_path, 2)
    stray = tmp_path / "t" / "bucket-0" / "data-00000000-0000-0000-0000-000000000000-0.parquet"
    stray.write_bytes(b"left by a crashed writer")
    hours_ago = time.time() - 5 * 3600
    os.utime(stray, (hours_ago, hours_ago))
    assert t.remove_orphan_files() == []  # five hours old: a commit could still be in flight
    assert stray.exists()
    assert len(t.remove_orphan_files(older_than=3600)) == 1 and not stray.exists()


def test_a_huge_value_makes_no_huge_manifest(tmp_path):
    for kind, key in (("pk", ["id"]), ("append", None)):
        schema = pa.schema([("id", pa.int64()), ("s", pa.string()), ("b", pa.binary())])
        t = mt.Table.create(tmp_path / kind, schema, primary_key=key)
        t.write(pa.table({"id": [1], "s": ["x" * 5_000_000], "b": [b"y" * 5_000_000]}))
        manifests = list((tmp_path / kind / "manifest").iterdir())
        assert max(p.stat().st_size for p in manifests) < 20_000  # truncate(16), Paimon's default
        assert t.read(filter=("s", "=", "x" * 5_000_000)).num_rows == 1  # a truncated bound still prunes right
        assert t.read(filter=("s", ">", "x" * 5_000_000)).num_rows == 0


def test_free_form_properties_typos_and_options_that_change_reads(tmp_path):
    from mergetree.table.paimon.options import check_options, misspelt
    assert misspelt("snapshot.time-retaind") == "snapshot.time-retained"  # a typo that would keep the defaults
    assert misspelt("owner") is None and misspelt("snapshot.num-retained.max") is None
    with pytest.raises(mt.UnsupportedPaimonFeatureError, match="partial-update.remove-record-on-sequence"):
        check_options({"bucket": "1", "partial-update.remove-record-on-sequence-groupp": "x"}, ["id"], ["id"], [])
    assert check_options({"bucket": "1", "deduplicate.ignore-delete": "true"}, ["id"], ["id"], []).ignore_delete
    with pytest.raises(InvalidArgumentError, match="did you mean 'snapshot.time-retained'"):
        mt.Table.create(tmp_path / "t", SCHEMA, primary_key=["id"], options={"snapshot.time-retaind": "1 d"})
