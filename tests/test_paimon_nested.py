"""Nested value types (ROW, ARRAY, MAP, an ARRAY of ROWs) in Paimon tables written by pypaimon:
read, filtered and projected, compacted (value statistics for the atomic columns only, as
`_VALUE_STATS_COLS` lists them: Java keeps none for nested columns) and read back by pypaimon,
evolved (a nested field renamed, added and widened by pypaimon's ALTER) — each against a
row-by-row model; then through Spark's types.  MULTISET, which neither Python writer
produces, is checked from its schema JSON (Paimon stores it as a map of element to count)."""
from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pytest
from paimon_fixtures import needs_pypaimon, pypaimon_read, write_paimon

import mergetree.paimon as mp
from mergetree.codec.binary_row import decode_row
from mergetree.codec.types import parse_type
from mergetree.table.paimon.metadata import PaimonTable

ROW = pa.struct([("x", pa.int32()), ("y", pa.string())])
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("r", ROW), ("arr", pa.list_(pa.int32())),
                    ("m", pa.map_(pa.string(), pa.int64())), ("ar", pa.list_(pa.struct([("p", pa.float64())]))),
                    ("v", pa.string()), ("op", pa.string())])


def _commits(seed: int, count: int, keys: int, deletes: bool) -> list[pa.Table]:
    rng = random.Random(seed)

    def maybe(value):
        return None if rng.random() < 0.2 else value
    out = []
    for c in range(count):
        ids = rng.sample(range(keys), rng.randint(1, keys // 2))
        out.append(pa.Table.from_pylist([{
            "id": i,
            "r": maybe({"x": maybe(rng.randint(-9, 9)), "y": maybe(f"y{c}")}),
            "arr": maybe([maybe(rng.randint(0, 99)) for _ in range(rng.randint(0, 4))]),
            "m": maybe([(f"k{j}", maybe(rng.randint(0, 9))) for j in range(rng.randint(0, 3))]),
            "ar": maybe([{"p": maybe(rng.random())} for _ in range(rng.randint(0, 2))]),
            "v": maybe(f"v{c}-{rng.randint(0, 3)}"),
            "op": "-D" if deletes and c and rng.random() < 0.2 else "+I"} for i in ids], schema=SCHEMA))
    return out


def model(engine: str, commits: list[pa.Table]) -> list[dict]:
    state: dict[int, dict] = {}
    for commit in commits:
        for row in commit.to_pylist():
            if engine == "partial-update":
                old = state.get(row["id"], {})
                state[row["id"]] = {c: row[c] if row[c] is not None else old.get(c) for c in row}
            elif row["op"] == "-D":
                state.pop(row["id"], None)
            else:
                state[row["id"]] = row
    return _plain(list(state.values()))


def _plain(records: list[dict]) -> list[dict]:
    """Rows sorted by id, maps as lists of pairs (how to_pylist gives them either way)."""
    return sorted(({k: (list(map(tuple, v)) if k == "m" and v is not None else v) for k, v in r.items()}
                   for r in records), key=lambda r: r["id"])


def _read(table: pa.Table) -> list[dict]:
    return _plain(table.to_pylist())


CASES = [("deduplicate", True), ("partial-update", False)]


@needs_pypaimon
@pytest.mark.parametrize(("engine", "deletes"), CASES, ids=[c[0] for c in CASES])
def test_nested_columns_read_compact_and_read_back(tmp_path: Path, engine: str, deletes: bool) -> None:
    wh, work, name = tmp_path / "wh", tmp_path / "work", "db.n"
    options = {"bucket": "2", "merge-engine": engine}
    if deletes:
        options["rowkind.field"] = "op"
    commits = _commits(5 + deletes, 4, 40, deletes)
    write_paimon(work, wh, name, commits, ["id"], [], options)
    expected = model(engine, commits)
    ours = mp.read(str(wh), name)
    assert ours.schema.field("m").type == pa.map_(pa.string(), pa.int64())
    assert _read(ours) == expected
    got = mp.read(str(wh), name, columns=["id", "ar", "m"], filter=[("v", "is not null"), ("id", "<", 30)])
    assert _read(got) == [{"id": r["id"], "ar": r["ar"], "m": r["m"]} for r in expected
                          if r["v"] is not None and r["id"] < 30]

    assert mp.compact(str(wh), name, full=True) is not None
    t = PaimonTable.open(str(wh), name)
    schema = t.schema()
    for f in t.live_files(t.resolve(None)):
        meta = f.record["_FILE"]
        cols = list(meta["_VALUE_STATS_COLS"])
        assert cols == ["id", "v", "op"]  # atomic columns only, in schema order
        stats = meta["_VALUE_STATS"]
        lo = decode_row(stats["_MIN_VALUES"], [schema.field(c).type for c in cols], "stat")
        assert len(lo) == len(stats["_NULL_COUNTS"]) == 3
    assert _read(mp.read(str(wh), name)) == expected
    assert _read(pypaimon_read(wh, name, work)) == expected  # pypaimon reads what compaction wrote
    if engine != "deduplicate":
        return
    more = _commits(77, 2, 60, deletes)
    write_paimon(work, wh, name, more, ["id"], [], options)
    expected = model(engine, commits + more)
    mp.compact(str(wh), name)
    assert _read(mp.read(str(wh), name)) == expected
    assert _read(pypaimon_read(wh, name, work)) == expected


@needs_pypaimon
@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_nested_fields_evolve_by_id_through_compaction(tmp_path: Path, fmt: str) -> None:
    """ALTER on nested fields (r.y renamed to w, r.z added, r.x widened INT -> BIGINT) between
    commits; old and new files merged, compacted together, read back by pypaimon."""
    wh, work, name = tmp_path / "wh", tmp_path / "work", "db.n"
    first = _commits(11, 3, 30, False)
    write_paimon(work, wh, name, first, ["id"], [], {"bucket": "1", "file.format": fmt})
    row2 = pa.struct([("x", pa.int64()), ("w", pa.string()), ("z", pa.int32())])
    schema2 = pa.schema([pa.field("r", row2) if f.name == "r" else f for f in SCHEMA])
    second = [pa.Table.from_pylist([dict(r, r=None if r["r"] is None else {"x": r["r"]["x"], "w": r["r"]["y"],
                                                                            "z": 7}) for r in c.to_pylist()],
                                   schema=schema2) for c in _commits(12, 2, 30, False)]
    write_paimon(work, wh, name, second, ["id"], [], {"bucket": "1", "file.format": fmt},
                 alter=[["rename_column", ["r", "y"], "w"], ["add_column", ["r", "z"], "INT"], "commit",
                        ["update_column_type", ["r", "x"], "BIGINT"]])
    assert PaimonTable.open(str(wh), name).schema().id == 2
    state = {}
    for c in first:
        for r in c.to_pylist():
            state[r["id"]] = dict(r, r=None if r["r"] is None else {"x": r["r"]["x"], "w": r["r"]["y"], "z": None})
    for c in second:
        for r in c.to_pylist():
            state[r["id"]] = r
    expected = _plain(list(state.values()))
    assert _read(mp.read(str(wh), name)) == expected
    assert _read(pypaimon_read(wh, name, work)) == expected
    assert mp.compact(str(wh), name, full=True) is not None
    live = PaimonTable.open(str(wh), name).live_files(PaimonTable.open(str(wh), name).resolve(None))
    assert {f.schema_id for f in live} == {2} and all(f.file_name.endswith(f".{fmt}") for f in live)
    assert _read(mp.read(str(wh), name)) == expected
    assert _read(pypaimon_read(wh, name, work)) == expected


def test_multiset_and_nested_types_map_to_arrow_and_spark() -> None:
    multiset = parse_type({"type": "MULTISET", "element": "STRING"})
    assert multiset.arrow == pa.map_(pa.string(), pa.field("value", pa.int32(), nullable=False))
    nested = parse_type({"type": "ROW NOT NULL", "fields": [
        {"id": 1, "name": "a", "type": {"type": "ARRAY", "element": "DECIMAL(5, 2)"}},
        {"id": 2, "name": "b", "type": {"type": "MAP", "key": "INT NOT NULL", "value": {"type": "MULTISET",
                                                                                    "element": "DATE"}}}]})
    assert not nested.nullable and nested.fields[1].type.value is not None
    pytest.importorskip("pyspark")  # the Spark type strings need mergetree.spark (the wheel check has no pyspark)
    from mergetree.spark.types import spark_ddl
    assert spark_ddl(pa.schema([pa.field("s", nested.arrow), pa.field("ms", multiset.arrow)])) == \
        "`s` struct<`a`:array<decimal(5,2)>,`b`:map<int,map<date,int>>>, `ms` map<string,int>"
    with pytest.raises(Exception, match="twice"):
        parse_type({"type": "ROW", "fields": [{"id": 1, "name": "a", "type": "INT"},
                                              {"id": 2, "name": "a", "type": "INT"}]})


@needs_pypaimon
def test_nested_paimon_table_through_spark(spark, tmp_path: Path) -> None:
    import mergetree.spark
    wh, work, name = tmp_path / "wh", tmp_path / "work", "db.n"
    commits = _commits(3, 2, 20, True)
    write_paimon(work, wh, name, commits, ["id"], [], {"bucket": "2", "rowkind.field": "op"})
    mergetree.spark.register(spark)
    df = spark.read.format("mergetree").option("paimon.warehouse", str(wh)).load(name)
    assert dict(df.dtypes)["m"] == "map<string,bigint>" and dict(df.dtypes)["ar"] == "array<struct<p:double>>"
    assert _read(df.toArrow()) == model("deduplicate", commits)
    picked = df.where("id < 20").select("id", "r.x", "arr")
    want = [{"id": r["id"], "x": None if r["r"] is None else r["r"]["x"], "arr": r["arr"]}
            for r in model("deduplicate", commits) if r["id"] < 20]
    assert sorted(picked.toArrow().to_pylist(), key=lambda r: r["id"]) == want
