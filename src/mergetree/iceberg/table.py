"""An Apache Iceberg table (through pyiceberg) as the organize loop reads it: its reads planned by
pyiceberg's scan planning (partitions and the manifests' column statistics prune files), filtered
exactly by mergetree's filters (SQL's null rules), and logged in a query log kept beside its
catalog, never in the table's own folders; its data files with their statistics for the advisor
(`AdviceTarget`), read whole with their delete files applied (pyiceberg's reader: position
deletes and schema evolution; `deletes`: equality deletes, which pyiceberg does not read).  An
Iceberg table has no primary key here: its rows are read as they are."""
from __future__ import annotations

import datetime as dt
import logging
import os
import time
from collections.abc import Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ..errors import InvalidArgumentError, SnapshotNotFoundError
from ..table import filters as flt
from ..table.display import count_text, size_text
from ..table.durations import parse_since
from ..table.files import DataFileMeta
from ..table.levers.optimize import layout_signature
from ..table.objects import is_uri, locate
from ..table.options import OPTIONS, TableOptions
from ..table.read import ReadStats
from ..table.workload import places, querylog
from ..table.workload.advise import Advice, advise
from ..table.workload.history import PassReport, record_pass
from ..table.workload.retention import Expired
from ..table.workload.retention import expire as expire_log
from .catalog import IcebergLocation, embedded_home, load_table, parse_location
from .deletes import delete_paths, plan_files, read_rows
from .expressions import row_filter
from .rewrite import IcebergRewrite, Writer, rewrite

__all__ = ["IcebergFile", "IcebergTable", "open"]

PREFIX = "mergetree."  # mergetree's own decisions among the table's properties (other engines ignore them)
BLOOM_PROPERTY = "write.parquet.bloom-filter-enabled.column."
BLOOM_FPP_PROPERTY = "write.parquet.bloom-filter-fpp.column."
TARGET_FILE_SIZE = "write.target-file-size-bytes"
ICEBERG_TARGET_FILE_SIZE = 512 * 1024 * 1024  # Iceberg's default


@dataclass(frozen=True)
class IcebergFile:
    """Where a `DataFileMeta` of an Iceberg table came from: its scan task (the data file and
    the delete files that apply to it)."""

    task: Any

    @property
    def delete_files(self) -> int:
        return len(delete_paths(self.task))


def open(location: str, storage_options: Mapping[str, object] | None = None) -> IcebergTable:
    """The Iceberg table named ``iceberg://CATALOG/NAMESPACE.TABLE`` (see `mergetree.iceberg.catalog`)."""
    return IcebergTable(location, storage_options)


class IcebergTable:
    """An Iceberg table with the organize verbs `Table` has (`read`, `scan`, `plan`, `advise`,
    `expire_queries`), its query log and optimizer history in the workload warehouse (the one
    `set_workload_warehouse` names, else ``mergetree_workload.db`` in its catalog's warehouse)."""

    def __init__(self, location: str, storage_options: Mapping[str, object] | None = None) -> None:
        self.location: IcebergLocation = parse_location(location)
        self.storage_options = dict(storage_options or {})
        self.catalog, self.iceberg = load_table(self.location, self.storage_options)
        self.path = str(self.location)
        self.last_read: ReadStats | None = None
        self._arrow: tuple[int, pa.Schema] | None = None  # (schema id, its Arrow schema)
        home = self._workload_home()
        if is_uri(home) and self.storage_options and places.workload_warehouse() is None:
            # the workload tables on the catalog's object store, with the credentials of this open
            locate(home, self.storage_options, "the Iceberg table's workload warehouse")
        places.route_elsewhere(self.path, home, places.table_slug("_".join(self.location.identifier), self.path))

    def __repr__(self) -> str:
        snapshot = self.iceberg.current_snapshot()
        where = f"snapshot {snapshot.snapshot_id}" if snapshot is not None else "empty"
        return f"IcebergTable({self.path!r}, format v{self.iceberg.format_version}, {where})"

    # -- what it is ------------------------------------------------------------------------
    def refresh(self) -> IcebergTable:
        self.iceberg = self.iceberg.refresh()
        return self

    @property
    def schema(self) -> pa.Schema:
        """Its columns as Arrow reads them (without Iceberg's field-id metadata); converted once
        per schema id (planning asks for it per data file)."""
        from pyiceberg.io.pyarrow import schema_to_pyarrow
        schema_id = self.iceberg.metadata.current_schema_id
        if self._arrow is None or self._arrow[0] != schema_id:
            arrow = schema_to_pyarrow(self.iceberg.schema(), include_field_ids=False)
            self._arrow = (schema_id, pa.schema([pa.field(f.name, f.type, f.nullable) for f in arrow]))
        return self._arrow[1]

    arrow_schema = schema

    @property
    def has_primary_key(self) -> bool:
        return False

    @property
    def levers(self) -> frozenset[str]:
        """What an Iceberg table carries: a layout and an in-file sort (its files' order, written by
        `optimize`) and Parquet Bloom filters (its writers' own); no bitmap index, no pre-aggregates."""
        return frozenset({"distribution", "bloom", "sort"})

    @property
    def partition_by(self) -> tuple[str, ...]:
        schema = self.iceberg.schema()
        return tuple(schema.find_column_name(f.source_id) or f.name for f in self.iceberg.spec().fields)

    @property
    def properties(self) -> dict[str, str]:
        return dict(self.iceberg.properties)

    @property
    def options(self) -> TableOptions:
        """mergetree's options as the table's properties hold them: its own decisions under
        ``mergetree.``, Bloom filters as Iceberg's writers read them, the target file size
        Iceberg's (``write.target-file-size-bytes``, 512 MiB by default)."""
        props = self.properties
        raw = {k[len(PREFIX):]: v for k, v in props.items() if k.startswith(PREFIX) and k[len(PREFIX):] in OPTIONS}
        raw.setdefault("target-file-size", props.get(TARGET_FILE_SIZE, str(ICEBERG_TARGET_FILE_SIZE)))
        blooms = [k[len(BLOOM_PROPERTY):] for k, v in props.items()
                  if k.startswith(BLOOM_PROPERTY) and v.strip().lower() == "true"]
        if blooms:
            raw["file-index.bloom-filter.columns"] = ",".join(sorted(blooms))
        return TableOptions.parse(raw, self.schema, "deduplicate", ())

    def snapshot_id(self, snapshot: Any = None) -> int | None:
        """The id of `snapshot` (an id, a tag or branch name, a datetime or ISO time: the newest
        at or before it), or the current one's; None for an empty table."""
        if snapshot is None:
            current = self.iceberg.current_snapshot()
            return None if current is None else current.snapshot_id
        if isinstance(snapshot, int) and not isinstance(snapshot, bool):
            if self.iceberg.snapshot_by_id(snapshot) is None:
                raise SnapshotNotFoundError(f"{self.path} has no snapshot {snapshot}")
            return snapshot
        if isinstance(snapshot, str) and self.iceberg.snapshot_by_name(snapshot) is not None:
            return self.iceberg.snapshot_by_name(snapshot).snapshot_id
        moment = snapshot if isinstance(snapshot, dt.datetime) else _moment(snapshot)
        millis = int(moment.timestamp() * 1000)
        found = self.iceberg.snapshot_as_of_timestamp(millis)
        if found is None:
            raise SnapshotNotFoundError(f"{self.path} has no snapshot at or before {moment.isoformat()}")
        return found.snapshot_id

    # -- files -----------------------------------------------------------------------------
    def plan(self, filter: flt.Filter = None, snapshot: Any = None) -> list[DataFileMeta]:
        """The data files a read with `filter` touches (pyiceberg's planning: partitions, then
        each file's column bounds and null counts)."""
        f = flt.normalize(filter, self.schema)
        snapshot_id = self.snapshot_id(snapshot)
        if snapshot_id is None:
            return []
        scan = self.iceberg.scan(row_filter=row_filter(f), snapshot_id=snapshot_id)
        # in path order: pyiceberg plans manifests on threads, and the advisor's sample (drawn
        # file by file) must not change with the order they finished in
        return [self._meta(task) for task in sorted(plan_files(scan), key=lambda t: t.file.file_path)]

    def data_files(self, snapshot: Any = None) -> list[DataFileMeta]:
        """Every live data file of the snapshot (default: the current one)."""
        return self.plan(None, snapshot)

    def _meta(self, task: Any) -> DataFileMeta:
        schema = self.iceberg.schema()
        data = task.file
        arrow = self.schema
        stats: dict[str, tuple[Any, Any, int]] = {}
        lowers, uppers, nulls = data.lower_bounds or {}, data.upper_bounds or {}, data.null_value_counts or {}
        for field_id in set(lowers) | set(nulls):
            name = schema.find_column_name(field_id)
            if name is None or name not in arrow.names:
                continue
            iceberg_type = schema.find_type(field_id)
            stats[name] = (_bound(iceberg_type, arrow.field(name).type, lowers.get(field_id)),
                           _bound(iceberg_type, arrow.field(name).type, uppers.get(field_id)),
                           int(nulls.get(field_id, 0)))
        return DataFileMeta(data.file_path, 0, int(data.record_count), int(data.file_size_in_bytes),
                            stats=stats, origin=IcebergFile(task))

    def layout_group(self, meta: DataFileMeta) -> Hashable:
        """A data file's partition (with its spec: a rewrite lays out each partition's files on
        their own; an older spec's files, which it re-partitions by the current spec, are
        simulated as the partition they are in)."""
        if not isinstance(meta.origin, IcebergFile):
            raise InvalidArgumentError(f"{meta.file_name} is not a data file of {self.path}")
        data = meta.origin.task.file
        return (data.spec_id, tuple(data.partition))

    def read_file(self, meta: DataFileMeta, columns: Sequence[str]) -> pa.Table | None:
        """`columns` of one data file, its delete files applied."""
        if not isinstance(meta.origin, IcebergFile):
            raise InvalidArgumentError(f"{meta.file_name} is not a data file of {self.path}")
        return self.read_tasks([meta.origin.task], list(columns), None)

    def read_tasks(self, tasks: Sequence[Any], columns: list[str], f: flt.Filter) -> pa.Table:
        """`columns` of scan tasks' rows, their delete files applied (`f` prunes row groups only)."""
        projected = self.iceberg.schema().select(*columns) if columns else self.iceberg.schema()
        out = read_rows(self.iceberg.metadata, self.iceberg.io, projected, row_filter(f), tasks)
        schema = pa.schema([self.schema.field(c) for c in columns])
        return out.select(columns).cast(schema) if out.num_rows else schema.empty_table()

    def native_options(self, changes: Mapping[str, str | None]) -> dict[str, str | None]:
        """mergetree's option changes as the table's properties: Bloom filter columns as
        Iceberg's writers read them (``write.parquet.bloom-filter-enabled.column.<c>``: Spark,
        Flink and Trino write them too), the rest under ``mergetree.``."""
        props = self.properties
        out: dict[str, str | None] = {}
        for key, value in changes.items():
            if key == "file-index.bloom-filter.columns":
                wanted = {c.strip() for c in (value or "").split(",") if c.strip()}
                for name in self.schema.names:
                    enabled = props.get(BLOOM_PROPERTY + name, "").lower() == "true"
                    if name in wanted and not enabled:
                        out[BLOOM_PROPERTY + name] = "true"
                    elif name not in wanted and enabled:
                        out[BLOOM_PROPERTY + name] = None
            else:
                out[PREFIX + key] = value
        return out

    def check_writable(self, what: str) -> None:
        """InvalidArgumentError when pyiceberg cannot commit to this table (a format version it
        does not write: v3 for pyiceberg 0.12), naming `what` would have been committed."""
        from pyiceberg.table.metadata import SUPPORTED_TABLE_FORMAT_VERSION
        version = self.iceberg.format_version
        if version > SUPPORTED_TABLE_FORMAT_VERSION:
            raise InvalidArgumentError(
                f"{self.path} is an Iceberg format v{version} table: mergetree reads and advises on it, but "
                f"{what} commit through pyiceberg, which writes format v{SUPPORTED_TABLE_FORMAT_VERSION} at most "
                "(pyiceberg issue #1551); nothing was written")

    def set_properties(self, changes: Mapping[str, str | None]) -> None:
        """Set (a value) or remove (None) table properties, in one Iceberg commit; where that
        changes the layout, the table's sort order follows (`_follow_layout`)."""
        self.check_writable("its properties")
        with self.iceberg.transaction() as tx:
            kept = {k: v for k, v in changes.items() if v is not None}
            removed = [k for k, v in changes.items() if v is None and k in self.iceberg.properties]
            if kept:
                tx.set_properties(kept)
            if removed:
                tx.remove_properties(*removed)
        self.refresh()
        if any(k.startswith(PREFIX + "clustering.") for k in changes):
            self._follow_layout()

    def _follow_layout(self) -> None:
        """A linear layout is the table's sort order too (Iceberg's sort-order spec: Spark's and
        Flink's writers then sort by it as well); a curve or qd-tree, which no sort order can say,
        clears a sort order mergetree set before (``mergetree.sort-order`` marks it), never one
        someone else set."""
        from pyiceberg.transforms import IdentityTransform
        clustering = self.options.clustering
        ours = self.properties.get(PREFIX + "sort-order") == "layout"
        if clustering is not None and clustering.strategy == "linear":
            with self.iceberg.update_sort_order() as order:
                for column in clustering.columns:
                    order.asc(column, IdentityTransform())
            self.refresh()
            if not ours:
                with self.iceberg.transaction() as tx:
                    tx.set_properties({PREFIX + "sort-order": "layout"})
        elif ours:
            with self.iceberg.update_sort_order():
                pass  # no field: unsorted
            with self.iceberg.transaction() as tx:
                tx.remove_properties(PREFIX + "sort-order")
        self.refresh()

    # -- reading ---------------------------------------------------------------------------
    def read(self, columns: str | list[str] | None = None, filter: flt.Filter = None, snapshot: Any = None,
             limit: int | None = None) -> pa.Table:
        """The rows (`columns` of them) that pass `filter`, at `snapshot`; logged."""
        return pa.Table.from_batches(list(self._rows(columns, filter, snapshot, limit, "read")),
                                     schema=self._columns_schema(columns))

    def scan(self, columns: str | list[str] | None = None, filter: flt.Filter = None, snapshot: Any = None,
             limit: int | None = None, source: str | None = None) -> pa.RecordBatchReader:
        """`read` as a stream of record batches, a data file at a time; logged when read to its end."""
        return pa.RecordBatchReader.from_batches(self._columns_schema(columns),
                                                 self._rows(columns, filter, snapshot, limit, "scan", source))

    def _columns_schema(self, columns: str | list[str] | None) -> pa.Schema:
        return pa.schema([self.schema.field(c) for c in self._column_names(columns)])

    def _column_names(self, columns: str | list[str] | None) -> list[str]:
        names = self.schema.names
        wanted = [columns] if isinstance(columns, str) else list(columns) if columns is not None else names
        for c in wanted:
            if c not in names:
                raise InvalidArgumentError(f"{self.path} has no column {c!r}; columns: {names}")
        return wanted

    def _rows(self, columns: str | list[str] | None, filter: flt.Filter, snapshot: Any, limit: int | None,
              kind: str, source: str | None = None) -> Iterator[pa.RecordBatch]:
        started = time.perf_counter()
        names = self._column_names(columns)
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            raise InvalidArgumentError(f"limit must be a non-negative integer or None, not {limit!r}")
        schema = self.schema
        f = flt.normalize(filter, schema)
        expression = flt.to_expression(f, schema)
        needed = list(dict.fromkeys(names + sorted(flt.columns_of(f) or schema.names)))
        snapshot_id = self.snapshot_id(snapshot)
        stats = ReadStats()
        self.last_read = stats
        if snapshot_id is not None:
            summary = self.iceberg.snapshot_by_id(snapshot_id).summary
            stats.files_total = int(summary.get("total-data-files", 0) or 0) if summary else 0
            stats.bytes_total = int(summary.get("total-files-size", 0) or 0) if summary else 0
            tasks = plan_files(self.iceberg.scan(row_filter=row_filter(f), snapshot_id=snapshot_id))
        else:
            tasks = []
        out_schema = self._columns_schema(names)
        left = limit
        try:
            for task in tasks:
                if left == 0:
                    break
                stats.files_read += 1
                stats.bytes_read += int(task.file.file_size_in_bytes)
                rows = self.read_tasks([task], needed, f)
                if expression is not None:
                    rows = rows.filter(expression)
                rows = rows.select(names)
                if left is not None:
                    rows = rows.slice(0, left)
                    left -= rows.num_rows
                stats.rows_out += rows.num_rows
                yield from rows.cast(out_schema).to_batches()
        finally:
            if querylog.logging_enabled_for(self.path):
                querylog.record_read(self.path, kind, f, snapshot_id, stats, started,
                                     names if columns is not None else None, limit=limit, source=source)

    # -- the organize verbs ------------------------------------------------------------------
    def advise(self, since: dt.timedelta | dt.datetime | str | None = None, apply: bool = False,
               sample_rows: int = 200_000) -> Advice:
        """`Table.advise` for this table: its logged queries, its files and a sample of their
        rows; `apply` writes the advice into its properties (Bloom filters as Iceberg's writers
        read them, the layout and the rest under ``mergetree.``)."""
        if not isinstance(apply, bool):
            raise InvalidArgumentError(f"apply must be True or False, not {apply!r}")
        querylog.flush(self.path)
        advice = advise(self, parse_since(since), sample_rows)
        if apply and advice.options:
            self.set_properties(advice.options)
        return advice

    def optimize(self, tier: str = "major", progress: Any = None, partitions: Sequence[tuple] | None = None, *,
                 order: str | list[str] | None = None, strategy: str | None = None,
                 sort_within: str | list[str] | None = None, writer: Writer | None = None) -> IcebergRewrite:
        """Rewrite the files the layout in the table's properties (what `advise(apply=True)`
        wrote) has not laid out yet, one Iceberg commit per task of partitions (`tier` "major");
        or bin-pack each partition's small files ("minor"); `partitions`: only these (partition
        tuples, as the background optimizer's tasks name them).  `order` (with `strategy`,
        default linear for one column, else hilbert) and `sort_within` set the layout first, in
        the table's properties, as `Table.optimize` takes them.  `writer`: who writes the files
        (`mergetree.spark.optimize` passes Spark's executors).  See `mergetree.iceberg.rewrite`."""
        layout = layout_properties(order, strategy, sort_within)
        if layout:
            self.set_properties(layout)
        result = rewrite(self, tier, progress, partitions, writer)
        if result.status == "committed":  # the optimizer history, as the report shows passes
            try:
                record_pass(self.pass_report(result))
            except Exception as exc:  # the history can be lost, never the rewrite
                logging.getLogger(__name__).warning("the optimizer history of %s was not written: %s", self.path, exc)
        return result

    def pass_report(self, result: IcebergRewrite) -> PassReport:
        """A rewrite as the optimizer history and the daemon report passes."""
        if result.status != "committed":
            return PassReport(self.path, result.tier, result.status)
        return PassReport(self.path, result.tier, result.status, result.partitions, result.files_in,
                          result.files_out, result.rows, result.bytes_in, result.bytes_out,
                          result.snapshot_ids[-1], layout_signature(self.options), result.seconds, "partition")

    def expire_queries(self, retention: Any = None) -> Expired:
        """Remove the query log's records older than `retention` (default: the table's
        ``mergetree.query-log.retention`` property, else 30 days)."""
        if retention is None:
            retention = self.options.query_log_retention
            if retention is None:  # kept forever
                return Expired()
        return expire_log(self.path, retention)

    def info(self) -> IcebergInfo:
        files = self.data_files()
        return IcebergInfo(self.path, self.iceberg.location(), self.iceberg.format_version, self.snapshot_id(),
                           self.partition_by, len(files), sum(m.row_count for m in files),
                           sum(m.file_size for m in files),
                           len(frozenset().union(*(delete_paths(m.origin.task) for m in files))))

    # -- where its workload tables live -------------------------------------------------------
    def _workload_home(self) -> str:
        """`set_workload_warehouse`'s warehouse, else its catalog's warehouse (beside the
        namespaces' folders, never in a table's), else the embedded home's folder for the catalog."""
        chosen = places.workload_warehouse()
        if chosen is not None:
            return chosen
        warehouse = str(self.catalog.properties.get("warehouse") or "")
        if warehouse.startswith("file://"):
            return warehouse[len("file://"):].rstrip("/") or "/"
        if warehouse and (is_uri(warehouse) or os.path.isabs(warehouse)):
            return warehouse.rstrip("/")
        return os.path.join(embedded_home(), self.location.catalog, "workload")


def layout_properties(order: str | list[str] | None, strategy: str | None,
                      sort_within: str | list[str] | None) -> dict[str, str | None]:
    """A layout named as `Table.optimize` takes it, as the table properties that say it."""
    def columns(value: str | list[str] | None, name: str) -> list[str]:
        names = [value] if isinstance(value, str) else list(value or [])
        if not all(isinstance(c, str) and c.strip() for c in names):
            raise InvalidArgumentError(f"{name} names columns (a name or a list of names), not {value!r}")
        return [c.strip() for c in names]
    out: dict[str, str | None] = {}
    clustered = columns(order, "order")
    if strategy is not None and not clustered:
        raise InvalidArgumentError("strategy is the curve of an order: name the order's columns too")
    if clustered:
        out |= {"mergetree.clustering.columns": ",".join(clustered),
                "mergetree.clustering.strategy": strategy or ("linear" if len(clustered) == 1 else "hilbert"),
                "mergetree.clustering.qdtree": None}
    within = columns(sort_within, "sort_within")
    if within:
        out["mergetree.sort-within.columns"] = ",".join(within)
    return out


@dataclass(frozen=True)
class IcebergInfo:
    path: str
    location: str
    format_version: int
    snapshot_id: int | None
    partition_by: tuple[str, ...]
    files: int
    rows: int
    bytes: int
    delete_files: int

    def __repr__(self) -> str:
        deletes = f", {count_text(self.delete_files, 'delete file')}" if self.delete_files else ""
        contents = f"{count_text(self.rows, 'row')} in {count_text(self.files, 'file')}, {size_text(self.bytes)}"
        return f"IcebergInfo({self.path!r}, v{self.format_version}, snapshot {self.snapshot_id}: {contents}{deletes})"


def _moment(text: Any) -> dt.datetime:
    if not isinstance(text, str):
        raise InvalidArgumentError(f"a snapshot is an id, a tag or branch name, or a time, not {text!r}")
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        raise InvalidArgumentError(f"{text!r} is no snapshot id, tag or branch, nor an ISO 8601 time") from None
    return moment if moment.tzinfo is not None else moment.astimezone()


def _bound(iceberg_type: Any, arrow_type: pa.DataType, raw: bytes | None) -> Any:
    """A manifest's lower or upper bound as the Python value of the column's Arrow type."""
    if raw is None:
        return None
    from pyiceberg.conversions import from_bytes
    try:
        value = from_bytes(iceberg_type, raw)
        if pa.types.is_temporal(arrow_type) and isinstance(value, int):
            return pa.scalar(value, type=arrow_type).as_py()
        return value
    except (ValueError, TypeError, OverflowError, pa.ArrowInvalid, pa.ArrowTypeError):
        return None  # a bound that does not decode: no statistics for the column
