"""Plain files on a local disk.  `create` writes a temporary file, fsyncs it, and `os.link`s
it to the final name: the link fails if the name exists (exclusive), and readers see the whole
file or none (atomic) — the commit without a rename over an existing name.

Portable to Windows: files are opened in binary mode, ranged reads seek where `os.pread` is
missing, a directory is not fsynced (Windows cannot open one; NTFS journals the new name), and
where the filesystem has no hard links Windows' own `os.rename`, which refuses an existing
name, is the exclusive create."""
from __future__ import annotations

import contextlib
import errno
import os
import uuid
from collections.abc import Iterator, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.fs as pafs

from mergetree.errors import ObjectExistsError, ObjectNotFoundError, StorageAccessError, StorageError

from .store import ObjectInfo, Store, WriteOnlyStream, check_object_path, check_prefix, check_ranges, coalesce_ranges

if TYPE_CHECKING:
    from .location import Location

__all__ = ["LocalDiskStore", "LocalOutputFile"]

_TEMP_MARK = ".tmp-"  # in-progress files: ".<name>.tmp-<uuid>", never listed
# Windows' C runtime opens in text mode unless told otherwise (it would turn b"\n" into b"\r\n")
_BINARY = getattr(os, "O_BINARY", 0)
_WINDOWS = os.name == "nt"
# link() errors meaning "this filesystem has no hard links" (FAT, exFAT, some network mounts)
_NO_HARD_LINKS = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP}


def _temp_name(final: str) -> str:
    head, tail = os.path.split(final)
    return os.path.join(head, f".{tail}{_TEMP_MARK}{uuid.uuid4().hex}")


def _fsync_dir(directory: str) -> None:
    if _WINDOWS:  # a directory cannot be opened there; NTFS journals the new name itself
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_at(fd: int, length: int, offset: int, pread: bool = hasattr(os, "pread")) -> bytes:
    """`length` bytes of an open file from `offset` (fewer only at its end): `os.pread` where the
    platform has it (POSIX; no shared file position), else a seek and reads (Windows)."""
    chunks: list[bytes] = []
    while length > 0:
        if pread:
            chunk = os.pread(fd, length, offset)
        else:
            os.lseek(fd, offset, os.SEEK_SET)
            chunk = os.read(fd, length)
        if not chunk:
            break
        chunks.append(chunk)
        length -= len(chunk)
        offset += len(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)  # one chunk: no copy


def link_exclusive(source: str, target: str, windows: bool = _WINDOWS) -> None:
    """Give the whole file `source` the name `target`, failing with FileExistsError if the name
    exists.  A hard link where the filesystem has them; else on Windows a rename, which never
    replaces there; elsewhere a rename would replace, so such a filesystem is refused."""
    try:
        os.link(source, target)
        return
    except OSError as exc:
        no_links = exc.errno in _NO_HARD_LINKS or getattr(exc, "winerror", None) == 1  # 1: FAT on Windows
        if isinstance(exc, FileExistsError) or not no_links:
            raise
        if not windows:  # ENOTSUP, not the EPERM Linux gives: that would read as "permission denied"
            raise OSError(errno.ENOTSUP, "the filesystem has no hard links, which the exclusive create of a "
                                         "commit needs (put the table on one that has them)") from None
    os.rename(source, target)


class LocalDiskStore(Store):
    """A directory on this machine's disks."""

    def __init__(self, location: Location) -> None:
        super().__init__(location)
        self.root = location.root

    def local_path(self, path: str) -> str:
        return os.path.join(self.root, *check_object_path(path).split("/"))

    def storage_error(self, exc: OSError, operation: str, path: str | None) -> StorageError:
        target = self.describe(path)
        reason = exc.strerror or type(exc).__name__
        if isinstance(exc, FileNotFoundError):
            return ObjectNotFoundError(f"{target} does not exist", uri=self.uri, path=path)
        if isinstance(exc, FileExistsError):
            return ObjectExistsError(f"{target} already exists (another writer created it first)", uri=self.uri,
                                     path=path)
        if isinstance(exc, PermissionError):
            return StorageAccessError(f"cannot {operation} {target}: permission denied (a read-only location?)",
                                      uri=self.uri, path=path)
        return StorageError(f"cannot {operation} {target}: {reason}", uri=self.uri, path=path)

    # -- reading
    def read(self, path: str) -> bytes:
        full = self.local_path(path)
        self.requests.add("GET")
        try:
            with open(full, "rb") as f:
                return f.read()
        except OSError as exc:
            raise self.storage_error(exc, "read", path) from None

    def read_ranges(self, path: str, ranges: Sequence[tuple[int, int]]) -> list[bytes]:
        full = self.local_path(path)
        check_ranges(ranges)
        if not any(n for _, n in ranges):  # nothing to fetch, as on object stores
            return [b"" for _ in ranges]
        self.requests.add("GET", len(coalesce_ranges(ranges)))
        try:
            fd = os.open(full, os.O_RDONLY | _BINARY)
        except OSError as exc:
            raise self.storage_error(exc, "read", path) from None
        try:
            end = os.fstat(fd).st_size
            if any(o >= end and n for o, n in ranges):  # as an object store answers (416)
                raise StorageError(f"cannot read {self.describe(path)}: a range starts at or past the object's end",
                                   uri=self.uri, path=path)
            return [read_at(fd, n, o) if n else b"" for o, n in ranges]
        finally:
            os.close(fd)

    def size(self, path: str) -> int:
        full = self.local_path(path)
        self.requests.add("HEAD")
        try:
            return os.stat(full).st_size
        except OSError as exc:
            raise self.storage_error(exc, "stat", path) from None

    def exists(self, path: str) -> bool:
        self.requests.add("HEAD")
        return os.path.isfile(self.local_path(path))

    def list(self, prefix: str = "") -> Iterator[ObjectInfo]:
        check_prefix(prefix)
        # walk the deepest directory the prefix names, filter the rest by string prefix
        directory = prefix.rpartition("/")[0]
        top = os.path.join(self.root, *directory.split("/")) if directory else self.root
        self.requests.add("LIST")
        found = []
        for dirpath, dirnames, filenames in os.walk(top, onerror=None):
            dirnames.sort()
            rel_dir = os.path.relpath(dirpath, self.root).replace(os.sep, "/")
            for name in filenames:
                if name.startswith(".") and _TEMP_MARK in name:
                    continue
                rel = name if rel_dir == "." else f"{rel_dir}/{name}"
                if not rel.startswith(prefix):
                    continue
                try:
                    st = os.stat(os.path.join(dirpath, name))
                except FileNotFoundError:  # removed while listing
                    continue
                found.append(ObjectInfo(rel, st.st_size, datetime.fromtimestamp(st.st_mtime, timezone.utc)))
        found.sort()
        return iter(found)

    def open_input(self, path: str, size: int | None = None) -> pa.NativeFile:
        full = self.local_path(path)
        self.requests.add("GET")
        try:
            return pa.OSFile(full, "rb")
        except FileNotFoundError:
            raise ObjectNotFoundError(f"{self.describe(path)} does not exist", uri=self.uri, path=path) from None
        except OSError as exc:
            raise self.storage_error(exc, "open", path) from None

    # -- writing
    def _write_temp(self, full: str, path: str, data: bytes | bytearray | memoryview) -> str:
        try:
            os.makedirs(os.path.dirname(full), exist_ok=True)
            temp = _temp_name(full)
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _BINARY, 0o644)
        except OSError as exc:
            raise self.storage_error(exc, "write", path) from None
        try:
            view = memoryview(data).cast("B")
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        except OSError as exc:
            os.close(fd)
            _remove_quietly(temp)
            raise self.storage_error(exc, "write", path) from None
        os.close(fd)
        return temp

    def write(self, path: str, data: bytes | bytearray | memoryview) -> None:
        full = self.local_path(path)
        self.requests.add("PUT")
        temp = self._write_temp(full, path, data)
        try:
            os.replace(temp, full)
        except OSError as exc:
            _remove_quietly(temp)
            raise self.storage_error(exc, "write", path) from None

    def create(self, path: str, data: bytes | bytearray | memoryview) -> None:
        full = self.local_path(path)
        self.requests.add("PUT")
        temp = self._write_temp(full, path, data)
        try:
            link_exclusive(temp, full)  # exclusive: fails if the name exists; atomic: the file is whole
        except OSError as exc:
            raise self.storage_error(exc, "create", path) from None
        finally:
            _remove_quietly(temp)
        with contextlib.suppress(OSError):  # the new name survives a crash
            _fsync_dir(os.path.dirname(full))

    def open_output(self, path: str) -> LocalOutputFile:
        full = self.local_path(path)
        self.requests.add("PUT")
        try:
            os.makedirs(os.path.dirname(full), exist_ok=True)
            temp = _temp_name(full)
            return LocalOutputFile(open(temp, "xb"), temp, full, self, path)
        except OSError as exc:
            raise self.storage_error(exc, "write", path) from None

    def delete(self, path: str) -> None:
        full = self.local_path(path)
        self.requests.add("DELETE")
        try:
            os.unlink(full)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise self.storage_error(exc, "delete", path) from None

    def filesystem(self) -> tuple[pafs.FileSystem, str]:
        return pafs.LocalFileSystem(), self.root

    def sub(self, prefix: str) -> LocalDiskStore:
        check_object_path(prefix)
        import dataclasses

        root = os.path.join(self.root, *prefix.split("/"))
        return LocalDiskStore(dataclasses.replace(self.location, uri=root, root=root))


def _remove_quietly(path: str) -> None:
    with contextlib.suppress(OSError):
        os.remove(path)


class LocalOutputFile(WriteOnlyStream):
    """A file streamed to a temporary name and renamed to its own on a clean `close()`, so a
    reader never sees it half-written; `abort()` (or leaving a `with` block by an exception)
    removes it."""

    def __init__(self, file, temp: str, final: str, store: LocalDiskStore, path: str) -> None:
        self._file = file
        self._temp = temp
        self._final = final
        self._store = store
        self._path = path
        self.closed = False

    def write(self, data: bytes | bytearray | memoryview) -> int:
        return self._file.write(data)

    def tell(self) -> int:
        return self._file.tell()

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
            os.replace(self._temp, self._final)
        except OSError as exc:
            self._file.close()
            _remove_quietly(self._temp)
            raise self._store.storage_error(exc, "write", self._path) from None

    def abort(self) -> None:
        if not self.closed:
            self.closed = True
            self._file.close()
            _remove_quietly(self._temp)
