"""mergetree's filters (the normalized tuples `table.filters` makes) as pyiceberg row filters, so that
pyiceberg's scan planning prunes partitions and files with the manifests' statistics.  Only
pruning: the rows read are filtered again by the filter itself (SQL's null rules), so a predicate
pyiceberg cannot say is left out of the pruning (weaker, never wrong)."""
from __future__ import annotations

from typing import Any

from ..table import filters as flt

__all__ = ["row_filter"]


def row_filter(f: flt.Filter) -> Any:
    """The pyiceberg expression for `f` (`AlwaysTrue` for none, or for a part it cannot say)."""
    from pyiceberg import expressions as ex
    if f is None:
        return ex.AlwaysTrue()
    if not isinstance(f, tuple):  # a pyarrow expression: applied to rows only
        return ex.AlwaysTrue()
    if f[0] in ("and", "or") and len(f) == 2:
        parts = [row_filter(x) for x in f[1]]
        if f[0] == "and":
            kept = [p for p in parts if not isinstance(p, ex.AlwaysTrue)]
            return ex.And(*kept) if len(kept) > 1 else (kept[0] if kept else ex.AlwaysTrue())
        if any(isinstance(p, ex.AlwaysTrue) for p in parts):
            return ex.AlwaysTrue()  # one side unbounded: the whole OR is
        return ex.Or(*parts) if len(parts) > 1 else parts[0]
    column, op = f[0], f[1]
    if op == "is null":
        return ex.IsNull(column)
    if op == "is not null":
        return ex.NotNull(column)
    value = f[2]
    if isinstance(value, float) and value != value:  # NaN: pyiceberg's IsNaN is not SQL's comparison
        return ex.AlwaysTrue()
    simple = {"=": ex.EqualTo, "<": ex.LessThan, "<=": ex.LessThanOrEqual, ">": ex.GreaterThan,
              ">=": ex.GreaterThanOrEqual}
    if op in simple:
        return simple[op](column, _literal(value))
    if op == "in":
        return ex.In(column, [_literal(v) for v in value]) if value else ex.AlwaysFalse()
    return ex.AlwaysTrue()  # != and not in prune almost nothing: left to the rows


def _literal(value: Any) -> Any:
    import datetime as dt
    if isinstance(value, dt.datetime):  # pyiceberg takes timestamps as ISO text or microseconds
        return value.isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, dt.time):
        return value.isoformat()
    return value
