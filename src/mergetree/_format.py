"""Plain-text tables for the command line."""
from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa


def text_table(rows: Sequence[Sequence[str]], right_aligned: set[int] = frozenset()) -> str:
    """Rows of cells (the first is the header) as aligned columns with a rule under the header."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.rjust(w) if i in right_aligned else cell.ljust(w)
                       for i, (cell, w) in enumerate(zip(row, widths))).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def arrow_table(table: pa.Table, limit: int = 8) -> str:
    """The first `limit` rows of an Arrow table as text, with a row count."""
    header = [f.name for f in table.schema]
    rows = [header] + [["null" if v is None else str(v) for v in row.values()]
                       for row in table.slice(0, limit).to_pylist()]
    more = f"\n... {table.num_rows - limit:,} more rows" if table.num_rows > limit else ""
    numeric = {i for i, f in enumerate(table.schema) if pa.types.is_integer(f.type) or pa.types.is_floating(f.type)}
    return text_table(rows, numeric) + more
