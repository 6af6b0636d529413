"""The commands of data organization by the query history: `queries import`, `queries show`,
`advise`."""
from __future__ import annotations

import argparse
import datetime as dt
import json
from collections import Counter

from rich.table import Table as RichTable
from rich.text import Text

from ..errors import InvalidArgumentError
from ..iceberg import is_iceberg_location
from ..iceberg import open as open_iceberg
from ..organize import build_report, import_sql, render_html, run_daemon, write_pngs
from ..organize import replay as replay_queries
from ..organize.report import column_usage
from ..organize.scheduler import interval_seconds
from ..table.compaction.planner import parse_memory_size
from ..table.durations import parse_since, since_moment
from ..table.workload import querylog
from ..table.workload.advise import Advice, LoggedQuery
from .options import open_organized, open_table, remember_location, storage_options
from .render import out_console, progress, text_table

__all__ = ["advise", "optimize_daemon", "parse_age", "queries_expire", "queries_import", "queries_show",
           "render_advice", "replay"]


def parse_age(text: str) -> dt.timedelta | dt.datetime:
    """--since: an age ('30d', '12h', '90m', '2w', '45s') or an ISO 8601 moment ('2024-05-01'),
    read by the table layer's `durations.parse_since`: the forms `Table.advise(since=...)` takes."""
    try:
        since = parse_since(text)
    except InvalidArgumentError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    assert since is not None
    return since


def queries_import(args: argparse.Namespace) -> int:
    with progress("parse SQL", "characters", enabled=not args.no_progress) as update:
        result = import_sql(remember_location(args, args.path), args.sql, dialect=args.dialect, table_name=args.table,
                            progress=update, encoding=args.encoding, max_statement_chars=args.max_statement_chars)
    out_console.print(result.summary(), markup=False, highlight=False, soft_wrap=True)
    shown = 3  # examples per kind, one line each
    for prefix, lines in (("refused", result.refused), ("skipped", result.errors)):
        for line in lines[:shown]:
            out_console.print(f"  {prefix} {line}", markup=False, highlight=False, soft_wrap=True)
    dropped = result.dropped_summary()
    if dropped is not None:
        out_console.print(dropped, markup=False, highlight=False, soft_wrap=True)
        for line in result.dropped_examples[:shown]:
            out_console.print(f"  {line}", markup=False, highlight=False, soft_wrap=True)
    return 0


def queries_expire(args: argparse.Namespace) -> int:
    expired = open_organized(args).expire_queries(args.retention)
    if expired.cutoff is None:
        out_console.print("the query log is kept forever (query-log.retention); nothing removed")
        return 0
    out_console.print(f"removed {expired.rows:,} queries logged before {expired.cutoff:%Y-%m-%d %H:%M} UTC: "
                      f"{len(expired.dropped)} files dropped, {len(expired.rewritten)} rewritten, "
                      f"{len(expired.snapshots)} log snapshots expired, {len(expired.deleted)} old files deleted")
    return 0


def queries_show(args: argparse.Namespace) -> int:
    table = open_organized(args)
    moment = since_moment(args.since)
    # this process's records written first; a damaged file of the log is left out with a warning
    rows = querylog.read_rows(table.path, filter=None if moment is None else ("ts", ">=", moment))
    if rows.num_rows == 0:
        out_console.print(f"no queries logged yet for {table.path}" if moment is None else "no queries in that period")
        return 0
    records = rows.to_pylist()
    out_console.print(f"{len(records):,} queries logged, {records and min(r['ts'] for r in records):%Y-%m-%d %H:%M} "
                      f"to {max(r['ts'] for r in records):%Y-%m-%d %H:%M} UTC")
    by = Counter((r["source"], r["kind"]) for r in records)
    out_console.print(text_table([("source", "kind", "queries"),
                                  *[(s, k, f"{n:,}") for (s, k), n in by.most_common()]], right_aligned={2}))
    columns = column_usage(LoggedQuery.from_row(r) for r in records)  # the report counts with the same function
    if columns:
        out_console.print(text_table([("filtered column", "predicates (queries)", "queries", "share", "files skipped"),
                                      *[(u.column, u.kinds_text(), f"{u.queries:,}", f"{u.queries / len(records):.0%}",
                                         u.skipped_text()) for u in columns[:args.top]]], right_aligned={2, 3, 4}))
    scanned = [r for r in records if r["bytes_total"]]
    if scanned:
        share = sum(r["bytes_scanned"] for r in scanned) / sum(r["bytes_total"] for r in scanned)
        out_console.print(f"bytes scanned: {share:.1%} of the bytes the queries' snapshots held")
    return 0


_STATUS_STYLE = {"kept": "", "added": "green", "removed": "red"}


def render_advice(advice: Advice) -> RichTable:
    """Current vs recommended per lever: kept plain, added green, removed red (as the seed's page)."""
    table = RichTable(show_edge=False, pad_edge=False, box=None, header_style="bold", show_lines=False,
                      title=f"{advice.queries:,} logged queries, {advice.replayed:,} replayed on simulated layouts",
                      title_justify="left")
    for name in ("lever", "current", "recommended", "files per query (replay)", "why"):
        table.add_column(name, overflow="fold")
    for lever in advice.levers:
        current = Text(", ".join(lever.current) or "-")
        recommended = Text()
        for i, (item, status) in enumerate(lever.changes):
            if i:
                recommended.append(", ")
            recommended.append(("-" if status == "removed" else "+" if status == "added" else "") + item,
                               style=_STATUS_STYLE[status])
        if not lever.changes:
            recommended.append("-")
        effect = (f"{lever.files_before:.1f} -> {lever.files_after:.1f} ({lever.queries:,} queries)"
                  if lever.files_before is not None and lever.files_after is not None else "")
        table.add_row(lever.lever, current, recommended, effect, Text(lever.reason))
    return table


def advise(args: argparse.Namespace) -> int:
    table = open_organized(args)
    advice = table.advise(since=args.since, apply=args.apply)  # flushes this process's records first
    if args.json:
        print(json.dumps(advice.to_json(), indent=2, default=str))
        return 0
    out_console.print(render_advice(advice))
    for reason in advice.refused:
        out_console.print(Text(f"not recommended: {reason}", style="dim"))
    if advice.reduction is not None:
        out_console.print(f"expected: {advice.files_before:.1f} -> {advice.files_after:.1f} files per query, "
                          f"{advice.reduction:.0%} fewer bytes scanned (replay of {advice.replayed:,} queries; "
                          f"{advice.seconds:.1f}s)")
    if args.apply:
        out_console.print("applied to the table's options" if advice.options else "nothing to apply")
        if advice.options:
            out_console.print(f"run `mergetree optimize {table.path}` to rewrite the files accordingly")
    elif advice.options:
        out_console.print(f"`mergetree advise {table.path} --apply` writes: "
                          + ", ".join(f"{k}={v if v is not None else '(removed)'}" for k, v in advice.options.items()))
    return 0


def _mib(n: float) -> str:
    return f"{n / 2**20:,.1f} MiB"


def replay(args: argparse.Namespace) -> int:
    with progress("replay", "queries", enabled=not args.no_progress) as update:
        result = replay_queries(remember_location(args, args.path), since=args.since, limit=args.limit or None,
                                layout=args.layout,
                                bloom=[c.strip() for c in (args.bloom or "").split(",") if c.strip()],
                                bitmap=[c.strip() for c in (args.bitmap or "").split(",") if c.strip()],
                                progress=update)
    n = len(result.queries)
    if n == 0:
        out_console.print("no replayable queries logged" + (f" ({result.skipped} without a kept filter)"
                                                           if result.skipped else ""))
        return 0
    if args.per_query:
        rows = [("query", "files then", "files now", "bytes then", "bytes now")]
        for q in result.queries[:args.per_query]:
            rows.append((q.predicates, "" if q.logged_files is None else f"{q.logged_files:,}", f"{q.files:,.1f}",
                         "" if q.logged_bytes is None else _mib(q.logged_bytes), _mib(q.bytes)))
        out_console.print(text_table(rows, right_aligned={1, 2, 3, 4}))
    layout = "the table as it is now" if result.layout == "current" else f"simulated {result.layout}"
    out_console.print(text_table([
        ("replayed queries", "on", "files per query", "bytes per query", "as logged (files, bytes)"),
        (f"{n:,}", layout, f"{result.files / n:,.1f}", _mib(result.bytes / n),
         f"{result.logged_files / m:,.1f}, {_mib(result.logged_bytes / m)}" if (m := len(result.measured))
         else "not measured (imported)")], right_aligned={0, 2, 3}))
    if result.summary():  # like with like: measured queries as run, a simulated layout against the current files
        out_console.print(result.summary())
    if result.skipped:
        out_console.print(f"{result.skipped:,} logged queries had no replayable filter and were left out")
    return 0


def _count(text: str, name: str) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        value = None
    if value is None or value < 1:
        raise InvalidArgumentError(f"{name} must be a positive integer, not {text!r}")
    return value


def optimize_daemon(args: argparse.Namespace) -> int:
    # wrong arguments are an error before any table is opened
    interval_seconds(args.interval, "--interval")
    max_tasks = _count(args.max_tasks, "--max-tasks")
    per_table = _count(args.max_tasks_per_table, "--max-tasks-per-table")
    task_bytes = parse_memory_size(args.max_task_size, "--max-task-size")
    if task_bytes < 1:
        raise InvalidArgumentError(f"--max-task-size must be more than 0 bytes, not {args.max_task_size!r}")
    # a wrong path is an error now, not every round
    paths = [open_iceberg(path, storage_options(args)).path if is_iceberg_location(path)
             else open_table(args, path).path for path in args.paths]
    committed = run_daemon(paths, interval=args.interval, once=args.once,
                           on_report=lambda r: out_console.print(f"{r.table}: {r.line()}"), max_tasks=max_tasks,
                           max_tasks_per_table=per_table, max_task_bytes=task_bytes, since=args.since)
    out_console.print(f"{committed} pass(es) committed")
    return 0


def report(args: argparse.Namespace) -> int:
    if not args.html and not args.png:
        raise InvalidArgumentError("say where to write the report: --html FILE and/or --png DIR")
    data = build_report(remember_location(args, args.path), since=args.since)
    if args.html:
        with open(args.html, "w", encoding="utf-8") as handle:
            handle.write(render_html(data))
        out_console.print(f"report written to {args.html}")
    if args.png:
        for path in write_pngs(data, args.png):
            out_console.print(f"chart written to {path}")
    return 0
