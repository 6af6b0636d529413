"""DuckDB: a mergetree or Paimon table registered on a connection as a view DuckDB scans with
projection and filter pushdown.

The route, measured with duckdb 2.0.1 (docs/ENGINES.md):
- a Polars `LazyFrame` made by `register_io_source` (`engines.polars.lazy_frame`) is an object
  DuckDB scans with pushdown: `select v from t where id = 5` calls the IO source with the
  columns [id, v] and the predicate `col("id") == 5` (its plan: `Filters: "id" = 5`,
  `Projections: v`), which become `Table.scan(columns, filter)`: pruned and merged by mergetree.
- an Arrow PyCapsule stream (`Table.scan()` or any `RecordBatchReader`) is scanned as it
  comes: DuckDB filters rows after mergetree has read and merged the whole table.
- a pyarrow dataset gets DuckDB's filters, but DuckDB accepts only pyarrow's own Dataset
  classes, and the one over a table's files (a FileSystemDataset) is unmerged: a primary-key
  table with several sorted runs would return every version of a key — wrong answers.
So DuckDB goes through the Polars IO source, with the query log's `source` set to "duckdb".
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import InvalidArgumentError
from .polars import lazy_frame
from .sources import PaimonSource, ScanSource, TableSource

__all__ = ["register", "register_paimon"]


def register(connection: Any, name: str, path_or_table: Any, snapshot: int | None = None,
             storage_options: Mapping[str, object] | None = None) -> Any:
    """Register a mergetree table (a `Table`, or a path/URI opened with `storage_options`) at
    `snapshot` (default: the latest now) on a DuckDB `connection` as `name`; queries on it push
    their columns and filters into the table's scan.  Returns the connection."""
    return _register(connection, name, TableSource(path_or_table, snapshot, storage_options))


def register_paimon(connection: Any, name: str, warehouse: Any, table: str, snapshot: Any = None,
                    storage_options: Mapping[str, object] | None = None) -> Any:
    """Register a Paimon table (`warehouse`, "db.table") on a DuckDB `connection` as `name`,
    read by `mergetree.paimon` with the pushed columns and filter.  Returns the connection."""
    return _register(connection, name, PaimonSource(warehouse, table, snapshot, storage_options))


def _register(connection: Any, name: str, source: ScanSource) -> Any:
    if not isinstance(name, str) or not name:
        raise InvalidArgumentError(f"name must be a non-empty string, not {name!r}")
    if not hasattr(connection, "register"):
        raise InvalidArgumentError(f"connection must be a duckdb connection, not {connection!r}")
    connection.register(name, lazy_frame(source, "duckdb"))
    return connection
