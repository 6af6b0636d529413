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
from mergetree.merge import ROW_KIND_COLUMN
from mergetree.table import snapshots
from mergetree.table.workload import querylog

HERE = Path(__file__).resolve().parent
SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.int64()), ("s", pa.string())])


def _rows(start: int, n: int, tag: str) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table({"id": ids, "p": [["x", "y"][i % 2] for i in ids], "v": [i % 7 for i in ids],
                     "s": [None if i % 5 == 0 else f"{tag}{i}" for i in ids]}, schema=SCHEMA)


def _fresh(name: str) -> Path:
    path = HERE / name
    shutil.rmtree(path, ignore_errors=True)
    return path


def _make(name: str, **create) -> mt.Table:
    return mt.Table.create(_fresh(name), SCHEMA, format="mergetree", **create)


TYPED = pa.schema([("name", pa.string()), ("day", pa.date32()), ("amount", pa.decimal128(12, 2)),
                   ("tags", pa.list_(pa.int64())), ("at", pa.timestamp("us")),
                   ("point", pa.struct([("x", pa.int32()), ("label", pa.string())]))])


def _typed(start: int, n: int) -> pa.Table:
    import datetime as dt
    from decimal import Decimal
    ids = range(start, start + n)
    return pa.table({"name": [f"n{i % 6}" for i in ids], "day": [dt.date(2024, 1, 1 + i // 6) for i in ids],
                     "amount": [None if i % 4 == 0 else Decimal(i) / 4 for i in ids],
                     "tags": [list(range(i % 3)) for i in ids],
                     "at": [dt.datetime(2024, 5, 1, 12, i % 60) for i in ids],
                     "point": [{"x": i, "label": None if i % 2 else f"p{i}"} for i in ids]}, schema=TYPED)


def _raced(t: mt.Table, path: Path) -> None:
    """A write whose commit loses a race to another writer's: the older format renumbers its
    files by a `sequence_shift` in the manifest, which a reader must add to the stored numbers."""
    real = snapshots.SnapshotStore.commit
    state = {"raced": False}

    def losing(self, *args, **kwargs):
        if not state["raced"]:
            state["raced"] = True
            mt.Table.open(path).write(_rows(0, 10, "other"))  # the winner, committed first
        return real(self, *args, **kwargs)
    snapshots.SnapshotStore.commit = losing
    try:
        t.write(_rows(0, 10, "late"))  # committed second: its versions are the newer ones
    finally:
        snapshots.SnapshotStore.commit = real


def main() -> None:
    tables = {
        "deduplicate_dv": _make("deduplicate_dv", primary_key=["p", "id"], partition_by=["p"], buckets=3,
                                options={"deletion-vectors.enabled": "true"}),
        "partial_update": _make("partial_update", primary_key=["id"], buckets=2, merge_engine="partial-update"),
        "aggregate": _make("aggregate", primary_key=["id"], buckets=2, merge_engine="aggregate",
                           options={"fields.v.aggregate-function": "sum"}),
        "first_row": _make("first_row", primary_key=["id"], buckets=2, merge_engine="first-row"),
        "append": _make("append", partition_by=["p"]),
        "renumbered": _make("renumbered", primary_key=["id"], options={"write-only": "true"}),
        "aggregate_retractions": _make("aggregate_retractions", primary_key=["id"], buckets=2,
                                       merge_engine="aggregate",
                                       options={"fields.v.aggregate-function": "sum", "write-only": "true"}),
        "typed_keys": mt.Table.create(_fresh("typed_keys"), TYPED, primary_key=["name", "day"], buckets=2,
                                      format="mergetree", options={"write-only": "true"}),
    }
    for name, t in tables.items():
        if name == "typed_keys":
            t.write(_typed(0, 30))
            t.write(_typed(10, 30))
            t.set_options({"file-index.bloom-filter.columns": "amount"})  # a second schema file
            t.write(_typed(35, 10))
            t.reset_consumer("dashboard", 2)
            t.read(filter=("name", "=", "n1"))
            continue
        if name == "aggregate_retractions":
            t.write(_rows(0, 20, "a"))
            undo = _rows(5, 5, "a").append_column(ROW_KIND_COLUMN, pa.array(["-U"] * 3 + ["-D"] * 2))
            t.write(undo, row_kind_column=ROW_KIND_COLUMN)
            t.write(_rows(8, 4, "c"))
            continue
        if name == "renumbered":
            t.write(_rows(0, 30, "a"))
            _raced(t, HERE / name)
            continue
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
        rows = sorted(reopened.read().to_pylist(), key=_order)
        expected[name] = {"rows": rows, "queries": querylog.read_rows(str(HERE / name)).num_rows,
                          "snapshots": len(reopened.snapshots()),
                          "consumers": [c.id for c in reopened.consumers()]}
    (HERE / "expected.json").write_text(json.dumps(expected, indent=1, default=str) + "\n")


def _order(row: dict) -> tuple:
    return tuple(str(row[c]) for c in ("p", "id", "v", "name", "day") if c in row)


if __name__ == "__main__":
    main()
