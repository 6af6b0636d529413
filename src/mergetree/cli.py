"""The `mergetree` command line: one argparse entry with a subcommand per job.

User mistakes (a missing table, an unknown snapshot, a bad filter, a damaged file) print
one line to stderr and exit non-zero: 2 for a wrong argument, 1 for anything else that
went wrong.  `--debug` shows the traceback instead.
"""
from __future__ import annotations

import argparse
import datetime as dt
import re
import sys
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from ._format import arrow_table, text_table
from .errors import InvalidArgumentError, MergeTreeError

EXIT_USAGE = 2
EXIT_FAILED = 1

_FILTER = re.compile(
    r"""\s*(?P<column>`[^`]+`|"[^"]+"|[^\s=!<>]+)\s*
        (?P<op>is\s+not\s+null|is\s+null|not\s+in(?=[\s(])|in(?=[\s(])|<=|>=|!=|==|=|<|>)
        \s*(?P<value>.*?)\s*""",
    re.IGNORECASE | re.VERBOSE)


def _version() -> str:
    from . import __version__
    return __version__


def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"`":
        return text[1:-1]
    return text


def parse_filter(text: str, schema: pa.Schema) -> tuple:
    """'col op value' as a filter tuple.  Operators: = == != < <= > >= in not in is null
    is not null; IN lists as `in (1, 2)` or `in 1,2`; values may be quoted ('a b')."""
    match = _FILTER.fullmatch(text)
    if match is None:
        raise InvalidArgumentError(
            f"cannot read filter {text!r}; write e.g. 'id = 5', 'id in (1, 2)', 'city is null', "
            f"\"name = 'a b'\", 'ts >= 2024-01-01'")
    column = _unquote(match.group("column"))
    op = " ".join(match.group("op").lower().split())
    value = match.group("value")
    if column not in schema.names:
        raise InvalidArgumentError(f"filter names column {column!r}; columns: {schema.names}")
    dtype = schema.field(column).type
    if op in ("is null", "is not null"):
        if value:
            raise InvalidArgumentError(f"filter {text!r}: nothing may follow {op!r}")
        return (column, op, None)
    if not value:
        raise InvalidArgumentError(f"filter {text!r} needs a value after {op!r}")

    def typed(item: str) -> Any:
        item = _unquote(item.strip())
        if pa.types.is_string(dtype) or pa.types.is_large_string(dtype):
            return item
        try:
            return pa.scalar(item).cast(dtype).as_py()
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            raise InvalidArgumentError(f"filter {text!r}: cannot read {item!r} as {dtype} "
                                       f"(column {column!r})") from None
    if op in ("in", "not in"):
        if value.startswith("(") and value.endswith(")"):
            value = value[1:-1]
        items = [v for v in value.split(",")]
        if not all(v.strip() for v in items):
            raise InvalidArgumentError(f"filter {text!r}: an empty value in the {op!r} list")
        return (column, op, [typed(v) for v in items])
    return (column, op, typed(value))


# -- commands -----------------------------------------------------------------------------

def _open(path: str):
    from .table import Table
    return Table.open(path)


def cmd_info(args: argparse.Namespace) -> int:
    from .compaction import Levels
    table = _open(args.path)
    ts = table.table_schema
    print(f"table {table.path}")
    print(f"  primary key: {list(ts.primary_key) or '(append table)'}   partitioned by: {list(ts.partition_by)}"
          f"   buckets: {ts.buckets} on {list(ts.bucket_key)}   merge engine: {ts.merge_engine}")
    print(text_table([["column", "type", "nullable"]]
                     + [[f.name, str(f.type), str(f.nullable)] for f in ts.schema]))
    snapshots = table.snapshots()
    print(f"\nsnapshots: {len(snapshots)}")
    rows = [["id", "kind", "committed", "rows (physical)", "delta"]]
    for s in snapshots[-args.snapshots:] if args.snapshots else []:
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


def cmd_compact(args: argparse.Namespace) -> int:
    table = _open(args.path)
    snapshot = table.compact(full=args.full, progress=True)
    print(f"committed snapshot {snapshot.id}" if snapshot else "nothing to compact")
    return 0


def _rows(n: int) -> str:
    return f"({n:,} row{'' if n == 1 else 's'})"


def cmd_read(args: argparse.Namespace) -> int:
    table = _open(args.path)
    filters = [parse_filter(f, table.schema) for f in args.filter or []]
    columns = [c.strip() for c in args.columns.split(",")] if args.columns else None
    result = table.read(columns=columns, filter=filters or None, snapshot=args.snapshot)
    if args.limit:
        print(arrow_table(result, limit=args.limit))
    print(_rows(result.num_rows))
    return 0


def cmd_expire(args: argparse.Namespace) -> int:
    table = _open(args.path)
    older = dt.timedelta(hours=args.older_than_hours) if args.older_than_hours is not None else None
    expired = table.expire_snapshots(retain_last=args.retain, older_than=older)
    kept = table.store.snapshot_ids()
    print(f"expired {len(expired)} snapshot(s)" + (f": {expired[0]}..{expired[-1]}" if expired else "")
          + (f"; kept {len(kept)}: {kept[0]}..{kept[-1]}" if kept else ""))
    if args.orphans:
        removed = table.remove_orphan_files(older_than=dt.timedelta(hours=args.orphans_older_than_hours))
        print(f"removed {len(removed)} orphan file(s)")
    return 0


def cmd_repair(args: argparse.Namespace) -> int:
    from .table import Table
    moved = Table.repair(args.path)
    if not moved:
        print("nothing to repair: the latest snapshot is intact")
        return 0
    latest = Table.open(args.path).latest_snapshot()
    print(f"repaired {len(moved)} snapshot file(s): {'; '.join(moved)}")
    print(f"the table continues from snapshot {latest.id if latest else '(none: it is empty)'}")
    return 0


def _forward(module: str):
    """Run a tool that lives outside the library package (benchmarks, demos) with its own
    arguments; imported only when asked for."""
    def run(args: argparse.Namespace) -> int:
        import importlib
        return int(importlib.import_module(module).main(args.rest) or 0)
    return run


# -- the parser ---------------------------------------------------------------------------

# Tools outside the library's own job, imported only when run: (command, module, help).
FORWARDED = (
    ("demo", "mergetree.demo", "write sorted runs as Parquet, merge them with every engine, show a benchmark"),
    ("demo-spark", "mergetree.demo_spark", "a CDC pipeline on a local Spark: upserts and deletes, compaction, "
                                           "a pruned point read, a bucket join"),
    ("bench", "mergetree.bench", "the merge and table benchmarks against their peers (`mergetree bench --help`)"),
)

def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {value}")
    return value


def _non_negative_hours(text: str) -> float:
    value = float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more hours, not {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mergetree", description="Primary-key LSM tables on Parquet, merged by a six-state loser tree.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--version", action="version", version=f"mergetree {_version()}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks instead of one-line errors")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def command(name: str, help: str, run, **kwargs: Any) -> argparse.ArgumentParser:
        p = commands.add_parser(name, help=help, description=help,
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter, **kwargs)
        p.set_defaults(run=run, forwarded=False)
        return p

    for name, module, help in FORWARDED:
        # the tool parses its own options (`mergetree NAME --help` shows them)
        command(name, help, _forward(module), add_help=False).set_defaults(forwarded=True)

    p = command("info", "a table's schema, snapshots, and each bucket's levels and sorted runs", cmd_info)
    p.add_argument("path", help="table directory")
    p.add_argument("--snapshots", type=_non_negative_int, default=10, help="how many recent snapshots to list")

    p = command("compact", "compact the table (with a progress bar)", cmd_compact)
    p.add_argument("path", help="table directory")
    p.add_argument("--full", action="store_true", help="compact every bucket into its last level")

    p = command("read", "read the table (rows come bucket by bucket, each bucket in key order)", cmd_read)
    p.add_argument("path", help="table directory")
    p.add_argument("--filter", action="append", metavar="'COL OP VALUE'",
                   help="a predicate; repeat for AND. Operators: = != < <= > >= in (a, b) not in (a, b) "
                        "is null, is not null")
    p.add_argument("--columns", help="comma-separated columns (default: all)")
    p.add_argument("--limit", type=_non_negative_int, default=20, help="rows to show (0: only the count)")
    p.add_argument("--snapshot", type=int, help="read this snapshot id (time travel; default: the latest)")

    p = command("expire", "expire old snapshots (and optionally orphan files)", cmd_expire)
    p.add_argument("path", help="table directory")
    p.add_argument("--retain", type=_positive_int, default=1,
                   help="snapshots to keep; the default keeps only the latest, ending time travel to older ones")
    p.add_argument("--older-than-hours", type=_non_negative_hours,
                   help="only expire snapshots older than this (default: any age)")
    p.add_argument("--orphans", action="store_true",
                   help="also remove the table's unreferenced files (foreign files are never touched)")
    p.add_argument("--orphans-older-than-hours", type=_non_negative_hours, default=1.0,
                   help="only remove orphan files older than this, so commits in flight keep theirs")

    p = command("repair", "set a damaged latest snapshot aside so the table opens at the newest "
                          "intact one (the damaged file is kept in snapshot/damaged/)", cmd_repair)
    p.add_argument("path", help="table directory")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, rest = parser.parse_known_args(sys.argv[1:] if argv is None else list(argv))
    if args.forwarded:
        args.rest = rest
    elif rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    try:
        return args.run(args)
    except KeyboardInterrupt:
        print("mergetree: interrupted", file=sys.stderr)
        return 130
    except (MergeTreeError, OSError) as exc:
        if args.debug:
            raise
        print(f"mergetree {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE if isinstance(exc, InvalidArgumentError) else EXIT_FAILED
