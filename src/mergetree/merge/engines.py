"""Merge engines: how one key group (all versions of a key, oldest first) becomes a row.

The core reduces deduplicate and first-row groups itself (it emits one index
per group).  Partial-update and aggregate receive every member plus the group
boundaries; their per-column reductions run in Cython (`_core`) or pyarrow
compute, and the output is assembled with `take`.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import _core
from ..errors import InvalidArgumentError, RetractionError, UnsupportedTypeError
from .row_kind import RowKind

__all__ = ["AGGREGATE_FUNCTIONS", "DEFAULT_AGGREGATE", "ENGINES", "RETRACTABLE", "EnginePlan",
           "check_aggregate_type", "take_array", "take_rows"]

ENGINES = ("deduplicate", "first-row", "partial-update", "aggregate", "none")

AGGREGATE_FUNCTIONS = (
    "sum", "product", "min", "max", "bool_and", "bool_or", "first_value", "last_value",
    "first_non_null_value", "last_non_null_value", "listagg",
)

# Aggregates that can undo a retraction row (-U / -D), as in Paimon.
RETRACTABLE = frozenset({"sum", "product", "last_value", "last_non_null_value"})
DEFAULT_AGGREGATE = "last_non_null_value"
LISTAGG_DELIMITER = ","

# (run, row) of a member, for error messages
Locate = Callable[[int], tuple[int, int]]


def check_aggregate_type(column: str, fn: str, dtype: pa.DataType) -> None:
    numeric = pa.types.is_integer(dtype) or pa.types.is_floating(dtype) or pa.types.is_decimal(dtype)
    ok = {
        "sum": numeric,
        "product": pa.types.is_integer(dtype) or pa.types.is_floating(dtype),
        "min": not (pa.types.is_nested(dtype) or pa.types.is_boolean(dtype)),
        "max": not (pa.types.is_nested(dtype) or pa.types.is_boolean(dtype)),
        "bool_and": pa.types.is_boolean(dtype),
        "bool_or": pa.types.is_boolean(dtype),
        "listagg": pa.types.is_string(dtype) or pa.types.is_large_string(dtype),
    }.get(fn, True)
    if not ok:
        raise UnsupportedTypeError(f"aggregate {fn!r} cannot apply to column {column!r} of type {dtype}")


@dataclass
class EnginePlan:
    """Everything the reader needs to turn index buffers into output rows."""

    engine: str
    schema: pa.Schema
    key: list[str]
    sequence: str | None
    kind: str | None
    keep_deletes: bool
    aggregations: dict[str, str] = field(default_factory=dict)

    @classmethod
    def create(cls, engine: str, schema: pa.Schema, key: list[str], sequence: str | None,
               kind: str | None, keep_deletes: bool,
               aggregations: Mapping[str, str] | None) -> EnginePlan:
        if engine not in ENGINES:
            raise InvalidArgumentError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")
        if aggregations and engine != "aggregate":
            raise InvalidArgumentError("aggregations are only used by engine='aggregate'")
        resolved = _resolve_aggregations(schema, key, sequence, kind, aggregations or {}) \
            if engine == "aggregate" else {}
        return cls(engine, schema, key, sequence, kind, keep_deletes, resolved)

    @property
    def selects_rows(self) -> bool:
        """Is each output row one input row, unchanged (no column is folded)?"""
        return self.engine in ("deduplicate", "first-row", "none")

    @property
    def emit_mode(self) -> int:
        return {"deduplicate": _core.MODE_LAST, "first-row": _core.MODE_FIRST}.get(
            self.engine, _core.MODE_ALL)

    def assemble(self, rows: pa.RecordBatch, group_ends: np.ndarray | None, locate: Locate) -> pa.RecordBatch:
        """Fold the output rows (every member, in group order) into the engine's result;
        `locate(member)` is the member's (run, position) for error messages."""
        if self.selects_rows:
            return rows
        assert group_ends is not None
        groups = _Groups(rows, group_ends, self.kind)
        if self.engine == "partial-update":
            reduced, live = self._partial_update(rows, groups)
        else:
            reduced, live = self._aggregate(rows, groups, locate), None
        return self._keep_single_versions(rows, groups, reduced, live)

    def retractions(self, rows: pa.RecordBatch) -> np.ndarray | None:
        """Which rows are retractions (-U/-D), or None when none can be."""
        if self.kind is None:
            return None
        kinds = rows.column(self.kind).to_numpy(zero_copy_only=False)
        retract = (kinds == RowKind.UPDATE_BEFORE) | (kinds == RowKind.DELETE)
        return retract if retract.any() else None

    def alone(self, rows: pa.RecordBatch, retract: np.ndarray | None) -> pa.RecordBatch:
        """What the engine makes of rows that are each the only version of their key (a
        stretch of one run below every other run): the rows themselves, as a group of one
        passes through every engine unchanged, less the retractions unless the engine keeps
        them (`none`, or keep_deletes).  First-row refuses a retraction before this."""
        if retract is None or self.keep_deletes or self.engine == "none":
            return rows
        return rows.filter(pa.array(~retract))

    def _keep_single_versions(self, rows: pa.RecordBatch, groups: _Groups, reduced: pa.RecordBatch,
                              live: np.ndarray | None) -> pa.RecordBatch:
        """A key with one version passes through unchanged (as Paimon's reducer does), so a
        lone retraction stays a retraction; then keys whose result is a retraction go,
        unless keep_deletes."""
        single = groups.ends - groups.starts == 1
        if single.any():
            n = groups.count
            pick = np.where(single, n + np.arange(n), np.arange(n))
            alone = take_rows(rows, pa.array(groups.starts, type=pa.int64()))
            reduced = take_rows(pa.concat_batches([reduced, alone]), pa.array(pick, type=pa.int64()))
        keep = np.ones(groups.count, dtype=bool) if live is None else live.copy()
        keep[single] = ~groups.retract[groups.starts[single]]
        if self.keep_deletes or keep.all():
            return reduced
        return reduced.filter(pa.array(keep))

    # -- partial-update: the newest non-null value of each column ---------------
    def _partial_update(self, rows: pa.RecordBatch, groups: _Groups) -> tuple[pa.RecordBatch, np.ndarray | None]:
        live = (_core.live_groups_after_delete(groups.ends, groups.kinds)
                if self.kind is not None else None)
        columns = []
        for f in self.schema:
            col = rows.column(f.name)
            if f.name in self.key or f.name == self.sequence:
                columns.append(take_array(col, groups.last))
            elif f.name == self.kind:
                kinds = np.zeros(groups.count, dtype=np.int8)
                if live is not None:
                    kinds[~live] = RowKind.DELETE
                columns.append(pa.array(kinds, type=f.type))
            else:
                idx = _core.last_valid_per_group(groups.ends, _valid_mask(col), groups.kinds, True)
                columns.append(_take_or_null(col, idx))
        return pa.RecordBatch.from_arrays(columns, schema=self.schema), live

    # -- aggregate: a function per column ------------------------------------------
    def _aggregate(self, rows: pa.RecordBatch, groups: _Groups, locate: Locate) -> pa.RecordBatch:
        columns = []
        for f in self.schema:
            col = rows.column(f.name)
            if f.name in self.key or f.name == self.sequence:
                columns.append(take_array(col, groups.last))
            elif f.name == self.kind:
                columns.append(pa.array(np.zeros(groups.count, dtype=np.int8), type=f.type))
            else:
                fn = self.aggregations[f.name]
                if groups.any_retraction and fn not in RETRACTABLE and groups.grouped_retraction.any():
                    member = int(np.flatnonzero(groups.grouped_retraction)[0])
                    run, row = locate(member)
                    raise RetractionError(
                        f"run {run} row {row}: a retraction row reached column {f.name!r}, whose "
                        f"aggregate {fn!r} cannot be retracted (only "
                        f"{', '.join(sorted(RETRACTABLE))} can)",
                        run=run, row=row, column=f.name)
                try:
                    columns.append(_AGGREGATORS[fn](col, groups).cast(f.type, safe=False))
                except ZeroDivisionError as exc:
                    raise ZeroDivisionError(f"column {f.name!r}: {exc}") from None
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)


def _resolve_aggregations(schema: pa.Schema, key: list[str], sequence: str | None, kind: str | None,
                      requested: Mapping[str, str]) -> dict[str, str]:
    """Every value column's aggregate function (unnamed ones: last_non_null_value), checked."""
    system = set(key) | {sequence, kind}
    for column, fn in requested.items():
        if fn not in AGGREGATE_FUNCTIONS:
            raise InvalidArgumentError(
                f"unknown aggregate {fn!r} for column {column!r}; choose one of "
                f"{', '.join(AGGREGATE_FUNCTIONS)}")
        if schema.names and column not in schema.names:  # no schema: no runs
            raise InvalidArgumentError(f"aggregations name column {column!r}, which the runs lack")
        if column in system:
            raise InvalidArgumentError(f"column {column!r} is a key, sequence or kind column; "
                                       f"it cannot be aggregated")
    resolved = {}
    for f in schema:
        if f.name not in system:
            fn = requested.get(f.name, DEFAULT_AGGREGATE)
            check_aggregate_type(f.name, fn, f.type)
            resolved[f.name] = fn
    return resolved


def _view_storage(dtype: pa.DataType) -> pa.DataType | None:
    if pa.types.is_string_view(dtype):
        return pa.large_string()
    if pa.types.is_binary_view(dtype):
        return pa.large_binary()
    return None


def take_array(col: pa.Array, indices) -> pa.Array:
    """col.take(indices); view types, which pyarrow cannot take, go through the large types."""
    storage = _view_storage(col.type)
    if storage is None:
        return col.take(indices)
    return col.cast(storage).take(indices).cast(col.type)


def take_rows(batch: pa.RecordBatch, indices: pa.Array) -> pa.RecordBatch:
    """batch.take(indices), view columns included."""
    if not any(_view_storage(t) for t in batch.schema.types):
        return batch.take(indices)
    return pa.RecordBatch.from_arrays([take_array(c, indices) for c in batch.columns], schema=batch.schema)


class _Groups:
    """Group boundaries of a member-ordered batch, and its retraction rows."""

    def __init__(self, rows: pa.RecordBatch, ends: np.ndarray, kind: str | None) -> None:
        self.ends = np.ascontiguousarray(ends, dtype=np.int64)
        self.count = len(self.ends)
        self.last = self.ends - 1
        self.starts = np.empty_like(self.ends)
        if self.count:
            self.starts[0] = 0
            self.starts[1:] = self.ends[:-1]
        if kind is not None:
            self.kinds = np.ascontiguousarray(
                rows.column(kind).to_numpy(zero_copy_only=False), dtype=np.int8)
            self.retract = (self.kinds == RowKind.UPDATE_BEFORE) | (self.kinds == RowKind.DELETE)
        else:
            self.kinds = np.empty(0, dtype=np.int8)
            self.retract = np.zeros(rows.num_rows, dtype=bool)
        self.any_retraction = bool(self.retract.any())
        # retractions that meet other versions of their key (a lone one passes through)
        sizes = self.ends - self.starts
        self.grouped_retraction = self.retract & np.repeat(sizes > 1, sizes) if self.any_retraction else self.retract


def _valid_mask(col: pa.Array) -> np.ndarray:
    if col.null_count == 0:
        return np.ones(len(col), dtype=np.uint8)
    return col.is_valid().to_numpy(zero_copy_only=False).view(np.uint8)


def _take_or_null(col: pa.Array, idx: np.ndarray) -> pa.Array:
    """col[idx], with -1 meaning null."""
    missing = idx < 0
    if not missing.any():
        return take_array(col, pa.array(idx, type=pa.int64()))
    return take_array(col, pa.array(np.where(missing, 0, idx), type=pa.int64(), mask=missing))


def _agg_sum_or_product(product: bool) -> Callable[[pa.Array, _Groups], pa.Array]:
    def aggregate(col: pa.Array, groups: _Groups) -> pa.Array:
        if pa.types.is_decimal(col.type):
            if groups.any_retraction:
                raise UnsupportedTypeError("retracting a decimal sum is not supported")
            return _hash_aggregate(col, groups, "sum")  # exact decimal arithmetic
        floating = pa.types.is_floating(col.type)
        work = col.cast(pa.float64() if floating else pa.int64()).fill_null(0).to_numpy()
        values, valid = _core.fold_sum_product(groups.ends, np.ascontiguousarray(work),
                                               _valid_mask(col), groups.kinds, product)
        return pa.array(values, mask=~valid)
    return aggregate


def _hash_aggregate(col: pa.Array, groups: _Groups, fn: str) -> pa.Array:
    """A pyarrow hash aggregate per group, in group order."""
    gid = np.repeat(np.arange(groups.count), groups.ends - groups.starts)
    table = pa.table({"g": gid, "v": col})
    out = table.group_by("g", use_threads=False).aggregate([("v", fn)]).sort_by("g")
    return out.column(f"v_{fn}").combine_chunks()


def _agg_hash(fn: str) -> Callable[[pa.Array, _Groups], pa.Array]:
    return lambda col, groups: _hash_aggregate(col, groups, fn)


def _agg_last_value(col: pa.Array, groups: _Groups) -> pa.Array:
    # a retraction as the newest member leaves no value
    idx = np.where(groups.retract[groups.last], -1, groups.last) if groups.any_retraction else groups.last
    return _take_or_null(col, idx)


def _agg_first_non_null(col: pa.Array, groups: _Groups) -> pa.Array:
    n = len(col)
    positions = np.where(_valid_mask(col).astype(bool), np.arange(n), n)
    first = np.minimum.reduceat(positions, groups.starts) if groups.count else positions[:0]
    return _take_or_null(col, np.where(first == n, -1, first))


def _agg_last_non_null(col: pa.Array, groups: _Groups) -> pa.Array:
    return _take_or_null(col, _core.last_valid_per_group(groups.ends, _valid_mask(col), groups.kinds, False))


def _agg_listagg(col: pa.Array, groups: _Groups) -> pa.Array:
    valid = _valid_mask(col).astype(bool)
    values = col.filter(pa.array(valid)) if not valid.all() else col
    counts = np.add.reduceat(valid.astype(np.int64), groups.starts) if groups.count else np.zeros(0, np.int64)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    lists = pa.ListArray.from_arrays(pa.array(offsets, type=pa.int32()), values)
    joined = pc.binary_join(lists, LISTAGG_DELIMITER)
    return pc.if_else(pa.array(counts > 0), joined, pa.scalar(None, type=joined.type))


_AGGREGATORS: dict[str, Callable[[pa.Array, _Groups], pa.Array]] = {
    "sum": _agg_sum_or_product(product=False),
    "product": _agg_sum_or_product(product=True),
    "min": _agg_hash("min"),
    "max": _agg_hash("max"),
    "bool_and": _agg_hash("all"),
    "bool_or": _agg_hash("any"),
    "first_value": lambda col, groups: take_array(col, pa.array(groups.starts, type=pa.int64())),
    "last_value": _agg_last_value,
    "first_non_null_value": _agg_first_non_null,
    "last_non_null_value": _agg_last_non_null,
    "listagg": _agg_listagg,
}
