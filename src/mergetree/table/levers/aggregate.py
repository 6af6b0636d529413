"""Aggregate queries (`Table.aggregate`): GROUP BY with sum/count/min/max, answered from
pre-aggregates where a declared model covers the query and the file's rows are final, and from
a scan (merged, for primary-key tables) everywhere else.  See `preaggregates` for how partials
combine."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from ...errors import InvalidArgumentError
from .. import filters as flt
from ..directory import TableDirectory
from ..files import DataFileMeta
from ..objects import StoredFile
from ..options import AggregateModel
from ..read import BucketPlan, ReadPlan, ReadStats, file_filter, plan_read, read_bucket
from .preaggregates import (
    Measures,
    combine_partials,
    covers,
    measure_name,
    model_signature,
    normalize_measures,
    partial_aggregate,
    read_partial,
)

__all__ = ["aggregate", "choose_model", "stored_preaggregate"]


def choose_model(directory: TableDirectory, group_by: Sequence[str], measures: Measures,
                 f: flt.Filter) -> AggregateModel | None:
    """The declared model that can answer the query (the one with the fewest group-by
    columns, then by name), or None."""
    columns = flt.columns_of(f)
    fitting = [m for m in directory.options.aggregate_models.values() if covers(m, group_by, measures, columns)]
    return min(fitting, key=lambda m: (len(m.group_by), m.name)) if fitting else None


def _units(directory: TableDirectory, bucket: BucketPlan) -> list[tuple[list, DataFileMeta | None]]:
    """(section to read, the single final file it is, if it is one)."""
    out: list[tuple[list, DataFileMeta | None]] = []
    for section in bucket.sections:
        if not directory.schema.has_primary_key:
            out += [([run], run[0]) for run in section]  # append files are all final
        elif len(section) == 1 and len(section[0]) == 1:
            out.append((section, section[0][0]))  # nothing overlaps it: its rows are final
        else:
            out.append((section, None))
    return out


def stored_preaggregate(directory: TableDirectory, meta: DataFileMeta,
                        model: AggregateModel) -> tuple[str | StoredFile, dict[str, Any]] | None:
    """Where a file's pre-aggregate of `model` is, and what its entry says of it; None when it
    has none, or one built for another definition of the model (never read: stale)."""
    described = meta.preaggregates().get(model.name)
    if described is None or described.get("signature", model_signature(model)) != model_signature(model):
        return None
    if meta.origin is None:  # a file no Paimon manifest describes: none is kept beside it
        return None
    return meta.origin.extra_source(described["file"]), described


def aggregate(directory: TableDirectory, group_by: Any, measures: Mapping[str, Any], filter: flt.Filter,
              snapshot: Any, use_preaggregates: bool = True) -> tuple[pa.Table, ReadPlan, ReadStats]:
    """The grouped aggregates, the plan, and what the read did."""
    schema = directory.schema.schema
    groups = [group_by] if isinstance(group_by, str) else list(group_by or [])
    if not all(isinstance(g, str) and g in schema.names for g in groups) or len(set(groups)) != len(groups):
        raise InvalidArgumentError(f"group_by must be distinct column names of the table, not {group_by!r}")
    wanted = normalize_measures(measures, schema)
    f = flt.normalize(filter, schema)
    model = choose_model(directory, groups, wanted, f) if use_preaggregates else None
    plan = plan_read(directory, f, snapshot)
    stats = ReadStats(plan.files_total, plan.bytes_total)
    expression = flt.to_expression(f, schema)
    keys = file_filter(directory, f)
    columns = list(dict.fromkeys(groups + [c for c, _ in wanted if c != "*"]))
    partial_names = groups + [measure_name(c, fn) for c, fn in wanted]
    partials = []
    for bucket in plan.buckets:
        for section, final in _units(directory, bucket):
            # a pre-aggregate counts every row of its file: not one whose deletion vector removed some
            stored = stored_preaggregate(directory, final, model) if model is not None and final is not None \
                and not final.deleted_rows else None
            if stored is not None and final is not None:
                partials.append(read_partial(*stored, partial_names, expression, sorted(flt.columns_of(f) or ())))
                plan.steps["pre-aggregate"].add([final])
                stats.used_preaggregates += 1
                continue
            rows = pa.Table.from_batches(
                list(read_bucket(directory, bucket, columns or schema.names[:1], expression, keys, stats, [section])),
                schema=pa.schema([schema.field(c) for c in (columns or schema.names[:1])]))
            partials.append(partial_aggregate(rows, groups, wanted))
    result = combine_partials(partials, groups, wanted, schema)
    stats.rows_out = result.num_rows
    return result, plan, stats
