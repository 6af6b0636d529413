"""`mergetree create` and `mergetree write`: a table made from a schema written out or taken
from a file, then loaded from Parquet, CSV, JSON lines and an Arrow stream on standard input,
each round trip checked against `Table.read`; upserts, deletes and CDC row kinds as the Python
API applies them; bad files give one clear line and commit nothing."""
from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import mergetree as mt
from mergetree.cli.loading import arrow_type, parse_schema
from mergetree.errors import InvalidArgumentError

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string()), ("day", pa.date32()),
                    ("amount", pa.decimal128(12, 2)), ("at", pa.timestamp("us"))])


def cli(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mergetree", *args], input=stdin, capture_output=True)


def rows(path) -> list[dict]:
    return sorted(mt.Table.open(path).read().to_pylist(), key=lambda r: r["id"])


def _create(tmp_path, *extra: str) -> str:
    path = str(tmp_path / "t")
    done = cli("create", path, "--schema", "id:int64 not null,name:string,day:date32,amount:decimal128(12, 2),"
               "at:timestamp[us]", "--primary-key", "id", "--buckets", "2", *extra)
    assert done.returncode == 0, done.stderr
    assert b"created" in done.stdout
    return path


def test_types_as_pyarrow_prints_them_and_as_paimon_names_them():
    assert arrow_type("int64") == pa.int64() and arrow_type("string") == pa.string()
    assert arrow_type("timestamp[us, tz=UTC]") == pa.timestamp("us", "UTC")
    assert arrow_type("decimal128(12, 2)") == arrow_type("decimal(12,2)") == pa.decimal128(12, 2)
    assert arrow_type("list<list<int32>>") == pa.list_(pa.list_(pa.int32()))
    assert arrow_type("BIGINT") == pa.int64() and arrow_type("DECIMAL(5, 1)") == pa.decimal128(5, 1)
    assert parse_schema("a:decimal(12, 2), b:list<int64> not null") == \
        pa.schema([("a", pa.decimal128(12, 2)), pa.field("b", pa.list_(pa.int64()), nullable=False)])
    for bad, message in (("a:int65", "column 'a'.*unknown type 'int65'"), ("a", "not COLUMN:TYPE"), ("", "no column")):
        with pytest.raises(InvalidArgumentError, match=message):
            parse_schema(bad)


def test_every_format_round_trips_and_upserts_in_one_commit(tmp_path):
    path = _create(tmp_path)
    pq.write_table(pa.table({"id": [1, 2], "name": ["a", "b"], "day": [dt.date(2024, 5, 1)] * 2,
                             "amount": [Decimal("1.50"), None], "at": [dt.datetime(2024, 5, 1, 12)] * 2}),
                   tmp_path / "a.parquet")
    (tmp_path / "b.csv").write_text("id,name,day,amount,at\n3,c,2024-05-02,2.25,2024-05-02 08:00:00\n"
                                    "1,A,2024-05-03,,2024-05-03 09:30:00\n")
    (tmp_path / "c.jsonl").write_text(json.dumps({"id": 4, "name": "d", "day": "2024-05-04", "amount": "7.10",
                                                  "at": "2024-05-04 10:00:00"}) + "\n")
    done = cli("write", path, str(tmp_path / "a.parquet"), str(tmp_path / "b.csv"), str(tmp_path / "c.jsonl"))
    assert done.returncode == 0, done.stderr
    assert b"wrote 5 row(s) from 3 file(s) in snapshot 1" in done.stdout
    assert b"write" in done.stderr  # the progress bar
    day, at = dt.date, dt.datetime
    assert rows(path) == [
        {"id": 1, "name": "A", "day": day(2024, 5, 3), "amount": None, "at": at(2024, 5, 3, 9, 30)},
        {"id": 2, "name": "b", "day": day(2024, 5, 1), "amount": None, "at": at(2024, 5, 1, 12)},
        {"id": 3, "name": "c", "day": day(2024, 5, 2), "amount": Decimal("2.25"), "at": at(2024, 5, 2, 8)},
        {"id": 4, "name": "d", "day": day(2024, 5, 4), "amount": Decimal("7.10"), "at": at(2024, 5, 4, 10)}]
    # one commit of every file's rows (then the compaction every write is followed by)
    assert [s.commit_kind for s in mt.Table.open(path).snapshots() if s.commit_kind != "COMPACT"] == ["APPEND"]


def test_an_arrow_stream_on_standard_input_deletes_and_change_streams(tmp_path):
    path = _create(tmp_path)
    data = _full({"id": [1, 2, 3], "name": ["a", "b", "c"]})
    done = cli("write", path, "-", "--no-progress", stdin=_stream(data))
    assert done.returncode == 0, done.stderr
    assert [r["name"] for r in rows(path)] == ["a", "b", "c"]
    (tmp_path / "gone.csv").write_text("id\n2\n")
    assert cli("write", path, str(tmp_path / "gone.csv"), "--delete", "--no-progress").returncode == 0
    assert [r["id"] for r in rows(path)] == [1, 3]
    # a change stream: Debezium's op column (c, u, d), applied as the kinds say
    (tmp_path / "cdc.jsonl").write_text("\n".join(json.dumps(r) for r in (
        {"id": 1, "name": "A", "day": None, "amount": None, "at": None, "op": "u"},
        {"id": 3, "name": None, "day": None, "amount": None, "at": None, "op": "d"},
        {"id": 5, "name": "e", "day": None, "amount": None, "at": None, "op": "c"})) + "\n")
    done = cli("write", path, str(tmp_path / "cdc.jsonl"), "--row-kind-column", "op", "--no-progress")
    assert done.returncode == 0, done.stderr
    assert [(r["id"], r["name"]) for r in rows(path)] == [(1, "A"), (5, "e")]


def test_a_table_from_a_files_schema(tmp_path):
    pq.write_table(pa.table({"k": pa.array([1, 2], pa.int32()), "v": ["x", "y"]}), tmp_path / "s.parquet")
    path = str(tmp_path / "t")
    done = cli("create", path, "--schema-of", str(tmp_path / "s.parquet"), "--primary-key", "k",
               "--option", "owner=finance")
    assert done.returncode == 0, done.stderr
    table = mt.Table.open(path)
    assert table.schema.names == ["k", "v"] and table.table_schema.paimon.options["owner"] == "finance"
    assert cli("write", path, str(tmp_path / "s.parquet"), "--no-progress").returncode == 0
    assert mt.Table.open(path).read().num_rows == 2


@pytest.mark.parametrize("name, content, message", [
    ("wrong.csv", b"foo,bar\n1,2\n", "lacks column"),
    ("broken.csv", b"id,name,day,amount,at\n1,a,,,\n2,b,,,,extra,more\n", "broken.csv"),
    ("baddate.csv", b"id,name,day,amount,at\n7,x,notadate,,\n", "baddate.csv"),
    ("truncated.parquet", None, "truncated.parquet"),
    ("bad.jsonl", b'{"id": 9, "name": "x", "day": "nope", "amount": null, "at": null}\n', "column 'day'"),
    ("notes.txt", b"hello", "cannot tell its format"),
])
def test_bad_files_give_one_clear_line_and_commit_nothing(tmp_path, name, content, message):
    path = _create(tmp_path)
    assert cli("write", path, "-", "--no-progress", stdin=_stream(_full({"id": [100]}))).returncode == 0
    if content is None:
        pq.write_table(_full({"id": list(range(1000))}), tmp_path / "whole.parquet")
        content = (tmp_path / "whole.parquet").read_bytes()[:300]
    (tmp_path / name).write_bytes(content)
    done = cli("write", path, str(tmp_path / name), "--no-progress")
    assert done.returncode != 0
    lines = [line for line in done.stderr.decode().splitlines() if line.strip()]
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in done.stderr.decode(), done.stderr
    assert [s.id for s in mt.Table.open(path).snapshots()] == [1] and [r["id"] for r in rows(path)] == [100]


def test_create_refuses_what_table_create_refuses_and_writes_nothing(tmp_path):
    path = tmp_path / "t"
    done = cli("create", str(path), "--schema", "id:int64,v:string", "--primary-key", "nope")
    assert done.returncode != 0 and b"nope" in done.stderr and not path.exists()


def _full(columns: dict) -> pa.Table:
    """Rows with every column of the table (nulls where not given)."""
    n = len(columns["id"])
    return pa.table({f.name: pa.array(columns[f.name], f.type) if f.name in columns else pa.nulls(n, f.type)
                     for f in SCHEMA})


def _stream(data: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, data.schema) as writer:
        writer.write_table(data)
    return sink.getvalue().to_pybytes()
