"""Engine predicates translated into mergetree filters (`table/filters.py`'s language).

A translation is only ever used to skip work: the engine's whole predicate is applied again to
the rows the scan returns, so what is pushed may be weaker than the predicate (an untranslatable
conjunct is left out), never stronger.  Negations are pushed down to the comparisons first
(NOT (a < 5) is a >= 5, NOT (a AND b) is NOT a OR NOT b): under SQL's three-valued logic, which
mergetree's filters and the engines share, these rewrites are exact, so NOT never needs a
weaker inner filter.  `Translation.exact` says whether the pushed filter is the whole predicate
(then a row limit may be pushed as well).

Literals are typed by the column they are compared with: a literal is pushed only when its
type is of the column's family (integers with integers and decimals, strings with strings,
dates with dates, timestamps with timestamps of the same time-zone-ness, booleans with
booleans) and converts to the column's Arrow type without loss.  Floating-point columns are
never pushed: the engines order NaN above every number (Polars: NaN > 1 is true), Arrow's
comparisons and Parquet statistics do not.

The walk over each engine's expression tree is structural: Polars expressions through their
JSON serialization (`Expr.meta.serialize(format="json")`), literals evaluated by Polars itself;
DataFusion's through its `Expr.to_variant()` tree.
"""
from __future__ import annotations

import io
import json
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ..errors import InvalidArgumentError
from ..table import filters as flt

__all__ = ["NOTHING", "Translation", "all_of", "any_of", "conformed", "from_datafusion", "from_polars"]

# an operator under NOT, and an operator with its operands swapped
NEGATED = {"=": "!=", "!=": "=", "<": ">=", ">=": "<", ">": "<=", "<=": ">", "in": "not in", "not in": "in",
           "is null": "is not null", "is not null": "is null"}
FLIPPED = {"=": "=", "!=": "!=", "<": ">", ">": "<", "<=": ">=", ">=": "<="}
POLARS_OPS = {"Eq": "=", "NotEq": "!=", "Lt": "<", "LtEq": "<=", "Gt": ">", "GtEq": ">="}
DATAFUSION_OPS = {"=": "=", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


@dataclass(frozen=True)
class Translation:
    """What could be pushed: `filter` (None: nothing) and whether it is the whole predicate."""

    filter: flt.Filter
    exact: bool


NOTHING = Translation(None, False)


def all_of(parts: list[Translation]) -> Translation:
    kept = [p.filter for p in parts if p.filter is not None]
    exact = all(p.exact for p in parts)
    if not kept:
        return Translation(None, exact and not parts)
    return Translation(kept[0] if len(kept) == 1 else ("and", kept), exact)


def any_of(parts: list[Translation]) -> Translation:
    # one side unconstrained makes the whole OR unconstrained
    if any(p.filter is None for p in parts):
        return NOTHING
    return Translation(("or", [p.filter for p in parts]), all(p.exact for p in parts))


def _family(dtype: pa.DataType) -> str | None:
    if pa.types.is_integer(dtype):
        return "integer"
    if pa.types.is_decimal(dtype):
        return "decimal"
    if pa.types.is_string(dtype) or pa.types.is_large_string(dtype) or pa.types.is_string_view(dtype):
        return "string"
    if pa.types.is_date32(dtype) or pa.types.is_date64(dtype):
        return "date"
    if pa.types.is_timestamp(dtype):
        return "timestamp"
    if pa.types.is_boolean(dtype):
        return "boolean"
    return None  # floats (NaN orders differently), binary, nested, time...: not pushed


def conformed(values: pa.Array, column_type: pa.DataType) -> list | None:
    """`values` as Python values of `column_type`, or None when they are not of the column's
    family or do not convert without loss."""
    if pa.types.is_dictionary(column_type):
        column_type = column_type.value_type
    family, theirs = _family(column_type), _family(values.type)
    if family is None or theirs is None:
        return None
    if family != theirs and not (family == "decimal" and theirs == "integer"):
        return None
    if family == "timestamp" and (values.type.tz is None) != (column_type.tz is None):
        return None
    try:
        cast = values.cast(column_type, safe=True)
        if family != "timestamp" and not cast.cast(values.type, safe=True).equals(values):
            return None
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None
    return cast.to_pylist()


def _atom(column: str, op: str, value: Any, schema: pa.Schema) -> Translation:
    """One comparison, checked by `filters.normalize` (the type policy may refuse it)."""
    try:
        return Translation(flt.normalize((column, op, value), schema), True)
    except InvalidArgumentError:
        return NOTHING


def _comparison(column: str, op: str, values: pa.Array, schema: pa.Schema, negated: bool) -> Translation:
    if column not in schema.names or len(values) != 1 or values.null_count:
        return NOTHING
    typed = conformed(values, schema.field(column).type)
    if typed is None:
        return NOTHING
    if pa.types.is_boolean(values.type) and op not in ("=", "!="):
        return NOTHING
    return _atom(column, NEGATED[op] if negated else op, typed[0], schema)


def _membership(column: str, values: pa.Array, nulls_equal: bool, schema: pa.Schema, negated: bool) -> Translation:
    if column not in schema.names:
        return NOTHING
    has_null = values.null_count > 0
    typed = conformed(values.drop_null(), schema.field(column).type)
    if typed is None:
        return NOTHING
    if not negated:
        found = _atom(column, "in", typed, schema)
        if nulls_equal and has_null and found.filter is not None:  # a null row matches the null in the list
            return any_of([found, _atom(column, "is null", None, schema)])
        return found
    if nulls_equal:  # NOT IN keeps null rows when nulls compare equal: no filter says that
        return NOTHING
    return _atom(column, "not in", typed, schema)


# ---------------------------------------------------------------- Polars


def from_polars(predicate: Any, schema: pa.Schema) -> Translation:
    """The part of a Polars expression mergetree can filter with (never raises: a predicate
    whose serialization this Polars version writes differently is simply not pushed)."""
    if predicate is None:
        return NOTHING
    try:
        tree = json.loads(predicate.meta.serialize(format="json"))
        return _polars(tree, schema, False)
    except Exception:  # pushdown only saves work; the predicate is applied after the scan anyway
        return NOTHING


def _polars_literal(node: Any) -> pa.Array | None:
    """A literal node's value(s), evaluated by Polars itself: a list literal's elements, or one."""
    if not (isinstance(node, dict) and set(node) == {"Literal"}):
        return None
    import polars as pl

    expr = pl.Expr.deserialize(io.StringIO(json.dumps(node)), format="json")
    series = pl.select(expr.alias("v")).to_series()
    if isinstance(series.dtype, (pl.List, pl.Array)):
        series = series.explode()
    return series.to_arrow()


UNITS = {"s": 0, "ms": 1, "us": 2, "ns": 3}
POLARS_UNITS = {"Milliseconds": "ms", "Microseconds": "us", "Nanoseconds": "ns"}


def _polars_column(node: Any, schema: pa.Schema) -> str | None:
    """The column a node is: a column, or a timestamp column cast to a unit as fine as its own
    (DuckDB's filters come as `col("ts").dt.cast_time_unit("us")`: lossless, so the same values)."""
    if not isinstance(node, dict):
        return None
    if isinstance(node.get("Column"), str):
        return node["Column"]
    fn = node.get("Function")
    if isinstance(fn, dict) and len(fn.get("input", [])) == 1:
        function = fn.get("function")
        temporal = function.get("TemporalExpr") if isinstance(function, dict) else None
        cast = temporal.get("CastTimeUnit") if isinstance(temporal, dict) else None
        unit = POLARS_UNITS.get(cast) if isinstance(cast, str) else None
        column = _polars_column(fn["input"][0], schema)
        if unit is not None and column is not None and column in schema.names:
            dtype = schema.field(column).type
            if pa.types.is_timestamp(dtype) and UNITS[dtype.unit] <= UNITS[unit]:
                return column
    return None


def _is_null_literal(node: Any) -> bool:
    values = _polars_literal(node)  # a null of any type ({"Null": "Boolean"} from DuckDB)
    return values is not None and len(values) == 1 and values.null_count == 1


def _polars(node: Any, schema: pa.Schema, negated: bool) -> Translation:
    if not isinstance(node, dict) or len(node) != 1:
        return NOTHING
    if "Ternary" in node:
        # when(x.is_null()).then(null).otherwise(p), as DuckDB sends x IN (...): unknown for a
        # null x, else p; so, negated or not, (p or its negation) AND x IS NOT NULL
        t = node["Ternary"]
        test = t.get("predicate", {}).get("Function", {})
        column = _polars_column(test.get("input", [None])[0], schema) if test.get("input") else None
        if test.get("function") == {"Boolean": "IsNull"} and column is not None and column in schema.names \
                and _is_null_literal(t.get("truthy")):
            return all_of([_polars(t.get("falsy"), schema, negated), _atom(column, "is not null", None, schema)])
        return NOTHING
    if "BinaryExpr" in node:
        b = node["BinaryExpr"]
        op = b.get("op")
        if op in ("And", "LogicalAnd", "Or", "LogicalOr"):
            parts = [_polars(b["left"], schema, negated), _polars(b["right"], schema, negated)]
            conjunction = op in ("And", "LogicalAnd")
            return all_of(parts) if conjunction != negated else any_of(parts)
        if op in POLARS_OPS:
            left, right = b["left"], b["right"]
            cmp = POLARS_OPS[op]
            if _polars_column(left, schema) is None:
                left, right, cmp = right, left, FLIPPED[cmp]
            column, values = _polars_column(left, schema), _polars_literal(right)
            if column is None or values is None:
                return NOTHING
            return _comparison(column, cmp, values, schema, negated)
        return NOTHING
    if "Function" in node:
        fn = node["Function"]
        inputs, function = fn.get("input", []), fn.get("function")
        boolean = function.get("Boolean") if isinstance(function, dict) else None
        if boolean == "Not" and len(inputs) == 1:
            return _polars(inputs[0], schema, not negated)
        if boolean in ("IsNull", "IsNotNull") and len(inputs) == 1:
            column = _polars_column(inputs[0], schema)
            if column is None or column not in schema.names:
                return NOTHING
            op = "is null" if boolean == "IsNull" else "is not null"
            return _atom(column, NEGATED[op] if negated else op, None, schema)
        if isinstance(boolean, dict) and "IsIn" in boolean and len(inputs) == 2:
            column, values = _polars_column(inputs[0], schema), _polars_literal(inputs[1])
            if column is None or values is None:
                return NOTHING
            return _membership(column, values, bool(boolean["IsIn"].get("nulls_equal")), schema, negated)
        if isinstance(boolean, dict) and "IsBetween" in boolean and len(inputs) == 3:
            column = _polars_column(inputs[0], schema)
            low, high = _polars_literal(inputs[1]), _polars_literal(inputs[2])
            if column is None or low is None or high is None:
                return NOTHING
            closed = boolean["IsBetween"].get("closed", "Both")
            lower = ">=" if closed in ("Both", "Left") else ">"
            upper = "<=" if closed in ("Both", "Right") else "<"
            parts = [_comparison(column, lower, low, schema, negated),
                     _comparison(column, upper, high, schema, negated)]
            return any_of(parts) if negated else all_of(parts)
    return NOTHING


# ---------------------------------------------------------------- DataFusion


def from_datafusion(exprs: list[Any], schema: pa.Schema) -> Translation:
    """The part of DataFusion filter expressions (AND-ed) mergetree can filter with."""
    try:
        return all_of([_datafusion(e, schema, False) for e in exprs])
    except Exception:  # as for Polars: the query applies its own filter to what is read
        return NOTHING


def _df_column(expr: Any) -> str | None:
    variant = expr.to_variant()
    return variant.name() if type(variant).__name__ == "Column" else None


def _df_literal(expr: Any) -> pa.Array | None:
    variant = expr.to_variant()
    if type(variant).__name__ != "Literal":
        return None
    scalar = expr.python_value()
    if not isinstance(scalar, pa.Scalar):
        return None
    return pa.array([scalar.as_py()], type=scalar.type)


def _datafusion(expr: Any, schema: pa.Schema, negated: bool) -> Translation:
    variant = expr.to_variant()
    kind = type(variant).__name__
    if kind == "Alias":
        return _datafusion(variant.expr(), schema, negated)
    if kind == "Not":
        return _datafusion(variant.expr(), schema, not negated)
    if kind == "BinaryExpr":
        op = variant.op().lower()
        if op in ("and", "or"):
            parts = [_datafusion(variant.left(), schema, negated), _datafusion(variant.right(), schema, negated)]
            return all_of(parts) if (op == "and") != negated else any_of(parts)
        if op in DATAFUSION_OPS:
            left, right, cmp = variant.left(), variant.right(), DATAFUSION_OPS[op]
            if _df_column(left) is None:
                left, right, cmp = right, left, FLIPPED[cmp]
            column, values = _df_column(left), _df_literal(right)
            if column is None or values is None:
                return NOTHING
            return _comparison(column, cmp, values, schema, negated)
        return NOTHING
    if kind in ("IsNull", "IsNotNull"):
        column = _df_column(variant.expr())
        if column is None or column not in schema.names:
            return NOTHING
        op = "is null" if kind == "IsNull" else "is not null"
        return _atom(column, NEGATED[op] if negated else op, None, schema)
    if kind == "InList":
        column = _df_column(variant.expr())
        literals = [_df_literal(e) for e in variant.list()]
        if column is None or any(v is None for v in literals):
            return NOTHING
        values = pa.concat_arrays([v for v in literals if v is not None]) if literals else pa.array([])
        return _membership(column, values, False, schema, negated != bool(variant.negated()))
    if kind == "Between":
        column, low, high = _df_column(variant.expr()), _df_literal(variant.low()), _df_literal(variant.high())
        if column is None or low is None or high is None:
            return NOTHING
        outside = negated != bool(variant.negated())  # NOT BETWEEN: below or above
        return (any_of if outside else all_of)([_comparison(column, ">=", low, schema, outside),
                                                 _comparison(column, "<=", high, schema, outside)])
    return NOTHING
