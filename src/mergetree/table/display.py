"""How the result objects print in a shell: sizes and moments in the few words a person reads
(`Snapshot`, `ReadPlan`, `TableInfo`, ... keep their reprs to one short line)."""
from __future__ import annotations

import datetime as dt

__all__ = ["count_text", "moment_text", "size_text"]


def size_text(n: float) -> str:
    """A size in bytes as `512 B`, `49.5 KiB`, `1.2 GiB`."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def moment_text(when: int | dt.datetime | None) -> str:
    """Milliseconds since the epoch (or a datetime) as `2026-12-02 13:35:25 UTC`."""
    if when is None:
        return "never"
    if isinstance(when, dt.datetime):
        moment = when.astimezone(dt.timezone.utc) if when.tzinfo else when
    else:
        moment = dt.datetime.fromtimestamp(when / 1000, dt.timezone.utc)
    return moment.strftime("%Y-%m-%d %H:%M:%S") + (" UTC" if moment.tzinfo else "")


def count_text(n: int, noun: str) -> str:
    """`1 file`, `2,000 files`, `3 queries` (English plurals of the nouns the reprs use)."""
    if n == 1:
        return f"{n:,} {noun}"
    return f"{n:,} " + (noun[:-1] + "ies" if noun.endswith("y") else noun + "s")
