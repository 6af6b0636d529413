"""Spark jobs on tables in a real S3 server (moto's, tests/s3_server.py): the data source,
routed writes, distributed compaction, optimize and bucket joins on `s3://` paths answer as
the same jobs on local tables — in `local[2]`, and on a standalone cluster of two workers on
127.0.0.1 whose executors share no directory (each worker its own work and scratch
directories, no credentials in its environment), so everything a task reads or writes goes
through the S3 server and the credentials reach the executors only in the job's options.
The secret key given as an option is in no object of the tables, no plan, log or event log
Spark wrote, no driver output and no error message."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pyarrow as pa
import pytest
from spark_s3_scenario import ANSWERS, CLUSTER_ANSWERS, run

HERE = Path(__file__).resolve().parent


@pytest.fixture(autouse=True)
def _no_query_log(monkeypatch):
    # this process's reads through the Table API would be flushed to the query log in the
    # background, maybe after the session's server stopped (Spark's reads log on the driver's
    # Python worker and flush at once)
    monkeypatch.setenv("MERGETREE_QUERY_LOG", "0")


def _prefix() -> str:
    return f"spark-{uuid.uuid4().hex[:12]}"


def _same(got: dict, expected: dict, names: tuple = ANSWERS) -> None:
    assert sorted(got) == sorted(names)
    for name in names:
        assert got[name] == expected[name], name


def test_spark_jobs_on_s3_answer_as_on_local_tables_in_local_mode_and_on_a_cluster(spark, s3_server, tmp_path,
                                                                                  cluster_run):
    """One test for both, so that the local answers are computed once and xdist never starts the
    cluster twice (a module's tests spread over its workers)."""
    local_answers = run(spark, str(tmp_path / "local"), None)
    # the answers are the jobs' real work, not empty tables
    assert local_answers["read"].num_rows == 4500
    assert local_answers["join"].num_rows == 3500 and local_answers["left_join"].num_rows == 4000
    assert local_answers["fallback_join"].num_rows == 600
    assert local_answers["kinds"] == ["COMPACT", "COMPACT", "COMPACT"]
    assert len(local_answers["optimized_files"]) > 1
    _same(run(spark, f"s3://lake/{_prefix()}", s3_server.options()), local_answers)

    if isinstance(cluster_run, str):
        pytest.skip(f"local[2] answered as local tables; the cluster part cannot run: {cluster_run}")
    cluster_run = cluster_run.result()
    print(f"the cluster's run took {cluster_run['seconds']:.1f} s (driver and executors started in "
          f"{cluster_run['facts']['session_seconds']} s); answers at {cluster_run['facts']['steps']}")
    local = dict(local_answers, kinds=local_answers["kinds"][:2])  # the cluster skips the last optimize
    _same(cluster_run["answers"], local, CLUSTER_ANSWERS)
    _executors_shared_nothing_and_had_no_credentials(cluster_run)
    _daemons_never_loaded_obstore(cluster_run)
    _secret_in_no_object_log_event_log_output_or_error(cluster_run, s3_server)


def _objects(s3_server, prefix: str) -> dict[str, bytes]:
    client = s3_server.client("s3", s3_server.access_key_id, s3_server.secret_access_key)
    out = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket="lake", Prefix=prefix + "/"):
        for item in page.get("Contents", []):
            out[item["Key"]] = client.get_object(Bucket="lake", Key=item["Key"])["Body"].read()
    return out


def test_jobs_take_the_options_the_driver_opened_the_table_with(spark, s3_server):
    import mergetree.spark as ms
    from mergetree import Table

    ms.register(spark)
    uri = f"s3://lake/{_prefix()}/t"
    table = Table.create(uri, pa.schema([("id", pa.int64()), ("v", pa.string())]), primary_key=["id"], buckets=2,
                         storage_options=s3_server.options())
    for start in (0, 50):  # two sorted runs per bucket
        table.write({"id": list(range(start, start + 100)), "v": [f"w{start}"] * 100})
    # no storage_options: the tasks get the ones this process opened the location with
    compacted = ms.compact(spark, uri, full=True)
    assert compacted.commit_kind == "COMPACT"
    buckets = [e.bucket for e in table.directory.live_files(compacted).values()]
    assert sorted(buckets) == [0, 1]  # one file per bucket
    ms.write(spark.range(200, 210).selectExpr("id", "'s' as v"), uri)
    reread = Table.open(uri, storage_options=s3_server.options())
    assert reread.read().num_rows == 160


def test_optimize_pending_on_s3_does_what_it_does_locally(spark, s3_server, tmp_path):
    import numpy as np

    import mergetree.spark as ms
    from mergetree import Table
    from mergetree.organize import history

    schema = pa.schema([("id", pa.int64()), ("a", pa.int64()), ("b", pa.float64())])
    outcomes = []
    for path, options in ((str(tmp_path / "t"), None), (f"s3://lake/{_prefix()}/t", s3_server.options())):
        table = Table.create(path, schema, options={
            "write-only": "true", "target-file-size": "200 kb", "optimize.major-threshold": "100 kb",
            "clustering.columns": "a,b", "clustering.strategy": "hilbert"}, storage_options=options)
        rng = np.random.default_rng(8)
        for i in range(4):
            table.write(pa.table({"id": np.arange(i * 3000, (i + 1) * 3000), "a": rng.integers(0, 10**6, 3000),
                                  "b": rng.normal(size=3000)}, schema=schema))
        reports = {r.tier: (r.status, r.files_in, r.rows) for r in ms.optimize_pending(spark, path,
                                                                                      storage_options=options)}
        after = Table.open(path, storage_options=options)
        outcomes.append((reports, after.read().sort_by("id"), history(after.path).column("tier").to_pylist()))
    assert outcomes[0][0]["major"] == ("committed", 4, 12000)
    assert outcomes[1] == outcomes[0]


def test_a_large_plan_travels_as_a_broadcast_of_its_own_without_the_options(spark, s3_server, monkeypatch):
    # PySpark writes a task function over 1 MB to a file on the driver; the jobs' functions
    # carry the storage options, so a large plan is broadcast apart from them: forced here
    import mergetree.spark as ms
    from mergetree import Table
    from mergetree.spark import jobs

    monkeypatch.setattr(jobs, "INLINE_PAYLOAD_BYTES", 0)
    ms.register(spark)
    options = s3_server.options()
    root = f"s3://lake/{_prefix()}"
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    left = Table.create(f"{root}/l", schema, primary_key=["id"], buckets=2, storage_options=options)
    right = Table.create(f"{root}/r", schema, primary_key=["id"], buckets=4, storage_options=options)
    for table, start in ((left, 0), (left, 50), (right, 80)):
        table.write({"id": list(range(start, start + 100)), "v": [f"{start}"] * 100})
    temp = Path(spark.sparkContext._temp_dir)
    before = set(temp.iterdir())
    assert ms.compact(spark, left.path, full=True, storage_options=options).commit_kind == "COMPACT"
    joined = ms.bucket_join(spark, left.path, right.path, on="id", storage_options=options).toArrow()
    assert sorted(joined.column("id").to_pylist()) == list(range(80, 150))
    broadcast = [p for p in temp.iterdir() if p not in before]
    assert broadcast  # the join's plan (the compaction's was released after its job)
    for path in broadcast:
        assert s3_server.secret_access_key.encode() not in path.read_bytes()
    assert Table.open(left.path, storage_options=options).read().num_rows == 150


def test_a_storage_option_on_a_local_path_or_an_unknown_key_is_refused(spark, tmp_path):
    import mergetree.spark as ms
    from mergetree.errors import InvalidArgumentError

    with pytest.raises(InvalidArgumentError, match="aws_region.*local path"):
        ms.compact(spark, str(tmp_path / "t"), storage_options={"aws_region": "eu-west-1"})
    with pytest.raises(InvalidArgumentError, match="unknown storage option 'aws_regoin'"):
        ms.compact(spark, "s3://lake/t", storage_options={"aws_regoin": "eu-west-1"})


def test_the_secret_stays_out_of_objects_plans_reprs_and_errors(spark, s3_server, capsys):
    import mergetree.spark as ms
    from mergetree.spark.source import MergetreeDataSource, MergetreeReader, MergetreeWriter

    ms.register(spark)
    secret = s3_server.secret_access_key
    options = {k: str(v) for k, v in s3_server.options().items()}
    prefix = _prefix()
    uri = f"s3://lake/{prefix}/t"
    frame = spark.range(0, 500, 1, 2).selectExpr("id", "concat('v', id % 5) as v")
    frame.write.format("mergetree").mode("append").options(primaryKey="id", buckets="2", **options).save(uri)
    ms.write(frame.where("id < 100").selectExpr("id", "'u' as v"), uri, storage_options=options)
    ms.compact(spark, uri, full=True, storage_options=options)
    read = spark.read.format("mergetree").options(**options).load(uri)
    assert read.where("v = 'u'").count() == 100
    spark.read.format("mergetree").options(**options).load(uri).where("id = 3").explain("extended")

    shown = [capsys.readouterr()]
    assert "BatchScan mergetree" in shown[0].out  # the plan was printed
    source = MergetreeDataSource({"path": uri, **options})
    reader = MergetreeReader({"path": uri, **options})
    writer = MergetreeWriter({"path": uri, **options}, frame.schema, False)
    shown += [repr(source), repr(reader), repr(writer), source.name()]
    assert uri in repr(reader) and uri in repr(writer)

    errors = []
    wrong = {**options, "aws_access_key_id": s3_server.read_only_key_id}
    for attempt in (lambda: spark.read.format("mergetree").options(**wrong).load(uri).count(),
                    lambda: ms.compact(spark, uri, full=True, storage_options=wrong),
                    lambda: frame.write.format("mergetree").mode("append").options(**options)
                    .save("s3://no-such-bucket/t")):
        with pytest.raises(Exception) as caught:
            attempt()
        errors.append(f"{caught.value}\n{caught.value!r}")
    assert "403" in errors[0] or "denied" in errors[0].lower() or "signature" in errors[0].lower(), errors[0]
    assert "no-such-bucket" in errors[2]

    objects = _objects(s3_server, prefix)
    assert any(name.endswith(".parquet") for name in objects)
    for name, body in objects.items():
        assert secret.encode() not in body, name
        assert secret not in name
    for text in [*shown, *errors]:
        assert secret not in str(text)


# -- a cluster of separate executor processes -----------------------------------------------

def _spark_home() -> Path | None:
    try:
        import pyspark
    except ImportError:
        return None
    home = Path(pyspark.__file__).parent
    return home if (home / "bin" / "spark-class").exists() else None


class StandaloneCluster:
    """A standalone master and two workers on 127.0.0.1, each worker with its own work and
    scratch directories and an environment without credentials; every process is ours."""

    def __init__(self, root: Path, spark_home: Path) -> None:
        from s3_server import free_port

        self.root = root
        self.port = free_port()
        self.master = f"spark://127.0.0.1:{self.port}"
        self.processes: list[subprocess.Popen] = []
        self.logs: list[Path] = []
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("AWS_", "PYSPARK_", "SPARK_", "MERGETREE_"))}
        env["SPARK_HOME"] = str(spark_home)
        env["SPARK_DAEMON_JAVA_OPTS"] = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"  # quick start-up
        env["SPARK_DAEMON_MEMORY"] = "256m"
        spark_class = str(spark_home / "bin" / "spark-class")
        self._start([spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                     "--port", str(self.port), "--webui-port", "0"], root / "master", env)
        for worker in ("worker-1", "worker-2"):
            home = root / worker
            (home / "work").mkdir(parents=True)
            (home / "local").mkdir()
            self._start([spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                         "--webui-port", "0", "--cores", "1", "--memory", "1g", "--work-dir", str(home / "work"),
                         self.master], home, {**env, "SPARK_LOCAL_DIRS": str(home / "local")})

    def _start(self, command: list[str], home: Path, env: dict[str, str]) -> None:
        home.mkdir(parents=True, exist_ok=True)
        log = home / "process.log"
        with open(log, "wb") as out:
            self.processes.append(subprocess.Popen(command, cwd=home, env=env, stdout=out, stderr=subprocess.STDOUT))
        self.logs.append(log)

    def stop(self) -> None:
        for process in reversed(self.processes):  # the workers (and their executors) first
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


class ClusterRun:
    """The scenario on a standalone cluster, run by a driver process of its own (this process
    already holds the shared local[2] SparkContext) while this process goes on; `result()`
    waits for it and stops the cluster."""

    def __init__(self, s3_server, root: Path, spark_home: Path) -> None:
        self.root, self.prefix = root, _prefix()
        self.cluster = StandaloneCluster(root / "cluster", spark_home)
        self.out = root / "driver"
        self.out.mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "PYSPARK_", "SPARK_"))}
        env["PYTHONPATH"] = os.pathsep.join([str(HERE), *sys.path])
        self.started = time.monotonic()
        with open(self.out / "driver.log", "wb") as log:
            self.driver = subprocess.Popen(
                [sys.executable, str(HERE / "spark_s3_scenario.py"), self.cluster.master, f"s3://lake/{self.prefix}",
                 str(self.out), s3_server.read_only_key_id],
                stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=self.out)
        assert self.driver.stdin is not None
        self.driver.stdin.write(json.dumps(s3_server.options()).encode())  # never a file, never the environment
        self.driver.stdin.close()
        self._result: dict | None = None

    def result(self) -> dict:
        if self._result is None:
            try:
                code = self.driver.wait(600)
            finally:
                self.stop()
            text = (self.out / "driver.log").read_text(errors="replace")
            assert code == 0, text[-6000:]
            facts = json.loads((self.out / "facts.json").read_text())
            answers = {name: pa.ipc.open_file(str(self.out / f"{name}.arrow")).read_all()
                       for name in ANSWERS if (self.out / f"{name}.arrow").exists()}
            answers.update({name: facts.pop(name) for name in ANSWERS if name in facts})
            self._result = {"answers": answers, "facts": facts, "root": self.root, "prefix": self.prefix,
                            "seconds": time.monotonic() - self.started}
        return self._result

    def stop(self) -> None:
        if self.driver.poll() is None:
            self.driver.kill()
            self.driver.wait()
        self.cluster.stop()


@pytest.fixture(scope="module")
def cluster_run(s3_server, tmp_path_factory):
    """The cluster's run, started (once) before the test that waits for it; or why it cannot
    run here."""
    if sys.platform != "linux":
        yield "it needs Linux (its checks read /proc)"
        return
    spark_home = _spark_home()
    if spark_home is None:
        yield "pyspark has no bin/spark-class here"
        return
    run_ = ClusterRun(s3_server, tmp_path_factory.mktemp("spark-cluster"), spark_home)
    try:
        yield run_
    finally:
        run_.stop()


def _executors_shared_nothing_and_had_no_credentials(cluster_run):
    root = cluster_run["root"] / "cluster"
    tasks = cluster_run["facts"]["tasks"]
    processes = {pid for pid, _, _, _ in tasks}
    assert len(processes) >= 2
    places = {(Path(cwd).relative_to(root).parts[0], local) for _, cwd, local, _ in tasks}
    # each worker's executor ran in its own work directory, with its own scratch directory
    assert {p for p, _ in places} == {"worker-1", "worker-2"}
    for worker, local in places:
        assert Path(local).is_relative_to(root / worker / "local"), local
    assert all(aws == "" for _, _, _, aws in tasks)


def _daemons_never_loaded_obstore(cluster_run):
    # obstore refuses a process forked after it used obstore: the PySpark daemons, which fork
    # every Python worker, must never load it (they do not import the tasks' modules)
    root = cluster_run["root"]
    python = {kind: [p for p in processes if Path(p["cwd"]).is_relative_to(root)]  # the driver's and executors'
              for kind, processes in cluster_run["facts"]["python"].items()}
    places = {Path(p["cwd"]).relative_to(root).parts[:2] for p in python["daemons"]}
    assert {("driver",), ("cluster", "worker-1"), ("cluster", "worker-2")} <= {p[:1] if p[0] == "driver" else p
                                                                                for p in places}, python
    assert not any(d["obstore"] for d in python["daemons"]), python
    assert any(w["obstore"] for w in python["workers"]), python


def _secret_in_no_object_log_event_log_output_or_error(cluster_run, s3_server):
    secret = s3_server.secret_access_key
    errors = cluster_run["facts"]["errors"]
    assert len(errors) == 4 and "no error" not in errors, errors
    assert "no-such-bucket" in errors[2]
    assert "damaged" in errors[3] and ".parquet" in errors[3]  # the executor's error names the object
    for message in errors:
        assert secret not in message
    written = [p for p in cluster_run["root"].rglob("*") if p.is_file()]
    names = {p.name for p in written}
    assert "driver.log" in names and "stderr" in names  # executors' logs
    assert any("events" in p.relative_to(cluster_run["root"]).parts for p in written)  # Spark's event log
    for path in written:
        assert secret.encode() not in path.read_bytes(), path
    objects = _objects(s3_server, cluster_run["prefix"])
    assert len(objects) > 20
    for name, body in objects.items():
        assert secret.encode() not in body, name
