"""Pre-aggregates (seed 003's pre-computation): for each data file, its rows grouped by a
declared model's columns with the model's measures, kept in a small sidecar Parquet file.

An aggregate query that a model covers (its grouping is the model's or coarser, its measures
are among the model's, its filter reads only group-by columns) reads the sidecars instead of
the data files.  Every answer is assembled the same way, from per-file *partials*: a partial
is one file's (or one merged section's) rows grouped by the query's columns; sums and counts
of partials are summed, minima and maxima folded.  Integer, decimal and count results are
therefore identical to a raw scan; float sums may differ in the last bits (summation order),
as in any engine.

A pre-aggregate pays when grouping shrinks a file a lot (few distinct group-by combinations
per file); when a file keeps most of its rows after grouping, the sidecar costs nearly as
much to read as the data and only adds storage.  `build` reports the ratio.

A small partial (at most INLINE_MAX_BYTES as an Arrow IPC stream, e.g. a few dozen groups) is
also kept in the manifest, so that answering from it costs no file open at all: opening 200
sidecars costs about as much as scanning 200 small data files.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ...errors import CorruptTableError, InvalidArgumentError, SchemaMismatchError
from ...merge.arrow_input import sort_indices
from ...storage import StorageError
from ..objects import StoredFile, read_parquet_table, write_parquet
from ..options import MEASURE_FUNCTIONS, AggregateModel
from ..type_policy import require

__all__ = ["Measures", "combine_partials", "covers", "measure_name", "model_signature", "normalize_measures",
           "partial_aggregate", "sidecar_of", "write_preaggregate"]

INLINE_MAX_BYTES = 4096  # a partial up to this size (IPC stream) is also kept in the manifest

# (column, function) pairs; column "*" counts rows
Measures = tuple[tuple[str, str], ...]
# how the partials of each function are folded into the answer
_FOLD = {"sum": "sum", "count": "sum", "min": "min", "max": "max"}


def measure_name(column: str, function: str) -> str:
    """The output column of a measure: `amount_sum`, `rows_count` for a row count."""
    return f"{'rows' if column == '*' else column}_{function}"


def normalize_measures(measures: Mapping[str, str | Sequence[str]], schema: pa.Schema) -> Measures:
    """{"amount": "sum", "price": ["min", "max"], "*": "count"} as checked (column, function) pairs."""
    if not isinstance(measures, Mapping) or not measures:
        raise InvalidArgumentError(f"measures must be a non-empty dict of column -> function(s), e.g. "
                                   f"{{'amount': 'sum', '*': 'count'}}, not {measures!r}")
    out: list[tuple[str, str]] = []
    for column, functions in measures.items():
        for function in [functions] if isinstance(functions, str) else list(functions):
            if function not in MEASURE_FUNCTIONS:
                raise InvalidArgumentError(f"measure {column}:{function}: choose one of {', '.join(MEASURE_FUNCTIONS)}")
            if column == "*":
                if function != "count":
                    raise InvalidArgumentError(f"'*' only takes count, not {function!r}")
            elif column not in schema.names:
                raise InvalidArgumentError(f"measure column {column!r} is not in the table {schema.names}")
            elif function != "count":
                require(column, schema.field(column).type, "measure_sum" if function == "sum" else "measure_minmax")
            if (column, function) not in out:
                out.append((column, function))
    return tuple(out)


def _aggregations(measures: Measures) -> list[tuple]:
    return [([], "count_all") if column == "*" else (column, function) for column, function in measures]


def _arrow_name(column: str, function: str) -> str:
    return "count_all" if column == "*" else f"{column}_{function}"


def _group_aggregate(table: pa.Table, group_by: list[str], aggregations: list[tuple]) -> pa.Table:
    """`table.group_by(group_by).aggregate(aggregations)` for every stored type: pyarrow's hash
    kernels have no min/max for durations, so they are aggregated as the int64 counts they are
    and cast back."""
    durations = {f.name: f.type for f in table.schema if pa.types.is_duration(f.type) and f.name not in group_by}
    if durations:
        table = table.cast(pa.schema([f.with_type(pa.int64()) if f.name in durations else f for f in table.schema]))
    grouped = table.group_by(group_by, use_threads=False).aggregate(aggregations)
    for column, function in aggregations:
        if isinstance(column, str) and column in durations and function in ("min", "max"):
            i = grouped.schema.get_field_index(f"{column}_{function}")
            grouped = grouped.set_column(i, f"{column}_{function}", grouped.column(i).cast(durations[column]))
    return grouped


def partial_aggregate(rows: pa.Table, group_by: Sequence[str], measures: Measures) -> pa.Table:
    """One file's (or section's) rows grouped by `group_by`, with the measures' columns named
    by `measure_name`."""
    group_by = list(group_by)
    grouped = _group_aggregate(rows, group_by, _aggregations(measures))
    columns = [grouped.column(g) for g in group_by]
    names = list(group_by)
    for column, function in measures:
        values = grouped.column(_arrow_name(column, function))
        if function in ("count",) or column == "*":
            values = values.cast(pa.int64())
        columns.append(values)
        names.append(measure_name(column, function))
    return pa.Table.from_arrays(columns, names=names)


def combine_partials(partials: list[pa.Table], group_by: Sequence[str], measures: Measures,
                     schema: pa.Schema) -> pa.Table:
    """The answer from per-file partials (each grouped by `group_by` or finer, with the
    needed measure columns): partials folded, groups sorted (nulls last)."""
    group_by = list(group_by)
    names = group_by + [measure_name(c, f) for c, f in measures]
    parts = [p.select(names) for p in partials if p.num_rows]
    if not parts:
        return _empty_result(group_by, measures, schema)
    table = pa.concat_tables(parts, promote_options="permissive")
    folded = _group_aggregate(table, group_by, [(measure_name(c, f), _FOLD[f]) for c, f in measures])
    out = pa.Table.from_arrays(
        [folded.column(g) for g in group_by]
        + [folded.column(f"{measure_name(c, f)}_{_FOLD[f]}") for c, f in measures], names=names)
    if group_by:
        out = out.take(sort_indices(out, [(g, "ascending") for g in group_by], "at_end"))
    return out


def _empty_result(group_by: list[str], measures: Measures, schema: pa.Schema) -> pa.Table:
    fields = [schema.field(g) for g in group_by]
    for column, function in measures:
        dtype = pa.int64() if function == "count" else schema.field(column).type
        if function == "sum" and pa.types.is_integer(dtype):
            dtype = pa.int64() if pa.types.is_signed_integer(dtype) else pa.uint64()
        elif function == "sum" and pa.types.is_floating(dtype):
            dtype = pa.float64()
        fields.append(pa.field(measure_name(column, function), dtype))
    if not group_by:  # SQL: an aggregate over no rows is one row (counts 0, others null)
        return pa.table({f.name: pa.array([0 if f.name.endswith("_count") else None], f.type) for f in fields})
    return pa.schema(fields).empty_table()


def covers(model: AggregateModel, group_by: Sequence[str], measures: Measures, filter_columns: set[str] | None) -> bool:
    """Can `model`'s partials answer this query?  Its grouping must be at least as fine, it
    must have every measure, and the filter may read only its group-by columns (so that the
    filter applies to pre-aggregated rows exactly)."""
    if filter_columns is None or not filter_columns <= set(model.group_by):
        return False
    return set(group_by) <= set(model.group_by) and set(measures) <= set(model.measures)


def model_signature(model: AggregateModel) -> str:
    """A short digest of what a model computes (its grouping and measures, not its name): a
    sidecar named by it is never read for a model redefined under the same name."""
    text = json.dumps([list(model.group_by), [list(m) for m in model.measures]])
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def sidecar_of(data_file: str, model: AggregateModel) -> str:
    """The pre-aggregate file of `data_file` for `model`: ``<file>.agg-<name>-<signature>.parquet``
    beside the data file, listed as one of its extra files (which Paimon's readers ignore, its
    orphan cleaning keeps and its expiry deletes with the file)."""
    return f"{data_file}.agg-{model.name}-{model_signature(model)}.parquet"


def write_preaggregate(rows: pa.Table, model: AggregateModel, path: str | StoredFile) -> dict[str, Any]:
    """Write one data file's pre-aggregate; returns what the manifest keeps of it (with the
    model's signature: `sidecar_of`)."""
    try:
        partial = partial_aggregate(rows, model.group_by, model.measures)
    except (pa.ArrowException, KeyError) as exc:
        raise SchemaMismatchError(f"pre-aggregate {model.name!r} cannot be built: {exc}") from None
    write_parquet(partial, path)
    described: dict[str, Any] = {"rows": partial.num_rows, "source_rows": rows.num_rows,
                                 "signature": model_signature(model)}
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, partial.schema) as writer:
        writer.write_table(partial)
    stream = sink.getvalue()
    if stream.size <= INLINE_MAX_BYTES:
        described["inline"] = base64.b64encode(stream.to_pybytes()).decode("ascii")
    return described


def _inline_partial(inline: Any, path: str | StoredFile) -> pa.Table:
    try:
        return pa.ipc.open_stream(base64.b64decode(inline, validate=True)).read_all()
    except (TypeError, ValueError, binascii.Error, pa.ArrowException) as exc:
        raise CorruptTableError(f"the manifest's copy of pre-aggregate {path} is damaged ({exc})",
                                path=str(path)) from None


def read_partial(path: str | StoredFile, described: Mapping[str, Any], names: list[str],
                 expression: pc.Expression | None, filter_columns: Sequence[str] = ()) -> pa.Table:
    """A stored pre-aggregate's rows that pass the filter (which reads only group-by
    columns), in the columns `names`: from the manifest's copy when it has one (`described`
    is the manifest's entry), else from the sidecar at `path`."""
    columns = list(dict.fromkeys([*names, *filter_columns]))
    if "inline" in described:
        table = _inline_partial(described["inline"], path)
        missing = set(columns) - set(table.column_names)
        if missing:
            raise CorruptTableError(f"the manifest's copy of pre-aggregate {path} lacks columns {sorted(missing)}",
                                    path=str(path))
        table = table.select(columns)
    else:
        try:
            table = read_parquet_table(path, columns=columns)
        except MemoryError:  # out of memory is not a damaged file
            raise
        except StorageError as exc:
            if isinstance(exc, FileNotFoundError) or not isinstance(path, StoredFile):
                raise CorruptTableError(f"pre-aggregate {path} cannot be read ({exc})", path=str(path)) from None
            raise  # an object store's request failed: not a damaged file
        except (OSError, pa.ArrowException) as exc:
            raise CorruptTableError(f"pre-aggregate {path} cannot be read ({exc})", path=str(path)) from None
    return (table.filter(expression) if expression is not None else table).select(names)
