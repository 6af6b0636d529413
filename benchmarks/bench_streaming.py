"""``mergetree bench --streaming``: change streams (issue 26).

A primary-key table of ``rows`` rows (int64 ``id``, a random int64 ``v``, a float and a short
string) in 4 buckets, written once and fully compacted (snapshot ``a``), then ``commits`` commits
that together change ``change_fraction`` of the keys: nine in ten of the changed keys get new
values, one in ten is deleted, and a few new keys are inserted (snapshot ``b``).  Then:

* ``Table.changes(a, b)``: the net change per key, computed from the files the commits added
  and the changed keys' state at ``a`` — against the way it is done without it: two full reads
  (``Table.read(snapshot=a)``, ``Table.read(snapshot=b)``) and a diff of the two in DuckDB (a full
  outer join on the key, rows that differ).  The change is checked: applied to the rows at ``a``
  it gives the rows at ``b``, and it has as many rows as the DuckDB diff says.
* The write cost of ``changelog-producer = lookup`` (each commit looks up the previous values of
  the keys it writes and keeps exact -U/+U changelog files) against ``none``: the same commits
  written into two tables of the same base, timed.

The Spark pipeline of the workload is ``benchmarks/bench_streaming_spark.py`` (``bench.py`` runs both).

Both look the changed keys' previous rows up in local lookup files of the data files
(``mergetree.table.lookup``), which a process builds the second time it needs a file:
``changes(a, b)`` is the best of the repeats (the lookup files built by the first of them), its
first call (``cold``: no lookup files yet, the files decoded as a read does) is reported beside
it; the lookup writes include the builds (the first iteration's two commits, an upsert and a
delete, read the base files and then build their lookup files), also reported on their own.  The bench keeps its
lookup files in its own directory (unless ``MERGETREE_LOOKUP_DIR`` is set), removed with it.

Targets: changes at least 20x faster than two full reads and a diff; lookup writes at most 1.5x
the time of writes without a changelog.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from mergetree import Table
from mergetree.table.lookup import LOOKUP_DIR_ENV

from . import timing
from .report import compare_tables

__all__ = ["DEFAULT_ROWS", "QUICK_ROWS", "StreamingReport", "format_streaming_results", "run_streaming_bench",
           "streaming_json"]

DEFAULT_ROWS = 10_000_000
QUICK_ROWS = 1_000_000
COMMITS = 10
CHANGE_FRACTION = 0.01
BUCKETS = 4
SEED = 20261125
COLD = "changes(a, b), cold (no lookup files yet)"
FIRST_WRITES = "first two commits, lookup producer (files built)"
FIRST_WRITES_NONE = "first two commits, no producer"
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64()), ("f", pa.float64()), ("s", pa.string())])


@dataclass
class StreamingReport:
    rows: int
    commits: int
    change_fraction: float
    seconds: dict[str, float] = field(default_factory=dict)
    checks: dict[str, str] = field(default_factory=dict)
    changed_rows: int = 0
    total_seconds: float = 0.0

    def ratios(self) -> dict[str, float]:
        s = self.seconds
        return {
            "changes: two full reads + DuckDB diff / changes(a, b)": s["two reads + duckdb diff"] / s["changes(a, b)"],
            "writes: lookup producer / none": s["writes, lookup producer"] / s["writes, no producer"],
            **({"changes, cold: two full reads + DuckDB diff / first changes(a, b)":
                s["two reads + duckdb diff"] / s[COLD]} if COLD in s else {}),
            **({"writes after the first two commits: lookup producer / none":
                (s["writes, lookup producer"] - s[FIRST_WRITES]) / max(s["writes, no producer"] - s[FIRST_WRITES_NONE],
                                                                       1e-9)}
               if FIRST_WRITES in s and FIRST_WRITES_NONE in s else {}),
        }

    def targets(self) -> list[tuple[str, bool]]:
        r = self.ratios()
        return [
            ("changes(a, b) >= 20x two full reads + a diff",
             r["changes: two full reads + DuckDB diff / changes(a, b)"] >= 20),
            ("lookup producer writes <= 1.5x no producer", r["writes: lookup producer / none"] <= 1.5),
            ("answers equal", all(v == "ok" for v in self.checks.values())),
        ]

    @property
    def ok(self) -> bool:
        return all(ok for _, ok in self.targets())


def _base(rows: int, rng: np.random.Generator) -> pa.Table:
    ids = np.arange(rows, dtype=np.int64)
    return pa.table({"id": ids, "v": rng.integers(0, 1 << 40, rows), "f": rng.random(rows),
                     "s": pc.binary_join_element_wise("r", pc.cast(pa.array(ids % 100_003), pa.string()), "")},
                    schema=SCHEMA)


def _commits(rows: int, commits: int, fraction: float, rng: np.random.Generator) -> list[tuple[pa.Table, pa.Table]]:
    """(upserts, deletes) per commit: changed keys split over the commits, a tenth deleted, and
    new keys past the end inserted (a tenth as many as the changed ones)."""
    changed = rng.choice(rows, size=max(int(rows * fraction), commits), replace=False).astype(np.int64)
    fresh = np.arange(rows, rows + max(len(changed) // 10, commits), dtype=np.int64)
    out = []
    for i, (part, new) in enumerate(zip(np.array_split(changed, commits), np.array_split(fresh, commits))):
        deleted = part[: len(part) // 10]
        upserted = np.concatenate([part[len(part) // 10:], new])
        n = len(upserted)
        upserts = pa.table({"id": upserted, "v": rng.integers(0, 1 << 40, n), "f": rng.random(n),
                            "s": pa.array([f"u{i}"] * n)}, schema=SCHEMA)
        out.append((upserts, pa.table({"id": deleted})))
    return out


def _apply(before: pa.Table, change: pa.Table) -> pa.Table:
    """The rows at `a` with a net change applied: -U and -D take a key out, +I and +U put its
    new row in."""
    kinds = change.column("_row_kind")
    gone = pc.is_in(before.column("id"), value_set=change.column("id"))
    kept = before.filter(pc.invert(gone))
    new = change.filter(pc.is_in(kinds, value_set=pa.array(["+I", "+U"]))).select(kept.column_names)
    return pa.concat_tables([kept, new.cast(kept.schema)])


def _duckdb_diff(t: Table, a: int, b: int) -> pa.Table:
    """What a user does without change reads: both snapshots read whole, diffed in DuckDB."""
    import duckdb

    old = t.read(snapshot=a)  # noqa: F841  (read by DuckDB by name)
    new = t.read(snapshot=b)  # noqa: F841
    result = duckdb.sql("""
        select coalesce(n.id, o.id) as id,
               case when o.id is null then '+I' when n.id is null then '-D' else '+U' end as kind
        from old o full outer join new n on o.id = n.id
        where o.id is null or n.id is null or o.v <> n.v or o.f <> n.f or o.s <> n.s
    """).arrow()
    return result.read_all() if isinstance(result, pa.RecordBatchReader) else result  # a reader from duckdb 1.4


def run_streaming_bench(rows: int = DEFAULT_ROWS, commits: int = COMMITS, change_fraction: float = CHANGE_FRACTION,
                        repeat: int = 3, directory: str | None = None) -> StreamingReport:
    started = time.perf_counter()
    root = directory or tempfile.mkdtemp(prefix="mergetree-bench-streaming-")
    os.makedirs(root, exist_ok=True)
    report = StreamingReport(rows, commits, change_fraction)
    rng = np.random.default_rng(SEED)
    own_lookup_files = not os.environ.get(LOOKUP_DIR_ENV)
    if own_lookup_files:
        os.environ[LOOKUP_DIR_ENV] = os.path.join(root, "lookup-files")
    try:
        # the `lookup` changelog comes with the compaction after each write, as Java's does
        none = Table.create(os.path.join(root, "none"), SCHEMA, primary_key="id", buckets=BUCKETS)
        base = _base(rows, rng)
        none.write(base)
        none.compact(full=True)
        del base
        # the lookup table starts from the same files: a copy, its option set after the base
        shutil.copytree(none.path, os.path.join(root, "lookup"))
        lookup = Table.open(os.path.join(root, "lookup"))
        lookup.set_options({"changelog-producer": "lookup"})
        a = none.latest_snapshot().id  # type: ignore[union-attr]
        writes = {"writes, no producer": 0.0, "writes, lookup producer": 0.0}
        first: dict[str, float] = {}
        for upserts, deletes in _commits(rows, commits, change_fraction, rng):
            for name, t in (("writes, no producer", none), ("writes, lookup producer", lookup)):
                seconds = timing.timed(t.write, upserts).seconds + timing.timed(t.delete, deletes).seconds
                writes[name] += seconds
                first.setdefault(name, seconds)
        report.seconds.update(writes)
        # the first lookup writes build the base's lookup files (a cost once per data file)
        report.seconds[FIRST_WRITES] = first["writes, lookup producer"]
        report.seconds[FIRST_WRITES_NONE] = first["writes, no producer"]
        b = none.latest_snapshot().id  # type: ignore[union-attr]

        def best(name: str, function, *args) -> Any:
            result = timing.best_of(function, *args, repeat=repeat)
            report.seconds[name] = result.seconds
            return result.output

        report.seconds[COLD] = timing.timed(lambda: none.changes(a, b).read_all()).seconds
        change = best("changes(a, b)", lambda: none.changes(a, b).read_all())
        diff = best("two reads + duckdb diff", _duckdb_diff, none, a, b)
        lookup_change = best("changes(a, b), lookup producer's changelog", lambda: lookup.changes(a).read_all())
        report.changed_rows = change.num_rows
        report.checks["changes applied to a give b"] = compare_tables(_apply(none.read(snapshot=a), change),
                                                                      none.read(snapshot=b).sort_by("id"), "id")
        keys = change.filter(pc.not_equal(change.column("_row_kind"), "-U")).num_rows
        report.checks["changed keys equal the DuckDB diff's"] = "ok" if keys == diff.num_rows else \
            f"{keys:,} changed keys, DuckDB says {diff.num_rows:,}"
        by_kind = [("id", "ascending"), ("_row_kind", "ascending")]  # a key's -U and +U rows in one order
        report.checks["lookup changelog equals the computed change"] = "ok" if lookup_change.select(
            change.column_names).sort_by(by_kind).equals(change.sort_by(by_kind)) else \
            f"wrong: {lookup_change.num_rows:,} rows against {change.num_rows:,}, or their values differ"
    finally:
        if own_lookup_files:
            os.environ.pop(LOOKUP_DIR_ENV, None)
        if directory is None:
            shutil.rmtree(root, ignore_errors=True)
    report.total_seconds = time.perf_counter() - started
    return report


def format_streaming_results(report: StreamingReport) -> str:
    lines = [f"change streams: {report.rows:,} rows in {BUCKETS} buckets, {report.change_fraction:.0%} of the keys "
             f"changed over {report.commits} commits: {report.changed_rows:,} change rows"]
    for name, seconds in report.seconds.items():
        lines.append(f"  {name:<48} {seconds:8.3f} s")
    for name, ratio in report.ratios().items():
        lines.append(f"  {name:<58} {ratio:7.2f}x")
    for name, ok in report.targets():
        lines.append(f"  target {'met' if ok else 'MISSED'}: {name}")
    for name, check in report.checks.items():
        if check != "ok":
            lines.append(f"  WRONG {name}: {check}")
    return "\n".join(lines)


def streaming_json(report: StreamingReport) -> dict:
    return {"rows": report.rows, "commits": report.commits, "change_fraction": report.change_fraction,
            "changed_rows": report.changed_rows, "seconds": report.seconds, "ratios": report.ratios(),
            "checks": report.checks, "targets": dict(report.targets())}
