"""Read filters: simple expressions that can prune partitions, buckets and files, or
pyarrow compute expressions that are only applied to rows.

A simple filter is a tuple ``(column, op, value)`` with op one of ``= == != < <= > >=
in not-in is-null is-not-null``, or ``("and", [filters])`` / ``("or", [filters])``;
a list of filters means all of them.
"""
from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvalidArgumentError
from .text_values import parse_text, takes_text
from .type_policy import require

__all__ = ["COMPARISONS", "OPERATORS", "Filter", "columns_of", "conjuncts", "equality_values", "may_match",
           "normalize", "rename", "restrict", "to_expression"]

COMPARISONS = {"=", "==", "!=", "<", "<=", ">", ">="}
OPERATORS = COMPARISONS | {"in", "not in", "is null", "is not null"}

Filter = Any  # tuple | list | pc.Expression | None


def normalize(f: Filter, schema: pa.Schema | None = None) -> Filter:
    """Check a filter and put it in canonical form: None, a pc.Expression, or nested tuples.
    With `schema`, every column must exist and every value must fit its column's type
    (values come back as that type's Python values, no float truncated; text is read only for
    dates, times, timestamps and decimals, as ISO-8601 and decimal text: `text_values.parse_text`)."""
    if f is None:
        return f
    if isinstance(f, pc.Expression):
        if schema is not None:
            try:  # bind it: unknown columns and type errors surface here, not mid-read
                schema.empty_table().filter(f)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
                raise InvalidArgumentError(f"the filter expression {f} does not apply to the table: {exc}") from None
        return f
    if isinstance(f, list):
        if not f:
            return None
        return ("and", [normalize(x, schema) for x in f]) if len(f) != 1 else normalize(f[0], schema)
    if isinstance(f, tuple) and len(f) == 2 and f[0] in ("and", "or"):
        if not isinstance(f[1], (list, tuple)) or not f[1]:
            raise InvalidArgumentError(f"{f[0]!r} needs a non-empty list of filters")
        return (f[0], [normalize(x, schema) for x in f[1]])
    if isinstance(f, tuple) and len(f) in (2, 3) and isinstance(f[0], str):
        column = f[0]
        op = f[1].lower() if isinstance(f[1], str) else f[1]
        if op not in OPERATORS:
            raise InvalidArgumentError(f"unknown filter operator {f[1]!r}; use one of {sorted(OPERATORS)}")
        dtype = _column_type(schema, column)
        if op in ("is null", "is not null"):
            return (column, op, None)
        if dtype is not None:
            require(column, dtype, "filter_eq" if op in ("=", "==", "!=", "in", "not in") else "filter_range")
        if len(f) != 3:
            raise InvalidArgumentError(f"filter {f!r} needs a value")
        value = f[2]
        if op in ("in", "not in"):
            if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple, set, frozenset)):
                raise InvalidArgumentError(f"{op!r} takes a list of values, not {value!r} (in filter {f!r})")
            value = [_typed(v, dtype, column, op) for v in value]
        else:
            value = _typed(value, dtype, column, op)
        return (column, "=" if op == "==" else op, value)
    raise InvalidArgumentError(
        f"a filter is (column, op, value), ('and'|'or', [filters]), a list of filters or a "
        f"pyarrow compute expression, not {f!r}")


def _column_type(schema: pa.Schema | None, column: str) -> pa.DataType | None:
    if schema is None:
        return None
    if column not in schema.names:
        raise InvalidArgumentError(f"filter names column {column!r}, which the table lacks; columns: {schema.names}")
    return schema.field(column).type


def _typed(value: Any, dtype: pa.DataType | None, column: str, op: str) -> Any:
    """`value` as a Python value of the column's type, or InvalidArgumentError."""
    if value is None:
        raise InvalidArgumentError(f"filter on {column!r}: {op!r} cannot compare with None "
                                   f"(use 'is null' / 'is not null')")
    if dtype is None:
        return value
    if isinstance(value, str) and takes_text(dtype):
        try:
            return parse_text(value, dtype)
        except ValueError as exc:
            raise InvalidArgumentError(f"filter on {column!r} ({dtype}): {exc}") from None
    if isinstance(value, float) and (pa.types.is_integer(dtype) or pa.types.is_decimal(dtype)) \
            and not value.is_integer():
        raise InvalidArgumentError(f"filter on {column!r} ({dtype}): {value!r} is not a whole number")
    try:
        return pa.scalar(value, type=dtype).as_py()
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError,
            OverflowError) as exc:
        raise InvalidArgumentError(
            f"filter on {column!r}: {value!r} ({type(value).__name__}) is not a {dtype} value ({exc})") from None


def columns_of(f: Filter) -> set[str] | None:
    """Columns a simple filter reads; None for an opaque pyarrow expression."""
    if f is None:
        return set()
    if isinstance(f, pc.Expression):
        return None
    if f[0] in ("and", "or") and len(f) == 2:
        out: set[str] = set()
        for x in f[1]:
            cols = columns_of(x)
            if cols is None:
                return None
            out |= cols
        return out
    return {f[0]}


def to_expression(f: Filter, schema: pa.Schema) -> pc.Expression | None:
    if f is None or isinstance(f, pc.Expression):
        return f
    if f[0] in ("and", "or") and len(f) == 2:
        parts = [to_expression(x, schema) for x in f[1]]
        out: Any = parts[0]  # sub-filters of and/or are never None
        for p in parts[1:]:
            out = (out & p) if f[0] == "and" else (out | p)
        return out
    column, op, value = f
    if column not in schema.names:
        raise InvalidArgumentError(f"filter names column {column!r}, which the table lacks")
    field = pc.field(column)
    dtype = schema.field(column).type
    if op == "is null":
        return field.is_null()
    if op == "is not null":
        return field.is_valid()
    if op in ("in", "not in"):
        if pa.types.is_floating(dtype) and any(v == 0 for v in value):
            value = [*value, 0.0, -0.0]  # SQL: -0.0 = 0.0, where a hash lookup tells them apart
        values = pa.array(value, type=dtype)
        expr = field.isin(values)
        # SQL: `x NOT IN (...)` is unknown, so false, when x is null (as `x != v` is)
        return (~expr & field.is_valid()) if op == "not in" else expr
    scalar = pa.scalar(value, type=dtype)
    return {"=": field == scalar, "!=": field != scalar, "<": field < scalar, "<=": field <= scalar,
            ">": field > scalar, ">=": field >= scalar}[op]


def conjuncts(f: Filter) -> list[Filter]:
    """The AND-ed parts of a filter."""
    if f is None:
        return []
    if isinstance(f, tuple) and f[0] == "and" and len(f) == 2:
        return [c for x in f[1] for c in conjuncts(x)]
    return [f]


def restrict(f: Filter, columns: set[str]) -> Filter:
    """The conjuncts of f that read only `columns` (weaker than f: safe for pruning)."""
    kept = [c for c in conjuncts(f) if (cols := columns_of(c)) is not None and cols <= columns]
    if not kept:
        return None
    return kept[0] if len(kept) == 1 else ("and", kept)


def rename(f: Filter, names: dict[str, str]) -> Filter:
    """The same simple filter over renamed columns."""
    if f is None:
        return None
    if f[0] in ("and", "or") and len(f) == 2:
        return (f[0], [rename(x, names) for x in f[1]])
    return (names.get(f[0], f[0]),) + tuple(f[1:])


def _compare(lo, hi, op, value) -> bool:
    """Could some v in [lo, hi] satisfy `v op value`?"""
    try:
        if op == "=":
            return lo <= value <= hi
        if op == "!=":
            return not (lo == hi == value)
        if op == "<":
            return lo < value
        if op == "<=":
            return lo <= value
        if op == ">":
            return hi > value
        if op == ">=":
            return hi >= value
    except TypeError:
        return True
    return True


def may_match(f: Filter, stats: dict[str, tuple[Any, Any, int]], row_count: int) -> bool:
    """False only if no row with these column statistics can satisfy f."""
    if f is None or isinstance(f, pc.Expression):
        return True
    if f[0] == "and" and len(f) == 2:
        return all(may_match(x, stats, row_count) for x in f[1])
    if f[0] == "or" and len(f) == 2:
        return any(may_match(x, stats, row_count) for x in f[1])
    column, op, value = f
    if column not in stats:
        return True
    lo, hi, nulls = stats[column]
    if op == "is null":
        return nulls > 0
    if op == "is not null":
        return nulls < row_count
    if lo is None or hi is None:
        return nulls < row_count if op != "!=" else True
    if isinstance(lo, float) and (lo != lo or hi != hi):
        return True  # NaN bounds say nothing
    if op == "in":
        return any(_compare(lo, hi, "=", v) for v in value if v is not None)
    if op == "not in":
        return True
    return value is not None and _compare(lo, hi, op, value)


def equality_values(f: Filter, column: str) -> list | None:
    """The only values `column` can take under f (from = and IN), or None if unconstrained."""
    if f is None or isinstance(f, pc.Expression):
        return None
    if f[0] == "and" and len(f) == 2:
        found = None
        for x in f[1]:
            vals = equality_values(x, column)
            if vals is not None:
                found = vals if found is None else [v for v in found if v in vals]
        return found
    if f[0] == "or" and len(f) == 2:
        out: list = []
        for x in f[1]:
            vals = equality_values(x, column)
            if vals is None:
                return None
            out += [v for v in vals if v not in out]
        return out
    col, op, value = f
    if col != column:
        return None
    if op == "=":
        return [value]
    if op == "in":
        return list(value)
    return None
