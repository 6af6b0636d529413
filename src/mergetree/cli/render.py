"""Terminal output for the command line and the tools beside the library (benchmarks, demos):
tables and progress bars, drawn with `rich`.  The library itself never draws; it reports
progress through callbacks, which `progress` turns into a bar."""
from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import pyarrow as pa
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table
from rich.text import Text

__all__ = ["arrow_preview", "err_console", "out_console", "progress", "text_table"]

# Piped or logged output is not cut to 80 columns: tables keep their full width there.
_WIDE = 240
out_console = Console(highlight=False, width=None if sys.stdout.isatty() else _WIDE)
err_console = Console(stderr=True, highlight=False, width=None if sys.stderr.isatty() else _WIDE)


def text_table(rows: Sequence[Sequence[object]], right_aligned: set[int] | frozenset[int] = frozenset(),
               title: str | None = None) -> Table:
    """Rows of cells (the first is the header) as a rich table, ready to print."""
    header, *body = rows
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False, box=None,
                  header_style="bold")
    for i, name in enumerate(header):
        table.add_column(str(name), justify="right" if i in right_aligned else "left", no_wrap=True)
    for row in body:  # cells are plain text, never rich markup ("[x]" stays "[x]")
        table.add_row(*(Text(str(cell)) for cell in row))
    return table


def arrow_preview(data: pa.Table, limit: int) -> Table:
    """The first `limit` rows of an Arrow table; the caption counts what was left out."""
    header = [f.name for f in data.schema]
    numeric = {i for i, f in enumerate(data.schema) if pa.types.is_integer(f.type) or pa.types.is_floating(f.type)}
    rows = [header] + [["null" if v is None else str(v) for v in row.values()]
                       for row in data.slice(0, limit).to_pylist()]
    table = text_table(rows, numeric)
    if data.num_rows > limit:
        table.caption = f"... {data.num_rows - limit:,} more rows"
        table.caption_justify = "left"
    return table


@contextmanager
def progress(description: str, unit: str = "rows", console: Console | None = None,
             enabled: bool = True) -> Iterator[Callable[[int, int], None]]:
    """A progress bar for the duration of the block; yields `update(done, total)`, the
    callback the library's long operations take."""
    if not enabled:
        yield lambda done, total: None
        return
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn(unit),
               TimeElapsedColumn(), TimeRemainingColumn())
    with Progress(*columns, console=console or err_console, transient=False) as bar:
        task = bar.add_task(description, total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)
        yield update
