"""Tables of mergetree's older, private format, made by the last release that wrote it (this
script ran on it; it cannot run once that format's writer is gone): what `mergetree migrate`
is tested on.  Each table's rows, as that release read them, are in ``expected.json``, with the
number of records in its query log and optimizer history.

    .venv/bin/python tests/data/private_format/make_tables.py
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa

import mergetree as mt
from mergetree.table.workload import querylog

HERE = Path(__file__).resolve().parent
SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.int64()), ("s", pa.string())])


def _rows(start: int, n: int, tag: str) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table({"id": ids, "p": [["x", "y"][i % 2] for i in ids], "v": [i % 7 for i in ids],
                     "s": [None if i % 5 == 0 else f"{tag}{i}" for i in ids]}, schema=SCHEMA)


def _make(name: str, **create) -> mt.Table:
    path = HERE / name
    shutil.rmtree(path, ignore_errors=True)
    return mt.Table.create(path, SCHEMA, format="mergetree", **create)


def main() -> None:
    tables = {
        "deduplicate_dv": _make("deduplicate_dv", primary_key=["p", "id"], partition_by=["p"], buckets=3,
                                options={"deletion-vectors.enabled": "true"}),
        "partial_update": _make("partial_update", primary_key=["id"], buckets=2, merge_engine="partial-update"),
        "aggregate": _make("aggregate", primary_key=["id"], buckets=2, merge_engine="aggregate",
                           options={"fields.v.aggregate-function": "sum"}),
        "first_row": _make("first_row", primary_key=["id"], buckets=2, merge_engine="first-row"),
        "append": _make("append", partition_by=["p"]),
    }
    for name, t in tables.items():
        t.write(_rows(0, 40, "a"))
        t.write(_rows(20, 30, "b"))
        if name in ("deduplicate_dv", "partial_update"):
            t.delete(pa.table({"id": [1, 2, 3], "p": ["y", "x", "y"]}).select(
                [c for c in ("id", "p") if c in t.table_schema.primary_key]))
        t.compact()
        t.read(filter=("v", ">", 3))
        t.read(filter=[("id", "in", [1, 5, 9])], columns=["id", "v"])
        if name == "append":
            t.optimize(order="v")  # a layout: the optimizer history records it
    querylog.flush()
    expected = {}
    for name in tables:
        reopened = mt.Table.open(HERE / name)
        rows = sorted(reopened.read().to_pylist(), key=lambda r: (r["p"], r["id"], r["v"]))
        expected[name] = {"rows": rows, "queries": querylog.read_rows(str(HERE / name)).num_rows,
                          "snapshots": len(reopened.snapshots())}
    (HERE / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")


if __name__ == "__main__":
    main()
