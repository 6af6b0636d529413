"""``mergetree bench --engines``: a selective query through Polars, DuckDB and DataFusion, with
the engine's projection and filter pushed into the table's scan against the same query over
the whole table's Arrow stream (issue 27).

The workload: a primary-key table of ``rows`` rows (int64 key ``id``, a string, a date and two
int64 payload columns), written in ``COMMITS`` write-only commits (so reads merge ``COMMITS``
sorted runs): each commit adds a new, higher range of keys and updates ``UPDATE_FRACTION`` of
the keys written before (time-ordered keys, the common case).  The query asks for 0.1% of the
rows by a key range (``SELECT id, v FROM t WHERE id BETWEEN lo AND hi``, ``lo`` in the middle
of the table):

* pushdown: ``mergetree.polars.scan_table(t).filter(...).select(...)``,
  ``mergetree.duckdb.register(con, "t", t)`` + the SQL, ``mergetree.datafusion.register`` +
  ``mergetree.datafusion.sql``: the key range prunes files and row groups, only the matching
  rows are merged;
* no pushdown: the engine over ``Table.scan()`` (an Arrow ``RecordBatchReader``, the
  PyCapsule stream every engine reads): the whole table read and merged, the engine filtering.

Every answer is checked against ``Table.read(columns, filter)``.  Target (issue 27): the pushed
query at least 10x faster than the one without pushdown, for Polars and DuckDB.
"""
from __future__ import annotations

import datetime as dt
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

import mergetree

from .timing import best_of

__all__ = ["COMMITS", "DEFAULT_ROWS", "QUICK_ROWS", "TARGET", "EngineResult", "EnginesReport",
           "format_engines_results", "run_engines_bench"]

DEFAULT_ROWS = 4_000_000
QUICK_ROWS = 2_000_000
COMMITS = 4
UPDATE_FRACTION = 0.05
SELECTIVITY = 0.001
TARGET = 10.0
SEED = 27


@dataclass
class EngineResult:
    engine: str
    pushdown_seconds: float
    full_seconds: float
    rows: int
    files_read: int | None      # pushdown: the files the scan read (the table's last_read)
    files_total: int | None
    check: str                  # "ok" or what differed

    @property
    def ratio(self) -> float:
        return self.full_seconds / self.pushdown_seconds if self.pushdown_seconds > 0 else float("inf")


@dataclass
class EnginesReport:
    rows: int
    query: str
    results: list[EngineResult] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return all(r.check == "ok" for r in self.results) and all(
            r.ratio >= TARGET for r in self.results if r.engine in ("polars", "duckdb"))


def _commits(rows: int, rng: np.random.Generator) -> list[pa.Table]:
    per = rows // COMMITS
    out = []
    for c in range(COMMITS):
        new = np.arange(c * per, (c + 1) * per, dtype=np.int64)
        if c:
            old = np.sort(rng.choice(c * per, int(c * per * UPDATE_FRACTION), replace=False)).astype(np.int64)
            new = np.concatenate([old, new])
        n = len(new)
        out.append(pa.table({
            "id": new,
            "s": pa.array(np.char.add("s", (new % 1000).astype(str)).astype(object)),
            "d": pa.array((dt.date(2020, 1, 1).toordinal() - 719163 + new % 3650).astype(np.int32), pa.date32()),
            "v": rng.integers(0, 1_000_000, n, dtype=np.int64),
            "w": np.full(n, c, dtype=np.int64),
        }))
    return out


def _checksum(table: pa.Table) -> tuple[int, int, int]:
    ids = table.column("id").to_numpy()
    return len(ids), int(ids.sum()), int(table.column("v").to_numpy().sum())


def run_engines_bench(rows: int = DEFAULT_ROWS, repeat: int = 3, workdir: str | None = None) -> EnginesReport:
    import polars as pl

    import mergetree.polars as mpl

    started = time.perf_counter()
    root = Path(tempfile.mkdtemp(prefix="mergetree-engines-", dir=workdir))
    try:
        schema = pa.schema([("id", pa.int64()), ("s", pa.string()), ("d", pa.date32()), ("v", pa.int64()),
                            ("w", pa.int64())])
        table = mergetree.Table.create(root / "t", schema, primary_key=["id"], options={"write-only": "true"})
        for commit in _commits(rows, np.random.default_rng(SEED)):
            table.write(commit)
        width = max(1, int(rows * SELECTIVITY))
        lo = rows // 2
        hi = lo + width - 1
        query = f"SELECT id, v FROM t WHERE id BETWEEN {lo} AND {hi}"
        report = EnginesReport(rows, query)
        expected = _checksum(table.read(["id", "v"], filter=[("id", ">=", lo), ("id", "<=", hi)]))
        predicate = pl.col("id").is_between(lo, hi)

        # each engine's handle on the table is made once, as a user makes it, and queried each run
        frame = mpl.scan_table(table)

        def polars_pushed() -> Any:
            return frame.filter(predicate).select("id", "v").collect().to_arrow()

        def polars_full() -> Any:
            frame = pl.from_arrow(table.scan())
            assert isinstance(frame, pl.DataFrame)
            return frame.lazy().filter(predicate).select("id", "v").collect().to_arrow()

        contenders: list[tuple[str, Any, Any]] = [("polars", polars_pushed, polars_full)]
        try:
            import duckdb

            import mergetree.duckdb as mdd

            pushed_con = mdd.register(duckdb.connect(), "t", table)
            full_con = duckdb.connect()

            def duckdb_pushed() -> Any:
                return pushed_con.sql(query).to_arrow_table()

            def duckdb_full() -> Any:
                full_con.register("t", table.scan())  # a stream is read once: a new one each run
                return full_con.sql(query).to_arrow_table()

            contenders.append(("duckdb", duckdb_pushed, duckdb_full))
        except ImportError:
            pass
        try:
            import datafusion

            import mergetree.datafusion as mdf

            pushed_ctx, full_ctx = datafusion.SessionContext(), datafusion.SessionContext()
            mdf.register(pushed_ctx, "t", table)

            def datafusion_pushed() -> Any:
                return mdf.sql(pushed_ctx, query)

            def datafusion_full() -> Any:
                if full_ctx.table_exist("t"):
                    full_ctx.deregister_table("t")
                full_ctx.register_record_batches("t", [list(table.scan())])
                return full_ctx.sql(query).to_arrow_table()

            contenders.append(("datafusion", datafusion_pushed, datafusion_full))
        except ImportError:
            pass
        for engine, pushed, full in contenders:
            fast = best_of(pushed, repeat=repeat)
            stats = table.last_read
            slow = best_of(full, repeat=repeat)
            got = [_checksum(pa.table(fast.output)), _checksum(pa.table(slow.output))]
            check = "ok" if got == [expected, expected] else f"differs: {got} != {expected}"
            report.results.append(EngineResult(engine, fast.seconds, slow.seconds, expected[0],
                                               stats.files_read if stats else None,
                                               stats.files_total if stats else None, check))
        report.seconds = time.perf_counter() - started
        return report
    finally:
        shutil.rmtree(root, ignore_errors=True)


def format_engines_results(report: EnginesReport) -> str:
    lines = [f"{report.query}  ({report.rows:,} rows, {COMMITS} unmerged sorted runs; "
             f"{report.results[0].rows if report.results else 0:,} rows match)",
             f"{'engine':<11} {'pushdown':>10} {'no pushdown':>12} {'ratio':>8} {'files read':>11}  check"]
    for r in report.results:
        files = f"{r.files_read}/{r.files_total}" if r.files_read is not None else "?"
        target = f" (target {TARGET:.0f}x)" if r.engine in ("polars", "duckdb") else ""
        lines.append(f"{r.engine:<11} {r.pushdown_seconds * 1000:>8.1f}ms {r.full_seconds * 1000:>10.1f}ms "
                     f"{r.ratio:>7.1f}x {files:>11}  {r.check}{target}")
    return "\n".join(lines)
