"""A deliberately simple pure-Python model of `mergetree.merge`.

Sort every row by (key, sequence, run), group by key, and fold each group
row by row with the engine's rules.  Sequential folds mirror Paimon's
aggregators, including Java-style wrapping integer arithmetic.
"""
from __future__ import annotations

import math
import struct
from decimal import Decimal
from itertools import groupby
from typing import Any

RETRACT = {1, 3}
INT_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64,
            "uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64}


class ReferenceError_(Exception):
    """The model's verdict that the merge must fail."""


def order_key(value: Any) -> tuple:
    """Ascending, nulls first; floats in total order (-0.0 < 0.0, NaN last)."""
    if value is None:
        return (0,)
    if isinstance(value, float):
        if math.isnan(value):
            return (1, 1)
        return (1, 0, value, math.copysign(1.0, value))
    if isinstance(value, str):
        return (1, value.encode("utf-8"))  # Arrow compares UTF-8 bytes
    return (1, value)


def row_key(row: dict, key: list[str]) -> tuple:
    return tuple(order_key(row[k]) for k in key)


def wrap(value: int, type_name: str) -> int:
    bits = INT_BITS[type_name]
    value &= (1 << bits) - 1
    if not type_name.startswith("uint") and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def java_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def merge_model(runs: list[list[dict]], key: list[str], *, sequence: str | None = None,
                kind: str | None = None, engine: str = "deduplicate",
                aggregations: dict[str, str] | None = None, keep_deletes: bool = False,
                column_types: dict[str, str] | None = None, columns: list[str] | None = None) -> list[dict]:
    """The rows `merge` must return, in order."""
    tagged = []
    for r, run in enumerate(runs):
        for row in run:
            seq = row[sequence] if sequence else 0
            tagged.append((row_key(row, key), seq, r, row))
    tagged.sort(key=lambda t: (t[0], t[1], t[2]))
    if engine == "none":
        return [t[3] for t in tagged]
    if engine == "first-row" and kind and any(t[3][kind] in RETRACT for t in tagged):
        raise ReferenceError_("first-row met a retraction")
    out = []
    for _, grp in groupby(tagged, key=lambda t: t[0]):
        members = [t[3] for t in grp]
        row = _fold(members, key, sequence, kind, engine, aggregations or {}, keep_deletes,
                    column_types or {}, columns or list(members[0]))
        if row is not None:
            out.append(row)
    return out


def _is_retract(row: dict, kind: str | None) -> bool:
    return kind is not None and row[kind] in RETRACT


def _fold(members, key, sequence, kind, engine, aggregations, keep_deletes, types, columns):
    newest = members[-1]
    if engine == "deduplicate":
        if _is_retract(newest, kind) and not keep_deletes:
            return None
        return newest
    if engine == "first-row":
        return members[0]
    if len(members) == 1:  # one version passes through unchanged (Paimon's reducer)
        return None if _is_retract(newest, kind) and not keep_deletes else newest
    system = set(key) | {sequence, kind}
    out = {c: newest[c] for c in columns if c in key or c == sequence}
    if engine == "partial-update":
        start = 0
        for i, m in enumerate(members):
            if kind and m[kind] == 3:
                start = i + 1
        considered = [m for m in members[start:] if not _is_retract(m, kind)]
        live = bool(considered)
        if not live and not keep_deletes:
            return None
        for c in columns:
            if c in system:
                continue
            values = [m[c] for m in considered if m[c] is not None]
            out[c] = values[-1] if values else None
        if kind:
            out[kind] = 0 if live else 3
        return {c: out[c] for c in columns}
    # aggregate
    for c in columns:
        if c in system:
            continue
        fn = aggregations.get(c, "last_non_null_value")
        out[c] = _aggregate(fn, [(m[c], _is_retract(m, kind)) for m in members], types.get(c))
    if kind:
        out[kind] = 0
    return {c: out[c] for c in columns}


def _aggregate(fn: str, values: list[tuple[Any, bool]], type_name: str | None) -> Any:
    if fn not in ("sum", "product", "last_value", "last_non_null_value") and any(r for _, r in values):
        raise ReferenceError_(f"{fn} cannot retract")
    present = [v for v, _ in values if v is not None]
    if fn in ("sum", "product"):
        acc = None
        for v, retract in values:
            if v is None:
                continue
            if acc is None:
                acc = 1 if fn == "product" else 0
                if isinstance(v, float):
                    acc = float(acc)
            if isinstance(v, float):
                if fn == "sum":
                    acc = acc - v if retract else acc + v
                else:
                    acc = acc / v if retract else acc * v
            elif isinstance(v, Decimal):
                acc = acc + v
            else:
                if fn == "sum":
                    acc = wrap(acc - v if retract else acc + v, "int64")
                else:
                    acc = java_div(acc, v) if retract else wrap(acc * v, "int64")
        if acc is not None and type_name in INT_BITS:
            acc = wrap(acc, type_name)
        if acc is not None and type_name == "float":  # float32: accumulate wide, round once
            acc = float(struct.unpack("f", struct.pack("f", acc))[0])
        return acc
    if fn == "min":
        return min(present) if present else None
    if fn == "max":
        return max(present) if present else None
    if fn == "bool_and":
        return all(present) if present else None
    if fn == "bool_or":
        return any(present) if present else None
    if fn == "first_value":
        return values[0][0]
    if fn == "last_value":
        acc = None
        for v, retract in values:
            acc = None if retract else v
        return acc
    if fn == "first_non_null_value":
        return present[0] if present else None
    if fn == "last_non_null_value":
        acc = None
        for v, retract in values:
            if v is not None:
                acc = None if retract else v
        return acc
    if fn == "listagg":
        return ",".join(present) if present else None
    raise AssertionError(fn)
