"""Where a table's workload tables live: its query log and optimizer history.

A table mergetree made (or one whose owner switched its log on with ``query-log.enabled``)
keeps them beside it, in ``<table>/queries`` and ``<table>/optimizer``: outside every directory
Paimon lists, so no Paimon reader mistakes them for table data and Java's maintenance never
touches them.  A Paimon table someone else made says nothing of a log; a reader who wants its
queries logged and advised on, without writing into the table's directory, names a *workload
warehouse* (`set_workload_warehouse`, or the environment variable ``MERGETREE_WORKLOAD_WAREHOUSE``):
a Paimon filesystem warehouse whose database ``mergetree_workload`` holds, per such table, the
append tables ``<name>_<hash>_queries`` and ``<name>_<hash>_optimizer`` (``<name>`` the table's,
``<hash>`` eight hex digits of its location), which any Paimon engine can query.  With a workload
warehouse, every read of such a table is logged there."""
from __future__ import annotations

import hashlib
import os
import re
import threading
from collections.abc import Mapping

from ...errors import InvalidArgumentError, MergeTreeError
from ..directory import TableDirectory
from ..objects import is_uri, locate
from ..options import KEY_QUERY_LOG
from ..paimon.store import open_directory
from ..paimon.tables import option_name

__all__ = ["WAREHOUSE_ENVIRONMENT", "WORKLOAD_DATABASE", "keeps_own_log", "route_elsewhere", "routed",
           "set_workload_warehouse", "side_table", "table_slug", "workload_warehouse"]

WAREHOUSE_ENVIRONMENT = "MERGETREE_WORKLOAD_WAREHOUSE"
WORKLOAD_DATABASE = "mergetree_workload"

_lock = threading.Lock()
_warehouse: str | None = None           # set_workload_warehouse's (None: the environment's, if any)
_routes: dict[str, str | None] = {}     # table path -> its name in the workload warehouse (None: beside it)
# tables of other formats (an Iceberg table's iceberg:// name): their workload tables' warehouse and name
_elsewhere: dict[str, tuple[str, str]] = {}


def set_workload_warehouse(location: str | os.PathLike | None,
                           storage_options: Mapping[str, object] | None = None) -> None:
    """Keep the query logs and optimizer histories of tables that say nothing of a log (Paimon
    tables mergetree did not make) in the Paimon warehouse at `location` (a local directory or
    an object-store URI, `storage_options` as `Table.open` takes them), and log every read of
    such a table there; None: no workload warehouse (the environment's
    ``MERGETREE_WORKLOAD_WAREHOUSE``, if set, still counts)."""
    global _warehouse
    if location is None:
        text = None
    else:
        if isinstance(location, bytes) or not isinstance(location, (str, os.PathLike)) or not os.fspath(location):
            raise InvalidArgumentError(f"the workload warehouse is a path or URI, not {location!r}")
        text = os.fspath(location)
        text = text.rstrip("/") if is_uri(text) else os.path.abspath(text)
        locate(text, storage_options, "the workload warehouse")  # checked now; its store remembered
    with _lock:
        _warehouse = text
        _routes.clear()


def workload_warehouse() -> str | None:
    """The workload warehouse in use (`set_workload_warehouse`'s, else the environment's), or None."""
    with _lock:
        if _warehouse is not None:
            return _warehouse
    text = os.environ.get(WAREHOUSE_ENVIRONMENT, "").strip()
    if not text:
        return None
    return text.rstrip("/") if is_uri(text) else os.path.abspath(text)


def keeps_own_log(directory: TableDirectory) -> bool:
    """Does the table say whether it keeps a log beside it (``mergetree.query-log.enabled``: every
    table `Table.create` makes; a table Java or pypaimon made does not)?"""
    return option_name(KEY_QUERY_LOG) in directory.schema.options


def routed(directory: TableDirectory) -> bool:
    """Are the table's workload tables in the workload warehouse (it keeps no log of its own,
    and there is one)?  Noted for `side_table`, which then needs no look at the table."""
    name = None if keeps_own_log(directory) or workload_warehouse() is None else _table_name(directory)
    with _lock:
        _routes[_key(directory.path)] = name
    return name is not None


def route_elsewhere(table_path: str, warehouse: str, name: str) -> None:
    """Keep the workload tables of the table named `table_path` (not a Paimon table's directory:
    an ``iceberg://`` name) in `warehouse` (a workload warehouse: `set_workload_warehouse`'s when
    there is one, else its format's own place beside its catalog) as ``<name>_<kind>``."""
    with _lock:
        _elsewhere[table_path] = (warehouse, name)


def side_table(table_path: str, kind: str) -> str:
    """Where the workload table `kind` ("queries": the query log, "optimizer": the history) of
    the table at `table_path` is: beside it, or in the workload warehouse."""
    with _lock:
        elsewhere = _elsewhere.get(table_path)
    if elsewhere is not None:
        return _in_warehouse(elsewhere[0], f"{elsewhere[1]}_{kind}")
    key = _key(table_path)
    with _lock:
        known = key in _routes
        name = _routes.get(key)
    if not known:
        name = None
        if workload_warehouse() is not None:
            try:
                directory = open_directory(table_path)
            except MergeTreeError:
                directory = None  # no table there (yet): its logs would be beside it
            if directory is not None and not keeps_own_log(directory):
                name = _table_name(directory)
            with _lock:
                _routes[key] = name
    warehouse = workload_warehouse()
    if name is None or warehouse is None:
        return f"{table_path.rstrip('/')}/{kind}" if is_uri(table_path) else os.path.join(table_path, kind)
    return _in_warehouse(warehouse, f"{name}_{kind}")


def _in_warehouse(warehouse: str, table: str) -> str:
    if is_uri(warehouse):
        return f"{warehouse.rstrip('/')}/{WORKLOAD_DATABASE}.db/{table}"
    return os.path.join(warehouse, f"{WORKLOAD_DATABASE}.db", table)


def _key(path: str) -> str:
    return path.rstrip("/") if is_uri(path) else os.path.realpath(path)


def _table_name(directory: TableDirectory) -> str:
    """The table's name in the workload database: its own (``db_table`` in a catalog), in the
    letters Paimon's catalogs take, and a hash of its location (two tables of one name differ)."""
    path = directory.path.rstrip("/")
    parts = re.split(r"[/\\]", path)
    name = parts[-1]
    if len(parts) > 1 and parts[-2].endswith(".db"):
        name = f"{parts[-2][:-3]}_{name}"
    return table_slug(name, _key(path))


def table_slug(name: str, location: str) -> str:
    """`name` in the letters Paimon's catalogs take, with eight hex digits of `location`."""
    slug = re.sub(r"[^a-z0-9_]+", "_", name.lower()).strip("_") or "table"
    return f"{slug[:48]}_{hashlib.sha256(location.encode()).hexdigest()[:8]}"
