"""The commands of data organization by the query history: `queries import`, `queries show`."""
from __future__ import annotations

import argparse
import datetime as dt
import os
import re
from collections import Counter

import pyarrow.compute as pc

from ..organize import import_sql
from ..table import Table
from ..table.querylog import log_path
from .render import out_console, progress, text_table

__all__ = ["parse_age", "queries_import", "queries_show"]

_AGE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}


def parse_age(text: str) -> dt.timedelta:
    """'30d', '12h', '90m', '2w', '45s' -> a timedelta."""
    match = _AGE.fullmatch(text or "")
    if match is None:
        raise argparse.ArgumentTypeError(f"an age is a number and a unit (s, m, h, d, w), like 30d, not {text!r}")
    return dt.timedelta(seconds=float(match.group(1)) * _SECONDS[match.group(2)])


def queries_import(args: argparse.Namespace) -> int:
    with progress("parse SQL", "lines", enabled=not args.no_progress) as update:
        result = import_sql(args.path, args.sql, dialect=args.dialect, table_name=args.table, progress=update)
    out_console.print(result.summary())
    for error in result.errors:
        out_console.print(f"  skipped {error}")
    return 0


def queries_show(args: argparse.Namespace) -> int:
    table = Table.open(args.path)
    log = log_path(table.path)
    if not os.path.isdir(log):
        out_console.print(f"no queries logged yet for {table.path}")
        return 0
    rows = Table.open(log).read()
    if args.since is not None:
        cutoff = dt.datetime.now(dt.timezone.utc) - args.since
        rows = rows.filter(pc.field("ts") >= cutoff)
    if rows.num_rows == 0:
        out_console.print("no queries in that period")
        return 0
    records = rows.to_pylist()
    out_console.print(f"{len(records):,} queries logged, {records and min(r['ts'] for r in records):%Y-%m-%d %H:%M} "
                      f"to {max(r['ts'] for r in records):%Y-%m-%d %H:%M} UTC")
    by = Counter((r["source"], r["kind"]) for r in records)
    out_console.print(text_table([("source", "kind", "queries"),
                                  *[(s, k, f"{n:,}") for (s, k), n in by.most_common()]], right_aligned={2}))
    columns = Counter((p["column"], p["kind"]) for r in records for p in r["predicates"] or [] if p["column"])
    if columns:
        out_console.print(text_table([("filtered column", "predicate", "queries", "share"),
                                      *[(c, k, f"{n:,}", f"{n / len(records):.0%}")
                                        for (c, k), n in columns.most_common(args.top)]], right_aligned={2, 3}))
    scanned = [r for r in records if r["bytes_total"]]
    if scanned:
        share = sum(r["bytes_scanned"] for r in scanned) / sum(r["bytes_total"] for r in scanned)
        out_console.print(f"bytes scanned: {share:.1%} of the bytes the queries' snapshots held")
    return 0
