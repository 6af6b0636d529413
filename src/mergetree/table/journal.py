"""A journal of the files a piece of work creates, each recorded before it is created, so that
whoever runs the work elsewhere can remove them even if the process doing it dies: a Spark
task compacting a bucket journals into an object of the table's store that the driver reads
back when the job fails, or when it keeps another attempt's results.

Where the engine creates a new data file (with its sidecars), a Paimon file's ``.index`` or a
deletion-vector index file, it calls `creating` first — what a compaction creates; outside
`journaling` that is a no-op.  A line names an object of the table's store by its path under the table, any
other (a Paimon external data path) by its location (`Store.describe`)."""
from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from contextvars import ContextVar

from ..storage import LocalDiskStore, ObjectNotFoundError, StorageError, Store

__all__ = ["Journal", "creating", "is_location", "journaled", "journaling", "remove_journal"]

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:/")


def is_location(line: str) -> bool:
    """Whether a journal line names a file outside the table's store (an absolute path or a
    URI), not an object path under the table (which never starts with "/" or a scheme; a
    partition directory's "k=v:..." is no scheme)."""
    return line.startswith("/") or _SCHEME.match(line) is not None


class Journal:
    """One task attempt's journal: object `name` of the table's store, holding every line so
    far (rewritten at each addition: an object store has no append)."""

    def __init__(self, table_storage: Store, name: str) -> None:
        self.table_storage, self.name = table_storage, name
        self.lines: list[str] = []

    def line(self, storage: Store, name: str) -> str:
        if storage is self.table_storage or storage.uri == self.table_storage.uri:
            return name
        return storage.describe(name)

    def record(self, storage: Store, names: list[str]) -> None:
        self.lines += [self.line(storage, n) for n in names]
        self.table_storage.write(self.name, "".join(f"{line}\n" for line in self.lines).encode("utf-8"))


_current: ContextVar[Journal | None] = ContextVar("mergetree_journal", default=None)


def creating(storage: Store, *names: str) -> None:
    """Files `names` of `storage` are about to be created: journal them, if anything journals."""
    journal = _current.get()
    if journal is not None and names:
        journal.record(storage, list(names))


@contextlib.contextmanager
def journaling(journal: Journal) -> Iterator[Journal]:
    """Journal every file created inside (in this thread)."""
    token = _current.set(journal)
    try:
        yield journal
    finally:
        _current.reset(token)


def journaled(storage: Store, prefix: str) -> list[str]:
    """Every line of the journals under `prefix` (each task attempt writes its own)."""
    lines: list[str] = []
    for info in sorted(storage.list(f"{prefix}/"), key=lambda i: i.path):
        try:
            data = storage.read(info.path)
        except ObjectNotFoundError:
            continue
        lines += [line for line in data.decode("utf-8").splitlines() if line.strip()]
    return lines


def remove_journal(storage: Store, prefix: str) -> None:
    """Remove the journals (best effort: a journal left behind names files, it is no table file)."""
    with contextlib.suppress(StorageError):
        for info in list(storage.list(f"{prefix}/")):
            storage.delete(info.path)
    if isinstance(storage, LocalDiskStore):  # a directory is no object: the local store leaves it
        with contextlib.suppress(OSError):
            os.rmdir(os.path.join(storage.root, prefix))
