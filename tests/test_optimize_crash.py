"""optimize under a SIGKILL mid-rewrite and under concurrent writes and optimizes: the table
always equals a committed state, no row is lost or doubled, and orphan cleanup removes the
debris of the killed rewrites."""
from __future__ import annotations

import datetime as dt
import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pyarrow as pa
from disk import table_files

from mergetree import Table
from mergetree.table.housekeeping import referenced_files
from mergetree.table.read import top_rows

SCHEMA = pa.schema([("id", pa.int64()), ("a", pa.int64()), ("b", pa.float64()), ("s", pa.string())])


def rows(seed: int, n: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({"id": np.arange(seed * 1_000_000, seed * 1_000_000 + n), "a": rng.integers(0, 10**6, n),
                     "b": rng.normal(size=n), "s": [f"s{i}" for i in rng.integers(0, 100, n)]}, schema=SCHEMA)


def canonical(t: pa.Table) -> pa.Table:
    return top_rows(t, [("id", "asc")], None)


OPTIMIZER = textwrap.dedent("""
    import sys
    from mergetree import Table, CommitConflictError
    t = Table.open(sys.argv[1])
    print("ready", flush=True)  # imports done: the parent's clock for the kill starts now
    strategies = ["hilbert", "zorder", "linear"]
    for i in range(int(sys.argv[2])):
        try:
            t.optimize(order=["a", "b"] if i % 2 == 0 else ["b", "a"], strategy=strategies[i % 3],
                       sort_within="s" if i % 2 else None)
        except CommitConflictError:
            # a concurrent optimize replaced our inputs, or changed the layout options, first:
            # nothing of ours was committed (CompactionConflictError is one of these)
            pass
        t = Table.open(sys.argv[1])
""")

WRITER = textwrap.dedent("""
    import sys, numpy as np, pyarrow as pa
    from mergetree import Table
    sys.path.insert(0, sys.argv[3])
    from test_optimize_crash import rows
    t = Table.open(sys.argv[1])
    for seed in range(int(sys.argv[2]), int(sys.argv[2]) + 6):
        t.write(rows(seed, 3000))
""")


def test_sigkill_mid_optimize_leaves_a_committed_state(tmp_path):
    path = str(tmp_path / "t")
    t = Table.create(path, SCHEMA, options={"target-file-size": "128 kb", "file-index.bloom-filter.columns": "id",
                                            "file-index.bitmap.columns": "s"})
    for seed in range(1, 9):
        t.write(rows(seed, 40_000))
    expected = canonical(t.read())
    rng = random.Random(5)
    kills = 0
    for round_ in range(8):
        before = table_files(path)
        child = subprocess.Popen([sys.executable, "-c", OPTIMIZER, path, "3"], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE)
        child.stdout.readline()  # a loaded machine may take seconds to import: kill mid-work, not mid-import
        if round_ % 2:  # at a random point from the start: planning, writing or committing
            time.sleep(rng.uniform(0.1, 1.0))
        else:  # at a random point once the rewrite has written a file, however loaded the machine
            deadline = time.monotonic() + 60
            while child.poll() is None and time.monotonic() < deadline and not table_files(path) - before:
                time.sleep(0.01)
            time.sleep(rng.uniform(0.0, 0.3))
        if child.poll() is None:
            child.send_signal(signal.SIGKILL)
            kills += 1
        child.wait()
        assert child.returncode in (0, -signal.SIGKILL), child.stderr.read().decode()[-2000:]
        assert canonical(Table.open(path).read()).equals(expected)
    assert kills >= 4
    table = Table.open(path)
    removed = table.remove_orphan_files(older_than=dt.timedelta(0))
    assert removed, "no kill ever left debris: the test proves nothing"
    referenced = set(referenced_files(table.directory, table.directory.store.snapshot_ids()))
    on_disk = table_files(path)
    assert {p for p in on_disk - referenced if not p.startswith(("snapshot/", "schema/"))} == set()
    assert canonical(table.read()).equals(expected)
    assert table.read(filter=("id", "=", 2_000_005)).num_rows == 1


def test_optimize_with_concurrent_writes_and_optimizes_loses_nothing(tmp_path):
    path = str(tmp_path / "t")
    t = Table.create(path, SCHEMA, options={"target-file-size": "128 kb"})
    for seed in range(1, 5):
        t.write(rows(seed, 10_000))
    here = os.path.dirname(os.path.abspath(__file__))
    procs = [subprocess.Popen([sys.executable, "-c", OPTIMIZER, path, "4"], stderr=subprocess.PIPE),
             subprocess.Popen([sys.executable, "-c", OPTIMIZER, path, "4"], stderr=subprocess.PIPE),
             subprocess.Popen([sys.executable, "-c", WRITER, path, "100", here], stderr=subprocess.PIPE)]
    for p in procs:
        p.wait(timeout=600)
        assert p.returncode == 0, p.stderr.read().decode()[-3000:]
    expected = pa.concat_tables([rows(seed, 10_000) for seed in range(1, 5)]
                                + [rows(seed, 3000) for seed in range(100, 106)])
    final = Table.open(path)
    assert canonical(final.read()).equals(canonical(expected))
    kinds = [s.commit_kind for s in final.snapshots()]
    assert kinds.count("APPEND") == 4 + 6 and "COMPACT" in kinds
