"""Schema evolution on Paimon tables (`Table.update_schema`, `write(..., evolve=True)`, the CLI's
`alter`): each change against a row model, Java's rules refused with nothing written, old files
read by field id, options that name a renamed column following it; pypaimon and Java Paimon
read the evolved tables and pypaimon writes into them; a state machine over writes, schema
changes, compactions, tags and expiry."""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from paimon_fixtures import java_read, needs_java_paimon, needs_pypaimon, pypaimon_read, write_paimon

import mergetree as mt
from mergetree import (
    CommitConflictError,
    InvalidArgumentError,
    SchemaMismatchError,
    UnsupportedFormatError,
    UnsupportedPaimonFeatureError,
    UnsupportedTypeError,
)
from mergetree.table.paimon.schema_changes import MoveColumn, apply_changes, castable

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("qty", pa.int32()), ("price", pa.float64())])


def _schemas(path: Path) -> list[str]:
    return sorted(os.listdir(path / "schema"))


def _document(path: Path) -> dict:
    latest = max(int(n.split("-")[1]) for n in os.listdir(path / "schema"))
    return json.loads((path / "schema" / f"schema-{latest}").read_text())


def _sorted(table: pa.Table, key: str = "id") -> list[dict]:
    return sorted(table.to_pylist(), key=lambda r: r[key])


def _table(tmp_path: Path, **kwargs) -> tuple[mt.Table, Path]:
    path = tmp_path / "wh" / "db.db" / "t"
    t = mt.Table.create(path, SCHEMA, primary_key=kwargs.pop("primary_key", ["id"]), buckets=kwargs.pop("buckets", 2),
                        **kwargs)
    t.write(pa.table({"id": [1, 2, 3], "name": ["a", "b", None], "qty": [10, 20, 30], "price": [1.0, 2.0, 3.0]}))
    return t, path


# -- each change, against the rows it must give ---------------------------------------------------

def test_each_change_reads_old_files_by_field_id(tmp_path):
    t, path = _table(tmp_path)
    with t.update_schema() as update:
        update.add_column("discount", pa.float64(), doc="in percent", after="name")
        update.rename_column("name", "title")
        update.update_column("qty", field_type=pa.int64())
        update.drop_column("price")
        update.move_column("qty", first=True)
    assert t.schema == pa.schema([("qty", pa.int64()), ("id", pa.int64(), False), ("title", pa.string()),
                                  ("discount", pa.float64())])
    document = _document(path)
    assert document["id"] == 1 and document["highestFieldId"] == 4
    assert [(f["id"], f["name"]) for f in document["fields"]] == [(2, "qty"), (0, "id"), (1, "title"), (4, "discount")]
    assert document["fields"][3]["description"] == "in percent"
    assert _sorted(t.read()) == [{"qty": 10, "id": 1, "title": "a", "discount": None},
                                 {"qty": 20, "id": 2, "title": "b", "discount": None},
                                 {"qty": 30, "id": 3, "title": None, "discount": None}]
    t.write(pa.table({"qty": [2 ** 40], "id": [2], "title": ["B"], "discount": [0.5]}))
    expected = [{"qty": 10, "id": 1, "title": "a", "discount": None}, {"qty": 2 ** 40, "id": 2, "title": "B",
                                                                       "discount": 0.5},
                {"qty": 30, "id": 3, "title": None, "discount": None}]
    assert _sorted(t.read()) == expected
    assert _sorted(t.read(filter=("title", "=", "a"))) == expected[:1]  # old files' statistics by field id
    t.compact(full=True)
    assert _sorted(t.read()) == expected
    assert _sorted(mt.Table.open(path).read(snapshot=1)) == [  # time travel reads under the snapshot's schema
        {"id": 1, "name": "a", "qty": 10, "price": 1.0}, {"id": 2, "name": "b", "qty": 20, "price": 2.0},
        {"id": 3, "name": None, "qty": 30, "price": 3.0}]


def test_nested_fields_are_added_renamed_dropped_and_retyped_by_path(tmp_path):
    schema = pa.schema([("id", pa.int64()), ("address", pa.struct([("city", pa.string()), ("zip", pa.int32())])),
                        ("points", pa.list_(pa.struct([("x", pa.int32()), ("y", pa.int32())])))])
    path = tmp_path / "t"
    t = mt.Table.create(path, schema, primary_key=["id"], buckets=1)
    t.write(pa.table({"id": [1, 2], "address": [{"city": "Oslo", "zip": 150}, None],
                      "points": [[{"x": 1, "y": 2}], []]}, schema=schema))
    with t.update_schema() as update:
        update.add_column(("address", "street"), pa.string())
        update.rename_column(("address", "city"), "town")
        update.update_column(("address", "zip"), field_type="BIGINT")
        update.drop_column(("points", "element", "y"))
        update.add_column(("points", "element", "z"), "DOUBLE", first=True)
    assert t.schema.field("address").type == pa.struct([("town", pa.string()), ("zip", pa.int64()),
                                                        ("street", pa.string())])
    assert t.schema.field("points").type.value_type == pa.struct([("z", pa.float64()), ("x", pa.int32())])
    assert _document(path)["highestFieldId"] == 8  # 0..6 at create, then street 7 and z 8
    assert _sorted(t.read()) == [
        {"id": 1, "address": {"town": "Oslo", "zip": 150, "street": None}, "points": [{"z": None, "x": 1}]},
        {"id": 2, "address": None, "points": []}]
    with pytest.raises(InvalidArgumentError, match="no column 'address.nope'"):
        t.update_schema().rename_column(("address", "nope"), "x").commit()
    with pytest.raises(InvalidArgumentError, match="has no fields"):
        t.update_schema().add_column(("id", "x"), pa.int32()).commit()


def test_an_added_struct_column_numbers_its_fields_past_the_highest_id(tmp_path):
    t, path = _table(tmp_path)
    with t.update_schema() as update:
        update.add_column("meta", pa.struct([("a", pa.int32()), ("b", pa.struct([("c", pa.string())]))]))
    meta = _document(path)["fields"][-1]
    assert meta["id"] == 4 and [f["id"] for f in meta["type"]["fields"]] == [5, 6]
    assert meta["type"]["fields"][1]["type"]["fields"][0]["id"] == 7 and _document(path)["highestFieldId"] == 7
    assert t.read(columns=["meta"]).column("meta").to_pylist() == [None, None, None]


@pytest.mark.parametrize("change, error, message", [
    (lambda u: u.drop_column("id"), UnsupportedPaimonFeatureError, "cannot drop partition key or primary key"),
    (lambda u: u.drop_column("p"), UnsupportedPaimonFeatureError, "cannot drop partition key"),
    (lambda u: u.rename_column("p", "q"), UnsupportedPaimonFeatureError, "cannot rename partition column"),
    (lambda u: u.update_column("p", field_type="INT"), UnsupportedPaimonFeatureError, "partition column"),
    (lambda u: u.update_column("id", field_type=pa.int32()), UnsupportedPaimonFeatureError, "primary-key column"),
    (lambda u: u.update_column("id", required=False), UnsupportedPaimonFeatureError, "make nullable primary-key"),
    (lambda u: u.add_column("n", pa.int32(), required=True), UnsupportedPaimonFeatureError, "NOT NULL"),
    (lambda u: u.add_column("name", pa.int32()), InvalidArgumentError, "already has a column 'name'"),
    (lambda u: u.rename_column("name", "qty"), InvalidArgumentError, "already has a column 'qty'"),
    (lambda u: u.update_column("qty", field_type=pa.date32()), UnsupportedPaimonFeatureError, "casts do not allow"),
    (lambda u: u.update_column("price", field_type=pa.string()), UnsupportedPaimonFeatureError, "toString"),
    (lambda u: u.update_column("name", required=True), UnsupportedPaimonFeatureError, "null-to-not-null"),
    (lambda u: u.move_column("qty", after="qty"), UnsupportedPaimonFeatureError, "onto itself"),
    (lambda u: u.move_column("nope", first=True), InvalidArgumentError, "no column 'nope'"),
    (lambda u: u.add_column("u", pa.uint64()), UnsupportedTypeError, "unsigned"),
    (lambda u: u.add_column("a.b", "NOT_A_TYPE"), InvalidArgumentError, "not a Paimon type"),
    (lambda u: u.add_column("x", pa.int32()).drop_column("name").drop_column("nope"), InvalidArgumentError,
     "no column 'nope'"),
])
def test_refused_changes_write_nothing(tmp_path, change, error, message):
    schema = SCHEMA.append(pa.field("p", pa.string()))
    path = tmp_path / "t"
    t = mt.Table.create(path, schema, primary_key=["p", "id"], partition_by=["p"], buckets=1)
    t.write(pa.table({"id": [1], "name": ["a"], "qty": [1], "price": [1.0], "p": ["x"]}))
    before = _schemas(path)
    with pytest.raises(error, match=message):
        with t.update_schema() as update:
            change(update)
    assert _schemas(path) == before and t.schema == mt.Table.open(path).schema
    assert t.read().to_pylist() == [{"id": 1, "name": "a", "qty": 1, "price": 1.0, "p": "x"}]


def test_options_naming_a_renamed_column_follow_it_and_a_dropped_one_is_refused(tmp_path):
    path = tmp_path / "t"
    schema = SCHEMA.append(pa.field("ts", pa.int64()))
    t = mt.Table.create(path, schema, primary_key=["id"], buckets=1, merge_engine="aggregate",
                        options={"sequence.field": "ts", "fields.qty.aggregate-function": "sum",
                                 "fields.price.aggregate-function": "max",
                                 "file-index.bloom-filter.columns": "name",
                                 "parquet.bloom.filter.enabled#name": "true"})
    t.write(pa.table({"id": [1, 1], "name": ["a", "b"], "qty": [1, 2], "price": [1.0, 5.0], "ts": [2, 1]}))
    with t.update_schema() as update:
        update.rename_column("ts", "event_time")
        update.rename_column("qty", "amount")
        update.rename_column("name", "label")
    options = _document(path)["options"]
    assert options["sequence.field"] == "event_time" and options["fields.amount.aggregate-function"] == "sum"
    assert "fields.qty.aggregate-function" not in options
    assert options["file-index.bloom-filter.columns"] == "label" and options["parquet.bloom.filter.enabled#label"]
    t.write(pa.table({"id": [1], "label": ["c"], "amount": [4], "price": [2.0], "event_time": [0]}))
    t.compact(full=True)
    # amount summed; label from the newest by event_time (2: "a"); price the max
    assert t.read().to_pylist() == [{"id": 1, "label": "a", "amount": 7, "price": 5.0, "event_time": 2}]
    before = _schemas(path)
    with pytest.raises((InvalidArgumentError, UnsupportedFormatError), match="event_time"):
        t.update_schema().drop_column("event_time").commit()
    assert _schemas(path) == before


def test_type_changes_follow_paimons_casts_and_what_mergetree_converts_exactly():
    assert castable("INT", "BIGINT") is None and castable("INT", "STRING") is None
    assert castable("STRING", "INT") is None  # explicit, allowed by default (old values parsed as Java parses)
    assert "explicit" in castable("STRING", "INT", explicit=False)
    assert castable("BIGINT", "INT") is None and "explicit" in castable("BIGINT", "INT", explicit=False)
    assert castable("DATE", "BOOLEAN") is not None and castable("BOOLEAN", "DATE") is not None
    assert castable("TIMESTAMP(6)", "TIMESTAMP(3)") is None and castable("TIMESTAMP(3)", "DATE") is None
    assert castable("TIMESTAMP(3)", "TIMESTAMP(3) WITH LOCAL TIME ZONE") is not None  # a JVM's zone
    assert castable("BYTES", "STRING") is not None and castable("DOUBLE", "STRING") is not None


def test_narrowing_and_parsing_convert_old_values_as_java(tmp_path):
    t, _ = _table(tmp_path)
    t.write(pa.table({"id": [4], "name": ["12"], "qty": [40], "price": [4.75]}))
    with t.update_schema() as update:
        update.update_column("qty", field_type=pa.int8())  # explicit narrowing wraps, as Java's (byte) cast
        update.update_column("price", field_type=pa.int32())  # toward zero
    assert [(r["qty"], r["price"]) for r in _sorted(t.read())] == [(10, 1), (20, 2), (30, 3), (40, 4)]
    with t.update_schema() as update:
        update.update_column("qty", field_type="DECIMAL(6, 2)")
    assert [str(r["qty"]) for r in _sorted(t.read())] == ["10.00", "20.00", "30.00", "40.00"]
    t.write(pa.table({"id": [5], "name": ["x"], "qty": [None], "price": [None]}, schema=t.schema))
    with t.update_schema() as update:
        update.update_column("name", field_type=pa.int64())
    with pytest.raises(SchemaMismatchError, match="cannot read 'a'"):  # Java's cast fails on it too
        t.read()


def test_java_move_semantics_index_for_index():
    doc = {"id": 0, "fields": [{"id": i, "name": n, "type": "INT"} for i, n in enumerate("abcde")],
           "highestFieldId": 4, "partitionKeys": [], "primaryKeys": [], "options": {}}

    def moved(*moves: MoveColumn) -> str:
        return "".join(f["name"] for f in apply_changes(doc, moves)["fields"])

    assert moved(MoveColumn("d", "FIRST")) == "dabce" and moved(MoveColumn("a", "LAST")) == "bcdea"
    assert moved(MoveColumn("a", "AFTER", "c")) == "bcade" and moved(MoveColumn("e", "AFTER", "b")) == "abecd"
    assert moved(MoveColumn("a", "BEFORE", "d")) == "bcade" and moved(MoveColumn("e", "BEFORE", "b")) == "aebcd"
    assert moved(MoveColumn("a", "AFTER", "e")) == "bcdea"


def test_add_column_before_partition_option_places_it_as_java(tmp_path):
    schema = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.int32())])
    t = mt.Table.create(tmp_path / "t", schema, primary_key=["p", "id"], partition_by=["p"], buckets=1,
                        options={"add-column-before-partition": "true"})
    with t.update_schema() as update:
        update.add_column("w", pa.int32())
        update.add_column("last", pa.int32(), after="v")
    assert t.schema.names == ["id", "w", "p", "v", "last"]


# -- writes that evolve ---------------------------------------------------------------------------

@pytest.mark.parametrize("shape", ["table", "pandas", "dict", "rows", "reader", "iterator"])
def test_a_write_with_evolve_adds_the_datas_new_columns(tmp_path, shape):
    t, path = _table(tmp_path)
    new = pa.table({"id": [4], "name": ["d"], "qty": [40], "price": [4.0], "tags": ["x"], "score": [1.5]})
    if shape == "pandas":
        pytest.importorskip("pandas")  # (the wheel's test environment has none)
    data = {"table": lambda: new, "pandas": new.to_pandas, "dict": new.to_pydict, "rows": new.to_pylist,
            "reader": new.to_reader, "iterator": lambda: iter(new.to_batches())}[shape]()
    if shape != "iterator":
        with pytest.raises(SchemaMismatchError, match="lacks"):
            t.write(data if shape != "reader" else new.to_reader())
        assert len(_schemas(path)) == 1
    t.write(data, evolve=True)
    assert t.schema.names == ["id", "name", "qty", "price", "tags", "score"]
    assert t.schema.field("score").type == pa.float64() and t.schema.field("tags").nullable
    assert _sorted(t.read())[-1] == {"id": 4, "name": "d", "qty": 40, "price": 4.0, "tags": "x", "score": 1.5}
    assert _sorted(t.read())[0]["tags"] is None
    t.write(new, evolve=True)  # nothing new: no schema change
    assert len(_schemas(path)) == 2


def test_evolve_refuses_a_type_paimon_lacks_with_nothing_written(tmp_path):
    t, path = _table(tmp_path)
    data = pa.table({"id": [4], "name": ["d"], "qty": [40], "price": [4.0], "big": pa.array([1], pa.uint64())})
    with pytest.raises(UnsupportedTypeError, match="uint64"):
        t.write(data, evolve=True)
    assert len(_schemas(path)) == 1 and len(t.read()) == 3
    with pytest.raises(InvalidArgumentError, match="evolve"):
        t.write(data, evolve="yes")


def test_a_change_stream_write_with_evolve_keeps_the_kind_column_out(tmp_path):
    t, _ = _table(tmp_path)
    t.write(pa.table({"id": [1, 9], "name": ["A", "z"], "qty": [1, 9], "price": [1.0, 9.0], "extra": [True, False],
                      "_row_kind": ["+U", "+I"]}), evolve=True)
    assert t.schema.names == ["id", "name", "qty", "price", "extra"]
    assert [r["name"] for r in _sorted(t.read())] == ["A", "b", None, "z"]


# -- publishing -----------------------------------------------------------------------------------

def test_concurrent_schema_changes_one_wins(tmp_path):
    _, path = _table(tmp_path)
    tables = [mt.Table.open(path) for _ in range(4)]
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(tables))

    def change(i: int, table: mt.Table) -> None:
        update = table.update_schema().add_column(f"c{i}", pa.int32())
        barrier.wait()
        try:
            update.commit()
        except CommitConflictError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=change, args=(i, tb)) for i, tb in enumerate(tables)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(_schemas(path)) == 2 and len(errors) == len(tables) - 1
    assert len(mt.Table.open(path).schema) == 5


def test_an_update_commits_once_and_not_after_an_exception(tmp_path):
    t, path = _table(tmp_path)
    with pytest.raises(RuntimeError):
        with t.update_schema() as update:
            update.add_column("x", pa.int32())
            raise RuntimeError("changed my mind")
    assert len(_schemas(path)) == 1
    update = t.update_schema().add_column("x", pa.int32())
    update.commit()
    with pytest.raises(InvalidArgumentError, match="committed already"):
        update.commit()
    with pytest.raises(InvalidArgumentError, match="no change"):
        t.update_schema().commit()
    with pytest.raises(InvalidArgumentError, match="tuple of names"):
        t.update_schema().drop_column("")


# -- other implementations read what mergetree evolved ------------------------------------------

def _evolve_for_readers(tmp_path: Path) -> tuple[Path, list[dict]]:
    t, path = _table(tmp_path, buckets=2, options={"deletion-vectors.enabled": "true"})
    with t.update_schema() as update:
        update.add_column("tags", pa.string(), after="id")
        update.rename_column("name", "title")
        update.update_column("qty", field_type=pa.int64())
        update.drop_column("price")
    t.write(pa.table({"id": [2, 4], "tags": ["t2", "t4"], "title": ["B", "D"], "qty": [2 ** 40, 4]}))
    t.compact()
    expected = [{"id": 1, "tags": None, "title": "a", "qty": 10}, {"id": 2, "tags": "t2", "title": "B", "qty": 2 ** 40},
                {"id": 3, "tags": None, "title": None, "qty": 30}, {"id": 4, "tags": "t4", "title": "D", "qty": 4}]
    assert _sorted(t.read()) == expected
    return path, expected


@needs_pypaimon
def test_pypaimon_reads_and_writes_an_evolved_table(tmp_path):
    path, expected = _evolve_for_readers(tmp_path)
    wh, work = tmp_path / "wh", tmp_path / "work"
    work.mkdir()
    assert _sorted(pypaimon_read(wh, "db.t", work)) == expected
    write_paimon(work, wh, "db.t", [pa.table({"id": [5], "tags": ["t5"], "title": ["E"], "qty": [5]},
                                             schema=mt.Table.open(path).schema)], ["id"])
    t = mt.Table.open(path)
    t.compact(full=True)
    assert _sorted(t.read()) == [*expected, {"id": 5, "tags": "t5", "title": "E", "qty": 5}]


@needs_java_paimon
def test_java_paimon_reads_an_evolved_table(tmp_path):
    _, expected = _evolve_for_readers(tmp_path)
    assert _sorted(java_read(tmp_path / "wh", "db.t", tmp_path / "work")) == expected


# -- the state machine ----------------------------------------------------------------------------

class Evolution(RuleBasedStateMachine):
    """Writes, column changes, compactions, tags and snapshot expiry in any order; the table
    always reads as the model (rows keyed by id, columns in the schema's order), and every tag
    as the model did when it was made."""

    def __init__(self) -> None:
        super().__init__()
        import tempfile
        self.dir = tempfile.mkdtemp()
        self.table = mt.Table.create(Path(self.dir) / "t", pa.schema([("id", pa.int32()), ("c0", pa.int32())]),
                                     primary_key=["id"], buckets=2)
        self.columns: list[str] = ["id", "c0"]
        self.types: dict[str, pa.DataType] = {"id": pa.int32(), "c0": pa.int32()}
        self.rows: dict[int, dict] = {}
        self.tagged: dict[str, tuple[list[str], list[dict]]] = {}
        self.at_commit: tuple[list[str], list[dict]] = ([], [])
        self.counter = 1

    @property
    def others(self) -> list[str]:
        return [c for c in self.columns if c != "id"]

    @rule(keys=st.lists(st.integers(0, 12), min_size=1, max_size=8), value=st.integers(-100, 100))
    def write(self, keys, value):
        data = {c: [k if c == "id" else value + i for i, k in enumerate(keys)] for c in self.columns}
        schema = pa.schema([pa.field(c, self.types[c], c != "id") for c in self.columns])
        self.table.write(pa.table(data, schema=schema))
        for i, k in enumerate(keys):
            self.rows[k] = {c: data[c][i] for c in self.columns}
        self.committed()

    def committed(self) -> None:
        """A snapshot was committed: it reads under the schema of now, as the model is now (a
        tag made later reads that way too, whatever the schema changes since: Paimon's time
        travel reads a snapshot under the schema it was committed with)."""
        self.at_commit = (list(self.columns), [dict(self.rows[k]) for k in sorted(self.rows)])

    @rule(after=st.booleans())
    def add(self, after):
        name = f"c{self.counter}"
        self.counter += 1
        with self.table.update_schema() as update:
            update.add_column(name, pa.int32(), after="id" if after else None)
        self.columns.insert(self.columns.index("id") + 1 if after else len(self.columns), name)
        self.types[name] = pa.int32()
        for row in self.rows.values():
            row[name] = None

    @precondition(lambda self: len(self.columns) > 2)
    @rule(data=st.data())
    def drop(self, data):
        name = data.draw(st.sampled_from(self.others))
        self.table.update_schema().drop_column(name).commit()
        self.columns.remove(name)
        for row in self.rows.values():
            row.pop(name)

    @precondition(lambda self: len(self.columns) > 1)
    @rule(data=st.data())
    def rename(self, data):
        name = data.draw(st.sampled_from(self.others))
        new = f"c{self.counter}"
        self.counter += 1
        self.table.update_schema().rename_column(name, new).commit()
        self.columns[self.columns.index(name)] = new
        self.types[new] = self.types.pop(name)
        for row in self.rows.values():
            row[new] = row.pop(name)

    @precondition(lambda self: any(t == pa.int32() for c, t in self.types.items() if c != "id" and c in self.columns))
    @rule(data=st.data())
    def widen(self, data):
        name = data.draw(st.sampled_from([c for c in self.others if self.types[c] == pa.int32()]))
        self.table.update_schema().update_column(name, field_type=pa.int64()).commit()
        self.types[name] = pa.int64()

    @precondition(lambda self: len(self.columns) > 2)
    @rule(data=st.data())
    def move(self, data):
        name = data.draw(st.sampled_from([c for c in self.others if c != self.columns[0]]))  # (first: refused)
        self.table.update_schema().move_column(name, first=True).commit()
        self.columns.insert(0, self.columns.pop(self.columns.index(name)))

    @rule(full=st.booleans())
    def compact(self, full):
        if self.table.compact(full=full) is not None:
            self.committed()

    @precondition(lambda self: self.table.latest_snapshot() is not None and len(self.tagged) < 3)
    @rule()
    def tag(self):
        name = f"tag{self.counter}"
        self.counter += 1
        self.table.create_tag(name)
        self.tagged[name] = self.at_commit

    @precondition(lambda self: bool(self.tagged))
    @rule(data=st.data())
    def untag(self, data):
        name = data.draw(st.sampled_from(sorted(self.tagged)))
        self.table.delete_tag(name)
        del self.tagged[name]

    @rule(retain=st.integers(1, 3))
    def expire(self, retain):
        self.table.expire_snapshots(retain_last=retain, older_than=0)

    @invariant()
    def reads_as_the_model(self):
        assert self.table.schema.names == self.columns
        got = self.table.read()
        assert sorted(got.to_pylist(), key=lambda r: r["id"]) == [self.rows[k] for k in sorted(self.rows)]
        reopened = mt.Table.open(Path(self.dir) / "t")
        assert reopened.schema.names == self.columns and reopened.read().num_rows == len(self.rows)
        for name, (columns, rows) in self.tagged.items():  # a tag reads as then, under its schema then
            old = reopened.read(snapshot=name)
            assert old.schema.names == columns
            assert sorted(old.to_pylist(), key=lambda r: r["id"]) == rows

    def teardown(self) -> None:
        import shutil
        shutil.rmtree(self.dir, ignore_errors=True)


TestEvolution = Evolution.TestCase
TestEvolution.settings = settings(max_examples=25, stateful_step_count=12, deadline=None,
                                  suppress_health_check=[HealthCheck.too_slow])


def test_a_primary_key_column_is_renamed_in_the_key_too(tmp_path):
    t, path = _table(tmp_path)
    t.update_schema().rename_column("id", "order_id").commit()
    assert _document(path)["primaryKeys"] == ["order_id"]
    t.write(pa.table({"order_id": [3, 4], "name": ["C", "d"], "qty": [3, 4], "price": [3.0, 4.0]}))
    t.compact(full=True)
    assert [(r["order_id"], r["name"]) for r in _sorted(t.read(), "order_id")] == [(1, "a"), (2, "b"), (3, "C"),
                                                                                 (4, "d")]
    assert t.read(filter=("order_id", "=", 3)).column("name").to_pylist() == ["C"]


def test_the_cli_alters_in_the_order_given(tmp_path):
    import subprocess
    import sys
    _, path = _table(tmp_path)

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "mergetree", *args], capture_output=True, text=True)

    done = cli("alter", str(path), "--add", "w:DECIMAL(10, 2)", "--rename", "name:title", "--retype", "qty:BIGINT",
               "--move", "w:first", "--comment", "w:a comment", "--rename", "title:label")
    assert done.returncode == 0, done.stderr
    assert "label" in done.stdout and "decimal128(10, 2)" in done.stdout
    assert mt.Table.open(path).schema.names == ["w", "id", "label", "qty", "price"]
    assert _document(path)["fields"][0]["description"] == "a comment"
    refused = cli("alter", str(path), "--add", "z:INT", "--drop", "id")
    assert refused.returncode == 1 and "primary key 'id'" in refused.stderr
    assert mt.Table.open(path).schema.names == ["w", "id", "label", "qty", "price"]  # nothing of it written
    assert cli("alter", str(path)).returncode == 2  # a usage error: no change named


def test_an_append_tables_bucket_key_keeps_its_type(tmp_path):
    t = mt.Table.create(tmp_path / "t", SCHEMA, buckets=4, bucket_key="id")
    t.write(pa.table({"id": [1, -5], "name": ["a", "b"], "qty": [1, 2], "price": [1.0, 2.0]}))
    with pytest.raises(UnsupportedPaimonFeatureError, match="bucket-key column 'id'"):
        t.update_schema().update_column("id", field_type=pa.string()).commit()
    assert t.read(filter=("id", "=", -5)).num_rows == 1
