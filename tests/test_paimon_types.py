"""`mergetree.paimon` reads on every type of the type policy that Paimon holds: a table written by
pypaimon with one column per such type, read whole and filtered on each column with every filter
the policy allows, against pypaimon's own read of the table and pyarrow."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from paimon_fixtures import needs_pypaimon, pypaimon_read, write_paimon
from typed_data import POLICY_TYPES, comparable, random_array, sql_mask

import mergetree.paimon as mp
from mergetree.table import type_policy

# the stored types a Paimon table can hold (pypaimon has no unsigned, duration or 256-bit types;
# a TIME column keeps milliseconds; large_binary is its BLOB, which needs row tracking)
_PAIMON = {"integer", "float", "bool", "string", "binary", "date", "time", "timestamp", "decimal128", "nested"}
TYPES = [t for t in POLICY_TYPES if t == type_policy.stored_type(t) and type_policy.family_of(t).name in _PAIMON
         and not pa.types.is_unsigned_integer(t) and not pa.types.is_map(t) and not pa.types.is_large_list(t)
         and not pa.types.is_fixed_size_list(t) and t not in (pa.time64("us"), pa.large_binary())]
N = 240


def _probe(column: pa.ChunkedArray) -> list:
    valid = [v for v in column.to_pylist() if v is not None and v == v]
    return sorted(set(valid), key=str)[:2] if valid and not isinstance(valid[0], (list, dict)) else valid[:1]


@needs_pypaimon
def test_every_paimon_type_reads_filters_and_orders(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    columns = {f"c{i}": t for i, t in enumerate(TYPES)}
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False)] + [(n, t) for n, t in columns.items()])
    commits = [pa.table({"id": pa.array(np.arange(c * N // 2, c * N // 2 + N), pa.int64()),
                         **{n: random_array(t, N, rng) for n, t in columns.items()}}, schema=schema)
               for c in range(3)]
    wh, work, name = tmp_path / "wh", tmp_path / "work", "db.types"
    write_paimon(work, wh, name, commits, ["id"], options={"bucket": "2"})
    theirs = pypaimon_read(wh, name, work)
    ours = mp.read(str(wh), name)
    assert comparable(ours.sort_by("id").to_pylist()) == comparable(theirs.cast(ours.schema).sort_by("id").to_pylist())
    for n in columns:
        dtype = ours.schema.field(n).type
        ops: list[tuple] = [(n, "is null"), (n, "is not null")]
        values = _probe(ours.column(n))
        if type_policy.supports(dtype, "filter_eq") and values:
            ops += [(n, "=", values[0]), (n, "in", values), (n, "!=", values[0])]
        if type_policy.supports(dtype, "filter_range") and values:
            ops += [(n, "<", values[-1]), (n, ">=", values[0])]
        for f in ops:
            want = ours.filter(sql_mask(ours.column(n), f[1], f[2] if len(f) == 3 else None))
            got = mp.read(str(wh), name, filter=f)
            assert comparable(got.sort_by("id").to_pylist()) == comparable(want.sort_by("id").to_pylist()), f
        if not type_policy.supports(dtype, "filter_eq"):
            with pytest.raises(Exception, match=repr(n)):
                mp.read(str(wh), name, filter=(n, "=", values[0] if values else 1))
