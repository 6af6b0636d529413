"""``mergetree bench --streaming`` (its Spark part): a CDC pipeline on ``local[2]`` —
JSON files of change events -> ``writeStream.format("mergetree")`` into T1 -> ``readStream``
of T1's changes -> ``writeStream`` into T2 — both queries running side by side in one session
with the default trigger (a micro-batch as soon as the previous one ends).

Each file holds ``batch_rows`` (100k) Debezium-style events (``op`` c/u/d: new keys, updates
and deletes of existing ones) and is one micro-batch of the first query (``maxFilesPerTrigger
= 1``).  Two phases:

* backlog: ``backlog`` files arrive at once; sustained rows/s = their events / seconds from
  their arrival to T2's commit of the last of them;
* paced: ``paced`` files arrive one at a time, each after T2 committed the one before; the
  latency of each is seconds from the file's arrival to the T2 commit that holds its changes.

Which T2 commit holds a file's changes is read from the pipeline itself, not guessed: the
first query commits one T1 snapshot per file (T1 has no other writer: the i-th file is
snapshot i), and the second query's offset log names the last T1 snapshot each of its
micro-batches read (its T2 snapshot records the batch id).  T2 is then checked (untimed)
against a model of the events.
"""
from __future__ import annotations

import json
import os
import shutil
import statistics
import tempfile
import time
from dataclasses import asdict, dataclass, field

import numpy as np

from mergetree import Table

__all__ = ["StreamingSparkResult", "format_streaming_spark_results", "run_streaming_spark_bench"]

DEFAULT_BATCH_ROWS = 100_000
DEFAULT_BACKLOG = 8
DEFAULT_PACED = 5
DEFAULT_BUCKETS = 4
QUICK_FACTOR = 10
SEED = 20261125
UPDATES, DELETES = 0.2, 0.1  # of each file's events; the rest insert new keys
JSON_SCHEMA = "id BIGINT, v STRING, op STRING"
POLL_SECONDS = 0.05
TIMEOUT_SECONDS = 900


@dataclass
class StreamingSparkResult:
    batch_rows: int
    backlog_files: int
    backlog_seconds: float            # first arrival -> T2's commit of the last backlog file
    paced_latencies: list[float] = field(default_factory=list)  # seconds, arrival -> T2 commit, per file
    t1_commits: int = 0
    t2_commits: int = 0
    check: str = "ok"                 # "ok" or what disagreed

    @property
    def rows_per_second(self) -> float:
        rows = self.batch_rows * self.backlog_files
        return rows / self.backlog_seconds if self.backlog_seconds > 0 else float("nan")

    @property
    def latency_median(self) -> float:
        return statistics.median(self.paced_latencies) if self.paced_latencies else float("nan")

    @property
    def latency_max(self) -> float:
        return max(self.paced_latencies) if self.paced_latencies else float("nan")

    def to_dict(self) -> dict:
        return {**asdict(self), "rows_per_second": self.rows_per_second, "latency_median": self.latency_median,
                "latency_max": self.latency_max}


class Events:
    """Change events file by file, with the model they build (key -> value)."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.live = np.empty(0, np.int64)   # keys present, in no order
        self.next_key = 0
        self.model: dict[int, str] = {}

    def file(self, rows: int, index: int) -> str:
        """One file's JSON lines: distinct keys, so the order inside the file does not matter."""
        n_upd = min(int(rows * UPDATES), len(self.live))
        n_del = min(int(rows * DELETES), len(self.live) - n_upd)
        chosen = self.rng.choice(len(self.live), n_upd + n_del, replace=False) if n_upd + n_del else \
            np.empty(0, np.int64)
        upd, dele = self.live[chosen[:n_upd]], self.live[chosen[n_upd:]]
        new = np.arange(self.next_key, self.next_key + rows - n_upd - n_del, dtype=np.int64)
        self.next_key += len(new)
        keep = np.ones(len(self.live), bool)
        keep[chosen[n_upd:]] = False
        self.live = np.concatenate([self.live[keep], new])
        lines = []
        for op, keys in (("c", new), ("u", upd), ("d", dele)):
            for k in keys.tolist():
                if op == "d":
                    self.model.pop(k)
                    lines.append(f'{{"id":{k},"v":null,"op":"d"}}')
                else:
                    v = f"f{index}-{k}"
                    self.model[k] = v
                    lines.append(f'{{"id":{k},"v":"{v}","op":"{op}"}}')
        return "\n".join(lines) + "\n"


def _arrive(events_dir: str, staging: str, name: str, text: str) -> float:
    """Publish a file into the source directory at once (written aside, then renamed);
    returns its arrival time."""
    path = os.path.join(staging, name)
    with open(path, "w") as f:
        f.write(text)
    now = time.time()
    os.utime(path, (now, now))
    os.rename(path, os.path.join(events_dir, name))
    return now


def _batch_end(checkpoint: str, batch_id: int) -> int:
    """The last T1 snapshot the second query's micro-batch `batch_id` read (its offset log)."""
    with open(os.path.join(checkpoint, "offsets", str(batch_id))) as f:
        return int(json.loads(f.read().strip().splitlines()[-1])["snapshot"])


def _t2_commits(t2: str, checkpoint: str) -> list[tuple[int, float]]:
    """(last T1 snapshot read, commit time in seconds) of each T2 commit, oldest first."""
    if not os.path.isdir(os.path.join(t2, "snapshot")):
        return []
    store = Table.open(t2).directory.store
    out = []
    for sid in store.snapshot_ids():
        s = store.snapshot(sid)
        if "spark.batch-id" in s.properties:
            out.append((_batch_end(checkpoint, int(s.properties["spark.batch-id"])), s.time_millis / 1000))
    return out


def _committed_at(t2: str, checkpoint: str, t1_snapshot: int, deadline: float, queries: list) -> float:
    """When T2 first committed changes up to T1 snapshot `t1_snapshot` (waits for it)."""
    while time.monotonic() < deadline:
        for query in queries:
            if query.exception() is not None:
                raise RuntimeError(f"a streaming query failed: {query.exception()}")
        times = [t for end, t in _t2_commits(t2, checkpoint) if end >= t1_snapshot]
        if times:
            return min(times)
        time.sleep(POLL_SECONDS)
    raise TimeoutError(f"T2 did not commit T1's snapshot {t1_snapshot} in time")


def run_streaming_spark_bench(batch_rows: int = DEFAULT_BATCH_ROWS, backlog: int = DEFAULT_BACKLOG,
                              paced: int = DEFAULT_PACED, buckets: int = DEFAULT_BUCKETS, quick: bool = False,
                              spark=None, workdir: str | None = None) -> StreamingSparkResult:
    """Run the pipeline once (see the module's doc); `spark`: a session to use (default: a
    fresh local[2] one, stopped at the end)."""
    import mergetree.spark as ms

    if quick:
        batch_rows = max(batch_rows // QUICK_FACTOR, 1000)
    root = workdir or tempfile.mkdtemp(prefix="mergetree-bench-streaming-")
    events_dir, staging = os.path.join(root, "events"), os.path.join(root, "staging")
    t1, t2 = os.path.join(root, "t1"), os.path.join(root, "t2")
    ck1, ck2 = os.path.join(root, "ck1"), os.path.join(root, "ck2")
    for d in (events_dir, staging):
        os.makedirs(d, exist_ok=True)
    own = spark is None
    if own:
        # timed: the JVM's full JIT (no fast-start flags)
        spark = ms.local_session("mergetree-bench-streaming", os.path.join(root, "warehouse"), fast_start=False,
                                 **{"spark.driver.memory": "2g"})
    ms.register(spark)
    events = Events(SEED)
    texts = [events.file(batch_rows, i) for i in range(1 + backlog + paced)]  # made before anything is timed
    queries = []
    try:
        # the first file creates T1 before the second query reads it
        _arrive(events_dir, staging, "events-00000.json", texts[0])
        q1 = (spark.readStream.schema(JSON_SCHEMA).option("maxFilesPerTrigger", 1).json(events_dir)
              .writeStream.format("mergetree").option("checkpointLocation", ck1).option("primaryKey", "id")
              .option("buckets", str(buckets)).option("rowKindColumn", "op").start(t1))
        queries.append(q1)
        deadline = time.monotonic() + TIMEOUT_SECONDS
        while not os.path.isdir(os.path.join(t1, "snapshot")) or not os.listdir(os.path.join(t1, "snapshot")):
            if q1.exception() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the first query wrote nothing: {q1.exception()}")
            time.sleep(POLL_SECONDS)
        q2 = (spark.readStream.format("mergetree").option("read.changelog", "true").load(t1).drop("_snapshot_id")
              .writeStream.format("mergetree").option("checkpointLocation", ck2).option("primaryKey", "id")
              .option("buckets", str(buckets)).start(t2))
        queries.append(q2)
        # warm-up: the first file through both queries, untimed
        _committed_at(t2, ck2, 1, deadline, queries)
        # backlog: the rest of the first phase's files at once
        start = time.time()
        for i in range(1, backlog + 1):
            _arrive(events_dir, staging, f"events-{i:05d}.json", texts[i])
        done = _committed_at(t2, ck2, backlog + 1, deadline, queries)
        result = StreamingSparkResult(batch_rows, backlog, done - start)
        # paced: one file at a time
        for i in range(backlog + 1, backlog + 1 + paced):
            arrived = _arrive(events_dir, staging, f"events-{i:05d}.json", texts[i])
            result.paced_latencies.append(_committed_at(t2, ck2, i + 1, deadline, queries) - arrived)
        for q in queries:
            q.stop()
        queries = []
        result.t1_commits = len(Table.open(t1).directory.store.snapshot_ids())
        result.t2_commits = len(_t2_commits(t2, ck2))
        got = Table.open(t2).read()
        ids, values = got.column("id").to_pylist(), got.column("v").to_pylist()
        if len(ids) != len(events.model) or any(events.model.get(k) != v for k, v in zip(ids, values)):
            result.check = f"T2 has {len(ids):,} rows, the model {len(events.model):,} (or values differ)"
        return result
    finally:
        for q in queries:
            q.stop()
        if own:
            spark.stop()
        if workdir is None:
            shutil.rmtree(root, ignore_errors=True)


def format_streaming_spark_results(result: StreamingSparkResult) -> str:
    lat = ", ".join(f"{s:.2f}" for s in result.paced_latencies)
    return (f"streaming pipeline (JSON -> mergetree T1 -> change stream -> T2, local[2], "
            f"{result.batch_rows:,}-row micro-batches)\n"
            f"  backlog: {result.backlog_files} files in {result.backlog_seconds:.2f} s: "
            f"{result.rows_per_second:,.0f} rows/s sustained\n"
            f"  latency, arrival -> T2 commit: median {result.latency_median:.2f} s, max {result.latency_max:.2f} s "
            f"({lat})\n"
            f"  commits: T1 {result.t1_commits}, T2 {result.t2_commits}; check: {result.check}")


if __name__ == "__main__":
    import argparse
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch-rows", type=int, default=DEFAULT_BATCH_ROWS)
    parser.add_argument("--backlog", type=int, default=DEFAULT_BACKLOG)
    parser.add_argument("--paced", type=int, default=DEFAULT_PACED)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args()
    res = run_streaming_spark_bench(args.batch_rows, args.backlog, args.paced, quick=args.quick)
    print(json.dumps(res.to_dict(), indent=2) if args.json else format_streaming_spark_results(res))
