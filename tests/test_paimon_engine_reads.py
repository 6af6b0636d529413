"""Paimon tables read by the one engine (issue 36): `Table.open` on a Paimon table plans and reads
with `table/read` over `table/paimon/store.py` — the same plan, explain, point lookups, Top-N and
pruning steps as mergetree's own tables — and every answer equals a filtered full read (a layout
or index only ever skips work).  The tables are Java's (`tests/data/java_paimon*`) and
pypaimon's, with page indexes and without."""
from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from paimon_fixtures import needs_pypaimon, write_paimon

from mergetree import Table
from mergetree.table import filters as flt
from mergetree.table.paimon.metadata import PaimonTable

JAVA = Path(__file__).resolve().parent / "data" / "java_paimon"
JAVA_INDEX = Path(__file__).resolve().parent / "data" / "java_paimon_file_index"
# (the tables with external paths name /tmp/external: tests/test_paimon_external_paths.py places them)
JAVA_TABLES = sorted(p.parent for p in JAVA.rglob("schema") if p.is_dir() and "with_external" not in p.parent.name)


def _sorted(table: pa.Table) -> list[dict]:
    return sorted(table.to_pylist(), key=repr)


def _filtered(whole: pa.Table, f: object) -> pa.Table:
    expression = flt.to_expression(flt.normalize(f, whole.schema), whole.schema)
    return whole.filter(expression) if expression is not None else whole


def _key_columns(t: Table) -> list[str]:
    return list(t.directory.schema.primary_key) + list(t.directory.schema.partition_by)


@pytest.mark.parametrize("path", JAVA_TABLES, ids=lambda p: f"{p.parents[1].name}/{p.name}")
def test_every_key_of_a_java_table_looks_up_as_the_filtered_full_read(path: Path) -> None:
    """Each key (every key column fixed, partition columns too) read alone equals the full read
    filtered to it; a key never written reads nothing; Parquet files are searched by their page
    index where they have one, other files by the merge read, with the same answer."""
    t = Table.open(str(path))
    whole = t.read()
    keys = _key_columns(t)
    if not keys or not whole.num_rows:
        pytest.skip("an append table or an empty one: no key to look up")
    probes = {tuple(r[k] for k in keys) for r in whole.select(keys).to_pylist()}
    for probe in sorted(probes, key=repr)[:12]:
        f = [(k, "=", v) for k, v in zip(keys, probe)]
        got = t.read(filter=f)
        assert _sorted(got) == _sorted(_filtered(whole, f)), probe
    first = whole.column(keys[0]).type
    if pa.types.is_integer(first):
        assert t.read(filter=[(keys[0], "=", 10**9)] + [(k, "=", v) for k, v in zip(keys[1:], probe[1:])]).num_rows == 0


@pytest.mark.parametrize("path", JAVA_TABLES, ids=lambda p: f"{p.parents[1].name}/{p.name}")
def test_plan_top_n_and_projections_of_a_java_table(path: Path) -> None:
    """`plan()` lists the files a read touches and what each step removed; Top-N by every
    orderable column equals sorting the full read; a projection equals the full read's columns."""
    t = Table.open(str(path))
    whole = t.read()
    plan = t.plan()
    assert plan.files_total >= len(plan.files) and plan.explain()[-2][0] == "to read"
    for column in whole.column_names:
        dtype = whole.schema.field(column).type
        if pa.types.is_nested(dtype):
            continue
        assert _sorted(t.read(columns=[column])) == _sorted(whole.select([column]))
        for direction in ("asc", "desc"):  # nulls last either way, as pyarrow's sort puts them
            top = t.read(order_by=[(column, direction)], limit=3)
            expected = whole.sort_by([(column, "ascending" if direction == "asc" else "descending")])
            assert top.column(column).to_pylist() == expected.column(column).to_pylist()[:3], (column, direction)


def test_a_java_file_index_skips_files_in_the_plan(tmp_path: Path) -> None:
    """A value no file's bitmap holds removes the files at the "file-index" step, and the read
    is empty, as the full read filtered; a value that is there keeps its file."""
    path = tmp_path / "t"
    shutil.copytree(JAVA_INDEX / "append_with_bitmap.db" / "append_with_bitmap", path)
    t = Table.open(str(path))
    whole = t.read()
    present = whole.column("f0").drop_null()[0].as_py()
    lo, hi = pc.min_max(whole.column("f0")).values()
    absent = next(f"{present}{suffix}" for suffix in ("x", "y", "z")
                  if lo.as_py() <= f"{present}{suffix}" <= hi.as_py() and f"{present}{suffix}" not in
                  whole.column("f0").to_pylist())
    missing = t.plan([("f0", "=", absent)])
    assert missing.steps["file-index"].files >= 1 and not missing.files
    assert t.read(filter=[("f0", "=", absent)]).num_rows == 0
    found = t.read(filter=[("f0", "=", present)])
    assert _sorted(found) == _sorted(_filtered(whole, [("f0", "=", present)]))


def _without_page_index(path: Path) -> None:
    """Rewrite every data file of a Paimon table as one row group without a page index (as
    older writers make them): same rows, same column types."""
    for file in path.rglob("data-*.parquet"):
        table = pq.read_table(file)
        pq.write_table(table, file, row_group_size=max(table.num_rows, 1), write_page_index=False)
        assert pq.ParquetFile(file).metadata.row_group(0).column(0).has_offset_index is False


@needs_pypaimon
def test_lookups_in_large_row_groups_without_a_page_index(tmp_path: Path) -> None:
    """Files of one large row group and no page index: a lookup reads each file's key columns
    once (kept for the next lookup) and decodes the rest only up to the row found; every answer
    equals the model — updated keys, deleted keys, keys never written."""
    n = 150_000
    rng = random.Random(5)
    model: dict[int, tuple] = {}
    commits = []
    for c in range(3):
        ids = sorted(rng.sample(range(n), n // 2))
        ops = ["-D" if c and rng.random() < 0.1 else "+I" for _ in ids]
        commits.append(pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array([float(i * 10 + c) for i in ids]),
                                 "s": pa.array([f"s{c}-{i}" for i in ids]), "op": ops}))
        for i, op in zip(ids, ops):
            if op == "-D":
                model.pop(i, None)
            else:
                model[i] = (float(i * 10 + c), f"s{c}-{i}")
    wh = tmp_path / "wh"
    write_paimon(tmp_path / "work", wh, "db.t", commits, ["id"], [], {"bucket": "1", "rowkind.field": "op"})
    path = wh / "db.db" / "t"
    _without_page_index(path)
    t = Table.open(str(path))
    assert max(f.row_count for f in PaimonTable.open(str(path), None).live_files(
        PaimonTable.open(str(path), None).resolve(None))) > 65536
    for key in rng.sample(range(n), 40) + [n + 5]:
        got = t.read(filter=("id", "=", key), columns=["id", "v", "s"])
        want = [{"id": key, "v": model[key][0], "s": model[key][1]}] if key in model else []
        assert got.to_pylist() == want, key
        assert t.last_read is not None and (t.last_read.point_files > 0 or t.last_read.files_read == 0)


def test_time_travel_lookups_then_latest_lookups_each_read_their_own_schema(tmp_path: Path) -> None:
    """A file searched by a time-travel lookup under the schema it was written with is not
    plain under a later schema (a dropped column, two columns whose names swapped): the latest
    lookup maps it by field id, as the full read does, however the lookups before it left the
    caches."""
    path = tmp_path / "t"
    shutil.copytree(JAVA / "parquet" / "pk_table_with_alter_table.db" / "pk_table_with_alter_table", path)
    latest_schema = json.loads((path / "schema" / "schema-1").read_text())
    latest_schema["id"] = 2  # `e` dropped, `a` and `c` renamed into each other (each keeps its field id)
    latest_schema["fields"] = [dict(f, name={"a": "c", "c": "a"}.get(f["name"], f["name"]))
                               for f in latest_schema["fields"] if f["name"] != "e"]
    (path / "schema" / "schema-2").write_text(json.dumps(latest_schema))
    t = Table.open(str(path))
    for snapshot in (s.id for s in t.snapshots()):  # under schema 0, then under schema 1
        before = t.read(snapshot=snapshot)
        keys = [k for k in ("key0", "key1", "key2", "key_2") if k in before.column_names]
        for row in before.select(keys).to_pylist():
            f = [(k, "=", v) for k, v in row.items()]
            assert _sorted(t.read(filter=f, snapshot=snapshot)) == _sorted(_filtered(before, f))
    keys = ["key0", "key1", "key_2"]
    now = t.read()
    assert "e" not in now.column_names
    for row in now.select(keys).to_pylist():
        f = [(k, "=", v) for k, v in row.items()]
        assert _sorted(t.read(filter=f)) == _sorted(_filtered(now, f))


@pytest.mark.parametrize("path", JAVA_TABLES, ids=lambda p: f"{p.parents[1].name}/{p.name}")
def test_a_projection_filtered_on_another_column(path: Path) -> None:
    """A read of one column filtered on another (ORC, thin and older-schema files are read
    through their mapping): the full read filtered, then projected."""
    t = Table.open(str(path))
    whole = t.read()
    flat = [c for c in whole.column_names if not pa.types.is_nested(whole.schema.field(c).type)]
    if len(flat) < 2 or not whole.num_rows:
        pytest.skip("needs two flat columns and rows")
    target, other = flat[0], flat[-1]
    value = whole.column(other).drop_null()[0].as_py() if whole.column(other).null_count < whole.num_rows else None
    if value is None:
        pytest.skip("the other column holds only nulls")
    for op in ("=", "!=", ">=", "<"):
        f = [(other, op, value)]
        assert _sorted(t.read(columns=[target], filter=f)) == _sorted(_filtered(whole, f).select([target])), op


DV_TABLES = [p for p in JAVA_TABLES if "dv" in p.name]


@pytest.mark.parametrize("path", DV_TABLES, ids=lambda p: f"{p.parents[1].name}/{p.name}")
def test_deleted_rows_and_every_row_of_deletion_vector_files(path: Path) -> None:
    """A Paimon file's `deleted_rows` is what its vector marks (resolved or not, cardinality
    recorded or not); `every_row()` reads the file whole, positions from its start."""
    from mergetree.table.files import read_data_file, read_key_positions

    t = Table.open(str(path))
    directory = t.directory
    marked = 0
    for entry in directory.live_files(directory.latest_snapshot()).values():
        meta = entry.file
        positions = meta.origin.deleted_positions()
        assert meta.deleted_rows == (0 if positions is None else len(positions))
        marked += meta.deleted_rows
        whole = sum(b.num_rows for b in read_data_file(directory.storage, meta.every_row()))
        assert whole == meta.row_count
        live = read_key_positions(directory.storage, meta, directory.schema.file_key)
        kept = [] if live is None else live.column("_POSITION").to_pylist()
        assert sorted(set(range(meta.row_count)) - set(kept)) == ([] if positions is None else positions.tolist())
    assert marked > 0


def test_options_of_two_tables_alike_but_for_their_keys() -> None:
    """Two Paimon schemas with the same id, columns and options but different keys have their
    own options (aggregations skip key columns)."""
    from mergetree.table.paimon.metadata import PaimonSchema
    from mergetree.table.paimon.tables import table_options

    def schema(keys: list[str]) -> PaimonSchema:
        return PaimonSchema.from_json({
            "id": 0, "fields": [{"id": 0, "name": "id", "type": "INT NOT NULL"},
                                {"id": 1, "name": "x", "type": "INT NOT NULL"}, {"id": 2, "name": "v", "type": "INT"}],
            "partitionKeys": [], "primaryKeys": keys,
            "options": {"bucket": "1", "merge-engine": "aggregation", "fields.default-aggregate-function": "sum"}})
    assert table_options(schema(["id", "x"])).aggregations == {"v": "sum"}
    assert table_options(schema(["id"])).aggregations == {"x": "sum", "v": "sum"}


def test_an_engine_source_pinned_to_an_older_schemas_snapshot() -> None:
    """An engine's Paimon source at a snapshot committed under an older schema advertises that
    schema's columns and scans them."""
    from mergetree.engines.sources import PaimonSource

    path = JAVA / "parquet" / "pk_table_with_alter_table.db" / "pk_table_with_alter_table"
    t = Table.open(str(path))
    for snapshot in (s.id for s in t.snapshots()):
        source = PaimonSource(str(path), None, snapshot)  # type: ignore[arg-type]
        scanned = source.scan(source.schema.names, None, None, "test").read_all()
        assert scanned.schema.names == source.schema.names
        assert _sorted(scanned) == _sorted(t.read(snapshot=snapshot))
