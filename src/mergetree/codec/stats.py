"""Column statistics as Paimon's writers keep them in manifests (``SimpleStats``: a min row, a
max row, null counts), under Paimon's stats modes:

- ``none``: no min, max or null count;
- ``counts``: the null count only;
- ``full``: exact min and max;
- ``truncate(n)`` (``metadata.stats-mode``'s default is ``truncate(16)``): strings and binaries
  cut to their first n characters (bytes); the max then has its last character that can be
  incremented incremented, so that it still bounds every value — and where none can be, the
  column keeps no min and max at all (Java's ``TruncateSimpleColStatsCollector``).

A column's mode is ``fields.<column>.stats-mode``, else ``metadata.stats-mode``; columns past
``metadata.stats-keep-first-n-columns`` get ``none``; system fields (``_KEY_...``,
``_SEQUENCE_NUMBER``, ``_VALUE_KIND``) ``truncate(128)`` (Java's ``StatsCollectorFactories``).
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import UnsupportedPaimonFeatureError

__all__ = ["DEFAULT_STATS_MODE", "StatsMode", "bounded", "column_stats", "parse_stats_mode", "stats_modes"]

DEFAULT_STATS_MODE = "truncate(16)"
_TRUNCATE = re.compile(r"TRUNCATE\((\d+)\)")
_SYSTEM_PREFIXES = ("_KEY_",)
_SYSTEM_FIELDS = {"_SEQUENCE_NUMBER", "_VALUE_KIND", "rowkind", "_ROW_ID"}
_MAX_CODE_POINT = 0x10FFFF


@dataclass(frozen=True)
class StatsMode:
    """One column's stats mode: "none", "counts", "full" or "truncate" (with `length`)."""

    kind: str
    length: int = 0

    @property
    def text(self) -> str:
        return f"truncate({self.length})" if self.kind == "truncate" else self.kind


def parse_stats_mode(text: str, option: str = "metadata.stats-mode") -> StatsMode:
    """A stats mode as Java's ``SimpleColStatsCollector.from`` reads it (case-insensitive)."""
    upper = str(text).strip().upper()
    if upper in ("NONE", "COUNTS", "FULL"):
        return StatsMode(upper.lower())
    m = _TRUNCATE.fullmatch(upper)
    if m is not None and int(m.group(1)) > 0:
        return StatsMode("truncate", int(m.group(1)))
    raise UnsupportedPaimonFeatureError(f"Paimon option {option!r} = {text!r}: a stats mode is none, counts, full "
                                        f"or truncate(n) with n > 0")


def _is_system(name: str) -> bool:
    return name.startswith(_SYSTEM_PREFIXES) or name in _SYSTEM_FIELDS


def stats_modes(options: Mapping[str, str], fields: Sequence[str]) -> list[StatsMode]:
    """Each field's stats mode, as Java's ``StatsCollectorFactories.createStatsFactories``."""
    default = parse_stats_mode(options.get("metadata.stats-mode", DEFAULT_STATS_MODE))
    try:
        keep = int(options.get("metadata.stats-keep-first-n-columns", "-1"))
    except ValueError:
        raise UnsupportedPaimonFeatureError(
            f"Paimon option 'metadata.stats-keep-first-n-columns' = "
            f"{options.get('metadata.stats-keep-first-n-columns')!r}: not an integer") from None
    out, counted = [], 0
    for name in fields:
        key = f"fields.{name}.stats-mode"
        if key in options:
            out.append(parse_stats_mode(options[key], key))
            counted += 1
        elif _is_system(name):
            out.append(StatsMode("truncate", 128))
        else:
            out.append(StatsMode("none") if 0 <= keep <= counted else default)
            counted += 1
    return out


def _truncate_max_text(value: str, length: int) -> str | None:
    if len(value) <= length:
        return value
    chars = list(value[:length])
    for i in range(length - 1, -1, -1):
        nxt = ord(chars[i]) + 1
        if 0xD800 <= nxt <= 0xDFFF:
            nxt = 0xE000  # past the surrogates: still above, and encodable as UTF-8
        if nxt <= _MAX_CODE_POINT:
            return "".join(chars[:i]) + chr(nxt)
    return None


def _truncate_max_bytes(value: bytes, length: int) -> bytes | None:
    if len(value) <= length:
        return value
    cut = bytearray(value[:length])
    for i in range(length - 1, -1, -1):
        if cut[i] != 0xFF:
            cut[i] += 1
            return bytes(cut[:i + 1])
    return None


def bounded(lo: Any, hi: Any, nulls: int, mode: StatsMode) -> tuple[Any, Any, int | None]:
    """A column's exact (min, max, null count) as `mode` keeps them.  Truncating the exact max
    gives what Java's collector gives folding value by value: it fails for some value only if
    it fails for the max, which starts with every value's prefix that could exceed it."""
    if mode.kind == "none":
        return None, None, None
    if mode.kind == "counts" or lo is None or hi is None:
        return None, None, nulls
    if mode.kind == "truncate" and isinstance(lo, (str, bytes)):
        n = mode.length
        hi = _truncate_max_text(hi, n) if isinstance(hi, str) else _truncate_max_bytes(hi, n)
        if hi is None:  # no upper bound within n: Java keeps neither bound
            return None, None, nulls
        lo = lo[:n]
    return lo, hi, nulls


def column_stats(column: pa.Array | pa.ChunkedArray, mode: StatsMode) -> tuple[Any, Any, int | None]:
    """(min, max, null count) of a column of atomic values under `mode`, as Python values
    (`binary_row.encode_row` takes them); None where the mode keeps nothing."""
    if mode.kind == "none":
        return None, None, None
    nulls = column.null_count
    if mode.kind == "counts" or nulls == len(column):
        return None, None, nulls
    t = column.type
    if pa.types.is_dictionary(t):
        column = column.cast(t.value_type)
        t = t.value_type
    if pa.types.is_floating(t):
        # Java's Double.compareTo orders NaN above everything: NaN is the max if any is present
        finite = pc.drop_null(column)
        has_nan = pc.any(pc.is_nan(finite)).as_py()
        lo_hi = pc.min_max(pc.filter(finite, pc.invert(pc.is_nan(finite))))
        lo, hi = lo_hi["min"].as_py(), lo_hi["max"].as_py()
        if has_nan:
            hi = float("nan")
            lo = float("nan") if lo is None else lo
        return lo, hi, nulls
    lo_hi = pc.min_max(column)
    return bounded(lo_hi["min"].as_py(), lo_hi["max"].as_py(), nulls, mode)
