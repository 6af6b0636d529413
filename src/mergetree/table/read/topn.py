"""Top-N reads (`order_by` + `limit`) as rules over file statistics: which files' rows are
final, their reading order (best value first), the bound that drops a file before reading
(`plan_top_n`), the test that stops a read (`cannot_beat`), and the exact order of the answer
(`top_rows`)."""
from __future__ import annotations

from typing import Any

import pyarrow as pa

from ...errors import InvalidArgumentError
from ...merge.arrow_input import sort_indices
from ..directory import TableDirectory
from ..files import DataFileMeta
from ..type_policy import require
from .model import OrderBy, ReadPlan

__all__ = ["cannot_beat", "checked_order_by", "final_units", "in_reading_order", "plan_top_n", "top_rows"]

def checked_order_by(order_by: Any, limit: Any, schema: pa.Schema | None) -> tuple[OrderBy, int | None]:
    """`order_by` ([(column, "asc"|"desc")], a column name, or a list of names) and `limit`,
    checked: their shapes, and with `schema` the columns and that their types can be ordered."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise InvalidArgumentError(f"limit must be a non-negative integer or None, not {limit!r}")
    if order_by is None:
        return [], limit
    items = [order_by] if isinstance(order_by, (str, tuple)) else order_by
    if not isinstance(items, list) or not items:
        raise InvalidArgumentError(f"order_by must be a column, (column, 'asc'|'desc'), or a list of them, "
                                   f"not {order_by!r}")
    out: OrderBy = []
    for item in items:
        column, direction = (item, "asc") if isinstance(item, str) else (tuple(item) + ("asc",))[:2]
        if not isinstance(column, str) or (schema is not None and column not in schema.names):
            names = schema.names if schema is not None else []
            raise InvalidArgumentError(f"order_by names {column!r}, which is not a column; columns: {names}")
        if direction not in ("asc", "desc"):
            raise InvalidArgumentError(f"order_by direction must be 'asc' or 'desc', not {direction!r}")
        if schema is not None:
            require(column, schema.field(column).type, "order")
        out.append((column, direction))
    return out, limit


def _best(meta: DataFileMeta, column: str, direction: str) -> tuple[int, Any]:
    """A sort key for reading files in Top-N order: the best value the file can offer."""
    lo, hi, _ = meta.stats.get(column, (None, None, 0))
    value = lo if direction == "asc" else hi
    if value is None:
        return (1, 0)  # only nulls (or no statistics): nulls sort last
    return (0, value)


def final_units(directory: TableDirectory, plan: ReadPlan, column: str) -> tuple[list, list]:
    """(must, optional): what a Top-N read on `column` always reads (several overlapping runs
    of a primary-key table; files without statistics for the column), and single files whose
    rows are final, ranked by their statistics."""
    must: list = []
    optional: list = []
    for b in plan.buckets:
        for section in b.sections:
            if directory.schema.has_primary_key and not (len(section) == 1 and len(section[0]) == 1):
                must.append((b, section))
                continue
            for run in section:
                lo, _, nulls = run[0].stats.get(column, (None, None, 0))
                known = column in run[0].stats and (lo is not None or nulls == run[0].row_count)
                (optional if known else must).append((b, [run]))
    return must, optional


def in_reading_order(units: list, column: str, direction: str) -> list:
    """Final single-file units in Top-N reading order: best value first, files of nulls last."""
    valued = [u for u in units if _best(u[1][0][0], column, direction)[0] == 0]
    nulls = [u for u in units if _best(u[1][0][0], column, direction)[0] == 1]
    valued.sort(key=lambda u: _best(u[1][0][0], column, direction)[1], reverse=direction == "desc")
    return valued + nulls


def plan_top_n(directory: TableDirectory, plan: ReadPlan, order_by: OrderBy, limit: int) -> None:
    """Without a row filter, file statistics alone bound a Top-N read: the best files that
    together hold `limit` rows set a threshold, and a file whose best value is worse cannot
    contribute.  (With a filter, the read decides the same while it runs.)  Merged sections
    count no rows here: their row count after the merge is unknown."""
    column, direction = order_by[0]
    _, optional = final_units(directory, plan, column)
    if any(_best(run[0][0], column, direction)[0] == 1 for _, run in optional):
        return
    ordered = in_reading_order(optional, column, direction)
    rows, threshold = 0, None
    for _, run in ordered:
        if rows >= limit:
            break
        m = run[0][0]
        lo, hi, nulls = m.stats[column]
        # only rows with a value in the column count: nulls sort last (retractions may be among
        # the nulls, and so may rows its deletion vector removes: this may undercount, which only
        # makes the bound looser)
        rows += max(m.row_count - nulls - m.delete_count - m.deleted_rows, 0)
        edge = hi if direction == "asc" else lo
        if threshold is None:
            threshold = edge
        else:
            threshold = max(threshold, edge) if direction == "asc" else min(threshold, edge)
    if rows < limit or threshold is None:
        return
    drop = {run[0][0].file_name for _, run in ordered
            if cannot_beat(run[0][0], column, direction, threshold)}
    if not drop:
        return
    plan.steps["top-n"].add([m for b in plan.buckets for m in b.files if m.file_name in drop])
    for b in plan.buckets:
        b.sections = [[run for run in section if not (len(run) == 1 and run[0].file_name in drop)]
                      for section in b.sections]
        b.sections = [s for s in b.sections if s]
    plan.buckets = [b for b in plan.buckets if b.sections]


def cannot_beat(meta: DataFileMeta, column: str, direction: str, nth: Any) -> bool:
    """Can no row of this file come before a row whose `column` is `nth`?  (Ties can.)"""
    best = _best(meta, column, direction)
    if nth is None:
        return False  # the limit-th row is a null: any value, or another null, may tie or beat it
    if best[0] == 1:
        return True  # only nulls, which sort after every value
    try:
        return bool(best[1] > nth) if direction == "asc" else bool(best[1] < nth)
    except TypeError:
        return False


def top_rows(table: pa.Table, order_by: OrderBy, limit: int | None) -> pa.Table:
    """The first `limit` rows in `order_by` order (nulls last), ties broken by the other
    columns in schema order, so the answer never depends on which files were read."""
    keys = [(c, "ascending" if d == "asc" else "descending") for c, d in order_by]
    named = {c for c, _ in order_by}
    keys += [(f.name, "ascending") for f in table.schema if f.name not in named and not pa.types.is_nested(f.type)]
    ordered = table.take(sort_indices(table, keys, "at_end"))
    return ordered if limit is None else ordered.slice(0, limit)
