"""One bounded, thread-safe cache of what was decoded from files that never change under their
name (Parquet footers, Avro manifests, file indexes, key columns): an entry is
keyed on the file's path, size and modification time plus the caller's own key parts, so a file
replaced or damaged in place is read again rather than answered from memory.  Files on an
object store are keyed without a request (`get_keyed`): their unique name and recorded size."""
from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["FileCache"]

V = TypeVar("V")


class FileCache(Generic[V]):
    """Least-recently-used entries, at most `max_entries` of them and (with `weight`) at most
    `max_bytes` of weight (the newest entry always stays).  Two threads missing the same key may
    both load it; the second result replaces the first."""

    def __init__(self, max_entries: int, max_bytes: int | None = None,
                 weight: Callable[[V], int] | None = None) -> None:
        if (max_bytes is None) != (weight is None):
            raise ValueError("max_bytes and weight go together")
        self.max_entries, self.max_bytes, self._weight = max_entries, max_bytes, weight
        self._entries: OrderedDict[Hashable, tuple[V, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, path: str, load: Callable[[], V], *key: Hashable) -> V:
        """The cached value for the file at `path` (and `key`), or `load()`'s, then kept.  A file
        that cannot be stat'ed is not cached: `load` runs and reports it as it will."""
        try:
            st = os.stat(path)
        except OSError:
            return load()
        return self.get_keyed((path, st.st_size, st.st_mtime_ns, *key), load)

    def get_keyed(self, full: tuple, load: Callable[[], V]) -> V:
        """The cached value for `full` (a key that identifies the file's content without a
        stat: an object store's file by its unique name and recorded size), or `load()`'s."""
        with self._lock:
            hit = self._entries.get(full)
            if hit is not None:
                self._entries.move_to_end(full)
                return hit[0]
        value = load()
        size = self._weight(value) if self._weight is not None else 0
        with self._lock:
            old = self._entries.pop(full, None)
            if old is not None:
                self._bytes -= old[1]
            self._entries[full] = (value, size)
            self._bytes += size
            while len(self._entries) > 1 and (len(self._entries) > self.max_entries or (
                    self.max_bytes is not None and self._bytes > self.max_bytes)):
                _, (_, dropped) = self._entries.popitem(last=False)
                self._bytes -= dropped
        return value

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0

    def __len__(self) -> int:
        return len(self._entries)
