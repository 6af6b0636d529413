"""``mergetree bench --storage``: tables on local disk and on an S3 server, with the requests
each operation makes (issue 24).

The workload: ``rows`` upserts in ``COMMITS`` commits, each a random ``rows / COMMITS`` of a
key space of ``rows / 2`` ids (``benchmarks/data.py``, ``table_commits``), written into a
``BUCKETS``-bucket primary-key table with ``write-only`` (no compaction during the writes, so
every commit stays a sorted run of its own).  The same steps run on a local directory and on
``s3://bench/...`` of a moto server this bench starts on 127.0.0.1 (``benchmarks/s3_server.py``;
its objects live in its memory):

* write + commit: the commits, one ``Table.write`` each;
* read (merge-on-read): a full read over every unmerged sorted run, checked against the newest
  version of every key computed without mergetree;
* point lookups (unmerged): ``LOOKUPS`` random keys, one ``read(filter=("id", "=", k))`` each,
  after one lookup that warms the metadata and footer caches;
* compact (full) and read (compacted);
* point lookups (compacted): the same keys on one sorted run per bucket;
* Spark ``bucket_join`` of the compacted table with itself in ``local[2]`` (when pyspark and a
  JVM are here and its jobs reach the store; otherwise "skipped" and why).

delta-rs (``deltalake``) and ``pyiceberg`` (a SQL catalog on sqlite, the warehouse on the same
store) append the same commits and read them back on both stores.  They append (neither has a
primary-key write; their fastest write path), so their read returns every appended row, not
the newest version of each key: the reads are compared in rows read per second.

Requests on S3 are counted by the server (its request log, ``LocalS3.requests_since``), for
every engine; for mergetree also by its own counter (``store.requests``), and the two are
reported side by side.  On local disk data files are read by pyarrow directly, so no request
count is shown there.

Targets (issue 24): a full read on S3 at least 70% of the local-disk throughput; a point
lookup with warm metadata in at most 3 GET requests; write + commit at least delta-rs's
throughput on the same data.  The moto server is one Python process answering one request at
a time per thread: a real S3 answers in 10-100 ms but in parallel; these numbers say what the
client does (how many requests, how much it waits), not what S3 would give.
"""
from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
from rich.console import Group
from rich.markup import escape
from rich.text import Text

from mergetree import Table
from mergetree.cli import render

from . import timing
from .data import TABLE_KEY, TABLE_SCHEMA, TABLE_SEED, newest_rows, table_commits
from .report import compare_tables, installed_version, json_ready, rate_text
from .s3_server import REQUEST_KINDS, LocalS3, moto_missing

__all__ = ["StorageReport", "StorageResult", "format_storage_results", "run_storage_bench", "storage_json",
           "storage_ratios"]

DEFAULT_ROWS = 3_000_000
QUICK_FACTOR = 10
MIN_ROWS = 1_000
COMMITS = 4
BUCKETS = 4
LOOKUPS = 200
READ_REPEAT = 4  # reads: the fastest of four (the first also counts the requests of a cold cache)
WRITE_REPEAT = 2  # writes: the faster of two, each into a new table
WARM_UP = 32  # lookups before the timed ones: random keys reach every file of every bucket
SEED = TABLE_SEED + 24
KEY = TABLE_KEY
TABLE_OPTIONS = {"write-only": "true", "query-log.enabled": "false"}  # no log writes among the counted requests

LOCAL = "local disk"
S3 = "S3 (moto)"
MERGETREE = "mergetree"
DELTA = "delta-rs"
ICEBERG = "pyiceberg"
SPARK = "mergetree.spark"

WRITE = "write + commit"
READ = "read (merge-on-read)"
LOOKUP_UNMERGED = "point lookups (unmerged)"
COMPACT = "compact (full)"
READ_COMPACTED = "read (compacted)"
LOOKUP_COMPACTED = "point lookups (compacted)"
JOIN = "bucket_join (self, local[2])"
PEER_READ = "read (all appended rows)"

TARGETS = {"read_s3_vs_local": 0.70, "lookup_gets": 3, "write_vs_deltalake": 1.0}


@dataclass
class StorageResult:
    engine: str
    step: str
    where: str
    rows: int = 0                  # rows written, read from files, compacted, looked up (keys) or joined
    seconds: float = float("nan")
    cpu_seconds: float = float("nan")         # this process's CPU time over the same run, every thread
    server_cpu_seconds: float = float("nan")  # S3: the server process's CPU time during the operation
    check: str = "ok"              # "ok", "skipped: ...", "failed: ...", "wrong: ..."
    requests: dict | None = None   # S3: what the server answered, by kind
    counted: dict | None = None    # S3, mergetree: its own RequestCounter over the same operation
    lookup_gets: list | None = None  # point lookups: GETs of each lookup (mergetree's counter)
    latency_ms: dict | None = None
    notes: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.check == "ok"

    @property
    def rows_per_second(self) -> float:
        return self.rows / self.seconds if self.ok and self.seconds > 0 and not self.latency_ms else float("nan")

    def to_dict(self) -> dict:
        return json_ready({**asdict(self), "rows_per_second": self.rows_per_second})


@dataclass
class StorageReport:
    rows: int
    keys: int
    lookups: int
    results: list
    seconds: float = float("nan")
    versions: dict = field(default_factory=dict)


# ---------------------------------------------------------------- mergetree


@dataclass
class _Place:
    """Where a mergetree table lives: a local directory, or a URI on the server (`server`)."""

    location: str
    where: str
    options: dict | None = None
    server: LocalS3 | None = None
    table: Table | None = None


class _Measure:
    """One operation at one place: its wall and client CPU seconds, and on S3 the requests the
    server answered, its CPU seconds, and mergetree's own count of them."""

    def __init__(self, place: _Place, result: StorageResult, count_table: bool = True) -> None:
        self.place, self.result, self.count_table = place, result, count_table

    def __enter__(self) -> _Measure:
        server, table = self.place.server, self.place.table
        if table is not None and self.count_table:
            table.directory.storage.requests.reset()
        self.mark = server.mark() if server is not None else None
        self.server_cpu = server.cpu_seconds() if server is not None else None
        return self

    def __exit__(self, *exc: object) -> None:
        server, table = self.place.server, self.place.table
        if server is None or self.mark is None:
            return
        # the counter first: asking a table for it may itself read (a Paimon table's handle
        # reopens its latest schema), which the server's count then holds too
        counter = table.directory.storage.requests if table is not None and self.count_table else None
        self.result.requests = server.requests_since(self.mark)
        after = server.cpu_seconds()
        if after is not None and self.server_cpu is not None:
            self.result.server_cpu_seconds = after - self.server_cpu
        if counter is not None:
            self.result.counted = counter.reset()


def _mergetree_steps(places: list[_Place], commits: list, expected: pa.Table, lookup_keys: np.ndarray,
                     advance: Callable[[int], None]) -> list:
    """Each step at every place, the places' runs alternating (the machine's load then changes
    no more between the two places than between two runs at one)."""
    results = _writes(places, commits)
    advance(1)
    results += _reads(places, READ, expected)
    advance(1)
    results += [_lookups(place, LOOKUP_UNMERGED, expected, lookup_keys) for place in places]
    advance(1)
    for place in places:
        assert place.table is not None
        before = len(place.table.plan().files)
        result = StorageResult(MERGETREE, COMPACT, place.where, sum(f.row_count for f in place.table.plan().files))
        with _Measure(place, result):
            result.seconds, result.cpu_seconds, _ = timing.timed(place.table.compact, True)
        result.notes.append(f"{before} files -> {len(place.table.plan().files)}")
        results.append(result)
    advance(1)
    results += _reads(places, READ_COMPACTED, expected)
    advance(1)
    results += [_lookups(place, LOOKUP_COMPACTED, expected, lookup_keys) for place in places]
    advance(1)
    return results


def _writes(places: list[_Place], commits: list) -> list:
    """The commits written WRITE_REPEAT times at each place, each time into a new table (the
    last is kept for the steps after); the fastest run, the last run's requests."""
    results = [StorageResult(MERGETREE, WRITE, place.where, sum(c.num_rows for c in commits)) for place in places]
    runs: list[list[tuple[float, float]]] = [[] for _ in places]
    for attempt in range(WRITE_REPEAT):
        for place, result, times in zip(places, results, runs):
            location = place.location if attempt == WRITE_REPEAT - 1 else f"{place.location}-{attempt}"
            place.table = table = Table.create(location, TABLE_SCHEMA, primary_key=[KEY], buckets=BUCKETS,
                                               options=TABLE_OPTIONS, storage_options=place.options)

            def write_all(table: Table = table) -> None:
                for commit in commits:
                    table.write(commit)

            with _Measure(place, result):
                times.append(timing.timed(write_all)[:2])
    for place, result, times in zip(places, results, runs):
        assert place.table is not None
        result.seconds, result.cpu_seconds = min(times)
        result.notes.append(f"{len(commits)} commits, {len(place.table.plan().files)} files in {BUCKETS} buckets; "
                            f"best of {WRITE_REPEAT} (each into a new table)")
    return results


def _reads(places: list[_Place], step: str, expected: pa.Table) -> list:
    """READ_REPEAT full reads at each place, alternating; the fastest, the first's requests."""
    results, runs = [], []
    for place in places:
        table = place.table
        assert table is not None
        result = StorageResult(MERGETREE, step, place.where, sum(f.row_count for f in table.plan().files))
        with _Measure(place, result):
            first = timing.timed(table.read)
        result.check = compare_tables(first.output, expected, KEY)
        runs.append([first[:2]])
        del first
        results.append(result)
    for _ in range(READ_REPEAT - 1):
        for place, times in zip(places, runs):
            assert place.table is not None
            times.append(timing.timed(place.table.read)[:2])
    for result, times in zip(results, runs):
        result.seconds, result.cpu_seconds = min(times)
        result.notes.append(f"best of {READ_REPEAT}, the places' runs alternating; requests of the first (footers "
                            f"not cached yet)")
    return results


def _lookups(place: _Place, step: str, expected: pa.Table, keys: np.ndarray) -> StorageResult:
    """`keys` lookups after a warm-up (the first WARM_UP keys looked up once: every file's
    footer and the snapshot's manifests cached); each lookup's GETs from mergetree's counter."""
    table = place.table
    assert table is not None
    ids = expected.column(KEY).to_numpy()
    counter = table.directory.storage.requests
    for key in keys[:WARM_UP]:
        table.read(filter=(KEY, "=", int(key)))
    result = StorageResult(MERGETREE, step, place.where, len(keys))
    latencies, gets, cpu = [], [], 0.0
    counted = dict.fromkeys(REQUEST_KINDS, 0)
    with _Measure(place, result, count_table=False):
        for key in keys:
            counter.reset()
            seconds, cpu_seconds, out = timing.timed(table.read, None, (KEY, "=", int(key)))
            made = counter.reset()
            gets.append(made["GET"])
            for kind, n in made.items():
                counted[kind] += n
            latencies.append(seconds * 1e3)
            cpu += cpu_seconds
            at = int(np.searchsorted(ids, key))
            want = expected.slice(at, 1).to_pylist() if at < len(ids) and ids[at] == key else []
            if out.select(TABLE_SCHEMA.names).to_pylist() != want and result.ok:
                result.check = f"wrong: key {int(key)} gave {out.num_rows} rows"
    result.seconds, result.cpu_seconds = sum(latencies) / 1e3, cpu
    result.latency_ms = {"median": statistics.median(latencies), "p95": float(np.percentile(latencies, 95)),
                         "max": max(latencies), "count": len(latencies)}
    note = f"{len(keys)} random keys, after the first {min(WARM_UP, len(keys))} were looked up once (warm metadata)"
    if place.server is not None:
        result.counted = counted
        result.lookup_gets = gets
        note += f"; GETs per lookup: median {statistics.median(gets):g}, max {max(gets)}"
    # (on local disk pyarrow reads the data files itself: the store counts no GET for them)
    result.notes.append(note)
    return result


# ---------------------------------------------------------------- peers


def _peer_read(engine: str, where: str, read: Callable[[], pa.Table], rows: int, server: LocalS3 | None
               ) -> StorageResult:
    result = StorageResult(engine, PEER_READ, where, rows)
    with _Measure(_Place("", where, server=server), result):
        first = timing.timed(read)
    if first.output.num_rows != rows:
        result.check = f"wrong: {first.output.num_rows:,} rows, expected {rows:,}"
    runs = [first[:2]]
    del first
    for _ in range(READ_REPEAT - 1):
        runs.append(timing.timed(read)[:2])
    result.seconds, result.cpu_seconds = min(runs)
    result.notes.append(f"best of {READ_REPEAT}; no deduplication (the rows of every append)")
    return result


def _peer_write(engine: str, where: str, writes: list[Callable[[], None]], rows: int, server: LocalS3 | None,
                note: str) -> StorageResult:
    """The fastest of `writes` (the same commits, each into a new table); the last one's requests."""
    result = StorageResult(engine, WRITE, where, rows)
    times = []
    for write in writes:
        with _Measure(_Place("", where, server=server), result):
            times.append(timing.timed(write)[:2])
    result.seconds, result.cpu_seconds = min(times)
    result.notes.append(f"{note}; best of {len(writes)} (each into a new table)")
    return result


def _delta_steps(location: str, where: str, options: dict | None, commits: list, server: LocalS3 | None) -> list:
    from deltalake import DeltaTable, write_deltalake

    rows = sum(c.num_rows for c in commits)

    def write(at: str) -> None:
        for commit in commits:
            write_deltalake(at, commit, mode="append", storage_options=options)

    places = [f"{location}-{attempt}" for attempt in range(WRITE_REPEAT - 1)] + [location]
    wrote = _peer_write(DELTA, where, [lambda at=at: write(at) for at in places], rows, server,
                        f"{len(commits)} appends (write_deltalake)")
    read = _peer_read(DELTA, where, lambda: DeltaTable(location, storage_options=options).to_pyarrow_table(), rows,
                      server)
    return [wrote, read]


def _iceberg_steps(warehouse: str, catalog_db: str, where: str, properties: dict, commits: list,
                   server: LocalS3 | None) -> list:
    import warnings

    from pyiceberg.catalog.sql import SqlCatalog

    rows = sum(c.num_rows for c in commits)
    names = [f"bench.upserts_{attempt}" for attempt in range(WRITE_REPEAT - 1)] + ["bench.upserts"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pyiceberg's notes on the sqlite catalog
        catalog = SqlCatalog("bench", uri=f"sqlite:///{catalog_db}", warehouse=warehouse, **properties)
        catalog.create_namespace("bench")
        tables = [catalog.create_table(name, schema=TABLE_SCHEMA) for name in names]

    def write(table: Any) -> None:
        for commit in commits:
            table.append(commit)

    wrote = _peer_write(ICEBERG, where, [lambda table=table: write(table) for table in tables], rows, server,
                        f"{len(commits)} appends (Table.append), SQL catalog on sqlite")
    read = _peer_read(ICEBERG, where, lambda: catalog.load_table(names[-1]).scan().to_arrow(), rows, server)
    return [wrote, read]


def _peer(engine: str, where: str, steps: Callable[..., list], *args: object) -> list:
    """A peer's results, or one line saying why there are none."""
    try:
        return steps(*args)
    except ImportError as error:
        return [StorageResult(engine, WRITE, where, check=f"skipped: not installed ({error.name})")]
    except Exception as error:  # a peer that fails is reported, not fatal
        return [StorageResult(engine, WRITE, where, check=f"failed: {type(error).__name__}: {error}"[:300])]


# ---------------------------------------------------------------- Spark


def spark_missing() -> str | None:
    if shutil.which("java") is None:
        return "no java on PATH"
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return "pyspark is not installed"
    return None


def _spark_steps(locations: list[tuple[str, str, dict | None]], expected_rows: int, server: LocalS3 | None,
                 warehouse: str) -> list:
    """bucket_join of each compacted table with itself: one untimed run (Python workers start),
    then a timed one."""
    missing = spark_missing()
    if missing:
        return [StorageResult(SPARK, JOIN, where, check=f"skipped: {missing}") for _, where, _ in locations]
    import mergetree.spark as ms

    spark = ms.local_session("mergetree-bench-storage", warehouse, 2, fast_start=False)
    results = []
    try:
        for location, where, options in locations:
            result = StorageResult(SPARK, JOIN, where, expected_rows)
            try:
                def join(location: str = location, options: dict | None = options) -> int:
                    return ms.bucket_join(spark, location, location, on=KEY, storage_options=options).count()

                join()
                with _Measure(_Place(location, where, server=server if where == S3 else None), result):
                    timed = timing.timed(join, pause_gc=False)
                result.seconds = timed.seconds  # (the work is in Spark's workers: no client CPU shown)
                if timed.output != expected_rows:
                    result.check = f"wrong: {timed.output:,} rows, expected {expected_rows:,}"
                result.notes.append("the compacted table joined with itself on its key; rows: the join's output; "
                                    "the second run timed")
            except Exception as error:  # Spark on this store not wired (yet), or failing: say so
                first = str(error).strip().splitlines()[0] if str(error).strip() else ""
                result.check = f"skipped: {type(error).__name__}: {first}"[:300]
            results.append(result)
    finally:
        spark.stop()
    return results


# ---------------------------------------------------------------- running


def check_rows(rows: int) -> None:
    if rows < MIN_ROWS:
        raise ValueError(f"--storage-rows must be at least {MIN_ROWS:,}, not {rows:,}")


def run_storage_bench(rows: int = DEFAULT_ROWS, lookups: int = LOOKUPS, peers: bool = True, spark: bool = True,
                      directory: str | None = None, progress: bool | None = None, stream=sys.stderr) -> StorageReport:
    """Run the storage workload (module docstring); the tables are written under `directory`
    (kept) or a temporary directory (removed), and on a moto server started for the run."""
    check_rows(rows)
    missing = moto_missing()
    if missing:
        raise RuntimeError(f"mergetree bench --storage needs an S3 server: {missing}")
    started = time.perf_counter()
    keys = max(rows // 2, rows // COMMITS)
    commits = table_commits(rows // COMMITS * COMMITS, keys, COMMITS, SEED)
    expected = newest_rows(commits, KEY)
    lookup_keys = np.random.default_rng(SEED + 1).choice(keys, size=min(lookups, keys), replace=False)
    root = directory or tempfile.mkdtemp(prefix="mergetree-bench-storage-")
    os.makedirs(root, exist_ok=True)
    run_id = uuid.uuid4().hex[:8]
    results: list[StorageResult] = []
    steps = 6 + (8 if peers else 0) + (2 if spark else 0)
    try:
        with LocalS3() as s3, timing.progress_bar("storage bench", "steps", steps, progress, stream) as advance:
            places = [_Place(os.path.join(root, f"mergetree-{run_id}"), LOCAL),
                      _Place(s3.uri(f"mergetree-{run_id}"), S3, s3.options(), s3)]
            results += _mergetree_steps(places, commits, expected, lookup_keys, advance)
            if peers:
                for where, server in ((LOCAL, None), (S3, s3)):
                    if where == LOCAL:
                        delta_at, delta_options = os.path.join(root, f"delta-{run_id}"), None
                        warehouse, properties = "file://" + os.path.join(root, f"iceberg-{run_id}"), {}
                    else:
                        delta_at, delta_options = s3.uri(f"delta-{run_id}"), s3.options()
                        warehouse, properties = s3.uri(f"iceberg-{run_id}"), s3.iceberg_properties()
                    results += _peer(DELTA, where, _delta_steps, delta_at, where, delta_options, commits, server)
                    advance(2)
                    catalog_db = os.path.join(root, f"iceberg-catalog-{run_id}-{'s3' if server else 'local'}.db")
                    results += _peer(ICEBERG, where, _iceberg_steps, warehouse, catalog_db, where, properties, commits,
                                     server)
                    advance(2)
            if spark:
                results += _spark_steps([(p.location, p.where, p.options) for p in places], expected.num_rows, s3,
                                        os.path.join(root, "spark-warehouse"))
                advance(2)
    finally:
        if not directory:
            shutil.rmtree(root, ignore_errors=True)
    versions = {name: installed_version(name) or "not installed"
                for name in ("deltalake", "pyiceberg", "moto", "obstore", "pyspark")}
    return StorageReport(rows=sum(c.num_rows for c in commits), keys=keys, lookups=len(lookup_keys), results=results,
                         seconds=time.perf_counter() - started, versions=versions)


# ---------------------------------------------------------------- reporting


def _find(results: list, engine: str, step: str, where: str) -> StorageResult | None:
    for r in results:
        if r.engine == engine and r.step == step and r.where == where and r.ok:
            return r
    return None


def _rate_ratio(mine: StorageResult | None, theirs: StorageResult | None) -> float | None:
    if mine is None or theirs is None or not theirs.rows_per_second > 0:
        return None
    return mine.rows_per_second / theirs.rows_per_second


def storage_ratios(results: list) -> dict:
    """Every number the issue sets a target for (None when a side is missing or wrong), and the rest."""
    def gets(step: str) -> int | None:
        found = _find(results, MERGETREE, step, S3)
        return max(found.lookup_gets) if found is not None and found.lookup_gets else None

    return {
        "read_s3_vs_local": _rate_ratio(_find(results, MERGETREE, READ, S3), _find(results, MERGETREE, READ, LOCAL)),
        "compacted_read_s3_vs_local": _rate_ratio(_find(results, MERGETREE, READ_COMPACTED, S3),
                                                  _find(results, MERGETREE, READ_COMPACTED, LOCAL)),
        "write_s3_vs_local": _rate_ratio(_find(results, MERGETREE, WRITE, S3), _find(results, MERGETREE, WRITE, LOCAL)),
        "lookup_gets": gets(LOOKUP_COMPACTED),
        "lookup_gets_unmerged": gets(LOOKUP_UNMERGED),
        "write_vs_deltalake": _rate_ratio(_find(results, MERGETREE, WRITE, S3), _find(results, DELTA, WRITE, S3)),
        "write_vs_deltalake_local": _rate_ratio(_find(results, MERGETREE, WRITE, LOCAL),
                                                _find(results, DELTA, WRITE, LOCAL)),
        "write_vs_pyiceberg": _rate_ratio(_find(results, MERGETREE, WRITE, S3), _find(results, ICEBERG, WRITE, S3)),
        "read_vs_deltalake": _rate_ratio(_find(results, MERGETREE, READ, S3), _find(results, DELTA, PEER_READ, S3)),
        "read_vs_pyiceberg": _rate_ratio(_find(results, MERGETREE, READ, S3), _find(results, ICEBERG, PEER_READ, S3)),
        "targets": dict(TARGETS),
    }


def _verdict(met: bool) -> str:
    return "PASS" if met else "MISS"


def target_lines(ratios: dict) -> list[str]:
    lines = []
    r = ratios["read_s3_vs_local"]
    lines.append("full read (merge-on-read) on S3: " + ("? (a side is missing or wrong)" if r is None else
                 f"{r:.0%} of local disk's rows/s (target >= {TARGETS['read_s3_vs_local']:.0%}: "
                 f"{_verdict(r >= TARGETS['read_s3_vs_local'])})"))
    for name, what in (("lookup_gets", "one sorted run per bucket, after compaction"),
                       ("lookup_gets_unmerged", f"{COMMITS} sorted runs per bucket, before compaction")):
        g = ratios[name]
        limit = TARGETS["lookup_gets"]
        lines.append(f"point lookup with warm metadata ({what}): " + ("? (not measured)" if g is None else
                     f"at most {g} GET(s) (target <= {limit}: {_verdict(g <= limit)})"))
    r = ratios["write_vs_deltalake"]
    lines.append("write + commit on S3: " + ("? (a side is missing or failed)" if r is None else
                 f"mergetree {r:.2f}x delta-rs's rows/s (target >= {TARGETS['write_vs_deltalake']:g}x: "
                 f"{_verdict(r >= TARGETS['write_vs_deltalake'])})"))
    extra = [("write_vs_deltalake_local", "write + commit on local disk: mergetree {} delta-rs's rows/s"),
             ("write_vs_pyiceberg", "write + commit on S3: mergetree {} pyiceberg's rows/s"),
             ("read_vs_deltalake", "read on S3 (rows read from files per second): mergetree's merge-on-read {} "
                                   "delta-rs's plain read"),
             ("read_vs_pyiceberg", "read on S3 (rows read from files per second): mergetree's merge-on-read {} "
                                   "pyiceberg's plain read"),
             ("compacted_read_s3_vs_local", "read (compacted) on S3: {} local disk's rows/s"),
             ("write_s3_vs_local", "write + commit on S3: {} local disk's rows/s")]
    for name, text in extra:
        value = ratios[name]
        if value is not None:
            lines.append(text.format(f"{value:.0%}" if "local disk's" in text else f"{value:.2f}x"))
    return lines


def _requests_text(counts: dict | None) -> str:
    if not counts:
        return "-"
    return " ".join(f"{kind} {counts[kind]}" for kind in REQUEST_KINDS if counts.get(kind))


def _seconds_text(seconds: float, digits: int = 3) -> str:
    return f"{seconds:.{digits}f}" if seconds == seconds else "-"


def _rows(results: list) -> list:
    out = [("engine", "step", "where", "rows", "seconds", "rows/s", "cpu s", "server cpu s", "requests (server)",
            "mergetree counted", "")]
    for r in results:
        if r.latency_ms and r.ok:
            speed = f"p50 {r.latency_ms['median']:.1f} ms"
        else:
            speed = rate_text(r.rows_per_second)
        same = r.counted is not None and r.requests is not None and \
            all(r.counted.get(k, 0) == r.requests.get(k, 0) for k in REQUEST_KINDS)
        counted = "-" if r.counted is None else ("same" if same else _requests_text(r.counted))
        out.append((r.engine, r.step, r.where, f"{r.rows:,}" if r.rows else "-", _seconds_text(r.seconds), speed,
                    _seconds_text(r.cpu_seconds, 2), _seconds_text(r.server_cpu_seconds, 2),
                    _requests_text(r.requests), counted, "" if r.ok else escape(r.check)))
    return out


def format_storage_results(report: StorageReport) -> Group:
    """The table of every step, the targets with PASS/MISS, then the notes (print with `report.show`)."""
    ratios = storage_ratios(report.results)
    lines = target_lines(ratios)
    lines.append("requests (server): what the S3 server answered during the operation, from its own log (a multipart "
                 "upload's create, parts and complete count as PUTs); mergetree counted: its store's RequestCounter "
                 "over the same operation ('same' when it agrees); none on local disk (pyarrow reads the files)")
    lines.append("cpu s: this process's CPU seconds (every thread) of the timed run; server cpu s: the S3 server's "
                 "over the whole operation (all runs of a read); on a small machine the two share the cores")
    lines.append("the S3 server is moto's, one Python process on this machine: requests take ~2 ms and its Python "
                 "serves the bytes; the ratios say how the client behaves against it, not what S3 itself would give")
    notes = [f"{r.engine} {r.step} ({r.where}): {n}" for r in report.results for n in r.notes]
    text = lines + ["", "notes:"] + [f"  {n}" for n in notes]
    return Group(render.text_table(_rows(report.results), right_aligned={3, 4, 5, 6, 7}), Text(),
                 *(Text(line) for line in text))


def storage_json(report: StorageReport) -> dict:
    return {"rows": report.rows, "keys": report.keys, "lookups": report.lookups, "commits": COMMITS,
            "buckets": BUCKETS, "versions": report.versions, "seconds": report.seconds,
            "ratios": json_ready(storage_ratios(report.results)), "results": [r.to_dict() for r in report.results]}
