"""Replay: re-plan logged queries against the table as it is now, or against a layout simulated
from a sample of its rows, and compare — the measure of whether a change of layout or indexes
helped (`mergetree replay`).

Two comparisons, each between like and like:

* with what the queries scanned when they ran — only for the queries that carry a measured
  cost (`QueryReplay.measured`).  Queries imported from a SQL history (`mergetree queries
  import`) never ran here and carry no bytes: they are replayed, and left out of this
  comparison rather than counted as having scanned nothing;
* with a simulated layout (`layout=`): against the table's current files simulated on the same
  row sample (`ReplayResult.baseline_files`, `baseline_bytes`), so that both sides carry the
  same sampling bias, for every replayed query, imported or not.
"""
from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..errors import InvalidArgumentError
from ..iceberg import IcebergTable, is_iceberg_location
from ..iceberg import open as open_iceberg
from ..table import Table
from ..table.display import count_text, size_text
from ..table.levers.curves import STRATEGIES
from ..table.workload.advise import IndexSpec, LoggedQuery, draw_sample, read_log, simulate
from ..table.workload.advise.advisor import estimate_ndv, files_after_rewrite, query_cost, replay_sample
from ..table.workload.advise.target import as_target

__all__ = ["QueryReplay", "ReplayResult", "parse_layout", "replay"]


@dataclass
class QueryReplay:
    predicates: str
    logged_files: int | None         # None: not measured (an imported query never ran here)
    logged_bytes: int | None
    files: float
    bytes: float
    baseline_files: float | None = None   # a simulated replay: the current files simulated on the same sample
    baseline_bytes: float | None = None

    @property
    def measured(self) -> bool:
        """Whether the log holds what the query scanned when it ran."""
        return self.logged_bytes is not None and self.logged_files is not None


@dataclass
class ReplayResult:
    table: str
    layout: str                                  # "current" or the simulated layout
    queries: list[QueryReplay] = field(default_factory=list)
    skipped: int = 0                             # logged without a replayable filter
    columns_left_out: dict[str, str] = field(default_factory=dict)   # simulated replay: column -> why

    @property
    def files(self) -> float:
        return sum(q.files for q in self.queries)

    @property
    def bytes(self) -> float:
        return sum(q.bytes for q in self.queries)

    @property
    def measured(self) -> list[QueryReplay]:
        """The replayed queries that carry what they scanned when they ran."""
        return [q for q in self.queries if q.measured]

    @property
    def unmeasured(self) -> int:
        """Replayed queries without a measured cost (imported from a SQL history)."""
        return len(self.queries) - len(self.measured)

    @property
    def logged_bytes(self) -> int:
        """What the measured queries scanned when they ran."""
        return sum(q.logged_bytes or 0 for q in self.measured)

    @property
    def logged_files(self) -> int:
        return sum(q.logged_files or 0 for q in self.measured)

    @property
    def versus_logged(self) -> float | None:
        """Bytes of the measured queries now (or simulated) / what they scanned when they ran;
        None when no replayed query was measured (an imported history) or they scanned nothing."""
        measured = self.measured
        logged = sum(q.logged_bytes or 0 for q in measured)
        return sum(q.bytes for q in measured) / logged if measured and logged else None

    @property
    def baseline_bytes(self) -> float | None:
        """A simulated replay: the bytes of the same queries on the current files simulated on
        the same sample."""
        if not self.queries or any(q.baseline_bytes is None for q in self.queries):
            return None
        return sum(q.baseline_bytes or 0.0 for q in self.queries)

    @property
    def baseline_files(self) -> float | None:
        if not self.queries or any(q.baseline_files is None for q in self.queries):
            return None
        return sum(q.baseline_files or 0.0 for q in self.queries)

    @property
    def versus_baseline(self) -> float | None:
        """A simulated replay: its bytes / the current files' simulated bytes."""
        baseline = self.baseline_bytes
        return self.bytes / baseline if baseline else None

    def __repr__(self) -> str:
        skipped = f", {self.skipped:,} skipped" if self.skipped else ""
        replayed = count_text(len(self.queries), "query")
        return (f"ReplayResult({self.table!r}, layout {self.layout}: {replayed} replayed, "
                f"{self.files:,.1f} files, {size_text(self.bytes)}{skipped})")

    def summary(self) -> str:
        """One or two lines: how the replay compares with like figures."""
        n = len(self.queries)
        if n == 0:
            return "no replayable queries logged"
        lines = []
        if self.layout != "current" and self.versus_baseline is not None:
            lines.append(f"simulated {self.layout}: {self.versus_baseline:.1%} of the bytes the same {n:,} queries "
                         f"read on the current files simulated on the same sample")
        ratio = self.versus_logged
        measured = len(self.measured)
        if ratio is not None:
            lines.append(f"bytes scanned: {ratio:.1%} of what {measured:,} of the queries scanned when they ran"
                         + (f" ({self.unmeasured:,} imported queries carry no measured bytes and are left out of "
                            f"this comparison)" if self.unmeasured else ""))
        elif self.unmeasured:
            lines.append(f"{self.unmeasured:,} replayed queries carry no measured bytes (imported, never run here): "
                         f"nothing to compare with as run"
                         + ("" if self.layout != "current" else "; replay a simulated layout (--layout) to compare "
                                                                 "layouts with each other"))
        return "\n".join(lines)


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


def _measured(value: int | None) -> int | None:
    """A logged cost, or None when the query never ran here (imported queries carry none, or 0
    from older imports that wrote zeros)."""
    return value if value else None


def replay(path: str, since: dt.timedelta | dt.datetime | None = None, limit: int | None = 1000,
           layout: str | None = None, bloom: Sequence[str] = (), bitmap: Sequence[str] = (),
           progress: Callable[[int, int], None] | None = None, seed: int = 0) -> ReplayResult:
    """Re-plan up to `limit` logged queries (a uniform sample, the same for the same log; None:
    all).  Without `layout` each is planned by the table's own planner on its files and indexes
    now; with `layout` ('hilbert:a,b') on that layout simulated from a sample of the rows (drawn
    with `seed`), with the table's indexes plus `bloom` and `bitmap` columns, next to the current
    files simulated on the same sample.  An Iceberg table (``iceberg://...``) is planned by
    pyiceberg's scan planning (an ORDER BY ... LIMIT as its filter alone: no Top-N there)."""
    table: Table | IcebergTable
    if is_iceberg_location(path):
        table = open_iceberg(path)
        metas = table.data_files()
    else:
        table = Table.open(path).at()  # the engine's view (a Paimon table's too)
        snapshot = table.latest_snapshot()
        metas = [e.file for e in table.directory.live_files(snapshot).values()] if snapshot else []
    queries = read_log(table.path, since)
    if limit is not None:
        queries = replay_sample(queries, limit)
    result = ReplayResult(table.path, layout or "current")
    options = table.options
    sim = baseline = None
    total_rows = sum(m.row_count for m in metas)
    if layout is not None:
        strategy, columns = parse_layout(layout)
        for column in [*columns, *bloom, *bitmap]:
            if column not in table.schema.names:
                raise InvalidArgumentError(f"column {column!r} is not in the table; columns: {table.schema.names}")
        known = set(table.schema.names)
        wanted = list(dict.fromkeys([*columns, *(c for q in queries for c, _ in q.predicates if c in known),
                                     *(q.order_by[0][0] for q in queries if q.order_by and q.order_by[0][0] in known)]))
        target = as_target(table if isinstance(table, IcebergTable) else table.directory)
        sample = draw_sample(target, metas, wanted, seed=seed)
        unordered = [c for c in columns if c in sample.skipped]
        if unordered:
            raise InvalidArgumentError(f"cannot simulate {layout!r}: {sample.skipped[unordered[0]]}")
        result.columns_left_out = dict(sample.skipped)
        parts = files_after_rewrite(metas, options.target_file_size, target.layout_group)
        indexes = IndexSpec(frozenset(options.bloom_columns) | set(bloom),
                            frozenset(options.bitmap_columns) | set(bitmap), options.bloom_fpp)
        ndv = estimate_ndv(sample)
        sim = simulate(sample, layout, parts, columns, strategy, indexes, ndv)
        baseline = simulate(sample, "current", len(metas), None, indexes=IndexSpec(
            frozenset(options.bloom_columns), frozenset(options.bitmap_columns), options.bloom_fpp), ndv=ndv)
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
        logged_files, logged_bytes = _measured(q.files_scanned), _measured(q.bytes_scanned)
        if logged_files is None or logged_bytes is None:
            logged_files = logged_bytes = None
        if sim is not None and baseline is not None:
            files, size = query_cost(sim, q, f, total_rows)
            base_files, base_bytes = query_cost(baseline, q, f, total_rows)
            result.queries.append(QueryReplay(_describe(q), logged_files, logged_bytes, files, size,
                                              base_files, base_bytes))
        else:
            planned = table.plan(f) if isinstance(table, IcebergTable) else table.plan(
                f, order_by=list(q.order_by) or None, limit=q.limit if q.order_by else None).files
            result.queries.append(QueryReplay(_describe(q), logged_files, logged_bytes, float(len(planned)),
                                              float(sum(m.file_size for m in planned))))
    if progress is not None:
        progress(len(queries), len(queries))
    return result

