"""The `Store` interface every backend implements, the request counter, and what they share
(object paths, listing entries, range coalescing)."""
from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from typing import IO, TYPE_CHECKING, Any, NamedTuple, TypeVar

from mergetree.errors import ConditionalCreateUnsupportedError, InvalidArgumentError

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.fs as pafs

    from .location import Location

__all__ = ["COALESCE_GAP", "REQUEST_KINDS", "ObjectInfo", "RequestCounter", "Store", "WriteOnlyStream",
           "check_object_path", "check_ranges", "coalesce_ranges"]

REQUEST_KINDS = ("GET", "PUT", "LIST", "HEAD", "DELETE")
# Ranges less than this far apart are fetched by one request (object_store's default too):
# a request costs 10-100 ms, 1 MiB more of a response far less.
COALESCE_GAP = 1024 * 1024


class ObjectInfo(NamedTuple):
    """A listed object: its path under the store's root, size in bytes, and the store's own
    modification time (timezone-aware UTC)."""
    path: str
    size: int
    last_modified: datetime


class RequestCounter:
    """Requests a store made, by kind (GET, PUT, LIST, HEAD, DELETE); thread-safe.  A local
    store counts its file operations the same way, so a test or the bench can compare."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts = dict.fromkeys(REQUEST_KINDS, 0)

    def add(self, kind: str, n: int = 1) -> None:
        with self._lock:
            self._counts[kind] += n

    def __getitem__(self, kind: str) -> int:
        return self._counts[kind]

    def counts(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)

    @property
    def total(self) -> int:
        return sum(self.counts().values())

    def reset(self) -> dict[str, int]:
        """The counts so far, then zero: what one operation cost."""
        with self._lock:
            before, self._counts = self._counts, dict.fromkeys(REQUEST_KINDS, 0)
        return before

    def __repr__(self) -> str:
        return "RequestCounter(" + ", ".join(f"{k}={v}" for k, v in self.counts().items()) + ")"


def check_object_path(path: str) -> str:
    """A path under a store's root: relative, '/'-separated, no '.' or '..' segment."""
    if not isinstance(path, str) or not path or path.startswith("/") or "\\" in path or "\0" in path:
        raise InvalidArgumentError(f"object path must be a non-empty relative '/'-separated path, got {path!r}")
    parts = path.split("/")
    if any(p in ("", ".", "..") for p in parts[:-1]) or parts[-1] in (".", ".."):
        raise InvalidArgumentError(f"object path must not hold empty, '.' or '..' segments, got {path!r}")
    return path


def check_prefix(prefix: str) -> str:
    if prefix == "":
        return prefix
    if not isinstance(prefix, str) or prefix.startswith("/") or ".." in prefix.split("/"):
        raise InvalidArgumentError(f"list prefix must be relative, got {prefix!r}")
    return prefix


def coalesce_ranges(ranges: Iterable[tuple[int, int]], gap: int = COALESCE_GAP) -> list[tuple[int, int]]:
    """(start, end) spans covering every (offset, length) range, ranges less than `gap` bytes
    apart joined: the requests a coalesced read makes."""
    spans = sorted((o, o + n) for o, n in ranges if n > 0)
    out: list[tuple[int, int]] = []
    for start, end in spans:
        if out and start - out[-1][1] <= gap:
            if end > out[-1][1]:
                out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return out


class Store(ABC):
    """One table location's objects.  Paths are relative to the location's root and
    '/'-separated; every method raises a `StorageError` subclass naming the URI, never a
    backend's own exception.

    `write` overwrites (data files: unique names, written once); `create` is the commit
    primitive: it succeeds only if the object does not exist, atomically — readers see the
    whole object or none — and raises `ObjectExistsError` otherwise."""

    location: Location
    requests: RequestCounter
    #: whether `create` is a real conditional create (else it refuses: no commit without one)
    supports_conditional_create: bool = True

    def __init__(self, location: Location) -> None:
        self.location = location
        self.requests = RequestCounter()

    @property
    def uri(self) -> str:
        """The location's URI, secrets redacted."""
        return str(self.location)

    def describe(self, path: str | None = None) -> str:
        """The URI of `path` (or of the root) for messages, redacted."""
        return self.location.child(path) if path else self.uri

    def __repr__(self) -> str:
        shown = self.location.shown_options()
        extra = ", options={" + ", ".join(f"{k}: {v}" for k, v in shown.items()) + "}" if shown else ""
        return f"{type(self).__name__}({self.uri!r}{extra})"

    # -- reading
    @abstractmethod
    def read(self, path: str) -> bytes:
        """The whole object."""

    def read_range(self, path: str, offset: int, length: int) -> bytes:
        """`length` bytes from `offset` (fewer only at the object's end)."""
        return self.read_ranges(path, [(offset, length)])[0]

    @abstractmethod
    def read_ranges(self, path: str, ranges: Sequence[tuple[int, int]]) -> list[bytes]:
        """One bytes per (offset, length), fetched as coalesced requests (`coalesce_ranges`)."""

    @abstractmethod
    def size(self, path: str) -> int:
        """The object's size in bytes (one HEAD)."""

    @abstractmethod
    def exists(self, path: str) -> bool:
        """Whether the object exists (one HEAD)."""

    @abstractmethod
    def list(self, prefix: str = "") -> Iterator[ObjectInfo]:
        """Every object whose path starts with `prefix` (a string prefix, as S3's), with the
        store's own sizes and timestamps."""

    @abstractmethod
    def open_input(self, path: str, size: int | None = None) -> pa.NativeFile | IO[bytes]:
        """A seekable file pyarrow.parquet can read (ranged reads; `pre_buffer` coalesces them).
        A known `size` (a manifest records it) saves the HEAD request."""

    # -- writing
    @abstractmethod
    def write(self, path: str, data: bytes | bytearray | memoryview) -> None:
        """Put the object, replacing any there (data files: unique names, written once)."""

    @abstractmethod
    def create(self, path: str, data: bytes | bytearray | memoryview) -> None:
        """Put the object only if it does not exist (`ObjectExistsError` otherwise): the commit."""

    @abstractmethod
    def open_output(self, path: str) -> Any:
        """A file to stream an object into (a multipart upload on object stores); the object
        appears, whole, when the file is closed without an error, and never otherwise."""

    @abstractmethod
    def delete(self, path: str) -> None:
        """Remove the object; removing one that is not there is not an error (as on S3)."""

    def sub(self, prefix: str) -> Store:
        """The store rooted at `prefix` under this one, with the same options and credentials
        (a table's query log and optimizer history: tables inside the table)."""
        import dataclasses
        import posixpath

        check_object_path(prefix)
        location = self.location
        root = posixpath.join(location.root, prefix) if location.root else prefix
        child = dataclasses.replace(location, uri=location.uri.rstrip("/") + "/" + prefix, root=root)
        return self._at(child)

    def _at(self, location: Location) -> Store:
        """A store of this backend for another location (`sub`)."""
        raise NotImplementedError(f"{type(self).__name__} cannot open a store under {self.uri}")

    def filesystem(self) -> tuple[pafs.FileSystem, str] | None:
        """(pyarrow filesystem, root path in it) where pyarrow can reach the location itself
        (requests made through it are not counted), else None."""
        return None

    def require_conditional_create(self) -> None:
        """Raise unless `create` is a real conditional create: what a commit checks first."""
        if not self.supports_conditional_create:
            raise ConditionalCreateUnsupportedError(
                f"{self.uri}: this store has no conditional create, so a commit could silently replace another "
                f"writer's; commits are refused", uri=self.uri)


def check_ranges(ranges: Sequence[tuple[int, int]]) -> None:
    """(offset, length) pairs a `read_ranges` can take: none negative."""
    if any(o < 0 or n < 0 for o, n in ranges):
        raise ValueError(f"negative offset or length in {list(ranges)!r}")


_Stream = TypeVar("_Stream", bound="WriteOnlyStream")


class WriteOnlyStream:
    """What pyarrow asks of a sink an output file streams into: written, never read or sought;
    as a context manager, closed (published whole) on success and aborted (nothing published)
    on an exception."""

    def close(self) -> None:
        raise NotImplementedError

    def abort(self) -> None:
        raise NotImplementedError

    def __enter__(self: _Stream) -> _Stream:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def readable(self) -> bool:
        return False
