"""The smoke run of tests/test_dependency_floors.py, in a fresh environment holding the lowest
versions pyproject.toml allows: `python floors_smoke.py README.md WORKDIR [--spark-only] [--dist=NAME ...]`.

It runs the README's engines example as written (paths under /data/ moved to WORKDIR) and a table
round trip that reaches each runtime dependency — create, write, upsert, delete, filtered reads,
compaction, time travel, Polars/DuckDB/DataFusion scans, deletion vectors (pyroaring), Parquet
Bloom filters (xxhash), manifests (fastavro), the advisor (datasketches), the SQL import
(sqlglot), the CLI (rich), the report's charts (matplotlib) — and a local Spark
write and read through the data source.  What it saw goes to stdout as one JSON line (the last),
which the test compares; an exception fails the run.  --spark-only: only the Spark part; with
MERGETREE_FLOORS_S3 set (JSON: uri, storage_options) a table on S3 too."""
from __future__ import annotations

import contextlib
import datetime as dt
import importlib.metadata
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any


def engines_example(readme: Path, work: Path) -> dict[str, list[str]]:
    """The README's engines example, run as a script would: what it printed and what its
    comments say it prints."""
    text = readme.read_text()
    code = re.search(r"## Polars, DuckDB and DataFusion\n.*?```python\n(.*?)```", text, re.S).group(1)  # type: ignore[union-attr]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        example = compile(code.replace("/data/", f"{work}/data/"), "README engines example", "exec")
        exec(example, {"__name__": "__main__"})
    return {"printed": printed.getvalue().splitlines(),
            "documented": re.findall(r"#\s+(\[.*\])\s*$", code, re.M)}


def round_trip(work: Path) -> dict[str, Any]:
    import datafusion
    import duckdb
    import polars as pl
    import pyarrow as pa

    import mergetree.datafusion
    import mergetree.duckdb
    import mergetree.polars
    from mergetree import Table
    from mergetree.organize import build_report, extract_queries, import_sql
    from mergetree.organize.report import write_pngs

    out: dict[str, Any] = {}
    schema = pa.schema([("id", pa.int64()), ("day", pa.date32()), ("site", pa.string()), ("amount", pa.int64())])

    def rows(n: int, start: int, amount: int) -> pa.Table:
        ids = list(range(start, start + n))
        return pa.table({"id": ids, "day": [dt.date(2024, 5, 1 + i % 3) for i in ids],
                         "site": [f"s{i % 7}" for i in ids], "amount": [amount] * n}, schema=schema)

    # a bucketed primary-key table with deletion vectors (pyroaring) and Parquet Bloom filters (xxhash)
    t = Table.create(work / "sales", schema, primary_key="id", buckets=2,
                     options={"deletion-vectors.enabled": "true", "file-index.bloom-filter.columns": "site"})
    t.write(rows(100, 0, 1))
    # with deletion vectors a read sees level 0 only once compacted (Paimon's rule): the write's
    # own compaction commits after its APPEND snapshot, so time travel goes to the latest one
    first = t.latest_snapshot()
    t.write(rows(20, 90, 2))                       # upserts ids 90..99, adds 100..109
    t.delete(pa.table({"id": [0, 1, 2]}))
    live = t.read()
    out["rows"] = live.num_rows
    out["amount_sum"] = sum(live.column("amount").to_pylist())
    out["point"] = t.read(filter=("id", "=", 95), columns=["id", "amount"]).to_pylist()
    out["site_s3"] = t.read(filter=[("site", "=", "s3")]).num_rows
    out["first_snapshot_rows"] = t.read(snapshot=first.id).num_rows
    t.compact(full=True)
    out["after_compact"] = [t.read().num_rows, t.read(filter=("id", "in", [1, 95, 105])).to_pylist()]

    # the engines over the compacted table
    lf = mergetree.polars.scan_table(t)
    out["polars"] = lf.filter(pl.col("id") >= 105).select("id", "amount").sort("id").collect().rows()
    out["polars_head"] = mergetree.polars.scan_table(t).head(5).collect().height
    con = duckdb.connect()
    mergetree.duckdb.register(con, "sales", t)
    out["duckdb"] = con.sql("SELECT count(*), sum(amount) FROM sales WHERE day = DATE '2024-05-02'").fetchall()
    ctx = datafusion.SessionContext()
    mergetree.datafusion.register(ctx, "sales", t)
    out["datafusion"] = mergetree.datafusion.sql(
        ctx, "SELECT site, count(*) AS n FROM sales WHERE amount = 2 GROUP BY site ORDER BY site").to_pylist()

    # the SQL import (sqlglot), the advisor's statistics (datasketches), the report's charts (matplotlib)
    out["extracted"] = len(extract_queries("SELECT * FROM sales WHERE site = 's1' AND id > 5", schema, "sales"))
    history = work / "history.sql"
    history.write_text("SELECT * FROM sales WHERE site = 's1';\n"
                       "SELECT amount FROM sales WHERE day = DATE '2024-05-01';\n")
    out["imported"] = import_sql(t.path, history).imported
    advice = t.advise()
    out["advice_levers"] = len(advice.levers)
    out["pngs"] = sorted(os.path.basename(p) for p in write_pngs(build_report(t.path), str(work / "pngs")))

    # the command line (rich)
    cli = subprocess.run([sys.executable, "-m", "mergetree", "info", str(t.path)], capture_output=True, text=True)
    out["cli"] = [cli.returncode, "id" in cli.stdout, cli.stderr[-2000:]]
    return out


def s3_round_trip(uri: str, storage_options: dict[str, Any]) -> dict[str, Any]:
    """A table on an S3 server (obstore): create, write, upsert, compact, reopen and read."""
    import pyarrow as pa

    from mergetree import Table

    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    t = Table.create(uri, schema, primary_key="id", buckets=2, storage_options=storage_options)
    t.write(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=schema))
    t.write(pa.table({"id": [2], "v": ["B"]}, schema=schema))
    t.compact(full=True)
    reopened = Table.open(uri, storage_options=storage_options)
    return {"rows": sorted(reopened.read().to_pylist(), key=lambda r: r["id"]),
            "point": reopened.read(filter=("id", "=", 2)).to_pylist()}


def iceberg_round_trip(work: Path) -> dict[str, Any]:
    """An Iceberg table of an embedded SQLite catalog, partitioned by a transform: read, filtered
    and logged through mergetree.iceberg, advised on."""
    import pyarrow as pa
    from pyiceberg.transforms import MonthTransform

    import mergetree.iceberg

    os.environ["MERGETREE_ICEBERG_HOME"] = str(work / "iceberg")
    catalog = mergetree.iceberg.load_catalog("floors")
    catalog.create_namespace("db")
    data = pa.table({"id": pa.array(range(40), pa.int64()),
                     "day": pa.array([dt.date(2024, 1 + i % 3, 1 + i % 20) for i in range(40)])})
    created = catalog.create_table("db.t", data.schema)
    with created.update_spec() as spec:
        spec.add_field("day", MonthTransform(), "day_month")
    created.append(data)
    table = mergetree.iceberg.open("iceberg://floors/db.t")
    picked = table.read(filter=("day", ">=", "2024-03-01"), columns="id")
    pruned = [table.last_read.files_read, table.last_read.files_total]
    return {"rows": table.read().num_rows, "march": sorted(picked.column("id").to_pylist()), "files": pruned,
            "advised": table.advise().queries}


def spark_round_trip(work: Path) -> dict[str, Any]:
    """A write and a read through the data source on a local Spark, and the streaming module's imports."""
    import mergetree.spark
    import mergetree.spark.streaming

    spark = mergetree.spark.local_session("floors", master="local[1]")
    try:
        mergetree.spark.register(spark)
        path = str(work / "spark_table")
        df = spark.createDataFrame([(1, "a"), (2, "b"), (3, "c")], "id long, v string")
        mergetree.spark.write(df, path, primaryKey="id", buckets="2")
        mergetree.spark.write(spark.createDataFrame([(2, "B")], "id long, v string"), path)
        read = spark.read.format("mergetree").load(path)
        return {"rows": sorted(tuple(r) for r in read.collect()),
                "filtered": [tuple(r) for r in read.filter("id = 2").collect()]}
    finally:
        spark.stop()


def main(argv: list[str]) -> None:
    readme, work = Path(argv[0]), Path(argv[1])
    spark_only = "--spark-only" in argv[2:]
    names = [a.split("=", 1)[1] for a in argv[2:] if a.startswith("--dist=")]
    import mergetree

    report: dict[str, Any] = {
        "versions": {n: importlib.metadata.version(n) for n in names},
        "mergetree": os.path.dirname(mergetree.__file__),
    }
    if spark_only:
        report["spark"] = spark_round_trip(work)
    else:
        report["engines"] = engines_example(readme, work)
        report["round_trip"] = round_trip(work)
        report["iceberg"] = iceberg_round_trip(work)
        if os.environ.get("MERGETREE_FLOORS_S3"):  # {"uri": ..., "storage_options": {...}}: the test's S3 server
            s3 = json.loads(os.environ["MERGETREE_FLOORS_S3"])
            report["s3"] = s3_round_trip(s3["uri"], s3["storage_options"])
    print(json.dumps(report, default=str))


if __name__ == "__main__":
    main(sys.argv[1:])
