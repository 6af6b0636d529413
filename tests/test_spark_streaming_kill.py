"""Exactly once under failure: the driver of a JSON -> T1 -> T2 streaming pipeline (its own
process, with its own local[2] Spark) is SIGKILLed mid-batch, with its JVM and Python workers,
and started again from its checkpoints, twice; then it runs to the end.  T1 and T2
equal the model, and each (query, batch) is committed once."""
from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_spark_streaming import cdc_files, checkpoint_query_id, commits_once, rows_of

from mergetree import Table

pytest.importorskip("pyspark")


DRIVER = Path(__file__).parent / "spark_streaming_driver.py"
# each restart starts a Spark (about 15 s on CI): two kills at random moments per run, a new seed
# each run, so the moments vary from run to run
KILLS = 2


def snapshot_count(*tables: Path) -> int:
    """The tables' snapshot files (`snapshot/snapshot-N`; not the LATEST and EARLIEST hints)."""
    return sum(sum(1 for n in os.listdir(t / "snapshot") if n.startswith("snapshot-"))
               if (t / "snapshot").is_dir() else 0 for t in tables)


def start_driver(args: list[str], log: Path) -> subprocess.Popen:
    env = dict(os.environ)
    src = str(Path(__file__).resolve().parent.parent / "src")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
    # a session of its own: the kill takes the driver, its JVM and every Python worker at once
    return subprocess.Popen([sys.executable, str(DRIVER), *args], stdout=subprocess.PIPE,
                            stderr=open(log, "ab"), env=env, start_new_session=True, text=True)


def wait_for(proc: subprocess.Popen, line: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = proc.stdout.readline()
        if got.strip() == line:
            return
        if not got and proc.poll() is not None:
            raise AssertionError(f"the driver exited ({proc.returncode}) before {line!r}")
    raise AssertionError(f"the driver did not print {line!r} in {timeout} s")


def test_driver_killed_mid_batch_and_restarted_commits_each_batch_once(tmp_path):
    if shutil.which("java") is None:
        pytest.skip("no java on PATH: the real-Spark checks need a JVM")
    events, t1, t2, checkpoints = tmp_path / "events", tmp_path / "t1", tmp_path / "t2", tmp_path / "ck"
    files = 6
    # a restart may plan several files into one micro-batch, whose rows Spark does not order:
    # three files in a row share no key, so the outcome never depends on that order
    model = cdc_files(events, files=files, per_file=50, keys=30, seed=11, key_stride=3)
    args = [str(events), str(t1), str(t2), str(checkpoints)]
    log = tmp_path / "driver.log"
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    kills = []
    for _ in range(KILLS):
        proc = start_driver(args, log)
        try:
            wait_for(proc, "ready", 120)
            # kill after one or two new commits (so each run gets further), at a random moment
            # of the batch after them: planning, writing, committing, or between
            before, steps = snapshot_count(t1, t2), rng.randint(1, 2)
            deadline = time.monotonic() + 60
            while snapshot_count(t1, t2) < before + steps and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.02)
            time.sleep(rng.uniform(0, 0.8))
            kills.append(snapshot_count(t1, t2))
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    proc = start_driver(args, log)
    out, _ = proc.communicate(timeout=180)
    assert proc.returncode == 0 and "t2 done" in out, (proc.returncode, out, log.read_text()[-3000:])
    context = f"seed {seed}, killed at {kills} sink snapshots"
    first, second = Table.open(str(t1)), Table.open(str(t2))
    assert rows_of(first) == model, context
    assert rows_of(second) == model, context
    # every micro-batch Spark finished is committed once, and no other (Spark may plan a file or
    # two into one batch after a restart, so the batches are those of its commit log, not one a file)
    logged = sorted(int(n) for n in os.listdir(checkpoints / "t1" / "commits") if n.isdigit())
    assert sorted(commits_once(first, checkpoint_query_id(checkpoints / "t1"))) == logged, context
    assert logged and logged == list(range(len(logged))) and len(logged) <= files, context
    commits_once(second, checkpoint_query_id(checkpoints / "t2"))
