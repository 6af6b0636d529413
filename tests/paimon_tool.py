"""Runs under pypaimon's own interpreter (its pins clash with ours: `make paimon-env` makes it),
so the tests write and read real Paimon tables the way Paimon's users do.

    python paimon_tool.py write SPEC.json   create the table if needed, then one commit per IPC file
    python paimon_tool.py read WH TABLE OUT.arrow [SNAPSHOT]   pypaimon's read, as an Arrow IPC file
    python paimon_tool.py serve   the commands above, one JSON list [command, *args] per stdin line
        (see `tool_protocol.serve`: the tests pay pypaimon's import once per process, not once per command)
    python paimon_tool.py expire WH TABLE ID...   expire snapshots, keeping their changelog: each
        snapshot's metadata committed as ``changelog/changelog-<id>`` (pypaimon's ChangelogManager,
        what Paimon's expiry does when changelog retention outlasts snapshots), its snapshot file
        deleted; no data file is removed (they are the kept changelog's)

SPEC: {"warehouse", "table", "primary_keys", "partition_keys", "options", "schema": IPC file whose
schema is the table's, "commits": [IPC files], "tags": {name: snapshot id},
"alter": [["add_column", name or path, type] | ["rename_column", old or path, new] |
["drop_column", name or path] | ["update_column_type", name or path, type] | ["set_option", k, v] |
"commit" (the changes so far become one schema version)] applied before the commits,
"stages": [{"alter", "commits"}] applied and committed after them, in order,
"overwrite": {"<index of a commit>": {partition column: value}} commits made as INSERT OVERWRITE
of that partition ({}: the whole table)}.  Data travels
as Arrow IPC (stable across versions).
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pyarrow as pa
from pypaimon import CatalogFactory, Schema

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from paimon_driver import commit  # the benchmark's pypaimon side: one way to commit
from tool_protocol import main


def _catalog(warehouse: str):
    return CatalogFactory.create({"warehouse": warehouse})


def _ipc(path: str) -> pa.Table:
    with pa.OSFile(path, "rb") as f:
        return pa.ipc.open_file(f).read_all()


def _alter(cat, name: str, alter: list) -> None:
    changes = []
    for change in alter:
        from pypaimon.schema.data_types import AtomicType, DataTypeParser
        from pypaimon.schema.schema_change import SchemaChange
        if change == "commit":  # one schema version per group of changes
            if changes:
                cat.alter_table(name, changes)
            changes = []
        elif change[0] == "add_column":  # a name or a nested path; a type string or Paimon's type JSON
            kind = change[2]
            changes.append(SchemaChange.add_column(change[1], AtomicType(kind) if isinstance(kind, str) and
                                                   not kind.startswith("{") else
                                                   DataTypeParser.parse_data_type(json.loads(kind))))
        elif change[0] == "rename_column":
            changes.append(SchemaChange.rename_column(change[1], change[2]))
        elif change[0] == "drop_column":
            changes.append(SchemaChange.drop_column(change[1]))
        elif change[0] == "update_column_type":
            changes.append(SchemaChange.update_column_type(change[1], AtomicType(change[2])))
        elif change[0] == "set_option":
            changes.append(SchemaChange.set_option(change[1], change[2]))
    if changes:
        cat.alter_table(name, changes)


def write(spec_path: str) -> None:
    with open(spec_path) as fh:
        spec = json.load(fh)
    cat = _catalog(spec["warehouse"])
    db = spec["table"].split(".")[0]
    cat.create_database(db, True)
    schema = _ipc(spec["schema"]).schema
    try:
        cat.get_table(spec["table"])
    except Exception:
        cat.create_table(spec["table"], Schema.from_pyarrow_schema(
            schema, primary_keys=spec["primary_keys"], partition_keys=spec.get("partition_keys") or None,
            options=spec.get("options") or {}), False)
    _alter(cat, spec["table"], spec.get("alter") or [])
    table = cat.get_table(spec["table"])
    started = time.perf_counter()
    overwrite = spec.get("overwrite") or {}
    for i, path in enumerate(spec["commits"]):
        if str(i) in overwrite:
            _overwrite(table, _ipc(path), overwrite[str(i)])
        else:
            commit(table, _ipc(path))
    for stage in spec.get("stages") or []:  # more schema versions, each with its commits
        _alter(cat, spec["table"], stage["alter"])
        table = cat.get_table(spec["table"])
        for path in stage["commits"]:
            commit(table, _ipc(path))
    for name, snapshot_id in (spec.get("tags") or {}).items():
        table.create_tag(name, snapshot_id)
    print(json.dumps({"seconds": time.perf_counter() - started}))


def _overwrite(table, data: pa.Table, partition: dict) -> None:
    builder = table.new_batch_write_builder().overwrite(partition)
    writer, committer = builder.new_write(), builder.new_commit()
    writer.write_arrow(data)
    committer.commit(writer.prepare_commit())
    writer.close()
    committer.close()


def expire(warehouse: str, name: str, *ids: str) -> None:
    from pypaimon.changelog.changelog import Changelog
    from pypaimon.common.json_util import JSON
    table = _catalog(warehouse).get_table(name)
    snapshots, changelogs = table.snapshot_manager(), table.changelog_manager()
    for text in ids:
        snapshot = snapshots.get_snapshot_by_id(int(text))
        # pypaimon 2.1's ChangelogManager.commit_changelog calls a to_json Changelog lacks: the
        # same JSON written as it would (a Changelog is a Snapshot's fields)
        table.file_io.write_file(changelogs.long_lived_changelog_path(snapshot.id),
                                 JSON.to_json(Changelog.from_snapshot(snapshot)), True)
        table.file_io.delete(snapshots.get_snapshot_path(snapshot.id))
    changelogs.commit_long_lived_changelog_earliest_hint(min(int(i) for i in ids))
    changelogs.commit_long_lived_changelog_latest_hint(max(int(i) for i in ids))
    print(json.dumps({"expired": [int(i) for i in ids]}))


def read(warehouse: str, name: str, out: str, snapshot: str | None = None) -> None:
    table = _catalog(warehouse).get_table(name)
    if snapshot is not None:  # an id, or a tag's name
        table = table.copy({"scan.snapshot-id" if snapshot.isdigit() else "scan.tag-name": snapshot})
    builder = table.new_read_builder()
    started = time.perf_counter()
    result = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    seconds = time.perf_counter() - started
    with pa.OSFile(out, "wb") as f, pa.ipc.new_file(f, result.schema) as w:
        w.write_table(result)
    print(json.dumps({"seconds": seconds, "rows": result.num_rows}))


def stream(warehouse: str, name: str, out: str, start: str) -> None:
    """What pypaimon's streaming read returns from snapshot `start` on, snapshot by snapshot up
    to the latest (with each row's kind): its follow-up scanner picks the snapshots to read (a
    changelog producer's: those with changelog files) and plans each, as its stream does."""
    table = _catalog(warehouse).get_table(name)
    builder = table.new_stream_read_builder().with_include_row_kind(True)
    scan = builder.new_streaming_scan()
    snapshots = table.snapshot_manager()
    latest = snapshots.get_latest_snapshot()
    pieces = []
    for snapshot_id in range(int(start), (latest.id if latest else 0) + 1):
        snapshot = snapshots.get_snapshot_by_id(snapshot_id)
        if snapshot is not None and scan.follow_up_scanner.should_scan(snapshot):
            pieces.append(builder.new_read().to_arrow(scan._create_follow_up_plan(snapshot).splits()))
    result = pa.concat_tables(pieces) if pieces else pa.table({})
    with pa.OSFile(out, "wb") as f, pa.ipc.new_file(f, result.schema) as w:
        w.write_table(result)
    print(json.dumps({"rows": result.num_rows}))


COMMANDS = {"write": write, "read": read, "expire": expire, "stream": stream}


if __name__ == "__main__":
    main(COMMANDS)
