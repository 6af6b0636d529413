"""Replay: re-plan logged queries against the table as it is now, or against a layout simulated
from a sample of its rows, and compare with what they scanned when they ran — the measure of
whether a change of layout or indexes helped (`mergetree replay`)."""
from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import InvalidArgumentError
from ..table import Table
from ..table.advise import IndexSpec, LoggedQuery, draw_sample, read_log, simulate
from ..table.advise.advisor import estimate_ndv, files_after_rewrite
from ..table.curves import STRATEGIES

__all__ = ["QueryReplay", "ReplayResult", "parse_layout", "replay"]


@dataclass
class QueryReplay:
    predicates: str
    logged_files: int | None
    logged_bytes: int | None
    files: float
    bytes: float


@dataclass
class ReplayResult:
    table: str
    layout: str                                  # "current" or the simulated layout
    queries: list[QueryReplay] = field(default_factory=list)
    skipped: int = 0                             # logged without a replayable filter

    @property
    def files(self) -> float:
        return sum(q.files for q in self.queries)

    @property
    def bytes(self) -> float:
        return sum(q.bytes for q in self.queries)

    @property
    def logged_bytes(self) -> int:
        return sum(q.logged_bytes or 0 for q in self.queries)

    @property
    def logged_files(self) -> int:
        return sum(q.logged_files or 0 for q in self.queries)


def parse_layout(text: str) -> tuple[str, list[str]]:
    """'hilbert:a,b' -> ("hilbert", ["a", "b"])."""
    strategy, _, columns = text.partition(":")
    names = [c.strip() for c in columns.split(",") if c.strip()]
    if strategy not in STRATEGIES or not names:
        raise InvalidArgumentError(f"a simulated layout is STRATEGY:COL,... with a strategy of "
                                   f"{', '.join(STRATEGIES)}, like hilbert:a,b; not {text!r}")
    return strategy, names


def _describe(q: LoggedQuery) -> str:
    parts = [f"{c} {k}" for c, k in q.predicates if c]
    if q.order_by:
        parts.append("order by " + ", ".join(f"{c} {d}" for c, d in q.order_by) + f" limit {q.limit}")
    if q.group_by or q.measures:
        parts.append("group by " + (", ".join(q.group_by) or "()"))
    return "; ".join(parts) or "full scan"


def replay(path: str, since: dt.timedelta | dt.datetime | None = None, limit: int | None = 1000,
           layout: str | None = None, bloom: Sequence[str] = (), bitmap: Sequence[str] = (),
           progress: Callable[[int, int], None] | None = None, seed: int = 0) -> ReplayResult:
    """Re-plan up to `limit` logged queries (a uniform sample; None: all).  Without `layout`
    each is planned by the table's own planner on its files and indexes now; with `layout`
    ('hilbert:a,b') on that layout simulated from a sample of the rows, with the table's
    indexes plus `bloom` and `bitmap` columns."""
    table = Table.open(path)
    queries = read_log(table.path, since)
    if limit is not None and len(queries) > limit:
        picked = np.sort(np.random.default_rng(seed).choice(len(queries), size=limit, replace=False))
        queries = [queries[i] for i in picked]
    result = ReplayResult(table.path, layout or "current")
    snapshot = table.latest_snapshot()
    metas = [e.file for e in table.directory.live_files(snapshot).values()] if snapshot else []
    options = table.options
    sim = None
    if layout is not None:
        strategy, columns = parse_layout(layout)
        for column in [*columns, *bloom, *bitmap]:
            if column not in table.schema.names:
                raise InvalidArgumentError(f"column {column!r} is not in the table; columns: {table.schema.names}")
        known = set(table.schema.names)
        wanted = list(dict.fromkeys([*columns, *(c for q in queries for c, _ in q.predicates if c in known),
                                     *(q.order_by[0][0] for q in queries if q.order_by)]))
        sample = draw_sample(table.directory, metas, wanted)
        parts = files_after_rewrite(table.directory, metas, options.target_file_size)
        indexes = IndexSpec(frozenset(options.bloom_columns) | set(bloom),
                            frozenset(options.bitmap_columns) | set(bitmap), options.bloom_fpp)
        sim = simulate(sample, layout, parts, columns, strategy, indexes, estimate_ndv(sample))
        bytes_per_part = sum(m.file_size for m in metas) / parts
        total_rows = sum(m.row_count for m in metas)
    for i, q in enumerate(queries):
        if progress is not None and i % 50 == 0:
            progress(i, len(queries))
        try:
            f = q.filter
        except InvalidArgumentError:
            result.skipped += 1
            continue
        if q.filter_json is None and any(c for c, _ in q.predicates):
            result.skipped += 1  # its filter was not kept (too large, or an expression)
            continue
        if sim is not None:
            if q.is_top_n:
                files = min(sim.top_n_parts(q.order_by, q.limit or 0, total_rows),
                            float(sim.read_probability(f).sum()))
            else:
                files = float(sim.read_probability(f).sum())
            result.queries.append(QueryReplay(_describe(q), q.files_scanned, q.bytes_scanned, files,
                                              files * bytes_per_part))
        else:
            plan = table.plan(f, order_by=list(q.order_by) or None, limit=q.limit if q.order_by else None)
            planned = plan.files
            result.queries.append(QueryReplay(_describe(q), q.files_scanned, q.bytes_scanned, float(len(planned)),
                                              float(sum(m.file_size for m in planned))))
    if progress is not None:
        progress(len(queries), len(queries))
    return result
