"""Local lookup files (`mergetree.table.lookup`): a bucket's rows for some keys found through
them equal the read path's rows of those keys (every merge engine, integer, string and
composite keys, nulls, deletion vectors, several levels); Table.changes and
the lookup changelog producer give the same answers with and without them; a damaged, missing
or wiped lookup file costs a rebuild, never a wrong answer; old and surplus files go."""
from __future__ import annotations

import os
import threading
import time
from dataclasses import replace

import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mergetree import Table
from mergetree.table import BucketPlan
from mergetree.table.changes import plan_changes
from mergetree.table.lookup import LookupCache, lookup_cache, lookup_state
from mergetree.table.read import read_bucket
from mergetree.table.read.plan import sections_of

ENGINES = ["deduplicate", "first-row", "partial-update", "aggregate"]
KEYS = {"int": ["k"], "int+string": ["k", "s"], "string": ["s"], "string+int": ["s", "k"]}
SCHEMA = pa.schema([("k", pa.int64()), ("s", pa.string()), ("v", pa.int64()), ("w", pa.string())])


def make(path, engine: str, key: str, dv: bool, write_only: bool = False) -> Table:
    options = {"deletion-vectors.enabled": "true"} if dv else {}
    if write_only:  # level-0 files pile up until a compaction
        options["write-only"] = "true"
    if engine == "aggregate":
        options["fields.v.aggregate-function"] = "sum"
    return Table.create(path, SCHEMA, primary_key=KEYS[key], buckets=2, merge_engine=engine, options=options)


row = st.tuples(st.integers(0, 9), st.sampled_from(["a", "b", "é"]), st.one_of(st.none(), st.integers(-3, 3)),
                st.one_of(st.none(), st.sampled_from(["", "x", "y"])))
operation = st.one_of(
    st.tuples(st.just("upsert"), st.lists(row, min_size=1, max_size=8)),
    st.tuples(st.just("delete"), st.lists(row, min_size=1, max_size=4)),
    st.tuples(st.just("compact"), st.booleans()),
)


def run(table: Table, engine: str, ops: list) -> None:
    for op, arg in ops:
        if op == "compact":
            table.compact(full=arg)
            continue
        rows = [dict(zip(["k", "s", "v", "w"], r)) for r in arg]
        if engine == "aggregate":
            for r in rows:
                r["v"] = r["v"] or 0
        if op == "delete":
            if engine == "deduplicate":  # Paimon's other engines refuse retractions (no 'ignore-delete')
                table.delete([{c: r[c] for c in table.table_schema.primary_key} for r in rows])
            continue
        table.write(rows)


def buckets(table: Table, snapshot_id: int) -> dict[tuple, list]:
    out: dict[tuple, list] = {}
    for e in table.directory.live_files(table.directory.store.snapshot(snapshot_id)).values():
        out.setdefault((e.partition, e.bucket), []).append(e.file)
    return out


def reference(table: Table, partition: tuple, bucket: int, files: list, columns: list[str], keys: pa.Array
              ) -> pa.Table:
    """The read path's rows of the bucket (whole, merged), those of the keys kept."""
    plan = BucketPlan(partition, bucket, sections_of(files))
    schema = pa.schema([table.schema.field(c) for c in columns])
    batches = list(read_bucket(table.directory, plan, columns, None, None))
    rows = pa.Table.from_batches(batches, schema=schema) if batches else schema.empty_table()
    first = table.table_schema.primary_key[0]
    return rows.filter(pc.is_in(rows.column(first), value_set=keys.cast(rows.schema.field(first).type)))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(engine=st.sampled_from(ENGINES), key=st.sampled_from(sorted(KEYS)), dv=st.booleans(), write_only=st.booleans(),
       ops=st.lists(operation, min_size=1, max_size=6),
       wanted=st.one_of(st.none(), st.lists(st.integers(0, 11), max_size=8)),
       projected=st.booleans(), data=st.data())
def test_looked_up_rows_equal_the_read_paths(tmp_path_factory, engine, key, dv, write_only, ops, wanted, projected,
                                             data):
    table = make(tmp_path_factory.mktemp("t"), engine, key, dv, write_only)
    run(table, engine, ops)
    latest = table.directory.store.latest_id()
    if latest is None:
        return
    # small files in memory, or every file a lookup file
    cache = LookupCache(str(tmp_path_factory.mktemp("cache")),
                        small_file_bytes=data.draw(st.sampled_from([0, 1 << 20])))
    snapshot_id = data.draw(st.integers(1, latest))
    first = KEYS[key][0]
    wanted = list(range(12)) if wanted is None else wanted  # None: every key (and two absent ones)
    values = sorted(set(wanted)) if first == "k" else sorted({["a", "b", "é", "zz"][i % 4] for i in wanted})
    keys = pa.array(values, type=SCHEMA.field(first).type)
    columns = list(SCHEMA.names) if not projected else [c for c in SCHEMA.names if c in {*KEYS[key], "w"}]
    for (partition, bucket), files in sorted(buckets(table, snapshot_id).items(), key=lambda kv: kv[0][1]):
        files = sorted(files, key=lambda m: m.file_name)
        expected = reference(table, partition, bucket, files, columns, keys)
        for _ in range(2):  # cold (built), then warm (mapped)
            got = lookup_state(table.directory, files, columns, keys, cache)
            assert got.equals(expected), (got.to_pylist(), expected.to_pylist())


def bench_table(path, producer: str = "none") -> Table:
    table = Table.create(path, SCHEMA, primary_key="k", buckets=2,
                         options={"changelog-producer": producer} if producer != "none" else {})
    table.write({"k": list(range(200)), "s": ["a"] * 200, "v": list(range(200)), "w": [None, "x"] * 100})
    table.compact(full=True)
    table.write({"k": list(range(0, 260, 7)), "s": ["b"] * 38, "v": [None] * 38, "w": ["y"] * 38})
    table.delete({"k": list(range(3, 200, 11))})
    table.write({"k": [5, 6, 300], "s": ["c"] * 3, "v": [1, 2, 3], "w": ["z"] * 3})
    return table


def test_changes_are_the_same_with_and_without_lookup_files(tmp_path, monkeypatch):
    monkeypatch.setenv("MERGETREE_LOOKUP_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(lookup_cache(), "small_file_bytes", 0)  # every file a lookup file
    table = bench_table(tmp_path / "t")
    with_files = {(a, b): table.changes(a, b).read_all() for a in range(1, 5) for b in range(a, 5)}
    assert os.listdir(tmp_path / "cache")
    monkeypatch.setenv("MERGETREE_LOOKUP_FILES", "0")
    for (a, b), rows in with_files.items():
        assert rows.equals(table.changes(a, b).read_all()), (a, b)


def test_lookup_changelogs_are_the_same_with_and_without_lookup_files(tmp_path, monkeypatch):
    monkeypatch.setenv("MERGETREE_LOOKUP_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(lookup_cache(), "small_file_bytes", 0)  # every file a lookup file
    with_files = bench_table(tmp_path / "t", "lookup")
    assert os.listdir(tmp_path / "cache")  # the lookups went through lookup files
    monkeypatch.setenv("MERGETREE_LOOKUP_FILES", "0")
    without = bench_table(tmp_path / "u", "lookup")
    # Paimon's lookup producer writes the changelog with the compactions (4 compacts 3)
    assert with_files.directory.store.snapshot(4).changelog_manifest_list
    end = with_files.latest_snapshot().id
    assert end == without.latest_snapshot().id
    for table in (with_files, without):  # read from the changelog files, not computed
        assert not plan_changes(table.directory, 1, end, per_commit=True, source="changelog").computed
    got = with_files.changes(1, end, per_commit=True, source="changelog").read_all()
    assert got.num_rows and got.equals(without.changes(1, end, per_commit=True, source="changelog").read_all())


def test_damaged_missing_and_wiped_lookup_files_are_rebuilt(tmp_path):
    table = bench_table(tmp_path / "t")
    cache = LookupCache(str(tmp_path / "cache"), small_file_bytes=0)
    snapshot = table.directory.store.latest_id()
    keys = pa.array(list(range(0, 300, 3)), pa.int64())
    columns = list(SCHEMA.names)
    per_bucket = sorted(buckets(table, snapshot).items(), key=lambda kv: kv[0][1])
    expected = [reference(table, p, b, files, columns, keys) for (p, b), files in per_bucket]

    def check() -> None:
        for ((_, _), files), want in zip(per_bucket, expected):
            assert lookup_state(table.directory, files, columns, keys, cache).equals(want)
    check()
    built = cache.builds
    assert built == sum(len(f) for _, f in per_bucket)
    check()
    assert cache.builds == built  # warm: nothing decoded again
    names = sorted(os.listdir(cache.directory))
    # damaged in place: truncated, garbage, another schema's file under its name
    victims = [os.path.join(cache.directory, n) for n in names[:3]]
    with open(victims[0], "r+b") as f:
        f.truncate(os.path.getsize(victims[0]) // 2)
    with open(victims[1], "wb") as f:
        f.write(b"not an arrow file")
    other = pa.table({"k": pa.array([1], pa.int64())})
    with pa.OSFile(victims[2], "wb") as sink, pa.ipc.new_file(sink, other.schema) as writer:
        writer.write_table(other)
    fresh = LookupCache(cache.directory, small_file_bytes=0)  # a new process: nothing mapped yet
    cache = fresh
    check()
    assert cache.builds == 3
    for n in os.listdir(cache.directory):  # wiped
        os.remove(os.path.join(cache.directory, n))
    os.rmdir(cache.directory)
    cache = LookupCache(cache.directory, small_file_bytes=0)
    check()
    assert cache.builds == built


def test_a_replaced_file_or_another_table_never_shares_a_lookup_file(tmp_path):
    table = bench_table(tmp_path / "t")
    cache = LookupCache(str(tmp_path / "cache"), small_file_bytes=0)
    files = next(iter(buckets(table, table.directory.store.latest_id()).values()))
    m = files[0]
    schema = pa.schema([table.table_schema.file_schema.field(c) for c in table.table_schema.file_schema.names])
    assert cache.path_of(table.directory.storage, m, schema) != cache.path_of(
        table.directory.storage, replace(m, file_size=m.file_size + 1), schema)
    other = bench_table(tmp_path / "u")
    assert cache.path_of(table.directory.storage, m, schema) != cache.path_of(other.directory.storage, m, schema)
    assert cache.path_of(table.directory.storage, m, schema) != cache.path_of(
        table.directory.storage, m, pa.schema(list(schema)[:-1]))


def test_old_and_surplus_lookup_files_are_evicted(tmp_path):
    table = bench_table(tmp_path / "t")
    cache = LookupCache(str(tmp_path / "cache"), small_file_bytes=0)
    keys = pa.array([5, 6, 7], pa.int64())
    per_bucket = list(buckets(table, table.directory.store.latest_id()).values())
    lookup_state(table.directory, per_bucket[0], list(SCHEMA.names), keys, cache)
    first = sorted(os.listdir(cache.directory))
    assert first
    old = time.time() - 7200  # unused for two hours: past the default retention (1 h)
    for n in first:
        os.utime(os.path.join(cache.directory, n), (old, old))
    lookup_state(table.directory, per_bucket[1], list(SCHEMA.names), keys, cache)
    assert not set(first) & set(os.listdir(cache.directory))
    # a disk budget of one byte keeps only the file just built
    small = LookupCache(cache.directory, max_disk_size=1, retention=None, small_file_bytes=0)
    lookup_state(table.directory, per_bucket[0], list(SCHEMA.names), keys, small)
    assert len(os.listdir(cache.directory)) == 1


def test_threads_share_one_build(tmp_path):
    table = bench_table(tmp_path / "t")
    cache = LookupCache(str(tmp_path / "cache"), small_file_bytes=0)
    files = next(iter(buckets(table, table.directory.store.latest_id()).values()))
    keys = pa.array(list(range(0, 300, 2)), pa.int64())
    other = LookupCache(str(tmp_path / "other"), small_file_bytes=0)
    expected = lookup_state(table.directory, files, list(SCHEMA.names), keys, other)
    results: list = []

    def probe() -> None:
        results.append(lookup_state(table.directory, files, list(SCHEMA.names), keys, cache))
    threads = [threading.Thread(target=probe) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4 and all(r.equals(expected) for r in results)
    assert cache.builds == len(files)


def test_the_process_cache_builds_a_lookup_file_the_second_time_it_is_needed(tmp_path):
    """A one-off change read decodes the files as a read does, writing nothing; the second need
    of a file builds its lookup file, and from then on (in this process or another) it serves
    the probes."""
    table = bench_table(tmp_path / "t")
    files = next(iter(buckets(table, table.directory.store.latest_id()).values()))
    keys = pa.array([5, 6, 7], pa.int64())
    lazy = LookupCache(str(tmp_path / "cache"), small_file_bytes=0, build_on_first_need=False)
    first = lookup_state(table.directory, files, list(SCHEMA.names), keys, lazy)
    assert lazy.builds == 0 and not os.path.exists(lazy.directory)
    second = lookup_state(table.directory, files, list(SCHEMA.names), keys, lazy)
    assert second.equals(first) and lazy.builds == len(files)
    # another process finds them on disk at its first need
    fresh = LookupCache(lazy.directory, small_file_bytes=0, build_on_first_need=False)
    assert lookup_state(table.directory, files, list(SCHEMA.names), keys, fresh).equals(second)
    assert fresh.builds == 0
