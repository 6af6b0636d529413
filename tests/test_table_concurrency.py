"""Two processes write (overlapping keys) and one compacts the same table at once; the
result equals every committed write replayed in commit order, each exactly once, and no
commit waited more than a few lost races (a write that loses is renumbered, not redone)."""
from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pyarrow as pa

from mergetree import Table
from mergetree.table.commit import COMMIT_RETRIES

WRITES = 20

WRITER = textwrap.dedent("""
    import sys, numpy as np, pyarrow as pa
    from mergetree import Table
    import os, time
    path, name = sys.argv[1], sys.argv[2]
    table = Table.open(path)
    while not os.path.exists(path + ".go"):  # start together, so that commits race
        time.sleep(0.005)
    for i in range(int(sys.argv[3])):
        rng = np.random.default_rng([ord(name), i])
        ids = rng.choice(500, 150, replace=False).astype(np.int64)
        table.write(pa.table({"id": ids, "tag": [f"{name}-{i}"] * len(ids)}))
        time.sleep(rng.uniform(0, 0.03))
""")

COMPACTOR = textwrap.dedent("""
    import sys, time
    from mergetree import Table
    from mergetree import CompactionConflictError
    table = Table.open(sys.argv[1])
    done = 0
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            if table.compact(full=True):
                done += 1
        except CompactionConflictError:
            pass
        appends = sum(1 for s in table.snapshots() if s.commit_kind == "APPEND")
        if appends >= 2 * int(sys.argv[2]):
            break
    print(done)
""")


def test_two_writers_and_a_compactor(tmp_path):
    path = str(tmp_path / "t")
    Table.create(path, pa.schema([("id", pa.int64()), ("tag", pa.string())]), primary_key="id", buckets=2,
                 options={"write-only": "true"})
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, path, name, str(WRITES)],
                              stderr=subprocess.PIPE) for name in "AB"]
    compactor = subprocess.Popen([sys.executable, "-c", COMPACTOR, path, str(WRITES)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(1.0)  # let the interpreters import
    open(path + ".go", "w").close()
    for p in procs + [compactor]:
        p.wait(timeout=300)
        assert p.returncode == 0, p.stderr.read().decode()[-3000:]
    table = Table.open(path)

    # replay the writes in commit order: each APPEND snapshot's delta holds one write
    order, state = [], {}
    for snap in table.snapshots():
        if snap.commit_kind != "APPEND":
            continue
        added = [e for name in table.directory.store.manifest_names(snap.delta_manifest_list)
                 for kind, e in table.directory.store.read_manifest(name) if kind == "ADD"]
        rows = pa.concat_tables([pa.parquet.read_table(f"{path}/{e.file.file_name}") for e in added])
        tags = set(rows.column("tag").to_pylist())
        assert len(tags) == 1
        order.append(tags.pop())
        for r in rows.select(["id", "tag"]).to_pylist():
            state[r["id"]] = r["tag"]
    assert sorted(order) == sorted(f"{n}-{i}" for n in "AB" for i in range(WRITES))  # no loss, no duplicate
    got = {r["id"]: r["tag"] for r in table.read().to_pylist()}
    assert got == state
    assert int(compactor.stdout.read().decode().strip() or 0) >= 1  # compactions really interleaved
    retries = [s.commit_retries for s in table.snapshots()]
    # fairness: every commit got through well within the retry budget (jittered backoff), against
    # a compactor committing as fast as it can; a write that lost a race copies its level-0 files
    # with new sequence numbers (Paimon's files hold them), so races cost more than a manifest
    assert max(retries) <= COMMIT_RETRIES // 2, retries


def test_a_commit_that_lost_a_race_says_so_in_its_snapshot(tmp_path, monkeypatch):
    """The races a commit lost before it won are kept among the Paimon snapshot's properties
    (Java keeps and ignores them), read back as `Snapshot.commit_retries`."""
    import json

    from mergetree.table.paimon.store import RETRIES_PROPERTY, PaimonSnapshotStore
    path = tmp_path / "t"
    schema = pa.schema([("id", pa.int64()), ("tag", pa.string())])
    table = Table.create(path, schema, primary_key="id", options={"write-only": "true"})
    table.write(pa.table({"id": [1], "tag": ["a"]}, schema=schema))
    real = PaimonSnapshotStore.commit
    raced = []

    def losing(self, *args, **kwargs):
        if not raced:  # another writer commits first: this one's commit loses its race once
            raced.append(True)
            Table.open(path).write(pa.table({"id": [2], "tag": ["other"]}, schema=schema))
        return real(self, *args, **kwargs)
    monkeypatch.setattr(PaimonSnapshotStore, "commit", losing)
    committed = table.write(pa.table({"id": [1], "tag": ["late"]}, schema=schema))
    monkeypatch.undo()
    snapshots = Table.open(path).snapshots()
    assert [(s.id, s.commit_retries) for s in snapshots] == [(1, 0), (2, 0), (3, 1)]
    assert committed.id == 3
    document = json.loads((path / "snapshot" / "snapshot-3").read_text())
    assert document["properties"] == {RETRIES_PROPERTY: "1"}
    assert sorted(Table.open(path).read().to_pylist(), key=lambda r: r["id"]) == \
        [{"id": 1, "tag": "late"}, {"id": 2, "tag": "other"}]
