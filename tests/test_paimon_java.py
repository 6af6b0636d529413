"""Tables mergetree makes, checked against Apache Paimon's own Java code (0.9.0, the bundle in
pypaimon 0.2.0's jar, driven over py4j: paimon_fixtures.java_*): Java reads what mergetree
wrote, writes into it, compacts it, expires its snapshots and cleans its orphans, and every
reader sees the rows of a model after every step."""
from __future__ import annotations

import datetime as dt
import decimal
import os
import random
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from paimon_fixtures import java_compact, java_expire, java_orphans, java_read, java_write, needs_java_paimon

from mergetree import Table
from mergetree.table.workload import querylog

pytestmark = needs_java_paimon

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("name", pa.string()), ("cnt", pa.int64()),
                    ("amount", pa.decimal128(10, 2)), ("at", pa.timestamp("us"))])


def _rows(rng: random.Random, n: int, keys: int = 60) -> list[dict]:
    out = []
    for _ in range(n):
        k = rng.randrange(keys)
        out.append({"id": k, "p": f"p{k % 3}", "name": rng.choice([None, f"n{rng.randrange(100)}"]),
                    "cnt": rng.randrange(10), "amount": decimal.Decimal(rng.randrange(10**6)) / 100,
                    "at": dt.datetime(2024, 5, 1) + dt.timedelta(microseconds=rng.randrange(10**12))})
    return out


def _fold(state: dict, rows: list[dict], engine: str, key: tuple[str, ...]) -> None:
    """The model: each row applied in order under the table's merge engine."""
    for row in rows:
        k = tuple(row[c] for c in key)
        old = state.get(k)
        if engine == "none":  # an append table keeps every row
            state[(*k, len(state))] = dict(row)
        elif old is None or engine == "deduplicate":
            state[k] = dict(row)
        elif engine == "partial-update":
            state[k] = {c: (v if v is not None else old[c]) for c, v in row.items()}
        elif engine == "aggregate":  # cnt summed; the others Paimon's default, last non-null
            state[k] = {**{c: (v if v is not None else old[c]) for c, v in row.items()},
                        "cnt": old["cnt"] + row["cnt"]}
        # first-row keeps the first


def _sorted(rows) -> list[dict]:
    return sorted(({c: r[c] for c in SCHEMA.names} for r in rows),
                  key=lambda r: (r["p"], r["id"], r["cnt"], r["name"] or "", r["amount"], r["at"]))


def _table(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=SCHEMA)


KINDS = {
    # name: (Table.create arguments, merge engine in the model, whether level 0 is hidden from batch reads)
    "deduplicate": (dict(primary_key=["id"], buckets=4), "deduplicate", False),
    "partitioned-dv": (dict(primary_key=["id", "p"], partition_by=["p"], buckets=2,
                            options={"deletion-vectors.enabled": True}), "deduplicate", True),
    "partial-update": (dict(primary_key=["id"], buckets=2, merge_engine="partial-update"), "partial-update", False),
    "aggregate": (dict(primary_key=["id"], buckets=2, merge_engine="aggregate",
                       options={"fields.cnt.aggregate-function": "sum"}), "aggregate", False),
    "first-row": (dict(primary_key=["id"], buckets=1, merge_engine="first-row"), "first-row", True),
    "append": (dict(partition_by=["p"]), "none", False),
    "append-bucketed": (dict(buckets=3, bucket_key=["id"]), "none", False),
}


@pytest.mark.parametrize("kind", list(KINDS))
def test_java_reads_writes_and_compacts_every_kind_of_table_mergetree_makes(tmp_path: Path, kind: str):
    """mergetree and Java take turns on one table — mergetree's writes, deletes and compactions,
    Java's writes and full compactions — and after every turn Java's read and mergetree's equal
    the model (where level 0 is hidden from batch reads, after a compaction)."""
    args, engine, hidden = KINDS[kind]
    wh, work, name = tmp_path / "wh", tmp_path / "work", "db.t"
    table = Table.create(wh / "db.db" / "t", SCHEMA, **args)
    key = tuple(args.get("primary_key") or ("id",))
    rng = random.Random(kind)
    state: dict = {}
    turns = ["mergetree", "java", "mergetree-delete", "mergetree-compact", "java", "java-compact", "mergetree"]
    for turn, who in enumerate(turns):
        if who in ("mergetree", "java"):
            rows = _rows(rng, 80)
            if engine != "deduplicate" and engine != "none":
                rows = list({tuple(r[c] for c in key): r for r in rows}.values())  # a version per key a commit
            if who == "mergetree":
                table.write(_table(rows))
            else:
                java_write(wh, name, work, _table(rows))
            _fold(state, rows, engine, key)
        elif who == "mergetree-delete":
            if engine != "deduplicate":
                continue
            gone = [k for i, k in enumerate(sorted(state)) if i % 4 == 0]
            table.delete(pa.Table.from_pylist([dict(zip(key, k)) for k in gone],
                                              schema=pa.schema([SCHEMA.field(c) for c in key])))
            for k in gone:
                del state[k]
        elif who == "mergetree-compact":
            if engine != "none":  # an append table's files are merged by optimize's minor tier
                table.compact(full=True)
        else:
            java_compact(wh, name)
        if hidden and who in ("mergetree", "mergetree-delete", "java"):
            table.compact(full=True)  # level 0 becomes visible to batch reads by compaction
        expected = _sorted(state.values())
        assert _sorted(Table.open(wh / "db.db" / "t").read().to_pylist()) == expected, (turn, who)
        assert _sorted(java_read(wh, name, work).to_pylist()) == expected, (turn, who)


def test_java_reads_every_type_mergetree_writes_and_mergetree_reads_javas(tmp_path: Path):
    """Every type family a Paimon table stores, nulls and nested values included, written by
    mergetree and read by Java value for value — and the same rows written by Java, compacted
    by Java, read by mergetree.  (Decimals of precision up to 18 are Parquet integers, as Java
    writes them: Java 0.9 cannot decode a dictionary-encoded fixed-length decimal of that size.)"""
    schema = pa.schema([
        ("id", pa.int64()), ("s", pa.string()), ("b", pa.bool_()), ("i8", pa.int8()), ("i16", pa.int16()),
        ("i32", pa.int32()), ("f32", pa.float32()), ("f64", pa.float64()), ("d", pa.date32()),
        ("ts", pa.timestamp("us")), ("tsz", pa.timestamp("us", tz="UTC")), ("tsm", pa.timestamp("ms")),
        ("dec", pa.decimal128(10, 2)), ("dec5", pa.decimal128(5, 1)), ("dec18", pa.decimal128(18, 3)),
        ("dec30", pa.decimal128(30, 4)), ("bin", pa.binary()), ("tags", pa.list_(pa.string())),
        ("st", pa.struct([("a", pa.int32()), ("b", pa.string())])), ("m", pa.map_(pa.string(), pa.int64()))])
    n = 300
    ids = np.arange(n)
    rng = np.random.default_rng(3)
    data = pa.table({
        "id": ids, "s": [f"s{i % 17}" if i % 5 else None for i in ids], "b": [bool(i % 2) for i in ids],
        "i8": pa.array(ids % 100, pa.int8()), "i16": pa.array(ids * 7, pa.int16()),
        "i32": pa.array(rng.integers(-2**31, 2**31 - 1, n), pa.int32()),
        "f32": pa.array(ids * 0.25, pa.float32()), "f64": rng.normal(size=n),
        "d": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=int(i)) for i in ids], pa.date32()),
        "ts": pa.array([dt.datetime(2024, 1, 1, 1, 2, 3, int(i)) for i in ids], pa.timestamp("us")),
        "tsz": pa.array([dt.datetime(2024, 1, 1, 1, 2, 3, int(i), tzinfo=dt.timezone.utc) for i in ids],
                        pa.timestamp("us", tz="UTC")),
        "tsm": pa.array([dt.datetime(2024, 1, 1, 1, 2, 3, int(i) * 1000) for i in ids], pa.timestamp("ms")),
        # few distinct values, so that pyarrow's dictionary encoding is on for them
        "dec": pa.array([decimal.Decimal(int(i % 7)) / 100 for i in ids], pa.decimal128(10, 2)),
        "dec5": pa.array([decimal.Decimal(int(i % 9)) / 10 if i % 6 else None for i in ids], pa.decimal128(5, 1)),
        "dec18": pa.array([decimal.Decimal(int(i) * 10**12 + 1) / 1000 for i in ids], pa.decimal128(18, 3)),
        "dec30": pa.array([decimal.Decimal(int(i % 4) * 10**20) / 10000 for i in ids], pa.decimal128(30, 4)),
        "bin": [bytes([i % 256]) * 3 for i in ids], "tags": [[f"x{i}"] * (i % 3) if i % 4 else None for i in ids],
        "st": [{"a": int(i), "b": f"b{i}"} if i % 3 else None for i in ids],
        "m": [[(f"k{i}", int(i))] if i % 2 else None for i in ids]}, schema=schema)
    wh, work = tmp_path / "wh", tmp_path / "work"
    ours = Table.create(wh / "db.db" / "ours", schema, primary_key=["id"], buckets=2)
    ours.write(data)
    expected = ours.read().sort_by("id")
    assert expected.equals(data.cast(expected.schema))
    got = java_read(wh, "db.ours", work).sort_by("id")
    for column in schema.names:
        assert got.column(column).to_pylist() == expected.column(column).to_pylist(), column

    theirs = Table.create(wh / "db.db" / "theirs", schema, primary_key=["id"], buckets=2)
    java_write(wh, "db.theirs", work, data.slice(0, 150))
    java_write(wh, "db.theirs", work, data.slice(100))
    java_compact(wh, "db.theirs")
    read = Table.open(wh / "db.db" / "theirs").read().sort_by("id")
    for column in schema.names:
        assert read.column(column).to_pylist() == expected.column(column).to_pylist(), column
    del theirs


def test_javas_file_indexes_and_statistics_prune_what_mergetree_wrote_without_changing_answers(tmp_path: Path):
    """Java plans a filtered read with the statistics and file indexes (bitmap and Bloom, as
    Paimon's `file-index.*` options name them) of the files mergetree wrote: a wrong index or
    bound would drop rows, so each answer is compared with the model's."""
    wh, work = tmp_path / "wh", tmp_path / "work"
    table = Table.create(wh / "db.db" / "t", SCHEMA, partition_by=["p"], options={
        "file-index.bitmap.columns": "name", "file-index.bloom-filter.columns": "cnt",
        "parquet.bloom.filter.enabled#id": True})
    rng = random.Random(11)
    state: dict = {}
    for _ in range(6):
        rows = _rows(rng, 200, keys=10_000)
        table.write(_table(rows))
        _fold(state, rows, "none", ("id",))
    rows = list(state.values())
    probes = [{"name": rows[0]["name"] or "n1"}, {"cnt": 3}, {"id": rows[5]["id"]}, {"id": -1},
              {"name": "nobody"}, {"p": "p1", "cnt": 7}, {"name": "n7", "id": rows[7]["id"]}]
    for equal in probes:
        expected = _sorted(r for r in rows if all(r[c] == v for c, v in equal.items()))
        assert _sorted(java_read(wh, "db.t", work, equal=equal).to_pylist()) == expected, equal
        filter = [(c, "=", v) for c, v in equal.items()]
        assert _sorted(table.read(filter=filter).to_pylist()) == expected, equal


def test_javas_orphan_cleaning_keeps_side_data_and_javas_compaction_and_expiry_drop_it(tmp_path: Path):
    """A pre-aggregate and a file index are extra files of their data file: Java's orphan
    cleaning keeps them, as it keeps the query log beside the table; Java's compaction replaces
    their file and its expiry deletes them with it; mergetree's answers never change, and it
    builds the missing pre-aggregates again."""
    wh, work = tmp_path / "wh", tmp_path / "work"
    path = wh / "db.db" / "t"
    table = Table.create(path, SCHEMA, primary_key=["id"], buckets=2, options={
        "file-index.bloom-filter.columns": "name", "file-index.in-manifest-threshold": "1b",
        "query-log.enabled": True})
    rng = random.Random(5)
    state: dict = {}
    for _ in range(3):
        rows = _rows(rng, 100)
        table.write(_table(rows))
        _fold(state, rows, "deduplicate", ("id",))
    table.compact(full=True)
    table.add_aggregate("by_p", "p", {"cnt": "sum", "*": "count"})
    model: dict = {}

    def remodel() -> None:
        model.clear()
        for r in state.values():
            total, count = model.get(r["p"], (0, 0))
            model[r["p"]] = (total + r["cnt"], count + 1)

    remodel()

    def aggregate_matches() -> int:
        """The aggregate's answer is the model's; how many files it took from pre-aggregates."""
        reader = Table.open(path)
        got = reader.aggregate("p", {"cnt": "sum", "*": "count"}).to_pylist()
        assert {r["p"]: (r["cnt_sum"], r["rows_count"]) for r in got} == model
        return reader.last_read.used_preaggregates

    extra = sorted(p.name for p in path.rglob("*") if ".agg-" in p.name or p.name.endswith(".index"))
    assert any(".agg-" in n for n in extra) and any(n.endswith(".index") for n in extra)
    table.read(filter=[("id", "=", 1)])  # a logged read
    querylog.flush()
    logged = sorted(p.relative_to(path) for p in (path / querylog.QUERY_LOG_DIR).rglob("*") if p.is_file())
    assert logged
    assert java_orphans(wh, "db.t") == []  # nothing of mergetree's is an orphan to Java
    assert sorted(p.name for p in path.rglob("*") if ".agg-" in p.name or p.name.endswith(".index")) == extra
    assert sorted(p.relative_to(path) for p in (path / querylog.QUERY_LOG_DIR).rglob("*") if p.is_file()) == logged
    assert aggregate_matches() > 0

    rows = _rows(rng, 100)
    table.write(_table(rows))  # level 0 in every bucket: Java's full compaction rewrites them all
    _fold(state, rows, "deduplicate", ("id",))
    remodel()
    java_compact(wh, "db.t")  # the new files have no pre-aggregate
    assert aggregate_matches() == 0
    java_expire(wh, "db.t", 1)
    left = {p.name for p in path.rglob("*") if ".agg-" in p.name}
    assert not left & {n for n in extra if ".agg-" in n}  # deleted with their data files
    assert _sorted(java_read(wh, "db.t", work).to_pylist()) == _sorted(state.values())
    Table.open(path).build_indexes()
    assert aggregate_matches() > 0


def test_java_reader_version_chooses_the_encodings_files_may_use(tmp_path: Path):
    """By default a table's files keep to what Java 0.9 decodes (no delta encodings, version-1
    bitmaps: Java 0.9 reads them, as the tests above show); `java-reader-version` 1.2 lets
    them use delta-encoded keys and version-2 bitmaps, which mergetree and pypaimon read the
    same; the option is checked, and refused on a table of mergetree's own format."""
    import pyarrow.parquet as pq
    from paimon_fixtures import PAIMON_PYTHON, pypaimon_read

    from mergetree import InvalidArgumentError
    from mergetree.codec import file_index as fi
    from mergetree.table.paimon.metadata import PaimonTable

    rng = random.Random(2)
    rows = list({r["id"]: r for r in _rows(rng, 300, keys=1000)}.values())
    (tmp_path / "work").mkdir()
    encodings, bitmaps = {}, {}
    for version in (None, "1.2"):
        wh = tmp_path / f"wh-{version}"
        options = {"file-index.bitmap.columns": "p", "file-index.in-manifest-threshold": "10mb"}
        if version:
            options["java-reader-version"] = version
        table = Table.create(wh / "db.db" / "t", SCHEMA, primary_key=["id"], buckets=1, options=options)
        table.write(_table(rows))
        [meta] = table.plan().files
        column = pq.ParquetFile(wh / "db.db" / "t" / meta.file_name).metadata.row_group(0).column(0)
        encodings[version] = set(column.encodings)
        opened = PaimonTable.open(wh, "db.t")
        [live] = opened.live_files(opened.latest_snapshot())
        blob = fi.decode_container(live.record["_FILE"]["_EMBEDDED_FILE_INDEX"])
        bitmaps[version] = blob["p"]["bitmap"][0]  # the body's first byte is its version
        assert _sorted(Table.open(wh / "db.db" / "t").read().to_pylist()) == _sorted(rows)
        if os.path.exists(PAIMON_PYTHON):
            assert _sorted(pypaimon_read(wh, "db.t", tmp_path / "work").to_pylist()) == _sorted(rows)
    assert "DELTA_BINARY_PACKED" not in encodings[None] and "DELTA_BINARY_PACKED" in encodings["1.2"]
    assert (bitmaps[None], bitmaps["1.2"]) == (1, 2)
    assert _sorted(java_read(tmp_path / "wh-None", "db.t", tmp_path / "work").to_pylist()) == _sorted(rows)
    for bad in ("0.8", "one", "2"):
        with pytest.raises(InvalidArgumentError, match="java-reader-version"):
            Table.create(tmp_path / f"bad-{bad}", SCHEMA, primary_key=["id"], options={"java-reader-version": bad})


def test_java_reads_what_the_optimizer_laid_out(tmp_path: Path):
    """The organize loop's rewrites are Paimon's too: an append table laid out by `optimize`
    (files at the top level, the in-file sort in the footer, bitmaps in the file index) and a
    deletion-vector primary-key table compacted by it read in Java as the model says, Java's
    filtered reads pruning by what the layout wrote."""
    wh, work = tmp_path / "wh", tmp_path / "work"
    rng = random.Random(9)
    events = Table.create(wh / "db.db" / "events", SCHEMA, partition_by=["p"], options={
        "target-file-size": "32kb", "file-index.bitmap.columns": "name"})
    state: list[dict] = []
    for _ in range(5):
        rows = _rows(rng, 400, keys=50_000)
        events.write(_table(rows))
        state += rows
    events.optimize(order=["cnt", "id"], strategy="zorder")
    events = Table.open(wh / "db.db" / "events")
    assert all(m.level > 0 for m in events.plan().files)
    assert _sorted(java_read(wh, "db.events", work).to_pylist()) == _sorted(state)
    assert _sorted(java_read(wh, "db.events", work, equal={"cnt": 4}).to_pylist()) == \
        _sorted(r for r in state if r["cnt"] == 4)
    orders = Table.create(wh / "db.db" / "orders", SCHEMA, primary_key=["id"], buckets=2,
                          options={"deletion-vectors.enabled": True})
    model: dict = {}
    for _ in range(4):
        rows = _rows(rng, 200)
        orders.write(_table(rows))
        _fold(model, rows, "deduplicate", ("id",))
    orders.optimize()
    assert _sorted(java_read(wh, "db.orders", work).to_pylist()) == _sorted(model.values())
