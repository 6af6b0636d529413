"""`pk-clustering-override` tables (Paimon 1.4's primary-key clustering): the files above level 0
are sorted by the clustering columns instead of the key, all at level 1, read alone with their
deletion vectors; their manifest min/max key hold the clustering values, as Java's
`KeyValueClusteringFileWriter` records them.  Written, deleted from and compacted by mergetree,
read by mergetree, pypaimon, pypaimon-rust and Java (0.9, which reads them as deletion-vector
tables) against a model."""
from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from paimon_fixtures import PAIMON_PYTHON, _java_missing, java_read, pypaimon_read

from mergetree import InvalidArgumentError, Table, UnsupportedPaimonFeatureError
from mergetree.codec.binary_row import decode_row
from mergetree.table.paimon.metadata import PaimonTable

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("city", pa.string()), ("amount", pa.float64())])
CITIES = [f"city-{i:02d}" for i in range(40)]


def _create(path: Path, engine: str = "deduplicate", partitioned: bool = False, **extra) -> Table:
    """Such a table as Java 1.4's docs make it: deletion vectors on, but for first-row (which
    writes no key twice)."""
    key = ["id", "p"] if partitioned else ["id"]
    options = {"pk-clustering-override": True, "clustering.columns": "city", **extra}
    if engine != "first-row":
        options["deletion-vectors.enabled"] = True
    return Table.create(path, SCHEMA, primary_key=key, partition_by=["p"] if partitioned else None, buckets=2,
                        merge_engine=engine, options=options)


def _rows(rng: random.Random, n: int) -> list[dict]:
    out = {}
    for _ in range(n):
        k = rng.randrange(800)
        out[k] = {"id": k, "p": f"p{k % 2}", "city": rng.choice(CITIES), "amount": round(rng.random(), 6)}
    return list(out.values())  # one version of a key per write


def _sorted(rows) -> list[dict]:
    return sorted(({c: r[c] for c in SCHEMA.names} for r in rows), key=lambda r: (r["p"], r["id"]))


@pytest.mark.parametrize("engine, partitioned", [("deduplicate", False), ("deduplicate", True),
                                                 ("first-row", False)])
def test_writes_deletes_and_compactions_read_as_the_model_by_every_reader(tmp_path, engine, partitioned):
    wh = tmp_path / "wh"
    table = _create(wh / "db.db" / "t", engine, partitioned)
    rng = random.Random(engine + str(partitioned))
    model: dict = {}
    for turn in range(8):
        rows = _rows(rng, 250)
        table.write(pa.Table.from_pylist(rows, schema=SCHEMA))
        for r in rows:
            k = (r["p"], r["id"])
            if engine == "deduplicate" or k not in model:
                model[k] = r
        if engine == "deduplicate" and turn == 4:
            gone = sorted(model)[::7]
            table.delete(pa.Table.from_pylist([{"id": i, "p": p} for p, i in gone],
                                              schema=pa.schema([SCHEMA.field("id"), SCHEMA.field("p")])))
            for k in gone:
                del model[k]
        if turn == 6:
            table.compact(full=True)
        # level 0 is resolved after every write (deletion vectors): every read sees the model
        assert _sorted(Table.open(table.path).read().to_pylist()) == _sorted(model.values()), turn
    # a write of late cities only: its level-1 file's statistics rule it out for an early city
    late = [dict(r, city=rng.choice(CITIES[30:])) for r in _rows(rng, 100)]
    table.write(pa.Table.from_pylist(late, schema=SCHEMA))
    for r in late:
        k = (r["p"], r["id"])
        if engine == "deduplicate" or k not in model:
            model[k] = r
    expected = _sorted(model.values())
    assert _sorted(Table.open(table.path).read().to_pylist()) == expected
    files = Table.open(table.path).plan().files
    assert files and all(m.level == 1 and not m.key_ordered for m in files)
    # each file sorted by the clustering column, its manifest min/max key its first and last city
    opened = PaimonTable.open(wh, "db.t")
    string = [opened.schema().field("city").type]
    for f in opened.live_files(opened.latest_snapshot()):
        cities = pq.read_table(opened.full(f.name), columns=["city"]).column(0).to_pylist()
        assert cities == sorted(cities)
        record = f.record["_FILE"]
        assert decode_row(record["_MIN_KEY"], string, "key") == (cities[0],)
        assert decode_row(record["_MAX_KEY"], string, "key") == (cities[-1],)
        ids = pq.read_table(opened.full(f.name), columns=["id"]).column(0).to_pylist()
        assert f.key_stats[0][:2] == (min(ids), max(ids))  # the key's bounds are its statistics
    # point lookups (no page-index search through unsorted keys) and clustered skipping
    reader = Table.open(table.path)
    for p, i in list(model)[:15] + [("p0", 10_000)]:
        assert reader.read(filter=[("id", "=", i), ("p", "=", p)]).to_pylist() == \
            ([{c: model[(p, i)][c] for c in SCHEMA.names}] if (p, i) in model else [])
    city = reader.read(filter=[("city", "=", "city-07")])
    assert _sorted(city.to_pylist()) == _sorted(r for r in model.values() if r["city"] == "city-07")
    covering = [m for m in files if m.stats["city"][0] <= "city-07" <= m.stats["city"][1]]
    assert reader.last_read.files_read == len(covering) < reader.last_read.files_total
    top = reader.read(order_by=[("city", "desc"), ("id", "asc")], limit=7).to_pylist()
    by_id = sorted(expected, key=lambda r: r["id"])
    assert top == sorted(by_id, key=lambda r: r["city"], reverse=True)[:7]  # (a stable sort: ids ascending)
    # every level-1 file overlaps the others in key range: each is a run of its own
    assert reader.info().max_sorted_runs == max(sum(1 for m in files if m.file_name.startswith(prefix))
                                                for prefix in {m.file_name.rsplit("/", 1)[0] for m in files})
    # the change of one more write, as a stream reads it: its keys' new rows (first-row: new keys only)
    before = reader.latest_snapshot().id
    more = _rows(rng, 60)
    table.write(pa.Table.from_pylist(more, schema=SCHEMA))
    news = {(r["p"], r["id"]): r for r in more if engine == "deduplicate" or (r["p"], r["id"]) not in model}
    changed = Table.open(table.path).changes(before).read_all().to_pylist()
    assert {(r["p"], r["id"]) for r in changed if r["_row_kind"] in ("+I", "+U")} == set(news)
    model.update(news)
    expected = _sorted(model.values())
    Table.open(table.path).optimize()  # a primary-key table's optimize: a full compaction, clustered
    assert _sorted(Table.open(table.path).read().to_pylist()) == expected
    work = tmp_path / "work"
    work.mkdir()
    if os.path.exists(PAIMON_PYTHON):
        assert _sorted(pypaimon_read(wh, "db.t", work).to_pylist()) == expected
    try:
        from pypaimon_rust.datafusion import PaimonCatalog
    except ImportError:
        pass
    else:
        rust = PaimonCatalog({"warehouse": str(wh)}).get_table(("db", "t"))
        builder = rust.new_read_builder()
        got = pa.Table.from_batches(builder.new_read().read(builder.new_scan().plan().splits()))
        assert _sorted(got.to_pylist()) == expected
    if _java_missing() is None and engine == "deduplicate":
        # Java 0.9 knows no clustering and reads a deletion-vector table (a first-row table's
        # overlapping level-1 files it would merge by their clustering bounds: Java 1.4+ reads those)
        assert _sorted(java_read(wh, "db.t", work).to_pylist()) == expected


def test_the_options_are_checked_as_java_checks_them_and_fixed_at_create(tmp_path):
    base = {"pk-clustering-override": True, "clustering.columns": "city", "deletion-vectors.enabled": True}
    cases = [
        ({**base, "clustering.columns": None}, "clustering.columns"),
        ({k: v for k, v in base.items() if k != "deletion-vectors.enabled"}, "deletion-vectors.enabled"),
        ({**base, "clustering.columns": "nope"}, "nope"),
        ({**base, "sequence.field": "amount"}, "sequence.field"),
        ({**base, "deletion-vectors.merge-on-read": True}, "merge-on-read"),
        ({**base, "changelog-producer": "lookup"}, "changelog"),
    ]
    for i, (options, named) in enumerate(cases):
        options = {k: v for k, v in options.items() if v is not None}
        with pytest.raises((UnsupportedPaimonFeatureError, InvalidArgumentError), match=named):
            Table.create(tmp_path / f"t{i}", SCHEMA, primary_key="id", buckets=1, options=options)
        assert not (tmp_path / f"t{i}" / "schema").exists()
    with pytest.raises(UnsupportedPaimonFeatureError, match="deduplicate and first-row"):
        Table.create(tmp_path / "pu", SCHEMA, primary_key="id", merge_engine="partial-update", options=base)
    table = _create(tmp_path / "ok")
    schema = json.loads((tmp_path / "ok" / "schema" / "schema-0").read_text())["options"]
    assert schema["pk-clustering-override"] == "true" and schema["clustering.columns"] == "city"
    table.write(pa.Table.from_pylist(_rows(random.Random(3), 50), schema=SCHEMA))
    for change in ({"clustering.columns": "amount"}, {"pk-clustering-override": False}):
        with pytest.raises(UnsupportedPaimonFeatureError):
            table.set_options(change)
    assert json.loads((tmp_path / "ok" / "schema" / "schema-0").read_text())["options"] == schema


@pytest.mark.parametrize("engine", ["deduplicate", "first-row"])
def test_spark_reads_a_clustered_table_whole_and_split(tmp_path, spark, engine):
    """Spark's tasks read a clustered table's buckets (a file a task where they are resolved),
    also with buckets larger than a task's split and with a pushed filter."""
    import mergetree.spark
    wh = tmp_path / "wh"
    table = _create(wh / "db.db" / "t", engine)
    rng = random.Random(21)
    model: dict = {}
    for _ in range(4):
        rows = _rows(rng, 300)
        table.write(pa.Table.from_pylist(rows, schema=SCHEMA))
        for r in rows:
            if engine == "deduplicate" or (r["p"], r["id"]) not in model:
                model[(r["p"], r["id"])] = r
    mergetree.spark.register(spark)

    def load(**options):
        reader = spark.read.format("mergetree").option("paimon.warehouse", str(wh)).option("pushFilters", "true")
        for k, v in options.items():
            reader = reader.option(k, v)
        return reader.load("db.t")
    expected = _sorted(model.values())
    assert _sorted(load().toArrow().to_pylist()) == expected
    assert _sorted(load(splitSize="1 kb").toArrow().to_pylist()) == expected
    assert _sorted(load().where("city = 'city-03' and id > 100").toArrow().to_pylist()) == \
        _sorted(r for r in model.values() if r["city"] == "city-03" and r["id"] > 100)
