"""Real Paimon tables for the tests, written by pypaimon in its own interpreter (`make
paimon-env` builds it in .venv-paimon; MERGETREE_PAIMON_PYTHON points elsewhere), and read,
written, compacted, expired and cleaned by Apache Paimon's Java code (0.9.0, through pypaimon
0.2.0's py4j bridge in .venv-paimon-java; MERGETREE_PAIMON_JAVA_PYTHON points elsewhere)."""
from __future__ import annotations

import atexit
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import tool_protocol

from mergetree.table.read.model import BucketPlan
from mergetree.table.read.split import split_by_file

ROOT = Path(__file__).resolve().parent.parent
TOOL = Path(__file__).resolve().parent / "paimon_tool.py"
JAVA_TOOL = Path(__file__).resolve().parent / "paimon_java_tool.py"
PAIMON_PYTHON = os.environ.get("MERGETREE_PAIMON_PYTHON") or str(ROOT / ".venv-paimon" / "bin" / "python")
JAVA_PAIMON_PYTHON = (os.environ.get("MERGETREE_PAIMON_JAVA_PYTHON") or
                      str(ROOT / ".venv-paimon-java" / "bin" / "python"))

needs_pypaimon = pytest.mark.skipif(not os.path.exists(PAIMON_PYTHON),
                                    reason=f"no pypaimon interpreter at {PAIMON_PYTHON} (make paimon-env)")


def _hadoop_jars() -> str | None:
    """Hadoop's client jars, which Paimon's Java bundle needs beside it: pyspark's."""
    try:
        import pyspark
    except ImportError:
        return None
    jars = Path(pyspark.__file__).parent / "jars"
    return str(jars / "*") if any(jars.glob("hadoop-client-api-*.jar")) else None


def _java_missing() -> str | None:
    if not os.path.exists(JAVA_PAIMON_PYTHON):
        return f"no Java Paimon interpreter at {JAVA_PAIMON_PYTHON} (make paimon-env)"
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "no Java"
    if _hadoop_jars() is None:
        return "no pyspark, whose Hadoop jars Paimon's Java bundle needs"
    return None


needs_java_paimon = pytest.mark.skipif(_java_missing() is not None, reason=str(_java_missing()))


def _ipc(path: Path, table: pa.Table) -> str:
    with pa.OSFile(str(path), "wb") as f, pa.ipc.new_file(f, table.schema) as w:
        w.write_table(table)
    return str(path)


# the tools' answer lines start with this (tool_protocol.ANSWER)
ANSWER = tool_protocol.ANSWER.encode()
TIMEOUT = 600  # seconds for one command


class _Tool:
    """One `paimon_tool.py serve` (or `paimon_java_tool.py serve`) process per test process (each
    xdist worker its own), started on first use: a fresh interpreter per command paid ~1.5 s
    (more on a busy machine) of pypaimon's import each time, hundreds of times a run — and a JVM
    start for Java's.  Commands run one at a time."""

    def __init__(self, python: str, script: Path, name: str, env: dict[str, str] | None = None) -> None:
        self.python, self.script, self.name, self.env = python, script, name, env
        self.lock = threading.Lock()
        self.proc: subprocess.Popen | None = None
        self.pid = 0  # the test process that started it (a forked child starts its own)
        self.stderr: Any = None
        self.pending = b""

    def _start(self) -> subprocess.Popen:
        if self.proc is None or self.proc.poll() is not None or self.pid != os.getpid():
            self.stderr = tempfile.TemporaryFile()  # a file, not a pipe: pypaimon's warnings never block it
            env = None if self.env is None else {**os.environ, **self.env}
            self.proc = subprocess.Popen([self.python, str(self.script), "serve"], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=self.stderr, env=env)
            self.pid, self.pending = os.getpid(), b""
        return self.proc

    def _stderr_tail(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read()[-4000:].decode(errors="replace")

    def _answer(self, proc: subprocess.Popen, what: str) -> dict:
        deadline = time.monotonic() + TIMEOUT
        fd = proc.stdout.fileno()
        while True:
            line, newline, rest = self.pending.partition(b"\n")
            if newline:
                self.pending = rest
                if line.startswith(ANSWER):
                    return json.loads(line[len(ANSWER):])
                continue  # something pypaimon printed: not an answer
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                self.stop()
                raise RuntimeError(f"{self.name} failed ({what}): no answer in {TIMEOUT} s")
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                proc.wait()
                tail = self._stderr_tail()
                self.proc = None
                raise RuntimeError(f"{self.name} failed ({what}): its process exited ({proc.returncode}):\n{tail}")
            self.pending += chunk

    def run(self, *args: str) -> dict:
        with self.lock:
            proc = self._start()
            proc.stdin.write(json.dumps(args).encode() + b"\n")
            proc.stdin.flush()
            answer = self._answer(proc, " ".join(args[:1]))
        if "error" in answer:
            raise RuntimeError(f"{self.name} failed ({' '.join(args[:1])}):\n{answer['error'][-4000:]}")
        return json.loads(answer["out"].strip().splitlines()[-1])

    def stop(self) -> None:
        if self.proc is not None and self.pid == os.getpid():
            self.proc.kill()
            self.proc.wait()
        self.proc = None


_TOOL = _Tool(PAIMON_PYTHON, TOOL, "pypaimon")
atexit.register(_TOOL.stop)
# Java's Arrow needs java.nio opened to it (Java 17); Hadoop's classes come from pyspark
_JAVA_TOOL = _Tool(JAVA_PAIMON_PYTHON, JAVA_TOOL, "Java Paimon",
                   {"_PYPAIMON_HADOOP_CLASSPATH": _hadoop_jars() or "",
                    "_PYPAIMON_JVM_ARGS": "--add-opens=java.base/java.nio=ALL-UNNAMED -Xmx1g"})
atexit.register(_JAVA_TOOL.stop)


def _run(*args: str) -> dict:
    return _TOOL.run(*args)


def write_paimon(workdir: Path, warehouse: Path, table: str, commits: Sequence[pa.Table], primary_keys: list[str],
                 partition_keys: Sequence[str] = (), options: dict | None = None,
                 tags: dict[str, int] | None = None, alter: list | None = None,
                 stages: Sequence[tuple[list, Sequence[pa.Table]]] = (),
                 overwrite: dict[int, dict] | None = None) -> dict:
    """Create `table` if it is new and commit each table of `commits` with pypaimon; then for
    each (alter, commits) of `stages` (in the same pypaimon process), the ALTER, then its commits.
    `overwrite`: commit index -> the partition (column -> value; {}: the table) it overwrites."""
    workdir.mkdir(parents=True, exist_ok=True)
    n = len(list(workdir.glob("spec-*.json")))
    files = [_ipc(workdir / f"commit-{n}-{i}.arrow", c) for i, c in enumerate(commits)]
    staged = [{"alter": changes, "commits": [_ipc(workdir / f"commit-{n}-s{s}-{i}.arrow", c)
                                             for i, c in enumerate(tables)]}
              for s, (changes, tables) in enumerate(stages)]
    spec = {"warehouse": str(warehouse), "table": table, "primary_keys": list(primary_keys),
            "partition_keys": list(partition_keys), "options": {k: str(v) for k, v in (options or {}).items()},
            "schema": files[0], "commits": files, "tags": tags or {}, "alter": alter or [], "stages": staged,
            "overwrite": {str(i): p for i, p in (overwrite or {}).items()}}
    path = workdir / f"spec-{n}.json"
    path.write_text(json.dumps(spec))
    return _run("write", str(path))


def pypaimon_read(warehouse: Path, table: str, workdir: Path, snapshot: int | str | None = None) -> pa.Table:
    """pypaimon's read of the table (`snapshot`: an id or a tag's name; default the latest)."""
    out = workdir / f"read-{len(list(workdir.glob('read-*.arrow')))}.arrow"
    _run("read", str(warehouse), table, str(out), *([] if snapshot is None else [str(snapshot)]))
    with pa.OSFile(str(out), "rb") as f:
        return pa.ipc.open_file(f).read_all()


def pypaimon_stream(warehouse: Path, table: str, workdir: Path, start: int = 1) -> pa.Table:
    """pypaimon's streaming read of the table from snapshot `start` to the latest, rows with
    their kind (`_row_kind` first): what its follow-up scanner reads (a changelog producer's
    changelog files)."""
    workdir.mkdir(parents=True, exist_ok=True)
    out = workdir / f"stream-{len(list(workdir.glob('stream-*.arrow')))}.arrow"
    _run("stream", str(warehouse), table, str(out), str(start))
    with pa.OSFile(str(out), "rb") as f:
        return pa.ipc.open_file(f).read_all()


def java_read(warehouse: Path, table: str, workdir: Path, snapshot: int | str | None = None,
              equal: dict | None = None) -> pa.Table:
    """Java Paimon's batch read of the table (`snapshot`: an id or a tag's name; default the latest;
    `equal`: column -> value, pushed down, so that Java's statistics and file indexes prune)."""
    workdir.mkdir(parents=True, exist_ok=True)
    out = workdir / f"java-read-{len(list(workdir.glob('java-read-*.arrow')))}.arrow"
    _JAVA_TOOL.run("read", str(warehouse), table, str(out), "" if snapshot is None else str(snapshot),
                   json.dumps(list((equal or {}).items())))
    with pa.OSFile(str(out), "rb") as f:
        return pa.ipc.open_file(f).read_all()


def java_write(warehouse: Path, table: str, workdir: Path, data: pa.Table, overwrite: bool = False) -> dict:
    """One commit of `data` by Java Paimon's batch writer (an INSERT OVERWRITE of the table if asked)."""
    workdir.mkdir(parents=True, exist_ok=True)
    path = _ipc(workdir / f"java-write-{len(list(workdir.glob('java-write-*.arrow')))}.arrow", data)
    return _JAVA_TOOL.run("write", str(warehouse), table, path, "overwrite" if overwrite else "append")


def java_compact(warehouse: Path, table: str) -> dict:
    """Java Paimon's full compaction of every bucket that holds files, in one commit."""
    return _JAVA_TOOL.run("compact", str(warehouse), table)


def java_expire(warehouse: Path, table: str, retain: int) -> dict:
    """Java Paimon's snapshot expiry, keeping the newest `retain` snapshots."""
    return _JAVA_TOOL.run("expire", str(warehouse), table, str(retain))


def java_orphans(warehouse: Path, table: str) -> list[str]:
    """Java Paimon's orphan cleaning (every unreferenced file, however new): the names it deleted."""
    return _JAVA_TOOL.run("orphans", str(warehouse), table)["deleted"]


def expire_keeping_changelog(warehouse: Path, table: str, ids: Sequence[int]) -> dict:
    """Expire snapshots `ids` with pypaimon's ChangelogManager keeping their changelog (see paimon_tool)."""
    return _run("expire", str(warehouse), table, *(str(i) for i in ids))


def rows(table: pa.Table, key: Sequence[str]) -> list[dict]:
    """A table's rows sorted by `key`, types made comparable (nullability and string widths aside)."""
    fields = [pa.field(f.name, pa.string() if pa.types.is_large_string(f.type) else f.type) for f in table.schema]
    table = table.cast(pa.schema(fields)).sort_by([(k, "ascending") for k in key])
    return table.to_pylist()


if __name__ == "__main__":
    print(PAIMON_PYTHON, os.path.exists(PAIMON_PYTHON), file=sys.stderr)


def reads_files_alone(bucket: BucketPlan) -> bool:
    """Whether each file of `bucket` is read on its own, its deletion vector applied (no merge):
    every file resolved (deletion vectors on, above level 0, no retractions: compaction has
    marked every replaced row), each a section of its own, so that the reader's split gives a
    plan per file and nothing left to merge (`split_by_file`)."""
    alone, merged = split_by_file(bucket)
    return bool(bucket.files) and all(m.resolved for m in bucket.files) and \
        all(len(section) == 1 and len(section[0]) == 1 for section in bucket.sections) and \
        merged is None and [p.files for p in alone] == [[m] for m in bucket.files]
