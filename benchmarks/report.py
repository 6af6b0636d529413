"""What the benchmarks share about results and how they show them: comparing a reader's rows
with the expected ones, rates as text, results made ready for JSON, the installed version of
a peer, and printing a report at its full width.  Every harness reports through here; none
imports another harness for it."""
from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from rich.console import Console, RenderableType
from rich.measure import Measurement

from mergetree.cli import render

__all__ = ["compare_tables", "duckdb_answer", "installed_version", "json_ready", "query_lines", "rate_text",
           "same_rows", "show"]


def compare_tables(got: pa.Table, expected: pa.Table, key: str) -> str:
    """'ok' when `got` (any row order, any extra columns) holds exactly the rows of `expected`,
    which is sorted by `key`; otherwise what differs, starting with "wrong:"."""
    if got.num_rows != expected.num_rows:
        return f"wrong: {got.num_rows:,} rows, expected {expected.num_rows:,}"
    names = expected.schema.names
    missing = [c for c in names if c not in got.column_names]
    if missing:
        return f"wrong: no column(s) {missing}"
    got = got.select(names)
    got = got.take(pc.sort_indices(got, [(key, "ascending")]))
    for name in names:
        want = expected.column(name).combine_chunks()
        have = got.column(name).combine_chunks()
        if have.type != want.type:
            have = pc.cast(have, want.type)
        if not have.equals(want):
            where = np.flatnonzero(~pc.fill_null(pc.equal(have, want), False).to_numpy(zero_copy_only=False))
            first = int(where[0]) if len(where) else 0
            what = "the key set" if name == key else f"values of {name!r}"
            return f"wrong: {what} differ ({len(where):,} rows, first at {key} {want[first].as_py()})"
    return "ok"


def json_ready(value: Any) -> Any:
    """NaN (not measured) as null, in nested dicts and lists too: JSON has no NaN."""
    if isinstance(value, float) and value != value:
        return None
    if isinstance(value, dict):
        return {k: json_ready(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_ready(v) for v in value]
    return value


def rate_text(per_second: float, unit: str = "") -> str:
    """``2.31 M/s`` / ``845.2 k/s`` (``unit=" rows"``: ``2.31 M rows/s``); ``-`` for NaN (a run
    that failed or did not happen)."""
    if per_second != per_second:
        return "-"
    if per_second >= 1e6:
        return f"{per_second / 1e6:.2f} M{unit}/s"
    return f"{per_second / 1e3:.1f} k{unit}/s"


def installed_version(distribution: str) -> str | None:
    """The installed version of a distribution (a peer: ``pypaimon-rust``, ``deltalake``), or None."""
    from importlib import metadata

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def show(renderable: RenderableType) -> None:
    """Print a report on standard output at its full width: a console narrower than the
    table (a pipe or a CI log counts as 80 columns) would otherwise cut its cells short."""
    console = render.out_console
    width = Measurement.get(console, console.options.update_width(1_000_000), renderable).maximum
    if width > console.width:
        # Console.print never goes wider than its console: print through one as wide as the report
        console = Console(file=console.file, width=width, highlight=False, force_terminal=console.is_terminal,
                          no_color=console.no_color)
    console.print(renderable)


def duckdb_answer(connection, sql: str) -> pa.Table:
    """The answer of `sql` on a DuckDB connection, as a pyarrow table."""
    table = connection.sql(sql).arrow()
    return table.read_all() if isinstance(table, pa.RecordBatchReader) else table


def same_rows(got: pa.Table, want: pa.Table) -> str:
    """'ok' when the two answers hold the same rows (in any order: ties of ORDER BY may swap)."""
    if got.num_rows != want.num_rows:
        return f"wrong: {got.num_rows:,} rows, DuckDB {want.num_rows:,}"
    if got.column_names != want.column_names:
        return f"wrong: columns {got.column_names}, DuckDB {want.column_names}"
    key = lambda row: tuple((v is None, str(v)) for v in row.values())  # noqa: E731
    if sorted(got.to_pylist(), key=key) != sorted(want.to_pylist(), key=key):
        return "wrong: the rows differ"
    return "ok"


def query_lines(queries: Any) -> list[str]:
    """The per-query table of an SSB run (before and after organizing): each query's answer
    check, files and MiB before and after, and the share of its bytes left."""
    mib = 2**20
    lines = [f"{'query':<6} {'date/range':>10} {'rows':>6} {'answer':>8} {'files before':>12} {'files after':>11} "
             f"{'MiB before':>10} {'MiB after':>9} {'after %':>8}"]
    for q in queries:
        lines.append(f"{q.name:<6} {'yes' if q.date_or_range else '':>10} {q.rows:>6,} {q.answer:>8} "
                     f"{q.files_before:>12} {q.files_after:>11} {q.bytes_before / mib:>10,.1f} "
                     f"{q.bytes_after / mib:>9,.1f} {q.ratio:>8.1%}")
    return lines
