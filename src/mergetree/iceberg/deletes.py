"""An Iceberg table's delete files as its scans apply them.  pyiceberg 0.12 plans position
deletes (its `FileScanTask.delete_files`, which its reader applies) but refuses any table holding
an equality delete file (Flink's and Spark's merge-on-read upserts write them); here the planning
sets those aside and matches them to the data files as the spec's scan planning says — a delete
applies to a data file of a strictly smaller data sequence number, in the same spec and
partition unless the delete's spec is unpartitioned (then to every partition) — and the read
removes each row equal to a delete row on the delete's equality fields, a null equal to a null
(as Iceberg's own readers match them), a field dropped from the table since still compared."""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..errors import MergeTreeError

__all__ = ["IcebergScanTask", "delete_paths", "plan_files", "plan_with_deletes", "read_rows"]

FIELD_ID = b"PARQUET:field_id"
# delete files are immutable: one read serves every data file they apply to, while the cache
# holds up to this many bytes of their rows (the least recently used dropped first)
_CACHED_DELETE_BYTES = 256 * 1024 * 1024
_delete_rows_cache: OrderedDict[str, pa.Table] = OrderedDict()


class IcebergScanTask:
    """A data file to read: pyiceberg's scan task (`file`, `residual`, and `delete_files`: the
    position deletes pyiceberg's reader applies; its reader takes this class as its own task)
    with the equality delete files that apply to the file."""

    __slots__ = ("delete_files", "equality_deletes", "file", "residual")

    def __init__(self, task: Any, equality_deletes: Sequence[Any] = ()) -> None:
        self.file, self.delete_files, self.residual = task.file, task.delete_files, task.residual
        self.equality_deletes = tuple(equality_deletes)


def delete_paths(task: Any) -> frozenset[str]:
    """Every delete file (position and equality) that applies to a task's data file."""
    return frozenset(d.file_path for d in (*task.delete_files, *getattr(task, "equality_deletes", ())))


def plan_files(scan: Any) -> list[IcebergScanTask]:
    """A pyiceberg `DataScan`'s tasks, each with its position and equality delete files (always
    planned locally, from the snapshot's manifests)."""
    return plan_with_deletes(scan)[0]


def plan_with_deletes(scan: Any) -> tuple[list[IcebergScanTask], list[Any]]:
    """`plan_files(scan)`, and every live delete file of the scan's snapshot that its partition
    filter keeps, whether it applies to a data file or to none any more."""
    from pyiceberg.manifest import INITIAL_SEQUENCE_NUMBER, DataFileContent
    from pyiceberg.table import ManifestGroupPlanner
    snapshot = scan.snapshot()
    if snapshot is None:
        return [], []
    metadata = scan.table_metadata
    planner = ManifestGroupPlanner(table_metadata=metadata, io=scan.io, row_filter=scan.row_filter,
                                   case_sensitive=scan.case_sensitive, options=scan.options)
    equality: list[tuple[Any, int]] = []
    positional: list[Any] = []
    data_sequence: dict[str, int] = {}

    def keep(entry: Any) -> bool:  # called once per live entry, on this thread
        data_file, sequence = entry.data_file, entry.sequence_number or INITIAL_SEQUENCE_NUMBER
        if data_file.content == DataFileContent.EQUALITY_DELETES:
            equality.append((data_file, sequence))
            return False
        if data_file.content == DataFileContent.DATA:
            data_sequence[data_file.file_path] = sequence
        else:
            positional.append(data_file)
        return True

    tasks = planner.plan_files(snapshot.manifests(scan.io), manifest_entry_filter=keep)
    specs = metadata.specs()
    global_deletes: list[tuple[Any, int]] = []
    by_partition: dict[tuple[int, tuple], list[tuple[Any, int]]] = {}
    for delete_file, sequence in equality:
        if specs[delete_file.spec_id].is_unpartitioned():
            global_deletes.append((delete_file, sequence))
        else:
            key = (delete_file.spec_id, tuple(delete_file.partition))
            by_partition.setdefault(key, []).append((delete_file, sequence))
    out = []
    for task in tasks:
        data = task.file
        candidates = global_deletes + by_partition.get((data.spec_id, tuple(data.partition)), [])
        sequence = data_sequence[data.file_path]
        out.append(IcebergScanTask(task, [d for d, s in candidates if s > sequence]))
    return out, positional + [d for d, _ in equality]


def read_rows(metadata: Any, io: Any, projected: Any, row_filter: Any, tasks: Sequence[Any]) -> pa.Table:
    """The rows of `tasks` (in their order) in the pyiceberg schema `projected`, every delete file
    applied; `row_filter` (a pyiceberg expression) filters as pyiceberg's reader does."""
    from pyiceberg.io.pyarrow import ArrowScan, schema_to_pyarrow
    from pyiceberg.schema import Schema
    pieces: list[pa.Table] = []
    plain: list[Any] = []  # a run of tasks without equality deletes: read in one call

    def flush() -> None:
        if plain:
            pieces.append(ArrowScan(metadata, io, projected, row_filter).to_table(plain))
            plain.clear()

    for task in tasks:
        deletes = getattr(task, "equality_deletes", ())
        if not deletes:
            plain.append(task)
            continue
        flush()
        fields = _equality_fields(metadata, deletes)
        by_id = {f.field_id: f for f in projected.fields}
        taken, extra = set(f.name for f in projected.fields), []
        for i, f in fields.items():
            if i in by_id:
                fields[i] = by_id[i]
                continue
            if f.name in taken:  # a dropped field whose name was given to another since: named apart
                fields[i] = f = f.model_copy(update={"name": f"__mergetree_eq_{i}"})
            taken.add(f.name)
            extra.append(f)
        extended = Schema(*projected.fields, *extra)
        rows = ArrowScan(metadata, io, extended, row_filter).to_table([task])
        deleted = np.zeros(rows.num_rows, dtype=bool)
        for delete_file in deletes:
            if rows.num_rows:
                names = [fields[i].name for i in delete_file.equality_ids]
                deleted |= _matches(rows, _delete_rows(io, delete_file, fields), names)
        pieces.append(rows.filter(pa.array(~deleted)).select([f.name for f in projected.fields]))
    flush()
    if not pieces:
        return schema_to_pyarrow(projected, include_field_ids=False).empty_table()
    return pa.concat_tables(pieces, promote_options="permissive") if len(pieces) > 1 else pieces[0]


def _equality_fields(metadata: Any, deletes: Sequence[Any]) -> dict[int, Any]:
    """Each equality field id of `deletes` as a schema field: the current schema's, or for a
    field dropped since, the newest schema that had it (its deletes still apply, by its values
    in the older files)."""
    schemas = [metadata.schema(), *sorted(metadata.schemas, key=lambda s: -s.schema_id)]
    out: dict[int, Any] = {}
    for delete_file in deletes:
        ids = list(delete_file.equality_ids or ())
        if not ids:
            raise MergeTreeError(f"equality delete file {delete_file.file_path} names no equality field ids")
        for field_id in ids:
            if field_id in out:
                continue
            for schema in schemas:
                try:
                    field = schema.find_field(field_id)
                except ValueError:
                    continue
                if not field.field_type.is_primitive:
                    raise MergeTreeError(f"equality delete file {delete_file.file_path}: field {field.name!r} "
                                         "is not of a primitive type")
                out[field_id] = field
                break
            else:
                raise MergeTreeError(f"equality delete file {delete_file.file_path}: no schema of the table "
                                     f"has field id {field_id}")
    return out


def _delete_rows(io: Any, delete_file: Any, fields: dict[int, Any]) -> pa.Table:
    """The equality delete file's rows, its columns found by field id and named as `fields`."""
    path = delete_file.file_path
    cached = _delete_rows_cache.get(path)
    if cached is None:
        with io.new_input(path).open() as stream:
            table = pq.read_table(stream)
        by_id: dict[int, pa.ChunkedArray] = {}
        for i, field in enumerate(table.schema):
            if field.metadata and FIELD_ID in field.metadata:
                by_id[int(field.metadata[FIELD_ID])] = table.column(i)
        missing = [i for i in delete_file.equality_ids if i not in by_id]
        if missing:
            raise MergeTreeError(f"equality delete file {path} has no column with field id {missing[0]}")
        cached = pa.table({str(i): by_id[i] for i in delete_file.equality_ids})
        _delete_rows_cache[path] = cached
        held = sum(t.nbytes for t in _delete_rows_cache.values())
        while held > _CACHED_DELETE_BYTES and len(_delete_rows_cache) > 1:  # the newest stays: it is in use
            held -= _delete_rows_cache.popitem(last=False)[1].nbytes
    else:
        _delete_rows_cache.move_to_end(path)
    return cached.rename_columns([fields[int(c)].name for c in cached.column_names])


def _matches(rows: pa.Table, deletes: pa.Table, names: list[str]) -> np.ndarray:
    """Which of `rows` equal some row of `deletes` on `names`, a null equal to a null: a semi
    join on (is-null flag, value with nulls filled) per column."""
    if not deletes.num_rows:
        return np.zeros(rows.num_rows, dtype=bool)
    left: dict[str, Any] = {}
    right: dict[str, Any] = {}
    for k, name in enumerate(names):
        values = rows.column(name)
        if pa.types.is_dictionary(values.type):
            values = values.cast(values.type.value_type)
        deleted = deletes.column(name).cast(values.type)
        left[f"n{k}"], right[f"n{k}"] = (pc.is_null(c).cast(pa.int8()) for c in (values, deleted))
        present = pc.drop_null(pa.chunked_array(values.chunks + deleted.chunks, values.type))
        if len(present):  # else every value on both sides is null: the flags alone decide
            fill = present[0]
            left[f"v{k}"], right[f"v{k}"] = pc.fill_null(values, fill), pc.fill_null(deleted, fill)
    keys = list(left)
    left["__row"] = pa.array(np.arange(rows.num_rows, dtype=np.int64))
    right_table = pa.table(right).group_by(keys).aggregate([])
    hit = pa.table(left).join(right_table, keys=keys, join_type="left semi").column("__row")
    mask = np.zeros(rows.num_rows, dtype=bool)
    mask[hit.to_numpy()] = True
    return mask
