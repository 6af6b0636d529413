"""The storage layer's errors: every one a `MergeTreeError` naming the location (its URI with
secrets redacted) and the object, never a backend's raw exception or a credential.

They live here, not in `mergetree.errors`, while the layer is unwired; each subclasses the
builtin a caller of plain files already catches (`FileNotFoundError`, `FileExistsError`,
`PermissionError`), so code moved from `open()` onto a store keeps its `except` clauses."""
from __future__ import annotations

from mergetree.errors import MergeTreeError

__all__ = ["ConditionalCreateUnsupportedError", "ObjectExistsError", "ObjectNotFoundError", "StorageAccessError",
           "StorageError"]


class StorageError(MergeTreeError, OSError):
    """A store could not do what was asked (missing bucket, endpoint unreachable, retries
    exhausted, ...).  `uri` is the location's URI, redacted; `path` the object, if one."""

    def __init__(self, message: str, *, uri: str, path: str | None = None) -> None:
        super().__init__(message)
        self.uri = uri
        self.path = path

    def __str__(self) -> str:  # OSError's own __str__ would show errno fields instead of the message
        return str(self.args[0]) if self.args else ""

    def __reduce__(self) -> tuple:  # keyword-only fields: pickled (Spark, multiprocessing) by hand
        return _rebuild, (type(self), str(self), {"uri": self.uri, "path": self.path})


class ObjectNotFoundError(StorageError, FileNotFoundError):
    """The object does not exist."""


class ObjectExistsError(StorageError, FileExistsError):
    """A conditional create found the object already there: another writer won the race."""


class StorageAccessError(StorageError, PermissionError):
    """The store refused: missing or wrong credentials, or no permission (a read-only store)."""


class ConditionalCreateUnsupportedError(StorageError):
    """The store cannot create an object only if it is absent, so a commit through it could
    silently replace another writer's; commits are refused.  The message says what to configure."""


def _rebuild(cls: type, message: str, fields: dict) -> StorageError:
    return cls(message, **fields)
