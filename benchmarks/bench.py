"""``mergetree bench``: mergetree's merge against other ways to keep the newest row per key.

Four workloads, each ``K`` sorted runs:

* ``int64``: int64 key ``k``, int64 sequence ``seq`` and three payload columns; each run
  a random half of a key space twice as large as a run (a key is in about half the runs);
* ``int64-k16``: the same with 2K runs over 1,000,000 distinct keys (about 8 versions a key);
* ``string128``: 128-character random ASCII keys, key space as for ``int64``;
* ``prefix128``: 128-character keys sharing their first 100 characters (URLs, prefixed ids).

Every contender computes the deduplicate result (the row with the highest
``seq`` of every key, in key order) and returns it as Arrow.  Before any number
is shown, each contender's output is checked against mergetree's: a contender
that disagrees is reported as wrong and gets no ratio.

Times are the best of ``--repeat`` runs, taken round-robin across the contenders, with Python's cyclic garbage collector
paused while a run is timed (as ``timeit`` does).  The ``heapq.merge`` baseline
runs on a 1,000,000-row slice of the input; its rows per second are comparable,
its total time is not.

``--table`` adds (and ``--table-only`` runs alone) the primary-key table workload of
``benchmarks/bench_table.py``: upserts, merge-on-read, point lookups and a full compaction,
against pypaimon and pypaimon-rust when they are installed; ``--spark`` (``--spark-only``)
the Spark workload of ``benchmarks/bench_spark.py``; ``--layout`` (``--layout-only``) the data
layout workload of ``benchmarks/bench_layout.py``: linear, Z-order and Hilbert clustering, Bloom
and bitmap indexes, Top-N reads and pre-aggregates, against delta-rs's ``optimize.z_order``;
``--advisor`` (``--advisor-only``) the query-driven loop of ``benchmarks/bench_advisor.py`` on the
Star Schema Benchmark at scale factor 1 (``--advisor-scale``; the synthetic loop with ``--advisor-loop``);
``--scale`` (``--scale-only``) the cost curves of ``benchmarks/bench_scale.py``: write, merge-on-read,
full compaction, compacted read and point lookups at 1M, 10M and 100M rows, each operation in a
child process of its own so its peak memory is its own, and (``--scale-spark``) a Spark read of one
large bucket in ``local[1]`` against ``local[2]``; ``--paimon`` (``--paimon-only``) the Apache Paimon workload of
``benchmarks/bench_paimon.py``: tables written by pypaimon, read by pypaimon, pypaimon-rust and
``mergetree.paimon``, compacted by ``mergetree.paimon.compact`` and read again.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from rich.console import Console, Group, RenderableType
from rich.markup import escape
from rich.measure import Measurement
from rich.text import Text

from mergetree.cli import render

from . import timing

__all__ = ["Result", "Workload", "best_peer", "format_results", "main", "run_bench", "run_thread_scaling", "show"]

KEY = "k"
SEQ = "seq"
CHUNK_ROWS = 65_536
STRING_KEY_LENGTH = 128
HEAPQ_ROWS = 1_000_000
DEFAULT_ROWS = 8_000_000
DEFAULT_STRING_ROWS = 2_000_000
DEFAULT_RUNS = 8
K16_DISTINCT_KEYS = 1_000_000
SHARED_PREFIX = b"https://shop.example.com/catalog/electronics/computers/laptops/ultrabooks/14-inch/item?id=".ljust(
    100, b"0")  # the first 100 of every key's 128 characters
DEFAULT_REPEAT = 3
QUICK_FACTOR = 8
SEED = 20240611

MERGETREE_REFERENCE = "mergetree loser-tree"
MERGETREE_THREADS = "mergetree loser-tree threads=2"
PEERS = ("pyarrow", "polars", "polars unique", "duckdb", "duckdb arg_max")
_ALPHABET = np.frombuffer(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", dtype=np.uint8
)


# ---------------------------------------------------------------- workloads


@dataclass
class Workload:
    name: str
    runs: list  # of pa.Table, each sorted by KEY
    heapq_rows: int = HEAPQ_ROWS  # size of the slice the heapq.merge baseline gets

    @property
    def rows(self) -> int:
        return sum(run.num_rows for run in self.runs)

    def head(self, rows: int) -> Workload:
        """The first ``rows / K`` rows of every run (still sorted runs)."""
        per_run = max(rows // len(self.runs), 1)
        return Workload(self.name, [run.slice(0, per_run) for run in self.runs], rows)

    def heapq_slice(self) -> Workload:
        return self.head(self.heapq_rows) if self.heapq_rows < self.rows else self


def _rows_per_run(total_rows: int, runs: int) -> int:
    if runs < 1:
        raise ValueError("--runs must be at least 1")
    return max(total_rows // runs, 1)


def _sorted_sample(rng: np.random.Generator, space: int, size: int) -> np.ndarray:
    """``size`` distinct values of ``range(space)``, ascending."""
    return np.sort(rng.choice(space, size=size, replace=False))


def _payload(rng: np.random.Generator, seq: np.ndarray) -> dict:
    numbers = pc.cast(pa.array(seq), pa.string())
    return {
        "v_int": pa.array(rng.integers(0, 1 << 40, size=len(seq), dtype=np.int64)),
        "v_float": pa.array(rng.random(len(seq))),
        "v_str": pc.binary_join_element_wise("p-", numbers, ""),
    }


def _run_table(keys: pa.Array | pa.ChunkedArray, seq: np.ndarray, rng: np.random.Generator) -> pa.Table:
    columns = {KEY: keys, SEQ: pa.array(seq, type=pa.int64()), **_payload(rng, seq)}
    table = pa.table(columns).combine_chunks()
    return pa.Table.from_batches(table.to_batches(max_chunksize=CHUNK_ROWS), table.schema)


def _sequences(run_index: int, per_run: int) -> np.ndarray:
    """Unique sequence numbers; every row of run i is newer than any row of run i - 1."""
    return np.arange(run_index * per_run, (run_index + 1) * per_run, dtype=np.int64)


def make_int_workload(total_rows: int, runs: int, seed: int = SEED) -> Workload:
    rng = np.random.default_rng(seed)
    per_run = _rows_per_run(total_rows, runs)
    tables = []
    for index in range(runs):
        keys = pa.array(_sorted_sample(rng, 2 * per_run, per_run).astype(np.int64))
        tables.append(_run_table(keys, _sequences(index, per_run), rng))
    return Workload("int64", tables)


def _string_key_space(rng: np.random.Generator, size: int) -> np.ndarray:
    """``size`` random alphanumeric strings of STRING_KEY_LENGTH bytes, sorted (numpy ``S`` dtype)."""
    letters = _ALPHABET[rng.integers(0, len(_ALPHABET), size=(size, STRING_KEY_LENGTH), dtype=np.uint8)]
    return np.sort(letters.view(f"S{STRING_KEY_LENGTH}").ravel())


def _string_array(fixed: np.ndarray) -> pa.ChunkedArray:
    """Arrow utf8 chunks from a numpy ``S`` array whose strings all have full length."""
    chunks = []
    for start in range(0, len(fixed), CHUNK_ROWS):
        part = fixed[start:start + CHUNK_ROWS]
        offsets = np.arange(0, (len(part) + 1) * STRING_KEY_LENGTH, STRING_KEY_LENGTH, dtype=np.int32)
        buffers = [None, pa.py_buffer(offsets), pa.py_buffer(part.tobytes())]
        chunks.append(pa.Array.from_buffers(pa.string(), len(part), buffers))
    return pa.chunked_array(chunks, pa.string())


def make_k16_workload(total_rows: int, runs: int, seed: int = SEED + 2) -> Workload:
    """Twice the runs over a fixed 1,000,000-key space (fewer at --quick sizes)."""
    rng = np.random.default_rng(seed)
    per_run = _rows_per_run(total_rows, 2 * runs)
    space = max(per_run + 1, min(K16_DISTINCT_KEYS, total_rows // 8))
    tables = []
    for index in range(2 * runs):
        keys = pa.array(_sorted_sample(rng, space, per_run).astype(np.int64))
        tables.append(_run_table(keys, _sequences(index, per_run), rng))
    return Workload("int64-k16", tables)


def make_prefix_workload(total_rows: int, runs: int, seed: int = SEED + 3) -> Workload:
    """String keys whose first 100 bytes are one shared prefix: the 8-byte cached image
    of a key tells nothing, only the last 28 characters differ."""
    return make_string_workload(total_rows, runs, seed, prefix=SHARED_PREFIX, name="prefix128")


def make_string_workload(total_rows: int, runs: int, seed: int = SEED + 1, prefix: bytes = b"",
                         name: str = "string128") -> Workload:
    rng = np.random.default_rng(seed)
    per_run = _rows_per_run(total_rows, runs)
    space = _string_key_space(rng, 2 * per_run)
    if prefix:
        raw = space.view(np.uint8).reshape(len(space), STRING_KEY_LENGTH).copy()
        raw[:, :len(prefix)] = np.frombuffer(prefix, dtype=np.uint8)
        space = np.sort(raw.view(f"S{STRING_KEY_LENGTH}").ravel())
    tables = []
    for index in range(runs):
        keys = _string_array(space[_sorted_sample(rng, len(space), per_run)])
        tables.append(_run_table(keys, _sequences(index, per_run), rng))
    return Workload(name, tables)


# --------------------------------------------------------------- contenders


@dataclass
class Contender:
    name: str
    run: Callable  # (list of runs) -> (pa.Table, stats or None)
    threads: int = 1
    heapq_slice: bool = False


def _mergetree(algorithm: str, threads: int = 1) -> Callable:
    import mergetree

    def run(runs):
        reader = mergetree.merge(runs, KEY, sequence=SEQ, engine="deduplicate", algorithm=algorithm,
                                 threads=threads)
        table = reader.read_all()
        return table, reader.stats

    return run


def _keep_last_per_key(table: pa.Table) -> pa.Table:
    """Rows whose key differs from the next row's key (the table is sorted by key, seq)."""
    if table.num_rows == 0:
        return table
    keys = table.column(KEY).combine_chunks()
    differs = pc.not_equal(keys.slice(0, len(keys) - 1), keys.slice(1))
    return table.filter(pa.concat_arrays([differs, pa.array([True])]))


def _pyarrow(runs):
    ordered = pa.concat_tables(runs).sort_by([(KEY, "ascending"), (SEQ, "ascending")])
    return _keep_last_per_key(ordered), None


def _heapq(runs):
    import heapq
    from operator import itemgetter

    names = runs[0].column_names
    key_at, seq_at = names.index(KEY), names.index(SEQ)
    lists = [list(zip(*(column.to_pylist() for column in run.columns))) for run in runs]
    merged = heapq.merge(*lists, key=itemgetter(key_at, seq_at))
    newest = []
    for row in merged:
        if newest and newest[-1][key_at] == row[key_at]:
            newest[-1] = row
        else:
            newest.append(row)
    columns = list(zip(*newest)) if newest else [[] for _ in names]
    schema = runs[0].schema
    return pa.table([pa.array(column, type=schema.field(i).type) for i, column in enumerate(columns)],
                    schema=schema), None


def _polars(runs):
    import polars as pl

    frame = pl.from_arrow(pa.concat_tables(runs), rechunk=False)
    newest = frame.sort([KEY, SEQ]).unique(subset=KEY, keep="last", maintain_order=True)
    return newest.to_arrow(), None


def _polars_unique(runs):
    """polars' fastest form: keep the last row per key without sorting the input
    (valid here because later runs carry higher sequences), then order the result."""
    import polars as pl

    frame = pl.from_arrow(pa.concat_tables(runs), rechunk=False)
    return frame.unique(subset=KEY, keep="last").sort(KEY).to_arrow(), None


def _duckdb_arg_max(runs):
    """duckdb's fastest form: arg_max(column, seq) per key, ordered by key."""
    import duckdb

    table = pa.concat_tables(runs)
    payload = [c for c in table.column_names if c not in (KEY, SEQ)]
    picks = ", ".join(f'arg_max("{c}", {SEQ}) AS "{c}"' for c in payload)
    query = f"SELECT {KEY}, max({SEQ}) AS {SEQ}, {picks} FROM runs GROUP BY {KEY} ORDER BY {KEY}"
    connection = duckdb.connect()
    try:
        connection.register("runs", table)
        return _duckdb_table(connection.sql(query)).select(table.column_names), None
    finally:
        connection.close()


_DUCKDB_QUERY = (f"SELECT * FROM runs QUALIFY row_number() OVER (PARTITION BY {KEY} ORDER BY {SEQ} DESC) = 1 "
                 f"ORDER BY {KEY}")


def _duckdb_table(relation) -> pa.Table:
    for method in ("to_arrow_table", "fetch_arrow_table", "arrow"):
        if hasattr(type(relation), method):
            result = getattr(relation, method)()
            return result.read_all() if isinstance(result, pa.RecordBatchReader) else result
    raise RuntimeError("this duckdb has no way to return an Arrow table")


def _duckdb(runs):
    import duckdb

    connection = duckdb.connect()
    try:
        connection.register("runs", pa.concat_tables(runs))
        return _duckdb_table(connection.sql(_DUCKDB_QUERY)), None
    finally:
        connection.close()


def _polars_threads() -> int | None:
    try:
        import polars as pl
    except ImportError:
        return None
    return pl.thread_pool_size()


def _duckdb_threads() -> int | None:
    try:
        import duckdb
    except ImportError:
        return None
    connection = duckdb.connect()
    try:
        return int(connection.sql("SELECT current_setting('threads')").fetchall()[0][0])
    finally:
        connection.close()


def available_contenders() -> list[Contender]:
    """Every contender that can run here, mergetree's loser tree first (the reference)."""
    contenders = [
        Contender(MERGETREE_REFERENCE, _mergetree("loser-tree")),
        Contender("mergetree heap", _mergetree("heap")),
        Contender(MERGETREE_THREADS, _mergetree("loser-tree", 2), threads=2),
        Contender("heapq.merge", _heapq, heapq_slice=True),
        Contender("pyarrow", _pyarrow, threads=pa.cpu_count()),
    ]
    polars_threads = _polars_threads()
    if polars_threads is not None:
        contenders.append(Contender("polars", _polars, threads=polars_threads))
        contenders.append(Contender("polars unique", _polars_unique, threads=polars_threads))
    duckdb_threads = _duckdb_threads()
    if duckdb_threads is not None:
        contenders.append(Contender("duckdb", _duckdb, threads=duckdb_threads))
        contenders.append(Contender("duckdb arg_max", _duckdb_arg_max, threads=duckdb_threads))
    return contenders


# ------------------------------------------------------------------ running


@dataclass
class Result:
    contender: str
    workload: str
    rows_in: int
    rows_out: int = 0
    seconds: float = float("nan")
    threads: int = 1
    key_comparisons: int | None = None
    sequence_comparisons: int | None = None
    check: str = "ok"  # "ok", or why the output cannot be trusted
    notes: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.check == "ok"

    @property
    def rows_per_second(self) -> float:
        return self.rows_in / self.seconds if self.ok and self.seconds > 0 else float("nan")

    def to_dict(self) -> dict:
        return {**asdict(self), "rows_per_second": self.rows_per_second}


def _same_rows(got: pa.Table, want: pa.Table) -> str:
    """'ok' when ``got`` has ``want``'s row count, keys and sequence numbers in order."""
    if got.num_rows != want.num_rows:
        return f"wrong: {got.num_rows} rows, mergetree has {want.num_rows}"
    for name in (KEY, SEQ):
        expected = want.column(name).combine_chunks()
        actual = got.column(name).combine_chunks()
        if actual.type != expected.type:
            actual = pc.cast(actual, expected.type)
        if not actual.equals(expected):
            return f"wrong: column {name!r} differs from mergetree's"
    return "ok"


def _reference(workload: Workload) -> pa.Table:
    import mergetree

    return mergetree.merge(workload.runs, KEY, sequence=SEQ, engine="deduplicate").read_all()


def _bench_workload(workload: Workload, contenders: list, repeat: int, tick: Callable[[], None]) -> list:
    """Time every contender ``repeat`` times, round-robin (one run of each in turn), keeping
    each one's best: on a shared machine a slow spell then hits every contender alike
    instead of whichever one happened to be timed during it."""
    subjects = [workload.heapq_slice() if c.heapq_slice else workload for c in contenders]
    results = [Result(c.name, s.name, s.rows, threads=c.threads) for c, s in zip(contenders, subjects)]
    outputs: list = [None] * len(contenders)
    for contender in contenders:
        _warm_up(contender, workload)
    for _ in range(repeat):
        for i, (contender, subject) in enumerate(zip(contenders, subjects)):
            if not results[i].ok:
                tick()
                continue
            try:
                run = timing.timed(contender.run, subject.runs)
            except Exception as error:  # a failing contender is reported, not fatal
                results[i].check = f"failed: {type(error).__name__}: {error}"
                outputs[i] = None
                tick()
                continue
            if not run.seconds >= results[i].seconds:  # nan at first
                results[i].seconds = run.seconds
            outputs[i] = run.output
            tick()
    reference = None
    for i, contender in enumerate(contenders):
        result, subject = results[i], subjects[i]
        if outputs[i] is None:
            continue
        table, stats = outputs[i]
        result.rows_out = table.num_rows
        result.key_comparisons = getattr(stats, "key_comparisons", None)
        result.sequence_comparisons = getattr(stats, "sequence_comparisons", None)
        if contender.heapq_slice:
            result.notes.append(f"ran on a {subject.rows:,}-row slice (the first rows of every run)")
        if contender.name == MERGETREE_REFERENCE:
            reference = table
        elif contender.heapq_slice:
            result.check = _same_rows(table, _reference(subject))
        elif reference is not None:
            result.check = _same_rows(table, reference)
        else:
            result.check = "unchecked: mergetree failed, nothing to compare with"
        outputs[i] = None
    return results


def _warm_up(contender: Contender, workload: Workload) -> None:
    """One untimed run on a small slice, so lazy imports and first-call setup are not timed."""
    try:
        contender.run(workload.head(min(workload.rows, 32_768)).runs)
    except Exception:  # the timed run reports the failure
        pass


def run_bench(rows: int = DEFAULT_ROWS, string_rows: int = DEFAULT_STRING_ROWS, runs: int = DEFAULT_RUNS,
              repeat: int = DEFAULT_REPEAT, quick: bool = False, contenders: list[str] | None = None,
              progress: bool | None = None, stream=sys.stderr) -> list[Result]:
    """Build both workloads and time every contender on them.

    ``quick`` divides every size (and the heapq slice) by 8.  ``contenders``
    keeps only the named ones (``mergetree loser-tree`` always runs: it is the
    reference the others are checked against).  Returns one Result per
    contender and workload."""
    factor = QUICK_FACTOR if quick else 1
    chosen = [c for c in available_contenders()
              if contenders is None or c.name in contenders or c.name == MERGETREE_REFERENCE]
    workloads = [(make_int_workload, rows, "int64"), (make_k16_workload, rows, "int64-k16"),
                 (make_string_workload, string_rows, "string128"), (make_prefix_workload, string_rows, "prefix128")]
    results = []
    for make, size, name in workloads:
        # a bar per workload, so the log tells which one ran how long
        with timing.progress_bar(f"bench {name}", "timed runs", len(chosen) * repeat, progress, stream) as advance:
            workload = make(max(size // factor, runs), runs)
            workload.heapq_rows = HEAPQ_ROWS // factor
            results.extend(_bench_workload(workload, chosen, repeat, advance))
            del workload
    return results


def run_thread_scaling(rows: int, runs: int, repeat: int) -> dict:
    """Time one merge, then two merges at once in two threads on independent copies.

    ``ratio`` is the throughput of the pair over the throughput of one merge:
    2.0 is perfect scaling on two free cores, 1.0 means the merges serialized.
    ``machine_ratio`` is the same measure for numpy's sort (which releases the
    GIL), to tell what two threads can get on this machine at this moment."""
    import mergetree

    copies = [make_int_workload(rows, runs, seed=SEED + 10), make_int_workload(rows, runs, seed=SEED + 11)]

    def merge_one(workload):
        return mergetree.merge(workload.runs, KEY, sequence=SEQ, engine="deduplicate").read_all().num_rows

    single, pair = _one_and_two_threads(merge_one, copies, repeat)
    rng = np.random.default_rng(SEED)
    arrays = [rng.random(max(rows // 2, 1)) for _ in range(2)]
    sort_single, sort_pair = _one_and_two_threads(np.sort, arrays, repeat)
    return {"rows_per_merge": copies[0].rows, "runs": runs, "one_merge_seconds": single,
            "two_merges_seconds": pair, "ratio": 2 * single / pair,
            "machine_ratio": 2 * sort_single / sort_pair, "cpu_count": os.cpu_count()}


def _one_and_two_threads(task: Callable, inputs: list, repeat: int) -> tuple:
    """Best seconds of ``task(inputs[0])`` alone, and of ``task`` on both inputs in two threads."""
    single = timing.best_of(task, inputs[0], repeat=repeat).seconds
    pair = timing.best_of(_in_threads, task, inputs, repeat=repeat).seconds
    return single, pair


def _in_threads(task: Callable, inputs: list) -> None:
    """``task(x)`` for every input at once, one thread each; re-raises the first error."""
    start = threading.Barrier(len(inputs))
    errors = []

    def work(item):
        start.wait()
        try:
            task(item)
        except BaseException as error:  # re-raised in the calling thread
            errors.append(error)

    threads = [threading.Thread(target=work, args=(item,)) for item in inputs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]


# ---------------------------------------------------------------- reporting


def _rate(rows_per_second: float) -> str:
    if rows_per_second != rows_per_second:  # nan
        return "-"
    if rows_per_second >= 1e6:
        return f"{rows_per_second / 1e6:.2f} M/s"
    return f"{rows_per_second / 1e3:.1f} k/s"


def _reference_result(results: list, workload: str) -> Result | None:
    for result in results:
        if result.workload == workload and result.contender == MERGETREE_REFERENCE and result.ok:
            return result
    return None


def speedup(results: list, workload: str, contender: str) -> float | None:
    """How many times mergetree's (loser tree) rows per second is the contender's."""
    reference = _reference_result(results, workload)
    for result in results:
        if result.workload == workload and result.contender == contender and result.ok and reference:
            return reference.rows_per_second / result.rows_per_second
    return None


def _ratio(results: list, workload: str, ours: str, theirs: str) -> float | None:
    """How many times `ours`'s rows per second is `theirs`'s, in one workload."""
    speeds = {r.contender: r.rows_per_second for r in results if r.workload == workload and r.ok}
    if ours in speeds and theirs in speeds:
        return speeds[ours] / speeds[theirs]
    return None


def best_peer(results: list, workload: str) -> tuple[str, float] | None:
    """The fastest peer (pyarrow, polars, duckdb in any form) of a workload and mergetree's
    single-threaded ratio to it."""
    peers = [r for r in results if r.workload == workload and r.ok and r.contender in PEERS]
    if not peers:
        return None
    fastest = max(peers, key=lambda r: r.rows_per_second)
    ratio = _ratio(results, workload, MERGETREE_REFERENCE, fastest.contender)
    return (fastest.contender, ratio) if ratio is not None else None


def _table_rows(results: list) -> list:
    rows = [("workload", "contender", "threads", "rows in", "rows out", "best s", "rows/s", "mergetree is")]
    for r in results:
        ratio = speedup(results, r.workload, r.contender)
        shown = "(reference)" if r.contender == MERGETREE_REFERENCE and r.ok else (
            f"{ratio:.2f}x {r.contender}" if ratio is not None else escape(r.check))
        rows.append((r.workload, r.contender, str(r.threads), f"{r.rows_in:,}", f"{r.rows_out:,}" if r.ok else "-",
                     f"{r.seconds:.3f}" if r.ok else "-", _rate(r.rows_per_second), shown))
    return rows


def _comparison_lines(results: list) -> list:
    lines = []
    for workload in dict.fromkeys(r.workload for r in results):
        best = best_peer(results, workload)
        if best is not None:
            peer, ratio = best
            threaded = _ratio(results, workload, MERGETREE_THREADS, peer)
            lines.append(f"{workload}: mergetree (1 thread) is {ratio:.2f}x the fastest peer ({peer})"
                         + (f"; with threads=2 {threaded:.2f}x" if threaded is not None else ""))
        heap = speedup(results, workload, "mergetree heap")
        if heap is not None:
            lines.append(f"{workload}: loser tree is {heap:.2f}x the heap")
        for r in results:
            if r.workload == workload and r.contender.startswith("mergetree") and r.ok and r.rows_out:
                lines.append(f"{workload}: {r.contender}: {_per_row(r.key_comparisons, r.rows_out)} key and "
                             f"{_per_row(r.sequence_comparisons, r.rows_out)} sequence comparisons per output row")
    notes = {note for r in results for note in r.notes}
    lines.extend(f"heapq.merge: {note}; its rows/s compare, its time does not" for note in sorted(notes))
    return lines


def _per_row(count: int | None, rows: int) -> str:
    return "?" if count is None else f"{count / rows:.2f}"


def format_results(results: list) -> Group:
    """The results as a table followed by the ratios and merge statistics (print with `show`)."""
    table = render.text_table(_table_rows(results), right_aligned={2, 3, 4, 5, 6})
    return Group(table, Text(), *(Text(line) for line in _comparison_lines(results)))


def show(renderable: RenderableType) -> None:
    """Print a report on standard output at its full width: a console narrower than the
    table (a pipe or a CI log counts as 80 columns) would otherwise cut its cells short."""
    console = render.out_console
    width = Measurement.get(console, console.options.update_width(1_000_000), renderable).maximum
    if width > console.width:
        # Console.print never goes wider than its console: print through one as wide as the report
        console = Console(file=console.file, width=width, highlight=False, force_terminal=console.is_terminal,
                          no_color=console.no_color)
    console.print(renderable)


def _environment() -> dict:
    versions = {"python": platform.python_version(), "pyarrow": pa.__version__, "numpy": np.__version__}
    for name in ("mergetree", "polars", "duckdb"):
        try:
            versions[name] = getattr(__import__(name), "__version__", "?")
        except ImportError:
            pass
    return {"platform": platform.platform(), "machine": platform.machine(), "cpu_count": os.cpu_count(),
            "versions": versions}


def plot_results(results: list, path: str, title: str = "") -> None:
    """A bar chart of input rows per second, log scale, one panel per workload."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    workloads = list(dict.fromkeys(r.workload for r in results))
    columns = min(2, len(workloads))
    rows = (len(workloads) + columns - 1) // columns
    figure, axes = plt.subplots(rows, columns, figsize=(6.5 * columns, 4.2 * rows), squeeze=False)
    for axis, workload in zip(axes.ravel(), workloads):
        _plot_panel(axis, [r for r in results if r.workload == workload and r.ok], workload)
    for axis in axes.ravel()[len(workloads):]:
        axis.set_visible(False)
    if title:
        figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(path, dpi=130)
    plt.close(figure)


def _plot_label(result: Result) -> str:
    label = result.contender
    if result.threads > 1:
        label += f" ({result.threads} threads)"
    if any("slice" in note for note in result.notes):
        label += f"\n(on {result.rows_in:,} rows)"
    return label


def _plot_panel(axis, results: list, workload: str) -> None:
    names = [_plot_label(r) for r in results][::-1]
    speeds = [r.rows_per_second for r in results][::-1]
    colors = ["tab:blue" if name.startswith("mergetree") else "tab:gray" for name in names]
    bars = axis.barh(names, speeds, color=colors)
    axis.set_xscale("log")
    axis.set_xlim(min(speeds) / 3, max(speeds) * 4)
    for bar, speed in zip(bars, speeds):
        axis.text(speed * 1.1, bar.get_y() + bar.get_height() / 2, _rate(speed), va="center", fontsize=9)
    rows = max((r.rows_in for r in results), default=0)
    axis.tick_params(axis="y", labelsize=9)
    axis.set_title(f"{workload} keys, {rows:,} input rows")
    axis.set_xlabel("input rows per second (log scale, higher is better)")
    axis.grid(axis="x", which="major", alpha=0.3)


def _matplotlib_missing() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return True
    return False


def _parser() -> argparse.ArgumentParser:
    from . import bench_paimon, bench_scale, bench_table

    parser = argparse.ArgumentParser(
        prog="mergetree bench", formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description="Time mergetree's deduplicate merge against heapq.merge, pyarrow, polars and duckdb "
                    "on int64 and 128-character string keys; every output is checked against mergetree's.")
    parser.add_argument("--rows", type=int, default=DEFAULT_ROWS, help="input rows of the int64 workload")
    parser.add_argument("--string-rows", type=int, default=DEFAULT_STRING_ROWS,
                        help="input rows of the 128-character string key workload")
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS, help="number of sorted runs (K)")
    parser.add_argument("--repeat", type=int, default=DEFAULT_REPEAT, help="timed runs per contender; best kept")
    parser.add_argument("--quick", action="store_true",
                        help="divide every size by 8 (the table workload's by 10; the scale workload runs 100k,1M,10M)")
    parser.add_argument("--threads", action="store_true",
                        help="also time two merges at once in two threads against one")
    parser.add_argument("--plot", metavar="FILE.png", help="save a bar chart (needs matplotlib)")
    parser.add_argument("--json", metavar="FILE", help="write every number as JSON")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
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
        "again; targets: reads 30x pypaimon and 1.5x pypaimon-rust, lookups no slower than pypaimon-rust, every "
        "reader faster after compaction, compaction at 70% of the rewrite's rows/s (see benchmarks/bench_paimon.py)")
    paimon.add_argument("--paimon", action="store_true", help="also run the paimon workload")
    paimon.add_argument("--paimon-only", action="store_true", help="run only the paimon workload")
    paimon.add_argument("--paimon-keys", type=bench_paimon.keys_argument, metavar="KEYS",
                        default=bench_paimon.DEFAULT_KEYS,
                        help="keys of every table, k/M suffixes allowed (--quick divides it by 10)")
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
    if not args.advisor_scale > 0:
        print("mergetree bench: --advisor-scale must be positive", file=sys.stderr)
        return 2
    environment = _environment()
    results, scaling = [], None
    merge_bench = not (args.table_only or args.spark_only or args.layout_only or args.advisor_only or args.scale_only
                       or args.paimon_only)
    if merge_bench:
        print(f"mergetree bench: K={args.runs} runs, best of {args.repeat}, {environment['cpu_count']} CPUs, "
              + ", ".join(f"{k} {v}" for k, v in environment["versions"].items()), flush=True)
        results = run_bench(args.rows, args.string_rows, args.runs, args.repeat, args.quick,
                            progress=False if args.no_progress else None)
        show(format_results(results))
        scaling = _thread_check(args) if args.threads else None
    table = _table_bench(args, environment) if args.table or args.table_only else None
    spark = _spark_bench(args) if args.spark or args.spark_only else None
    layout = _layout_bench(args, merge_bench or table is not None or spark is not None) \
        if args.layout or args.layout_only else None
    scale = _scale_bench(args, merge_bench or table is not None or spark is not None or layout is not None) \
        if args.scale or args.scale_only or args.scale_spark else None
    paimon = _paimon_bench(args, merge_bench or table is not None or spark is not None or layout is not None
                           or scale is not None) if args.paimon or args.paimon_only else None
    if args.plot:
        table_chart = args.plot if args.table_only else _beside(args.plot, "-table")
        if merge_bench:
            plot_results(results, args.plot, title=f"deduplicate merge of {args.runs} sorted runs")
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
        _write_json(args, environment, results, scaling, table, spark, layout, scale, paimon)
        print(f"numbers written to {args.json}")
    table_ok = table is None or all(r.ok or r.check.startswith("unavailable") for r in table["results"])
    spark_ok = spark is None or all(r.check == "ok" for r in spark)
    layout_ok = layout is None or layout.ok
    scale_ok = scale is None or scale.ok
    paimon_ok = paimon is None or paimon.ok
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
    return 0 if all(r.ok for r in results) and table_ok and spark_ok and layout_ok and advisor_ok and scale_ok \
        and paimon_ok else 1


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
          f"{bl.deltalake_version() or 'not installed'}", flush=True)
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

    return (f"{', '.join(bsc.short_count(rows) for rows in scale.sizes)} rows, {bsc.BUCKETS} buckets, every key twice, "
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
    print(f"mergetree bench --paimon: {keys:,} keys, {', '.join(map(str, bp.COMMIT_COUNTS))} commits of half the keys "
          f"each, bucket {' and '.join(map(str, bp.BUCKET_COUNTS))}, {bp.LOOKUPS} lookups; {os.cpu_count()} CPUs, "
          f"pyarrow {pa.__version__}, pypaimon {versions['pypaimon']}, pypaimon-rust {versions['pypaimon-rust']}",
          flush=True)
    report = bp.run_paimon_bench(keys, progress=False if args.no_progress else None)
    show(bp.format_paimon_results(report))
    print(f"paimon workload took {report.seconds:.0f}s")
    return report


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


def _thread_check(args) -> dict:
    rows = max(args.rows // (QUICK_FACTOR if args.quick else 1), args.runs)
    scaling = run_thread_scaling(rows, args.runs, args.repeat)
    print(f"\nthreads: one merge of {scaling['rows_per_merge']:,} rows {scaling['one_merge_seconds']:.3f}s; "
          f"two at once in two threads {scaling['two_merges_seconds']:.3f}s: "
          f"{scaling['ratio']:.2f}x the throughput of one (2.00 is perfect on 2 free cores)")
    print(f"threads: numpy's sort, which also runs without the GIL, gets {scaling['machine_ratio']:.2f}x "
          f"from two threads on this machine now (a lower figure means the cores are busy or shared)")
    return scaling


def _write_json(args, environment: dict, results: list, scaling: dict | None, table: dict | None = None,
                spark: list | None = None, layout=None, scale=None, paimon=None) -> None:
    workloads = dict.fromkeys(r.workload for r in results)
    document = {
        "config": {k: v for k, v in vars(args).items() if k not in ("plot", "json")},
        "environment": environment,
        "results": [r.to_dict() for r in results],
        "mergetree_speedup": {w: {r.contender: speedup(results, w, r.contender)
                                  for r in results if r.workload == w and r.contender != MERGETREE_REFERENCE}
                              for w in workloads},
        "best_peer": {w: best_peer(results, w) for w in workloads},
        "threads2_vs_best_peer": {w: _ratio(results, w, MERGETREE_THREADS, best[0])
                                  for w in workloads if (best := best_peer(results, w)) is not None},
        "threads": scaling,
    }
    if table is not None:
        document["table"] = {"sizes": table["sizes"], "peers": table["peers"], "ratios": table["ratios"],
                             "results": [r.to_dict() for r in table["results"]]}
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
    with open(args.json, "w", encoding="utf-8") as handle:
        json.dump(document, handle, indent=2, default=str)
        handle.write("\n")


if __name__ == "__main__":
    sys.exit(main())
