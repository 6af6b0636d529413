"""Crash safety: SIGKILL a process mid-write and mid-compaction, many times; the table
must always open and hold exactly the committed operations, and orphan cleanup must
remove the debris without touching live data."""
from __future__ import annotations

import datetime as dt
import random
import signal
import subprocess
import sys
import textwrap
import time

import pyarrow as pa
from disk import table_files

from mergetree import Table
from mergetree.table.housekeeping import referenced_files

KEYS = 3000

# Operation i is a pure function of i, so the committed state after k operations is known.
OPS = textwrap.dedent("""
    import numpy as np, pyarrow as pa
    KEYS = 3000

    def operation(i):
        rng = np.random.default_rng(i)
        if i % 4 == 3:
            return "delete", pa.table({"id": rng.choice(KEYS, 60, replace=False).astype(np.int64)})
        ids = rng.choice(KEYS, 400, replace=False).astype(np.int64)
        return "write", pa.table({"id": ids, "v": np.full(400, i, dtype=np.int64),
                                  "s": pa.array([f"op{i}-{k}" for k in ids])})
""")

CHILD = OPS + textwrap.dedent("""
    import sys
    from mergetree import Table
    table = Table.open(sys.argv[1])
    done = sum(1 for s in table.snapshots() if s.commit_kind == "APPEND")
    print("ready", flush=True)  # imported and opened: the parent times its kill from here
    for i in range(done, done + 1000):
        kind, data = operation(i)
        table.write(data) if kind == "write" else table.delete(data)
        if i % 5 == 4:
            table.compact(full=(i % 10 == 9))
""")

namespace: dict = {}
exec(OPS, namespace)
operation = namespace["operation"]


def model(ops: int) -> dict[int, tuple]:
    state: dict[int, tuple] = {}
    for i in range(ops):
        kind, data = operation(i)
        if kind == "write":
            for row in data.to_pylist():
                state[row["id"]] = (row["v"], row["s"])
        else:
            for k in data.column("id").to_pylist():
                state.pop(k, None)
    return state


def table_state(table: Table) -> dict[int, tuple]:
    rows = table.read().to_pylist()
    state = {r["id"]: (r["v"], r["s"]) for r in rows}
    assert len(state) == len(rows), "a key appears twice"
    return state


def committed_ops(table: Table) -> int:
    return sum(1 for s in table.snapshots() if s.commit_kind == "APPEND")


def kill_repeatedly(path: str, runs: int, seed: int) -> int:
    """Run CHILD (writes and compactions) `runs` times, SIGKILLed at a random moment unless it
    finished; after each, the table holds exactly what its committed snapshots say.  The kills."""
    rng = random.Random(seed)
    kills = 0
    for _ in range(runs):
        child = subprocess.Popen([sys.executable, "-c", CHILD, path], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        # from the moment it starts writing (imports take from 0.5 s to several on a loaded machine)
        assert child.stdout is not None
        child.stdout.readline()
        time.sleep(rng.uniform(0.1, 1.5))
        if child.poll() is None:
            child.send_signal(signal.SIGKILL)
            kills += 1
        child.wait()
        assert child.returncode in (0, -signal.SIGKILL), child.stderr.read().decode()[-2000:]
        table = Table.open(path)
        assert table_state(table) == model(committed_ops(table))
    return kills


def test_sigkill_at_random_points_loses_nothing(tmp_path):
    path = str(tmp_path / "t")
    Table.create(path, pa.schema([("id", pa.int64()), ("v", pa.int64()), ("s", pa.string())]),
                 primary_key="id", buckets=2, options={"num-sorted-run.compaction-trigger": "2",
                                                       "target-file-size": "16 kb"})
    assert kill_repeatedly(path, 14, 1234) >= 10
    assert committed_ops(Table.open(path)) > 10  # the children really got work done

    table = Table.open(path)
    before = table_state(table)
    removed = table.remove_orphan_files(older_than=dt.timedelta(0))
    assert table_state(Table.open(path)) == before
    referenced = set(referenced_files(table.directory, table.directory.store.snapshot_ids()))
    on_disk = table_files(path)
    leftovers = {p for p in on_disk - referenced
                 if not p.startswith(("snapshot/snapshot-", "schema/")) and p != "snapshot/LATEST"}
    assert not leftovers, leftovers
    assert removed, "no kill ever interrupted a write or compaction (no debris): the test proves nothing"
    # every snapshot that survived the crashes is still readable (time travel)
    for s in table.snapshots():
        table.read(snapshot=s.id)


def test_a_bucket_failing_while_others_compact_in_threads_leaves_no_file(tmp_path, monkeypatch):
    """Buckets compact in threads: when one fails, the files the others wrote are removed too
    and nothing is committed."""
    import pytest

    from mergetree.table.compaction import runner
    path = tmp_path / "t"
    table = Table.create(path, pa.schema([("id", pa.int64()), ("v", pa.int64())]), primary_key="id", buckets=4,
                         options={"write-only": "true"})
    for round_ in range(3):
        table.write({"id": list(range(400)), "v": [round_] * 400})
    before, latest = table_files(str(path)), table.directory.store.latest_id()
    real = runner._rewrite
    calls = []

    def failing(directory, partition, bucket, *args, **kwargs):
        calls.append(bucket)
        if bucket == 2:
            raise OSError("bucket 2's disk is gone")
        return real(directory, partition, bucket, *args, **kwargs)
    monkeypatch.setattr(runner, "_rewrite", failing)
    with pytest.raises(OSError, match="bucket 2"):
        table.compact(full=True)
    assert sorted(calls) == [0, 1, 2, 3]  # the others ran (and wrote their files)
    assert table_files(str(path)) == before and table.directory.store.latest_id() == latest
    assert sorted(Table.open(path).read().column("v").to_pylist()) == [2] * 400
