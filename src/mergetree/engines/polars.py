"""Polars: a `LazyFrame` over a mergetree or Paimon table through Polars' IO-plugin API
(`polars.io.plugins.register_io_source`).  Polars hands the scan the columns it needs
(`with_columns`), its predicate, a row limit (`n_rows`) and a batch size; the columns and the
translatable part of the predicate (`predicates.from_polars`) go into `Table.scan` /
`mergetree.paimon.scan`, so partitions, buckets, files and row groups are pruned and a
primary-key table is merged only where rows can match.  The whole predicate is applied again to
the merged batches (pushdown only skips work), the limit is pushed when the predicate was
translated whole (else the rows are cut after filtering), and batches are re-cut to the batch
size.  A scan's query-log record names its engine (`source`: "polars", or "duckdb" when DuckDB
drives the same frame).
"""
from __future__ import annotations

import functools
import inspect
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ..errors import InvalidArgumentError
from .predicates import from_polars
from .sources import PaimonSource, ScanSource, TableSource, checked_columns, require

if TYPE_CHECKING:
    import polars as pl

__all__ = ["frames", "lazy_frame", "polars_schema", "scan_paimon", "scan_table"]


def scan_table(path_or_table: Any, snapshot: int | None = None,
               storage_options: Mapping[str, object] | None = None) -> pl.LazyFrame:
    """A Polars `LazyFrame` over a mergetree table (a `Table`, or a path/URI opened with
    `storage_options`) at `snapshot` (default: the latest now).  Projections, filters and
    `head(n)` reach the table's scan; primary-key tables are merged."""
    return lazy_frame(TableSource(path_or_table, snapshot, storage_options), "polars")


def scan_paimon(warehouse: Any, table: str, snapshot: Any = None,
                storage_options: Mapping[str, object] | None = None) -> pl.LazyFrame:
    """A Polars `LazyFrame` over a Paimon table (`warehouse`, "db.table"), read by
    `mergetree.paimon` with the pushed columns and filter (merged per bucket)."""
    return lazy_frame(PaimonSource(warehouse, table, snapshot, storage_options), "polars")


def polars_schema(schema: pa.Schema) -> Any:
    """The Polars schema of what `pl.from_arrow` makes of the source's batches."""
    import polars as pl

    try:
        return pl.from_arrow(schema.empty_table()).schema  # type: ignore[union-attr]
    except Exception as exc:  # a type Polars cannot hold
        raise InvalidArgumentError(f"Polars cannot represent this table's schema ({schema}): {exc}") from None


def lazy_frame(source: ScanSource, engine: str) -> pl.LazyFrame:
    """The LazyFrame over `source`; its scans are logged with `source=engine`."""
    require("polars", engine)
    from polars.io.plugins import register_io_source

    schema = polars_schema(source.schema)

    def io_source(with_columns: list[str] | None, predicate: pl.Expr | None, n_rows: int | None,
                  batch_size: int | None) -> Iterator[pl.DataFrame]:
        wanted = checked_columns(with_columns, source.schema, source.label)
        needed = list(wanted)
        if predicate is not None:
            needed += [c for c in predicate.meta.root_names() if c not in needed and c in source.schema.names]
        if not needed:  # a row count alone: the narrowest column will do
            needed = [source.schema.names[0]]
        pushed = from_polars(predicate, source.schema)
        limit = n_rows if n_rows is not None and (predicate is None or pushed.exact) and source.pushes_limit else None
        reader = source.scan(needed, pushed.filter, limit, engine)
        try:
            yield from frames(reader, predicate, wanted, n_rows, batch_size)
        finally:
            reader.close()  # a scan stopped early (head) still ends, and is logged, now

    labels: dict[str, Any] = {"explain_name": "mergetree", "explain_detail": source.label}
    return register_io_source(io_source, schema=schema,
                              **{k: v for k, v in labels.items() if k in _io_source_keywords(register_io_source)})


@functools.cache
def _io_source_keywords(register_io_source: Any) -> frozenset[str]:
    """The keywords this Polars' `register_io_source` takes: `explain_name`/`explain_detail`
    (the scan's name in `LazyFrame.explain()`) are newer than the floor, polars 1.30."""
    return frozenset(inspect.signature(register_io_source).parameters)


def frames(reader: pa.RecordBatchReader, predicate: Any, wanted: list[str], n_rows: int | None,
            batch_size: int | None) -> Iterator[Any]:
    """The scan's batches as DataFrames: filtered by the whole predicate, projected, at most
    `n_rows` rows, in frames of `batch_size` rows (small ones gathered, large ones cut)."""
    import polars as pl

    left = n_rows
    pending: list[pl.DataFrame] = []
    pending_rows = 0
    size = batch_size if batch_size and batch_size > 0 else None
    for batch in reader:
        df = pl.from_arrow(batch)
        assert isinstance(df, pl.DataFrame)
        if predicate is not None:
            df = df.filter(predicate)
        df = df.select(wanted)
        if left is not None:
            df = df.head(left)
            left -= df.height
        if df.height:
            if size is None:
                yield df
            else:
                pending.append(df)
                pending_rows += df.height
                while pending_rows >= size:
                    whole = pl.concat(pending, rechunk=False) if len(pending) > 1 else pending[0]
                    yield whole.slice(0, size)
                    rest = whole.slice(size)
                    pending, pending_rows = ([rest], rest.height) if rest.height else ([], 0)
        if left is not None and left <= 0:
            break
    if pending:
        yield pl.concat(pending) if len(pending) > 1 else pending[0]
