"""Import an existing SQL history into a table's query log (`mergetree queries import`).

Each statement is parsed with sqlglot in the given dialect.  Every place the statement reads
the table (matched by name, case-insensitively, qualified or not) becomes one logged query:

* the predicates on the table's columns, from WHERE and from JOIN ... ON conditions with
  literals, through AND / OR / NOT, IN lists, BETWEEN, IS [NOT] NULL and LIKE 'prefix%'
  (kept as a range, logged as a LIKE-prefix predicate); through CTEs and subqueries that pass
  the table's columns on unchanged;
* ORDER BY (by name, alias or position) with LIMIT, GROUP BY with SUM / COUNT / MIN / MAX / AVG.

A predicate that cannot be turned into a filter (a subquery, a function of a column, a value
of the wrong type) is still logged by column and kind, and left out of the replayable filter:
under AND the rest still holds; under OR the whole OR is dropped, so the filter kept is never
narrower than the statement's.  Columns are attributed by alias; an unqualified column goes to
the table when the table has a column of that name.  Statements that do not parse are
skipped and counted; statements about other tables are counted apart.
"""
from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any, ClassVar

import pyarrow as pa

from ..errors import InvalidArgumentError, MergeTreeError
from ..table import Table
from ..table import filters as flt
from ..table.querylog import QueryRecord, append_rows

__all__ = ["ImportResult", "extract_queries", "import_sql", "read_statements"]

BATCH = 5_000  # records appended per commit


@dataclass
class ImportResult:
    statements: int = 0
    imported: int = 0            # logged queries (a statement can read the table more than once)
    other_tables: int = 0        # statements that parse but do not read the table
    skipped: int = 0             # statements that do not parse
    errors: list[str] = field(default_factory=list)  # the first few parse errors

    def summary(self) -> str:
        return (f"{self.statements:,} statements: {self.imported:,} queries of the table logged, "
                f"{self.other_tables:,} about other tables, {self.skipped:,} skipped (not parsable)")


@dataclass
class Statement:
    sql: str
    ts: dt.datetime | None = None
    user: str | None = None
    duration_ms: float | None = None


# ---------------------------------------------------------------------------
# Reading the history file
# ---------------------------------------------------------------------------

_SQL_KEYS = ("query", "sql", "statement", "query_text", "text")
_TIME_KEYS = ("ts", "time", "timestamp", "create_time", "start_time", "created", "query_start_time")
_USER_KEYS = ("user", "username", "user_name", "principal")
_DURATION_KEYS = ("duration_ms", "elapsed_ms", "wall_time_ms", "execution_time_ms")


def _first(record: dict, keys: Iterable[str]) -> Any:
    for key in keys:
        if record.get(key) is not None:
            return record[key]
    return None


def _timestamp(value: Any) -> dt.datetime | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = value / 1000 if value > 1e11 else value  # epoch milliseconds or seconds
        return dt.datetime.fromtimestamp(seconds, dt.timezone.utc)
    if isinstance(value, str):
        try:
            parsed = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            return None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.timezone.utc)
    return None


def read_statements(lines: Iterable[str]) -> Iterator[Statement | None]:
    """Statements of a history: one SQL statement per line, or JSON lines with the statement
    under "query"/"sql"/"statement" (and optionally a time, a user and a duration).  Blank and
    `--` comment lines are left out; a JSON line without a statement yields None (skipped)."""
    for line in lines:
        text = line.strip()
        if not text or text.startswith("--"):
            continue
        if text.startswith("{"):
            try:
                record = json.loads(text)
            except ValueError:
                yield None
                continue
            sql = _first(record, _SQL_KEYS) if isinstance(record, dict) else None
            if not isinstance(sql, str) or not sql.strip():
                yield None
                continue
            duration = _first(record, _DURATION_KEYS)
            user = _first(record, _USER_KEYS)
            yield Statement(sql.strip().rstrip(";"), _timestamp(_first(record, _TIME_KEYS)),
                            str(user) if user is not None else None,
                            float(duration) if isinstance(duration, (int, float)) else None)
        else:
            yield Statement(text.rstrip(";"))


# ---------------------------------------------------------------------------
# Extracting the patterns
# ---------------------------------------------------------------------------

@dataclass
class ExtractedQuery:
    """What one statement asked of the table at one place it reads it."""

    filter: flt.Filter
    predicates: list[tuple[str, str]]
    order_by: list[tuple[str, str]]
    limit: int | None
    group_by: list[str]
    measures: list[tuple[str, str]]
    columns: list[str] | None


class _NotAStatement(ValueError):
    """Text that sqlglot reads as an expression, not as a statement ("SELEC * FORM t")."""


class _Unconvertible(Exception):
    """A predicate that has no filter form (it is still logged by column and kind)."""


def _table_matches(node: Any, wanted: tuple[str, ...]) -> bool:
    parts = [p.lower() for p in (node.catalog, node.db, node.name) if p]
    return len(parts) >= len(wanted) and tuple(parts[-len(wanted):]) == wanted


class _Extractor:
    def __init__(self, schema: pa.Schema, table_name: str, dialect: str | None) -> None:
        import sqlglot  # the SQL import's own dependency, loaded when it is used
        from sqlglot import exp
        from sqlglot.optimizer.scope import traverse_scope

        self.sqlglot, self.exp, self.traverse_scope = sqlglot, exp, traverse_scope
        self.schema = schema
        self.columns = {n.lower(): n for n in schema.names}
        self.wanted = tuple(p.lower() for p in table_name.split(".") if p)
        if not self.wanted:
            raise InvalidArgumentError(f"a table name to match is needed, not {table_name!r}")
        if dialect is not None:
            from sqlglot.dialects.dialect import Dialect

            try:
                Dialect.get_or_raise(dialect)
            except ValueError:
                raise InvalidArgumentError(f"unknown SQL dialect {dialect!r} (sqlglot's names: trino, spark, hive, "
                                           f"presto, duckdb, postgres, mysql, bigquery, snowflake, ...)") from None
        self.dialect = dialect

    def parse(self, sql: str) -> Any:
        exp = self.exp
        tree = self.sqlglot.parse_one(sql, read=self.dialect)
        if not isinstance(tree, (exp.Query, exp.DML, exp.DDL, exp.Command, exp.Set, exp.Use, exp.Describe)):
            raise _NotAStatement(f"not a statement (parsed as a bare {tree.key} expression)")
        return tree

    # -- which scopes read the table --------------------------------------------------
    def queries(self, tree: Any) -> list[ExtractedQuery]:
        exp = self.exp
        scopes = self.traverse_scope(tree)
        out = []
        for scope in scopes:
            for alias, source in scope.sources.items():
                if isinstance(source, exp.Table) and _table_matches(source, self.wanted):
                    chain = self._chain(scopes, scope, alias)
                    out.append(self._extract(chain))
        return out

    def _passes_through(self, scope: Any) -> set[str] | None:
        """The table's column names a scope passes on unchanged (None: every one, SELECT *)."""
        exp = self.exp
        names: set[str] = set()
        for projection in scope.expression.selects:
            if isinstance(projection, exp.Star) or (isinstance(projection, exp.Column)
                                                    and isinstance(projection.this, exp.Star)):
                return None
            inner = projection.this if isinstance(projection, exp.Alias) else projection
            if isinstance(inner, exp.Column) and projection.alias_or_name.lower() == inner.name.lower():
                names.add(inner.name.lower())
        return names

    def _chain(self, scopes: list, base: Any, alias: str) -> list[tuple[Any, set[str], set[str] | None]]:
        """(scope, names of the table or of a pass-through scope there, columns visible) from
        the scope reading the table outward through CTEs and subqueries that pass columns on."""
        chain: list[tuple[Any, set[str], set[str] | None]] = [(base, {alias.lower()}, None)]
        current, visible = base, None
        while True:
            if current.expression.args.get("group") or any(
                    isinstance(p, self.exp.AggFunc) for s in current.expression.selects
                    for p in s.find_all(self.exp.AggFunc)):
                break  # rows above an aggregation are groups, not the table's rows
            passed = self._passes_through(current)
            visible = passed if visible is None else (visible if passed is None else visible & passed)
            parent = next((s for s in scopes if s is not current
                           and any(src is current for src in s.sources.values())), None)
            if parent is None:
                break
            names = {a.lower() for a, src in parent.sources.items() if src is current}
            current = parent
            chain.append((current, names, visible))
        return chain

    # -- columns ------------------------------------------------------------------------
    def _column(self, node: Any, scope: Any, aliases: set[str], visible: set[str] | None) -> str:
        """The table column `node` names in this scope, or _Unconvertible."""
        exp = self.exp
        if not isinstance(node, exp.Column):
            raise _Unconvertible("not a plain column")
        name = node.name.lower()
        if name not in self.columns or (visible is not None and name not in visible):
            raise _Unconvertible(f"{node.sql()} is not a column of the table")
        qualifier = node.table.lower() if node.table else ""
        if qualifier and qualifier not in aliases:
            raise _Unconvertible("another table's column")
        return self.columns[name]

    def _involved(self, node: Any, scope: Any, aliases: set[str], visible: set[str] | None) -> list[str]:
        found = []
        for column in node.find_all(self.exp.Column):
            try:
                found.append(self._column(column, scope, aliases, visible))
            except _Unconvertible:
                pass
        return found

    # -- values -------------------------------------------------------------------------
    def _literal(self, node: Any) -> Any:
        exp = self.exp
        if isinstance(node, exp.Paren):
            return self._literal(node.this)
        if isinstance(node, exp.Neg):
            value = self._literal(node.this)
            if isinstance(value, (int, float, Decimal)) and not isinstance(value, bool):
                return -value
            raise _Unconvertible("negated non-number")
        if isinstance(node, exp.Boolean):
            return bool(node.this)
        if isinstance(node, exp.Literal):
            if node.is_string:
                return node.this
            text = str(node.this)
            try:
                return int(text)
            except ValueError:
                try:
                    return Decimal(text) if "e" not in text.lower() else float(text)
                except InvalidOperation:
                    raise _Unconvertible(f"number {text!r}") from None
        if isinstance(node, (exp.Cast, exp.TryCast)) and isinstance(node.this, exp.Literal):
            value = self._literal(node.this)
            target = node.to.this.name.upper() if hasattr(node.to.this, "name") else str(node.to.this).upper()
            if isinstance(value, str) and "DATE" == target:
                return _parse_date(value)
            if isinstance(value, str) and target.startswith("TIMESTAMP"):
                return _parse_datetime(value)
            return value
        raise _Unconvertible(f"not a literal: {node.sql()}")

    def _typed(self, column: str, value: Any) -> Any:
        dtype = self.schema.field(column).type
        if isinstance(value, str):
            if pa.types.is_date(dtype):
                return _parse_date(value)
            if pa.types.is_timestamp(dtype):
                parsed = _parse_datetime(value)
                if dtype.tz is None:
                    return parsed.replace(tzinfo=None)
                return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.timezone.utc)
        if isinstance(value, dt.datetime) and pa.types.is_date(dtype):
            return value.date()
        if isinstance(value, dt.date) and not isinstance(value, dt.datetime) and pa.types.is_timestamp(dtype):
            value = dt.datetime(value.year, value.month, value.day)
            return value if dtype.tz is None else value.replace(tzinfo=dt.timezone.utc)
        if isinstance(value, dt.datetime) and pa.types.is_timestamp(dtype):
            if dtype.tz is None and value.tzinfo is not None:
                return value.astimezone(dt.timezone.utc).replace(tzinfo=None)
            if dtype.tz is not None and value.tzinfo is None:
                return value.replace(tzinfo=dt.timezone.utc)
        if isinstance(value, Decimal) and pa.types.is_floating(dtype):
            return float(value)
        if isinstance(value, int) and not isinstance(value, bool) and pa.types.is_floating(dtype):
            return float(value)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and pa.types.is_decimal(dtype):
            return Decimal(str(value))
        if isinstance(value, Decimal) and pa.types.is_integer(dtype) and value == value.to_integral_value():
            return int(value)
        return value

    def _leaf(self, column: str, op: str, value: Any) -> flt.Filter:
        if isinstance(value, list):
            value = [self._typed(column, v) for v in value]
        elif value is not None:
            value = self._typed(column, value)
        try:
            return flt.normalize((column, op, value), self.schema)
        except MergeTreeError as exc:
            raise _Unconvertible(str(exc)) from None

    # -- predicates ---------------------------------------------------------------------
    _FLIP: ClassVar[dict[str, str]] = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "=", "!=": "!="}
    _NEGATE: ClassVar[dict[str, str]] = {"=": "!=", "!=": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<",
                                         "in": "not in", "not in": "in", "is null": "is not null",
                                         "is not null": "is null"}

    def _comparison_op(self, node: Any) -> str | None:
        exp = self.exp
        for cls, op in ((exp.EQ, "="), (exp.NEQ, "!="), (exp.LT, "<"), (exp.LTE, "<="), (exp.GT, ">"),
                        (exp.GTE, ">=")):
            if isinstance(node, cls):
                return op
        return None

    def _predicate(self, node: Any, ctx: tuple, kinds: list[tuple[str, str]], negate: bool = False) -> flt.Filter:
        """The filter of `node` for the table (None: says nothing about it); records kinds."""
        exp = self.exp
        scope, aliases, visible = ctx
        if isinstance(node, exp.Paren):
            return self._predicate(node.this, ctx, kinds, negate)
        if isinstance(node, exp.Not):
            return self._predicate(node.this, ctx, kinds, not negate)
        if isinstance(node, (exp.And, exp.Or)):
            is_and = isinstance(node, exp.And) != negate  # De Morgan
            parts = [self._predicate(c, ctx, kinds, negate) for c in (node.left, node.right)]
            if is_and:
                kept = [p for p in parts if p is not None]
                return _combine("and", kept) if kept else None
            return None if any(p is None for p in parts) else _combine("or", parts)
        if self._comparison_op(node) is not None and isinstance(node.left, exp.Column) \
                and isinstance(node.right, exp.Column):
            return None  # a join condition: no predicate on the table's values
        before = len(kinds)
        try:
            return self._simple(node, ctx, kinds, negate)
        except _Unconvertible:
            if len(kinds) == before:  # else its kind is known, only its value has no filter form
                kinds.extend((column, "expression") for column in self._involved(node, scope, aliases, visible))
            return None

    def _simple(self, node: Any, ctx: tuple, kinds: list[tuple[str, str]], negate: bool) -> flt.Filter:
        exp = self.exp
        scope, aliases, visible = ctx
        op = self._comparison_op(node)
        if op is not None:
            left, right = node.left, node.right
            if not isinstance(left, exp.Column) and isinstance(right, exp.Column):
                left, right, op = right, left, self._FLIP[op]
            column = self._column(left, scope, aliases, visible)
            if isinstance(right, exp.Null):
                raise _Unconvertible("comparison with NULL")
            value = self._literal(right)  # a column compared with a column is no predicate on values
            op = self._NEGATE[op] if negate else op
            kinds.append((column, "eq" if op == "=" else "ne" if op == "!=" else "range"))
            return self._leaf(column, op, value)
        if isinstance(node, exp.In):
            column = self._column(node.this, scope, aliases, visible)
            if node.args.get("query") is not None or not node.expressions:
                raise _Unconvertible("IN (subquery)")
            values = [self._literal(v) for v in node.expressions]
            kinds.append((column, "not_in" if negate else "in"))
            return self._leaf(column, "not in" if negate else "in", values)
        if isinstance(node, exp.Between):
            column = self._column(node.this, scope, aliases, visible)
            kinds.append((column, "range"))
            low, high = self._literal(node.args["low"]), self._literal(node.args["high"])
            if negate:
                return ("or", [self._leaf(column, "<", low), self._leaf(column, ">", high)])
            return ("and", [self._leaf(column, ">=", low), self._leaf(column, "<=", high)])
        if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
            column = self._column(node.this, scope, aliases, visible)
            kinds.append((column, "not_null" if negate else "is_null"))
            return self._leaf(column, "is not null" if negate else "is null", None)
        if isinstance(node, exp.Like):
            column = self._column(node.this, scope, aliases, visible)
            pattern = self._literal(node.expression)
            prefix = _like_prefix(pattern)
            dtype = self.schema.field(column).type
            if prefix is None or not (pa.types.is_string(dtype) or pa.types.is_large_string(dtype)) or negate:
                raise _Unconvertible("LIKE without a plain prefix, or NOT LIKE")  # skips no file
            kinds.append((column, "like_prefix"))
            upper = _next_prefix(prefix)
            low = self._leaf(column, ">=", prefix)
            return ("and", [low, self._leaf(column, "<", upper)]) if upper is not None else low
        raise _Unconvertible(f"no filter form: {node.sql()}")

    # -- one place the table is read --------------------------------------------------
    def _extract(self, chain: list[tuple[Any, set[str], set[str] | None]]) -> ExtractedQuery:
        exp = self.exp
        kinds: list[tuple[str, str]] = []
        parts: list[flt.Filter] = []
        for scope, aliases, visible in chain:
            ctx = (scope, aliases, visible)
            where = scope.expression.args.get("where")
            if where is not None:
                parts.append(self._predicate(where.this, ctx, kinds))
            for join in scope.expression.args.get("joins") or ():
                on = join.args.get("on")
                if on is not None:  # literal conditions of an ON clause restrict this table's rows too
                    parts.append(self._predicate(on, ctx, kinds))
        kept = [p for p in parts if p is not None]
        f = _combine("and", kept) if kept else None
        order_by: list[tuple[str, str]] = []
        limit = None
        group_by: list[str] = []
        measures: list[tuple[str, str]] = []
        columns: set[str] = set()
        for scope, aliases, visible in chain:
            select = scope.expression
            for column in select.find_all(exp.Column):
                try:
                    columns.add(self._column(column, scope, aliases, visible))
                except _Unconvertible:
                    pass
            if not order_by and select.args.get("order") is not None:
                order_by = self._order(select, scope, aliases, visible)
                limit = self._limit(select) if order_by else None
            if not group_by and not measures:
                group_by, measures = self._grouping(select, scope, aliases, visible)
        return ExtractedQuery(f, list(dict.fromkeys(kinds)), order_by, limit, group_by, measures,
                              sorted(columns) or None)

    def _resolve_projection(self, node: Any, select: Any) -> Any:
        exp = self.exp
        if isinstance(node, exp.Literal) and not node.is_string:
            position = int(str(node.this))
            if 1 <= position <= len(select.selects):
                projection = select.selects[position - 1]
                return projection.this if isinstance(projection, exp.Alias) else projection
        if isinstance(node, exp.Column) and not node.table:
            for projection in select.selects:
                if isinstance(projection, exp.Alias) and projection.alias.lower() == node.name.lower():
                    return projection.this
        return node

    def _order(self, select: Any, scope: Any, aliases: set[str], visible: set[str] | None) -> list[tuple[str, str]]:
        out = []
        for ordered in select.args["order"].expressions:
            target = self._resolve_projection(ordered.this, select)
            try:
                column = self._column(target, scope, aliases, visible)
                out.append((column, "desc" if ordered.args.get("desc") else "asc"))
            except _Unconvertible:
                return []  # ordered by something else first: no Top-N on the table's columns
        return out

    def _limit(self, select: Any) -> int | None:
        limit = select.args.get("limit")
        if limit is None:
            return None
        try:
            value = self._literal(limit.expression)
        except _Unconvertible:
            return None
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None

    def _grouping(self, select: Any, scope: Any, aliases: set[str],
                  visible: set[str] | None) -> tuple[list[str], list[tuple[str, str]]]:
        exp = self.exp
        group = select.args.get("group")
        group_by = []
        if group is not None:
            for node in group.expressions:
                try:
                    group_by.append(self._column(self._resolve_projection(node, select), scope, aliases, visible))
                except _Unconvertible:
                    return [], []  # grouped by an expression: no pre-aggregate model fits
        measures: list[tuple[str, str]] = []
        for projection in select.selects:
            for agg in projection.find_all(exp.AggFunc):
                if agg.find_ancestor(exp.Window) is not None or isinstance(agg.parent, exp.Window):
                    continue  # a window function does not group
                names = {exp.Sum: ["sum"], exp.Min: ["min"], exp.Max: ["max"], exp.Avg: ["sum", "count"],
                         exp.Count: ["count"]}
                functions = next((v for k, v in names.items() if isinstance(agg, k)), None)
                if functions is None:
                    continue
                target = agg.this
                if isinstance(agg, exp.Count) and (target is None or isinstance(target, exp.Star)):
                    measures.append(("*", "count"))
                    continue
                if isinstance(target, exp.Distinct):
                    continue
                try:
                    column = self._column(target, scope, aliases, visible)
                except _Unconvertible:
                    continue
                measures += [(column, f) for f in functions]
        if group is None and not measures:
            return [], []
        return group_by, list(dict.fromkeys(measures))


def _combine(op: str, parts: list[flt.Filter]) -> flt.Filter:
    """("and"|"or", parts) with nested parts of the same operator flattened; a single part as is."""
    flat: list[flt.Filter] = []
    for part in parts:
        if isinstance(part, tuple) and len(part) == 2 and part[0] == op:
            flat.extend(part[1])
        else:
            flat.append(part)
    return flat[0] if len(flat) == 1 else (op, flat)


def _parse_date(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text.strip()[:10])
    except ValueError:
        raise _Unconvertible(f"date {text!r}") from None


def _parse_datetime(text: str) -> dt.datetime:
    try:
        return dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise _Unconvertible(f"timestamp {text!r}") from None


def _like_prefix(pattern: Any) -> str | None:
    """'abc%' -> 'abc'; None when the pattern is not a plain prefix."""
    if not isinstance(pattern, str) or not pattern.endswith("%"):
        return None
    prefix = pattern.rstrip("%")
    if not prefix or any(c in prefix for c in "%_\\"):
        return None
    return prefix


def _next_prefix(prefix: str) -> str | None:
    """The smallest string above every string starting with `prefix` (None: no such string)."""
    chars = list(prefix)
    while chars:
        last = ord(chars[-1])
        if last < 0x10FFFF and not 0xD7FF <= last < 0xE000:
            chars[-1] = chr(last + 1)
            return "".join(chars)
        chars.pop()
    return None


def extract_queries(sql: str, schema: pa.Schema, table_name: str, dialect: str | None = None) -> list[ExtractedQuery]:
    """The queries a statement runs against the table called `table_name` (see the module
    docstring); sqlglot's ParseError when it does not parse."""
    extractor = _Extractor(schema, table_name, dialect)
    return extractor.queries(extractor.parse(sql))


def import_sql(path: str | os.PathLike, sql_file: str | os.PathLike, dialect: str | None = None,
               table_name: str | None = None, progress: Any = None) -> ImportResult:
    """Parse a SQL history (see `read_statements`) and append a record per query of the
    table to its query log (source "import").  `table_name` is the name the statements use
    for the table (default: the table directory's name).  `progress(done, total)` is called
    as statements are parsed."""
    from sqlglot.errors import SqlglotError

    table = Table.open(path)
    name = table_name or os.path.basename(os.path.normpath(table.path))
    extractor = _Extractor(table.schema, name, dialect)
    try:
        with open(sql_file, encoding="utf-8") as handle:
            lines = handle.readlines()
    except OSError as exc:
        raise InvalidArgumentError(f"cannot read the SQL history {sql_file}: {exc}") from None
    result = ImportResult()
    rows: list[dict[str, Any]] = []
    for statement in read_statements(lines):
        result.statements += 1
        if progress is not None and result.statements % 500 == 0:
            progress(result.statements, len(lines))
        if statement is None:
            result.skipped += 1
            continue
        try:
            found = extractor.queries(extractor.parse(statement.sql))
        except (SqlglotError, ValueError, RecursionError, _NotAStatement) as exc:
            result.skipped += 1
            if len(result.errors) < 5:
                result.errors.append(f"{statement.sql[:80]!r}: {str(exc).splitlines()[0][:200]}")
            continue
        if not found:
            result.other_tables += 1
            continue
        for query in found:
            record = QueryRecord("read" if not query.group_by and not query.measures else "aggregate",
                                 query.filter, query.columns, query.order_by, query.limit, query.group_by,
                                 query.measures, duration_ms=statement.duration_ms, sql=statement.sql,
                                 source="import", user=statement.user, predicates=query.predicates)
            if statement.ts is not None:
                record.ts = statement.ts
            rows.append(record.to_row())
            result.imported += 1
        if len(rows) >= BATCH:
            append_rows(table.path, rows)
            rows = []
    append_rows(table.path, rows)
    if progress is not None:
        progress(len(lines), len(lines))
    return result
