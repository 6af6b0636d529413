"""Retractions (-U, -D rows) in the inputs of a merge, as a table's merge function takes them:
skipped where the table ignores deletes (Paimon's ``ignore-delete``), refused at the first one
in a Paimon partial-update table (Paimon itself refuses to merge one), merged as they are
everywhere else.  Reads and compactions merge alike through `as_merged`."""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import UnsupportedPaimonFeatureError
from ..merge.row_kind import retraction_kinds
from .directory import TableDirectory
from .schema import KIND_COLUMN

__all__ = ["as_merged", "without_retractions"]

Run = Iterable[pa.RecordBatch]


def as_merged(directory: TableDirectory, runs: Sequence[Run]) -> list[Run]:
    """The runs (batches holding the kind column) as the table's merge function takes them."""
    if directory.options.ignore_delete:
        return [without_retractions(run) for run in runs]
    if directory.schema.merge_engine == "partial-update":
        return [_refusing_retractions(directory, run) for run in runs]
    return list(runs)


def without_retractions(run: Run) -> Iterator[pa.RecordBatch]:
    """A run's batches without their retractions (-U, -D)."""
    for batch in run:
        yield batch.filter(pc.invert(pc.is_in(batch.column(KIND_COLUMN), retraction_kinds())))


def _refusing_retractions(directory: TableDirectory, run: Run) -> Iterator[pa.RecordBatch]:
    """A Paimon partial-update table's run, refused at its first retraction: Paimon itself
    refuses to merge one unless `ignore-delete` is set (`partial-update.remove-record-on-delete`
    is not supported by mergetree)."""
    for batch in run:
        if pc.any(pc.is_in(batch.column(KIND_COLUMN), retraction_kinds())).as_py():
            raise UnsupportedPaimonFeatureError(
                f"partial-update table {directory.path} holds retractions; Paimon itself refuses to merge them "
                f"unless 'ignore-delete' or 'partial-update.remove-record-on-delete' is set (the latter is not "
                f"supported by mergetree)")
        yield batch
