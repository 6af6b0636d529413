"""Exceptions raised by mergetree.  Each says what was wrong and where: the run, row and
column of a merge input, or the table file involved."""
from __future__ import annotations

__all__ = ["CommitConflictError", "CommittedWarning", "CompactionConflictError", "ConditionalCreateUnsupportedError",
           "ConsumerNotFoundError", "CorruptTableError", "InvalidArgumentError", "InvalidRowError",
           "MalformedArrowError", "MergeStateError", "MergeTreeError", "ObjectExistsError", "ObjectNotFoundError",
           "OutcomeUnknownError", "RetractionError", "SchemaMismatchError", "SnapshotNotFoundError",
           "StorageAccessError", "StorageError", "TableExistsError", "TableNotFoundError", "UnsortedRunError",
           "UnsupportedFormatError", "UnsupportedPaimonFeatureError", "UnsupportedTypeError", "WriterConflictError"]


class MergeTreeError(Exception):
    """Base class of mergetree's errors."""


class InvalidArgumentError(MergeTreeError, ValueError):
    """An argument is not acceptable (unknown engine, aggregate, algorithm, ...)."""


class ConsumerNotFoundError(InvalidArgumentError, LookupError):
    """No consumer of that id has recorded its progress in the table (the message lists those that have)."""


class SchemaMismatchError(MergeTreeError, ValueError):
    """A run's schema differs from the first run's, or a needed column is missing."""


class UnsupportedTypeError(MergeTreeError, TypeError):
    """A key, sequence or kind column has a type the merge cannot order or use."""


class InvalidRowError(MergeTreeError, ValueError):
    """A row carries a value the merge cannot use (null sequence, unknown row kind, ...)."""

    def __init__(self, message: str, *, run: int, row: int, column: str) -> None:
        super().__init__(message)
        self.run = run
        self.row = row
        self.column = column

    def __reduce__(self) -> tuple:  # keyword-only arguments: pickled (Spark, multiprocessing) by hand
        return _rebuild, (type(self), str(self), {"run": self.run, "row": self.row, "column": self.column})


class UnsortedRunError(InvalidRowError):
    """A run is not strictly ascending by key (out of order, or a key repeated)."""


class RetractionError(InvalidRowError):
    """A retraction row (-U or -D) reached an engine or aggregate that cannot undo it."""


class MalformedArrowError(MergeTreeError, ValueError):
    """Arrow input is structurally broken (offsets out of order or past the data, buffers
    too short, dictionary indices out of range, ...); nothing was read from it."""


class MergeStateError(MergeTreeError, RuntimeError):
    """The merge tree reached an impossible state: a bug in mergetree, never bad input."""


class TableExistsError(MergeTreeError):
    """`Table.create` found a table (or other files) already at that path."""


class CorruptTableError(MergeTreeError):
    """A table file (schema, snapshot, manifest or data file) is missing, truncated or
    unreadable.  The message names the file and, where there is one, the way to recover."""

    def __init__(self, message: str, *, path: str) -> None:
        super().__init__(message)
        self.path = path

    def __reduce__(self) -> tuple:
        return _rebuild, (type(self), str(self), {"path": self.path})


class CommitConflictError(MergeTreeError):
    """Another commit changed what this commit depends on; nothing was committed."""


class CompactionConflictError(CommitConflictError):
    """Files this compaction read were replaced by another commit; nothing was committed."""


class WriterConflictError(CompactionConflictError):
    """Another writer's commit conflicts with this one in a way no rebase can resolve (in a
    dynamic-bucket table, it gave one of this write's new keys another bucket): nothing was
    committed; retry the write, which reads the table afresh."""


class CommittedWarning(UserWarning):
    """A commit succeeded and something after it failed (the compaction a write runs once its
    rows are committed): the data is in the table; retrying the call would write it twice."""


class SnapshotNotFoundError(MergeTreeError, LookupError):
    """The requested snapshot does not exist (expired, or never committed)."""


class UnsupportedFormatError(MergeTreeError):
    """A table file was written by a newer mergetree, in a format version this one cannot read."""


class UnsupportedPaimonFeatureError(UnsupportedFormatError):
    """An Apache Paimon table uses a feature (an option, a bucket mode, a file format) that
    mergetree does not implement; the message names it.  Nothing was read or written."""


class TableNotFoundError(MergeTreeError, LookupError):
    """There is no mergetree table at the path given."""


# -- the storage layer (mergetree.storage): each error subclasses the builtin a caller of plain
# files already catches (FileNotFoundError, FileExistsError, PermissionError), so code moved from
# open() onto a store keeps its except clauses

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


class OutcomeUnknownError(StorageError):
    """A request that changes the store was sent and no answer came, even when sent again: it
    may have taken effect or not (read the object to find out).  A commit that meets one removes
    nothing it wrote: its snapshot may be published."""


class StorageAccessError(StorageError, PermissionError):
    """The store refused: missing or wrong credentials, or no permission (a read-only store)."""


class ConditionalCreateUnsupportedError(StorageError):
    """The store cannot create an object only if it is absent, so a commit through it could
    silently replace another writer's; commits are refused.  The message says what to configure."""


def _rebuild(cls: type, message: str, fields: dict) -> MergeTreeError:
    """Unpickle an error whose constructor takes keyword-only fields."""
    return cls(message, **fields)
