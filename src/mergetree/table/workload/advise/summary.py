"""What the query log says about a table's workload: which columns are filtered, how, together
or apart; which orderings Top-N queries use; which groupings aggregate queries use.

Pure counting over log rows (dicts with the query log's columns), so that every rule of the
advisor can be tested on a synthetic log."""
from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ... import filters as flt
from ...durations import since_moment
from ..querylog import filter_from_json, read_rows

__all__ = ["CLUSTER_KINDS", "EQUALITY_KINDS", "LoggedQuery", "Workload", "read_log", "summarize"]

# predicates that min/max statistics of tight files can answer
CLUSTER_KINDS = frozenset({"eq", "in", "range", "like_prefix"})
# predicates a Bloom filter or a bitmap can answer
EQUALITY_KINDS = frozenset({"eq", "in"})


@dataclass
class LoggedQuery:
    """One query of the log, as the advisor uses it."""

    predicates: tuple[tuple[str, str], ...] = ()
    filter_json: str | None = None
    order_by: tuple[tuple[str, str], ...] = ()
    limit: int | None = None
    group_by: tuple[str, ...] = ()
    measures: tuple[tuple[str, str], ...] = ()
    bytes_scanned: int | None = None
    bytes_total: int | None = None
    files_scanned: int | None = None
    files_total: int | None = None
    ts: dt.datetime | None = None

    @property
    def filter(self) -> flt.Filter:
        return filter_from_json(self.filter_json)

    @property
    def cluster_columns(self) -> frozenset[str]:
        return frozenset(c for c, k in self.predicates if c and k in CLUSTER_KINDS)

    @property
    def is_top_n(self) -> bool:
        return bool(self.order_by) and self.limit is not None

    @property
    def is_aggregate(self) -> bool:
        return bool(self.group_by) or bool(self.measures)

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> LoggedQuery:
        return cls(tuple((p["column"], p["kind"]) for p in row.get("predicates") or ()), row.get("filter"),
                   tuple((o["column"], o["direction"]) for o in row.get("order_by") or ()), row.get("limit"),
                   tuple(row.get("group_by") or ()),
                   tuple((m["column"], m["function"]) for m in row.get("measures") or ()),
                   row.get("bytes_scanned"), row.get("bytes_total"), row.get("files_scanned"),
                   row.get("files_total"), row.get("ts"))


@dataclass
class Workload:
    """Counts over the logged queries (shares are of all `total` queries unless named otherwise)."""

    queries: list[LoggedQuery]
    total: int = 0
    filtering: int = 0                                           # queries with a predicate clustering can use
    filtered: Counter = field(default_factory=Counter)           # column -> queries filtering it (cluster kinds)
    equality: Counter = field(default_factory=Counter)           # column -> queries with = / IN on it
    ranges: Counter = field(default_factory=Counter)             # column -> queries with a range on it
    together: Counter = field(default_factory=Counter)           # frozenset of filtered columns -> queries
    orderings: Counter = field(default_factory=Counter)          # Top-N order (tuple of (col, dir)) -> queries
    groupings: Counter = field(default_factory=Counter)          # group-by tuple -> queries
    measures: dict[tuple[str, ...], Counter] = field(default_factory=dict)  # group-by -> measure -> queries

    def share(self, column: str) -> float:
        """Of the filtering queries, the share that filter `column` (cluster kinds)."""
        return self.filtered[column] / self.filtering if self.filtering else 0.0

    def share_with(self, column: str, other: str) -> float:
        """Of the queries filtering `other`, the share that also filter `column`."""
        with_other = sum(n for cols, n in self.together.items() if other in cols)
        both = sum(n for cols, n in self.together.items() if other in cols and column in cols)
        return both / with_other if with_other else 0.0

    @property
    def top_n(self) -> int:
        return sum(self.orderings.values())

    @property
    def aggregates(self) -> int:
        return sum(self.groupings.values())


def summarize(queries: Iterable[LoggedQuery]) -> Workload:
    out = Workload(list(queries))
    out.total = len(out.queries)
    for q in out.queries:
        columns = q.cluster_columns
        if columns:
            out.filtering += 1
            out.filtered.update(columns)
            out.together[columns] += 1
        out.equality.update({c for c, k in q.predicates if c and k in EQUALITY_KINDS})
        out.ranges.update({c for c, k in q.predicates if c and k in ("range", "like_prefix")})
        if q.is_top_n:
            out.orderings[q.order_by] += 1
        if q.is_aggregate:
            out.groupings[q.group_by] += 1
            out.measures.setdefault(q.group_by, Counter()).update(set(q.measures))
    return out


def read_log(table_path: str, since: dt.timedelta | dt.datetime | str | None = None,
             sources: Sequence[str] | None = None) -> list[LoggedQuery]:
    """The logged queries of a table (this process's written first; the newest first is not
    promised), optionally only those newer than `since` (an age or a moment, as
    `durations.parse_since` reads it) and from `sources`.  A damaged part of the log is left out
    with a warning (`querylog.read_rows`)."""
    f: list = []
    moment = since_moment(since)
    if moment is not None:
        f.append(("ts", ">=", moment))
    if sources:
        f.append(("source", "in", list(sources)))
    columns = ["predicates", "filter", "order_by", "limit", "group_by", "measures", "bytes_scanned", "bytes_total",
               "files_scanned", "files_total", "ts"]
    rows: pa.Table = read_rows(table_path, columns, f or None)
    if rows.num_rows and "ts" in rows.column_names:
        rows = rows.take(pc.sort_indices(rows, [("ts", "ascending")]))
    return [LoggedQuery.from_row(r) for r in rows.to_pylist()]
