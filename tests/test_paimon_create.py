"""New Paimon tables made by mergetree (`paimon.create.create_table`, the first piece of issue
36's `Table.create`): the schema file as Java's catalog writes it, read by pypaimon and
pypaimon-rust; written by mergetree and pypaimon in turn and read against a model; refusals by
name with nothing written."""
from __future__ import annotations

import datetime as dt
import decimal
import json
import random
import threading
from pathlib import Path

import pyarrow as pa
import pytest
from paimon_fixtures import needs_pypaimon, pypaimon_read, write_paimon

import mergetree.paimon as mp
from mergetree import InvalidArgumentError, TableExistsError, UnsupportedPaimonFeatureError, UnsupportedTypeError
from mergetree.codec.json_files import dumps
from mergetree.table.paimon.create import create_table

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("name", pa.string()), ("cnt", pa.int64())])


def _rows(rng: random.Random, n: int) -> list[dict]:
    out = []
    for _ in range(n):
        k = rng.randrange(40)
        out.append({"id": k, "p": f"p{k % 3}", "name": rng.choice([None, f"n{rng.randrange(100)}"]),
                    "cnt": rng.randrange(10)})
    return out


def _fold(state: dict, rows: list[dict], engine: str) -> None:
    for row in rows:
        k = (row["p"], row["id"])
        old = state.get(k)
        if old is None or engine == "deduplicate":
            state[k] = dict(row)
        elif engine == "partial-update":
            state[k] = {c: (v if v is not None else old[c]) for c, v in row.items()}
        elif engine == "aggregate":
            state[k] = {**{c: (v if v is not None else old[c]) for c, v in row.items()}, "cnt": old["cnt"] + row["cnt"]}
        # first-row keeps the first


def _sorted(rows) -> list[dict]:
    return sorted(({c: r[c] for c in SCHEMA.names} for r in rows), key=lambda r: (r["p"], r["id"]))


@needs_pypaimon
@pytest.mark.parametrize("engine, buckets, partitioned, dv", [
    ("deduplicate", 1, False, False), ("deduplicate", 3, True, True), ("partial-update", 2, True, False),
    ("aggregate", 2, False, False), ("first-row", 1, True, False)])
def test_tables_mergetree_creates_are_read_and_written_by_pypaimon_against_a_model(tmp_path, engine, buckets,
                                                                                  partitioned, dv):
    wh, work, name = tmp_path / "wh", tmp_path / "work", "db.t"
    work.mkdir()
    options = {"deletion-vectors.enabled": "true"} if dv else {}
    if engine == "aggregate":
        options["fields.cnt.aggregate-function"] = "sum"
    create_table(str(wh), name, SCHEMA, primary_key=["p", "id"], partition_by=["p"] if partitioned else [],
                 buckets=buckets, merge_engine=engine, options=options)
    rng = random.Random(7)
    state: dict = {}
    for turn in range(4):
        rows = _rows(rng, 30)
        if engine == "aggregate":
            rows = list({(r["p"], r["id"]): r for r in rows}.values())  # one version per key a commit
        if turn % 2 == 0:
            mp.write(str(wh), name, pa.Table.from_pylist(rows, schema=SCHEMA))
        else:
            if engine == "first-row" or (engine != "deduplicate" and any(r["name"] is None for r in rows)):
                rows = [dict(r, name=r["name"] or "set") for r in rows]  # pypaimon folds no nulls
            rows = list({(r["p"], r["id"]): r for r in rows}.values()) if engine != "deduplicate" else rows
            write_paimon(work, wh, name, [pa.Table.from_pylist(rows, schema=SCHEMA)], ["p", "id"])
        _fold(state, rows, engine)
        if dv or engine == "first-row":  # level-0 rows become visible through compaction
            mp.compact(str(wh), name)
        expected = _sorted(state.values())
        assert _sorted(mp.read(str(wh), name).to_pylist()) == expected, turn
        assert _sorted(pypaimon_read(wh, name, work).to_pylist()) == expected, turn


def test_the_schema_file_is_javas_and_every_reader_opens_the_table(tmp_path):
    schema = pa.schema([("id", pa.int64()), ("tags", pa.list_(pa.string())),
                        ("attrs", pa.struct([("a", pa.int32()), ("b", pa.map_(pa.string(), pa.float64()))])),
                        ("ts", pa.timestamp("us", tz="UTC")), ("amount", pa.decimal128(12, 2)),
                        ("day", pa.date32()), ("small", pa.uint8()), ("code", pa.dictionary(pa.int32(), pa.string()))])
    create_table(str(tmp_path), "db.t", schema, primary_key="id", buckets=4,
                 options={"deletion-vectors.enabled": True, "file-index.bloom-filter.columns": "day"})
    path = tmp_path / "db.db" / "t" / "schema" / "schema-0"
    text = path.read_bytes()
    body = json.loads(text)
    assert list(body) == ["version", "id", "fields", "highestFieldId", "partitionKeys", "primaryKeys", "options",
                          "timeMillis"]
    assert dumps(body) == text  # Jackson's layout
    assert body["options"] == {"bucket": "4", "file.format": "parquet", "merge-engine": "deduplicate",
                               "deletion-vectors.enabled": "true", "file-index.bloom-filter.columns": "day"}
    assert [f["id"] for f in body["fields"]] == [0, 1, 2, 5, 6, 7, 8, 9] and body["highestFieldId"] == 9
    assert body["fields"][0]["type"] == "BIGINT NOT NULL"  # a key column is NOT NULL, as Java makes it
    assert body["fields"][2]["type"]["fields"][1] == {"id": 4, "name": "b", "type": {
        "type": "MAP", "key": "STRING NOT NULL", "value": "DOUBLE"}}
    data = pa.table({"id": [1, 2], "tags": [["x"], None], "attrs": [{"a": 1, "b": [("k", 1.5)]}, None],
                     "ts": pa.array([dt.datetime(2024, 5, 1, tzinfo=dt.timezone.utc)] * 2, pa.timestamp("us", "UTC")),
                     "amount": [decimal.Decimal("12.30"), None], "day": [dt.date(2024, 5, 1)] * 2,
                     "small": pa.array([200, 3], pa.uint8()), "code": ["a", "b"]}, schema=schema)
    written = mp.write(str(tmp_path), "db.t", data)
    assert written.visible
    got = mp.read(str(tmp_path), "db.t").sort_by("id")
    assert got.column("small").type == pa.int16() and got.column("small").to_pylist() == [200, 3]
    assert got.column("tags").to_pylist() == [["x"], None] and got.column("code").to_pylist() == ["a", "b"]
    pytest.importorskip("pypaimon_rust")
    from pypaimon_rust.datafusion import PaimonCatalog
    rust = PaimonCatalog({"warehouse": str(tmp_path)}).get_table(("db", "t"))
    builder = rust.new_read_builder()
    rows = pa.Table.from_batches(builder.new_read().read(builder.new_scan().plan().splits()))
    assert sorted(rows.column("id").to_pylist()) == [1, 2]


@needs_pypaimon
def test_append_tables_and_tables_at_a_path_of_their_own(tmp_path):
    create_table(str(tmp_path / "wh"), "db.events", SCHEMA, partition_by=["p"], buckets=2,
                 options={"bucket-key": "id"})
    mp.write(str(tmp_path / "wh"), "db.events", pa.Table.from_pylist(_rows(random.Random(1), 20), schema=SCHEMA))
    (tmp_path / "work").mkdir()
    assert pypaimon_read(tmp_path / "wh", "db.events", tmp_path / "work").num_rows == 20
    at = create_table(str(tmp_path / "anywhere" / "orders"), None, SCHEMA, primary_key=["id"])
    assert at.name == "orders"
    mp.write(str(tmp_path / "anywhere" / "orders"), None, pa.Table.from_pylist(
        [{"id": 1, "p": "x", "name": "a", "cnt": 1}], schema=SCHEMA))
    assert mp.read(str(tmp_path / "anywhere" / "orders"), None).num_rows == 1


@pytest.mark.parametrize("kwargs, error, message", [
    ({"primary_key": ["id"], "partition_by": ["p"]}, UnsupportedPaimonFeatureError, "cross-partition"),
    ({"primary_key": ["nope"]}, InvalidArgumentError, "nope"),
    ({"primary_key": ["id"], "buckets": 0}, InvalidArgumentError, "positive"),
    ({"primary_key": ["id"], "buckets": 0}, InvalidArgumentError, "positive"),
    ({"primary_key": ["id"], "merge_engine": "newest"}, InvalidArgumentError, "merge_engine"),
    ({"primary_key": ["id"], "options": {"sequence.feild": "cnt"}}, InvalidArgumentError,
     "did you mean 'sequence.field'"),
    ({"primary_key": ["id"], "options": {"file-index.bitmap.columns": "nope"}}, UnsupportedPaimonFeatureError, "nope"),
    ({"primary_key": ["id"], "merge_engine": "aggregate", "options": {"fields.cnt.aggregate-function": "median"}},
     UnsupportedPaimonFeatureError, "median"),
    ({"primary_key": ["id"], "merge_engine": "first-row", "options": {"changelog-producer": "input"}},
     UnsupportedPaimonFeatureError, "only 'none' and 'lookup' with the first-row"),  # Java's SchemaValidation too
])
def test_what_mergetree_could_not_write_is_refused_by_name_with_nothing_written(tmp_path, kwargs, error, message):
    with pytest.raises(error, match=message):
        create_table(str(tmp_path), "db.t", SCHEMA, **kwargs)
    assert not (tmp_path / "db.db").exists()


def test_columns_paimon_has_no_type_for_are_named(tmp_path):
    schema = SCHEMA.append(pa.field("big", pa.uint64()))
    with pytest.raises(UnsupportedTypeError, match="column 'big'.*unsigned"):
        create_table(str(tmp_path), "db.t", schema, primary_key=["id"])
    assert not (tmp_path / "db.db").exists()


def test_two_creators_of_one_table_one_wins(tmp_path):
    outcomes: list = []
    barrier = threading.Barrier(4)

    def create(i: int) -> None:
        barrier.wait()
        try:
            create_table(str(tmp_path), "db.t", SCHEMA.append(pa.field(f"c{i}", pa.int32())), primary_key=["id"])
            outcomes.append(("won", i))
        except TableExistsError:
            outcomes.append(("lost", i))
    threads = [threading.Thread(target=create, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [i for what, i in outcomes if what == "won"]
    assert len(winners) == 1 and len(outcomes) == 4
    fields = json.loads((tmp_path / "db.db" / "t" / "schema" / "schema-0").read_text())["fields"]
    assert fields[-1]["name"] == f"c{winners[0]}"
    assert [p.name for p in Path(tmp_path / "db.db" / "t").iterdir()] == ["schema"]


# -- Table.create(...) ------------------------------------------------------

@needs_pypaimon
def test_table_create_makes_a_paimon_table_in_a_catalog_or_at_a_path(tmp_path):
    from mergetree import Table
    wh = tmp_path / "wh"
    t = Table.create(wh / "db.db" / "t", SCHEMA, primary_key=["p", "id"], partition_by="p", buckets=3,
                     bucket_key="id", merge_engine="deduplicate",
                     options={"optimize.minor-min-files": 4, "target-file-size": "8mb", "query-log.retention": "3d",
                              "parquet.bloom.filter.enabled#name": True})
    options = json.loads((wh / "db.db" / "t" / "schema" / "schema-0").read_text())["options"]
    # every option a reader needs, explicitly; mergetree's own under its prefix
    assert options == {"bucket": "3", "file.format": "parquet", "merge-engine": "deduplicate", "bucket-key": "id",
                       "mergetree.query-log.enabled": "true", "mergetree.optimize.minor-min-files": "4",
                       "target-file-size": "8mb", "mergetree.query-log.retention": "3d",
                       "parquet.bloom.filter.enabled#name": "true",
                       # level 0 in LZ4, as on every primary-key table, written out for Java's writers too
                       "file.compression.per.level": "0:lz4"}
    assert t.options.codec_for(0) == "lz4" and t.options.codec_for(1) == "zstd"
    assert t.options.bloom_columns == ("name",) and t.options.target_file_size == 8 * 2**20
    rows = [{"id": i, "p": f"p{i % 2}", "name": f"n{i}", "cnt": i} for i in range(50)]
    first = t.write(pa.Table.from_pylist(rows, SCHEMA))
    assert first.id == 1 and t.latest_snapshot().id >= 1
    t.delete(pa.table({"id": pa.array([3], pa.int64()), "p": ["p1"]}))
    model = sorted((r for r in rows if r["id"] != 3), key=lambda r: (r["p"], r["id"]))

    def ordered(table: pa.Table) -> list[dict]:
        return sorted(table.select(SCHEMA.names).to_pylist(), key=lambda r: (r["p"], r["id"]))
    assert ordered(t.read()) == model
    assert ordered(pypaimon_read(wh, "db.t", tmp_path)) == model  # another engine reads it
    # the query log is on, as on every table mergetree makes
    t.read(filter=[("name", "=", "n7")])
    assert t.advise().queries == 2  # both reads
    # a table at a path of its own; refusals before anything is written
    at_path = Table.create(tmp_path / "plain", SCHEMA, buckets=-1)
    at_path.write(pa.Table.from_pylist(rows[:5], SCHEMA))
    assert at_path.read().num_rows == 5
    for kwargs, error in (({"options": {"bukcet-key": "id"}}, InvalidArgumentError),
                          ({"options": {"query-log.retention": "soon"}}, InvalidArgumentError),
                          ({"primary_key": "id", "partition_by": "p"}, InvalidArgumentError)):
        where = tmp_path / f"bad-{len(list(tmp_path.iterdir()))}"
        with pytest.raises(error):
            Table.create(where, SCHEMA, **kwargs)
        assert not where.exists() or not any(where.rglob("*"))


def test_table_create_checks_like_every_table_and_never_lands_on_anothers_files(tmp_path):
    from mergetree import Table, TableExistsError
    cases = [({"options": ["write-buffer-size"]}, InvalidArgumentError, "dict"),
             ({"partition_by": 5}, InvalidArgumentError, "partition_by"),
             ({"options": {"write-buffer-sise": "1 mb"}}, InvalidArgumentError, "did you mean 'write-buffer-size'"),
             ({"options": {"write-only": "yes"}}, InvalidArgumentError, "'true' or 'false'"),
             ({"merge_engine": "aggregate", "primary_key": "id", "options": {"fields.cnt.aggregate-function": "summ"}},
              InvalidArgumentError, "did you mean 'sum'"),
             ({"buckets": "2"}, InvalidArgumentError, "buckets")]
    for i, (kwargs, error, message) in enumerate(cases):
        where = tmp_path / f"bad{i}"
        with pytest.raises(error, match=message):
            Table.create(where, SCHEMA, **kwargs)
        assert not where.exists()
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(TableExistsError, match="already holds files"):
        Table.create(foreign, SCHEMA)
    assert [p.name for p in foreign.iterdir()] == ["notes.txt"]
    Table.create(tmp_path / "t", SCHEMA)
    with pytest.raises(TableExistsError, match="already"):
        Table.create(tmp_path / "t", SCHEMA)


def test_table_create_options_given_one_way_and_the_table_seen_fresh(tmp_path):
    from mergetree import Table
    # a list of columns is Java's comma-separated text; the arguments' options only as arguments
    t = Table.create(tmp_path / "t", SCHEMA, options={"file-index.bitmap.columns": ["p", "name"]})
    assert json.loads((tmp_path / "t" / "schema" / "schema-0").read_text())["options"][
        "file-index.bitmap.columns"] == "p,name"
    assert t.options.bitmap_columns == ("p", "name")
    for kwargs, message in (({"options": {"bucket": "8"}, "buckets": 2}, "argument buckets"),
                            ({"options": {"merge-engine": "first-row"}, "primary_key": "id"}, "argument merge_engine"),
                            ({"buckets": -1, "bucket_key": "id"}, "bucket key"),
                            ({"options": {"tag.automatic-creation": "process-time"}}, "tag.automatic-creation")):
        where = tmp_path / f"bad-{message.split()[-1]}"
        with pytest.raises((InvalidArgumentError, UnsupportedPaimonFeatureError), match=message):
            Table.create(where, SCHEMA, **kwargs)
        assert not where.exists() or not any(p.is_file() for p in where.rglob("*"))
    # a creator that died after making directories leaves nothing that blocks the next
    (tmp_path / "half" / "schema").mkdir(parents=True)
    Table.create(tmp_path / "half", SCHEMA).write(pa.Table.from_pylist(
        [{"id": 1, "p": "a", "name": "x", "cnt": 1}], SCHEMA))
    # what the handle says follows what its own calls changed
    t.write(pa.Table.from_pylist([{"id": i, "p": "a", "name": f"n{i}", "cnt": i} for i in range(20)], SCHEMA))
    t.optimize(order=["cnt"])
    assert t.options.clustering is not None and t.options.clustering.columns == ("cnt",)
    assert t.directory.options.clustering is not None
    agg = Table.create(tmp_path / "agg", SCHEMA, primary_key="id", merge_engine="aggregate",
                       options={"fields.cnt.aggregate-function": "sum"})
    agg.write(pa.Table.from_pylist([{"id": 1, "p": "a", "name": "x", "cnt": 5}], SCHEMA))
    with pytest.raises(InvalidArgumentError, match="aggregate table"):
        agg.delete({"id": [1]})
    assert agg.read().to_pylist()[0]["cnt"] == 5


def test_timestamps_of_another_zone_are_written_as_the_same_instants(tmp_path):
    from mergetree import SchemaMismatchError, Table
    schema = pa.schema([("id", pa.int64()), ("at", pa.timestamp("us", tz="UTC"))])
    t = Table.create(tmp_path / "t", schema, primary_key="id")
    paris = pa.array([dt.datetime(2024, 5, 4, 12, 0, tzinfo=dt.timezone.utc)], pa.timestamp("ms", tz="Europe/Paris"))
    t.write(pa.table({"id": [1], "at": paris}))
    assert t.read().column("at").to_pylist() == [dt.datetime(2024, 5, 4, 12, 0, tzinfo=dt.timezone.utc)]
    with pytest.raises(SchemaMismatchError, match="'at'"):  # a wall clock has no zone to guess
        t.write(pa.table({"id": [2], "at": pa.array([dt.datetime(2024, 5, 4, 12, 0)], pa.timestamp("ms"))}))


def test_a_first_row_table_with_an_input_changelog_java_refuses_is_still_read_and_can_be_fixed(tmp_path):
    """Java's SchemaValidation refuses `changelog-producer = input` with first-row: refused at
    create and by ALTER, but a table an older mergetree made with it still opens, reads and can
    be altered to a producer Java takes."""
    import json

    import mergetree as mt
    path = tmp_path / "t"
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    t = mt.Table.create(path, schema, primary_key="id", merge_engine="first-row")
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=schema))
    with pytest.raises(UnsupportedPaimonFeatureError, match="only 'none' and 'lookup' with the first-row"):
        t.set_options({"changelog-producer": "input"})
    document = json.loads((path / "schema" / "schema-0").read_text())
    document["options"]["changelog-producer"] = "input"  # as an older release could write it
    (path / "schema" / "schema-0").write_text(json.dumps(document))
    old = mt.Table.open(path)
    assert sorted(old.read().column("id").to_pylist()) == [1, 2]
    old.set_options({"changelog-producer": "lookup"})
    assert mt.Table.open(path).table_schema.paimon.options["changelog-producer"] == "lookup"
