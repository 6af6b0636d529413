"""`mergetree info | compact | read | expire PATH`: look after a table from the shell."""
from __future__ import annotations

import argparse
import datetime as dt
import sys
from collections import defaultdict

import pyarrow as pa

from ._format import arrow_table, text_table
from .compaction import Levels
from .errors import InvalidArgumentError
from .table import Table


def info(args: argparse.Namespace) -> int:
    table = Table.open(args.path)
    ts = table.table_schema
    print(f"table {table.path}")
    print(f"  primary key: {list(ts.primary_key) or '(append table)'}   partitioned by: {list(ts.partition_by)}"
          f"   buckets: {ts.buckets} on {list(ts.bucket_key)}   merge engine: {ts.merge_engine}")
    print(text_table([["column", "type", "nullable"]]
                     + [[f.name, str(f.type), str(f.nullable)] for f in ts.schema]))
    snapshots = table.snapshots()
    print(f"\nsnapshots: {len(snapshots)}")
    rows = [["id", "kind", "committed", "rows (physical)", "delta"]]
    for s in snapshots[-args.snapshots:]:
        when = dt.datetime.fromtimestamp(s.time_millis / 1000).isoformat(sep=" ", timespec="seconds")
        rows.append([str(s.id), s.commit_kind, when, f"{s.total_record_count:,}", f"{s.delta_record_count:+,}"])
    if len(rows) > 1:
        print(text_table(rows, right_aligned={0, 3, 4}))
    print("\nbuckets (sorted runs: each level-0 file, then each non-empty level):")
    options = table.options.compaction
    by_bucket = defaultdict(list)
    for e in table.store.live_files(table.latest_snapshot()).values():
        by_bucket[(e.partition, e.bucket)].append(e.file)
    header = ["partition", "bucket", "runs"] + [f"L{i}" for i in range(options.num_levels)] + ["rows", "MiB"]
    rows = [header]
    for (partition, bucket), files in sorted(by_bucket.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        levels = Levels(files, options.num_levels)
        per_level = [len(levels.files_at(i)) for i in range(options.num_levels)]
        rows.append([",".join(map(str, partition)) or "-", str(bucket), str(levels.number_of_sorted_runs())]
                    + [str(n) if n else "." for n in per_level]
                    + [f"{sum(f.row_count for f in files):,}", f"{sum(f.file_size for f in files) / 2**20:.1f}"])
    print(text_table(rows, right_aligned=set(range(1, len(header)))) if len(rows) > 1 else "  (empty)")
    return 0


def compact(args: argparse.Namespace) -> int:
    table = Table.open(args.path)
    snapshot = table.compact(full=args.full, progress=True)
    print(f"committed snapshot {snapshot.id}" if snapshot else "nothing to compact")
    return 0


def parse_filter(text: str, schema: pa.Schema) -> tuple:
    """'col op value' with op one of = != < <= > >= in (values comma-separated)."""
    for op in (" not in ", " in ", "<=", ">=", "!=", "=", "<", ">"):
        if op in text:
            column, value = (part.strip() for part in text.split(op, 1))
            break
    else:
        raise InvalidArgumentError(f"cannot read filter {text!r}; write e.g. 'id = 5', 'id in 1,2', 'ts >= 2024-01-01'")
    if column not in schema.names:
        raise InvalidArgumentError(f"filter names column {column!r}; columns: {schema.names}")
    dtype = schema.field(column).type

    def typed(v: str):
        return pa.scalar(v).cast(dtype).as_py()
    if op.strip() in ("in", "not in"):
        return (column, op.strip(), [typed(v.strip()) for v in value.split(",")])
    return (column, op, typed(value))


def read(args: argparse.Namespace) -> int:
    table = Table.open(args.path)
    filters = [parse_filter(f, table.schema) for f in args.filter or []]
    columns = args.columns.split(",") if args.columns else None
    result = table.read(columns=columns, filter=filters or None, snapshot=args.snapshot)
    print(arrow_table(result, limit=args.limit))
    print(f"({result.num_rows:,} rows)")
    return 0


def expire(args: argparse.Namespace) -> int:
    table = Table.open(args.path)
    older = dt.timedelta(hours=args.older_than_hours) if args.older_than_hours is not None else None
    expired = table.expire_snapshots(retain_last=args.retain, older_than=older)
    print(f"expired {len(expired)} snapshot(s)" + (f": {expired[0]}..{expired[-1]}" if expired else ""))
    if args.orphans:
        removed = table.remove_orphan_files(older_than=dt.timedelta(hours=args.orphans_older_than_hours))
        print(f"removed {len(removed)} orphan file(s)")
    return 0


def parser(command: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"mergetree {command}")
    p.add_argument("path", help="table directory")
    if command == "info":
        p.add_argument("--snapshots", type=int, default=10, help="how many recent snapshots to list")
    elif command == "compact":
        p.add_argument("--full", action="store_true", help="compact every bucket into its last level")
    elif command == "read":
        p.add_argument("--filter", action="append", help="'col op value'; repeat for AND")
        p.add_argument("--columns", help="comma-separated columns")
        p.add_argument("--limit", type=int, default=20, help="rows to show")
        p.add_argument("--snapshot", type=int, help="read this snapshot id (time travel)")
    elif command == "expire":
        p.add_argument("--retain", type=int, default=1, help="snapshots to keep")
        p.add_argument("--older-than-hours", type=float, help="only expire snapshots older than this")
        p.add_argument("--orphans", action="store_true", help="also remove orphan files")
        p.add_argument("--orphans-older-than-hours", type=float, default=1.0)
    return p


COMMANDS = {"info": info, "compact": compact, "read": read, "expire": expire}


def main(command: str, argv: list[str]) -> int:
    args = parser(command).parse_args(argv)
    try:
        return COMMANDS[command](args)
    except InvalidArgumentError as exc:
        print(f"mergetree {command}: {exc}", file=sys.stderr)
        return 2
