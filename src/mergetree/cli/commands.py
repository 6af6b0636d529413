"""The table commands: info, compact, read, expire, repair."""
from __future__ import annotations

import argparse
import datetime as dt
import io
import json
import os
import re
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv

from ..errors import InvalidArgumentError
from ..iceberg import IcebergTable, is_iceberg_location
from ..table import Table, housekeeping
from ..table.info import TableInfo, bucket_infos
from ..table.migration import migrate as migrate_table
from ..table.objects import is_uri
from ..table.text_values import parse_text
from .options import open_organized, open_table, remember_location, storage_options
from .render import arrow_preview, out_console, progress, text_table

__all__ = [
    "alter",
    "build_indexes",
    "changes",
    "compact",
    "delete",
    "expire",
    "info",
    "migrate",
    "optimize",
    "parse_filter",
    "read",
    "repair",
    "snapshot_arg",
    "tag",
]

_FILTER = re.compile(
    r"""\s*(?P<column>`[^`]+`|"[^"]+"|[^\s=!<>]+)\s*
        (?P<op>is\s+not\s+null|is\s+null|not\s+in(?=[\s(])|in(?=[\s(])|<=|>=|!=|==|=|<|>)
        \s*(?P<value>.*?)\s*""",
    re.IGNORECASE | re.VERBOSE)


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
        try:  # as Python filters read text (ISO-8601 times, decimals), and Arrow's cast for the rest
            return parse_text(item, dtype)
        except ValueError as exc:
            raise InvalidArgumentError(f"filter {text!r}: cannot read {item!r} as {dtype} "
                                       f"(column {column!r}): {exc}") from None
    if op in ("in", "not in"):
        if value.startswith("(") and value.endswith(")"):
            value = value[1:-1]
        items = value.split(",")
        if not all(v.strip() for v in items):
            raise InvalidArgumentError(f"filter {text!r}: an empty value in the {op!r} list")
        return (column, op, [typed(v) for v in items])
    return (column, op, typed(value))


def info(args: argparse.Namespace) -> int:
    table = open_table(args)
    ts = table.table_schema
    out = out_console
    out.print(f"table {table.path}")
    out.print(f"  primary key: {list(ts.primary_key) or '(append table)'}   partitioned by: {list(ts.partition_by)}"
              f"   buckets: {ts.buckets} on {list(ts.bucket_key)}   merge engine: {ts.merge_engine}")
    out.print(text_table([["column", "type", "nullable"]] + [[f.name, str(f.type), str(f.nullable)]
                                                              for f in ts.schema]))
    snapshots = table.snapshots()
    out.print(f"\nsnapshots: {len(snapshots)}")
    rows: list[list[str]] = [["id", "kind", "committed", "rows (physical)", "delta", "retries"]]
    for s in snapshots[-args.snapshots:] if args.snapshots else []:
        when = dt.datetime.fromtimestamp(s.time_millis / 1000).isoformat(sep=" ", timespec="seconds")
        rows.append([str(s.id), s.commit_kind, when, f"{s.total_record_count:,}", f"{s.delta_record_count:+,}",
                     str(s.commit_retries)])
    if len(rows) > 1:
        out.print(text_table(rows, right_aligned={0, 3, 4, 5}))
    out.print("\nbuckets (sorted runs: each level-0 file, then each non-empty level):")
    buckets = bucket_infos(table.directory)
    # a file may sit above the configured levels (Java's rule: the highest level in use + 1)
    num_levels = max([table.options.compaction.num_levels, *(len(b.files_per_level) for b in buckets)])
    header = ["partition", "bucket", "runs"] + [f"L{i}" for i in range(num_levels)] + ["rows", "MiB"]
    rows = [header]
    for b in buckets:
        per_level = [*b.files_per_level, *[0] * (num_levels - len(b.files_per_level))]
        rows.append([",".join(map(str, b.partition)) or "-", str(b.bucket), str(b.sorted_runs)]
                    + [str(n) if n else "." for n in per_level] + [f"{b.rows:,}", f"{b.bytes / 2**20:.1f}"])
    out.print(text_table(rows, right_aligned=set(range(1, len(header)))) if len(rows) > 1 else "  (empty)")
    summary = table.info()
    _print_organization(summary)
    _print_changes(summary)
    return 0


def _print_changes(info: TableInfo) -> None:
    """Kept changelogs and consumers (change readers holding back expiry)."""
    out = out_console
    kept = info.kept_changelogs
    if kept:
        commits = f"{len(kept)} commits ({kept[0]}..{kept[-1]})" if len(kept) > 1 else f"commit {kept[0]}"
        out.print(f"\nchangelog kept past expired snapshots: {commits}")
    if not info.consumers and not info.damaged_consumers:
        return
    rows = [["consumer", "next snapshot", "last advanced"]]
    for c in info.consumers:
        when = dt.datetime.fromtimestamp(c.updated / 1000).isoformat(sep=" ", timespec="seconds")
        rows.append([c.id, str(c.next_snapshot), when])
    rows += [[consumer_id, "damaged", "-"] for consumer_id in info.damaged_consumers]
    out.print(text_table(rows, right_aligned={1}, title="\nconsumers"))
    for problem in info.damaged_consumers.values():  # in full, below: too long for a cell
        out.print(f"  {problem}")


def _print_organization(info: TableInfo) -> None:
    """The layout, its clustering measure, index coverage and pre-aggregates."""
    out = out_console
    if info.clustering:
        out.print(f"\nlayout: {info.strategy} on {list(info.clustering)}"
                  + (f", rows sorted within files by {list(info.sort_within)}" if info.sort_within else ""))
    elif info.sort_within:
        out.print(f"\nlayout: rows sorted within files by {list(info.sort_within)}")
    if info.column_clustering:
        out.print(text_table([["column", "files holding a value (avg)", "files"]]
                             + [[c.column, f"{c.depth:.1f}", str(c.files)] for c in info.column_clustering],
                             right_aligned={1, 2}))
    if info.index_coverage:
        out.print(text_table([["index", "files with it", "files"]]
                             + [[name, str(have), str(total)] for name, (have, total) in info.index_coverage.items()],
                             right_aligned={1, 2}, title="\nindexes"))
    for name, model in info.aggregate_models.items():
        kept = "" if model["rows_kept"] is None else f"; files keep {model['rows_kept']:.1%} of their rows"
        out.print(f"pre-aggregate {name}: group by {model['group_by']}, {', '.join(model['measures'])}{kept}")


def compact(args: argparse.Namespace) -> int:
    table = open_table(args)
    with progress("compact", "rows", enabled=not args.no_progress) as update:
        snapshot = table.compact(full=args.full, progress=update)
    out_console.print(f"committed snapshot {snapshot.id}" if snapshot else "nothing to compact")
    return 0


def _rows(n: int) -> str:
    return f"({n:,} row{'' if n == 1 else 's'})"


def _order_by(text: str | None, schema: pa.Schema) -> list[tuple[str, str]] | None:
    """'ts:desc,id' as [("ts", "desc"), ("id", "asc")]."""
    if not text:
        return None
    out = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        column, _, direction = part.partition(":")
        direction = direction.strip().lower() or "asc"
        if column not in schema.names or direction not in ("asc", "desc"):
            raise InvalidArgumentError(f"cannot read --order-by {part!r}: write column[:asc|desc]; columns: "
                                       f"{schema.names}")
        out.append((column, direction))
    return out


def read(args: argparse.Namespace) -> int:
    if is_iceberg_location(args.path):
        return _read_iceberg(args)
    table = open_table(args)
    filters = [parse_filter(f, table.schema) for f in args.filter or []]
    columns = [c.strip() for c in args.columns.split(",")] if args.columns else None
    order_by = _order_by(args.order_by, table.schema)
    top = args.limit if order_by else None  # with an order, the limit is a Top-N read
    if args.explain:
        plan = table.plan(filters or None, args.snapshot, order_by=order_by, limit=top)
        out_console.print(text_table(plan.explain(), right_aligned={1, 2}, title="plan"))
        if plan.row_groups_skipped:
            out_console.print(f"row groups skipped inside the files read: {plan.row_groups_skipped:,}")
    result = table.read(columns=columns, filter=filters or None, snapshot=args.snapshot, order_by=order_by,
                        limit=top, sorted=args.sorted)
    return _show_read(args, result, table.last_read)


def _read_iceberg(args: argparse.Namespace) -> int:
    """`read` of an Iceberg table: pruned by pyiceberg's planning, filtered exactly, logged; an
    --order-by sorts what the filter keeps (an Iceberg table has no key order to merge in)."""
    table = open_organized(args)
    assert isinstance(table, IcebergTable)
    if args.sorted:
        raise InvalidArgumentError(f"--sorted reads in primary-key order: {args.path} is an Iceberg table, which has "
                                   f"no primary key (--order-by COL sorts the rows)")
    filters = [parse_filter(f, table.schema) for f in args.filter or []]
    columns = [c.strip() for c in args.columns.split(",")] if args.columns else None
    order_by = _order_by(args.order_by, table.schema)
    if order_by:
        wanted = list(dict.fromkeys([*(columns or table.schema.names), *(c for c, _ in order_by)]))
        rows = table.read(columns=wanted, filter=filters or None, snapshot=args.snapshot)
        ordering = [(c, "ascending" if d == "asc" else "descending") for c, d in order_by]
        rows = rows.sort_by(ordering)  # nulls last, as a Paimon table's Top-N read puts them
        result = rows.slice(0, args.limit).select(columns or table.schema.names)
    else:
        result = table.read(columns=columns, filter=filters or None, snapshot=args.snapshot)
    return _show_read(args, result, table.last_read, "; pyiceberg's planning pruned by partitions and the "
                                                     "manifests' column bounds")


def _show_read(args: argparse.Namespace, result: pa.Table, stats: Any, pruned_by: str = "") -> int:
    """A read's rows (up to --limit), their count and, with --explain, the files it read."""
    if args.limit:
        out_console.print(arrow_preview(result, args.limit))
    out_console.print(_rows(result.num_rows))
    if args.explain and stats is not None:
        out_console.print(f"read {stats.files_read:,} of {stats.files_total:,} files "
                          f"({stats.bytes_read / 2**20:.1f} of {stats.bytes_total / 2**20:.1f} MiB{pruned_by})")
    return 0


def changes(args: argparse.Namespace) -> int:
    table = open_table(args)
    filters = [parse_filter(f, table.schema) for f in args.filter or []]
    columns = [c.strip() for c in args.columns.split(",")] if args.columns else None
    reader = table.changes(args.start, args.end, columns=columns, filter=filters or None, per_commit=args.per_commit,
                           source=args.source)
    shown: list[pa.RecordBatch] = []
    rows = 0
    for batch in reader:  # counted whole, kept only up to the limit
        if rows < args.limit:
            shown.append(batch.slice(0, args.limit - rows))
        rows += batch.num_rows
    result = pa.Table.from_batches(shown, schema=reader.schema)
    if args.format == "json":
        for row in result.to_pylist():
            out_console.print(json.dumps(row, default=str), markup=False, highlight=False, soft_wrap=True)
        return 0
    if args.format == "csv":
        buffer = io.BytesIO()
        pacsv.write_csv(result, buffer)
        out_console.print(buffer.getvalue().decode().rstrip("\n"), markup=False, highlight=False, soft_wrap=True)
        return 0
    if args.limit:
        out_console.print(arrow_preview(result, args.limit))
    end = args.end if args.end is not None else (table.directory.store.latest_id() or 0)
    if isinstance(args.start, int) and isinstance(end, int) and end > args.start:
        out_console.print(f"{_rows(rows)} changed by snapshots {args.start + 1}..{end}")
    else:
        out_console.print(f"{_rows(rows)} changed" + (f" from {args.start} to {end}" if args.start != end else ""))
    return 0


def delete(args: argparse.Namespace) -> int:
    """Delete the rows the filters (ANDed) select, in one snapshot."""
    table = open_table(args)
    filters = [parse_filter(f, table.schema) for f in args.filter]
    before = table.read(columns=[table.schema.names[0]], filter=filters).num_rows if args.count else None
    done = table.delete(filter=filters)
    if done is None:
        out_console.print("nothing matched; nothing was written")
    else:
        counted = f"{before:,} row(s) " if before is not None else "rows "
        out_console.print(f"deleted {counted}in snapshot {done.id} ({done.commit_kind})")
    return 0


def migrate(args: argparse.Namespace) -> int:
    """A table of mergetree's older format made into an Apache Paimon table (with a progress bar)."""
    options = storage_options(args)
    with progress("migrate", "rows", enabled=not args.no_progress) as advance:
        report = migrate_table(args.old, args.new, options, advance)
    for line in report.lines():
        out_console.print(line, markup=False, highlight=False)
    return 0


def tag(args: argparse.Namespace) -> int:
    """Create a tag (of --snapshot, default the latest), delete one, or list the table's tags."""
    table = open_table(args)
    if args.delete:
        if args.snapshot is not None:
            raise InvalidArgumentError("--delete takes no --snapshot")
        table.delete_tag(args.delete)
        out_console.print(f"deleted tag {args.delete!r}")
        return 0
    if args.name:
        tagged = table.create_tag(args.name, args.snapshot)
        out_console.print(f"tagged snapshot {tagged.id} as {args.name!r}")
        return 0
    rows = [["tag", "snapshot", "committed", "rows"]]
    for name, snap in table.tags().items():
        when = dt.datetime.fromtimestamp(snap.time_millis / 1000).isoformat(sep=" ", timespec="seconds")
        rows.append([name, str(snap.id), when, f"{snap.total_record_count:,}"])
    out_console.print(text_table(rows, right_aligned={1, 3}) if len(rows) > 1 else "no tags")
    return 0


def snapshot_arg(text: str) -> int | str:
    """A --snapshot: an id, else a tag name or an ISO 8601 point in time (the table tells which)."""
    value = text.strip()
    return int(value) if value.isdigit() else value


def optimize(args: argparse.Namespace) -> int:
    order = [c.strip() for c in args.order.split(",")] if args.order else None
    within = [c.strip() for c in args.sort_within.split(",")] if args.sort_within else None
    if is_iceberg_location(args.path):
        return _optimize_iceberg(args, order, within)
    table = open_table(args)
    filters = [parse_filter(f, table.schema) for f in args.filter or []]
    with progress("optimize", "rows", enabled=not args.no_progress) as update:
        snapshot = table.optimize(order=order, strategy=args.strategy, filter=filters or None,
                                  sort_within=within, progress=update)
    out_console.print(f"committed snapshot {snapshot.id}" if snapshot else "nothing to optimize")
    _print_organization(table.info())
    return 0


def _optimize_iceberg(args: argparse.Namespace, order: list[str] | None, within: list[str] | None) -> int:
    if args.filter:
        raise InvalidArgumentError("--filter is not taken for an Iceberg table: a pass rewrites each partition whole")
    table = open_organized(args)
    assert isinstance(table, IcebergTable)
    with progress("optimize", "partitions", enabled=not args.no_progress) as update:
        result = table.optimize(tier=args.tier, progress=update, order=order, strategy=args.strategy,
                                sort_within=within)
    out_console.print(repr(result))
    for reason in result.conflicts:
        out_console.print(f"given up (another commit changed its files): {reason}")
    return 0


def build_indexes(args: argparse.Namespace) -> int:
    table = open_table(args)
    with progress("build indexes", "rows", enabled=not args.no_progress) as update:
        snapshot = table.build_indexes(progress=update)
    out_console.print(f"committed snapshot {snapshot.id}" if snapshot else "every file has its indexes")
    return 0


def _column_path(text: str, schema: pa.Schema) -> str | tuple[str, ...]:
    """A column named on the command line: a top-level name, else a dotted path to a nested field."""
    name = text.strip()
    return name if name in schema.names or "." not in name else tuple(name.split("."))


def _split(text: str, what: str, sep: str = ":") -> tuple[str, str]:
    head, found, tail = text.partition(sep)
    if not found or not head.strip() or not tail.strip():
        raise InvalidArgumentError(f"--{what} takes {'NAME:TYPE' if what != 'rename' else 'OLD:NEW'}, not {text!r}")
    return head.strip(), tail.strip()


def alter(args: argparse.Namespace) -> int:
    """The table's columns changed in one schema change (the changes in the order given)."""
    table = open_table(args)
    schema = table.schema
    if not args.changes:
        raise InvalidArgumentError("name a change: --add, --rename, --drop, --retype, --nullable, --required, "
                                   "--comment or --move")
    update = table.update_schema()
    for kind, text in args.changes:
        if kind == "add":
            name, type_text = _split(text, kind)
            update.add_column(_column_path(name, schema), type_text)
        elif kind == "rename":
            old, new = _split(text, kind)
            update.rename_column(_column_path(old, schema), new)
        elif kind == "drop":
            update.drop_column(_column_path(text, schema))
        elif kind == "retype":
            name, type_text = _split(text, kind)
            update.update_column(_column_path(name, schema), field_type=type_text)
        elif kind in ("nullable", "required"):
            update.update_column(_column_path(text, schema), required=kind == "required")
        elif kind == "comment":
            name, doc = _split(text, kind)
            update.update_column(_column_path(name, schema), doc=doc)
        else:  # move NAME:first|last|after=COL|before=COL
            name, where = _split(text, kind)
            place, _, other = where.partition("=")
            if place not in ("first", "last", "after", "before") or (place in ("after", "before")) != bool(other):
                raise InvalidArgumentError(f"--move takes NAME:first, NAME:last, NAME:after=COL or NAME:before=COL, "
                                           f"not {text!r}")
            update.move_column(name, first=place == "first", last=place == "last",
                               after=other if place == "after" else None, before=other if place == "before" else None)
    update.commit()
    out_console.print(f"schema of {table.path} changed ({len(args.changes)} change(s)):")
    ts = table.table_schema
    out_console.print(text_table([["column", "type", "nullable"]] + [[f.name, str(f.type), str(f.nullable)]
                                                                      for f in ts.schema]))
    return 0


def expire(args: argparse.Namespace) -> int:
    table = open_table(args)
    older = dt.timedelta(hours=args.older_than_hours) if args.older_than_hours is not None else None
    expired = table.expire_snapshots(retain_last=args.retain, older_than=older, retain_max=args.retain_max)
    kept = table.directory.store.snapshot_ids()
    out_console.print(f"expired {len(expired)} snapshot(s)" + (f": {expired[0]}..{expired[-1]}" if expired else "")
                      + (f"; kept {len(kept)}: {kept[0]}..{kept[-1]}" if kept else ""))
    if args.orphans:
        removed = table.remove_orphan_files(older_than=dt.timedelta(hours=args.orphans_older_than_hours))
        out_console.print(f"removed {len(removed)} orphan file(s)")
    return 0


def repair(args: argparse.Namespace) -> int:
    path = args.path.rstrip("/") if is_uri(args.path) else os.path.abspath(args.path)
    parent, _, name = path.rpartition("/") if is_uri(path) else (os.path.dirname(path), "", os.path.basename(path))
    if name in housekeeping.LOGS and parent and storage_options(args) is not None:
        remember_location(args, parent)  # the log is found (and its table checked) through the table's store
    path = remember_location(args, path)
    if housekeeping.is_log(path):  # `mergetree repair TABLE/queries`: the log alone, even one that cannot be opened
        what = housekeeping.LOGS[os.path.basename(path)]
        done = housekeeping.repair_log(path)
        if not done:
            out_console.print(f"nothing to repair: the {what} at {path} is intact")
        for line in done:
            out_console.print(f"repaired: {line}")
        return 0
    done = Table.repair(path, storage_options=storage_options(args))
    if not done:
        out_console.print("nothing to repair: the latest snapshot is intact, and so are the query log and the "
                          "optimizer history")
        return 0
    for line in done:
        out_console.print(f"repaired: {line}")
    latest = open_table(args, path).latest_snapshot()
    out_console.print(f"the table continues from snapshot {latest.id if latest else '(none: it is empty)'}")
    return 0
