"""S3, GCS and Azure through `obstore` (the Rust `object_store` crate): one `CloudStore`
over whichever obstore store the location names.

`create` is obstore's `put(mode="create")`: `If-None-Match: *` on S3 and Azure, a generation
precondition (`ifGenerationMatch=0`) on GCS.  obstore does not resend a conditional PUT that
was sent and got no answer (its effect is unknown); `create` sends it once more and settles the
outcome from that answer (see `CloudStore._settle_create`).  Retries (5xx such as 503 SlowDown, dropped
connections, timeouts) are obstore's own exponential backoff with jitter, bounded here by
`RETRY_POLICY` (or the `max_retries` / `retry_timeout` storage options)."""
from __future__ import annotations

import math
import os
import re
from collections.abc import Iterator, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from mergetree.errors import (
    InvalidArgumentError,
    ObjectExistsError,
    ObjectNotFoundError,
    OutcomeUnknownError,
    StorageAccessError,
    StorageError,
)

from .options import AZURE, GCS, S3, redact_text
from .store import (
    COALESCE_GAP,
    ObjectInfo,
    Store,
    WriteOnlyStream,
    check_object_path,
    check_prefix,
    check_ranges,
    coalesce_ranges,
)

if TYPE_CHECKING:
    import pyarrow.fs as pafs

    from .location import Location

__all__ = ["OUTPUT_PART_SIZE", "RETRY_POLICY", "CloudStore", "ObjectInputFile", "ObjectOutputFile"]

# Bounded: at most 8 retries or 60 s from the first attempt, waits 0.1 s doubling to 5 s, jittered.
RETRY_POLICY: dict[str, Any] = {
    "max_retries": 8,
    "retry_timeout": timedelta(seconds=60),
    "backoff": {"init_backoff": timedelta(milliseconds=100), "max_backoff": timedelta(seconds=5), "base": 2},
}
# A streamed write buffers this much, then uploads it as one part of a multipart upload
# (S3's smallest part is 5 MiB).
OUTPUT_PART_SIZE = 8 * 1024 * 1024
# Objects a LIST request returns per page (S3 and GCS: 1000): for counting requests.
LIST_PAGE = 1000

_STATUS = re.compile(r"status code: (\d{3})")
_CODE = re.compile(r"<Code>([A-Za-z]+)</Code>|\"(?:code|reason)\":\s*\"?([A-Za-z]+)|\(code: ([A-Za-z]+)\)")
# Error codes (S3, Azure, GCS) that mean the credentials or their permissions
_ACCESS_CODES = {"AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "InvalidToken",
                 "AuthorizationFailure", "AuthorizationPermissionMismatch", "AuthenticationFailed", "forbidden"}
_ENDPOINT = re.compile(r"(https?://[^/\s]+)")


# obstore's runtime (its I/O threads) does not survive a fork: a child forked after this process
# made a request would hang on its first one.  The pid that first used it; others are refused.
_RUNTIME_PID: int | None = None


def _check_process(store: CloudStore) -> None:
    global _RUNTIME_PID
    pid = os.getpid()
    if _RUNTIME_PID is None:
        _RUNTIME_PID = pid
    elif pid != _RUNTIME_PID:
        raise StorageError(f"{store.uri}: this process was forked from one that already used an object store, and "
                           f"obstore's I/O runtime does not survive a fork (its requests would hang); start worker "
                           f"processes with the 'spawn' or 'forkserver' method", uri=store.uri)


def _no_answer(error: StorageError, exc: BaseException) -> bool:
    """Whether a request failed without an HTTP answer (dropped connection, timeout): its
    effect on the store is unknown."""
    return type(error) is StorageError and _STATUS.search(str(exc)) is None and not isinstance(
        exc, (InvalidArgumentError, ValueError, TypeError))


def _seconds(value: timedelta) -> str:
    return f"{value.total_seconds():g} s"


class CloudStore(Store):
    """A bucket (or container) prefix on S3, GCS or Azure, through an obstore store."""

    def __init__(self, location: Location, native: Any) -> None:
        super().__init__(location)
        self.native = native

    @classmethod
    def connect(cls, location: Location) -> CloudStore:
        """The store for `location`; nothing is contacted yet."""
        try:
            from obstore.store import AzureStore, GCSStore, S3Store
        except ImportError:
            raise InvalidArgumentError(f"{location}: {location.scheme}:// locations need the obstore package "
                                       f"(pip install obstore)") from None
        options = location.options
        retry = dict(RETRY_POLICY, **options.retry)
        client = dict(options.client)
        common: dict[str, Any] = {"prefix": location.root or None, "client_options": client, "retry_config": retry,
                                 "config": dict(options.config)}
        try:
            if location.backend == S3:
                native: Any = S3Store(location.container, **common)
            elif location.backend == GCS:
                native = GCSStore(location.container, **common)
            elif location.backend == AZURE:
                if location.account:  # abfss://container@ACCOUNT.dfs.core.windows.net
                    common["config"].setdefault("account_name", location.account)
                native = AzureStore(location.container, **common)
            else:  # pragma: no cover - resolve() sends only these here
                raise InvalidArgumentError(f"{location}: not an object store")
        except InvalidArgumentError:
            raise
        except Exception as exc:  # obstore's configuration errors (missing account name, bad values)
            detail = redact_text(str(exc).split("\n", 1)[0], location.secrets)
            raise InvalidArgumentError(f"cannot configure the store for {location}: {detail}") from None
        return cls(location, native)

    # -- errors
    def storage_error(self, exc: BaseException, operation: str, path: str | None) -> StorageError:
        """One `StorageError` for whatever obstore raised: what failed, where, and what to check."""
        from obstore import exceptions as obs_errors

        text = redact_text(str(exc), self.location.secrets)
        status = m.group(1) if (m := _STATUS.search(text)) else ""
        code = next((g for g in m.groups() if g), "") if (m := _CODE.search(text)) else ""
        target = self.describe(path)
        what = f"cannot {operation} {target}"
        uri = self.uri
        if operation == "create" and (isinstance(exc, (obs_errors.AlreadyExistsError, obs_errors.PreconditionError))
                                      or status in ("409", "412")):
            return ObjectExistsError(f"{target} already exists (another writer created it first)", uri=uri, path=path)
        if code in ("NoSuchBucket", "ContainerNotFound") or "bucket does not exist" in text.lower() or (
                status == "404" and operation == "list"):
            return StorageError(f"{what}: the bucket or container {self.location.container!r} does not exist"
                                f"{f' ({code})' if code else ''}", uri=uri, path=path)
        if isinstance(exc, FileNotFoundError) or status == "404":
            return ObjectNotFoundError(f"{target} does not exist", uri=uri, path=path)
        if isinstance(exc, (obs_errors.PermissionDeniedError, obs_errors.UnauthenticatedError)) or status in (
                "401", "403") or code in _ACCESS_CODES:
            return StorageAccessError(
                f"{what}: access denied{f' ({code})' if code else ''}: check the credentials (storage_options or "
                f"the environment) and that they may {operation} here (a read-only store refuses writes)",
                uri=uri, path=path)
        if status == "416":
            return StorageError(f"{what}: a range starts at or past the object's end", uri=uri, path=path)
        if status == "503" or code == "SlowDown":
            retry = dict(RETRY_POLICY, **self.location.options.retry)
            return StorageError(f"{what}: the store kept answering 503{f' {code}' if code else ''} (throttled) "
                                f"through {retry['max_retries']} retries or {_seconds(retry['retry_timeout'])} "
                                f"(storage options max_retries, retry_timeout)", uri=uri, path=path)
        if "error sending request" in text or "connect" in text.lower() or "dns error" in text:
            endpoint = m.group(1) if (m := _ENDPOINT.search(text)) else "the endpoint"
            lower = text.lower()
            if "connectionreset" in lower or "connection closed" in lower or "incompletemessage" in lower:
                why = "the connection was closed without an answer"
            elif "timed out" in lower or "timeout" in lower.replace("retry_timeout", ""):
                why = "timed out"
            elif "connectionrefused" in lower or "dns error" in lower:
                why = "connection refused or unreachable"
            else:  # obstore's text does not say which
                why = "connection refused, closed or unreachable"
            return StorageError(f"{what}: {endpoint} did not answer ({why}), retries exhausted", uri=uri, path=path)
        first = text.split("\n", 1)[0][:300]
        return StorageError(f"{what}: {first}", uri=uri, path=path)

    # -- reading
    def read(self, path: str) -> bytes:
        _check_process(self)
        import obstore

        check_object_path(path)
        self.requests.add("GET")
        try:
            return bytes(obstore.get(self.native, path).bytes())
        except Exception as exc:
            raise self.storage_error(exc, "read", path) from None

    def read_ranges(self, path: str, ranges: Sequence[tuple[int, int]]) -> list[bytes]:
        _check_process(self)
        import obstore

        check_object_path(path)
        check_ranges(ranges)
        wanted = [(o, n) for o, n in ranges if n > 0]
        if not wanted:
            return [b"" for _ in ranges]
        self.requests.add("GET", len(coalesce_ranges(wanted)))
        try:
            got = obstore.get_ranges(self.native, path, starts=[o for o, _ in wanted],
                                     lengths=[n for _, n in wanted], coalesce=COALESCE_GAP)
        except Exception as exc:
            raise self.storage_error(exc, "read", path) from None
        pieces = iter(got)
        return [bytes(next(pieces)) if n > 0 else b"" for _, n in ranges]

    def head(self, path: str) -> dict:
        _check_process(self)
        import obstore

        check_object_path(path)
        self.requests.add("HEAD")
        try:
            return dict(obstore.head(self.native, path))
        except Exception as exc:
            raise self.storage_error(exc, "stat", path) from None

    def size(self, path: str) -> int:
        return int(self.head(path)["size"])

    def exists(self, path: str) -> bool:
        try:
            self.head(path)
        except ObjectNotFoundError:
            return False
        return True

    def list(self, prefix: str = "") -> Iterator[ObjectInfo]:
        _check_process(self)
        import obstore

        check_prefix(prefix)
        # object_store lists by whole path segments: list the prefix's directory, filter the rest
        directory = prefix.rpartition("/")[0] or None
        found = 0
        self.requests.add("LIST")
        try:
            for chunk in obstore.list(self.native, directory, chunk_size=LIST_PAGE):
                for meta in chunk:
                    found += 1
                    if found % LIST_PAGE == 0:
                        self.requests.add("LIST")
                    if meta["path"].startswith(prefix):
                        yield ObjectInfo(meta["path"], int(meta["size"]), meta["last_modified"])
        except Exception as exc:
            raise self.storage_error(exc, "list", prefix or None) from None

    def open_input(self, path: str, size: int | None = None) -> ObjectInputFile:
        if size is None:
            size = self.size(path)
        return ObjectInputFile(self, path, size)

    # -- writing
    def write(self, path: str, data: bytes | bytearray | memoryview) -> None:
        _check_process(self)
        import obstore

        check_object_path(path)
        self.requests.add("PUT")
        try:
            obstore.put(self.native, path, bytes(data), use_multipart=False)
        except Exception as exc:
            raise self.storage_error(exc, "write", path) from None

    def create(self, path: str, data: bytes | bytearray | memoryview) -> None:
        _check_process(self)
        import obstore

        check_object_path(path)
        payload = bytes(data)
        self.requests.add("PUT")
        try:  # one PUT, never multipart: the condition rides on it
            obstore.put(self.native, path, payload, mode="create", use_multipart=False)
        except Exception as exc:
            error = self.storage_error(exc, "create", path)
            if not _no_answer(error, exc):
                raise error from None
            self._settle_create(path, payload, error)

    def _settle_create(self, path: str, payload: bytes, first: StorageError) -> None:
        """A create that got no answer (the connection dropped, a timeout) may have created the
        object all the same, and obstore does not resend a conditional PUT once it was sent.
        Send it once more: created now, the first never landed; `ObjectExistsError` and the
        object holds exactly `payload`, the first created it and its answer was lost (success);
        other bytes, another writer's (`ObjectExistsError`).  No answer again: the outcome is
        unknown, and the error says so."""
        import obstore

        self.requests.add("PUT")
        try:
            obstore.put(self.native, path, payload, mode="create", use_multipart=False)
            return
        except Exception as exc:
            error = self.storage_error(exc, "create", path)
        if isinstance(error, ObjectExistsError):
            try:
                existing: bytes | None = self.read(path)
            except StorageError:
                existing = None
            if existing == payload:
                return
            if existing is not None:
                raise error
        raise OutcomeUnknownError(f"{first}; whether {self.describe(path)} was created is unknown (the request was "
                                  f"sent and no answer came): read it to find out", uri=self.uri, path=path)

    def open_output(self, path: str) -> ObjectOutputFile:
        _check_process(self)
        import obstore

        check_object_path(path)
        return ObjectOutputFile(self, path, obstore.open_writer(self.native, path, buffer_size=OUTPUT_PART_SIZE))

    def delete(self, path: str) -> None:
        _check_process(self)
        import obstore

        check_object_path(path)
        self.requests.add("DELETE")
        try:
            obstore.delete(self.native, path)
        except FileNotFoundError:
            pass
        except Exception as exc:
            raise self.storage_error(exc, "delete", path) from None

    def _at(self, location: Location) -> CloudStore:
        return CloudStore.connect(location)

    def filesystem(self) -> tuple[pafs.FileSystem, str] | None:
        """pyarrow's own S3 filesystem with the same endpoint and credentials (S3 only; GCS and
        Azure: None).  Options it cannot take make it None rather than a second, different
        configuration."""
        if self.location.backend != S3:
            return None
        import pyarrow.fs as pafs

        config, client = self.location.options.config, self.location.options.client
        known = {"access_key_id", "secret_access_key", "session_token", "region", "endpoint"}
        if set(config) - known or set(client) - {"allow_http"}:
            return None
        kwargs: dict[str, Any] = {}
        if "access_key_id" in config:
            kwargs["access_key"] = config["access_key_id"]
            kwargs["secret_key"] = config.get("secret_access_key")
            kwargs["session_token"] = config.get("session_token")
        if "region" in config:
            kwargs["region"] = config["region"]
        if "endpoint" in config:
            scheme, _, host = config["endpoint"].partition("://")
            kwargs["endpoint_override"] = host.rstrip("/")
            kwargs["scheme"] = scheme
        root = self.location.container + ("/" + self.location.root if self.location.root else "")
        return pafs.S3FileSystem(**kwargs), root


class ObjectInputFile:
    """A seekable, read-only file over one object: each `read` is one ranged GET, so pyarrow's
    Parquet reader fetches only the footer and the row groups it needs (with `pre_buffer`,
    coalesced)."""

    def __init__(self, store: CloudStore, path: str, size: int) -> None:
        self.store = store
        self.path = path
        self._size = size
        self._position = 0
        self.closed = False

    def size(self) -> int:
        return self._size

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self._position, 2: self._size}[whence]
        self._position = max(0, base + offset)
        return self._position

    def tell(self) -> int:
        return self._position

    def read(self, size: int = -1) -> bytes:
        end = self._size if size is None or size < 0 else min(self._size, self._position + size)
        if end <= self._position:
            return b""
        data = self.store.read_range(self.path, self._position, end - self._position)
        self._position += len(data)
        return data

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def writable(self) -> bool:
        return False

    def close(self) -> None:
        self.closed = True

    def __enter__(self) -> ObjectInputFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ObjectOutputFile(WriteOnlyStream):
    """A streamed upload: parts of `OUTPUT_PART_SIZE` go up as they fill (a multipart upload);
    `close()` completes it and the object appears, whole.  `abort()`, or leaving a `with` block
    by an exception, never completes it: nothing appears (an incomplete multipart upload is left
    for the bucket's lifecycle rule to remove)."""

    def __init__(self, store: CloudStore, path: str, writer: Any) -> None:
        self.store = store
        self.path = path
        self._writer = writer
        self._position = 0
        self.closed = False

    def write(self, data: bytes | bytearray | memoryview) -> int:
        try:
            self._writer.write(data)
        except Exception as exc:
            self.abort()
            raise self.store.storage_error(exc, "write", self.path) from None
        n = memoryview(data).nbytes
        self._position += n
        return n

    def tell(self) -> int:
        return self._position

    def flush(self) -> None:
        """Nothing: parts go up when full, the rest on `close()` (a flush would upload a part
        smaller than S3 allows)."""

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            self._writer.close()
        except Exception as exc:
            raise self.store.storage_error(exc, "write", self.path) from None
        finally:
            parts = math.ceil(self._position / OUTPUT_PART_SIZE)
            # one PUT, or create + the parts + complete
            self.store.requests.add("PUT", 1 if parts <= 1 else parts + 2)

    def abort(self) -> None:
        self.closed = True
        self._writer = None  # dropped unclosed: the upload is never completed
