"""The query log (seed 003's query collection): what every read asked for and what it cost.

Each `Table.read`, `scan` and `aggregate` (from Python, the CLI or the Spark data source)
produces one `QueryRecord`: when, who, where from, the columns filtered with the kind of each
predicate (=, IN, range, IS NULL, LIKE-prefix, ...), the filter itself (so the query can be
replayed), order-by and limit, group-by and measures, files and bytes scanned against the
total, and the time taken.  Records are kept in memory and appended in the background to the
table's query log: an append table of its own at ``<table>/queries/`` (so it is queryable like
any table, e.g. ``Table.open(log_path(path)).read()``), which the advisor reads.

Logging is never on a read's critical path: recording is a list append, a background thread
writes batches (at most every FLUSH_SECONDS, at once when MAX_BUFFERED pile up, and at
interpreter exit), and a failed write is reported once through the ``mergetree.querylog``
logger and dropped — it never fails or slows a read.  Whoever reads the log (`read_rows`: the
advisor, replay, the report, ``mergetree queries show``) writes this process's records first,
so a script's reads are seen by its own ``advise()``.  The log is data the table can lose
without losing itself: a damaged file of it is left out with a warning (`logtables`), and
``mergetree repair`` drops it.  Records older than the table's ``query-log.retention`` (default
30 days) are removed by `retention.expire`.  The option ``query-log.enabled=false``
switches it off for a table, the environment variable ``MERGETREE_QUERY_LOG=0`` for the process.
"""
from __future__ import annotations

import atexit
import contextlib
import contextvars
import datetime as dt
import functools
import getpass
import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from ...errors import CommitConflictError, CorruptTableError, InvalidArgumentError, MergeTreeError
from ...merge import RowKind
from .. import filters as flt
from ..directory import TableDirectory
from ..levers.optimize import rewrite_files
from ..paimon.create import open_or_create
from ..values import decode_value, encode_value
from ..write import write_rows
from .logtables import read_rows as read_log_table
from .places import keeps_own_log, routed, side_table

__all__ = ["LOG_SCHEMA", "PREDICATE_KINDS", "QUERY_LOG_DIR", "QueryRecord", "append_rows", "filter_from_json",
           "filter_to_json", "flush", "log_path", "logging_enabled", "logging_enabled_for", "predicate_kinds",
           "query_source", "read_rows",
           "record", "record_read"]

QUERY_LOG_DIR = "queries"
FLUSH_SECONDS = 5.0          # each flush is a commit to the log: few and large beats many and small
MAX_BUFFERED = 5_000          # records per table that wake the writer at once
COMPACT_FILES = 16            # the log's level-0 files that make the writer compact it
MAX_FILTER_JSON = 64 * 1024   # a larger filter (a huge IN list) is logged by shape only, not replayable
# write-only: the writer thread compacts the log itself, every COMPACT_FILES flushes, not inline
LOG_OPTIONS = {"mergetree.query-log.enabled": "false", "target-file-size": "16 mb", "write-only": "true"}

# What a predicate does, as the advisor needs it: equality-like predicates favour Bloom filters,
# ranges favour clustering and bitmaps.
PREDICATE_KINDS = ("eq", "in", "range", "ne", "not_in", "is_null", "not_null", "like_prefix", "expression")
_KIND_OF_OP = {"=": "eq", "in": "in", "<": "range", "<=": "range", ">": "range", ">=": "range", "!=": "ne",
               "not in": "not_in", "is null": "is_null", "is not null": "not_null"}

LOG_SCHEMA = pa.schema([
    ("query_id", pa.string()),
    ("ts", pa.timestamp("us", "UTC")),
    ("user", pa.string()),
    ("source", pa.string()),          # python, cli, spark, import
    ("kind", pa.string()),            # read, scan, aggregate
    ("snapshot_id", pa.int64()),
    ("filter_columns", pa.list_(pa.string())),
    ("predicates", pa.list_(pa.struct([("column", pa.string()), ("kind", pa.string())]))),
    ("filter", pa.string()),          # JSON (see filter_to_json); null: none, or not replayable
    ("columns", pa.list_(pa.string())),
    ("order_by", pa.list_(pa.struct([("column", pa.string()), ("direction", pa.string())]))),
    ("limit", pa.int64()),
    ("group_by", pa.list_(pa.string())),
    ("measures", pa.list_(pa.struct([("column", pa.string()), ("function", pa.string())]))),
    ("files_scanned", pa.int64()),
    ("files_total", pa.int64()),
    ("bytes_scanned", pa.int64()),
    ("bytes_total", pa.int64()),
    ("rows_out", pa.int64()),
    ("duration_ms", pa.float64()),
    ("sql", pa.string()),             # imported queries: the statement
])

_source: contextvars.ContextVar[str] = contextvars.ContextVar("mergetree_query_source", default="python")
_log = logging.getLogger("mergetree.querylog")


def log_path(table_path: str) -> str:
    """Where a table's query log lives: beside it, or in the workload warehouse (`places`)."""
    return side_table(table_path, QUERY_LOG_DIR)


def logging_enabled_for(table_path: str) -> bool:
    """Are the reads of a table of another format (an Iceberg table, whose workload tables
    `places.route_elsewhere` routed) logged?  Always, but with ``MERGETREE_QUERY_LOG=0``."""
    return os.environ.get("MERGETREE_QUERY_LOG", "1") not in ("0", "false", "off")


def logging_enabled(directory: TableDirectory) -> bool:
    """Are the table's reads logged: as its ``query-log.enabled`` says, or — a table that says
    nothing of a log (a Paimon table mergetree did not make) — when there is a workload
    warehouse to log them in; never with ``MERGETREE_QUERY_LOG=0``."""
    if os.environ.get("MERGETREE_QUERY_LOG", "1") in ("0", "false", "off"):
        return False
    return directory.options.query_log if keeps_own_log(directory) else routed(directory)


@contextlib.contextmanager
def query_source(name: str) -> Iterator[None]:
    """Reads inside this block are logged as coming from `name` (the CLI, Spark)."""
    token = _source.set(name)
    try:
        yield
    finally:
        _source.reset(token)


# ---------------------------------------------------------------------------
# What a query asked for
# ---------------------------------------------------------------------------

def predicate_kinds(f: flt.Filter) -> list[tuple[str, str]]:
    """(column, kind) of each predicate of a normalized filter, through AND and OR, once each
    in order of appearance; a pyarrow expression counts as one "expression" predicate."""
    out: dict[tuple[str, str], None] = {}

    def walk(node: flt.Filter) -> None:
        if node is None:
            return
        if not isinstance(node, tuple):  # a pc.Expression: opaque
            out[("", "expression")] = None
        elif node[0] in ("and", "or") and len(node) == 2:
            for child in node[1]:
                walk(child)
        else:
            out[(node[0], _KIND_OF_OP.get(node[1], "expression"))] = None

    walk(f)
    return list(out)


def _encode_filter(node: flt.Filter) -> Any:
    if node[0] in ("and", "or") and len(node) == 2:
        return [node[0], [_encode_filter(child) for child in node[1]]]
    column, op, value = node
    encoded = [encode_value(v) for v in value] if isinstance(value, list) else encode_value(value)
    return [column, op, encoded]


def filter_to_json(f: flt.Filter) -> str | None:
    """A normalized tuple filter as JSON (values type-tagged, so replay gets them back exactly);
    None for no filter, a pyarrow expression, or a filter over MAX_FILTER_JSON bytes."""
    if f is None or not isinstance(f, tuple):
        return None
    try:
        text = json.dumps(_encode_filter(f), separators=(",", ":"))
    except (MergeTreeError, TypeError, ValueError):
        return None
    return text if len(text) <= MAX_FILTER_JSON else None


def _decode_filter(node: Any) -> flt.Filter:
    if node[0] in ("and", "or") and len(node) == 2:
        return (node[0], [_decode_filter(child) for child in node[1]])
    column, op, value = node
    return (column, op, [decode_value(v) for v in value] if isinstance(value, list) else decode_value(value))


def filter_from_json(text: str | None) -> flt.Filter:
    """The filter `filter_to_json` stored (None for none); InvalidArgumentError if damaged."""
    if text is None:
        return None
    try:
        return _decode_filter(json.loads(text))
    except (TypeError, ValueError, KeyError, IndexError) as exc:
        raise InvalidArgumentError(f"a logged filter cannot be read back ({exc}): {text[:200]!r}") from None


def _default_user() -> str | None:
    return os.environ.get("MERGETREE_USER") or _login()


@functools.lru_cache(maxsize=1)
def _login() -> str | None:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no such user in a container
        return None


@dataclass
class QueryRecord:
    """One logged query (see LOG_SCHEMA for the stored columns)."""

    kind: str
    filter: flt.Filter = None
    columns: Sequence[str] | None = None
    order_by: Sequence[tuple[str, str]] = ()
    limit: int | None = None
    group_by: Sequence[str] = ()
    measures: Sequence[tuple[str, str]] = ()
    snapshot_id: int | None = None
    files_scanned: int | None = None
    files_total: int | None = None
    bytes_scanned: int | None = None
    bytes_total: int | None = None
    rows_out: int | None = None
    duration_ms: float | None = None
    sql: str | None = None
    source: str = field(default_factory=_source.get)
    user: str | None = field(default_factory=_default_user)
    ts: dt.datetime = field(default_factory=lambda: dt.datetime.now(dt.timezone.utc))
    query_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    # a filter already as JSON; otherwise computed from `filter`
    filter_json: str | None = None
    # (column, kind) when known better than `filter` says (imported SQL: LIKE, subqueries)
    predicates: Sequence[tuple[str, str]] | None = None

    def to_row(self) -> dict[str, Any]:
        predicates = list(self.predicates) if self.predicates is not None else predicate_kinds(self.filter)
        return {
            "query_id": self.query_id, "ts": self.ts, "user": self.user, "source": self.source, "kind": self.kind,
            "snapshot_id": self.snapshot_id,
            "filter_columns": sorted({c for c, k in predicates if c}),
            "predicates": [{"column": c, "kind": k} for c, k in predicates],
            "filter": self.filter_json if self.filter_json is not None else filter_to_json(self.filter),
            "columns": list(self.columns) if self.columns is not None else None,
            "order_by": [{"column": c, "direction": d} for c, d in self.order_by],
            "limit": self.limit, "group_by": list(self.group_by),
            "measures": [{"column": c, "function": f} for c, f in self.measures],
            "files_scanned": self.files_scanned, "files_total": self.files_total,
            "bytes_scanned": self.bytes_scanned, "bytes_total": self.bytes_total, "rows_out": self.rows_out,
            "duration_ms": self.duration_ms, "sql": self.sql,
        }


# ---------------------------------------------------------------------------
# Buffering and the background writer
# ---------------------------------------------------------------------------

_lock = threading.Lock()
_buffers: dict[str, list[QueryRecord]] = {}      # table path -> records not yet written
_write_lock = threading.Lock()                    # one writer at a time (thread and flush())
_wake = threading.Event()
_thread: threading.Thread | None = None
_failed: set[str] = set()                         # paths whose failure was reported


def record_read(table_path: str, kind: str, f: flt.Filter, snapshot_id: int | None, stats: Any, started: float,
                columns: Sequence[str] | None = None, order_by: Sequence[tuple[str, str]] = (),
                limit: int | None = None, group_by: Sequence[str] = (), measures: Sequence[tuple[str, str]] = (),
                source: str | None = None) -> None:
    """Queue the record of a read that `stats` (a `ReadStats`) measured, begun at `started`
    (`time.perf_counter()`).  Never raises."""
    query = QueryRecord(kind, f, columns, list(order_by), limit, group_by, measures, snapshot_id, stats.files_read,
                        stats.files_total, stats.bytes_read, stats.bytes_total, stats.rows_out,
                        (time.perf_counter() - started) * 1000.0)
    if source is not None:
        query.source = source
    record(table_path, query)


def record(table_path: str, query: QueryRecord) -> None:
    """Queue a record for the table's log.  Never raises."""
    global _thread
    try:  # the record becomes a row in the writer thread, off the read's path
        with _lock:
            rows = _buffers.setdefault(table_path, [])
            rows.append(query)
            if _thread is None or not _thread.is_alive():
                _thread = threading.Thread(target=_run, name="mergetree-querylog", daemon=True)
                _thread.start()
            if len(rows) >= MAX_BUFFERED:
                _wake.set()
    except Exception as exc:  # logging must never fail a read
        _report(table_path, exc)


def flush(table_path: str | None = None) -> None:
    """Write the queued records now (of one table, or of all).  Never raises."""
    with _lock:
        if table_path is None:
            taken = dict(_buffers)
            _buffers.clear()
        else:
            taken = {table_path: _buffers.pop(table_path)} if table_path in _buffers else {}
    with _write_lock:
        for path, records in taken.items():
            try:
                append_rows(path, [r.to_row() for r in records])
            except Exception as exc:  # dropped, reported once
                _report(path, exc)


def append_rows(table_path: str, rows: list[dict[str, Any]]) -> None:
    """Append log rows to the table's query log, creating the log on first use."""
    if not rows:
        return
    directory = _open_or_create(log_path(table_path))
    data = pa.Table.from_pylist(rows, schema=LOG_SCHEMA)
    write_rows(directory, data, RowKind.INSERT)
    snapshot = directory.latest_snapshot()
    live = directory.live_files(snapshot) if snapshot is not None else {}
    if snapshot is not None and len(live) >= COMPACT_FILES:
        # the log is an append table (no key to compact by): its files are merged into files of
        # the target size, as the optimizer's minor pass merges small files
        groups: dict[tuple, list] = {}
        for e in live.values():
            groups.setdefault((e.partition, e.bucket), []).append(e.file)
        try:
            rewrite_files(directory, directory.options, snapshot, groups, "minor")
        except CommitConflictError:
            pass  # another process compacted it first
        except CorruptTableError as exc:  # the rows are written; a damaged old file stops only the compaction
            if table_path not in _failed:
                _failed.add(table_path)
                _log.warning("mergetree: the query log of %s holds a damaged file (%s); it is not compacted until "
                             "`mergetree repair` drops it", table_path, exc)


def read_rows(table_path: str, columns: Sequence[str] | None = None, filter: flt.Filter = None) -> pa.Table:
    """The table's logged queries (LOG_SCHEMA's columns, or `columns`), this process's queued
    records written first (of every table: the same table opened under another spelling of its
    path queues under that one); none when nothing was logged.  A damaged part of the log is left
    out with a `logtables.DamagedLogWarning` naming it, never an error."""
    flush()
    return read_log_table(log_path(table_path), LOG_SCHEMA, "query log",
                          list(columns) if columns is not None else None, filter)


def _open_or_create(path: str) -> TableDirectory:
    return open_or_create(path, LOG_SCHEMA, LOG_OPTIONS)


def _report(path: str, exc: BaseException) -> None:
    if path not in _failed:
        _failed.add(path)
        repair = " (`mergetree repair` drops its damaged files)" if isinstance(exc, CorruptTableError) else ""
        _log.warning("mergetree: the query log of %s cannot be written (%s: %s); its records are dropped%s",
                     path, type(exc).__name__, exc, repair)


def _run() -> None:
    while True:
        _wake.wait(FLUSH_SECONDS)
        _wake.clear()
        flush()


def _after_fork_in_child() -> None:
    # the parent's records are the parent's to write; the writer thread did not survive the fork
    global _thread, _lock, _write_lock
    _buffers.clear()
    _thread = None
    _lock = threading.Lock()
    _write_lock = threading.Lock()


atexit.register(flush)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
