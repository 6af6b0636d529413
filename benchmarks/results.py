"""What the benchmarks share about answers and results: comparing a reader's rows with the
expected ones, and results made ready for JSON."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["compare_tables", "json_ready"]


def compare_tables(got: pa.Table, expected: pa.Table, key: str) -> str:
    """'ok' when `got` (any row order, any extra columns) holds exactly the rows of `expected`,
    which is sorted by `key`; otherwise what differs, starting with "wrong:"."""
    if got.num_rows != expected.num_rows:
        return f"wrong: {got.num_rows:,} rows, expected {expected.num_rows:,}"
    names = expected.schema.names
    missing = [c for c in names if c not in got.column_names]
    if missing:
        return f"wrong: no column(s) {missing}"
    got = got.select(names)
    got = got.take(pc.sort_indices(got, [(key, "ascending")]))
    for name in names:
        want = expected.column(name).combine_chunks()
        have = got.column(name).combine_chunks()
        if have.type != want.type:
            have = pc.cast(have, want.type)
        if not have.equals(want):
            where = np.flatnonzero(~pc.fill_null(pc.equal(have, want), False).to_numpy(zero_copy_only=False))
            first = int(where[0]) if len(where) else 0
            what = "the key set" if name == key else f"values of {name!r}"
            return f"wrong: {what} differ ({len(where):,} rows, first at {key} {want[first].as_py()})"
    return "ok"


def json_ready(values: dict) -> dict:
    """NaN (not measured) as null: JSON has no NaN."""
    return {k: None if isinstance(v, float) and v != v else v for k, v in values.items()}
