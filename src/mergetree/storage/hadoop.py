"""HDFS through `pyarrow.fs.HadoopFileSystem` (libhdfs, so a JVM and Hadoop's jars).

pyarrow opens HDFS files for writing with overwrite, and its `move` clobbers an existing
target, so it offers no exclusive create: reads, writes, listings and deletes work, and
`create` — the commit — refuses, naming what to configure.  `ArrowFileSystemStore` is the
same store over any pyarrow filesystem (the tests run it over the local one)."""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import timezone
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.fs as pafs

from mergetree.errors import (
    ConditionalCreateUnsupportedError,
    InvalidArgumentError,
    ObjectNotFoundError,
    StorageAccessError,
    StorageError,
)

from .options import redact_text
from .store import ObjectInfo, Store, check_object_path, check_prefix, check_ranges, coalesce_ranges

if TYPE_CHECKING:
    from .location import Location

__all__ = ["ArrowFileSystemStore", "HadoopStore"]


class ArrowFileSystemStore(Store):
    """A directory of a pyarrow filesystem.  Without conditional create: commits refuse."""

    supports_conditional_create = False
    #: what to do instead, in the refusal's message
    configure_hint = "put the table on a store with conditional create (s3://, gs://, az://, or a local path)"

    def __init__(self, location: Location, fs: pafs.FileSystem, root: str) -> None:
        super().__init__(location)
        self.fs = fs
        self.root = root.rstrip("/")

    def full_path(self, path: str) -> str:
        return f"{self.root}/{check_object_path(path)}"

    def storage_error(self, exc: BaseException, operation: str, path: str | None) -> StorageError:
        target = self.describe(path)
        if isinstance(exc, FileNotFoundError):
            return ObjectNotFoundError(f"{target} does not exist", uri=self.uri, path=path)
        if isinstance(exc, PermissionError):
            return StorageAccessError(f"cannot {operation} {target}: permission denied", uri=self.uri, path=path)
        detail = redact_text(str(exc).split("\n", 1)[0][:300], self.location.secrets)
        return StorageError(f"cannot {operation} {target}: {detail}", uri=self.uri, path=path)

    def read(self, path: str) -> bytes:
        self.requests.add("GET")
        try:
            with self.fs.open_input_stream(self.full_path(path)) as f:
                return f.read()
        except OSError as exc:
            raise self.storage_error(exc, "read", path) from None

    def read_ranges(self, path: str, ranges: Sequence[tuple[int, int]]) -> list[bytes]:
        check_ranges(ranges)
        if not any(n for _, n in ranges):  # nothing to fetch, as on object stores
            return [b"" for _ in ranges]
        self.requests.add("GET", len(coalesce_ranges(ranges)))
        try:
            with self.fs.open_input_file(self.full_path(path)) as f:
                end = f.size()
                if any(o >= end and n for o, n in ranges):
                    raise StorageError(f"cannot read {self.describe(path)}: a range starts at or past the object's "
                                       f"end", uri=self.uri, path=path)
                return [f.read_at(n, o) if n else b"" for o, n in ranges]
        except StorageError:
            raise
        except OSError as exc:
            raise self.storage_error(exc, "read", path) from None

    def _info(self, path: str) -> pafs.FileInfo:
        self.requests.add("HEAD")
        try:
            return self.fs.get_file_info(self.full_path(path))
        except OSError as exc:
            raise self.storage_error(exc, "stat", path) from None

    def size(self, path: str) -> int:
        info = self._info(path)
        if info.type != pafs.FileType.File:
            raise ObjectNotFoundError(f"{self.describe(path)} does not exist", uri=self.uri, path=path)
        return int(info.size)

    def exists(self, path: str) -> bool:
        return self._info(path).type == pafs.FileType.File

    def list(self, prefix: str = "") -> Iterator[ObjectInfo]:
        check_prefix(prefix)
        directory = prefix.rpartition("/")[0]
        base = f"{self.root}/{directory}" if directory else self.root
        self.requests.add("LIST")
        try:
            infos = self.fs.get_file_info(pafs.FileSelector(base, allow_not_found=True, recursive=True))
        except OSError as exc:
            raise self.storage_error(exc, "list", prefix or None) from None
        out = []
        for info in infos:
            if info.type != pafs.FileType.File:
                continue
            rel = info.path[len(self.root) + 1:]
            if rel.startswith(prefix):
                mtime = info.mtime
                if mtime is not None and mtime.tzinfo is None:
                    mtime = mtime.replace(tzinfo=timezone.utc)
                out.append(ObjectInfo(rel, int(info.size), mtime))
        return iter(sorted(out))

    def open_input(self, path: str, size: int | None = None) -> pa.NativeFile:
        self.requests.add("GET")
        try:
            return self.fs.open_input_file(self.full_path(path))
        except OSError as exc:
            raise self.storage_error(exc, "open", path) from None

    def _parent(self, full: str) -> None:
        self.fs.create_dir(full.rpartition("/")[0], recursive=True)

    def write(self, path: str, data: bytes | bytearray | memoryview) -> None:
        full = self.full_path(path)
        self.requests.add("PUT")
        try:
            self._parent(full)
            with self.fs.open_output_stream(full) as f:
                f.write(data)
        except OSError as exc:
            raise self.storage_error(exc, "write", path) from None

    def create(self, path: str, data: bytes | bytearray | memoryview) -> None:
        raise self.no_conditional_create(path)

    def require_conditional_create(self) -> None:
        raise self.no_conditional_create(None)

    def no_conditional_create(self, path: str | None) -> ConditionalCreateUnsupportedError:
        what = f"cannot create {self.describe(path)}" if path else f"cannot commit to {self.uri}"
        return ConditionalCreateUnsupportedError(
            f"{what}: {type(self).__name__} has no exclusive create through pyarrow.fs, so a commit could replace "
            f"another writer's; commits are refused: {self.configure_hint}", uri=self.uri, path=path)

    def open_output(self, path: str) -> Any:
        full = self.full_path(path)
        self.requests.add("PUT")
        try:
            self._parent(full)
            return self.fs.open_output_stream(full)
        except OSError as exc:
            raise self.storage_error(exc, "write", path) from None

    def delete(self, path: str) -> None:
        self.requests.add("DELETE")
        try:
            self.fs.delete_file(self.full_path(path))
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise self.storage_error(exc, "delete", path) from None

    def _at(self, location: Location) -> ArrowFileSystemStore:
        return type(self)(location, self.fs, location.root)

    def filesystem(self) -> tuple[pafs.FileSystem, str]:
        return self.fs, self.root


class HadoopStore(ArrowFileSystemStore):
    """A directory on HDFS."""

    configure_hint = ("HDFS commits need an exclusive create, which libhdfs through pyarrow does not offer; put the "
                      "table on s3://, gs://, az:// or a local path (an HDFS cluster can serve S3 through an "
                      "S3-compatible gateway, e.g. Apache Ozone's)")

    @classmethod
    def connect(cls, location: Location) -> HadoopStore:
        host, _, port = location.container.partition(":")
        kwargs = dict(location.options.hdfs)
        try:
            fs = pafs.HadoopFileSystem(host, int(port) if port else 8020, **kwargs)
        except (OSError, ImportError) as exc:
            detail = redact_text(str(exc).split("\n", 1)[0][:200], location.secrets)
            raise InvalidArgumentError(
                f"cannot open {location}: pyarrow's HDFS client needs libhdfs and a JVM (set JAVA_HOME, HADOOP_HOME "
                f"or ARROW_LIBHDFS_DIR, and CLASSPATH from `hadoop classpath --glob`): {detail}") from None
        return cls(location, fs, location.root)
