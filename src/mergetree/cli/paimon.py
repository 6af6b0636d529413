"""`mergetree paimon read|info|compact|changes WAREHOUSE TABLE`: Apache Paimon tables from the shell."""
from __future__ import annotations

import argparse
from typing import Any

import pyarrow as pa

from .. import paimon
from ..paimon.handle import PaimonTableHandle
from .commands import parse_filter
from .options import add_table_path, storage_options
from .render import arrow_preview, out_console, progress, text_table

__all__ = ["add_commands"]


def _snapshot(text: str | None) -> Any:
    """A snapshot id, or a tag name."""
    if text is None:
        return None
    return int(text) if text.strip().isdigit() else text


def add_commands(subcommands: Any, command: Any) -> None:
    """Register `mergetree paimon ...` (`command` makes a subcommand parser in the app's style)."""
    p = command("paimon", "Apache Paimon primary-key tables: read, describe, compact, changes (no JVM)", _help)
    inner = p.add_subparsers(dest="paimon_command", metavar="SUBCOMMAND")

    def sub(name: str, help: str, run: Any) -> argparse.ArgumentParser:
        q = inner.add_parser(name, help=help, description=help, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
        q.set_defaults(run=run)
        add_table_path(q, help="the Paimon warehouse: a directory, or its URI (s3://bucket/warehouse, gs://, "
                                "az://, abfss://)", name="warehouse")
        q.add_argument("table", help="database.table")
        return q

    q = sub("info", "schema, options, snapshots and each bucket's levels and sorted runs", info)
    q.add_argument("--snapshot", help="a snapshot id or tag name (default: the latest)")
    q.add_argument("--snapshots", type=int, default=10, help="how many recent snapshots to list")
    q = sub("read", "read the table merged with its merge engine (with a progress bar)", read)
    q.add_argument("--filter", action="append", metavar="'COL OP VALUE'",
                   help="a predicate; repeat for AND. Operators: = != < <= > >= in (a, b) not in (a, b) "
                        "is null, is not null")
    q.add_argument("--columns", help="comma-separated columns (default: all)")
    q.add_argument("--limit", type=int, default=20, help="rows to show (0: only the count)")
    q.add_argument("--snapshot", help="a snapshot id or tag name (default: the latest)")
    q.add_argument("--no-progress", action="store_true", help="no progress bar")
    q = sub("changes", "what changed between two snapshots: rows with _row_kind (+I, -U, +U, -D)", changes)
    q.add_argument("--from", dest="start", required=True,
                   help="the snapshot id (or tag) the change starts after (0: before the first snapshot)")
    q.add_argument("--to", dest="end", help="the last snapshot id (or tag) of the change (default: the latest)")
    q.add_argument("--columns", help="comma-separated columns (default: all; the primary key always)")
    q.add_argument("--filter", action="append", metavar="'COL OP VALUE'",
                   help="a predicate on rows; repeat for AND (the change of the filtered table)")
    q.add_argument("--source", choices=["auto", "delta", "changelog"], default="auto",
                   help="delta: the net change per key, computed; changelog: the table's changelog files as "
                        "written; auto: the changelog when every commit in range has one")
    q.add_argument("--limit", type=int, default=20, help="rows to show (0: only the count)")
    q = sub("compact", "compact with Paimon's universal-compaction rules and commit a COMPACT snapshot", compact)
    q.add_argument("--full", action="store_true", help="compact every bucket into one sorted run")
    q.add_argument("--no-progress", action="store_true", help="no progress bar")


def _help(args: argparse.Namespace) -> int:
    out_console.print("usage: mergetree paimon {info,read,compact,changes} WAREHOUSE TABLE  (mergetree paimon --help)")
    return 2


def info(args: argparse.Namespace) -> int:
    i = paimon.info(args.warehouse, args.table, _snapshot(args.snapshot), storage_options=storage_options(args))
    out = out_console
    out.print(f"Paimon table {i.name} ({i.path})")
    engine = i.options.get("merge-engine", "deduplicate")
    out.print(f"  primary key: {list(i.primary_keys)}   partitioned by: {list(i.partition_keys)}   "
              f"buckets: {i.options.get('bucket', '-1')}   merge engine: {engine}")
    out.print(text_table([["column", "type", "nullable"]] + [[f.name, str(f.type), str(f.nullable)] for f in i.schema]))
    if i.options:
        out.print(text_table([["option", "value"]] + [[k, v] for k, v in sorted(i.options.items())], title="\noptions"))
    out.print(f"\nmergetree can read it: {'yes' if i.unsupported is None else 'no - ' + i.unsupported}")
    out.print(f"\nsnapshots: {len(i.snapshots)} (reading {i.snapshot_id})   tags: {', '.join(i.tags) or '-'}")
    rows = [["id", "kind", "committed", "rows (physical)", "delta"]]
    for s in i.snapshots[-args.snapshots:] if args.snapshots > 0 else []:
        rows.append([str(s.id), s.commit_kind, s.time.isoformat(sep=" ", timespec="seconds"),
                     f"{s.total_record_count:,}", f"{s.delta_record_count:+,}"])
    if len(rows) > 1:
        out.print(text_table(rows, right_aligned={0, 3, 4}))
    out.print("\nbuckets (sorted runs: each level-0 file, then each non-empty level):")
    width = max((len(b.files_per_level) for b in i.buckets), default=0)
    vectors = any(b.deleted_rows for b in i.buckets)  # a deletion-vector table: rows its vectors mark
    table = [["partition", "bucket", "runs"] + [f"L{n}" for n in range(width)] + ["rows", "MiB"]
             + (["deleted"] if vectors else [])]
    for b in i.buckets:
        table.append([",".join(map(str, b.partition)) or "-", str(b.bucket), str(b.sorted_runs)]
                     + [str(n) if n else "." for n in b.files_per_level] + ["."] * (width - len(b.files_per_level))
                     + [f"{b.rows:,}", f"{b.bytes / 2**20:.1f}"] + ([f"{b.deleted_rows:,}"] if vectors else []))
    out.print(text_table(table, right_aligned=set(range(1, len(table[0])))) if len(table) > 1 else "  (empty)")
    return 0


def read(args: argparse.Namespace) -> int:
    table = PaimonTableHandle(args.warehouse, storage_options(args), args.table)
    snapshot = _snapshot(args.snapshot)
    schema = table.schema if snapshot is None else table.plan_schema(snapshot)
    filters = [parse_filter(f, schema) for f in args.filter or []] or None
    columns = [c.strip() for c in args.columns.split(",")] if args.columns else None
    plan = table.plan(filters, snapshot)
    total = sum(m.row_count for m in plan.files)
    reader = table.scan(columns, filters, snapshot)
    batches: list[pa.RecordBatch] = []
    done = 0
    with progress("read", "rows", enabled=not args.no_progress) as update:
        update(0, total)
        for batch in reader:  # merged rows out against the files' rows in: the bar ends full
            batches.append(batch)
            done += batch.num_rows
            update(min(done, total), total)
        update(total, total)
    result = pa.Table.from_batches(batches, schema=reader.schema)
    if args.limit > 0:
        out_console.print(arrow_preview(result, args.limit))
    out_console.print(f"({result.num_rows:,} row{'' if result.num_rows == 1 else 's'}; "
                      f"{len(plan.files):,} of {plan.files_total:,} files read)")
    return 0


def changes(args: argparse.Namespace) -> int:
    options = storage_options(args)
    filters = None
    if args.filter:
        schema = PaimonTableHandle(args.warehouse, options, args.table).schema
        filters = [parse_filter(f, schema) for f in args.filter]
    columns = [c.strip() for c in args.columns.split(",")] if args.columns else None
    result = paimon.changes(args.warehouse, args.table, _snapshot(args.start), _snapshot(args.end), columns,
                            filters, storage_options=options, source=args.source).read_all()
    if args.limit > 0:
        out_console.print(arrow_preview(result, args.limit))
    kinds = result.column("_row_kind").value_counts().to_pylist() if result.num_rows else []
    counts = ", ".join(f"{k['values']} {k['counts']:,}" for k in sorted(kinds, key=lambda k: k["values"]))
    out_console.print(f"({result.num_rows:,} change{'' if result.num_rows == 1 else 's'}"
                      f"{': ' + counts if counts else ''})")
    return 0


def compact(args: argparse.Namespace) -> int:
    with progress("compact", "rows", enabled=not args.no_progress) as update:
        snapshot = paimon.compact(args.warehouse, args.table, full=args.full, progress=update,
                                  storage_options=storage_options(args))
    out_console.print(f"committed snapshot {snapshot} (COMPACT)" if snapshot else "nothing to compact")
    return 0
