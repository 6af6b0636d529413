"""Paimon primary-key tables in deletion-vector mode (``deletion-vectors.enabled``): read each
level > 0 file alone with its deletion vector applied, and compacted as Paimon's lookup
compaction does (new files plus the bucket's updated deletion vectors in one COMPACT commit).

The tables are written by pypaimon 2.1 (which writes level-0 files into such tables but cannot
compact a primary-key table), compacted by mergetree, and read back by both: pypaimon is the
cross-check of the index manifest and the index files mergetree writes.  What pypaimon cannot
produce — 64-bit vectors, index files beside the data files, damaged files — is built here
from Paimon's specification (tableindex.md, manifest.md), as the tests say."""
from __future__ import annotations

import json
import os
import random
import signal
import struct
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from paimon_fixtures import needs_pypaimon, pypaimon_read, reads_files_alone, rows, write_paimon
from test_paimon import SCHEMA, T0, _commits, _options, model, rewrite_all

import mergetree.paimon as mp
from mergetree import CompactionConflictError, CorruptTableError
from mergetree.codec.deletion_vectors import MAGIC_64
from mergetree.paimon.handle import PaimonTableHandle
from mergetree.table.paimon.metadata import PaimonTable
from mergetree.table.read.topn import top_rows

pytestmark = needs_pypaimon

KEY = ["name", "id"]


def _dv_options(engine: str = "deduplicate", **extra: str) -> dict:
    opts = _options(engine, 2, engine == "deduplicate", False)  # pypaimon refuses retractions otherwise
    opts.update({"deletion-vectors.enabled": "true", "num-sorted-run.compaction-trigger": "2"})
    opts.update(extra)
    return opts


def _base_and_updates(tmp_path: Path, seed: int, updates: int = 3, engine: str = "deduplicate",
                      separately: bool = False, **extra: str):
    """A base of 3,000 keys fully compacted to the top level, then `updates` small pypaimon
    commits of upserts (and deletes, for deduplicate) left at level 0: what a deletion-vector
    compaction resolves.  (wh, work, name, options, base commits, update commits)"""
    wh, work, name = tmp_path / "wh", tmp_path / "work", "db.t"
    opts = _dv_options(engine, **extra)
    base = [_every_key(3000)]
    write_paimon(work, wh, name, base, KEY, [], opts)
    assert mp.compact(str(wh), name, full=True) is not None
    # (deletes only after the first commit: skip it)
    more = _commits(seed, updates + 1, 300, engine == "deduplicate", True)[1:]
    for group in ([[c] for c in more] if separately else [more]):
        write_paimon(work, wh, name, group, KEY, [], opts)
    return wh, work, name, opts, base, more


def _dv_table(tmp_path: Path, engine: str = "deduplicate", updates: int = 3, **extra: str):
    """`_base_and_updates` compacted by the universal rules into a level below the base: the
    base's replaced rows are marked in deletion vectors."""
    wh, work, name, _, base, more = _base_and_updates(tmp_path, 8, updates, engine, separately=True, **extra)
    compacted = mp.compact(str(wh), name)
    assert compacted is not None
    return wh, work, name, base + more, compacted


def _every_key(keys: int) -> pa.Table:
    """One version of every key 0..keys-1 (the commits' columns and value shapes)."""
    rng = random.Random(keys)
    data: dict[str, list] = {f.name: [] for f in SCHEMA}
    for k in range(keys):
        data["id"].append(k)
        data["name"].append(f"customer-with-a-long-shared-prefix-{k % 7:03d}")
        data["region"].append(f"r{k % 3}")
        data["amount"].append(Decimal(rng.randint(-10_000, 10_000)) / 100)
        data["ts"].append(T0)
        data["v"].append(None if rng.random() < 0.3 else rng.random())
        data["cnt"].append(None if rng.random() < 0.3 else rng.randint(0, 100))
        data["note"].append(None if rng.random() < 0.4 else f"base-{rng.randint(0, 9)}")
        data["op"].append("+I")
    return pa.table(data, schema=SCHEMA)


def _rust_read(wh: Path, name: str) -> pa.Table | None:
    """pypaimon-rust's read of the table (a third reader: it reads 64-bit vectors too), or None
    where it is not installed."""
    try:
        from pypaimon_rust.datafusion import PaimonCatalog
    except ImportError:
        return None
    builder = PaimonCatalog({"warehouse": str(wh)}).get_table(tuple(name.split("."))).new_read_builder()
    batches = builder.new_read().read(builder.new_scan().plan().splits())
    return pa.Table.from_batches(batches).select(SCHEMA.names).cast(SCHEMA)


def _engine(wh: Path, name: str) -> PaimonTableHandle:
    return PaimonTableHandle(str(wh), None, name)


def _deletion_vectors(wh: Path, name: str) -> dict:
    t = PaimonTable.open(str(wh), name)
    return t.deletion_files(t.latest_snapshot())


@pytest.mark.parametrize("engine", ["deduplicate", "partial-update", "aggregation"])
def test_compaction_marks_replaced_rows_and_every_reader_agrees(tmp_path: Path, engine: str) -> None:
    wh, work, name, commits, _ = _dv_table(tmp_path, engine)
    expected = model(engine, commits, KEY)
    vectors = _deletion_vectors(wh, name)
    assert vectors and sum(d.range.cardinality for per in vectors.values() for d in per.values()) > 0
    t = PaimonTable.open(str(wh), name)
    files = t.live_files(t.latest_snapshot())
    assert not [f for f in files if f.level == 0]  # every level-0 file was compacted
    assert len({f.level for f in files}) > 1  # and not into the top level: the vectors do the work
    table = _engine(wh, name).at()
    plan = table.plan()
    assert plan.buckets and all(reads_files_alone(b) for b in plan.buckets)  # no merge
    assert rows(table.read(), KEY) == expected and table.last_read.rows_merged == 0
    marked = sum(d.range.cardinality for per in vectors.values() for d in per.values())
    assert sum(b.deleted_rows for b in mp.info(str(wh), name).buckets) == marked
    shown = subprocess.run([sys.executable, "-m", "mergetree", "paimon", "info", str(wh), name],
                           capture_output=True, text=True, check=True).stdout
    assert "deleted" in shown
    assert rows(mp.read(str(wh), name), KEY) == expected
    assert rows(mp.read(str(wh), name, threads=1), KEY) == expected
    assert rows(pa.Table.from_batches(list(mp.scan(str(wh), name))), KEY) == expected
    assert rows(pypaimon_read(wh, name, work), KEY) == expected  # pypaimon reads our vectors alike
    rust = _rust_read(wh, name)
    assert rust is None or rows(rust, KEY) == expected  # and so does pypaimon-rust
    # filters (value statistics skip files, the key filter is pushed into each file), projections
    for f in ([("id", "<", 40)], [("id", "in", [3, 50, 77, 299])], [("v", ">", 0.5)],
              [("id", ">=", 100), ("note", "is not null")]):
        got = mp.read(str(wh), name, columns=["id", "name", "v"], filter=f)
        want = rows(pa.Table.from_pylist(expected), KEY)
        want = [{c: r[c] for c in ("id", "name", "v")} for r in want if _matches(r, f)]
        assert rows(got, KEY) == want, f
    # point reads: every written key, deleted ones included, and one never written
    keys = sorted({(r["name"], r["id"]) for c in commits for r in c.to_pylist()})
    for n, i in keys[::17] + [("nobody", 10**9)]:
        got = mp.read(str(wh), name, filter=[("name", "=", n), ("id", "=", i)])
        assert rows(got, KEY) == [r for r in expected if r["name"] == n and r["id"] == i], (n, i)
    _check_top_n(wh, name, expected)
    # time travel: the snapshot before the deletion-vector compaction reads the base alone
    # (later commits' level-0 files are not visible in this mode until compacted)
    assert rows(mp.read(str(wh), name, snapshot=2), KEY) == model(engine, commits[:1], KEY)


def _check_top_n(wh: Path, name: str, expected: list[dict]) -> None:
    """Top-N reads equal the model's rows in the same order (nulls last, ties broken by the
    other columns), with and without a filter and a projection leaving the order column out."""
    model_table = pa.Table.from_pylist(expected, schema=SCHEMA)
    for order in ([("v", "desc")], [("id", "asc")], [("amount", "asc"), ("id", "desc")], "cnt"):
        for limit in (0, 1, 7, 50):
            got = mp.read(str(wh), name, order_by=order, limit=limit)
            want = top_rows(model_table, [(order, "asc")] if isinstance(order, str) else order, limit)
            assert got.to_pylist() == want.to_pylist(), (order, limit)
    got = mp.read(str(wh), name, columns=["id", "name"], filter=[("id", "<", 150)], order_by=[("v", "desc")],
                  limit=5)
    narrowed = model_table.filter(pc.field("id") < 150)
    assert got.to_pylist() == top_rows(narrowed, [("v", "desc")], 5).select(["id", "name"]).to_pylist()
    first = mp.read(str(wh), name, limit=9)
    assert first.num_rows == min(9, len(expected))
    assert all(r in expected for r in rows(first, KEY))


def _matches(row: dict, f: list) -> bool:
    for column, op, *value_list in f:
        v, value = row[column], (value_list or [None])[0]
        if op == "is not null":
            ok = v is not None
        elif v is None:
            ok = False
        elif op == "<":
            ok = v < value
        elif op == ">":
            ok = v > value
        elif op == ">=":
            ok = v >= value
        elif op == "in":
            ok = v in value
        else:
            raise AssertionError(op)
        if not ok:
            return False
    return True


def test_level0_is_invisible_until_compacted_unless_merge_on_read(tmp_path: Path) -> None:
    """Paimon's batch read of a deletion-vector table leaves level-0 files out; with
    ``deletion-vectors.merge-on-read`` it merges them (the vectors applied to the older files)."""
    wh, work, name, commits, _ = _dv_table(tmp_path)
    extra = _commits(9, 3, 300, True, True)[1:]
    write_paimon(work, wh, name, extra, KEY, [], _dv_options())
    compacted_only = model("deduplicate", commits, KEY)
    assert rows(mp.read(str(wh), name), KEY) == compacted_only
    assert rows(pypaimon_read(wh, name, work), KEY) == compacted_only
    _set_option(wh, name, "deletion-vectors.merge-on-read", "true")
    everything = model("deduplicate", commits + extra, KEY)
    assert rows(mp.read(str(wh), name), KEY) == everything
    _check_top_n(wh, name, everything)  # merged buckets
    n, i = next((r["name"], r["id"]) for r in extra[-1].to_pylist())
    got = mp.read(str(wh), name, filter=[("name", "=", n), ("id", "=", i)])
    assert rows(got, KEY) == [r for r in everything if (r["name"], r["id"]) == (n, i)]
    # and compaction makes them visible without the option too
    assert mp.compact(str(wh), name) is not None
    _set_option(wh, name, "deletion-vectors.merge-on-read", None)
    assert rows(mp.read(str(wh), name), KEY) == everything
    assert rows(pypaimon_read(wh, name, work), KEY) == everything


def _set_option(wh: Path, name: str, key: str, value: str | None) -> None:
    """An ALTER TABLE ... SET/RESET as Paimon writes it: the next schema file, same fields."""
    db, table = name.split(".")
    schema_dir = wh / f"{db}.db" / table / "schema"
    latest = max(int(p.name.split("-")[1]) for p in schema_dir.glob("schema-*"))
    schema = json.loads((schema_dir / f"schema-{latest}").read_text())
    schema["id"] = latest + 1
    if value is None:
        schema["options"].pop(key, None)
    else:
        schema["options"][key] = value
    (schema_dir / f"schema-{latest + 1}").write_text(json.dumps(schema))


def test_full_compaction_purges_deleted_rows(tmp_path: Path) -> None:
    wh, work, name, commits, _ = _dv_table(tmp_path)
    assert mp.compact(str(wh), name, full=True) is not None
    assert _deletion_vectors(wh, name) == {}  # every vector applied and dropped
    expected = model("deduplicate", commits, KEY)
    assert rows(mp.read(str(wh), name), KEY) == expected
    assert rows(pypaimon_read(wh, name, work), KEY) == expected


def test_64_bit_vectors_and_index_files_beside_the_data(tmp_path: Path) -> None:
    """``deletion-vectors.bitmap64`` (Iceberg's 64-bit layout: pypaimon 2.1 cannot read it, so
    only mergetree checks it here) and ``index-file-in-data-file-dir``."""
    wh, _, name, commits, _ = _dv_table(tmp_path, **{"deletion-vectors.bitmap64": "true",
                                                     "index-file-in-data-file-dir": "true"})
    vectors = _deletion_vectors(wh, name)
    assert vectors
    t = PaimonTable.open(str(wh), name)
    for per_file in vectors.values():
        for d in per_file.values():
            assert d.index_name is not None and d.index_name.split("/")[-2].startswith("bucket-")
            data = t.storage.read(d.index_name)
            assert struct.unpack_from("<i", data, d.range.offset + 4)[0] == MAGIC_64
    assert rows(mp.read(str(wh), name), KEY) == model("deduplicate", commits, KEY)
    rust = _rust_read(wh, name)
    assert rust is None or rows(rust, KEY) == model("deduplicate", commits, KEY)


def test_damaged_or_missing_index_files_are_named(tmp_path: Path) -> None:
    wh, _, name, _, _ = _dv_table(tmp_path)
    t = PaimonTable.open(str(wh), name)
    deletion = next(d for per in _deletion_vectors(wh, name).values() for d in per.values())
    path = Path(deletion.path)
    good = path.read_bytes()
    damaged = bytearray(good)
    damaged[deletion.range.offset + 9] ^= 0xFF  # inside the bitmap: the checksum no longer matches
    path.write_bytes(bytes(damaged))
    from mergetree.table.paimon.metadata import _dv_cache
    _dv_cache.clear()
    with pytest.raises(CorruptTableError, match=path.name):
        mp.read(str(wh), name)
    os.unlink(path)
    _dv_cache.clear()
    with pytest.raises(CorruptTableError, match=rf"{path.name}.*missing"):
        mp.read(str(wh), name)
    path.write_bytes(good)
    _dv_cache.clear()
    assert mp.read(str(wh), name).num_rows > 0
    assert t.latest_snapshot_id() == PaimonTable.open(str(wh), name).latest_snapshot_id()  # nothing written


_KILLED_CHILD = """
import os, signal, sys
from mergetree.storage import LocalDiskStore
import mergetree.paimon as mp
write, create = LocalDiskStore.write, LocalDiskStore.create
def dying_write(self, name, data, *args, **kwargs):
    write(self, name, data, *args, **kwargs)
    if sys.argv[2] == "index" and name.startswith("index/"):  # a real SIGKILL right after it
        os.kill(os.getpid(), signal.SIGKILL)
def dying_create(self, name, data, *args, **kwargs):
    if sys.argv[2] == "snapshot" and name.startswith("snapshot/"):  # everything but the snapshot written
        os.kill(os.getpid(), signal.SIGKILL)
    return create(self, name, data, *args, **kwargs)
LocalDiskStore.write, LocalDiskStore.create = dying_write, dying_create
mp.compact(sys.argv[1], "db.t")
"""


@pytest.mark.parametrize("dies_after", ["index", "snapshot"])
def test_killed_compaction_leaves_the_committed_table(tmp_path: Path, dies_after: str) -> None:
    """SIGKILL right after an index file is written, or after everything but the snapshot
    (index files, index manifest, manifests): the table reads as before, and compacts again."""
    wh, work, name, _, base, more = _base_and_updates(tmp_path, 18)
    latest = PaimonTable.open(str(wh), name).latest_snapshot_id()
    before = model("deduplicate", base, KEY)  # level-0 commits not visible yet
    child = subprocess.run([sys.executable, "-c", _KILLED_CHILD, str(wh), dies_after], timeout=120)
    assert child.returncode == -signal.SIGKILL
    assert PaimonTable.open(str(wh), name).latest_snapshot_id() == latest
    assert list((wh / "db.db" / "t" / "index").iterdir())  # it died after writing index files
    assert rows(mp.read(str(wh), name), KEY) == before
    assert rows(pypaimon_read(wh, name, work), KEY) == before
    assert mp.compact(str(wh), name) is not None
    assert _deletion_vectors(wh, name)
    assert rows(mp.read(str(wh), name), KEY) == model("deduplicate", base + more, KEY)
    assert rows(pypaimon_read(wh, name, work), KEY) == model("deduplicate", base + more, KEY)


def test_lost_race_rebases_the_index_manifest_or_conflicts(tmp_path: Path) -> None:
    wh, work, name, opts, base, more = _base_and_updates(tmp_path, 28)
    # an append commits between this compaction's rewrite and its commit: rebased on top of it
    job = rewrite_all(wh, name)
    assert job is not None
    assert job.indexes  # the bucket's vectors changed: a new index file, which the updated files name
    assert any(e.file.deletion_vector is not None and e.file.deletion_vector.index in job.indexes for e in job.adds)
    late = _commits(29, 2, 300, True, True)[1:]
    write_paimon(work, wh, name, late, KEY, [], opts)
    snapshot = job.commit()
    assert snapshot is not None
    committed = snapshot.id
    t = PaimonTable.open(str(wh), name)
    assert committed > job.base_id + 1 and t.snapshot(committed - 1)["commitKind"] == "APPEND"
    assert t.snapshot(committed)["commitKind"] == "COMPACT"
    assert rows(mp.read(str(wh), name), KEY) == model("deduplicate", base + more, KEY)
    assert rows(pypaimon_read(wh, name, work), KEY) == model("deduplicate", base + more, KEY)
    assert mp.compact(str(wh), name) is not None  # the late commit's level-0 file, against the vectors
    assert rows(mp.read(str(wh), name), KEY) == model("deduplicate", base + more + late, KEY)
    # two compactions of the same buckets: the second to commit is refused, its files removed
    write_paimon(work, wh, name, _commits(30, 3, 300, True, True)[1:], KEY, [], opts)
    stale = rewrite_all(wh, name)
    assert stale is not None
    assert stale.indexes and stale.written and all(os.path.exists(p) for p in stale.written)
    assert mp.compact(str(wh), name) is not None
    latest = t.latest_snapshot_id()
    with pytest.raises(CompactionConflictError):
        stale.commit()
    assert t.latest_snapshot_id() == latest
    assert not [p for p in stale.written if os.path.exists(p)]


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                HealthCheck.too_slow])
@given(rounds=st.lists(st.tuples(st.integers(1, 3), st.integers(0, 10**6), st.sampled_from(["pick", "full", "none"])),
                       min_size=1, max_size=3),
       engine=st.sampled_from(["deduplicate", "partial-update"]))
def test_any_history_of_writes_and_compactions_reads_like_the_model(tmp_path_factory, rounds, engine) -> None:
    """Random rounds of pypaimon commits (upserts, deletes where the engine allows them), each
    followed by a universal compaction, a full one or none: after every round mergetree reads
    exactly the model of what compaction has made visible, with deletion vectors or without."""
    tmp = tmp_path_factory.mktemp("dv-history")
    wh, work, name = tmp / "wh", tmp / "work", "db.t"
    opts = _dv_options(engine)
    visible = [_every_key(1200)]
    write_paimon(work, wh, name, visible, KEY, [], opts)
    assert mp.compact(str(wh), name, full=True) is not None
    pending: list[pa.Table] = []
    for count, seed, how in rounds:
        new = _commits(seed, count + 1, 200, engine == "deduplicate", True)[1:]
        write_paimon(work, wh, name, new, KEY, [], opts)
        pending += new
        if how != "none":
            mp.compact(str(wh), name, full=how == "full")
            visible += pending  # every level-0 file is compacted: universal or forced
            pending = []
        t = PaimonTable.open(str(wh), name)
        assert bool([f for f in t.live_files(t.latest_snapshot()) if f.level == 0]) == bool(pending)
        assert rows(mp.read(str(wh), name), KEY) == model(engine, visible, KEY)
    assert rows(pypaimon_read(wh, name, work), KEY) == model(engine, visible, KEY)


def test_orc_metadata_with_deletion_vectors(tmp_path: Path) -> None:
    """A deletion-vector table whose metadata is ORC (``manifest.format=orc``, Paimon <= 2.0;
    built from the pypaimon-written Avro files, as tests/test_paimon_orc_manifests.py does):
    mergetree compacts it, writing its manifests and the index manifest in ORC, and reads the
    model's rows."""
    from test_paimon_orc_manifests import to_orc
    wh, _, name, _, base, more = _base_and_updates(tmp_path, 38)
    table_dir = wh / "db.db" / "t"
    to_orc(table_dir)
    assert rows(mp.read(str(wh), name), KEY) == model("deduplicate", base, KEY)
    assert mp.compact(str(wh), name) is not None
    snapshot = PaimonTable.open(str(wh), name).latest_snapshot()
    assert (table_dir / "manifest" / snapshot["indexManifest"]).read_bytes()[:3] == b"ORC"
    assert (table_dir / "manifest" / snapshot["deltaManifestList"]).read_bytes()[:3] == b"ORC"
    assert _deletion_vectors(wh, name)
    assert rows(mp.read(str(wh), name), KEY) == model("deduplicate", base + more, KEY)
    assert mp.compact(str(wh), name, full=True) is not None
    assert rows(mp.read(str(wh), name), KEY) == model("deduplicate", base + more, KEY)


@pytest.mark.parametrize("dv", [True, False], ids=["dv", "no-dv"])
def test_a_pypaimon_file_of_deletes_recorded_as_none_is_not_moved_up(tmp_path: Path, dv: bool) -> None:
    """pypaimon records 0 retractions for a level-0 file holding -D rows: compaction does not
    move such a file up unchanged (its deletes would read as rows at a level read alone, or stay
    past the last level); it rewrites it, and mergetree and pypaimon read the model after."""
    wh, work = tmp_path / "wh", tmp_path / "work"
    first = pa.table({"id": pa.array([0], pa.int64()), "v": [1.0], "op": ["+I"]})
    second = pa.table({"id": pa.array([0, 1, 2], pa.int64()), "v": [2.0, 3.0, 4.0], "op": ["+I", "+I", "-D"]})
    options = {"bucket": "3", "rowkind.field": "op", "deletion-vectors.enabled": str(dv).lower()}
    write_paimon(work, wh, "db.t", [first, second], ["id"], [], options)
    expected = [{"id": 0, "v": 2.0, "op": "+I"}, {"id": 1, "v": 3.0, "op": "+I"}]
    for full in (False, True):
        mp.compact(str(wh), "db.t", full=full)
        assert rows(mp.read(str(wh), "db.t"), ["id"]) == expected, full
        if dv or full:  # pypaimon's own reader returns a lone level-0 file's -D rows as rows
            assert rows(pypaimon_read(wh, "db.t", work), ["id"]) == expected, full


def test_a_read_needs_the_kind_column_only_of_files_that_may_hold_retractions(tmp_path: Path) -> None:
    """A Paimon file's recorded 0 retractions is checked against its footer's statistics of
    the kind column (pypaimon records 0 for a file of -D rows): a file of +I rows alone is read
    without its kind column, a file holding -D rows recorded as none still has them applied —
    also moved above level 0 with its count, as Java's compaction may move a file unchanged."""
    from mergetree import Table
    wh, work = tmp_path / "wh", tmp_path / "work"
    first = pa.table({"id": pa.array([0, 1, 2], pa.int64()), "v": [1.0, 2.0, 3.0], "op": ["+I", "+I", "+I"]})
    second = pa.table({"id": pa.array([1, 3], pa.int64()), "v": [5.0, 6.0], "op": ["-D", "+I"]})
    write_paimon(work, wh, "db.t", [first, second], ["id"], [], {"bucket": "1", "rowkind.field": "op",
                                                                   "write-only": "true"})
    expected = [{"id": 0, "v": 1.0, "op": "+I"}, {"id": 2, "v": 3.0, "op": "+I"}, {"id": 3, "v": 6.0, "op": "+I"}]
    table = Table.open(wh / "db.db" / "t")
    files = sorted(table.plan().files, key=lambda m: m.max_seq)
    assert [m.origin.file.delete_count for m in files] == [0, 0]  # as pypaimon records them
    assert [m.holds_retractions for m in files] == [False, True]
    assert rows(table.read(), ["id"]) == expected
    # the file of deletes alone at a level above 0, its count still 0: still applied
    store = table.at().directory
    snapshot = store.latest_snapshot()
    lone = [e for e in store.live_files(snapshot).values() if e.file.max_seq == files[1].max_seq]
    assert len(lone) == 1 and lone[0].file.with_level(3).holds_retractions
