"""The rewrite's snapshot: data files swapped for new ones, and the delete files nothing is left
to apply to removed with them, in one Iceberg snapshot.

pyiceberg 0.12's overwrite removes data files only: it refuses a delete file ("missing required
files to delete") and rewrites every manifest it touches as a data manifest.  So a table whose
equality deletes a rewrite applied would keep those delete files, and pyiceberg and Polars, which
refuse any table holding one, could not read it.  This producer removes files of either kind
from the manifests of their own content, records each removal in a manifest of that content,
and leaves every other manifest as it was.  The snapshot is pyiceberg's in all else (its summary,
manifest list, sequence number and commit)."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["swap_files"]


def swap_files(transaction: Any, io: Any, removed: Iterable[Any], added: Iterable[Any],
               properties: Mapping[str, str]) -> None:
    """Stage on a pyiceberg `transaction` (of a table whose FileIO is `io`) one overwrite
    snapshot that removes the `removed` files (data and delete files, as the current snapshot's
    entries hold them) and adds the `added` data files; `properties` go into its summary."""
    from pyiceberg.table.snapshots import Operation
    producer = _producer_class()(operation=Operation.OVERWRITE, transaction=transaction,
                                 io=io, snapshot_properties=dict(properties))
    for data_file in removed:
        producer.delete_data_file(data_file)
    for data_file in added:
        producer.append_data_file(data_file)
    producer.commit()


_PRODUCER: type | None = None


def _producer_class() -> type:
    """The producer, defined on first use (pyiceberg is the iceberg extra's, imported late)."""
    global _PRODUCER
    if _PRODUCER is not None:
        return _PRODUCER
    from pyiceberg.manifest import ManifestContent, ManifestEntry, ManifestEntryStatus, ManifestWriterV2
    from pyiceberg.table.update.snapshot import _OverwriteFiles
    from pyiceberg.utils.concurrent import ExecutorFactory

    class DeleteManifestWriter(ManifestWriterV2):
        """A v2 manifest of delete files (delete files exist from format v2 on)."""

        def content(self) -> Any:
            return ManifestContent.DELETES

        @property
        def _meta(self) -> dict[str, str]:
            return {**super()._meta, "content": "deletes"}

    class SwapFiles(_OverwriteFiles):
        def _writer(self, spec_id: int, content: Any) -> Any:
            if content == ManifestContent.DELETES:
                return DeleteManifestWriter(self.spec(spec_id), self.schema(), self.new_manifest_output(),
                                            self._snapshot_id, self._compression)
            return self.new_manifest_writer(self.spec(spec_id))

        def _manifest(self, spec_id: int, content: Any, entries: list[Any], status: Any,
                      snapshot_id: int | None) -> Any:
            """A manifest of `entries` with `status`, by `snapshot_id` (None: each entry's own),
            their sequence numbers kept."""
            with self._writer(spec_id, content) as writer:
                for e in entries:
                    writer.add_entry(ManifestEntry.from_args(
                        status=status, snapshot_id=e.snapshot_id if snapshot_id is None else snapshot_id,
                        sequence_number=e.sequence_number, file_sequence_number=e.file_sequence_number,
                        data_file=e.data_file))
            return writer.to_manifest_file()

        def _manifests(self) -> list[Any]:
            snapshot = self._transaction.table_metadata.snapshot_by_name(self._target_branch)
            manifests = list(snapshot.manifests(self._io)) if snapshot is not None else []
            gone = self._deleted_data_files
            read = ExecutorFactory.get_or_create().map(
                lambda m: m.fetch_manifest_entry(self._io, discard_deleted=True), manifests)
            out: list[Any] = []
            removals: dict[tuple[int, Any], list[Any]] = {}
            found: set[str] = set()
            for manifest, entries in zip(manifests, read):
                hit = [e for e in entries if e.data_file in gone]
                if not hit:
                    out.append(manifest)
                    continue
                found.update(e.data_file.file_path for e in hit)
                removals.setdefault((manifest.partition_spec_id, manifest.content), []).extend(hit)
                kept = [e for e in entries if e.data_file not in gone]
                if kept:
                    out.append(self._manifest(manifest.partition_spec_id, manifest.content, kept,
                                              ManifestEntryStatus.EXISTING, None))
            missing = sorted(f.file_path for f in gone if f.file_path not in found)
            if missing:  # pyiceberg's own check: a file to remove must be live in the snapshot
                from pyiceberg.exceptions import ValidationException
                raise ValidationException(f"Missing required files to delete: {', '.join(missing)}")
            for (spec_id, content), entries in removals.items():
                out.append(self._manifest(spec_id, content, entries, ManifestEntryStatus.DELETED, self._snapshot_id))
            if self._added_data_files:
                with self.new_manifest_writer(self._transaction.table_metadata.spec()) as writer:
                    for data_file in self._added_data_files:
                        writer.add(ManifestEntry.from_args(status=ManifestEntryStatus.ADDED,
                                                           snapshot_id=self._snapshot_id, data_file=data_file))
                out.insert(0, writer.to_manifest_file())
            return out

    _PRODUCER = SwapFiles
    return _PRODUCER
