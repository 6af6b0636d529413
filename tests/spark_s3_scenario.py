"""The Spark jobs of tests/test_spark_s3.py, the same on any root: a local directory or an
`s3://` prefix.  `run` writes (the data source and `mergetree.spark.write`), reads, compacts,
optimizes and bucket-joins tables under the root and returns what each step answered, so a
run on the S3 server can be compared with one on a local disk.

Run as a script it is the driver of the cluster test: it reads its storage options as JSON
from stdin (never from a file or the environment), connects to the given master, runs the
scenario and the checks only a cluster can answer (which executor processes ran the tasks,
where, with what environment; which Python processes loaded obstore), and writes the answers
into an output directory as Arrow IPC files and one JSON file.  Importing it imports neither
pyspark nor mergetree.
"""
from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

ANSWERS = ("read", "filtered", "after_compact", "optimized", "optimized_files", "join", "left_join",
           "fallback_join", "after_optimize", "kinds")
# what the cluster runs: each kind of job once (its Python workers start cold, on two cores)
CLUSTER_ANSWERS = ("read", "filtered", "after_compact", "optimized", "optimized_files", "join", "kinds")


def _read(spark: Any, path: str, options: dict[str, str], where: str | None = None) -> Any:
    """A fresh DataFrame per read (Spark keeps a pushed-down filter on a DataFrame's data source
    for the DataFrame's later queries), as an Arrow table sorted by every column."""
    frame = spark.read.format("mergetree").options(**options).load(path)
    if where:
        frame = frame.where(where)
    return _sorted(frame.toArrow())


def _sorted(table: Any) -> Any:
    return table.sort_by([(name, "ascending") for name in table.column_names])


def run(spark: Any, root: str, storage_options: dict[str, Any] | None, steps: list | None = None,
        every: bool = True) -> dict[str, Any]:
    """The jobs on tables under `root`; what each answered (Arrow tables and plain values):
    `ANSWERS`, or with `every=False` `CLUSTER_ANSWERS`.  `steps` gets (answer, seconds since
    the start) as each answer arrives (diagnostics)."""
    import pyarrow as pa

    import mergetree.spark as ms
    from mergetree import Table

    ms.register(spark)
    so = dict(storage_options or {})
    opt = {k: str(v) for k, v in so.items()}
    pk, right, odd, ap = (f"{root}/{name}" for name in ("pk", "right", "odd", "ap"))
    answers: dict[str, Any] = {}
    if steps is not None:
        started = time.monotonic()

        class Timed(dict):
            def __setitem__(self, name: str, value: Any) -> None:
                steps.append((name, round(time.monotonic() - started, 2)))
                super().__setitem__(name, value)
        answers = Timed()

    def rows(start: int, end: int, tag: str) -> Any:
        return spark.range(start, end, 1, 3).selectExpr("id", f"concat('{tag}', id % 7) as v", "id * 10 as n")

    # the data source creates and writes; the routed write updates half the keys
    (rows(0, 3000, "a").write.format("mergetree").mode("append")
     .options(primaryKey="id", buckets="4", **opt).save(pk))
    ms.write(rows(1500, 4500, "b"), pk, storage_options=so)
    answers["read"] = _read(spark, pk, opt)
    answers["filtered"] = _read(spark, pk, opt, "id in (5, 2000, 4400) or v = 'b3'")

    kinds = [ms.compact(spark, pk, full=True, storage_options=so).commit_kind]
    answers["after_compact"] = _read(spark, pk, opt)

    # an append table laid out on a Hilbert curve by the distributed optimize
    points = spark.range(0, 6000, 1, 3).selectExpr("id", "(id * 7919) % 1000 as x", "(id * 104729) % 997 as y")
    points.write.format("mergetree").mode("append").options(**opt).save(ap)  # a file per task
    kinds.append(ms.optimize(spark, ap, order=["x", "y"], strategy="hilbert", target_file_size=16 * 1024,
                             storage_options=so).commit_kind)
    answers["optimized"] = _read(spark, ap, opt)
    table = Table.open(ap, storage_options=so or None)
    answers["optimized_files"] = sorted(e.file.row_count for e in table.directory.live_files(
        table.latest_snapshot()).values())

    # bucket joins: 2 buckets against 4 (joinable), and 3 against 4 (Spark's own join)
    (rows(1000, 5000, "r").write.format("mergetree").mode("append")
     .options(primaryKey="id", buckets="2", **opt).save(right))
    answers["join"] = _sorted(ms.bucket_join(spark, pk, right, on="id", storage_options=so).toArrow())
    if not every:
        answers["kinds"] = kinds
        return dict(answers)
    (rows(2000, 2600, "o").write.format("mergetree").mode("append")
     .options(primaryKey="id", buckets="3", **opt).save(odd))
    answers["left_join"] = _sorted(ms.bucket_join(spark, right, pk, on="id", how="left",
                                                  storage_options=so).toArrow())
    answers["fallback_join"] = _sorted(ms.bucket_join(spark, pk, odd, on="id", fallback=True,
                                                      storage_options=so).toArrow())

    # a primary-key table's optimize is a distributed full compaction
    ms.write(rows(4000, 4600, "c"), pk, storage_options=so)
    kinds.append(ms.optimize(spark, pk, storage_options=so).commit_kind)
    answers["after_optimize"] = _read(spark, pk, opt)
    answers["kinds"] = kinds
    assert isinstance(answers["read"], pa.Table)
    return dict(answers)


# -- the cluster driver -----------------------------------------------------------------

def _maps_obstore(pid: int) -> bool | None:
    """Whether process `pid` has obstore's native module mapped (None if it is gone)."""
    try:
        with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as fh:
            return any("obstore" in line for line in fh)
    except OSError:
        return None


def python_workers() -> dict[str, list[dict]]:
    """This machine's PySpark daemons (the processes Python workers are forked from) and
    their children, each with whether it has obstore loaded."""
    found: dict[str, list[dict]] = {"daemons": [], "workers": []}
    candidates = set()
    processes = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmdline = fh.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{entry}/stat", encoding="utf-8") as fh:
                parent = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        processes[int(entry)] = parent
        if "pyspark.daemon" in cmdline:  # a daemon, or a worker it forked (which keeps its command line)
            candidates.add(int(entry))
    daemons = {pid for pid in candidates if processes[pid] not in candidates}
    for pid in sorted(daemons):
        found["daemons"].append({"pid": pid, "cwd": _cwd(pid), "obstore": _maps_obstore(pid)})
    for pid, parent in sorted(processes.items()):
        if parent in daemons:
            found["workers"].append({"pid": pid, "cwd": _cwd(pid), "obstore": _maps_obstore(pid)})
    return found


def _cwd(pid: int) -> str:
    try:
        return os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return ""


def cluster_main(master: str, root: str, out: str, read_only_key_id: str) -> None:
    """Run the scenario on a standalone cluster and write its answers into `out`."""
    import pyarrow as pa

    from mergetree.spark import local_session

    so = json.loads(sys.stdin.read())
    started = time.monotonic()
    events = os.path.join(out, "events")
    os.makedirs(events)
    spark = local_session(
        "mergetree-cluster-test", os.path.join(out, "warehouse"), master=master,
        **{"spark.executor.memory": "512m", "spark.executor.cores": "1", "spark.cores.max": "2",
           "spark.default.parallelism": "2", "spark.local.dir": os.path.join(out, "driver-local"),
           # every job waits for both executors, so the tasks spread over the two
           "spark.scheduler.minRegisteredResourcesRatio": "1.0",
           "spark.scheduler.maxRegisteredResourcesWaitingTime": "120s",
           "spark.eventLog.enabled": "true", "spark.eventLog.dir": "file://" + events,
           # quick JVM start-up, as the driver's (local_session's fast_start)
           "spark.executor.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"})
    try:
        facts: dict[str, Any] = {"steps": [], "session_seconds": round(time.monotonic() - started, 2)}
        answers = run(spark, root, so, facts["steps"], every=False)
        # where the tasks ran: process, working directory, scratch directories, credentials in the environment
        seen = (spark.sparkContext.parallelize(range(8), 8)
                .map(lambda _: (os.getpid(), os.getcwd(), os.environ.get("SPARK_LOCAL_DIRS", ""),
                                ",".join(sorted(k for k in os.environ if k.startswith("AWS_")))))
                .distinct().collect())
        facts["tasks"] = [list(s) for s in seen]
        facts["python"] = python_workers()
        facts["errors"] = _errors(spark, root, so, read_only_key_id)
    finally:
        spark.stop()
    for name, value in answers.items():
        if isinstance(value, pa.Table):
            with pa.ipc.new_file(os.path.join(out, f"{name}.arrow"), value.schema) as writer:
                writer.write_table(value)
        else:
            facts[name] = value
    with open(os.path.join(out, "facts.json"), "w", encoding="utf-8") as fh:
        json.dump(facts, fh)


def _errors(spark: Any, root: str, so: dict[str, Any], read_only_key_id: str) -> list[str]:
    """The messages of jobs that fail with the secret among their options: a read signed
    with the secret under another user's key id, a write to a missing bucket."""
    import mergetree.spark as ms

    messages = []
    wrong = {**so, "aws_access_key_id": read_only_key_id, "max_retries": "0"}
    attempts = [
        lambda: spark.read.format("mergetree").options(**{k: str(v) for k, v in wrong.items()})
        .load(f"{root}/pk").count(),
        lambda: ms.compact(spark, f"{root}/pk", full=True, storage_options=wrong),
        lambda: spark.range(3).write.format("mergetree").mode("append")
        .options(**{k: str(v) for k, v in so.items()}).save("s3://no-such-bucket/t"),
        lambda: _read_a_damaged_table(spark, f"{root}/damaged", so),
    ]
    for attempt in attempts:
        try:
            attempt()
        except Exception as exc:  # what a user sees: the message and its repr
            messages.append(f"{type(exc).__name__}: {exc}\n{exc!r}")
        else:
            messages.append("no error")
    return messages


def _read_a_damaged_table(spark: Any, path: str, so: dict[str, Any]) -> None:
    """A table whose data file was deleted behind its back: the executors' reads fail."""
    from mergetree.storage import resolve

    options = {k: str(v) for k, v in so.items()}
    spark.range(100).write.format("mergetree").mode("append").options(primaryKey="id", **options).save(path)
    store = resolve(path, so)
    store.delete(next(i.path for i in store.list("bucket-") if i.path.endswith(".parquet")))
    spark.read.format("mergetree").options(**options).load(path).collect()


if __name__ == "__main__":
    cluster_main(*sys.argv[1:5])
