"""``mergetree bench`` (and ``python -m benchmarks``): the one entry to every benchmark harness.

This module only parses the command line, runs the harnesses asked for, prints their reports and
writes ``--json`` and ``--plot``; each harness is a module of its own, and this is the only
module that imports them (shared pieces: ``data.py`` generates the inputs, ``queries.py`` the
layout workload's queries, ``report.py`` compares answers and prints, ``timing.py`` times).

Without a workload flag, the merge workload of ``benchmarks/bench_merge.py``: mergetree's
deduplicate merge of ``K`` sorted runs (int64, int64 with about 8 versions a key, 128-character
and shared-prefix string keys) against heapq.merge, pyarrow, polars and duckdb, every output
checked against mergetree's; then the sorted merge of every row (engine ``none``) of interleaved,
disjoint and 10%-overlapping runs at K and 2K runs against polars ``merge_sorted`` and DataFusion's
``SortPreservingMergeExec`` (``--sorted-merge-only`` runs only that).

``--table`` adds (and ``--table-only`` runs alone) the primary-key table workload of
``benchmarks/bench_table.py``: upserts, merge-on-read, point lookups and a full compaction,
against pypaimon and pypaimon-rust when they are installed, then its deletion-vector case
(``benchmarks/bench_table_dv.py``; ``--table-dv-only`` runs it alone, ``--table-dv-rows`` sizes it);
``--spark`` (``--spark-only``) the Spark workload of ``benchmarks/bench_spark.py``; ``--layout``
(``--layout-only``) the data layout workload of ``benchmarks/bench_layout.py``: linear, Z-order and
Hilbert clustering, Bloom and bitmap indexes, Top-N reads and pre-aggregates, against delta-rs's ``optimize.z_order``;
``--advisor`` (``--advisor-only``) the query-driven loop of ``benchmarks/bench_advisor.py`` on the
Star Schema Benchmark at scale factor 1 (``--advisor-scale``; the synthetic loop with ``--advisor-loop``);
``--scale`` (``--scale-only``) the cost curves of ``benchmarks/bench_scale.py``: write, merge-on-read,
full compaction, compacted read and point lookups at 1M, 10M and 100M rows, each operation in a
child process of its own so its peak memory is its own, and (``--scale-spark``) a Spark read of one
large bucket in ``local[1]`` against ``local[2]``; ``--paimon`` (``--paimon-only``) the Apache Paimon workload of
``benchmarks/bench_paimon.py``: tables written by pypaimon, read by pypaimon, pypaimon-rust and
``mergetree.paimon``, compacted by ``mergetree.paimon.compact`` and read again; ``--storage``
(``--storage-only``) the storage workload of ``benchmarks/bench_storage.py``: write, merge-on-read,
compaction, point lookups and a Spark ``bucket_join`` on local disk and on a moto S3 server it starts,
with the requests of each operation, against delta-rs and pyiceberg on the same store; ``--streaming``
(``--streaming-only``) the change-stream workload of ``benchmarks/bench_streaming.py``: ``Table.changes``
against two full reads and a DuckDB diff, the lookup changelog producer's write cost, and a Spark
Structured Streaming pipeline (``benchmarks/bench_streaming_spark.py``); ``--engines``
(``--engines-only``) a selective query through Polars, DuckDB and DataFusion with pushdown against
the same query over the table's Arrow stream (``benchmarks/bench_engines.py``); ``--services``
(``--services-only``) the table services of ``benchmarks/bench_services.py``: schema evolution,
delete by a condition (against deltalake's), dynamic buckets, the lookup changelog, expiry, migrate.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

import numpy as np
import pyarrow as pa

from . import bench_merge as bm
from .bench_merge import format_results, run_bench  # examples/demo.py imports these and `show` from here
from .data import parse_row_count, short_count
from .report import installed_version, show

__all__ = ["format_results", "main", "run_bench", "show"]


def _environment() -> dict:
    versions = {"python": platform.python_version(), "pyarrow": pa.__version__, "numpy": np.__version__}
    for name in ("mergetree", "polars", "duckdb", "datafusion"):
        try:
            versions[name] = getattr(__import__(name), "__version__", "?")
        except ImportError:
            pass
    return {"platform": platform.platform(), "machine": platform.machine(), "cpu_count": os.cpu_count(),
            "versions": versions}


def _matplotlib_missing() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return True
    return False


def _parser() -> argparse.ArgumentParser:
    from . import bench_paimon, bench_scale, bench_storage, bench_table

    parser = argparse.ArgumentParser(
        prog="mergetree bench", formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description="Time mergetree's deduplicate merge against heapq.merge, pyarrow, polars and duckdb "
                    "on int64 and 128-character string keys, then its merge of every row of interleaved, disjoint "
                    "and 10%-overlap runs against polars merge_sorted and DataFusion's SortPreservingMergeExec; "
                    "every output is checked. "
                    "The workload groups below add (--NAME) or run alone (--NAME-only) the other benchmarks.")
    parser.add_argument("--rows", type=int, default=bm.DEFAULT_ROWS, help="input rows of the int64 workload")
    parser.add_argument("--string-rows", type=int, default=bm.DEFAULT_STRING_ROWS,
                        help="input rows of the 128-character string key workload")
    parser.add_argument("--runs", type=int, default=bm.DEFAULT_RUNS, help="number of sorted runs (K)")
    parser.add_argument("--repeat", type=int, default=bm.DEFAULT_REPEAT, help="timed runs per contender; best kept")
    parser.add_argument("--quick", action="store_true",
                        help="divide every size by 8 (the table workload's by 10; the scale workload runs 100k,1M,10M)")
    parser.add_argument("--threads", action="store_true",
                        help="also time two merges at once in two threads against one")
    parser.add_argument("--plot", metavar="FILE.png", help="save a bar chart (needs matplotlib)")
    parser.add_argument("--json", metavar="FILE", help="write every number as JSON")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--sorted-merge-only", action="store_true",
                        help="run only the sorted merge of every row (engine none; interleaved, disjoint and "
                             "10%%-overlap runs at K and 2K, --rows rows) against polars merge_sorted and DataFusion")
    table = parser.add_argument_group(
        "table workload", "upserts into a bucketed primary-key table written without compaction, then a full "
        "read, point lookups, a full compaction and a read of the result; pypaimon and pypaimon-rust (when "
        "installed) write and read the same upserts (see benchmarks/bench_table.py)")
    table.add_argument("--table", action="store_true", help="also run the table workload")
    table.add_argument("--table-only", action="store_true", help="run only the table workload")
    table.add_argument("--table-upserts", type=int, default=bench_table.DEFAULT_UPSERTS,
                       help="upserts in total (--quick divides it by 10)")
    table.add_argument("--table-keys", type=int, default=bench_table.DEFAULT_KEYS,
                       help="size of the key space (--quick divides it by 10)")
    table.add_argument("--table-commits", type=int, default=bench_table.DEFAULT_COMMITS, help="commits")
    table.add_argument("--table-buckets", type=int, default=bench_table.DEFAULT_BUCKETS, help="buckets")
    table.add_argument("--lookups", type=int, default=bench_table.DEFAULT_LOOKUPS,
                       help="point lookups of random keys (--quick divides it by 4)")
    table.add_argument("--no-peers", action="store_true", help="table workload: mergetree only")
    table.add_argument("--table-dv-only", action="store_true",
                       help="run only the table workload's deletion-vector case (benchmarks/bench_table_dv.py)")
    table.add_argument("--table-dv-rows", type=parse_row_count, metavar="ROWS", default=None,
                       help="rows of the deletion-vector case's table (k/M suffixes allowed; default 10M, "
                            "with --quick 1M)")
    table.add_argument("--table-dir", metavar="DIR",
                       help="write the tables here and keep them (default: a temporary directory, removed)")
    spark = parser.add_argument_group(
        "Spark workload", "mergetree's PySpark data source, bucket_join and compact against plain Spark in "
        "local[2] (needs pyspark; see benchmarks/bench_spark.py)")
    spark.add_argument("--spark", action="store_true", help="also run the Spark workload")
    spark.add_argument("--spark-only", action="store_true", help="run only the Spark workload")
    layout = parser.add_argument_group(
        "layout workload", "an append table of 10M rows in 200 files, unorganized and clustered (linear, Z-order, "
        "Hilbert, by time), with Bloom, bitmap and pre-aggregates, 1,000 queries per workload, against delta-rs's "
        "optimize.z_order on the same data (see benchmarks/bench_layout.py; --quick divides rows and queries by 10)")
    layout.add_argument("--layout", action="store_true", help="also run the layout workload")
    layout.add_argument("--layout-only", action="store_true", help="run only the layout workload")
    advisor = parser.add_argument_group(
        "advisor workload", "the query-driven loop on the Star Schema Benchmark: the flattened lineorder table "
        "(6M rows at scale 1), its 13 queries imported as a SQL history, advise (3 runs: the same advice?), "
        "optimize; bytes scanned per query before and after, every answer checked against DuckDB on the raw "
        "Parquet (see benchmarks/bench_advisor.py; --quick: scale 0.1)")
    advisor.add_argument("--advisor", action="store_true", help="also run the advisor workload")
    advisor.add_argument("--advisor-only", action="store_true", help="run only the advisor workload")
    advisor.add_argument("--advisor-scale", type=float, default=1.0, metavar="SF",
                         help="SSB scale factor of the advisor workload")
    advisor.add_argument("--advisor-loop", action="store_true",
                         help="the advisor workload on the layout workload's synthetic table and queries instead, "
                              "against the best fixed layout and the selectivity lower bound")
    iceberg = parser.add_argument_group(
        "iceberg workload", "the query-driven loop on an Apache Iceberg table: SSB's lineorder partitioned by "
        "year, a Trino history of its 13 queries, advise + optimize; the bytes pyiceberg's scan planning selects "
        "before and after (target: the date and range queries at most 30%), answers against DuckDB, the rewrite "
        "against pyiceberg rewriting the files plainly, scan + overwrite (see benchmarks/bench_iceberg.py; "
        "--quick: scale 0.05)")
    iceberg.add_argument("--iceberg", action="store_true", help="also run the Iceberg workload")
    iceberg.add_argument("--iceberg-only", action="store_true", help="run only the Iceberg workload")
    scale = parser.add_argument_group(
        "scale workload", "cost curves to 100M rows: for each size a 2-bucket table (every key written twice, "
        "write-only, 64 mb write buffer) is written in one streaming write, read merge-on-read, fully compacted, "
        "read again and looked up 200 times, each operation in a fresh child process that reports its time and "
        "peak RSS; targets: the write's peak memory under the buffer + 256 MB, rows/s at the largest size within "
        "20% of rows/s at 10M; the Spark part reads a 1-bucket table in local[1] and local[2] "
        "(see benchmarks/bench_scale.py)")
    scale.add_argument("--scale", action="store_true",
                       help="also run the scale workload (with its Spark part when pyspark is importable)")
    scale.add_argument("--scale-only", action="store_true",
                       help="run only the scale workload (its Spark part only with --scale-spark)")
    scale.add_argument("--scale-sizes", type=bench_scale.sizes_argument, metavar="SIZES", default=argparse.SUPPRESS,
                       help="rows of each table, comma-separated, k/M suffixes allowed "
                            "(default: 1M,10M,100M; with --quick 100k,1M,10M)")
    scale.add_argument("--scale-spark", action="store_true",
                       help="run the Spark part of the scale workload (implies the scale workload)")
    scale.add_argument("--scale-spark-rows", type=bench_scale.row_count_argument, metavar="ROWS",
                       default=argparse.SUPPRESS,
                       help="rows of the Spark part's 1-bucket table (default: 10M; with --quick 1M)")
    paimon = parser.add_argument_group(
        "paimon workload", "Apache Paimon tables of 1M keys written by pypaimon (in its own interpreter, "
        ".venv-paimon or MERGETREE_PAIMON_PYTHON) in 4, 8 and 16 commits of half the keys each, bucket=1 and 4: "
        "full reads and 100 point lookups through pypaimon, pypaimon-rust (when installed) and mergetree.paimon, "
        "then mergetree.paimon.compact(full=True) against a pyarrow read + rewrite of the same files, and the reads "
        "again; targets: reads 30x pypaimon and 1.5x pypaimon-rust (per wall second and per CPU-second), lookups "
        "no slower than pypaimon-rust, every reader faster after compaction, compaction at 70% of the rewrite's "
        "rows/s (see benchmarks/bench_paimon.py)")
    paimon.add_argument("--paimon", action="store_true", help="also run the paimon workload")
    paimon.add_argument("--paimon-only", action="store_true", help="run only the paimon workload")
    paimon.add_argument("--paimon-keys", type=bench_paimon.keys_argument, metavar="KEYS",
                        default=bench_paimon.DEFAULT_KEYS,
                        help="keys of every table, k/M suffixes allowed (--quick divides it by 10)")
    paimon.add_argument("--paimon-case", choices=("all", *bench_paimon.CASES), default="all",
                        help="merge: only the commit-count tables; dv: only the deletion-vector case (a base of "
                        "KEYS keys, 1%% of them updated or deleted over 5 commits, compacted into deletion vectors); "
                        "write: only the writes (4 commits of half the keys into an empty table by pypaimon, "
                        "pypaimon-rust and mergetree)")
    storage = parser.add_argument_group(
        "storage workload", "a 4-bucket primary-key table written in 4 write-only commits, read merge-on-read, "
        "looked up 200 times, fully compacted, read and looked up again, and bucket-joined with itself by Spark, "
        "on local disk and on a moto S3 server started for the run, with the S3 requests of each operation; "
        "delta-rs and pyiceberg append and read the same commits on both; targets: a full read on S3 at 70% of "
        "local disk's rows/s, a warm point lookup in at most 3 GETs, write + commit at least delta-rs's rows/s "
        "(see benchmarks/bench_storage.py; needs moto[server]; --quick divides the rows by 10)")
    storage.add_argument("--storage", action="store_true", help="also run the storage workload")
    storage.add_argument("--storage-only", action="store_true", help="run only the storage workload")
    storage.add_argument("--storage-rows", type=parse_row_count, metavar="ROWS", default=bench_storage.DEFAULT_ROWS,
                         help="upserts written (k/M suffixes allowed)")
    storage.add_argument("--storage-lookups", type=int, default=bench_storage.LOOKUPS, metavar="N",
                         help="point lookups of random keys, before and after the compaction")
    storage.add_argument("--storage-no-peers", action="store_true", help="storage workload: no delta-rs, pyiceberg")
    storage.add_argument("--storage-no-spark", action="store_true", help="storage workload: no Spark bucket_join")
    streaming = parser.add_argument_group(
        "streaming workload", "a 4-bucket primary-key table of ROWS rows, compacted, then 1%% of its keys changed "
        "(updated, deleted, new) over 10 commits: Table.changes between the two snapshots against two full reads "
        "and a diff in DuckDB (target 20x), writes with changelog-producer=lookup against none (target 1.5x), "
        "and a Spark Structured Streaming pipeline of micro-batches on local[2] (rows/s, latency per batch; "
        "see benchmarks/bench_streaming.py; --quick: 1M rows)")
    streaming.add_argument("--streaming", action="store_true", help="also run the streaming workload")
    streaming.add_argument("--streaming-only", action="store_true", help="run only the streaming workload")
    streaming.add_argument("--streaming-rows", type=parse_row_count, metavar="ROWS", default=None,
                           help="rows of the table (default 10M, with --quick 1M)")
    streaming.add_argument("--streaming-no-spark", action="store_true",
                           help="streaming workload: no Spark pipeline")
    engines = parser.add_argument_group(
        "engines workload", "a primary-key table of ROWS rows in 4 unmerged sorted runs; a 0.1%% key-range query "
        "through Polars, DuckDB and DataFusion with projection and filter pushed into the scan, against the same "
        "query over Table.scan()'s Arrow stream (see benchmarks/bench_engines.py; --quick: 2M rows)")
    engines.add_argument("--engines", action="store_true", help="also run the engines workload")
    engines.add_argument("--engines-only", action="store_true", help="run only the engines workload")
    engines.add_argument("--engines-rows", type=parse_row_count, metavar="ROWS", default=None,
                         help="engines workload: table rows (default 4M)")
    services = parser.add_argument_group(
        "services workload", "the table services of a lakehouse table against the plain case they add to (and "
        "deltalake's delete): schema evolution's reads, delete by a condition, dynamic buckets, the lookup "
        "changelog, expiry after every commit, migrate (see benchmarks/bench_services.py; --quick: 200k rows)")
    services.add_argument("--services", action="store_true", help="also run the services workload")
    services.add_argument("--services-only", action="store_true", help="run only the services workload")
    services.add_argument("--services-rows", type=parse_row_count, metavar="ROWS", default=None,
                          help="services workload: upserts (default 1M)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.runs < 1 or args.repeat < 1 or args.rows < 1 or args.string_rows < 1:
        print("mergetree bench: --rows, --string-rows, --runs and --repeat must be positive", file=sys.stderr)
        return 2
    if min(args.table_upserts, args.table_keys, args.table_commits, args.table_buckets, args.lookups) < 1:
        print("mergetree bench: --table-upserts, --table-keys, --table-commits, --table-buckets and --lookups "
              "must be positive", file=sys.stderr)
        return 2
    if args.plot and _matplotlib_missing():
        print("mergetree bench: --plot needs matplotlib, which is not installed "
              "(pip install matplotlib, or pip install 'mergetree[bench]')", file=sys.stderr)
        return 2
    if args.table or args.table_only:
        from .bench_table import check_sizes, quick_sizes

        upserts, keys, _ = (quick_sizes(args.table_upserts, args.table_keys, args.lookups) if args.quick
                            else (args.table_upserts, args.table_keys, args.lookups))
        try:
            check_sizes(upserts, keys, args.table_commits, args.table_buckets)
        except ValueError as error:
            print(f"mergetree bench: {error}", file=sys.stderr)
            return 2
    if args.storage_lookups < 1:
        print("mergetree bench: --storage-lookups must be positive", file=sys.stderr)
        return 2
    if not args.advisor_scale > 0:
        print("mergetree bench: --advisor-scale must be positive", file=sys.stderr)
        return 2
    environment = _environment()
    results, scaling, sorted_results = [], None, None
    merge_bench = not (args.sorted_merge_only or args.table_only or args.table_dv_only or args.spark_only
                       or args.layout_only or args.advisor_only or args.scale_only or args.iceberg_only
                       or args.paimon_only or args.storage_only or args.streaming_only or args.engines_only
                       or args.services_only)
    if merge_bench:
        print(f"mergetree bench: K={args.runs} runs, best of {args.repeat}, {environment['cpu_count']} CPUs, "
              + ", ".join(f"{k} {v}" for k, v in environment["versions"].items()), flush=True)
        results = run_bench(args.rows, args.string_rows, args.runs, args.repeat, args.quick,
                            progress=False if args.no_progress else None)
        show(format_results(results))
        scaling = _thread_check(args) if args.threads else None
    if merge_bench or args.sorted_merge_only:
        sorted_results = _sorted_merge_bench(args, merge_bench)
        merge_bench = True  # what follows is printed after a workload
    table = _table_bench(args, environment) if args.table or args.table_only else None
    table_dv = _table_dv_bench(args, merge_bench or table is not None) \
        if args.table or args.table_only or args.table_dv_only else None
    spark = _spark_bench(args) if args.spark or args.spark_only else None
    layout = _layout_bench(args, merge_bench or table is not None or spark is not None) \
        if args.layout or args.layout_only else None
    scale = _scale_bench(args, merge_bench or table is not None or spark is not None or layout is not None) \
        if args.scale or args.scale_only or args.scale_spark else None
    paimon = _paimon_bench(args, merge_bench or table is not None or spark is not None or layout is not None
                           or scale is not None) if args.paimon or args.paimon_only else None
    storage = _storage_bench(args, merge_bench or table is not None or spark is not None or layout is not None
                             or scale is not None or paimon is not None) \
        if args.storage or args.storage_only else None
    streaming = _streaming_bench(args, merge_bench or table is not None or spark is not None
                                 or layout is not None or scale is not None or paimon is not None
                                 or storage is not None) if args.streaming or args.streaming_only else None
    engines_ok = _engines_bench(args) if args.engines or args.engines_only else True
    if args.services or args.services_only:
        _services_bench(args)
    if args.plot:
        table_chart = args.plot if args.table_only else _beside(args.plot, "-table")
        if merge_bench and results:
            bm.plot_results(results, args.plot, title=f"deduplicate merge of {args.runs} sorted runs")
            print(f"chart written to {args.plot}")
        if table is not None:
            from .bench_table import plot_table_results

            plot_table_results(table["results"], table_chart, title=table["title"])
            print(f"table chart written to {table_chart}")
        if layout is not None:
            from .bench_layout import plot_layout_results

            layout_chart = args.plot if args.layout_only else _beside(args.plot, "-layout")
            plot_layout_results(layout, layout_chart, title=_layout_title(layout))
            print(f"layout chart written to {layout_chart}")
        if scale is not None and scale.results:
            from .bench_scale import plot_scale_results

            scale_chart = args.plot if args.scale_only else _beside(args.plot, "-scale")
            plot_scale_results(scale.results, scale_chart, title=_scale_title(scale))
            print(f"scale chart written to {scale_chart}")
    if args.json:
        _write_json(args, environment, results, scaling, table, spark, layout, scale, paimon, storage, table_dv,
                    streaming, sorted_results)
        print(f"numbers written to {args.json}")
    table_ok = (table is None or all(r.ok or r.check.startswith("unavailable") for r in table["results"])) \
        and (table_dv is None or table_dv.ok)
    spark_ok = spark is None or all(r.check == "ok" for r in spark)
    layout_ok = layout is None or layout.ok
    scale_ok = scale is None or scale.ok
    paimon_ok = paimon is None or paimon.ok
    storage_ok = storage is None or all(r.ok or r.check.startswith("skipped") for r in storage.results)
    streaming_ok = streaming is None or (streaming[0].ok and (streaming[1] is None or streaming[1].check == "ok"))
    advisor_ok = True
    if args.advisor or args.advisor_only:
        from . import bench_advisor

        print(flush=True)
        shown = False if args.no_progress else None
        if args.advisor_loop:
            loop = bench_advisor.run_advisor_bench(quick=args.quick, progress=shown)
            print(bench_advisor.format_advisor_results(loop))
            print(f"advisor workload took {loop.seconds:.0f}s")
            advisor_ok = all(ok for _, ok in loop.targets())
        else:
            ssb = bench_advisor.run_ssb(bench_advisor.SSB_QUICK_SCALE if args.quick else args.advisor_scale,
                                        progress=shown)
            print(bench_advisor.format_ssb_results(ssb))
            print(f"advisor workload took {ssb.seconds:.0f}s")
            advisor_ok = all(ok for _, ok in ssb.targets())
    iceberg_ok = True
    if args.iceberg or args.iceberg_only:
        from . import bench_iceberg

        print(flush=True)
        report = bench_iceberg.run_iceberg_bench(bench_iceberg.QUICK_SCALE if args.quick else
                                                 bench_iceberg.DEFAULT_SCALE,
                                                 progress=False if args.no_progress else None)
        print(bench_iceberg.format_iceberg_results(report))
        print(f"iceberg workload took {report.seconds:.0f}s")
        iceberg_ok = all(ok for _, ok in report.targets())
    sorted_ok = sorted_results is None or all(r.ok for r in sorted_results)
    return 0 if all(r.ok for r in results) and sorted_ok and table_ok and spark_ok and layout_ok and advisor_ok \
        and iceberg_ok \
        and scale_ok and paimon_ok and storage_ok and streaming_ok and engines_ok else 1


def _sorted_merge_bench(args, after_another: bool) -> list:
    """Run the sorted merge of every row (benchmarks/bench_merge.py), print its table and targets."""
    rows = max(args.rows // (bm.QUICK_FACTOR if args.quick else 1), 2 * args.runs)
    if after_another:
        print()
    print(f"mergetree bench (sorted merge, every row): {rows:,} rows in K={args.runs} and K={2 * args.runs} "
          f"int64 runs, interleaved, disjoint and 10%-overlap key ranges, best of {args.repeat}, "
          f"{os.cpu_count()} CPUs, polars {installed_version('polars') or 'not installed'}, "
          f"datafusion {installed_version('datafusion') or 'not installed'}", flush=True)
    started = time.perf_counter()
    results = bm.run_sorted_merge_bench(args.rows, args.runs, args.repeat, args.quick,
                                        progress=False if args.no_progress else None)
    show(bm.format_sorted_results(results))
    print(f"sorted merge took {time.perf_counter() - started:.0f}s", flush=True)
    return results


def _layout_title(layout) -> str:
    sizes = layout.sizes
    return (f"{sizes['rows']:,} rows in {sizes['files']} files, {sizes['queries']:,} queries per workload: "
            f"% of the files scanned per query")


def _layout_bench(args, after_another: bool):
    """Run the layout workload (benchmarks/bench_layout.py), print its tables and targets;
    returns its report."""
    from . import bench_layout as bl

    rows, queries = bl.quick_sizes(bl.DEFAULT_ROWS, bl.DEFAULT_QUERIES) if args.quick else \
        (bl.DEFAULT_ROWS, bl.DEFAULT_QUERIES)
    if after_another:
        print()
    print(f"mergetree bench --layout: {rows:,} rows in {bl.DEFAULT_FILES} files, {queries:,} queries per workload "
          f"and layout, {os.cpu_count()} CPUs, pyarrow {pa.__version__}, deltalake "
          f"{installed_version('deltalake') or 'not installed'}", flush=True)
    report = bl.run_layout_bench(quick=args.quick, progress=False if args.no_progress else None)
    show(bl.format_layout_results(report))
    print(f"layout workload took {report.seconds:.0f}s")
    return report


def _scale_sizes(args) -> tuple[list[int], int | None, str | None]:
    """The scale workload's sizes, the Spark part's rows (None: not run) and why it is not run."""
    from . import bench_scale as bsc

    sizes = getattr(args, "scale_sizes", None) or list(bsc.QUICK_SIZES if args.quick else bsc.DEFAULT_SIZES)
    spark_rows = getattr(args, "scale_spark_rows", None) or (bsc.QUICK_SPARK_ROWS if args.quick
                                                              else bsc.DEFAULT_SPARK_ROWS)
    wanted = args.scale_spark or (args.scale and not args.scale_only)
    if not wanted:
        return sizes, None, "not run (add --scale-spark)"
    missing = bsc.spark_missing()
    return (sizes, None, missing) if missing else (sizes, spark_rows, None)


def _scale_title(scale) -> str:
    from . import bench_scale as bsc

    return (f"{', '.join(short_count(rows) for rows in scale.sizes)} rows, {bsc.BUCKETS} buckets, every key twice, "
            f"write-only, {bsc.WRITE_BUFFER_MB} mb write buffer: cost against table size")


def _scale_bench(args, after_another: bool):
    """Run the scale workload (benchmarks/bench_scale.py), print its table and targets; returns its report."""
    from . import bench_scale as bsc

    sizes, spark_rows, skipped = _scale_sizes(args)
    if after_another:
        print()
    spark = f"; Spark part: {spark_rows:,} rows in 1 bucket, local[1] and local[2]" if spark_rows else ""
    print(f"mergetree bench --scale: {', '.join(f'{rows:,}' for rows in sizes)} rows, {bsc.BUCKETS} buckets, "
          f"every key written twice, write-only, {bsc.WRITE_BUFFER_MB} mb write buffer, {bsc.LOOKUPS} lookups, "
          f"one child process per operation{spark}; {os.cpu_count()} CPUs, pyarrow {pa.__version__}", flush=True)
    report = bsc.run_scale_bench(sizes, lookups=bsc.LOOKUPS, spark_rows=spark_rows, spark_skipped=skipped,
                                 progress=False if args.no_progress else None)
    show(bsc.format_scale_results(report))
    print(f"scale workload took {report.seconds:.0f}s")
    return report


def _paimon_bench(args, after_another: bool):
    """Run the paimon workload (benchmarks/bench_paimon.py), print its tables and targets; returns its report."""
    from . import bench_paimon as bp

    keys = bp.quick_keys(args.paimon_keys) if args.quick else args.paimon_keys
    if after_another:
        print()
    versions = bp.peer_versions()
    print(f"mergetree bench --paimon: {keys:,} keys, {bp.workload_text(args.paimon_case)}, {bp.LOOKUPS} lookups; "
          f"{os.cpu_count()} CPUs, "
          f"pyarrow {pa.__version__}, pypaimon {versions['pypaimon']}, pypaimon-rust {versions['pypaimon-rust']}",
          flush=True)
    report = bp.run_paimon_bench(keys, progress=False if args.no_progress else None,
                                 cases=None if args.paimon_case == "all" else (args.paimon_case,))
    show(bp.format_paimon_results(report))
    print(f"paimon workload took {report.seconds:.0f}s")
    return report


def _storage_bench(args, after_another: bool):
    """Run the storage workload (benchmarks/bench_storage.py), print its table and targets; returns its report."""
    from . import bench_storage as bst

    rows = max(args.storage_rows // bst.QUICK_FACTOR, bst.MIN_ROWS) if args.quick else args.storage_rows
    if after_another:
        print()
    peers = "no peers" if args.storage_no_peers else ", ".join(
        f"{name} {installed_version(name) or 'not installed'}" for name in ("deltalake", "pyiceberg"))
    print(f"mergetree bench --storage: {rows:,} upserts in {bst.COMMITS} commits into {bst.BUCKETS} buckets, "
          f"{args.storage_lookups} lookups, on local disk and a moto S3 server "
          f"(moto {installed_version('moto') or '?'}); "
          f"{os.cpu_count()} CPUs, pyarrow {pa.__version__}, {peers}", flush=True)
    report = bst.run_storage_bench(rows, lookups=args.storage_lookups, peers=not args.storage_no_peers,
                                   spark=not args.storage_no_spark,
                                   progress=False if args.no_progress else None)
    show(bst.format_storage_results(report))
    print(f"storage workload took {report.seconds:.0f}s")
    return report


def _streaming_bench(args, after_another: bool):
    """Run the streaming workload (benchmarks/bench_streaming.py), print it; returns its report."""
    from . import bench_streaming as bsm

    rows = args.streaming_rows or (bsm.QUICK_ROWS if args.quick else bsm.DEFAULT_ROWS)
    if after_another:
        print()
    print(f"mergetree bench --streaming: {rows:,} rows, {bsm.CHANGE_FRACTION:.0%} of the keys changed over "
          f"{bsm.COMMITS} commits, {bsm.BUCKETS} buckets, best of {args.repeat}, {os.cpu_count()} CPUs, "
          f"pyarrow {pa.__version__}, duckdb {installed_version('duckdb') or 'not installed'}"
          + ("" if args.streaming_no_spark else f", pyspark {installed_version('pyspark') or 'not installed'}"),
          flush=True)
    report = bsm.run_streaming_bench(rows, repeat=args.repeat)
    print(bsm.format_streaming_results(report))
    print(f"streaming workload took {report.total_seconds:.0f}s", flush=True)
    spark = None
    if not args.streaming_no_spark:
        from . import bench_streaming_spark as bss

        started = time.perf_counter()
        spark = bss.run_streaming_spark_bench(quick=args.quick)
        print(bss.format_streaming_spark_results(spark))
        print(f"streaming Spark pipeline took {time.perf_counter() - started:.0f}s")
    return report, spark


def _engines_bench(args) -> bool:
    """Run the engines workload (benchmarks/bench_engines.py), print it; whether it met its targets."""
    from . import bench_engines as be

    rows = args.engines_rows or (be.QUICK_ROWS if args.quick else be.DEFAULT_ROWS)
    print(f"\nmergetree bench --engines: {rows:,} rows, best of {args.repeat}, {os.cpu_count()} CPUs, "
          + ", ".join(f"{n} {installed_version(n) or 'not installed'}" for n in ("polars", "duckdb", "datafusion")),
          flush=True)
    report = be.run_engines_bench(rows, repeat=args.repeat)
    print(be.format_engines_results(report))
    print(f"engines workload took {report.seconds:.0f}s", flush=True)
    return report.ok


def _services_bench(args) -> None:
    """Run the services workload (benchmarks/bench_services.py) and print it."""
    from . import bench_services as bsv

    rows = args.services_rows or (bsv.QUICK_ROWS if args.quick else bsv.DEFAULT_ROWS)
    print(f"\nmergetree bench --services: {rows:,} upserts, best of {args.repeat}, {os.cpu_count()} CPUs, "
          f"deltalake {installed_version('deltalake') or 'not installed'}", flush=True)
    report = bsv.run_services_bench(rows, repeat=args.repeat)
    print(bsv.format_services_results(report))
    print(f"services workload took {report.seconds:.0f}s", flush=True)


def _spark_bench(args) -> list:
    """Run the Spark workload (benchmarks/bench_spark.py), print its table; returns its results."""
    from . import bench_spark as bs

    factor = bs.QUICK_FACTOR if args.quick else 1
    print(f"\nmergetree bench --spark: two tables of {bs.DEFAULT_UPSERTS // factor:,} rows (ids of "
          f"{bs.DEFAULT_KEYS // factor:,} keys) in {bs.DEFAULT_COMMITS} write-only commits, {bs.DEFAULT_BUCKETS} "
          f"and {bs.RIGHT_BUCKETS} buckets, Spark local[2], best of {min(args.repeat, 2)}", flush=True)
    start = time.perf_counter()
    results = bs.run_spark_bench(repeat=min(args.repeat, 2), quick=args.quick,
                                 progress=False if args.no_progress else None)
    show(bs.format_spark_results(results))
    print(f"spark workload took {time.perf_counter() - start:.0f}s")
    return results


def _beside(path: str, suffix: str) -> str:
    """``chart.png`` -> ``chart-table.png``."""
    stem, extension = os.path.splitext(path)
    return f"{stem}{suffix}{extension or '.png'}"


def _table_bench(args, environment: dict) -> dict:
    """Run the table workload (benchmarks/bench_table.py), print its table; returns its numbers."""
    from . import bench_table as bt

    sizes = {"upserts": args.table_upserts, "keys": args.table_keys, "commits": args.table_commits,
             "buckets": args.table_buckets, "lookups": args.lookups}
    shown = dict(sizes)
    if args.quick:
        shown["upserts"], shown["keys"], shown["lookups"] = bt.quick_sizes(sizes["upserts"], sizes["keys"],
                                                                           sizes["lookups"])
    peers = ", ".join(f"{k} {v}" for k, v in bt.peer_versions().items()) if not args.no_peers else "no peers"
    if not args.table_only:
        print()
    print(f"mergetree bench --table: {shown['upserts']:,} upserts of {shown['keys']:,} keys in "
          f"{shown['commits']} commits into {shown['buckets']} buckets, {shown['lookups']} lookups, "
          f"{environment['cpu_count']} CPUs, pyarrow {pa.__version__}, {peers}", flush=True)
    results = bt.run_table_bench(sizes["upserts"], sizes["keys"], sizes["commits"], sizes["buckets"],
                                 sizes["lookups"], args.repeat, args.quick, peers=not args.no_peers,
                                 directory=args.table_dir, progress=False if args.no_progress else None)
    show(bt.format_table_results(results))
    title = (f"{shown['upserts']:,} upserts, {shown['commits']} commits, {shown['buckets']} buckets: "
             f"mergetree vs Paimon from Python")
    return {"sizes": shown, "peers": bt.peer_versions(), "results": results, "title": title,
            "ratios": bt.table_ratios(results)}


def _table_dv_bench(args, after_another: bool):
    """Run the table workload's deletion-vector case (benchmarks/bench_table_dv.py), print it;
    returns its report."""
    from . import bench_table_dv as dv

    rows = args.table_dv_rows or (dv.QUICK_ROWS if args.quick else dv.DEFAULT_ROWS)
    if after_another:
        print()
    print(f"mergetree bench --table (deletion vectors): {rows:,} rows, {dv.UPDATE_FRACTION:.0%} updated over "
          f"{dv.COMMITS} commits, best of {args.repeat}, {os.cpu_count()} CPUs, pyarrow {pa.__version__}", flush=True)
    started = time.perf_counter()
    report = dv.run_dv_bench(rows, repeat=args.repeat)
    print(dv.format_dv_results(report))
    print(f"deletion-vector case took {time.perf_counter() - started:.0f}s")
    return report


def _thread_check(args) -> dict:
    rows = max(args.rows // (bm.QUICK_FACTOR if args.quick else 1), args.runs)
    scaling = bm.run_thread_scaling(rows, args.runs, args.repeat)
    print(f"\nthreads: one merge of {scaling['rows_per_merge']:,} rows {scaling['one_merge_seconds']:.3f}s; "
          f"two at once in two threads {scaling['two_merges_seconds']:.3f}s: "
          f"{scaling['ratio']:.2f}x the throughput of one (2.00 is perfect on 2 free cores)")
    print(f"threads: numpy's sort, which also runs without the GIL, gets {scaling['machine_ratio']:.2f}x "
          f"from two threads on this machine now (a lower figure means the cores are busy or shared)")
    return scaling


def _write_json(args, environment: dict, results: list, scaling: dict | None, table: dict | None = None,
                spark: list | None = None, layout=None, scale=None, paimon=None, storage=None, table_dv=None,
                streaming=None, sorted_results: list | None = None) -> None:
    document = {
        "config": {k: v for k, v in vars(args).items() if k not in ("plot", "json")},
        "environment": environment,
        **bm.merge_json(results),
        "threads": scaling,
    }
    if sorted_results is not None:
        document["sorted_merge"] = bm.sorted_merge_json(sorted_results)
    if table is not None:
        document["table"] = {"sizes": table["sizes"], "peers": table["peers"], "ratios": table["ratios"],
                             "results": [r.to_dict() for r in table["results"]]}
    if table_dv is not None:
        document["table_deletion_vectors"] = {"rows": table_dv.rows, "commits": table_dv.commits,
                                              "update_fraction": table_dv.update_fraction,
                                              "seconds": table_dv.seconds, "ratios": table_dv.ratios(),
                                              "checks": table_dv.checks,
                                              "targets": dict(table_dv.targets())}
    if spark is not None:
        from .bench_spark import spark_ratios

        document["spark"] = {"results": [r.to_dict() for r in spark], "ratios": spark_ratios(spark)}
    if layout is not None:
        from .bench_layout import layout_json

        document["layout"] = layout_json(layout)
    if scale is not None:
        from .bench_scale import scale_json

        document["scale"] = scale_json(scale)
    if paimon is not None:
        from .bench_paimon import paimon_json

        document["paimon"] = paimon_json(paimon)
    if storage is not None:
        from .bench_storage import storage_json

        document["storage"] = storage_json(storage)
    if streaming is not None:
        from .bench_streaming import streaming_json

        document["streaming"] = streaming_json(streaming[0])
        if streaming[1] is not None:
            document["streaming"]["spark"] = streaming[1].to_dict()
    with open(args.json, "w", encoding="utf-8") as handle:
        json.dump(document, handle, indent=2, default=str)
        handle.write("\n")


if __name__ == "__main__":
    sys.exit(main())
