"""The one rewrite transaction: files replaced by new files in one commit, or not at all.

Every rewrite of a table's files — a compaction (here and as a Spark job), a clustered
rewrite by `Table.optimize` or the optimizer (here and as a Spark job), an index build — is
the same four steps: report progress as input rows are done, collect the new files and the
files they replace, commit them over the snapshot the rewrite read (rebased over commits that
left every input in place), and on any failure before the commit is done remove the new
files, so nothing a failed rewrite wrote is left behind or committed.  `rewrite_transaction`
is those steps; `new_files` is the last one for code that writes files apart from the commit
(a Spark task, one rewrite inside a larger one).
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

from ...errors import CompactionConflictError
from ..changes.producers import compaction_changelog
from ..commit import Change, commit_with_rebase
from ..directory import TableDirectory
from ..snapshots import FileEntry, Snapshot

__all__ = ["Progress", "RewriteTransaction", "commit_rewrite", "new_files", "produces_changelog",
           "rewrite_transaction"]

# Progress of long work: called with (rows done, rows in total), first with (0, total).
Progress = Callable[[int, int], None]


class RewriteTransaction:
    """What one rewrite has done so far: its new files (`adds`), the files they replace
    (`deletes`), the input rows done.  A file whose entry is in both (an upgrade to a new level
    is the same file) is an input, never removed on failure."""

    def __init__(self, directory: TableDirectory, base_id: int, total_rows: int, progress: Progress | None) -> None:
        self.directory = directory
        self.base_id = base_id
        self.total_rows = total_rows
        self.rows_done = 0
        self.adds: list[FileEntry] = []
        self.deletes: list[FileEntry] = []
        self.changelog: list[FileEntry] = []  # the changelog files the commit publishes
        self._progress = progress
        self._lock = threading.Lock()
        if progress is not None:
            progress(0, total_rows)

    def replace(self, inputs: Iterable[FileEntry], outputs: Iterable[FileEntry]) -> None:
        """`outputs` take the place of `inputs` in the commit."""
        self.adds += outputs
        self.deletes += inputs

    def advance(self, rows: int) -> None:
        """`rows` more input rows are done (buckets may report from several threads)."""
        with self._lock:
            self.rows_done += rows
            if self._progress is not None:
                self._progress(self.rows_done, self.total_rows)

    def commit(self) -> Snapshot | None:
        """Commit what was collected (None when nothing was replaced), with the changelog a
        Paimon table's lookup producer makes of the level-0 files it compacts."""
        if not self.adds and not self.deletes:
            return None
        changelog: list[FileEntry] = []
        if produces_changelog(self.directory):
            # every level-0 input, rewritten or moved up as it is: what it changes is the changelog
            level0 = [e for e in self.deletes if e.file.level == 0]
            if level0:
                self.changelog = changelog = compaction_changelog(
                    self.directory, self.directory.store.snapshot(self.base_id), level0)
        return commit_rewrite(self.directory, self.base_id, self.adds, self.deletes, changelog)

    def discard(self) -> None:
        inputs = {e.file.file_name for e in self.deletes}
        self.directory.discard([e for e in self.adds if e.file.file_name not in inputs] + self.changelog)


@contextmanager
def rewrite_transaction(directory: TableDirectory, base_id: int, total_rows: int = 0,
                        progress: Progress | None = None) -> Iterator[RewriteTransaction]:
    """A rewrite over snapshot `base_id`: `with rewrite_transaction(...) as rewrite:` collect
    with `rewrite.replace`, report with `rewrite.advance`, `return rewrite.commit()`; an
    exception anywhere inside (the commit's own included) removes every new file and is raised."""
    rewrite = RewriteTransaction(directory, base_id, total_rows, progress)
    try:
        yield rewrite
    except BaseException:
        rewrite.discard()
        raise


@contextmanager
def new_files(directory: TableDirectory) -> Iterator[list[FileEntry]]:
    """A list to put newly written files in: on any failure inside, they are removed."""
    written: list[FileEntry] = []
    try:
        yield written
    except BaseException:
        directory.discard(written)
        raise


def produces_changelog(directory: TableDirectory) -> bool:
    """Does the table's compaction write its changelog (the ``lookup`` producer)?"""
    return directory.options.changelog_producer == "lookup" and directory.schema.has_primary_key


def commit_rewrite(directory: TableDirectory, base_id: int, adds: list[FileEntry],
                   deletes: list[FileEntry], changelog: list[FileEntry] | None = None) -> Snapshot:
    """Commit, rebasing over commits that left every input file in place (at its level, with
    its deletion vector); one that replaced an input raises `CompactionConflictError` and nothing is committed."""
    def change_for(latest: Snapshot | None) -> Change:
        live = directory.live_files(latest)
        gone = [e.file.file_name for e in deletes if e.file.file_name not in live
                or live[e.file.file_name].file.level != e.file.level
                or live[e.file.file_name].file.deletion_vector != e.file.deletion_vector]
        if gone:
            raise CompactionConflictError(f"another commit replaced {len(gone)} input file(s) of this rewrite "
                                          f"(e.g. {gone[0]}); nothing was committed")
        return Change(adds, deletes, changelog or [])
    return commit_with_rebase(directory, directory.store.snapshot(base_id), change_for, "COMPACT")
