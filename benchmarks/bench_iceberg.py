"""The query-driven loop on an Apache Iceberg table (`mergetree bench --iceberg`, issue 39): SSB's
flattened lineorder (benchmarks/ssb.py) as an Iceberg table of a SQLite catalog, partitioned by
year(lo_orderdate), written in arrival order by `files` pyiceberg appends; its 13 queries imported
as a Trino history (one multi-line statement each, three times over); then advise (applied into
the table's properties) and optimize (one Iceberg commit per year).  Measured: the bytes pyiceberg's
own scan planning selects for each query before and after (the seed reports 28% fewer bytes in
production; the issue asks the date and range queries to select at most 30% of before), every
answer against DuckDB's on the raw data, and the rewrite's rows per second against a plain
pyiceberg overwrite of the same rows."""
from __future__ import annotations

import math
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from . import timing
from .report import duckdb_answer, query_lines, same_rows

__all__ = ["IcebergReport", "format_iceberg_results", "run_iceberg_bench"]

QUICK_SCALE = 0.05
DEFAULT_SCALE = 0.2
DEFAULT_FILES = 48
TARGET_SHARE = 0.30  # the date and range queries: at most this share of their bytes before


@dataclass
class IcebergQuery:
    name: str
    date_or_range: bool
    rows: int
    answer: str
    files_before: int
    bytes_before: int
    files_after: int = 0
    bytes_after: int = 0

    @property
    def ratio(self) -> float:
        return self.bytes_after / self.bytes_before if self.bytes_before else 1.0


@dataclass
class IcebergReport:
    scale: float
    rows: int
    files_before: int
    files_after: int
    queries: list[IcebergQuery] = field(default_factory=list)
    imported: int = 0
    advice: str = ""
    applied: dict = field(default_factory=dict)
    rewrite_seconds: float = 0.0
    overwrite_seconds: float = 0.0
    scan_seconds: float = 0.0  # the peer's scan of the rows it overwrites with
    seconds: float = 0.0

    @property
    def date_range_share(self) -> float:
        picked = [q for q in self.queries if q.date_or_range]
        return sum(q.bytes_after for q in picked) / max(1, sum(q.bytes_before for q in picked))

    @property
    def rewrite_vs_overwrite(self) -> float:
        """The rewrite's rows per second over a plain pyiceberg rewrite's of the same files: their
        scan and an overwrite with the rows (as the rewrite, reading the files and writing them)."""
        peer = self.scan_seconds + self.overwrite_seconds
        return peer / self.rewrite_seconds if self.rewrite_seconds else 0.0

    def targets(self) -> list[tuple[str, bool]]:
        return [(f"date/range queries select <= {TARGET_SHARE:.0%} of their bytes before "
                 f"({self.date_range_share:.1%})", self.date_range_share <= TARGET_SHARE),
                ("every answer equals DuckDB's on the raw data", all(q.answer == "ok" for q in self.queries))]


def _planned(table, sql: str) -> tuple[int, int, object]:
    """(files, bytes) pyiceberg's own scan planning selects for the query's filter on lineorder."""
    from mergetree.iceberg.expressions import row_filter
    from mergetree.organize.sqlimport import extract_queries

    extracted, = extract_queries(sql, table.schema, "lineorder")
    tasks = list(table.iceberg.scan(row_filter=row_filter(extracted.filter)).plan_files())
    return len(tasks), sum(int(t.file.file_size_in_bytes) for t in tasks), extracted


def _answer(table, sql: str, extracted) -> pa.Table:
    """The query run by DuckDB on the rows mergetree reads from the files planned (pruned)."""
    import duckdb
    rows = table.read(columns=extracted.columns, filter=extracted.filter)
    connection = duckdb.connect()
    connection.register("lineorder", rows)
    return duckdb_answer(connection, sql)


def run_iceberg_bench(scale: float = DEFAULT_SCALE, files: int = DEFAULT_FILES, directory: str | None = None,
                      progress: bool | None = None) -> IcebergReport:
    import duckdb
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.transforms import YearTransform

    import mergetree.iceberg
    from mergetree.organize import import_sql

    from . import ssb

    started = time.perf_counter()
    root = directory or tempfile.mkdtemp(prefix="mergetree-bench-iceberg-")
    os.makedirs(root, exist_ok=True)
    saved = {k: os.environ.get(k) for k in ("MERGETREE_QUERY_LOG", "PYICEBERG_CATALOG__BENCH__TYPE",
                                            "PYICEBERG_CATALOG__BENCH__URI", "PYICEBERG_CATALOG__BENCH__WAREHOUSE")}
    os.environ.update({"MERGETREE_QUERY_LOG": "0",  # the log holds the imported history only
                       "PYICEBERG_CATALOG__BENCH__TYPE": "sql",
                       "PYICEBERG_CATALOG__BENCH__URI": f"sqlite:///{root}/catalog.db",
                       "PYICEBERG_CATALOG__BENCH__WAREHOUSE": f"file://{root}/warehouse"})
    try:
        with timing.progress_bar("iceberg", "steps", 5 + 2 * len(ssb.QUERIES), progress) as advance:
            raw = ssb.generate(scale)
            # Iceberg has no string_view: the table's strings are plain
            data = raw.cast(pa.schema([pa.field(f.name, pa.string() if pa.types.is_string_view(f.type) else f.type)
                                       for f in raw.schema]))
            reference = duckdb.connect()
            reference.register("lineorder", data)
            catalog = SqlCatalog("bench", uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}/warehouse")
            catalog.create_namespace("ssb")

            def appended(name: str) -> Any:
                """The rows as an Iceberg table partitioned by year, in `files` appends."""
                created = catalog.create_table(name, data.schema)
                with created.update_spec() as spec:
                    spec.add_field("lo_orderdate", YearTransform(), "order_year")
                per = math.ceil(data.num_rows / files)
                for start in range(0, data.num_rows, per):
                    created.append(data.slice(start, per))
                return created

            appended("ssb.lineorder")
            table = mergetree.iceberg.open("iceberg://bench/ssb.lineorder")
            written = table.data_files()
            # the files' size as the appends wrote them (each append a file per year): the rewrite then
            # writes about as many files as there are, and a pruned query's share is one of bytes alone
            table.set_properties({"write.target-file-size-bytes":
                                  str(math.ceil(sum(m.file_size for m in written) / len(written)))})
            advance(1)
            history = os.path.join(root, "trino-history.sql")
            with open(history, "w", encoding="utf-8") as handle:
                handle.write(ssb.history(3))
            imported = import_sql(table.path, history, dialect="trino", table_name="lineorder").imported
            advance(1)
            queries: dict[str, IcebergQuery] = {}
            for name, sql in ssb.QUERIES.items():
                planned_files, planned_bytes, extracted = _planned(table, sql)
                answer = _answer(table, sql, extracted)
                queries[name] = IcebergQuery(name, name in ssb.DATE_OR_RANGE, answer.num_rows,
                                             same_rows(answer, duckdb_answer(reference, sql)), planned_files,
                                             planned_bytes)
                advance(1)
            files_before = len(table.data_files())
            advice = table.advise(apply=True)
            advance(1)
            rewrite_started = time.perf_counter()
            result = table.optimize()
            rewrite_seconds = time.perf_counter() - rewrite_started
            if result.status != "committed":
                raise RuntimeError(f"the rewrite did not commit: {result}")
            advance(1)
            for name, sql in ssb.QUERIES.items():
                planned_files, planned_bytes, extracted = _planned(table.refresh(), sql)
                q = queries[name]
                q.files_after, q.bytes_after = planned_files, planned_bytes
                if q.answer == "ok":
                    q.answer = same_rows(_answer(table, sql, extracted), duckdb_answer(reference, sql))
                advance(1)
            # the peer: pyiceberg rewriting the same files plainly (no layout, no Bloom filters): a
            # table appended as this one was, its scan, an overwrite with the rows
            peer = appended("ssb.lineorder_overwrite")
            scan_started = time.perf_counter()
            rows = peer.scan().to_arrow()
            overwrite_started = time.perf_counter()
            peer.overwrite(rows)
            overwrite_seconds = time.perf_counter() - overwrite_started
            scan_seconds = overwrite_started - scan_started
            advance(1)
        return IcebergReport(scale, data.num_rows, files_before, len(table.data_files()), list(queries.values()),
                             imported, advice.explain(), dict(advice.options), rewrite_seconds, overwrite_seconds,
                             scan_seconds, time.perf_counter() - started)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        if not directory:
            shutil.rmtree(root, ignore_errors=True)


def format_iceberg_results(report: IcebergReport) -> str:
    lines = [f"SSB at scale {report.scale:g} as an Iceberg table partitioned by year: {report.rows:,} rows, "
             f"{report.files_before} files before, {report.files_after} after; {report.imported} queries imported "
             f"from a Trino history", *query_lines(report.queries)]
    overall = sum(q.bytes_after for q in report.queries) / max(1, sum(q.bytes_before for q in report.queries))
    lines.append(f"bytes pyiceberg's scan planning selects: date/range queries {report.date_range_share:.1%} of "
                 f"before, all queries {overall:.1%}")
    lines.append(f"rewrite (advise applied, optimize): {report.rows / report.rewrite_seconds:,.0f} rows/s in "
                 f"{report.rewrite_seconds:.1f} s (reading, laying out, Bloom filters, committing); pyiceberg "
                 f"rewriting the same files plainly (scan, then overwrite with the rows) "
                 f"{report.rows / (report.scan_seconds + report.overwrite_seconds):,.0f} rows/s "
                 f"(its overwrite alone {report.rows / report.overwrite_seconds:,.0f}): the rewrite is "
                 f"{report.rewrite_vs_overwrite:.2f}x its rows per second")
    lines.append(f"applied: {report.applied}")
    lines += ["  " + line for line in report.advice.splitlines()]
    lines.append("targets:")
    lines += [f"  {text}: {'met' if ok else 'MISSED'}" for text, ok in report.targets()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_iceberg", description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=DEFAULT_SCALE)
    parser.add_argument("--files", type=int, default=DEFAULT_FILES)
    parser.add_argument("--quick", action="store_true", help=f"scale {QUICK_SCALE}")
    args = parser.parse_args(argv)
    report = run_iceberg_bench(QUICK_SCALE if args.quick else args.scale, args.files)
    print(format_iceberg_results(report))
    return 0 if all(ok for _, ok in report.targets()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
