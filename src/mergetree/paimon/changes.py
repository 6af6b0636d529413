"""What changed in a Paimon primary-key table between two snapshots, as a change stream:
every row with a ``_row_kind`` column (``+I``, ``-U``, ``+U``, ``-D``).

Two sources:

- ``"delta"``: the net change per key, computed.  The keys a commit in (start, end] touched
  are those of the files its delta manifest list added (or removed: an overwrite); where a
  read's visible state also changes at compaction (deletion vectors, first-row: level-0
  files stay invisible until compacted), those of the level-0 files a COMPACT commit in range
  resolved too.  Those keys are read at `start` and at `end` with the key filter (per bucket,
  only the files whose key range holds one of them are opened) and compared per key: a new
  key ``+I``, a changed row ``-U`` (the old row) then ``+U``, a vanished key ``-D``, an equal
  row nothing.  So COMPACT and ANALYZE commits change nothing, and the change applied to
  ``read(start)`` gives ``read(end)``.  (The new state is read rather than merged from the
  commits' files onto the old one: once a compaction has dropped a retraction, a later
  writer restores its sequence numbers from the files left and may number rows below it, so
  a merge of the commits' files would disagree with the table's own read.)
- ``"changelog"``: the changelog files Paimon's writers produced, read as written, commit
  after commit: their ``_VALUE_KIND`` gives the kinds.  ``changelog-producer = input``: every
  APPEND has its own (one without is an error); ``lookup``, ``full-compaction``: a COMPACT
  commit carries the changelog of the data before it; ``none``: an APPEND's changelog is its
  added data files as written (what Paimon's own streaming read of such a table returns).
  An OVERWRITE has none (refused).  The commits may be expired snapshots whose metadata
  Paimon kept for their changelog (``changelog/changelog-<id>``).

Append tables (no primary key): the rows of the files each APPEND or OVERWRITE commit added
(``+I``) and removed (``-D``), whatever the source.

``"auto"`` reads the changelog when the range has one and every commit in it that added data
has its own, else computes the delta.  The filter applies to rows: the delta is the change of
the filtered view (applied to ``read(start, filter)`` it gives ``read(end, filter)``);
changelog rows are kept when they match.
"""
from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..codec.types import evolve, same_type
from ..errors import CorruptTableError, InvalidArgumentError, SnapshotNotFoundError, UnsupportedPaimonFeatureError
from ..merge import ROW_KIND_COLUMN, symbols_of
from ..table import filters as flt
from ..table.files import batch_rows_for
from ..table.paimon.files import read_data_file
from ..table.paimon.metadata import ADD, KIND_COLUMN, PaimonFile, PaimonSchema, PaimonTable
from .read import (
    PaimonBucket,
    PaimonReadPlan,
    batches_table,
    checked_columns,
    layout_columns,
    plan_read,
    read_bucket,
    read_file,
)

__all__ = ["SOURCES", "changes", "diff_states"]

SOURCES = ("auto", "delta", "changelog")
PLUS_I, MINUS_U, PLUS_U, MINUS_D = 0, 1, 2, 3
_NO_CHANGE = ("COMPACT", "ANALYZE")


def changes(warehouse: Any, table: Any, start: Any, end: Any = None, columns: Any = None, filter: Any = None,
            storage_options: Mapping[str, object] | None = None, source: str = "auto") -> pa.RecordBatchReader:
    """The change of Paimon table `table` ("database.table") of `warehouse` from snapshot
    `start` to snapshot `end` (ids or tag names; `end` default the latest; `start` 0: before
    the first snapshot) as a `pa.RecordBatchReader`: `columns` (default all; the primary key
    always) and ``_row_kind`` ("+I", "-U", "+U", "-D").  `source`: "delta" (the net change per
    key, computed), "changelog" (the table's changelog files as written, commit by commit) or
    "auto" (the changelog when every commit in range that added data has one).  The rows are
    in the schema `end` is read with (the latest schema for the latest snapshot)."""
    if source not in SOURCES:
        raise InvalidArgumentError(f"source must be one of {', '.join(SOURCES)}, not {source!r}")
    t = PaimonTable.open(warehouse, table, storage_options)
    first = _snapshot_id(t, start, "start")
    latest = t.latest_snapshot_id()
    last = (latest or 0) if end is None else _snapshot_id(t, end, "end")
    if first > last:
        if end is None:
            t.commit(first)  # a start past the latest snapshot is unknown: named as such
        raise InvalidArgumentError(f"start snapshot {first} is after end snapshot {last}: changes run forward")
    if end is not None and last > 0:
        t.commit(last)  # an unknown end is named as asked
    commits = [t.commit(i) for i in range(first + 1, last + 1)]  # each checked to exist (or its kept changelog)
    if end is None or last == 0:
        schema = t.schema()
    else:
        schema = t.schema(int(commits[-1]["schemaId"]) if commits else int(t.commit(last)["schemaId"]))
    names = schema.names
    asked = checked_columns(columns, names, t.name)
    if ROW_KIND_COLUMN in names:
        raise InvalidArgumentError(f"Paimon table {t.name} has a column named {ROW_KIND_COLUMN!r}, the column a "
                                   f"change stream carries its kinds in")
    out_columns = asked + [k for k in schema.primary_keys if k not in asked]
    row_filter = flt.normalize(filter, schema.arrow_schema)
    out_schema = pa.schema([pa.field(c, schema.arrow_schema.field(c).type) for c in out_columns]
                           + [pa.field(ROW_KIND_COLUMN, pa.string())])

    if not schema.primary_keys:
        batches = _appended(t, schema, commits, out_columns, row_filter)
        return pa.RecordBatchReader.from_batches(out_schema, (_conformed(b, out_schema) for b in batches))
    opts = schema.checked_options  # a feature mergetree refuses raises here, naming the option
    adding = [c for c in commits if _adds_data(c)]
    with_changelog = any(c.get("changelogManifestList") for c in commits)
    if source == "changelog" or (source == "auto" and with_changelog
                                 and all(c.get("changelogManifestList") for c in adding)):
        batches = _changelog(t, schema, _changelog_files(t, commits, opts.changelog_producer), out_columns,
                             row_filter)
    else:
        batches = _delta(warehouse, table, storage_options, t, schema, first, commits, out_columns, row_filter)
    return pa.RecordBatchReader.from_batches(out_schema, (_conformed(b, out_schema) for b in batches))


def _snapshot_id(t: PaimonTable, value: Any, what: str) -> int:
    """A snapshot id (0: before the first snapshot) from an id or a tag name."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise InvalidArgumentError(f"{what} must be a snapshot id or a tag name, not {value!r}")
    if isinstance(value, str):
        tagged = t.resolve(value)
        assert tagged is not None  # a tag name resolves to its snapshot or raises
        return int(tagged["id"])
    if value < 0:
        raise InvalidArgumentError(f"{what} must be a snapshot id (0: before the first snapshot), not {value}")
    return value


def _adds_data(commit: dict) -> bool:
    """Whether a commit can change rows: an APPEND or OVERWRITE with records (a commit that
    recorded no delta count is taken to have some)."""
    if commit.get("commitKind") in _NO_CHANGE:
        return False
    count = commit.get("deltaRecordCount")
    return count is None or int(count) > 0 or commit.get("commitKind") == "OVERWRITE"


def _conformed(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    arrays = [batch.column(f.name) if batch.column(f.name).type == f.type else batch.column(f.name).cast(f.type)
              for f in schema]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _plan(t: PaimonTable, snapshot: dict | None, schema: PaimonSchema) -> PaimonReadPlan:
    """A plan reading files under `schema` (files of older schemas evolved to it), no filter."""
    return PaimonReadPlan(t, snapshot, schema, schema.names, None, (), 0, {})


# -- the changelog as written ------------------------------------------------------------

def _changelog_files(t: PaimonTable, commits: list[dict], producer: str) -> list[PaimonFile]:
    """The changelog files of `commits`, commit after commit (checked before any is read)."""
    out = []
    for c in commits:
        if c.get("changelogManifestList"):
            files = [pf for kind, pf in t.manifest_entries(c["changelogManifestList"], t.schema(int(c["schemaId"])))
                     if kind == ADD]
        elif not _adds_data(c):
            continue
        elif c.get("commitKind") != "APPEND":  # an overwrite replaces rows without a changelog
            raise UnsupportedPaimonFeatureError(
                f"snapshot {c['id']} of Paimon table {t.name} is an {c.get('commitKind')} commit, which has no "
                f"changelog; read the change with source='delta'")
        elif producer in ("lookup", "full-compaction"):
            continue  # lookup, full-compaction: a compaction commits the changelog of the data before it
        elif producer != "none":
            raise InvalidArgumentError(
                f"snapshot {c['id']} of Paimon table {t.name} ({c.get('commitKind')}) has no changelog, though the "
                f"table's changelog-producer is {producer!r}; read the change with source='delta'")
        else:  # changelog-producer none: the commit's added files as written
            files = [pf for kind, pf in t.manifest_entries(c.get("deltaManifestList"), t.schema(int(c["schemaId"])))
                     if kind == ADD]
        out += sorted(files, key=lambda f: (repr(f.partition), f.bucket, f.min_seq))
    return out


def _changelog(t: PaimonTable, schema: PaimonSchema, files: list[PaimonFile], out_columns: list[str],
               row_filter: Any) -> Iterator[pa.RecordBatch]:
    plan = _plan(t, None, schema)
    layout = layout_columns(schema)
    expr = flt.to_expression(row_filter, schema.arrow_schema)
    for pf in files:
        for batch in read_file(plan, pf, layout):
            if expr is not None:
                batch = batch.filter(expr)
            if batch.num_rows:
                kinds = symbols_of(batch.column(KIND_COLUMN))
                yield pa.RecordBatch.from_arrays([batch.column(c) for c in out_columns] + [kinds],
                                                 names=out_columns + [ROW_KIND_COLUMN])


# -- append tables: rows added and removed ------------------------------------------------

def _appended(t: PaimonTable, schema: PaimonSchema, commits: list[dict], out_columns: list[str],
              row_filter: Any) -> Iterator[pa.RecordBatch]:
    """An append table's change: the rows of the files each APPEND or OVERWRITE commit added
    (+I) and removed (-D: an overwrite), commit after commit; a file both added and removed in
    the range gives nothing.  COMPACT commits move rows between files and change nothing.
    Every source gives this (append tables have no changelog of their own)."""
    for key in ("deletion-vectors.enabled", "row-tracking.enabled", "data-evolution.enabled"):
        if schema.options.get(key, "false").strip().lower() == "true":
            raise UnsupportedPaimonFeatureError(f"Paimon option {key!r} = 'true' on append table {t.name}: mergetree "
                                                f"does not read the changes of such a table")
    steps: list[tuple[int, PaimonFile]] = []
    for c in commits:
        kind = c.get("commitKind")
        if kind in _NO_CHANGE:
            continue
        if kind not in ("APPEND", "OVERWRITE"):
            raise UnsupportedPaimonFeatureError(f"snapshot {c['id']} of Paimon table {t.name} is a {kind!r} commit, "
                                                f"which mergetree cannot read changes from")
        entries = t.manifest_entries(c.get("deltaManifestList"), t.schema(int(c["schemaId"])))
        steps += [e for e in entries if e[0] != ADD] + [e for e in entries if e[0] == ADD]
    added = {pf.file_name for kind, pf in steps if kind == ADD}
    removed = {pf.file_name for kind, pf in steps if kind != ADD}
    expr = flt.to_expression(row_filter, schema.arrow_schema)
    for kind, pf in steps:
        if pf.file_name in added and pf.file_name in removed:
            continue
        symbol = "+I" if kind == ADD else "-D"
        for batch in _append_file(t, schema, pf):
            if expr is not None:
                batch = batch.filter(expr)
            if batch.num_rows:
                yield pa.RecordBatch.from_arrays([batch.column(c) for c in out_columns]
                                                 + [pa.array([symbol] * batch.num_rows, pa.string())],
                                                 names=out_columns + [ROW_KIND_COLUMN])


def _append_file(t: PaimonTable, schema: PaimonSchema, pf: PaimonFile) -> Iterator[pa.RecordBatch]:
    """An append table's data file under `schema`: columns found by field id in the schema the
    file was written under (a column added since reads as nulls, a retyped one evolved)."""
    old = t.schema(pf.schema_id)
    by_id = {f.id: f for f in old.fields}
    try:
        for batch in read_data_file(t.source(pf), [f.name for f in old.fields], None, batch_rows_for(1)):
            arrays = []
            for f in schema.fields:
                before = by_id.get(f.id)
                if before is None:
                    arrays.append(pa.nulls(batch.num_rows, f.type.arrow))
                elif not same_type(before.type, f.type):
                    arrays.append(evolve(batch.column(before.name), before.type, f.type, f.name))
                else:
                    arrays.append(batch.column(before.name))
            yield pa.RecordBatch.from_arrays(arrays, names=schema.names)
    except FileNotFoundError:
        raise CorruptTableError(f"data file {pf.path} of Paimon table {t.name} is missing", path=pf.path) from None


# -- the net change, computed -------------------------------------------------------------

Group = tuple[tuple, int]  # (partition, bucket)


def _delta(warehouse: Any, table: Any, storage_options: Mapping[str, object] | None, t: PaimonTable,
           schema: PaimonSchema, first: int, commits: list[dict], out_columns: list[str],
           row_filter: Any) -> Iterator[pa.RecordBatch]:
    """The net change, planned at once (missing snapshots and refused commits raise here),
    read bucket by bucket as the stream is consumed."""
    if not commits:
        return iter(())
    start_snapshot = None
    if first > 0:
        try:
            start_snapshot = t.snapshot(first)
        except SnapshotNotFoundError:
            raise SnapshotNotFoundError(f"snapshot {first} of Paimon table {t.name} has expired ({t.history()}): "
                                        f"its state is gone, so the change cannot be computed; read the kept "
                                        f"changelog with source='changelog'") from None
    for c in commits:
        if not t.storage.exists(t.snapshot_name(int(c["id"]))):
            raise SnapshotNotFoundError(f"snapshot {c['id']} of Paimon table {t.name} has expired ({t.history()})")
    opts = schema.checked_options
    touched: dict[Group, list[PaimonFile]] = {}   # files whose keys may have changed
    for c in commits:
        kind = c.get("commitKind")
        entries = t.manifest_entries(c.get("deltaManifestList"), t.schema(int(c["schemaId"])))
        if kind == "COMPACT":
            if opts.skips_level0:  # level-0 files a compaction resolved became visible
                for k, pf in entries:
                    if k != ADD and pf.level == 0:
                        touched.setdefault((pf.partition, pf.bucket), []).append(pf)
            continue
        if kind == "ANALYZE":
            continue
        if kind not in ("APPEND", "OVERWRITE"):
            raise UnsupportedPaimonFeatureError(f"snapshot {c['id']} of Paimon table {t.name} is a {kind!r} commit, "
                                                f"which mergetree cannot read changes from")
        for _, pf in entries:  # added files, and the files an overwrite removed
            touched.setdefault((pf.partition, pf.bucket), []).append(pf)
    partition_filter = flt.restrict(row_filter, set(schema.partition_keys))
    groups = [g for g in sorted(touched, key=lambda g: (repr(g[0]), g[1])) if partition_filter is None or flt.may_match(
        partition_filter, {k: (v, v, int(v is None)) for k, v in zip(schema.partition_keys, g[0])}, 1)]
    if not groups:
        return iter(())
    old_base = plan_read(warehouse, table, snapshot=first, buckets=groups, storage_options=storage_options) \
        if start_snapshot is not None else None
    new_base = plan_read(warehouse, table, snapshot=int(commits[-1]["id"]), buckets=groups,
                         storage_options=storage_options)

    def rows() -> Iterator[pa.RecordBatch]:
        for group in groups:
            keys = _touched_keys(t, schema, touched[group])
            if keys.num_rows:
                key_filter = _key_filter(schema, keys, row_filter)
                shared: dict = {}  # files live at both ends are decoded once
                old = _state(old_base, schema, group, keys, key_filter, shared)
                new = _state(new_base, schema, group, keys, key_filter, shared)
                if isinstance(row_filter, pc.Expression):
                    old, new = old.filter(row_filter), new.filter(row_filter)
                yield from diff_states(schema.trimmed_keys, old, new, out_columns)
    return rows()


def _touched_keys(t: PaimonTable, schema: PaimonSchema, files: list[PaimonFile]) -> pa.Table:
    """The distinct keys (trimmed key columns, under their table names) `files` hold, sorted.
    Every row counts, deletion vectors aside: an unchanged key in the set costs a comparison."""
    plan = _plan(t, None, schema)
    parts = [b for pf in files for b in read_file(plan, pf, schema.key_columns)]
    names = schema.trimmed_keys
    if not parts:
        return pa.table({k: pa.array([], schema.arrow_schema.field(k).type) for k in names})
    keys = batches_table(parts).rename_columns(names)
    keys = keys.group_by(names, use_threads=False).aggregate([])
    return keys.sort_by([(k, "ascending") for k in names])


def _key_filter(schema: PaimonSchema, keys: pa.Table, row_filter: Any) -> Any:
    """The filter reading `keys` (each key column's values: for several columns a superset of
    the keys), with the caller's filter unless it is a pyarrow expression (applied after)."""
    key_filter: Any = [(k, "in", pc.unique(keys.column(k)).to_pylist()) for k in schema.trimmed_keys]
    if row_filter is not None and not isinstance(row_filter, pc.Expression):
        key_filter.append(row_filter)
    return flt.normalize(key_filter, schema.arrow_schema)


def _state(base: PaimonReadPlan | None, schema: PaimonSchema, group: Group, keys: pa.Table, key_filter: Any,
           shared: dict) -> pa.Table:
    """The visible rows of the keys `keys` of one bucket in the snapshot `base` plans (every
    column, under `schema`): only files whose key range holds one of them are read, with
    `key_filter` (`_key_filter`); for several key columns only the rows of the asked keys are
    then kept.  `shared`: the decoded files of this bucket under this filter."""
    empty = _rows_schema(schema).empty_table()
    if base is None:
        return empty
    found = [b for b in base.buckets if (b.partition, b.bucket) == group]
    if not found:
        return empty
    names = schema.trimmed_keys
    tuples = list(zip(*(keys.column(k).to_pylist() for k in names)))
    files = tuple(pf for pf in found[0].files if _holds_one(pf, tuples))
    if not files:
        return empty
    plan = dataclasses.replace(base, schema=schema, columns=schema.names, filter=key_filter, file_rows=shared,
                               buckets=(PaimonBucket(found[0].partition, found[0].bucket, files),))
    rows = pa.Table.from_batches(list(read_bucket(plan, plan.buckets[0])), schema=_rows_schema(schema))
    if len(names) > 1 and rows.num_rows:
        # only the asked keys: another key the filter lets through may have a newer version in a
        # file the key ranges left out
        rows = rows.join(keys, names, join_type="left semi", use_threads=False)
    return rows


def _holds_one(pf: PaimonFile, keys: Sequence[tuple]) -> bool:
    """Whether one of the sorted `keys` lies in the file's key range (True when the range's
    values do not compare with the keys')."""
    try:
        i = bisect.bisect_left(keys, tuple(pf.min_key))
        return i < len(keys) and keys[i] <= tuple(pf.max_key)
    except TypeError:
        return True


def _rows_schema(schema: PaimonSchema) -> pa.Schema:
    """A read's rows: every column, nullable (as `read` gives them)."""
    return pa.schema([pa.field(f.name, f.type) for f in schema.arrow_schema])


def diff_states(names: Sequence[str], old: pa.Table, new: pa.Table,
                out_columns: Sequence[str]) -> Iterator[pa.RecordBatch]:
    """Two states of the same keys (tables of one schema, each key `names` at most once) as a
    change stream, in key order: a key only in `new` ``+I``, only in `old` ``-D``, in both with
    a value that differs (nulls equal nulls, NaN equals NaN) ``-U`` (old) then ``+U`` (new);
    `out_columns` of the rows, then ``_row_kind``."""
    names, out_columns = list(names), list(out_columns)
    left = old.select(names).append_column("__old", pa.array(np.arange(old.num_rows, dtype=np.int64)))
    right = new.select(names).append_column("__new", pa.array(np.arange(new.num_rows, dtype=np.int64)))
    joined = left.join(right, names, join_type="full outer", coalesce_keys=True, use_threads=False)
    if not joined.num_rows:
        return
    joined = joined.sort_by([(k, "ascending") for k in names])
    o_missing = joined.column("__old").is_null().to_numpy(zero_copy_only=False)
    n_missing = joined.column("__new").is_null().to_numpy(zero_copy_only=False)
    o = joined.column("__old").fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    n = joined.column("__new").fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    both = ~o_missing & ~n_missing
    same = np.zeros(len(o), dtype=bool)
    if both.any():
        same[both] = _equal_rows(old.take(pa.array(o[both])), new.take(pa.array(n[both])))
    combined = pa.concat_tables([old, new]).select(out_columns)
    # each joined row (in key order) gives its output rows: -D old, +I new, or -U old then +U new
    changed = both & ~same
    first_index = np.where(o_missing, old.num_rows + n, o)
    first_kind = np.where(n_missing, MINUS_D, np.where(o_missing, PLUS_I, MINUS_U))
    counts = (~(both & same)).astype(np.int64) + changed.astype(np.int64)
    order = np.repeat(np.arange(len(o)), counts)
    if not len(order):
        return
    second = np.zeros(len(order), dtype=bool)
    second[1:] = order[1:] == order[:-1]
    index = np.where(second, old.num_rows + n[order], first_index[order])
    kinds = np.where(second, PLUS_U, first_kind[order]).astype(np.int8)
    rows = combined.take(pa.array(index)).append_column(ROW_KIND_COLUMN, symbols_of(kinds))
    yield from rows.combine_chunks().to_batches()


def _equal_rows(a: pa.Table, b: pa.Table) -> np.ndarray:
    """Row by row, whether every column holds the same value (two nulls are equal, and two NaNs)."""
    same = np.ones(a.num_rows, dtype=bool)
    for name in a.column_names:
        x, y = a.column(name).combine_chunks(), b.column(name).combine_chunks()
        if x.type != y.type:
            y = y.cast(x.type)
        try:
            eq = pc.equal(x, y).fill_null(False).to_numpy(zero_copy_only=False)
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError):
            # nested and other types without a comparison kernel: as Python values
            same &= np.array([p == q for p, q in zip(x.to_pylist(), y.to_pylist())], dtype=bool)
            continue
        both_null = (x.is_null() if x.null_count else pa.array(np.zeros(len(x), bool)))
        both_null = pc.and_(both_null, y.is_null()).to_numpy(zero_copy_only=False)
        eq = eq | both_null
        if pa.types.is_floating(x.type):
            eq = eq | (pc.is_nan(x).fill_null(False).to_numpy(zero_copy_only=False)
                       & pc.is_nan(y).fill_null(False).to_numpy(zero_copy_only=False))
        same &= eq
    return same
