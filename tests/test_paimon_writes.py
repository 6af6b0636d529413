"""Writes into Paimon tables (`mergetree.paimon.write` / `delete`), checked across
implementations: tables pypaimon created, written by mergetree and by pypaimon in turn, read by
both and compared with a row-by-row model; tables Java wrote, written by mergetree and read
by both; sequence numbers continuing in both directions; every row in the bucket Java's
function gives it; refusals leaving the table as it was."""
from __future__ import annotations

import importlib
import json
import random
import re
import shutil
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from paimon_fixtures import needs_pypaimon, pypaimon_read, write_paimon

import mergetree.paimon as mp
from mergetree import InvalidArgumentError, SchemaMismatchError, Table, UnsupportedPaimonFeatureError
from mergetree.codec.buckets import bucket_key, buckets_of
from mergetree.codec.types import parse_field
from mergetree.table.paimon.metadata import PaimonTable

JAVA = Path(__file__).resolve().parent / "data" / "java_paimon"
SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("name", pa.string()), ("cnt", pa.int64())])
ENGINES = ("deduplicate", "partial-update", "aggregation", "first-row")


def _options(engine: str, buckets: int, **extra: str) -> dict:
    opts = {"bucket": str(buckets), "merge-engine": engine}
    if engine == "aggregation":
        opts["fields.cnt.aggregate-function"] = "sum"
    opts.update(extra)
    return opts


def _key(partitioned: bool) -> list[str]:
    return ["p", "id"] if partitioned else ["id"]


class Model:
    """What a read returns, row by row: per key, the engine applied to its versions in commit order."""

    def __init__(self, engine: str, key: list[str]) -> None:
        self.engine, self.key, self.state = engine, key, {}

    def apply(self, rows: list[dict], deleted: bool = False) -> None:
        for row in rows:
            k = tuple(row[c] for c in self.key)
            old = self.state.get(k)
            if deleted:
                self.state.pop(k, None)
            elif old is None or self.engine == "deduplicate":
                self.state[k] = dict(row)
            elif self.engine == "partial-update":
                self.state[k] = {c: (v if v is not None else old[c]) for c, v in row.items()}
            elif self.engine == "aggregation":
                new = {c: (v if v is not None else old[c]) for c, v in row.items()}
                new["cnt"] = (old["cnt"] or 0) + (row["cnt"] or 0) if old["cnt"] is not None or \
                    row["cnt"] is not None else None
                self.state[k] = new
            # first-row: the first version stays

    def rows(self) -> list[dict]:
        return sorted(self.state.values(), key=lambda r: tuple(r[c] for c in self.key))


def _sorted(t: pa.Table, key: list[str]) -> list[dict]:
    return sorted(t.select(SCHEMA.names).to_pylist(), key=lambda r: tuple(r[c] for c in key))


def _rows(rng: random.Random, keys: int, count: int, partitioned: bool, nulls: bool) -> list[dict]:
    out = []
    for _ in range(count):
        k = rng.randrange(keys)
        out.append({"id": k, "p": f"p{k % 3}" if partitioned else "x",
                    "name": None if nulls and rng.random() < 0.3 else f"name-{rng.randrange(1000)}-long-enough",
                    "cnt": None if nulls and rng.random() < 0.2 else rng.randrange(100)})
    return out


def _files(wh: Path, name: str) -> list:
    t = PaimonTable.open(str(wh), name)
    return t.live_files(t.resolve(None))


@needs_pypaimon
@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(engine=st.sampled_from(ENGINES), buckets=st.sampled_from([1, 3]), partitioned=st.booleans(),
       vectors=st.booleans(),
       steps=st.lists(st.tuples(st.sampled_from(["mt", "mt", "py", "delete", "compact"]), st.integers(0, 10**6)),
                      min_size=1, max_size=5), seed=st.integers(0, 10**6))
def test_mergetree_and_pypaimon_write_in_turn_against_a_model(tmp_path_factory, engine, buckets, partitioned,
                                                               vectors, steps, seed):
    """pypaimon creates the table (with deletion vectors or without); mergetree writes (upserts,
    and deletes where the engine takes them), pypaimon writes upserts, mergetree compacts, in
    random turns; after every step mergetree reads the model, and at the end pypaimon does too.
    Where reads skip level 0 (first-row, deletion vectors), pypaimon's writes, which it does not
    compact, are compacted by mergetree before they count."""
    vectors = vectors and engine != "first-row"
    options = _options(engine, buckets, **({"deletion-vectors.enabled": "true"} if vectors else {}))
    hidden = vectors or engine == "first-row"
    tmp = tmp_path_factory.mktemp("turns")
    wh, work, name = tmp / "wh", tmp / "work", "db.t"
    key = _key(partitioned)
    rng = random.Random(seed)
    model = Model(engine, key)
    first = _rows(rng, 40, 20, partitioned, nulls=False)
    write_paimon(work, wh, name, [pa.Table.from_pylist(first, SCHEMA)], key, ["p"] if partitioned else [], options)
    model.apply(first)
    if hidden:
        mp.compact(str(wh), name, full=True)
    for kind, step_seed in steps:
        r = random.Random(step_seed)
        if kind == "delete" and engine == "deduplicate":
            victims = r.sample(sorted(model.state), min(3, len(model.state)))
            keys = pa.Table.from_pylist([dict(zip(key, v)) for v in victims])
            mp.delete(str(wh), name, keys)
            model.apply([{**dict(zip(key, v))} for v in victims], deleted=True)
        elif kind == "py":
            rows = _rows(r, 60, 15, partitioned, nulls=engine != "first-row")
            write_paimon(work, wh, name, [pa.Table.from_pylist(rows, SCHEMA)], key, ["p"] if partitioned else [],
                         options)
            model.apply(rows)
            if hidden:  # pypaimon does not compact: its rows wait at level 0, unread
                mp.compact(str(wh), name, full=bool(step_seed % 2))
        elif kind == "compact":
            mp.compact(str(wh), name, full=bool(step_seed % 2))
        else:
            rows = _rows(r, 60, 25, partitioned, nulls=engine != "first-row")
            result = mp.write(str(wh), name, pa.Table.from_pylist(rows, SCHEMA))
            assert result.snapshot is not None and result.visible
            model.apply(rows)
        assert _sorted(mp.read(str(wh), name), key) == model.rows(), (kind, engine)
    assert _sorted(pypaimon_read(wh, name, work), key) == model.rows()


@needs_pypaimon
def test_sequence_numbers_continue_in_both_directions(tmp_path):
    wh, work, name = tmp_path / "wh", tmp_path / "work", "db.t"
    table = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "p": ["x"] * 3, "name": ["a", "b", "c"],
                      "cnt": pa.array([1, 2, 3], pa.int64())})
    write_paimon(work, wh, name, [table, table], ["id"], [], _options("deduplicate", 1, **{"write-only": "true"}))
    before = max(f.max_seq for f in _files(wh, name))
    result = mp.write(str(wh), name, {"id": [2, 9], "p": ["x", "x"], "name": ["B", "z"], "cnt": [20, 90]})
    assert result.compacted is None  # write-only
    ours = [f for f in _files(wh, name) if f.min_seq > before]
    assert len(ours) == 1 and ours[0].min_seq == before + 1 and ours[0].level == 0
    write_paimon(work, wh, name, [pa.table({"id": pa.array([2], pa.int64()), "p": ["x"], "name": ["again"],
                                            "cnt": pa.array([7], pa.int64())})], ["id"], [])
    theirs = max(f.min_seq for f in _files(wh, name))
    assert theirs > ours[0].max_seq  # pypaimon continued after ours
    expected = {1: "a", 2: "again", 3: "c", 9: "z"}
    assert {r["id"]: r["name"] for r in mp.read(str(wh), name).to_pylist()} == expected
    assert {r["id"]: r["name"] for r in pypaimon_read(wh, name, work).to_pylist()} == expected


@needs_pypaimon
def test_commits_are_javas_append_then_compact(tmp_path):
    wh, work, name = tmp_path / "wh", tmp_path / "work", "db.t"
    # every key in every commit: each bucket gets a run from each, and ours is the third (> the trigger)
    every = [{"id": k, "p": f"p{k % 3}", "name": f"n{k}", "cnt": k} for k in range(50)]
    write_paimon(work, wh, name, [pa.Table.from_pylist(every, SCHEMA)] * 2,
                 ["p", "id"], ["p"], _options("deduplicate", 2, **{"num-sorted-run.compaction-trigger": "2"}))
    result = mp.write(str(wh), name, pa.Table.from_pylist(every, SCHEMA))
    snap_dir = wh / "db.db" / "t" / "snapshot"
    append = json.loads((snap_dir / f"snapshot-{result.snapshot}").read_text())
    assert append["commitKind"] == "APPEND" and append["commitIdentifier"] == (1 << 63) - 1
    assert re.fullmatch(r"[0-9a-f-]{36}", append["commitUser"])
    assert result.compacted == result.snapshot + 1
    compact = json.loads((snap_dir / f"snapshot-{result.compacted}").read_text())
    assert compact["commitKind"] == "COMPACT"
    t = PaimonTable.open(str(wh), name)
    delta = t.manifest_entries(append["deltaManifestList"], t.schema())
    assert delta and all(kind == 0 and f.level == 0 for kind, f in delta)
    assert all(f.record["_FILE"]["_FILE_SOURCE"] == 0 for _, f in delta)
    # every row mergetree wrote sits in the bucket Java's function gives it
    _check_placement(wh / "db.db" / "t")


def _check_placement(table_dir: Path) -> None:
    schemas = sorted(table_dir.glob("schema/schema-*"), key=lambda p: int(p.name.rsplit("-", 1)[1]))
    schema = json.loads(schemas[-1].read_text())
    fields = {f["name"]: parse_field(f) for f in schema["fields"]}
    key = bucket_key(schema["primaryKeys"], schema["partitionKeys"], schema["options"])
    n = int(schema["options"]["bucket"])
    checked = 0
    for path in table_dir.rglob("data-*"):
        m = re.fullmatch(r"bucket-(\d+)", path.parent.name)
        if not m or path.suffix not in (".parquet", ".orc"):
            continue
        data = pq.read_table(path) if path.suffix == ".parquet" else orc.read_table(str(path))
        got = buckets_of([data.column(k) for k in key], [fields[k].type for k in key], n)
        assert (got == int(m.group(1))).all(), path
        checked += 1
    assert checked


@needs_pypaimon
def test_change_streams_and_refusals_leave_the_table_as_it_was(tmp_path):
    wh, work, name = tmp_path / "wh", tmp_path / "work", "db.t"
    write_paimon(work, wh, name, [pa.table({"id": pa.array([1, 2], pa.int64()), "p": ["x", "x"],
                                            "name": ["a", "b"], "cnt": pa.array([1, 2], pa.int64())})],
                 ["id"], [], _options("partial-update", 1))
    snapshots = sorted((wh / "db.db" / "t" / "snapshot").glob("snapshot-*"))
    cdc = pa.table({"id": pa.array([1, 2], pa.int64()), "p": ["x", "x"], "name": [None, "B"],
                    "cnt": pa.array([None, 20], pa.int64()), "_row_kind": ["+U", "-D"]})
    with pytest.raises(UnsupportedPaimonFeatureError, match="ignore-delete"):
        mp.write(str(wh), name, cdc)
    with pytest.raises(SchemaMismatchError, match="'cnt' is string"):
        mp.write(str(wh), name, pa.table({"id": pa.array([3], pa.int64()), "p": ["x"], "name": ["c"], "cnt": ["3"]}))
    with pytest.raises(SchemaMismatchError, match=r"column 'cnt', row 0: '3' \(str\) is not a value of type int"):
        mp.write(str(wh), name, {"id": [3], "p": ["x"], "name": ["c"], "cnt": ["3"]})
    with pytest.raises(SchemaMismatchError, match="lacks column"):
        mp.write(str(wh), name, {"p": ["x"], "name": ["c"]})
    assert sorted((wh / "db.db" / "t" / "snapshot").glob("snapshot-*")) == snapshots
    # a partial update: the null name keeps the old value
    mp.write(str(wh), name, cdc.filter(pa.array([True, False])))
    assert {r["id"]: (r["name"], r["cnt"]) for r in pypaimon_read(wh, name, work).to_pylist()} == \
        {1: ("a", 1), 2: ("b", 2)}


@needs_pypaimon
def test_cdc_into_a_deduplicate_table_with_debezium_ops(tmp_path):
    wh, work, name = tmp_path / "wh", tmp_path / "work", "db.t"
    write_paimon(work, wh, name, [pa.table({"id": pa.array([1, 2, 3], pa.int64()), "p": ["x"] * 3,
                                            "name": ["a", "b", "c"], "cnt": pa.array([1, 2, 3], pa.int64())})],
                 ["id"], [], _options("deduplicate", 2))
    events = pa.table({"id": pa.array([1, 2, 4, 4], pa.int64()), "p": ["x"] * 4, "name": ["A", "b", "d", "D"],
                       "cnt": pa.array([10, 2, 4, 40], pa.int64()), "op": ["u", "d", "c", "u"]})
    result = mp.write(str(wh), name, events, row_kind_column="op")
    assert result.rows == 3  # key 4's two versions folded into one
    expected = {1: "A", 3: "c", 4: "D"}
    assert {r["id"]: r["name"] for r in mp.read(str(wh), name).to_pylist()} == expected
    assert {r["id"]: r["name"] for r in pypaimon_read(wh, name, work).to_pylist()} == expected


@needs_pypaimon
def test_deletion_vector_tables_become_visible_through_compaction(tmp_path):
    wh, work, name = tmp_path / "wh", tmp_path / "work", "db.t"
    opts = _options("deduplicate", 2, **{"deletion-vectors.enabled": "true"})
    write_paimon(work, wh, name, [pa.table({"id": pa.array(range(10), pa.int64()), "p": ["x"] * 10,
                                            "name": [f"n{i}" for i in range(10)],
                                            "cnt": pa.array(range(10), pa.int64())})], ["id"], [], opts)
    mp.compact(str(wh), name, full=True)
    result = mp.write(str(wh), name, {"id": [3, 11], "p": ["x", "x"], "name": ["three", "eleven"], "cnt": [3, 11]})
    assert result.visible and result.compacted is not None
    mp.delete(str(wh), name, {"id": [4]})
    expected = {i: f"n{i}" for i in range(10) if i != 4} | {3: "three", 11: "eleven"}
    assert {r["id"]: r["name"] for r in mp.read(str(wh), name).to_pylist()} == expected
    assert {r["id"]: r["name"] for r in pypaimon_read(wh, name, work).to_pylist()} == expected
    assert all(f.level > 0 for f in _files(wh, name))


def test_write_only_deletion_vector_writes_say_they_are_not_visible_yet(tmp_path):
    src = JAVA / "parquet" / "pk_09.db" / "pk_09"  # deletion vectors, partitioned by f1, bucket key f2
    wh = tmp_path / "wh"
    shutil.copytree(src, wh / "pk_09.db" / "pk_09")
    schema_file = sorted((wh / "pk_09.db" / "pk_09" / "schema").glob("schema-*"))[-1]
    spec = json.loads(schema_file.read_text())
    spec["options"]["write-only"] = "true"
    schema_file.write_text(json.dumps(spec))
    before = mp.read(str(wh), "pk_09.pk_09")
    result = mp.write(str(wh), "pk_09.pk_09", {"f0": ["New"], "f1": [10], "f2": [1], "f3": [1.0]})
    assert not result.visible and result.compacted is None
    assert mp.read(str(wh), "pk_09.pk_09").sort_by("f0").equals(before.sort_by("f0"))
    mp.compact(str(wh), "pk_09.pk_09")
    after = mp.read(str(wh), "pk_09.pk_09")
    assert after.num_rows == before.num_rows + 1


JAVA_WRITABLE = ["pk_09", "pk_table_with_mor", "pk_table_scan_and_read_mor", "pk_table_partial_update",
                 "pk_dv_index_in_data_no_external", "pk_table_nested_type"]


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
@pytest.mark.parametrize("table", JAVA_WRITABLE)
def test_writes_into_tables_java_wrote(tmp_path, fmt, table):
    """An update of an existing key replaces it, a new key appears once; every file written sits
    in Java's bucket; both readers agree where pypaimon reads the table."""
    src = JAVA / fmt / f"{table}.db" / table
    if not src.exists():
        pytest.skip(f"no {fmt} {table}")
    wh = tmp_path / "wh"
    shutil.copytree(src, wh / f"{table}.db" / table)
    name = f"{table}.{table}"
    t = PaimonTable.open(str(wh), name)
    schema = t.schema()
    key = list(schema.primary_keys)
    before = mp.read(str(wh), name)
    existing = before.slice(0, 1)
    updated = existing
    ordering = set(schema.checked_options.sequence_fields)
    for f in schema.fields:  # a changed value in the first non-key atomic column that orders no versions
        if f.name not in key and f.name not in ordering and f.type.root in ("INT", "BIGINT", "DOUBLE", "STRING"):
            value = {"INT": 7777, "BIGINT": 7777, "DOUBLE": 77.77, "STRING": "updated by mergetree"}[f.type.root]
            updated = existing.set_column(existing.schema.get_field_index(f.name), f.name,
                                          pa.array([value], f.type.arrow))
            changed = f.name
            break
    else:
        pytest.skip("no atomic value column")
    mp.write(str(wh), name, updated)
    after = mp.read(str(wh), name)
    assert after.num_rows == before.num_rows
    k = {c: existing.column(c)[0].as_py() for c in key}
    match = [r for r in after.to_pylist() if all(r[c] == v for c, v in k.items())]
    assert len(match) == 1 and match[0][changed] == updated.column(changed)[0].as_py()
    _check_placement(wh / f"{table}.db" / table)


def test_concurrent_mergetree_writers_lose_nothing_and_order_versions_by_commit(tmp_path):
    wh = tmp_path / "wh"
    shutil.copytree(JAVA / "parquet" / "pk_table_with_mor.db", wh / "pk_table_with_mor.db")
    name = "pk_table_with_mor.pk_table_with_mor"
    t = PaimonTable.open(str(wh), name)
    schema = t.schema()
    base = mp.read(str(wh), name)
    template = base.slice(0, 1).to_pylist()[0]
    key = list(schema.primary_keys)
    results: dict[int, object] = {}
    errors: list[BaseException] = []

    def writer(i: int) -> None:
        try:
            rows = []
            for j in range(20):
                row = dict(template)
                row[key[0]] = 100_000 + i * 1000 + j  # a key of its own
                rows.append(row)
            shared = dict(template)
            shared[key[0]] = 99_999  # one key every writer writes
            value_column = next(f.name for f in schema.fields if f.name not in key and f.type.root == "INT")
            shared[value_column] = i
            rows.append(shared)
            results[i] = mp.write(str(wh), name, pa.Table.from_pylist(rows, base.schema))
        except BaseException as exc:  # reported below
            errors.append(exc)
    threads = [threading.Thread(target=writer, args=(i,)) for i in range(3)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    after = mp.read(str(wh), name)
    assert after.num_rows == base.num_rows + 3 * 20 + 1
    value_column = next(f.name for f in schema.fields if f.name not in key and f.type.root == "INT")
    shared_rows = [r for r in after.to_pylist() if r[key[0]] == 99_999]
    last = max(results, key=lambda i: results[i].snapshot)  # the write committed last wins
    assert len(shared_rows) == 1 and shared_rows[0][value_column] == last


@pytest.mark.parametrize("option, value, message", [
    ("bucket", "-1", "places keys by its hash index, not by a bucket key"),  # (the table has one)
    ("bucket", "-2", "postpone"),
    ("metadata.iceberg.storage", "hadoop-catalog", "Iceberg"),
    ("metastore.partitioned-table", "true", "Hive"),
    ("tag.automatic-creation", "process-time", "tags"),
    ("partition.expiration-time", "1 d", "expire"),
    ("changelog-producer", "full-compaction", "changelog"),
    ("bucket-function.type", "hive", "'hive'"),
])
def test_tables_mergetree_cannot_write_as_java_would_are_refused_by_name(tmp_path, option, value, message):
    wh = tmp_path / "wh"
    shutil.copytree(JAVA / "parquet" / "pk_table_scan_and_read_mor.db", wh / "t.db")
    (wh / "t.db" / "pk_table_scan_and_read_mor").rename(wh / "t.db" / "t")
    schema_file = sorted((wh / "t.db" / "t" / "schema").glob("schema-*"))[-1]
    spec = json.loads(schema_file.read_text())
    spec["options"][option] = value
    schema_file.write_text(json.dumps(spec))
    snapshots = sorted((wh / "t.db" / "t" / "snapshot").glob("snapshot-*"))
    with pytest.raises(UnsupportedPaimonFeatureError, match=message):
        mp.write(str(wh), "t.t", {"f0": ["x"], "f1": [10], "f2": [1], "f3": [1.0]})
    assert sorted((wh / "t.db" / "t" / "snapshot").glob("snapshot-*")) == snapshots


def test_not_null_columns_and_keys_are_checked_before_anything_is_written(tmp_path):
    wh = tmp_path / "wh"
    shutil.copytree(JAVA / "parquet" / "pk_table_scan_and_read_mor.db", wh / "t.db")
    name = "t.pk_table_scan_and_read_mor"
    with pytest.raises(SchemaMismatchError, match="column 'f2' (is null|.*NOT NULL)"):
        mp.write(str(wh), name, pa.table({"f0": ["x"], "f1": pa.array([10], pa.int32()),
                                          "f2": pa.array([None], pa.int32()), "f3": [1.0]}))
    with pytest.raises(SchemaMismatchError, match=r"lacks column\(s\) \['f2'\]"):
        mp.write(str(wh), name, {"f0": ["x"], "f1": [10], "f3": [1.0]})
    # a string view (polars, DuckDB) and int64 values that fit INT are taken
    result = mp.write(str(wh), name, pa.table({"f0": pa.array(["view"], pa.string_view()),
                                               "f1": pa.array([10], pa.int64()), "f2": pa.array([1], pa.int64()),
                                               "f3": [2.5]}))
    assert result.rows == 1
    assert [r for r in mp.read(str(wh), name).to_pylist() if r["f0"] == "view"] == \
        [{"f0": "view", "f1": 10, "f2": 1, "f3": 2.5}]


@needs_pypaimon
def test_pypaimon_rust_thin_files_are_read_compacted_and_written_over(tmp_path):
    """pypaimon-rust writes primary-key files without `_KEY_` columns (thin mode, whatever the
    table says): mergetree reads the key from the value column, as Java does, compacts them and
    writes on top; pypaimon reads the result."""
    rust = pytest.importorskip("pypaimon_rust.datafusion")
    wh, work, name = tmp_path / "wh", tmp_path / "work", "db.t"
    first = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "p": ["x"] * 3, "name": ["a", "b", "c"],
                      "cnt": pa.array([1, 2, 3], pa.int64())})
    write_paimon(work, wh, name, [first], ["id"], [], _options("deduplicate", 2))
    table = rust.PaimonCatalog({"warehouse": str(wh)}).get_table(name)
    builder = table.new_batch_write_builder()
    writer = builder.new_write()
    writer.write_arrow(pa.record_batch({"id": pa.array([2, 4], pa.int64()), "p": ["x", "x"], "name": ["B", "d"],
                                        "cnt": pa.array([20, 4], pa.int64())}))
    builder.new_commit().commit(writer.prepare_commit())
    thin = [f for f in _files(wh, name) if "_KEY_id" not in pq.read_schema(
        wh / "db.db" / "t" / f"bucket-{f.bucket}" / f.file_name).names]
    assert thin, "pypaimon-rust wrote files with _KEY_ columns: this test no longer covers thin files"
    expected = {1: "a", 2: "B", 3: "c", 4: "d"}
    assert {r["id"]: r["name"] for r in mp.read(str(wh), name).to_pylist()} == expected
    assert {r["id"]: r["name"] for r in mp.read(str(wh), name, filter=[("id", "=", 2)]).to_pylist()} == {2: "B"}
    mp.write(str(wh), name, {"id": [3, 5], "p": ["x", "x"], "name": ["C", "e"], "cnt": [30, 5]})
    mp.compact(str(wh), name, full=True)
    expected |= {3: "C", 5: "e"}
    assert {r["id"]: r["name"] for r in mp.read(str(wh), name).to_pylist()} == expected
    assert {r["id"]: r["name"] for r in pypaimon_read(wh, name, work).to_pylist()} == expected


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_a_full_compaction_purges_every_marked_row_even_in_a_single_run(tmp_path, fmt):
    """A Java table whose bucket is one file at the top level with a deletion vector: a full
    compaction rewrites it without the marked rows and the bucket keeps no vector."""
    wh = tmp_path / "wh"
    shutil.copytree(JAVA / fmt / "pk_with_bitmap_dv.db", wh / "pk_with_bitmap_dv.db")
    name = "pk_with_bitmap_dv.pk_with_bitmap_dv"
    t = PaimonTable.open(str(wh), name)
    assert t.deletion_files(t.resolve(None)) and len(t.live_files(t.resolve(None))) == 1
    before = mp.read(str(wh), name)
    assert mp.compact(str(wh), name, full=True) is not None
    t = PaimonTable.open(str(wh), name)
    after = t.resolve(None)
    assert t.deletion_files(after) == {}
    assert sum(f.row_count for f in t.live_files(after)) == before.num_rows
    key = list(t.schema().primary_keys)
    assert mp.read(str(wh), name).sort_by([(k, "ascending") for k in key]).equals(
        before.sort_by([(k, "ascending") for k in key]))
    assert mp.compact(str(wh), name, full=True) is None  # nothing left to purge


def test_commits_detect_javas_conflicts_after_a_lost_race(tmp_path):
    """A commit that lost its race is checked on the newer snapshot as Java checks one: two
    files of a level above 0 overlapping in a bucket, or a file for another bucket count, is a
    conflict (nothing committed); a disjoint one is not."""
    from mergetree import CompactionConflictError
    from mergetree.table.paimon.commit import commit_files, lsm_conflict

    wh = tmp_path / "wh"
    shutil.copytree(JAVA / "parquet" / "pk_09.db", wh / "pk_09.db")
    name = "pk_09.pk_09"
    mp.write(str(wh), name, mp.read(str(wh), name).slice(0, 1))  # one more snapshot to lose the race to
    t = PaimonTable.open(str(wh), name)
    latest = t.resolve(None)
    schema = t.schema()
    top = next(f for f in t.live_files(latest) if f.level > 0)
    twin = dict(top.record, _FILE=dict(top.record["_FILE"], _FILE_NAME="data-twin-0.parquet"))
    assert "overlapping" in lsm_conflict(t, latest, [twin], [], schema)
    assert lsm_conflict(t, latest, [], [], schema) is None
    assert "buckets" in lsm_conflict(t, latest, [dict(twin, _TOTAL_BUCKETS=7)], [], schema)
    older = t.snapshot(int(latest["id"]) - 1)
    snapshots = sorted((wh / "pk_09.db" / "pk_09" / "snapshot").glob("snapshot-*"))
    with pytest.raises(CompactionConflictError, match="overlapping"):
        commit_files(t, older, schema, [twin], [], [], "COMPACT")
    assert sorted((wh / "pk_09.db" / "pk_09" / "snapshot").glob("snapshot-*")) == snapshots


def test_gentle_lookup_compaction_leaves_level_0_to_a_later_compaction(tmp_path):
    """`lookup-compact` = gentle: Java forces level 0 up only every max-interval commits of a
    long-running writer; a batch write leaves it (invisible in a deletion-vector table) and says so."""
    wh = tmp_path / "wh"
    shutil.copytree(JAVA / "parquet" / "pk_09.db", wh / "pk_09.db")
    schema_file = sorted((wh / "pk_09.db" / "pk_09" / "schema").glob("schema-*"))[-1]
    spec = json.loads(schema_file.read_text())
    spec["options"]["lookup-compact"] = "GENTLE"
    schema_file.write_text(json.dumps(spec))
    result = mp.write(str(wh), "pk_09.pk_09", {"f0": ["Gentle"], "f1": [10], "f2": [1], "f3": [1.0]})
    assert result.compacted is None and not result.visible
    assert "Gentle" not in mp.read(str(wh), "pk_09.pk_09").column("f0").to_pylist()
    mp.compact(str(wh), "pk_09.pk_09")  # a compaction job resolves it
    assert "Gentle" in mp.read(str(wh), "pk_09.pk_09").column("f0").to_pylist()


@needs_pypaimon
def test_overwrite_replaces_partitions_as_javas_batch_overwrite(tmp_path):
    wh, work, name = tmp_path / "wh", tmp_path / "work", "db.t"
    every = [{"id": k, "p": f"p{k % 3}", "name": f"n{k}", "cnt": k} for k in range(30)]
    write_paimon(work, wh, name, [pa.Table.from_pylist(every, SCHEMA)], ["p", "id"], ["p"],
                 _options("deduplicate", 2, **{"deletion-vectors.enabled": "true"}))
    mp.compact(str(wh), name, full=True)
    mp.delete(str(wh), name, {"p": ["p1"], "id": [1]})  # a deletion vector in p1
    before = mp.read(str(wh), name)
    # dynamic: only p1, the partition the data holds, is replaced
    result = mp.write(str(wh), name, {"id": [1000, 1001], "p": ["p1", "p1"], "name": ["x", "y"], "cnt": [1, 2]},
                      overwrite=True)
    snap = json.loads((wh / "db.db" / "t" / "snapshot" / f"snapshot-{result.snapshot}").read_text())
    assert snap["commitKind"] == "OVERWRITE" and result.visible
    expected = sorted([r for r in before.to_pylist() if r["p"] != "p1"] +
                      [{"id": 1000, "p": "p1", "name": "x", "cnt": 1}, {"id": 1001, "p": "p1", "name": "y", "cnt": 2}],
                      key=lambda r: (r["p"], r["id"]))
    assert _sorted(mp.read(str(wh), name), ["p", "id"]) == expected
    assert _sorted(pypaimon_read(wh, name, work), ["p", "id"]) == expected
    t = PaimonTable.open(str(wh), name)
    assert all(f.partition != ("p1",) or f.min_seq == 0 or f.level > 0 for f in t.live_files(t.resolve(None)))
    # the change of an overwrite: the replaced rows removed, the new ones added (visible once
    # the COMPACT after it resolved level 0 in this deletion-vector table)
    change = mp.changes(str(wh), name, result.snapshot - 1, result.compacted).read_all().to_pylist()
    assert {(r["id"], r["_row_kind"]) for r in change if r["_row_kind"] == "+I"} == {(1000, "+I"), (1001, "+I")}
    # a static partition, written empty: truncated
    mp.write(str(wh), name, pa.Table.from_pylist([], SCHEMA), overwrite={"p": "p0"})
    assert {r["p"] for r in mp.read(str(wh), name).to_pylist()} == {"p1", "p2"}
    assert {r["p"] for r in pypaimon_read(wh, name, work).to_pylist()} == {"p1", "p2"}
    snapshots = sorted((wh / "db.db" / "t" / "snapshot").glob("snapshot-*"))
    with pytest.raises(InvalidArgumentError, match="rows of partition"):
        mp.write(str(wh), name, {"id": [5], "p": ["p2"], "name": ["z"], "cnt": [5]}, overwrite={"p": "p0"})
    with pytest.raises(InvalidArgumentError, match="not partition columns"):
        mp.write(str(wh), name, {"id": [5], "p": ["p2"], "name": ["z"], "cnt": [5]}, overwrite={"id": 5})
    assert sorted((wh / "db.db" / "t" / "snapshot").glob("snapshot-*")) == snapshots


def test_overwrite_of_an_unpartitioned_table_replaces_it_whole(tmp_path):
    wh = tmp_path / "wh"
    shutil.copytree(JAVA / "parquet" / "pk_table_partial_update.db", wh / "pk_table_partial_update.db")
    t = Table.open(wh / "pk_table_partial_update.db" / "pk_table_partial_update")
    assert t.read().num_rows > 1
    row = t.read().slice(0, 1)
    t.write(row, overwrite=True)
    assert t.read().equals(row)


@needs_pypaimon
def test_the_input_changelog_producer_keeps_every_version_as_written(tmp_path):
    """`changelog-producer` = input: beside the folded level-0 files, changelog files hold every
    row as written (all versions, their kinds), listed in the snapshot's changelog manifest
    list; the change read from them is the input, key by key in sequence order."""
    wh, work, name = tmp_path / "wh", tmp_path / "work", "db.t"
    write_paimon(work, wh, name, [pa.table({"id": pa.array([1, 2], pa.int64()), "p": ["x", "x"],
                                            "name": ["a", "b"], "cnt": pa.array([1, 2], pa.int64())})],
                 ["id"], [], _options("deduplicate", 1, **{"changelog-producer": "input"}))
    events = pa.table({"id": pa.array([2, 3, 3, 1], pa.int64()), "p": ["x"] * 4, "name": ["B", "c", "C", "a"],
                       "cnt": pa.array([20, 3, 30, 1], pa.int64()), "_row_kind": ["+U", "+I", "+U", "-D"]})
    result = mp.write(str(wh), name, events)
    assert result.rows == 3  # key 3's two versions folded in the data file
    snap = json.loads((wh / "db.db" / "t" / "snapshot" / f"snapshot-{result.snapshot}").read_text())
    assert snap["changelogManifestList"] and snap["changelogRecordCount"] == 4
    assert any(p.name.startswith("changelog-") for p in (wh / "db.db" / "t" / "bucket-0").iterdir())
    change = mp.changes(str(wh), name, result.snapshot - 1, result.snapshot, source="changelog").read_all()
    assert [(r["id"], r["name"], r["_row_kind"]) for r in change.to_pylist()] == \
        [(1, "a", "-D"), (2, "B", "+U"), (3, "c", "+I"), (3, "C", "+U")]
    expected = {2: "B", 3: "C"}
    assert {r["id"]: r["name"] for r in mp.read(str(wh), name).to_pylist()} == expected
    assert {r["id"]: r["name"] for r in pypaimon_read(wh, name, work).to_pylist()} == expected


@needs_pypaimon
@pytest.mark.parametrize("bucketed", [False, True])
def test_append_tables_written_read_and_overwritten(tmp_path, bucketed):
    """An append table (no primary key; bucket-unaware, or 3 buckets by a bucket key): rows as
    written, every writer's; an overwrite replaces a partition; the change stream shows them."""
    schema = pa.schema([("p", pa.string()), ("k", pa.int64()), ("v", pa.string())])
    wh, work, name = tmp_path / "wh", tmp_path / "work", "db.t"
    first = pa.table({"p": ["a", "b"], "k": pa.array([1, 2], pa.int64()), "v": ["x", None]}, schema=schema)
    options = {"bucket": "3", "bucket-key": "k"} if bucketed else {}
    write_paimon(work, wh, name, [first], [], partition_keys=["p"], options=options)
    ours = pa.table({"p": ["a", "a", "b"], "k": pa.array([1, 3, 4], pa.int64()), "v": ["y", "z", "w"]}, schema=schema)
    result = mp.write(str(wh), name, ours)
    assert result.rows == 3 and result.visible and result.compacted is None

    def bag(t: pa.Table) -> list:
        return sorted(json.dumps(r, sort_keys=True) for r in t.select(schema.names).to_pylist())
    expected = bag(pa.concat_tables([first, ours]))
    assert bag(mp.read(str(wh), name)) == expected
    assert bag(pypaimon_read(wh, name, work)) == expected
    assert bag(mp.read(str(wh), name, filter=[("p", "=", "a")])) == \
        bag(pa.concat_tables([first, ours]).filter(pa.compute.equal(pa.concat_tables([first, ours])["p"], "a")))
    change = mp.changes(str(wh), name, result.snapshot - 1, result.snapshot).read_all()
    assert bag(change.drop_columns(["_row_kind"])) == bag(ours) and set(change["_row_kind"].to_pylist()) == {"+I"}
    if bucketed:
        _check_placement(wh / "db.db" / "t")
    t = PaimonTable.open(str(wh), name)
    assert all(f.total_buckets == (3 if bucketed else -1) for f in t.live_files(t.resolve(None)))
    # pypaimon writes on top; then a partition overwritten
    write_paimon(work, wh, name, [first], [], partition_keys=["p"], options=options)
    mp.write(str(wh), name, pa.table({"p": ["b"], "k": pa.array([9], pa.int64()), "v": ["new"]}, schema=schema),
             overwrite=True)
    expected_rows = [r for r in pa.concat_tables([first, ours, first]).to_pylist() if r["p"] != "b"] + \
        [{"p": "b", "k": 9, "v": "new"}]
    assert bag(mp.read(str(wh), name)) == bag(pa.Table.from_pylist(expected_rows, schema))
    assert bag(pypaimon_read(wh, name, work)) == bag(pa.Table.from_pylist(expected_rows, schema))
    with pytest.raises(UnsupportedPaimonFeatureError, match="inserts"):
        mp.write(str(wh), name, pa.table({"p": ["a"], "k": pa.array([1], pa.int64()), "v": ["x"],
                                          "_row_kind": ["-D"]}))
    with pytest.raises(UnsupportedPaimonFeatureError, match="append table"):
        mp.compact(str(wh), name)


_KILLED_WRITER = """
import os, signal, sys
import pyarrow as pa
import mergetree.paimon as mp
from mergetree.storage import LocalDiskStore
stage = sys.argv[2]
open_output, create = LocalDiskStore.open_output, LocalDiskStore.create
def dying_output(self, name, *args, **kwargs):
    if stage == "data" and "manifest/" in name:  # every data file written, no metadata yet
        os.kill(os.getpid(), signal.SIGKILL)
    return open_output(self, name, *args, **kwargs)
def dying_create(self, name, data, *args, **kwargs):
    if stage == "snapshot" and name.startswith("snapshot/"):  # everything but the snapshot written
        os.kill(os.getpid(), signal.SIGKILL)
    if stage == "compaction" and name.startswith("snapshot/") and b'"COMPACT"' in data:  # APPEND committed
        os.kill(os.getpid(), signal.SIGKILL)
    return create(self, name, data, *args, **kwargs)
LocalDiskStore.open_output, LocalDiskStore.create = dying_output, dying_create
rows = 20_000
data = pa.table({"id": pa.array(range(rows), pa.int64()), "p": ["x"] * rows, "name": [f"n{i}" for i in range(rows)],
                 "cnt": pa.array(range(rows), pa.int64())})
mp.write(sys.argv[1], "db.t", data)
"""


@needs_pypaimon
@pytest.mark.parametrize("stage", ["data", "snapshot", "compaction"])
def test_a_killed_write_leaves_exactly_the_committed_table(tmp_path, stage):
    """SIGKILL after the data files, after everything but the snapshot, or after the APPEND
    snapshot but before the COMPACT one: every reader sees exactly what was committed, and the
    next write and compaction go on from there."""
    import signal
    import subprocess
    import sys
    wh, work, name = tmp_path / "wh", tmp_path / "work", "db.t"
    first = pa.table({"id": pa.array([1, 2], pa.int64()), "p": ["x", "x"], "name": ["a", "b"],
                      "cnt": pa.array([1, 2], pa.int64())})
    write_paimon(work, wh, name, [first], ["id"], [],
                 _options("deduplicate", 2, **{"num-sorted-run.compaction-trigger": "1"}))
    child = subprocess.run([sys.executable, "-c", _KILLED_WRITER, str(wh), stage], timeout=300)
    assert child.returncode == -signal.SIGKILL
    before = {1: "a", 2: "b"}
    after = {i: f"n{i}" for i in range(20_000)}
    expected = after if stage == "compaction" else before
    assert {r["id"]: r["name"] for r in mp.read(str(wh), name).to_pylist()} == expected
    assert {r["id"]: r["name"] for r in pypaimon_read(wh, name, work).to_pylist()} == expected
    mp.write(str(wh), name, {"id": [2], "p": ["x"], "name": ["B"], "cnt": [20]})
    mp.compact(str(wh), name, full=True)
    assert {r["id"]: r["name"] for r in mp.read(str(wh), name).to_pylist()} == {**expected, 2: "B"}


@needs_pypaimon
def test_thin_mode_tables_get_files_without_key_copies(tmp_path):
    """`data-file.thin-mode`: mergetree writes files without `_KEY_` columns (Paimon 1.0+ reads
    the key from its column), reads and compacts them, and pypaimon reads the result."""
    wh, work, name = tmp_path / "wh", tmp_path / "work", "db.t"
    write_paimon(work, wh, name, [pa.table({"id": pa.array([1, 2], pa.int64()), "p": ["x", "x"],
                                            "name": ["a", "b"], "cnt": pa.array([1, 2], pa.int64())})],
                 ["id"], [], _options("deduplicate", 1, **{"data-file.thin-mode": "true", "write-only": "true"}))
    result = mp.write(str(wh), name, {"id": [2, 3], "p": ["x", "x"], "name": ["B", "c"], "cnt": [20, 3]})
    t = PaimonTable.open(str(wh), name)
    ours = [f for f in t.live_files(t.resolve(None)) if f.min_seq > 0 and f.level == 0]
    assert ours and all("_KEY_id" not in pq.read_schema(wh / "db.db" / "t" / "bucket-0" / f.file_name).names
                        for f in ours) and result.rows == 2
    expected = {1: "a", 2: "B", 3: "c"}
    assert {r["id"]: r["name"] for r in mp.read(str(wh), name).to_pylist()} == expected
    assert {r["id"]: r["name"] for r in mp.read(str(wh), name, filter=[("id", "=", 2)]).to_pylist()} == {2: "B"}
    assert {r["id"]: r["name"] for r in pypaimon_read(wh, name, work).to_pylist()} == expected
    mp.compact(str(wh), name, full=True)
    assert {r["id"]: r["name"] for r in pypaimon_read(wh, name, work).to_pylist()} == expected


def test_a_failure_after_the_commit_is_a_warning(tmp_path, monkeypatch):
    """The APPEND is committed: a compaction that fails after it is a CommittedWarning, and the
    write returns what it committed (raising would make a caller write the rows twice)."""
    import importlib

    from mergetree import CommittedWarning, CorruptTableError
    write_module = importlib.import_module("mergetree.paimon.write")  # the module (the package exports the function)

    wh = tmp_path / "wh"
    shutil.copytree(JAVA / "parquet" / "pk_table_scan_and_read_mor.db", wh / "t.db")

    def broken(*args, **kwargs):
        raise CorruptTableError("a damaged file found while compacting", path="x")
    monkeypatch.setattr(write_module, "compact_buckets", broken)  # the engine's compaction after the write
    with pytest.warns(CommittedWarning, match="committed snapshot"):
        result = mp.write(str(wh), "t.pk_table_scan_and_read_mor", {"f0": ["w"], "f1": [10], "f2": [0], "f3": [1.0]})
    assert result.snapshot is not None and result.compacted is None
    assert "w" in mp.read(str(wh), "t.pk_table_scan_and_read_mor").column("f0").to_pylist()


def test_an_orc_files_columns_are_read_from_its_footer_once():
    """Thin-mode detection asks every ORC data file for its columns at every read: the answer
    is cached by file (path, size and mtime), so the footer is read once."""
    paimon_files = importlib.import_module("mergetree.table.paimon.files")
    orc_file = next((JAVA / "orc" / "pk_with_bitmap_dv.db" / "pk_with_bitmap_dv" / "bucket-0").glob("*.orc"))
    first = paimon_files.orc_column_names(str(orc_file))
    assert "_KEY_key" in first and "f0" in first
    assert paimon_files.orc_column_names(str(orc_file)) is first
