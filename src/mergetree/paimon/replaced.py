"""What a compaction of a deletion-vector table replaces outside its inputs, as Paimon's
lookup compaction finds it: for every key of the files rewritten into level N > 0, its live
version in a level above N (older data no compaction input holds).  That version is

* merged in, as the oldest run (`older_versions`): partial-update, aggregation, first-row and
  sequence fields need the old value, and for deduplicate the newer version simply wins; and
* marked deleted in its file's deletion vector (`replaced_positions`), so that a read of each
  level > 0 file on its own sees every key once.

Positions are row ordinals in the data file (across row groups), as Paimon's deletion vectors
record them.  A bucket's deletion vectors then go into one new index file (`bucket_index`),
as Paimon's bucketed tables keep them: the index manifest entry replaces the bucket's old one.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
import pyarrow as pa
from pyroaring import BitMap64

from ..merge.arrow_input import sort_indices
from ..table.paimon.commit import deletion_index
from ..table.paimon.metadata import INDEX_DIR, PaimonFile
from .read import PaimonBucket, PaimonReadPlan, batches_table, layout_columns, read_file

__all__ = ["bucket_index", "index_object", "older_versions", "replaced_positions"]

_POSITION = "__position__"


def _keys_of(plan: PaimonReadPlan, files: Iterable[PaimonFile]) -> pa.Table:
    """The distinct keys (_KEY_ columns) of the live rows of `files`."""
    columns = plan.schema.key_columns
    batches = [b.select(columns) for pf in files for b in read_file(plan, pf, columns)]
    if not batches:
        return pa.table({c: pa.array([], plan.schema.arrow_schema.field(c[len("_KEY_"):]).type) for c in columns})
    return batches_table(batches).group_by(columns).aggregate([])


def _overlaps(pf: PaimonFile, lo: tuple, hi: tuple) -> bool:
    try:
        return not (pf.max_key < lo or pf.min_key > hi)
    except TypeError:  # keys the manifest could not order (should not happen): look
        return True


def _physical(plan: PaimonReadPlan) -> PaimonReadPlan:
    """The plan reading every row of a file, deletion vectors not applied: positions are the
    file's own."""
    return PaimonReadPlan(plan.table, plan.snapshot, plan.schema, plan.columns, None, (), 0)


def replaced_positions(plan: PaimonReadPlan, bucket: PaimonBucket, inputs: list[PaimonFile],
                       output_level: int) -> dict[str, np.ndarray]:
    """Per file of a level above `output_level`, the positions of live rows whose key one of
    `inputs` holds (sorted, not yet marked by the file's deletion vector)."""
    higher = [f for f in bucket.files if f.level > output_level and f not in inputs]
    if not higher or not inputs:
        return {}
    lo = min(f.min_key for f in inputs)
    hi = max(f.max_key for f in inputs)
    higher = [f for f in higher if _overlaps(f, lo, hi)]
    if not higher:
        return {}
    keys = _keys_of(plan, inputs)
    columns = plan.schema.key_columns
    found: dict[str, np.ndarray] = {}
    raw = _physical(plan)  # every row, by position (the deletion vector is applied below, to positions)
    for pf in higher:
        batches = [b.select(columns) for b in read_file(raw, pf, columns)]
        if not batches:
            continue
        table = batches_table(batches)
        table = table.append_column(_POSITION, pa.array(np.arange(table.num_rows, dtype=np.int64)))
        hits = table.join(keys, columns, join_type="left semi").column(_POSITION).to_numpy()
        if not len(hits):
            continue
        hits = np.sort(hits)
        already = plan.deleted_positions(pf)
        if already is not None:
            hits = hits[~np.isin(hits, already)]
        if len(hits):
            found[pf.file_name] = hits
    return found


def older_versions(plan: PaimonReadPlan, bucket: PaimonBucket,
                   replaced: Mapping[str, np.ndarray]) -> list[pa.RecordBatch]:
    """The replaced rows themselves (every layout column), as one run in key order."""
    if not replaced:
        return []
    columns = layout_columns(plan.schema)
    raw = _physical(plan)
    parts = []
    for pf in bucket.files:
        positions = replaced.get(pf.file_name)
        if positions is None:
            continue
        rows = batches_table(list(read_file(raw, pf, columns)))
        parts += rows.take(pa.array(positions)).to_batches()
    table = batches_table(parts)  # files of several writers (NOT NULL declared or not)
    order = sort_indices(table, [(c, "ascending") for c in plan.schema.key_columns], "at_start")  # the merge's order
    return table.take(order).to_batches()


def bucket_index(plan: PaimonReadPlan, bucket: PaimonBucket, rewritten: Iterable[PaimonFile],
                 replaced: Mapping[str, np.ndarray], name: str) -> tuple[bytes, dict] | None:
    """The bucket's deletion vectors after the compaction — its files' vectors, without those
    of the rewritten files, with the new marks — as the bytes of index file `name` and its
    index manifest entry; None when no file of the bucket has a deleted row any more."""
    gone = {f.file_name for f in rewritten}
    vectors: dict[str, BitMap64] = {}
    for pf in bucket.files:
        if pf.file_name in gone:
            continue
        deletion = plan.deletion_file(pf)
        bitmap = BitMap64(plan.table.deleted_rows(deletion)) if deletion is not None else BitMap64()
        marks = replaced.get(pf.file_name)
        if marks is not None:
            bitmap.update(marks.tolist())
        if len(bitmap):
            vectors[pf.file_name] = bitmap
    if not vectors:
        return None
    built = deletion_index(plan.schema, bucket.files[0].partition_bytes, bucket.bucket, vectors, name)
    return None if built is None else (built.data, built.entry)


def index_object(name: str) -> str:
    """Where a new index file goes under the table (Paimon's default ``index/`` directory)."""
    return f"{INDEX_DIR}/{name}"
