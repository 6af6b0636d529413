"""DataFusion: mergetree and Paimon tables in SQL run by a DataFusion `SessionContext`, their
projections and filters pushed into the table's scan.

datafusion-python 55 has no table provider written in Python: `register_table_provider`
takes a pyarrow dataset, a DataFrame (a view) or a provider exported through its Rust FFI, and
`register_dataset` checks that its argument is a real pyarrow `Dataset` (a duck-typed one is
refused), whose only kind over a table's files — a FileSystemDataset — is unmerged: wrong
answers for a primary-key table with several sorted runs.  So the pushdown is done around
DataFusion's own planner: `sql(ctx, query)` plans the query against empty stand-ins of the
registered tables, takes each one's projection and the filter DataFusion placed on its scan
from the optimized logical plan (`predicates.from_datafusion`), reads the table with them
(`Table.scan`: pruned and merged; logged with `source="datafusion"`), and runs the query on
what was read.  DataFusion applies the query's whole filter itself, so what is pushed only
saves work.  The tables exist in the context only while `sql` runs: a plain `ctx.sql` on such a
name fails as an unknown table rather than answering from a stale or empty stand-in.
"""
from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from ..errors import InvalidArgumentError
from .predicates import NOTHING, Translation, any_of, from_datafusion
from .sources import PaimonSource, ScanSource, TableSource, limited, require

__all__ = ["register", "register_paimon", "registered", "sql"]

# per SessionContext: name -> source (a context does not take attributes, and a table's
# registration must not keep a dropped context alive)
_registry: weakref.WeakKeyDictionary[Any, dict[str, ScanSource]] = weakref.WeakKeyDictionary()
_fallback: dict[int, dict[str, ScanSource]] = {}


def _tables(ctx: Any) -> dict[str, ScanSource]:
    try:
        return _registry.setdefault(ctx, {})
    except TypeError:  # a context that cannot be weakly referenced
        return _fallback.setdefault(id(ctx), {})


def register(ctx: Any, name: str, path_or_table: Any, snapshot: int | None = None,
             storage_options: Mapping[str, object] | None = None) -> None:
    """Make a mergetree table (a `Table`, or a path/URI opened with `storage_options`) at
    `snapshot` (default: the latest now) the table `name` of `sql(ctx, ...)` queries."""
    _put(ctx, name, TableSource(path_or_table, snapshot, storage_options))


def register_paimon(ctx: Any, name: str, warehouse: Any, table: str, snapshot: Any = None,
                    storage_options: Mapping[str, object] | None = None) -> None:
    """Make a Paimon table (`warehouse`, "db.table") the table `name` of `sql(ctx, ...)` queries."""
    _put(ctx, name, PaimonSource(warehouse, table, snapshot, storage_options))


def registered(ctx: Any) -> dict[str, ScanSource]:
    """The mergetree and Paimon tables registered on `ctx`, by name."""
    return dict(_tables(ctx))


def _put(ctx: Any, name: str, source: ScanSource) -> None:
    require("datafusion", "datafusion")
    if not isinstance(name, str) or not name:
        raise InvalidArgumentError(f"name must be a non-empty string, not {name!r}")
    if not hasattr(ctx, "sql") or not hasattr(ctx, "register_record_batches"):
        raise InvalidArgumentError(f"ctx must be a datafusion SessionContext, not {ctx!r}")
    if ctx.table_exist(name):
        raise InvalidArgumentError(f"the context already has a table {name!r}")
    _tables(ctx)[name] = source


def sql(ctx: Any, query: str) -> pa.Table:
    """Run `query` on `ctx`, the registered mergetree and Paimon tables read with the columns
    and filter DataFusion's plan puts on their scans; the result as one Arrow table.  The
    tables are put into `ctx` for the query's run and taken out after it: one `sql` at a time
    per context."""
    tables = _tables(ctx)
    used = {n: s for n, s in tables.items() if n in query}
    if not used:
        return ctx.sql(query).to_arrow_table()
    for n in used:
        if ctx.table_exist(n):
            raise InvalidArgumentError(f"the context has its own table {n!r} besides the registered mergetree one")
    try:
        for n, s in used.items():
            _put_batches(ctx, n, s.schema, [])
        pushed = _pushed(ctx.sql(query).optimized_logical_plan(), used)
        for n, s in used.items():
            _deregister(ctx, n)
            if n not in pushed:  # the optimized plan reads none of its rows (a contradiction)
                _put_batches(ctx, n, s.schema, [])
                continue
            columns, translation, fetch = pushed[n]
            limit = fetch
            reader = s.scan(columns, translation.filter, limit if s.pushes_limit else None, "datafusion")
            batches = [_padded(b, s.schema) for b in limited(iter(reader), limit)]
            _put_batches(ctx, n, s.schema, batches)
        return ctx.sql(query).to_arrow_table()
    finally:
        for n in used:
            _deregister(ctx, n)


def _put_batches(ctx: Any, name: str, schema: pa.Schema, batches: list[pa.RecordBatch]) -> None:
    empty = pa.RecordBatch.from_pylist([], schema=pa.schema([pa.field(f.name, f.type) for f in schema]))
    ctx.register_record_batches(name, [batches or [empty]])


def _padded(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """`batch` with the columns the plan does not read as nulls: the query is planned again on
    what was read, and its text may name a column the optimizer proved unneeded (`d = 1 AND
    (d = 1 OR id = 0)` reads no `id`), which must still resolve."""
    columns = [batch.column(f.name) if f.name in batch.schema.names else pa.nulls(batch.num_rows, f.type)
               for f in schema]
    return pa.RecordBatch.from_arrays(columns, schema=pa.schema([pa.field(f.name, f.type) for f in schema]))


def _deregister(ctx: Any, name: str) -> None:
    if ctx.table_exist(name):
        ctx.deregister_table(name)


def _pushed(plan: Any, used: Mapping[str, ScanSource]) -> dict[str, tuple[list[str], Translation, int | None]]:
    """Per registered table the plan scans: the columns its scans read, the filter they may
    take (an OR over several scans of the same table), and a row limit (`fetch`) of a lone scan."""
    found: dict[str, list[tuple[list[str], Translation, int | None]]] = {}

    def walk(node: Any, above: Any) -> None:
        variant = node.to_variant()
        kind = type(variant).__name__
        if kind == "TableScan" and variant.table_name() in used:
            name = variant.table_name()
            schema = used[name].schema
            projection = variant.projection()
            columns = [c for _, c in projection] if projection else []
            if not columns:  # count(*): one column gives the rows
                columns = [schema.names[0]]
            exprs = list(variant.filters())
            if above is not None:
                exprs.append(above)
            translation = from_datafusion(exprs, schema) if exprs else NOTHING
            # a limit only of a scan nothing filters (DataFusion never puts one under a filter)
            found.setdefault(name, []).append((columns, translation, None if exprs else variant.fetch()))
            return
        predicate = variant.predicate() if kind == "Filter" else None
        for child in node.inputs():
            walk(child, predicate)

    walk(plan, None)
    out = {}
    for name, scans in found.items():
        columns = list(dict.fromkeys(c for cols, _, _ in scans for c in cols))
        translation = scans[0][1] if len(scans) == 1 else any_of([t for _, t, _ in scans])
        fetch = scans[0][2] if len(scans) == 1 else None
        out[name] = (columns, translation, fetch)
    return out
