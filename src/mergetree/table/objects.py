"""A table's files through its `mergetree.storage.Store`: where a table lives (a local path or
an object-store URI, resolved once), and the few ways the table layer touches a file.

A local table keeps its hot paths as they were: `source` hands pyarrow the file's real local
path (no extra system call, the footer cache keyed on the file's stat as before).  A table on
an object store hands it a `StoredFile` instead — the object's name, its size as the manifest
recorded it (no HEAD request) and the store — which opens as a seekable file of ranged GETs.

Stores are kept per location for this process (`storage_for`), so that the string paths the
table layer passes around (a table's log tables at `<table>/queries`, the CLI, Spark's driver)
reach the store, and the credentials, the table was opened with; `storage_options` are held
only there, never written anywhere."""
from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any, NamedTuple

import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import InvalidArgumentError
from ..storage import LocalDiskStore, ObjectNotFoundError, Store, resolve

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["StoredFile", "is_local", "is_uri", "list_names", "locate", "location_exists", "read_parquet_table",
           "source", "storage_for", "storage_options_for", "table_path", "write_parquet"]


class StoredFile(NamedTuple):
    """A file of a table on an object store: its name under the store's root and, when a
    manifest recorded it, its size."""

    storage: Store
    name: str
    size: int | None = None

    def open(self) -> Any:
        return self.storage.open_input(self.name, size=self.size)

    @property
    def key(self) -> tuple:
        """What identifies the file's content for a cache: files are written once under unique
        names, and the recorded size guards against a replaced one."""
        return (self.storage.uri, self.name, self.size)

    def __str__(self) -> str:
        return self.storage.describe(self.name)


def is_local(storage: Store) -> bool:
    return isinstance(storage, LocalDiskStore)


def table_path(storage: Store) -> str:
    """How a table at `storage` is named (`Table.path`): its absolute local path, or its URI."""
    return storage.root if isinstance(storage, LocalDiskStore) else storage.uri


def source(storage: Store, name: str, size: int | None = None) -> str | StoredFile:
    """What pyarrow reads a table file from: the local path, or a `StoredFile`."""
    if isinstance(storage, LocalDiskStore):
        return os.path.join(storage.root, name)
    return StoredFile(storage, name, size)


def write_parquet(table: pa.Table, target: str | StoredFile, **options: Any) -> None:
    """Write a small Parquet file (a sidecar) whole."""
    if isinstance(target, StoredFile):
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink, **options)
        target.storage.write(target.name, sink.getvalue())
    else:
        pq.write_table(table, target, **options)


def read_parquet_table(target: str | StoredFile, **options: Any) -> pa.Table:
    """Read a small Parquet file (a sidecar) whole."""
    if isinstance(target, StoredFile):
        return pq.read_table(pa.BufferReader(target.storage.read(target.name)), **options)
    return pq.read_table(target, **options)


def list_names(storage: Store, directory: str) -> list[str]:
    """The names of the files directly in `directory` (relative to the table): a local
    directory's listing (no stat per file), an object store's LIST by prefix."""
    if isinstance(storage, LocalDiskStore):
        try:
            return os.listdir(os.path.join(storage.root, directory))
        except (FileNotFoundError, NotADirectoryError):
            return []
    prefix = f"{directory}/"
    return [info.path[len(prefix):] for info in storage.list(prefix) if "/" not in info.path[len(prefix):]]


def read_if_exists(storage: Store, name: str) -> bytes | None:
    try:
        return storage.read(name)
    except ObjectNotFoundError:
        return None


# -- locations -------------------------------------------------------------------------------

_stores: dict[str, Store] = {}  # a remote table's URI (redacted) -> the store it was opened with
_stores_lock = threading.Lock()
_derived: set[str] = set()  # the locations `_known` found inside another store (not opened themselves)
# a remote table's URI (redacted) -> the storage_options it was opened with: what another process
# (a Spark task) needs to open the same store; kept in memory only, as the store keeps them
_given: dict[str, dict[str, object]] = {}


def _check(path: Any, what: str) -> str:
    if isinstance(path, bytes) or not isinstance(path, (str, os.PathLike)):
        raise InvalidArgumentError(f"{what} is a str or os.PathLike, not {type(path).__name__}")
    return os.fspath(path)


def locate(path: Any, storage_options: Mapping[str, object] | None = None, what: str = "a table path") -> Store:
    """The store of a table location given by a user: a local path (made absolute), or a URI
    resolved by `mergetree.storage.resolve` (an unknown scheme or option raises naming the URI,
    nothing is contacted or written).  A URI given without `storage_options` reuses the store
    this process opened it (or the table it is inside) with, if any."""
    text = _check(path, what)
    if storage_options is None:
        known = _known(text)
        if known is not None:
            return known
    storage = resolve(text, storage_options)
    if not isinstance(storage, LocalDiskStore):
        with _stores_lock:
            root = table_path(storage)
            # the locations found inside an earlier store of this one are found again inside
            # this one (a later job may open it with other credentials)
            for uri in [u for u in _derived if u.startswith(root + "/")]:
                _stores.pop(uri, None)
                _derived.discard(uri)
            _stores[root] = storage
            if storage_options is not None:
                _given[table_path(storage)] = dict(storage_options)
    return storage


def _known(text: str) -> Store | None:
    key = text.rstrip("/")
    with _stores_lock:
        if not _stores:
            return None
        hit = _stores.get(key)
        if hit is not None:
            return hit
        # a table inside a known one (its query log, its optimizer history)
        for uri, store in sorted(_stores.items(), key=lambda item: -len(item[0])):
            if key.startswith(uri + "/"):
                child = store.sub(key[len(uri) + 1:])
                _stores[key] = child
                _derived.add(key)
                return child
    return None


def storage_options_for(path: str | os.PathLike[str]) -> dict[str, object] | None:
    """The `storage_options` this process opened a remote location (or the table it is inside)
    with, for a process that must open the same store (a Spark task); None for a local path or
    a location opened without them (its credentials come from the environment)."""
    key = os.fspath(path).rstrip("/")
    with _stores_lock:
        for uri in sorted(_given, key=len, reverse=True):
            if key == uri or key.startswith(uri + "/"):
                return dict(_given[uri])
    return None


def is_uri(path: str) -> bool:
    """Whether a table's path (`Table.path`) is a URI rather than a local path."""
    return "://" in path


def location_exists(path: str) -> bool:
    """Whether anything is at a table location: a local directory, or an object under the prefix."""
    storage = storage_for(path)
    if isinstance(storage, LocalDiskStore):
        return os.path.isdir(storage.root)
    return next(iter(storage.list("")), None) is not None


def storage_for(path: str | os.PathLike[str]) -> Store:
    """The store of a table named by its path (`Table.path`) or URI."""
    return locate(path, None)
