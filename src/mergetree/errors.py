"""Exceptions raised by mergetree.  Every one names the run, row and column involved."""
from __future__ import annotations


class MergeTreeError(Exception):
    """Base class of mergetree's errors."""


class InvalidArgumentError(MergeTreeError, ValueError):
    """An argument is not acceptable (unknown engine, aggregate, algorithm, ...)."""


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


class UnsortedRunError(InvalidRowError):
    """A run is not strictly ascending by key (out of order, or a key repeated)."""


class RetractionError(InvalidRowError):
    """A retraction row (-U or -D) reached an engine or aggregate that cannot undo it."""


class MergeStateError(MergeTreeError, RuntimeError):
    """The merge tree reached an impossible state: a bug in mergetree, never bad input."""
