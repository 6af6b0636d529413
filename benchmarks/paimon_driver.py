"""pypaimon's side of ``mergetree bench --paimon``: runs under pypaimon's own interpreter
(``.venv-paimon``: pypaimon pins pyarrow<20, mergetree needs >=21), never imports mergetree,
and times pypaimon inside this process, so the interpreter's start-up and imports are not timed.

    python paimon_driver.py write SPEC.json     create a table, then one commit per Arrow IPC file
    python paimon_driver.py measure SPEC.json   pypaimon's full read and point lookups, timed

write SPEC: ``{"warehouse", "table": "db.name", "primary_key", "options": {...}, "commits": [IPC files],
"copies": {"4": "db.other", ...}, "append": false}``: with ``append`` the commits go into the table an
earlier write created (its own schema and options); after commit 4 (counting from 1) the table's directory is copied,
untimed, to ``db.other``'s (a table exactly as pypaimon left it after 4 commits); prints ``{"seconds",
"commit_seconds": [...], "files", "rows"}`` (the seconds of each commit: write, prepare, commit).

measure SPEC: ``{"warehouse", "table", "primary_key", "repeat", "read_budget", "sample_keys": [...],
"lookup_keys": [...], "lookup_budget"}``: the full read is timed up to ``repeat`` times (another
run only while the runs so far took less than ``read_budget`` seconds); the lookups run one
untimed warm-up, then one timed ``read_builder.with_filter(equal(key, k))`` plan and read per
key, until every key is done or ``lookup_budget`` seconds are spent (at least 3 lookups).
Prints ``{"read": {"seconds": [...], "cpu_seconds": [...], "rows", "distinct_keys", "sample":
[rows of the sample keys]}, "lookups": [{"key", "seconds", "cpu_seconds", "rows": [...]}]}``.

Every answer goes back as JSON (floats round-trip exactly), one line on standard output.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import time

import pyarrow as pa
import pyarrow.compute as pc
from pypaimon import CatalogFactory, Schema

MIN_LOOKUPS = 3


def _catalog(warehouse: str):
    return CatalogFactory.create({"warehouse": warehouse})


def _ipc(path: str) -> pa.Table:
    with pa.memory_map(path, "rb") as source:
        return pa.ipc.open_file(source).read_all()


def _clock() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def _table_path(warehouse: str, identifier: str) -> str:
    database, name = identifier.split(".")
    return os.path.join(warehouse, f"{database}.db", name)


def commit(table, data: pa.Table) -> None:
    """One pypaimon batch commit of `data` (also used by the tests' pypaimon tool)."""
    builder = table.new_batch_write_builder()
    writer, committer = builder.new_write(), builder.new_commit()
    writer.write_arrow(data)
    committer.commit(writer.prepare_commit())
    writer.close()
    committer.close()


def write(spec: dict) -> dict:
    catalog = _catalog(spec["warehouse"])
    catalog.create_database(spec["table"].split(".")[0], True)
    schema = _ipc(spec["commits"][0]).schema
    # "append": more commits into the table an earlier write created (the schema is its own)
    catalog.create_table(spec["table"], Schema.from_pyarrow_schema(
        schema, primary_keys=[spec["primary_key"]], options=spec.get("options") or {}), bool(spec.get("append")))
    table = catalog.get_table(spec["table"])
    if spec.get("create_only"):  # an empty table for another writer
        return {"check": "ok"}
    copies = spec.get("copies") or {}
    commit_seconds = []
    cpu = 0.0
    for number, path in enumerate(spec["commits"], 1):
        data = _ipc(path)  # read before the clock starts: the write is timed, not the IPC file
        start, cpu_start = time.perf_counter(), time.process_time()
        commit(table, data)
        commit_seconds.append(time.perf_counter() - start)
        cpu += time.process_time() - cpu_start
        if str(number) in copies:
            shutil.copytree(_table_path(spec["warehouse"], spec["table"]),
                            _table_path(spec["warehouse"], copies[str(number)]))
    builder = table.new_read_builder()
    files = [f for split in builder.new_scan().plan().splits() for f in split.files]
    return {"seconds": sum(commit_seconds), "cpu_seconds": cpu, "commit_seconds": commit_seconds, "files": len(files),
            "rows": sum(f.row_count for f in files)}


def _full_read(table) -> pa.Table:
    builder = table.new_read_builder()
    return builder.new_read().to_arrow(builder.new_scan().plan().splits())


def _lookup(table, key_column: str, key: int) -> pa.Table:
    builder = table.new_read_builder()
    builder = builder.with_filter(builder.new_predicate_builder().equal(key_column, key))
    return builder.new_read().to_arrow(builder.new_scan().plan().splits())


def _rows(table: pa.Table, key_column: str) -> list:
    return table.sort_by(key_column).to_pylist()


def measure(spec: dict) -> dict:
    table = _catalog(spec["warehouse"]).get_table(spec["table"])
    key = spec["primary_key"]
    seconds, cpu, out = [], [], None
    while len(seconds) < max(int(spec.get("repeat", 1)), 1):
        out = None  # let the previous answer go before the next run
        (wall0, cpu0) = _clock()
        out = _full_read(table)
        (wall1, cpu1) = _clock()
        seconds.append(wall1 - wall0)
        cpu.append(cpu1 - cpu0)
        if sum(seconds) >= float(spec.get("read_budget", 0)):
            break
    ids = out.column(key)
    sample = out.filter(pc.is_in(ids, value_set=pa.array(spec.get("sample_keys", []), ids.type)))
    read = {"seconds": seconds, "cpu_seconds": cpu, "rows": out.num_rows,
            "distinct_keys": pc.count_distinct(ids).as_py(), "sample": _rows(sample, key)}
    out = sample = ids = None
    lookups = []
    keys = [int(k) for k in spec.get("lookup_keys", [])]
    if keys:
        _lookup(table, key, keys[0])  # untimed warm-up: first-call setup is not a lookup's cost
    spent = 0.0
    for k in keys:
        (wall0, cpu0) = _clock()
        got = _lookup(table, key, k)
        (wall1, cpu1) = _clock()
        lookups.append({"key": k, "seconds": wall1 - wall0, "cpu_seconds": cpu1 - cpu0, "rows": _rows(got, key)})
        spent += wall1 - wall0
        if spent >= float(spec.get("lookup_budget", float("inf"))) and len(lookups) >= MIN_LOOKUPS:
            break
    return {"read": read, "lookups": lookups}


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("write", "measure"):
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as handle:
        spec = json.load(handle)
    report = write(spec) if argv[0] == "write" else measure(spec)
    print(json.dumps(report), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
