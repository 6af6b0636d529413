"""``mergetree bench --paimon``: reading and compacting Apache Paimon tables written by Paimon itself,
with ``mergetree.paimon`` against Paimon's own Python readers.

The tables.  ``keys`` int64 ids (default 1,000,000; ``--quick`` 100,000) in a primary-key table
``id`` int64, ``v_int`` int64, ``v_float`` float64, ``v_str`` string, written by ``pypaimon`` (the
Apache Paimon Python writer, in its own interpreter: ``benchmarks/paimon_driver.py`` under
``.venv-paimon``, or ``MERGETREE_PAIMON_PYTHON``) with Paimon's default options (Parquet, zstd)
and ``bucket`` = 1 or 4.  Commit ``c`` (0, 1, 2, ...) holds half of the keys in random order:
an even commit a random half, the odd commit after it the other half, so after every two commits
each key has been written once more and every key exists from commit 2 on.  Every row of commit
``c`` is a new version: ``v_int = (c << 40) | r`` for a random 40-bit ``r`` (no two versions
alike), ``v_float`` a new random number and ``v_str = "v-" + str(v_int)``.  pypaimon writes the
16 commits of each bucket count into one table and the table directory is copied after commit 4
and after commit 8, so there are six tables, named ``c{commits}-b{buckets}``: 4, 8 and 16
commits (2, 4 and 8 versions of every key, that many sorted runs in every bucket) times
``bucket`` 1 and 4.  The two bucket counts are written by two pypaimon processes at once; the
write times are shown, not compared.

On each table, in this order:

1. the full read of every reader, unmerged (merge-on-read over every sorted run): ``mergetree``
   (``mergetree.paimon.read(warehouse, table)``, its default threads), ``pypaimon-rust`` (when
   importable: ``PaimonCatalog(...).get_table(...)``, ``new_read_builder``, ``read`` of every split)
   and ``pypaimon`` (``read_builder.new_read().to_arrow(splits)``, timed inside its own process,
   so its interpreter start-up is not timed).  Each is the best of up to 3 runs, another run only
   while the runs so far took less than 10 seconds;
2. point lookups of the same 100 random existing keys (fixed seed) by every reader, one untimed
   warm-up first: ``mergetree.paimon.read(..., filter=("id", "=", k))``, pypaimon-rust's
   ``with_filter({"method": "equal", ...})``, pypaimon's ``with_filter(equal("id", k))``; each
   lookup plans and reads (a user's whole call).  p50 and p95 latency; a reader's lookups stop
   after 15 seconds (at least 3);
3. the baseline, "a plain pyarrow read + rewrite of the same files": every live data file of
   the table read with ``pq.read_table`` and written to a temporary directory with
   ``pq.write_table`` and the files' own codec, file by file (best of up to 3, as above);
4. ``mergetree.paimon.compact(warehouse, table, full=True)``, once;
5. steps 1 and 2 again on the compacted table.

Every answer is checked.  mergetree's and pypaimon-rust's full reads are compared in full with
the newest version of every key (computed from the input, without any reader): exactly ``keys``
rows, the same ids and values.  pypaimon's read (in the other process) must have exactly ``keys``
rows and ``keys`` distinct ids, and the rows of 1,000 sampled keys must hold their newest
versions (the values mergetree's read is checked to have).  Every lookup must return exactly one
row, the newest version of its key.  The compaction must commit a new snapshot (``compact``
returns its id) after which every bucket holds one sorted run of exactly ``keys`` rows; then
all readers must read the compacted table correctly.  A reader that is wrong or fails is
reported so and gets no ratio, and the report is not ``ok`` (the exit status is 1); a missing
``pypaimon-rust`` is reported as unavailable and is not a failure.

"rows in" is rows in the data files a read or a compaction goes through (``keys * commits / 2``
unmerged, ``keys`` compacted); rows/s are rows in per wall second.  The targets, per table
(shown with PASS/MISS; a missed target does not fail the run):

* full read (unmerged): mergetree at least 30x pypaimon and at least 1.5x pypaimon-rust, in rows
  per wall second and in rows per CPU-second (``time.process_time`` around each read: every
  thread of the process counted, so a reader's threads give it no credit; mergetree and
  pypaimon-rust run in this process, one after the other on the same table, in one run);
* point lookups (unmerged): mergetree's p50 no slower than pypaimon-rust's;
* after compaction every reader is faster: its full read's wall time and its lookups' p50;
* compaction: mergetree's rows in per second at least 70% of the pyarrow read + rewrite's.

The deletion-vector case (``--paimon-case dv`` alone; issue 25's measurement), on ``bucket`` = 4.
Its commits: a base of every key (one version each, ``op`` = ``+I``), then DV_COMMITS (5)
commits of random keys, DV_CHANGED (1%) of the keys all together (at least DV_MIN_ROWS a commit),
a DV_DELETE_SHARE (20%) of their rows deletions (``op`` = ``-D``; the tables set
``rowkind.field`` = ``op``) and the rest new versions.  pypaimon writes them into two tables at
once: ``dv-b4`` with ``deletion-vectors.enabled`` and ``mor-b4`` without.  On each, mergetree
compacts the base into the top level (``full=True``) before pypaimon writes the small commits,
then compacts those by the universal rules (``compact`` without ``full``): into a lower level,
which in the deletion-vector table marks the base's replaced rows in deletion vectors (every
bucket then reads file by file, no merge), and in the other leaves two sorted runs to merge on
read.  Every step is timed once and checked (a new snapshot, no level-0 file left, the vectors
leave exactly the live keys).  Then every reader's full read (the best of up to DV_REPEAT runs)
and lookups on both tables: the lookups and the sampled ids include updated and deleted keys (a
deleted key must give no row); every answer is checked against the live keys' newest versions.
Then, on both tables, ``mergetree.paimon.changes`` from the compacted base to the latest
snapshot (the net change of the small commits; the best of DV_REPEAT runs, the first noted: it
builds the lookup files) beside two full reads of both ends, checked against the workload:
every changed key once, ``-D`` for a deleted key, ``-U``/``+U`` with the newest version for an
updated one.  Its targets, on the deletion-vector table: mergetree's full read and lookup p50 at least 20x
pypaimon's and at least pypaimon-rust's (1x).  Shown beside them, not targets: each reader's
merge-on-read time over its deletion-vector time (what the vectors buy), and mergetree's
compaction of the small commits with deletion vectors over without (what they cost).
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from importlib.util import find_spec

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from rich.console import Group
from rich.markup import escape
from rich.text import Text

from mergetree.cli import render

from . import timing
from .data import parse_row_count
from .report import compare_tables, installed_version, json_ready, rate_text

__all__ = ["PaimonReport", "PaimonResult", "PaimonWorkload", "Target", "format_paimon_results", "keys_argument",
           "make_paimon_workload", "paimon_json", "paimon_missing", "paimon_targets", "peer_versions",
           "quick_keys", "run_paimon_bench"]

DEFAULT_KEYS = 1_000_000
QUICK_FACTOR = 10
MIN_KEYS = 100
COMMIT_COUNTS = (4, 8, 16)
BUCKET_COUNTS = (1, 4)
LOOKUPS = 100
SAMPLE_KEYS = 1_000
REPEAT = 3
DV_REPEAT = 7                 # the deletion-vector case's reads take well under a second: more runs, less noise
READ_BUDGET_SECONDS = 10.0    # another timed run only while the runs so far took less
LOOKUP_BUDGET_SECONDS = 15.0  # a reader's lookups stop after this much (at least MIN_LOOKUPS)
MIN_LOOKUPS = 3
SEED = 20240615
VERSION_SHIFT = 40            # v_int = (commit << 40) | 40 random bits

# the deletion-vector case: a base of every key, then small commits of updates and deletions
DV_BUCKETS = (4,)
DV_COMMITS = 5
DV_CHANGED = 0.01             # the share of the keys the small commits write, all together
DV_DELETE_SHARE = 0.2         # of their rows, deletions (the rest new versions)
DV_MIN_ROWS = 64              # rows a small commit writes at least
DV_CHANGED_LOOKUPS = 0.2      # the share of the lookups that ask for an updated or deleted key
DV_OPTIONS = {"deletion-vectors.enabled": "true"}

KEY = "id"
SCHEMA = pa.schema([pa.field(KEY, pa.int64(), nullable=False), ("v_int", pa.int64()), ("v_float", pa.float64()),
                    ("v_str", pa.string())])
OP = "op"                     # the deletion-vector workload's row kind column (Paimon's rowkind.field)
INSERT, DELETE = "+I", "-D"
DV_SCHEMA = SCHEMA.append(pa.field(OP, pa.string()))
DATABASE = "bench"

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DRIVER = os.path.join(REPO_ROOT, "benchmarks", "paimon_driver.py")
PAIMON_PYTHON = os.environ.get("MERGETREE_PAIMON_PYTHON") or os.path.join(REPO_ROOT, ".venv-paimon", "bin", "python")
DRIVER_TIMEOUT_SECONDS = 3_600

MERGETREE = "mergetree"
PYPAIMON = "pypaimon"
PYPAIMON_RUST = "pypaimon-rust"
PYARROW = "pyarrow"
READERS = (MERGETREE, PYPAIMON_RUST, PYPAIMON)

WRITE = "write"
READ = "full read"
LOOKUP = "point lookup"
REWRITE = "read + rewrite the files"
COMPACT = "compact (full)"
UNMERGED = "unmerged"
COMPACTED = "compacted"
DV = "deletion vectors"      # the deletion-vector table after mergetree's compaction marked its vectors
MOR = "merge-on-read"        # the same commits in a table without them, compacted by the same rules
WRITE_BASE = "write the base"
WRITE_COMMITS = "write the small commits"
COMPACT_BASE = "compact the base (full)"
COMPACT_DV = "compact the small commits"
CHANGES = "changes over the small commits"
MERGE_CASE, DV_CASE, WRITE_CASE = "merge", "dv", "write"
CASES = (MERGE_CASE, DV_CASE, WRITE_CASE)
WRITE_COMMITS_COUNT = 4       # the write case's commits (each half the keys), into an empty table
WRITE_BUCKETS = (4,)
WRITE_ONLY = "write (level 0 + APPEND)"
WRITE_AND_COMPACT = "write + compact (Java's default)"

TARGETS = {  # target name -> the least ratio the issue asks for
    "read_vs_pypaimon": 30.0,
    "read_vs_pypaimon_rust": 1.5,
    "read_per_cpu_vs_pypaimon_rust": 1.5,  # rows in per CPU-second (every thread counted), same process and run
    "lookup_vs_pypaimon_rust": 1.0,    # pypaimon-rust's p50 / mergetree's p50
    "compacted_faster": 1.0,           # the smallest before / after speed-up of any reader (must exceed it)
    "compaction_vs_rewrite": 0.70,     # compaction rows/s / pyarrow read + rewrite rows/s
}
DV_TARGETS = {  # the deletion-vector case (issue 25): mergetree's speed over the reader's
    "dv_read_vs_pypaimon": 20.0,
    "dv_lookup_vs_pypaimon": 20.0,       # the reader's p50 / mergetree's p50
    "dv_read_vs_pypaimon_rust": 1.0,
    "dv_lookup_vs_pypaimon_rust": 1.0,
}
ALL_TARGETS = {**TARGETS, **DV_TARGETS}


# ---------------------------------------------------------------- sizes


def quick_keys(keys: int) -> int:
    """The key count ``--quick`` runs: ``keys`` divided by 10 (at least MIN_KEYS)."""
    return max(keys // QUICK_FACTOR, MIN_KEYS)


def keys_argument(text: str) -> int:
    """``--paimon-keys``: a count like 1M, 200k or 2000 (at least 1,000), else a usage error."""
    try:
        return parse_row_count(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error).replace("rows", "keys")) from None


def table_name(commits: int, buckets: int) -> str:
    return f"c{commits}-b{buckets}"


def _identifier(name: str) -> str:
    return f"{DATABASE}.{name.replace('-', '_')}"


# ---------------------------------------------------------------- the workload


@dataclass
class PaimonWorkload:
    """The commits as Arrow IPC files (for pypaimon's process) and, after each commit count
    measured, the newest version of every key (``v_int`` and ``v_float`` indexed by id) and, when
    commits delete keys (the deletion-vector workload), which keys are alive."""
    keys: int
    commit_files: list                 # paths, one per commit, in commit order
    newest: dict                       # commits -> (v_int ndarray, v_float ndarray)
    rows_per_commit: list = field(default_factory=list)
    alive: dict = field(default_factory=dict)  # commits -> bool ndarray by id (absent: every key is)
    with_op: bool = False              # the rows carry the ``op`` row-kind column (rowkind.field)
    changed: list = field(default_factory=list)  # ids some commit after the first updated or deleted

    @property
    def schema(self) -> pa.Schema:
        return DV_SCHEMA if self.with_op else SCHEMA

    def _alive_ids(self, commits: int, ids: np.ndarray) -> np.ndarray:
        alive = self.alive.get(commits)
        return ids if alive is None else ids[alive[ids]]

    def expected(self, commits: int) -> pa.Table:
        """Every live key's newest version after ``commits`` commits, ascending by id."""
        v_int, v_float = self.newest[commits]
        ids = self._alive_ids(commits, np.arange(self.keys, dtype=np.int64))
        return _rows_table(ids, v_int[ids], v_float[ids], self.with_op)

    def expected_rows(self, commits: int, keys) -> list[dict]:
        """The newest versions of ``keys`` (ascending; deleted keys have none), as ``to_pylist`` rows."""
        chosen = self._alive_ids(commits, np.sort(np.asarray(keys, dtype=np.int64)))
        v_int, v_float = self.newest[commits]
        return _rows_table(chosen, v_int[chosen], v_float[chosen], self.with_op).to_pylist()

    def live_keys(self, commits: int) -> int:
        alive = self.alive.get(commits)
        return self.keys if alive is None else int(alive.sum())

    def file_rows(self, commits: int) -> int:
        return sum(self.rows_per_commit[:commits])


def _strings(v_int: pa.Array) -> pa.Array:
    return pc.binary_join_element_wise("v-", pc.cast(v_int, pa.string()), "")


def _rows_table(ids: np.ndarray, v_int: np.ndarray, v_float: np.ndarray, with_op: bool = False,
                ops: np.ndarray | None = None) -> pa.Table:
    ints = pa.array(v_int, pa.int64())
    columns = [pa.array(ids, pa.int64()), ints, pa.array(v_float, pa.float64()), _strings(ints)]
    if not with_op:
        return pa.table(columns, schema=SCHEMA)
    kinds = pa.array(np.full(len(ids), INSERT) if ops is None else ops, pa.string())
    return pa.table(columns + [kinds], schema=DV_SCHEMA)


def _write_ipc(path: str, table: pa.Table) -> None:
    with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)


def make_paimon_workload(keys: int, commit_counts, directory: str, seed: int = SEED) -> PaimonWorkload:
    """``max(commit_counts)`` commits of half the keys each (see the module's docstring), written
    to ``directory`` as Arrow IPC files; the newest versions are kept after each count."""
    if keys < 2:
        raise ValueError("the Paimon workload needs at least 2 keys")
    if min(commit_counts) < 2:
        raise ValueError("every table needs at least 2 commits (every key exists from the second commit on)")
    rng = np.random.default_rng(seed)
    v_int = np.zeros(keys, dtype=np.int64)
    v_float = np.zeros(keys, dtype=np.float64)
    workload = PaimonWorkload(keys, [], {})
    order = np.arange(keys)
    for commit in range(max(commit_counts)):
        if commit % 2 == 0:
            order = rng.permutation(keys)
            chosen = order[:keys // 2]
        else:
            chosen = rng.permutation(order[keys // 2:])
        ints = (np.int64(commit) << VERSION_SHIFT) | rng.integers(0, 1 << VERSION_SHIFT, size=len(chosen),
                                                                  dtype=np.int64)
        floats = rng.random(len(chosen))
        v_int[chosen], v_float[chosen] = ints, floats
        path = os.path.join(directory, f"commit-{commit:03d}.arrow")
        _write_ipc(path, _rows_table(chosen.astype(np.int64), ints, floats))
        workload.commit_files.append(path)
        workload.rows_per_commit.append(len(chosen))
        if commit + 1 in commit_counts:
            workload.newest[commit + 1] = (v_int.copy(), v_float.copy())
    return workload


def make_dv_workload(keys: int, directory: str, seed: int = SEED, commits: int | None = None,
                     changed: float | None = None) -> PaimonWorkload:
    """The deletion-vector workload (see the module's docstring): a base commit of every key,
    then ``commits`` (default DV_COMMITS) commits of ``changed`` (default DV_CHANGED) / commits
    of the keys each (at least DV_MIN_ROWS), random keys (a key may come back in a later commit), a DV_DELETE_SHARE of
    them deletions (``op`` = ``-D``), the rest new versions; every row carries ``op``.  The
    newest versions and live keys are kept after all ``1 + commits`` commits."""
    commits = DV_COMMITS if commits is None else commits
    changed = DV_CHANGED if changed is None else changed
    if keys < 2:
        raise ValueError("the deletion-vector workload needs at least 2 keys")
    rng = np.random.default_rng(seed + 7)
    workload = PaimonWorkload(keys, [], {}, with_op=True)
    v_int = rng.integers(0, 1 << VERSION_SHIFT, size=keys, dtype=np.int64)  # commit 0's versions
    v_float = rng.random(keys)
    alive = np.ones(keys, dtype=bool)
    # at least DV_MIN_ROWS rows a commit: at tiny sizes every bucket still gets a file from each
    # commit, so that every bucket reaches the compaction trigger (else its level-0 files stay)
    per_commit = max(DV_MIN_ROWS, round(keys * changed / max(commits, 1)))
    batches: list[tuple] = [(rng.permutation(keys).astype(np.int64), v_int.copy(), v_float.copy(), None)]
    touched: set[int] = set()
    for commit in range(1, commits + 1):
        chosen = rng.choice(keys, size=min(per_commit, keys), replace=False).astype(np.int64)
        ints = (np.int64(commit) << VERSION_SHIFT) | rng.integers(0, 1 << VERSION_SHIFT, size=len(chosen),
                                                                  dtype=np.int64)
        floats = rng.random(len(chosen))
        deletes = rng.random(len(chosen)) < DV_DELETE_SHARE
        v_int[chosen], v_float[chosen], alive[chosen] = ints, floats, ~deletes
        batches.append((chosen, ints, floats, np.where(deletes, DELETE, INSERT)))
        touched.update(int(k) for k in chosen)
    for commit, (chosen, ints, floats, ops) in enumerate(batches):
        if ops is None:  # the base: every key's first version, in random order
            ints, floats = ints[chosen], floats[chosen]
        path = os.path.join(directory, f"dv-commit-{commit:03d}.arrow")
        _write_ipc(path, _rows_table(chosen, ints, floats, True, ops))
        workload.commit_files.append(path)
        workload.rows_per_commit.append(len(chosen))
    workload.newest[commits + 1] = (v_int, v_float)
    workload.alive[commits + 1] = alive
    workload.changed = sorted(touched)
    return workload


# ---------------------------------------------------------------- results


@dataclass
class PaimonResult:
    table: str                       # "c4-b1": commits and buckets
    commits: int
    buckets: int
    reader: str                      # mergetree, pypaimon-rust, pypaimon; pyarrow for the rewrite baseline
    operation: str                   # write, full read, point lookup, read + rewrite the files, compact (full)
    phase: str = UNMERGED            # unmerged (as pypaimon wrote it) or compacted (after mergetree's compaction)
    rows_in: int = 0                 # rows in the data files read or compacted, rows written; lookups
    rows_out: int = 0                # rows returned; rows found by lookups; rows in the compacted files
    files: int | None = None         # live data files of the table at this phase (after a compaction: its output)
    max_runs: int | None = None      # the most sorted runs a bucket holds
    seconds: float = float("nan")    # the best timed run; for lookups the sum of all
    cpu_seconds: float = float("nan")
    timed_runs: int = 0
    latency_ms: dict | None = None   # point lookups: median, p95, min, max, count
    check: str = "ok"                # "ok", "unavailable: ...", "wrong: ...", "failed: ...", "skipped: ..."
    notes: list = field(default_factory=list)
    case: str = MERGE_CASE           # merge (the commit-count tables) or dv (the deletion-vector case)

    @property
    def ok(self) -> bool:
        return self.check == "ok"

    @property
    def unavailable(self) -> bool:
        return self.check.startswith("unavailable")

    @property
    def rows_per_second(self) -> float:
        """Rows in per wall second; lookups per second for point lookups."""
        return self.rows_in / self.seconds if self.ok and self.seconds > 0 else float("nan")

    @property
    def rows_per_cpu_second(self) -> float:
        """Rows in per second of process CPU time, every thread counted (a reader that runs
        many threads gets no credit for them)."""
        return self.rows_in / self.cpu_seconds if self.ok and self.cpu_seconds > 0 else float("nan")

    @property
    def p50_ms(self) -> float:
        return self.latency_ms["median"] if self.ok and self.latency_ms else float("nan")

    def to_dict(self) -> dict:
        return json_ready({**asdict(self), "rows_per_second": self.rows_per_second,
                           "rows_per_cpu_second": self.rows_per_cpu_second})


@dataclass
class PaimonReport:
    keys: int
    commit_counts: list
    bucket_counts: list
    lookups: int
    results: list = field(default_factory=list)   # of PaimonResult, table by table
    versions: dict = field(default_factory=dict)
    dv_buckets: list = field(default_factory=list)  # the deletion-vector case's tables (none: not run)
    skipped: str | None = None                    # why nothing ran (no pypaimon interpreter)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """Every check passed and something ran (a missed performance target does not count;
        an unavailable pypaimon-rust does not either)."""
        return self.skipped is None and bool(self.results) and all(r.ok or r.unavailable for r in self.results)

    def find(self, table: str, reader: str, operation: str, phase: str = UNMERGED) -> PaimonResult | None:
        for r in self.results:
            if r.table == table and r.reader == reader and r.operation == operation and r.phase == phase:
                return r
        return None

    @property
    def tables(self) -> list[str]:
        """The commit-count tables measured."""
        return list(dict.fromkeys(r.table for r in self.results if r.case == MERGE_CASE))

    @property
    def dv_tables(self) -> list[str]:
        """The deletion-vector case's tables measured."""
        return list(dict.fromkeys(r.table for r in self.results if r.case == DV_CASE))

    @property
    def write_tables(self) -> list[str]:
        """The write case's tables measured."""
        return list(dict.fromkeys(r.table for r in self.results if r.case == WRITE_CASE))


# ---------------------------------------------------------------- checks


def compare_full(got: pa.Table, expected: pa.Table) -> str:
    """'ok' when ``got`` (any row order) holds exactly the rows of ``expected`` (its columns)."""
    return compare_tables(got, expected, KEY)


def _plain(rows: list[dict], names: list[str] = SCHEMA.names) -> list[dict]:
    return [{name: row.get(name) for name in names} for row in rows]


def compare_lookup(rows: list[dict], want: dict | None, key: int | None = None) -> str:
    """'ok' when ``rows`` is exactly ``want`` (None: the key ``key`` was deleted, no row)."""
    if want is None:
        return "ok" if not rows else f"wrong: id {key} gave {len(rows)} rows, expected none (it was deleted)"
    if len(rows) != 1:
        return f"wrong: id {want[KEY]} gave {len(rows)} rows, expected exactly 1"
    have = _plain(rows, list(want))[0]
    if have != want:
        return f"wrong: id {want[KEY]} gave {have}, expected {want}"
    return "ok"


def _latency(seconds: list[float]) -> dict:
    ms = np.array(seconds) * 1e3
    return {"median": float(np.median(ms)), "p95": float(np.percentile(ms, 95)), "min": float(ms.min()),
            "max": float(ms.max()), "count": len(ms)}


# ---------------------------------------------------------------- pypaimon's process


def paimon_missing() -> str | None:
    """Why pypaimon cannot run here, or None."""
    if not os.path.exists(PAIMON_PYTHON):
        return (f"no pypaimon interpreter at {PAIMON_PYTHON} (make one with pypaimon in .venv-paimon, "
                f"or point MERGETREE_PAIMON_PYTHON at one)")
    return None


def _write_spec(root: str, name: str, spec: dict) -> str:
    path = os.path.join(root, "specs", f"{name}.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(spec, handle)
    return path


def _driver_command(command: str, spec_path: str) -> list[str]:
    return [PAIMON_PYTHON, DRIVER, command, spec_path]


def _driver_answer(returncode: int, stdout: str, stderr: str) -> dict:
    """The driver's JSON line, or ``{"check": "failed: ..."}``."""
    if returncode != 0:
        lines = [line for line in stderr.strip().splitlines() if line.strip()]
        return {"check": f"failed: pypaimon: {lines[-1] if lines else f'exit code {returncode}'}"}
    for line in reversed(stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    return {"check": "failed: pypaimon's process printed no result"}


def _run_driver(command: str, spec_path: str) -> dict:
    try:
        done = subprocess.run(_driver_command(command, spec_path), capture_output=True, text=True, check=False,
                              timeout=DRIVER_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        return {"check": f"failed: pypaimon took over {DRIVER_TIMEOUT_SECONDS} s"}
    return _driver_answer(done.returncode, done.stdout, done.stderr)


def _write_tables(workload: PaimonWorkload, warehouse: str, root: str, commit_counts: list,
                  bucket_counts: list) -> dict:
    """pypaimon writes every bucket count's table, all at once (a process each); returns
    buckets -> the driver's answer.  The table is copied after each smaller commit count."""
    specs = {}
    largest = max(commit_counts)
    for buckets in bucket_counts:
        copies = {str(c): _identifier(table_name(c, buckets)) for c in commit_counts if c != largest}
        spec = {"warehouse": warehouse, "table": _identifier(table_name(largest, buckets)), "primary_key": KEY,
                "options": {"bucket": str(buckets)}, "commits": workload.commit_files[:largest], "copies": copies}
        specs[buckets] = _write_spec(root, f"write-b{buckets}", spec)
    return _run_writers(specs)


def _run_writers(specs: dict) -> dict:
    """The driver's ``write`` of every spec at once (a process each): label -> its answer."""
    processes = {}
    for label, path in specs.items():
        # output to files, not pipes: a process whose pipe is full would wait for the other one
        with open(f"{path}.out", "w") as stdout, open(f"{path}.err", "w") as stderr:
            processes[label] = (path, subprocess.Popen(_driver_command("write", path), stdout=stdout,
                                                       stderr=stderr))
    answers = {}
    deadline = time.monotonic() + DRIVER_TIMEOUT_SECONDS
    for label, (path, process) in processes.items():
        try:
            process.wait(timeout=max(deadline - time.monotonic(), 1))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            answers[label] = {"check": f"failed: pypaimon took over {DRIVER_TIMEOUT_SECONDS} s"}
            continue
        with open(f"{path}.out") as stdout, open(f"{path}.err") as stderr:
            answers[label] = _driver_answer(process.returncode, stdout.read(), stderr.read())
    return answers


# ---------------------------------------------------------------- one table


def _budgeted(function: Callable, *args, repeat: int = REPEAT, budget: float = READ_BUDGET_SECONDS,
              pause_gc: bool = True) -> tuple[timing.Timed, int]:
    """The best of up to ``repeat`` timed calls, another only while the runs so far took less than
    ``budget`` seconds; the last call's output, and how many runs were timed."""
    best, best_cpu, spent, runs, output = float("inf"), float("nan"), 0.0, 0, None
    while runs < max(repeat, 1):
        output = None  # let the previous answer go before the next run
        seconds, cpu_seconds, output = timing.timed(function, *args, pause_gc=pause_gc)
        spent, runs = spent + seconds, runs + 1
        if seconds < best:
            best, best_cpu = seconds, cpu_seconds
        if spent >= budget:
            break
    return timing.Timed(best, best_cpu, output), runs


def _note_runs(result: PaimonResult, repeat: int = REPEAT) -> None:
    """A note when fewer than ``repeat`` runs were timed (the budget ran out)."""
    if 0 < result.timed_runs < repeat:
        result.notes.append(f"{'one timed run' if result.timed_runs == 1 else f'best of {result.timed_runs}'}: "
                            f"the runs took {READ_BUDGET_SECONDS:g} s or more")


@dataclass
class _Table:
    """One table being measured: where it is and what it must hold."""
    warehouse: str
    commits: int
    buckets: int
    workload: PaimonWorkload
    lookup_keys: list
    sample_keys: list
    root: str
    label: str | None = None       # the deletion-vector case: its name (the results' table)
    stored_as: str | None = None   # ... and this phase's table (db.name)
    case: str = MERGE_CASE
    repeat: int = REPEAT           # a full read's timed runs at most

    @property
    def name(self) -> str:
        return self.label or table_name(self.commits, self.buckets)

    @property
    def identifier(self) -> str:
        return self.stored_as or _identifier(self.name)

    def result(self, reader: str, operation: str, phase: str, **values) -> PaimonResult:
        return PaimonResult(self.name, self.commits, self.buckets, reader, operation, phase, case=self.case,
                            **values)

    def expected(self) -> pa.Table:
        return self.workload.expected(self.commits)

    def expected_row(self, key: int) -> dict | None:
        """The newest version of ``key``; None when it was deleted."""
        rows = self.workload.expected_rows(self.commits, [key])
        return rows[0] if rows else None

    @property
    def live_keys(self) -> int:
        return self.workload.live_keys(self.commits)


def _plan(warehouse: str, identifier: str):
    """The engine's plan of a read of the table's latest snapshot: every live data file, by
    (partition, bucket), each a `DataFileMeta` whose `origin` is the Paimon file."""
    from mergetree.paimon.handle import PaimonTableHandle

    return PaimonTableHandle(warehouse, None, identifier).at().plan()


def _reads_files_alone(bucket) -> bool:
    """Whether each file of a planned bucket is read on its own, its deletion vector applied (no
    merge): every file resolved (deletion vectors on, above level 0, no retractions) and a
    section of its own, so that the read splits it into a plan per file with nothing to merge."""
    from mergetree.table.read.split import split_by_file

    alone, merged = split_by_file(bucket)
    return all(m.resolved for m in bucket.files) and merged is None and \
        all(len(section) == 1 and len(section[0]) == 1 for section in bucket.sections) and \
        len(alone) == len(bucket.files)


def _shape(warehouse: str, identifier: str) -> dict:
    """The live data files: paths, rows, the snapshot, and the most sorted runs a bucket holds
    (each level-0 file is a run, each other level one run)."""
    plan = _plan(warehouse, identifier)
    runs = [sum(1 for f in b.files if f.level == 0) + len({f.level for f in b.files if f.level > 0})
            for b in plan.buckets]
    overlapping = 0
    for b in plan.buckets:
        ordered = sorted(b.files, key=lambda f: f.min_key)
        overlapping += sum(1 for a, c in itertools.pairwise(ordered) if not a.max_key < c.min_key)
    return {"files": len(plan.files), "file_rows": sum(f.row_count for f in plan.files),
            "max_runs": max(runs, default=0), "paths": [f.origin.path for f in plan.files],
            "snapshot": plan.snapshot_id,
            "levels": sorted({f.level for f in plan.files}), "overlapping": overlapping}


def _lookups(table: _Table, phase: str, reader: str, lookup: Callable[[int], list[dict]],
             shape: dict) -> PaimonResult:
    """Every lookup key through ``lookup(key) -> rows``, one untimed warm-up first, until the keys
    or the budget run out."""
    result = table.result(reader, LOOKUP, phase, files=shape["files"], max_runs=shape["max_runs"])
    keys = table.lookup_keys
    lookup(keys[0])  # warm-up: first-call setup is not a lookup's cost
    seconds, cpu, found = [], 0.0, 0
    for key in keys:
        run = timing.timed(lookup, key, pause_gc=False)
        seconds.append(run.seconds)
        cpu += run.cpu_seconds
        found += len(run.output)
        check = compare_lookup(run.output, table.expected_row(key), key)
        if check != "ok" and result.ok:
            result.check = check
        if sum(seconds) >= LOOKUP_BUDGET_SECONDS and len(seconds) >= MIN_LOOKUPS:
            break
    _fill_lookups(result, seconds, cpu, found, len(keys))
    return result


def _fill_lookups(result: PaimonResult, seconds: list, cpu: float, found: int, wanted: int) -> None:
    result.rows_in, result.rows_out, result.timed_runs = len(seconds), found, len(seconds)
    result.seconds, result.cpu_seconds = float(sum(seconds)), cpu
    result.latency_ms = _latency(seconds) if seconds else None
    if len(seconds) < wanted:
        result.notes.append(f"{len(seconds)} of {wanted} lookups: stopped after {LOOKUP_BUDGET_SECONDS:g} s")


def _measure_mergetree(table: _Table, phase: str, shape: dict) -> list[PaimonResult]:
    import mergetree.paimon as mp

    read = table.result(MERGETREE, READ, phase, rows_in=shape["file_rows"], files=shape["files"],
                        max_runs=shape["max_runs"])
    try:
        run, runs = _budgeted(mp.read, table.warehouse, table.identifier, repeat=table.repeat)
        read.seconds, read.cpu_seconds, read.timed_runs = run.seconds, run.cpu_seconds, runs
        read.rows_out = run.output.num_rows
        read.check = compare_full(run.output, table.expected())
        _note_runs(read, table.repeat)
    except Exception as error:  # reported in the table
        read.check = f"failed: {type(error).__name__}: {error}"

    def lookup(key: int) -> list[dict]:
        return mp.read(table.warehouse, table.identifier, filter=(KEY, "=", key)).to_pylist()

    try:
        lookups = _lookups(table, phase, MERGETREE, lookup, shape)
    except Exception as error:
        lookups = table.result(MERGETREE, LOOKUP, phase, check=f"failed: {type(error).__name__}: {error}")
    return [read, lookups]


def pypaimon_rust_available() -> bool:
    return find_spec("pypaimon_rust") is not None


def _measure_rust(table: _Table, phase: str, shape: dict) -> list[PaimonResult]:
    read = table.result(PYPAIMON_RUST, READ, phase, rows_in=shape["file_rows"], files=shape["files"],
                        max_runs=shape["max_runs"])
    if not pypaimon_rust_available():
        read.check = "unavailable: pypaimon-rust is not installed (pip install pypaimon-rust)"
        return [read, table.result(PYPAIMON_RUST, LOOKUP, phase, check=read.check)]
    try:
        from pypaimon_rust.datafusion import PaimonCatalog

        # a new catalog for every phase: nothing cached from before the compaction
        paimon = PaimonCatalog({"warehouse": table.warehouse}).get_table(tuple(table.identifier.split(".")))

        def read_all() -> pa.Table:
            builder = paimon.new_read_builder()
            batches = builder.new_read().read(builder.new_scan().plan().splits())
            return pa.Table.from_batches(batches) if batches else table.workload.schema.empty_table()

        run, runs = _budgeted(read_all, repeat=table.repeat)
        read.seconds, read.cpu_seconds, read.timed_runs = run.seconds, run.cpu_seconds, runs
        read.rows_out = run.output.num_rows
        read.check = compare_full(run.output, table.expected())
        _note_runs(read, table.repeat)
    except Exception as error:
        read.check = f"failed: {type(error).__name__}: {error}"
        return [read, table.result(PYPAIMON_RUST, LOOKUP, phase, check="skipped: its read failed")]

    def lookup(key: int) -> list[dict]:
        builder = paimon.new_read_builder().with_filter({"method": "equal", "field": KEY, "literals": [key]})
        return [row for batch in builder.new_read().read(builder.new_scan().plan().splits())
                for row in batch.to_pylist()]

    try:
        lookups = _lookups(table, phase, PYPAIMON_RUST, lookup, shape)
    except Exception as error:
        lookups = table.result(PYPAIMON_RUST, LOOKUP, phase, check=f"failed: {type(error).__name__}: {error}")
    return [read, lookups]


def _measure_pypaimon(table: _Table, phase: str, shape: dict) -> list[PaimonResult]:
    """pypaimon's full read and lookups, timed in its own process (benchmarks/paimon_driver.py)."""
    read = table.result(PYPAIMON, READ, phase, rows_in=shape["file_rows"], files=shape["files"],
                        max_runs=shape["max_runs"])
    lookups = table.result(PYPAIMON, LOOKUP, phase, files=shape["files"], max_runs=shape["max_runs"])
    spec = {"warehouse": table.warehouse, "table": table.identifier, "primary_key": KEY, "repeat": table.repeat,
            "read_budget": READ_BUDGET_SECONDS, "sample_keys": [int(k) for k in table.sample_keys],
            "lookup_keys": [int(k) for k in table.lookup_keys], "lookup_budget": LOOKUP_BUDGET_SECONDS}
    answer = _run_driver("measure", _write_spec(table.root, f"measure-{table.name}-{phase}", spec))
    if "check" in answer:
        read.check = lookups.check = answer["check"]
        return [read, lookups]
    got = answer["read"]
    best = int(np.argmin(got["seconds"]))
    read.seconds, read.cpu_seconds, read.timed_runs = got["seconds"][best], got["cpu_seconds"][best], len(
        got["seconds"])
    read.rows_out = got["rows"]
    keys = table.live_keys
    if got["rows"] != keys:
        read.check = f"wrong: {got['rows']:,} rows, expected {keys:,}"
    elif got["distinct_keys"] != keys:
        read.check = f"wrong: {got['distinct_keys']:,} distinct ids, expected {keys:,}"
    else:
        want = table.workload.expected_rows(table.commits, table.sample_keys)
        have = _plain(got["sample"], table.workload.schema.names)
        if have != want:
            wrong = next((w for h, w in zip(have, want) if h != w), None) if len(have) == len(want) else None
            read.check = (f"wrong: the sampled ids' rows differ (id {wrong[KEY]})" if wrong is not None
                          else f"wrong: {len(have)} rows for {len(want)} sampled ids")
    _note_runs(read, table.repeat)
    seconds, cpu, found = [], 0.0, 0
    for item in answer["lookups"]:
        seconds.append(item["seconds"])
        cpu += item["cpu_seconds"]
        found += len(item["rows"])
        check = compare_lookup(item["rows"], table.expected_row(item["key"]), item["key"])
        if check != "ok" and lookups.ok:
            lookups.check = check
    _fill_lookups(lookups, seconds, cpu, found, len(table.lookup_keys))
    return [read, lookups]


def _measure_readers(table: _Table, phase: str) -> list[PaimonResult]:
    try:
        shape = _shape(table.warehouse, table.identifier)
    except Exception as error:
        why = f"failed: the table's files could not be listed: {type(error).__name__}: {error}"
        return [table.result(r, op, phase, check=why) for r in READERS for op in (READ, LOOKUP)]
    return _measure_mergetree(table, phase, shape) + _measure_rust(table, phase, shape) + \
        _measure_pypaimon(table, phase, shape)


def _codec(path: str) -> str:
    """The compression of a Parquet file's first column chunk, as ``pq.write_table`` names it."""
    metadata = pq.ParquetFile(path).metadata
    if metadata.num_row_groups == 0:
        return "none"
    return metadata.row_group(0).column(0).compression.lower()


def _rewrite_baseline(table: _Table, shape: dict) -> PaimonResult:
    """Every live data file read with ``pq.read_table`` and written back with ``pq.write_table``
    (the same codec) to a temporary directory, file by file."""
    result = table.result(PYARROW, REWRITE, UNMERGED, rows_in=shape["file_rows"], files=shape["files"],
                          max_runs=shape["max_runs"])
    out = tempfile.mkdtemp(prefix="rewrite-", dir=table.root)
    try:
        codecs = [_codec(path) for path in shape["paths"]]

        def rewrite() -> int:
            rows = 0
            for i, (path, codec) in enumerate(zip(shape["paths"], codecs)):
                data = pq.read_table(path)
                pq.write_table(data, os.path.join(out, f"{i}.parquet"), compression=codec)
                rows += data.num_rows
            return rows

        run, runs = _budgeted(rewrite)
        result.seconds, result.cpu_seconds, result.timed_runs = run.seconds, run.cpu_seconds, runs
        result.rows_out = run.output
        if run.output != shape["file_rows"]:
            result.check = f"wrong: the files hold {run.output:,} rows, the manifests say {shape['file_rows']:,}"
        _note_runs(result)
        if set(codecs) != {"zstd"}:
            result.notes.append(f"files compressed with {', '.join(sorted(set(codecs)))}")
    except Exception as error:
        result.check = f"failed: {type(error).__name__}: {error}"
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return result


def _compact(table: _Table, before: dict) -> PaimonResult:
    """``mergetree.paimon.compact(warehouse, table, full=True)``, once; checked: a new snapshot,
    one sorted run per bucket, ``keys`` rows."""
    result = table.result(MERGETREE, COMPACT, UNMERGED, rows_in=before["file_rows"], max_runs=None)
    try:
        from mergetree.paimon import compact
    except ImportError as error:
        result.check = f"failed: mergetree.paimon.compact is not available ({error})"
        return result
    try:
        run = timing.timed(compact, table.warehouse, table.identifier, True)
        result.seconds, result.cpu_seconds, result.timed_runs = run.seconds, run.cpu_seconds, 1
        after = _shape(table.warehouse, table.identifier)
        result.files, result.max_runs, result.rows_out = after["files"], after["max_runs"], after["file_rows"]
        keys = table.workload.keys
        if not isinstance(run.output, int) or (before["snapshot"] is not None and run.output <= before["snapshot"]):
            result.check = (f"wrong: compact returned {run.output!r}, expected the id of a new snapshot "
                            f"(the table was at {before['snapshot']})")
        elif after["snapshot"] != run.output:
            result.check = f"wrong: compact returned snapshot {run.output}, the table is at {after['snapshot']}"
        elif after["max_runs"] != 1 or after["overlapping"]:
            result.check = (f"wrong: after a full compaction a bucket holds {after['max_runs']} sorted runs "
                            f"({after['overlapping']} overlapping files)")
        elif after["file_rows"] != keys:
            result.check = f"wrong: the compacted files hold {after['file_rows']:,} rows, expected {keys:,}"
        result.notes.append(f"{before['files']} files before, snapshot {before['snapshot']} -> {run.output}; "
                            f"levels {after['levels']}")
    except Exception as error:
        result.check = f"failed: {type(error).__name__}: {error}"
    return result


def _measure_table(table: _Table, write: dict, advance: Callable[[int], None]) -> list[PaimonResult]:
    """Every step on one table (see the module's docstring)."""
    steps = 8
    rows = table.workload.file_rows(table.commits)
    written = table.result(PYPAIMON, WRITE, UNMERGED, rows_in=rows)
    if "check" in write:
        written.check = write["check"]
    else:
        written.seconds = float(sum(write["commit_seconds"][:table.commits]))
        written.timed_runs = 1
        written.rows_out = rows
    results = [written]
    if not written.ok:
        advance(steps)
        return results + [table.result(r, op, phase, check="skipped: pypaimon's write failed") for phase in
                          (UNMERGED, COMPACTED) for r in READERS for op in (READ, LOOKUP)]
    try:
        before = _shape(table.warehouse, table.identifier)
    except Exception as error:
        advance(steps)
        why = f"failed: the table's files could not be listed: {type(error).__name__}: {error}"
        return results + [table.result(MERGETREE, READ, UNMERGED, check=why)]
    written.files, written.max_runs = before["files"], before["max_runs"]
    if before["file_rows"] != rows:
        written.check = f"wrong: pypaimon's files hold {before['file_rows']:,} rows, {rows:,} were written"
    for measure in (_measure_mergetree, _measure_rust, _measure_pypaimon):
        results.extend(measure(table, UNMERGED, before))
        advance(1)
    results.append(_rewrite_baseline(table, before))
    advance(1)
    compaction = _compact(table, before)
    results.append(compaction)
    advance(1)
    if compaction.ok:
        results.extend(_measure_readers(table, COMPACTED))
    else:
        results.extend(table.result(r, op, COMPACTED, check="skipped: the compaction failed")
                       for r in READERS for op in (READ, LOOKUP))
    advance(3)
    return results


# ---------------------------------------------------------------- the deletion-vector case


def dv_table_name(buckets: int) -> str:
    return f"dv-b{buckets}"


def _slug(phase: str) -> str:
    return "dv" if phase == DV else "mor"


def _compact_step(table: _Table, operation: str, phase: str, full: bool) -> PaimonResult:
    """One ``mergetree.paimon.compact`` of ``table`` (``full``: everything into the top level),
    timed once and checked: a new snapshot, no level-0 file left, and after the compaction of
    the small commits in deletion-vector mode, every bucket read file by file (no merge) with
    exactly the live keys left once the vectors are applied."""
    from mergetree.paimon import compact
    from mergetree.table.paimon.metadata import PaimonTable

    result = table.result(MERGETREE, operation, phase)
    try:
        t = PaimonTable.open(table.warehouse, table.identifier)
        snapshot = t.latest_snapshot()
        # by (path, level): a file the compaction moved up without rewriting it went in and came out
        before = {(f.path, f.level): f.row_count for f in t.live_files(snapshot)}
        run = timing.timed(compact, table.warehouse, table.identifier, full)
        result.seconds, result.cpu_seconds, result.timed_runs = run.seconds, run.cpu_seconds, 1
        t = PaimonTable.open(table.warehouse, table.identifier)
        snapshot = t.latest_snapshot()
        files = t.live_files(snapshot)
        after = {(f.path, f.level): f.row_count for f in files}
        result.rows_in = sum(rows for where, rows in before.items() if where not in after)
        result.rows_out = sum(rows for where, rows in after.items() if where not in before)
        result.files = len(files)
        levels = sorted({f.level for f in files})
        marked = sum(d.range.cardinality for per in t.deletion_files(snapshot).values() for d in per.values()) \
            if phase == DV else 0
        live = sum(after.values()) - marked
        # the top level's row groups: how its files were written (pypaimon's own, moved up, or
        # rewritten by mergetree) weighs on a full read's decoding as much as the merge does
        top = [f for f in files if f.level == max(levels)]
        groups = sum(pq.read_metadata(f.path).num_row_groups for f in top)
        result.notes.append(f"{len(before)} files -> {len(files)}, levels {levels}, snapshot {int(snapshot['id'])}"
                            + (f", {marked:,} rows marked in deletion vectors" if phase == DV else "")
                            + f"; the top level: {len(top)} files, {groups} row groups of "
                              f"{sum(f.row_count for f in top) / max(groups, 1):,.0f} rows on average")
        plan = _plan(table.warehouse, table.identifier)
        runs = [sum(1 for f in b.files if f.level == 0) + len({f.level for f in b.files if f.level > 0})
                for b in plan.buckets]
        result.max_runs = max(runs, default=0)
        if not isinstance(run.output, int) or run.output != int(snapshot["id"]):
            result.check = f"wrong: compact returned {run.output!r}, the table is at snapshot {snapshot['id']}"
        elif any(f.level == 0 for f in files):
            result.check = "wrong: level-0 files are left after the compaction"
        elif full and (len(levels) != 1 or sum(after.values()) != table.workload.rows_per_commit[0]):
            result.check = f"wrong: the base compacted into levels {levels}, {sum(after.values()):,} rows"
        elif operation == COMPACT_DV and phase == DV and not all(_reads_files_alone(b) for b in plan.buckets):
            result.check = "wrong: after the compaction some bucket still needs a merge (no deletion vectors?)"
        elif operation == COMPACT_DV and phase == DV and live != table.live_keys:
            result.check = f"wrong: {live:,} rows are live once the vectors are applied, expected {table.live_keys:,}"
    except Exception as error:
        result.check = f"failed: {type(error).__name__}: {error}"
    return result


def _writes(tables: dict, operation: str, commit_files: list, rows: int, append: bool) -> list[PaimonResult]:
    """pypaimon writes ``commit_files`` into both tables at once (a process each)."""
    specs = {}
    for phase, table in tables.items():
        options = {"bucket": str(table.buckets), "rowkind.field": OP, **(DV_OPTIONS if phase == DV else {})}
        spec = {"warehouse": table.warehouse, "table": table.identifier, "primary_key": KEY, "options": options,
                "commits": commit_files, "append": append}
        specs[phase] = _write_spec(table.root, f"write-{table.name}-{_slug(phase)}-{'commits' if append else 'base'}",
                                   spec)
    results = []
    for phase, answer in _run_writers(specs).items():
        written = tables[phase].result(PYPAIMON, operation, phase, rows_in=rows, rows_out=rows)
        if "check" in answer:
            written.check = answer["check"]
        else:
            written.seconds, written.timed_runs = float(sum(answer["commit_seconds"])), len(answer["commit_seconds"])
        results.append(written)
    return results


def _measure_dv(workload: PaimonWorkload, warehouse: str, root: str, buckets: int, lookup_keys: list,
                sample_keys: list, advance: Callable[[int], None]) -> list[PaimonResult]:
    """The deletion-vector case on ``buckets`` buckets (see the module's docstring): the same
    commits into a table with deletion vectors and one without, both compacted the same way
    by mergetree, then every reader on both."""
    name, commits = dv_table_name(buckets), len(workload.commit_files)
    tables = {phase: _Table(warehouse, commits, buckets, workload, lookup_keys, sample_keys, root, label=name,
                            stored_as=_identifier(f"{_slug(phase)}-b{buckets}"), case=DV_CASE, repeat=DV_REPEAT)
              for phase in (DV, MOR)}
    results = _writes(tables, WRITE_BASE, workload.commit_files[:1], workload.rows_per_commit[0], False)
    advance(1)
    broken = next((r for r in results if not r.ok), None)
    if broken is None:
        results.extend(_compact_step(tables[phase], COMPACT_BASE, phase, True) for phase in tables)
        broken = next((r for r in results if not r.ok), None)
    advance(1)
    starts = {phase: _latest_id(tables[phase]) for phase in tables} if broken is None else {}  # the compacted base
    if broken is None:
        results.extend(_writes(tables, WRITE_COMMITS, workload.commit_files[1:], sum(workload.rows_per_commit[1:]),
                               True))
        broken = next((r for r in results if not r.ok), None)
    advance(1)
    if broken is None:
        results.extend(_compact_step(tables[phase], COMPACT_DV, phase, False) for phase in tables)
        broken = next((r for r in results if not r.ok), None)
    if broken is None:
        results.extend(_changes_step(tables[phase], phase, starts[phase]) for phase in tables)
    advance(1)
    for phase in (MOR, DV):
        if broken is None:
            results.extend(_measure_readers(tables[phase], phase))
        else:
            why = f"skipped: {broken.reader} {broken.operation} ({broken.phase}) did not check out"
            results.extend(tables[phase].result(r, op, phase, check=why) for r in READERS for op in (READ, LOOKUP))
        advance(1)
    return results


def _latest_id(table: _Table) -> int:
    from mergetree.table.paimon.metadata import PaimonTable
    return int(PaimonTable.open(table.warehouse, table.identifier).latest_snapshot_id() or 0)


def _changes_step(table: _Table, phase: str, start: int) -> PaimonResult:
    """``mergetree.paimon.changes`` from the compacted base (snapshot ``start``) to the latest
    snapshot: the net change of the small commits, the best of DV_REPEAT runs (the first builds
    the lookup files; its time is noted), beside two full reads of both ends (what a consumer
    without change streams reads).  Checked against the workload: every changed key exactly
    once, ``-D`` for a deleted key, ``-U`` then ``+U`` with its newest version for an updated one."""
    import mergetree.paimon as mp
    result = table.result(MERGETREE, CHANGES, phase)
    try:
        runs = [timing.timed(lambda: mp.changes(table.warehouse, table.identifier, start).read_all())
                for _ in range(DV_REPEAT)]
        best = min(runs, key=lambda r: r.seconds)
        reads = timing.timed(lambda: (mp.read(table.warehouse, table.identifier, snapshot=start),
                                      mp.read(table.warehouse, table.identifier)))
        result.seconds, result.cpu_seconds, result.timed_runs = best.seconds, best.cpu_seconds, len(runs)
        change: pa.Table = runs[-1].output
        result.rows_in, result.rows_out = sum(table.workload.rows_per_commit[1:]), change.num_rows
        result.notes.append(f"first run {runs[0].seconds:.3f} s (it builds the lookup files); two full reads of both "
                            f"ends {reads.seconds:.3f} s, {reads.seconds / best.seconds:.1f}x the change's time")
        workload = table.workload
        changed = np.asarray(workload.changed, dtype=np.int64)
        alive = workload.alive[max(workload.alive)]
        newest = workload.newest[max(workload.newest)][0]
        ids = change.column(KEY).to_numpy()
        kinds = np.asarray(change.column("_row_kind").to_pylist())
        updated, deleted = changed[alive[changed]], changed[~alive[changed]]
        after = kinds == "+U"
        if len(ids) != 2 * len(updated) + len(deleted) or set(ids.tolist()) != set(changed.tolist()):
            result.check = (f"wrong: {len(ids):,} change rows over {len(set(ids.tolist())):,} keys, expected "
                            f"{2 * len(updated) + len(deleted):,} rows over the {len(changed):,} changed keys")
        elif not np.array_equal(np.sort(ids[kinds == "-D"]), np.sort(deleted)) or \
                not np.array_equal(np.sort(ids[after]), np.sort(updated)):
            result.check = "wrong: the -D rows are not the deleted keys, or the +U rows not the updated ones"
        elif not np.array_equal(change.column("v_int").to_numpy(zero_copy_only=False)[after], newest[ids[after]]):
            result.check = "wrong: a +U row is not its key's newest version"
    except Exception as error:
        result.check = f"failed: {type(error).__name__}: {error}"
    return result


def dv_lookup_keys(workload: PaimonWorkload, count: int, seed: int = SEED + 2) -> list[int]:
    """``count`` distinct ids, a DV_CHANGED_LOOKUPS share of them ids the small commits changed,
    half deleted and half updated (so lookups of deleted and replaced keys are always checked),
    the rest any id."""
    rng = np.random.default_rng(seed)
    alive = workload.alive[max(workload.alive)]
    changed = np.asarray(workload.changed, dtype=np.int64)
    count = min(count, workload.keys)
    wanted = round(count * DV_CHANGED_LOOKUPS)
    picked: list[int] = []
    for group, share in ((changed[~alive[changed]], wanted // 2), (changed[alive[changed]], wanted - wanted // 2)):
        picked += [int(k) for k in rng.choice(group, size=min(len(group), share), replace=False)]
    chosen = set(picked)
    for k in rng.permutation(workload.keys):
        if len(picked) >= count:
            break
        if int(k) not in chosen:
            picked.append(int(k))
            chosen.add(int(k))
    return [int(k) for k in rng.permutation(picked)]


# ---------------------------------------------------------------- running


def workload_text(case: str = "all") -> str:
    """What ``case`` (``all``, or one of CASES) runs, for the header line."""
    merge = (f"{', '.join(map(str, COMMIT_COUNTS))} commits of half the keys each, bucket "
             f"{' and '.join(map(str, BUCKET_COUNTS))}")
    dv = (f"the deletion-vector case ({DV_CHANGED:.0%} of the keys updated or deleted over {DV_COMMITS} commits, "
          f"bucket {' and '.join(map(str, DV_BUCKETS))})")
    writes = (f"the write case ({WRITE_COMMITS_COUNT} commits of half the keys into an empty table, bucket "
              f"{' and '.join(map(str, WRITE_BUCKETS))})")
    return {MERGE_CASE: merge, DV_CASE: dv, WRITE_CASE: writes}.get(case, f"{merge}; {dv}; {writes}")


def peer_versions() -> dict:
    """pypaimon's version (asked of its interpreter) and pypaimon-rust's (here)."""
    versions = {"pypaimon-rust": installed_version("pypaimon-rust") or "not installed"}
    if paimon_missing():
        versions["pypaimon"] = "not found"
        return versions
    script = ("import importlib.metadata as m, pyarrow; "
              "print(m.version('pypaimon'), pyarrow.__version__)")
    try:
        done = subprocess.run([PAIMON_PYTHON, "-c", script], capture_output=True, text=True, timeout=60, check=False)
        pypaimon, pyarrow_version = done.stdout.split()
        versions["pypaimon"] = f"{pypaimon} (pyarrow {pyarrow_version})"
    except (ValueError, OSError, subprocess.TimeoutExpired):
        versions["pypaimon"] = "?"
    return versions


def run_paimon_bench(keys: int = DEFAULT_KEYS, commit_counts=None, bucket_counts=None, lookups: int | None = None,
                     directory: str | None = None, progress: bool | None = None, stream=sys.stderr,
                     cases=None, dv_buckets=None) -> PaimonReport:
    """Write the tables with pypaimon and measure every reader and the compaction on each.

    ``commit_counts``, ``bucket_counts``, ``lookups``, ``cases`` (``merge``: the commit-count
    tables, ``dv``: the deletion-vector case) and ``dv_buckets`` default to the module's
    COMMIT_COUNTS, BUCKET_COUNTS, LOOKUPS, CASES and DV_BUCKETS (read at call time).  Everything
    is written in a new temporary directory under ``directory`` (default: the system's), removed
    at the end."""
    started = time.perf_counter()
    commit_counts = sorted(set(commit_counts or COMMIT_COUNTS))
    bucket_counts = sorted(set(bucket_counts or BUCKET_COUNTS))
    cases = [c for c in CASES if c in (CASES if cases is None else cases)]
    dv_buckets = sorted(set(DV_BUCKETS if dv_buckets is None else dv_buckets)) if DV_CASE in cases else []
    if MERGE_CASE not in cases:
        commit_counts, bucket_counts = [], []
    lookups = LOOKUPS if lookups is None else lookups
    report = PaimonReport(keys, commit_counts, bucket_counts, min(lookups, keys), versions=peer_versions(),
                          dv_buckets=dv_buckets)
    missing = paimon_missing()
    if missing:
        report.skipped = missing
        return report
    root = tempfile.mkdtemp(prefix=f"mergetree-bench-paimon-{keys}-", dir=directory)
    try:
        rng = np.random.default_rng(SEED + 1)
        lookup_keys = [int(k) for k in rng.choice(keys, size=min(lookups, keys), replace=False)]
        sample_keys = sorted(int(k) for k in rng.choice(keys, size=min(SAMPLE_KEYS, keys), replace=False))
        steps = (1 + 8 * len(commit_counts) * len(bucket_counts) if commit_counts else 0) + 6 * len(dv_buckets) + \
            (1 if WRITE_CASE in cases else 0)
        with timing.progress_bar("paimon bench", "steps", steps, progress, stream) as advance:
            data = os.path.join(root, "commits")
            os.makedirs(data)
            warehouse = os.path.join(root, "warehouse")
            workload = None
            if commit_counts:
                workload = make_paimon_workload(keys, sorted(set(commit_counts) | {WRITE_COMMITS_COUNT}), data)
                writes = _write_tables(workload, warehouse, root, commit_counts, bucket_counts)
                advance(1)
                for buckets in bucket_counts:
                    for commits in commit_counts:
                        table = _Table(warehouse, commits, buckets, workload, lookup_keys, sample_keys, root)
                        report.results.extend(_measure_table(table, writes[buckets], advance))
            if WRITE_CASE in cases:
                if workload is None:
                    workload = make_paimon_workload(keys, [WRITE_COMMITS_COUNT], data)
                for buckets in WRITE_BUCKETS:
                    report.results.extend(_measure_writes(workload, warehouse, root, buckets))
                advance(1)
            if dv_buckets:
                dv = make_dv_workload(keys, data)
                dv_lookups = dv_lookup_keys(dv, len(lookup_keys))
                dv_sample = sorted(set(sample_keys) | set(dv_lookup_keys(dv, len(sample_keys), SEED + 3)))
                for buckets in dv_buckets:
                    report.results.extend(_measure_dv(dv, warehouse, root, buckets, dv_lookups, dv_sample, advance))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    report.seconds = time.perf_counter() - started
    return report


# ---------------------------------------------------------------- targets


@dataclass
class Target:
    name: str
    table: str
    text: str            # the line shown
    value: float | None  # the measured ratio (None: not measured)
    met: bool | None     # None: not measured


def _verdict(met: bool) -> str:
    return "PASS" if met else "MISS"


def _speed_ratio(mine: PaimonResult | None, theirs: PaimonResult | None) -> float | None:
    """How many times ``mine``'s rows per second is ``theirs``'s."""
    if mine is None or theirs is None or not mine.ok or not theirs.ok or not theirs.rows_per_second > 0:
        return None
    return mine.rows_per_second / theirs.rows_per_second


def _cpu_ratio(mine: PaimonResult | None, theirs: PaimonResult | None) -> float | None:
    """How many times ``mine``'s rows per CPU-second is ``theirs``'s."""
    if mine is None or theirs is None or not mine.ok or not theirs.ok or not theirs.rows_per_cpu_second > 0:
        return None
    ratio = mine.rows_per_cpu_second / theirs.rows_per_cpu_second
    return ratio if ratio == ratio else None


def _time_ratio(mine: PaimonResult | None, theirs: PaimonResult | None) -> float | None:
    """How many times ``theirs``'s wall time is ``mine``'s: a full read of the compacted table
    returns the same rows from fewer rows in, so the time is compared, not rows in per second."""
    if mine is None or theirs is None or not mine.ok or not theirs.ok or not mine.seconds > 0:
        return None
    return theirs.seconds / mine.seconds


def _latency_ratio(mine: PaimonResult | None, theirs: PaimonResult | None) -> float | None:
    """How many times ``theirs``'s p50 latency is ``mine``'s (above 1: mine is faster)."""
    if mine is None or theirs is None or not mine.ok or not theirs.ok or not mine.p50_ms > 0:
        return None
    return theirs.p50_ms / mine.p50_ms


def _target(name: str, table: str, head: str, value: float | None, shown: str = "{:.2f}x") -> Target:
    goal = ALL_TARGETS[name]
    goal_text = f"{goal:.0%}" if shown.endswith("%}") else f"{goal:g}x"
    if value is None:
        return Target(name, table, f"{table}: {head}: not measured (a side is missing, failed or wrong)", None, None)
    met = value > goal if name == "compacted_faster" else value >= goal
    sign = ">" if name == "compacted_faster" else "≥"
    return Target(name, table, f"{table}: {head}: {shown.format(value)} (target {sign} {goal_text}: "
                               f"{_verdict(met)})", value, met)


def paimon_targets(report: PaimonReport) -> list[Target]:
    """The issue's targets on every table (see the module's docstring)."""
    targets = []
    for name in report.tables:
        find = report.find
        mine = find(name, MERGETREE, READ)
        targets.append(_target("read_vs_pypaimon", name, "full read (unmerged), mergetree / pypaimon",
                               _speed_ratio(mine, find(name, PYPAIMON, READ))))
        rust = find(name, PYPAIMON_RUST, READ)
        if rust is not None and rust.unavailable:
            targets.append(Target("read_vs_pypaimon_rust", name, f"{name}: full read (unmerged), mergetree / "
                                  "pypaimon-rust: n/a (pypaimon-rust is not installed)", None, None))
            targets.append(Target("read_per_cpu_vs_pypaimon_rust", name, f"{name}: full read (unmerged) rows per "
                                  "CPU-second, mergetree / pypaimon-rust: n/a (pypaimon-rust is not installed)",
                                  None, None))
            targets.append(Target("lookup_vs_pypaimon_rust", name, f"{name}: point lookup p50 (unmerged), "
                                  "pypaimon-rust / mergetree: n/a (pypaimon-rust is not installed)", None, None))
        else:
            targets.append(_target("read_vs_pypaimon_rust", name, "full read (unmerged), mergetree / pypaimon-rust",
                                   _speed_ratio(mine, rust)))
            targets.append(_target("read_per_cpu_vs_pypaimon_rust", name, "full read (unmerged) rows per "
                                   "CPU-second, mergetree / pypaimon-rust" + _per_cpu_text(mine, rust),
                                   _cpu_ratio(mine, rust)))
            targets.append(_target("lookup_vs_pypaimon_rust", name, "point lookup p50 (unmerged), pypaimon-rust / "
                                   "mergetree", _latency_ratio(find(name, MERGETREE, LOOKUP),
                                                               find(name, PYPAIMON_RUST, LOOKUP))))
        speedups, measured = [], True
        for reader in READERS:
            for operation in (READ, LOOKUP):
                before, after = find(name, reader, operation), find(name, reader, operation, COMPACTED)
                if before is not None and before.unavailable:
                    continue
                ratio = _time_ratio(after, before) if operation == READ else _latency_ratio(after, before)
                if ratio is None:
                    measured = False
                else:
                    speedups.append((f"{reader} {'read' if operation == READ else 'lookup'}", ratio))
        head = "after compaction every reader is faster (smallest speed-up)"
        target = _target("compacted_faster", name, head, min(r for _, r in speedups) if measured and speedups
                         else None)
        if measured and speedups:
            target.text += "; " + ", ".join(f"{what} {ratio:.2f}x" for what, ratio in speedups)
        targets.append(target)
        targets.append(_target("compaction_vs_rewrite", name, "compaction rows/s / pyarrow read + rewrite rows/s",
                               _speed_ratio(find(name, MERGETREE, COMPACT), find(name, PYARROW, REWRITE)),
                               shown="{:.0%}"))
    return targets + dv_targets(report)


def _per_cpu_text(mine: PaimonResult | None, theirs: PaimonResult | None) -> str:
    """`` (12.30 M / 8.10 M rows per CPU-second)``, or nothing when a side is missing."""
    if mine is None or theirs is None or not mine.rows_per_cpu_second > 0 or not theirs.rows_per_cpu_second > 0:
        return ""
    return (f" ({mine.rows_per_cpu_second / 1e6:.2f} M / {theirs.rows_per_cpu_second / 1e6:.2f} M rows per "
            "CPU-second)")


def dv_targets(report: PaimonReport) -> list[Target]:
    """The deletion-vector case's targets: mergetree's full read and lookup p50 on the table in
    deletion-vector mode against pypaimon's and pypaimon-rust's on the same table."""
    targets = []
    for name in report.dv_tables:
        find = report.find
        mine_read, mine_lookup = find(name, MERGETREE, READ, DV), find(name, MERGETREE, LOOKUP, DV)
        for reader, suffix in ((PYPAIMON, "pypaimon"), (PYPAIMON_RUST, "pypaimon_rust")):
            read, lookup = find(name, reader, READ, DV), find(name, reader, LOOKUP, DV)
            for operation, theirs, ratio in ((READ, read, _speed_ratio(mine_read, read)),
                                             (LOOKUP, lookup, _latency_ratio(mine_lookup, lookup))):
                target = f"dv_{'read' if operation == READ else 'lookup'}_vs_{suffix}"
                head = (f"full read ({DV}), mergetree / {reader}" if operation == READ
                        else f"point lookup p50 ({DV}), {reader} / mergetree")
                if theirs is not None and theirs.unavailable:
                    targets.append(Target(target, name, f"{name}: {head}: n/a ({theirs.check})", None, None))
                else:
                    targets.append(_target(target, name, head, ratio))
    return targets


def dv_findings(report: PaimonReport) -> list[str]:
    """What deletion vectors buy each reader (merge-on-read over the deletion-vector read, full
    read and lookup p50) and what they cost mergetree's compaction (informational)."""
    lines = []
    for name in report.dv_tables:
        find = report.find
        buys = []
        for reader in READERS:
            for operation in (READ, LOOKUP):
                mor, dv = find(name, reader, operation, MOR), find(name, reader, operation, DV)
                ratio = _time_ratio(dv, mor) if operation == READ else _latency_ratio(dv, mor)
                if ratio is not None:
                    buys.append(f"{reader} {'read' if operation == READ else 'lookup'} {ratio:.2f}x")
        lines.append(f"{name}: deletion vectors over merge-on-read of the same commits (its time / theirs): "
                     + (", ".join(buys) or "not measured"))
        with_dv, without = find(name, MERGETREE, COMPACT_DV, DV), find(name, MERGETREE, COMPACT_DV, MOR)
        ratio = _time_ratio(without, with_dv)
        lines.append(f"{name}: mergetree's compaction of the small commits with deletion vectors / without: "
                     + ("not measured" if ratio is None or with_dv is None or without is None else
                        f"{with_dv.seconds:.3f} s / {without.seconds:.3f} s = {ratio:.2f}x")
                     + " (informational; issue 25 bounded it at 1.5x for mergetree's older format)")
    return lines


def target_summary(report: PaimonReport) -> dict:
    """Target name -> tables that met it, measured tables, all tables."""
    summary: dict = {}
    for t in paimon_targets(report):
        entry = summary.setdefault(t.name, {"met": 0, "measured": 0, "tables": 0})
        entry["tables"] += 1
        entry["measured"] += t.met is not None
        entry["met"] += bool(t.met)
    return summary


# ---------------------------------------------------------------- reporting


def _seconds(r: PaimonResult) -> str:
    return f"{r.seconds:.3f}" if r.ok and r.seconds == r.seconds else "-"


def _cpu_per_wall(r: PaimonResult) -> str:
    return f"{r.cpu_seconds / r.seconds:.2f}" if r.ok and r.seconds > 0 and r.cpu_seconds == r.cpu_seconds else "-"


def _read_rows(report: PaimonReport, names: list | None = None, phases: tuple = (UNMERGED, COMPACTED)) -> list:
    rows = [("table", "phase", "reader", "files", "runs", "rows in", "read s", "cpu/wall", "rows/s", "mergetree is",
             "rows/cpu-s", "mergetree is", "lookup p50 ms", "p95 ms", "lookups", "mergetree is", "check")]
    for name in report.tables if names is None else names:
        for phase in phases:
            mine_read, mine_lookup = report.find(name, MERGETREE, READ, phase), report.find(name, MERGETREE, LOOKUP,
                                                                                             phase)
            for reader in READERS:
                read, lookup = report.find(name, reader, READ, phase), report.find(name, reader, LOOKUP, phase)
                if read is None:
                    continue
                if reader == MERGETREE:
                    read_ratio = cpu_ratio = lookup_ratio = "(reference)" if read.ok else ""
                else:
                    ratio = _speed_ratio(mine_read, read)
                    read_ratio = "-" if ratio is None else f"{ratio:.2f}x"
                    ratio = _cpu_ratio(mine_read, read)
                    cpu_ratio = "-" if ratio is None else f"{ratio:.2f}x"
                    ratio = _latency_ratio(mine_lookup, lookup)
                    lookup_ratio = "-" if ratio is None else f"{ratio:.2f}x"
                checks = [c for c in dict.fromkeys((read.check, lookup.check if lookup else "ok")) if c != "ok"]
                usable = lookup is not None and lookup.ok and lookup.latency_ms
                rows.append((name, phase, reader, "-" if read.files is None else str(read.files),
                             "-" if read.max_runs is None else str(read.max_runs),
                             f"{read.rows_in:,}" if read.rows_in else "-", _seconds(read), _cpu_per_wall(read),
                             rate_text(read.rows_per_second), read_ratio,
                             rate_text(read.rows_per_cpu_second) if read.rows_per_cpu_second > 0 else "-", cpu_ratio,
                             f"{lookup.p50_ms:.2f}" if usable else "-",
                             f"{lookup.latency_ms['p95']:.2f}" if usable else "-",
                             str(lookup.latency_ms["count"]) if usable else "-", lookup_ratio,
                             escape("; ".join(checks) or "ok")))
    return rows


def _compaction_rows(report: PaimonReport) -> list:
    rows = [("table", "rows in", "pypaimon write s", "write rows/s", "rewrite s", "rewrite rows/s", "compact s",
             "cpu/wall", "compact rows/s", "compact / rewrite", "files", "check")]
    for name in report.tables:
        write = report.find(name, PYPAIMON, WRITE)
        rewrite, compact = report.find(name, PYARROW, REWRITE), report.find(name, MERGETREE, COMPACT)
        ratio = _speed_ratio(compact, rewrite)
        checks = [r.check for r in (write, rewrite, compact) if r is not None and r.check != "ok"]
        before = write.files if write is not None and write.files is not None else None
        after = compact.files if compact is not None and compact.ok else None
        rows.append((name, f"{compact.rows_in:,}" if compact and compact.rows_in else "-",
                     _seconds(write) if write else "-", rate_text(write.rows_per_second) if write else "-",
                     _seconds(rewrite) if rewrite else "-",
                     rate_text(rewrite.rows_per_second) if rewrite else "-",
                     _seconds(compact) if compact else "-", _cpu_per_wall(compact) if compact else "-",
                     rate_text(compact.rows_per_second) if compact else "-",
                     "-" if ratio is None else f"{ratio:.0%}",
                     f"{'-' if before is None else before} -> {'-' if after is None else after}",
                     escape("; ".join(dict.fromkeys(checks)) or "ok")))
    return rows


def _dv_steps(report: PaimonReport) -> list:
    rows = [("table", "phase", "step", "by", "rows in", "rows out", "s", "cpu/wall", "files", "runs", "check")]
    for name in report.dv_tables:
        for phase in (MOR, DV):
            for operation in (WRITE_BASE, COMPACT_BASE, WRITE_COMMITS, COMPACT_DV, CHANGES):
                r = next((r for r in report.results if r.table == name and r.phase == phase
                          and r.operation == operation), None)
                if r is None:
                    continue
                rows.append((name, phase, operation, r.reader, f"{r.rows_in:,}", f"{r.rows_out:,}", _seconds(r),
                             _cpu_per_wall(r), "-" if r.files is None else str(r.files),
                             "-" if r.max_runs is None else str(r.max_runs), escape(r.check)))
    return rows


def _measure_writes(workload: PaimonWorkload, warehouse: str, root: str, buckets: int) -> list[PaimonResult]:
    """The write case: the same WRITE_COMMITS_COUNT commits into an empty table by every
    writer — pypaimon (in its process), pypaimon-rust (here, when importable) and mergetree
    (here): level 0 + APPEND only (``write-only``, what the peers do: they do not compact), and
    with the compaction Java's writers run after each commit.  Each table is then read by
    mergetree and checked in full against the newest versions."""
    import mergetree.paimon as mp
    commits = workload.commit_files[:WRITE_COMMITS_COUNT]
    rows = workload.file_rows(WRITE_COMMITS_COUNT)
    name = f"w-b{buckets}"
    expected = workload.expected(WRITE_COMMITS_COUNT)

    def result(reader: str, operation: str, **values) -> PaimonResult:
        return PaimonResult(name, WRITE_COMMITS_COUNT, buckets, reader, operation, UNMERGED, rows_in=rows,
                            case=WRITE_CASE, **values)

    def checked(identifier: str) -> str:
        try:
            return compare_full(mp.read(warehouse, identifier), expected)
        except Exception as error:  # a wrong table is reported, not raised
            return f"failed: {type(error).__name__}: {error}"

    def created(identifier: str, options: dict) -> dict:
        spec = {"warehouse": warehouse, "table": identifier, "primary_key": KEY, "options": options,
                "commits": commits[:1], "create_only": True}
        return _run_driver("write", _write_spec(root, identifier.replace(".", "-"), spec))

    out = []
    table_options = {"bucket": str(buckets)}
    # pypaimon: its own process writes and times every commit
    ident = _identifier(f"{name}-pypaimon")
    spec = {"warehouse": warehouse, "table": ident, "primary_key": KEY, "options": table_options,
            "commits": commits}
    answer = _run_driver("write", _write_spec(root, f"write-case-b{buckets}", spec))
    if "seconds" in answer:
        out.append(result(PYPAIMON, WRITE_ONLY, seconds=answer["seconds"],
                          cpu_seconds=answer.get("cpu_seconds", float("nan")), timed_runs=1, check=checked(ident)))
    else:
        out.append(result(PYPAIMON, WRITE_ONLY, check=answer.get("check", "failed: no answer")))
    data = [pa.ipc.open_file(pa.memory_map(path)).read_all() for path in commits]
    # pypaimon-rust, in this process
    if pypaimon_rust_available():
        ident = _identifier(f"{name}-rust")
        answer = created(ident, table_options)
        try:
            from pypaimon_rust.datafusion import PaimonCatalog
            table = PaimonCatalog({"warehouse": warehouse}).get_table(ident)

            def rust_commit(batch: pa.Table) -> None:
                builder = table.new_batch_write_builder()
                writer = builder.new_write()
                for part in batch.to_batches():  # it takes record batches
                    writer.write_arrow(part)
                builder.new_commit().commit(writer.prepare_commit())
            wall = cpu = 0.0
            for batch in data:
                t = timing.timed(rust_commit, batch)
                wall, cpu = wall + t.seconds, cpu + t.cpu_seconds
            out.append(result(PYPAIMON_RUST, WRITE_ONLY, seconds=wall, cpu_seconds=cpu, timed_runs=1,
                              check=checked(ident)))
        except Exception as error:  # a peer that fails is reported
            out.append(result(PYPAIMON_RUST, WRITE_ONLY, check=f"failed: {type(error).__name__}: {error}"))
    else:
        out.append(result(PYPAIMON_RUST, WRITE_ONLY, check="unavailable: pypaimon-rust is not installed"))
    # mergetree, write-only and with compaction
    for operation, options in ((WRITE_ONLY, {**table_options, "write-only": "true"}),
                               (WRITE_AND_COMPACT, table_options)):
        ident = _identifier(f"{name}-mergetree-{'wo' if operation == WRITE_ONLY else 'wc'}")
        answer = created(ident, options)
        if "check" in answer and answer["check"] != "ok":
            out.append(result(MERGETREE, operation, check=answer["check"]))
            continue
        wall = cpu = 0.0
        for batch in data:
            t = timing.timed(mp.write, warehouse, ident, batch)
            wall, cpu = wall + t.seconds, cpu + t.cpu_seconds
        out.append(result(MERGETREE, operation, seconds=wall, cpu_seconds=cpu, timed_runs=1, check=checked(ident)))
    return out


def _write_parts(report: PaimonReport) -> list:
    if not report.write_tables:
        return []
    rows = [["table", "writer", "operation", "rows", "wall s", "cpu s", "rows/s", "rows/cpu-s",
             "mergetree is (rows/s)", "(rows/cpu-s)", "checked"]]
    for table in report.write_tables:
        ours = report.find(table, MERGETREE, WRITE_ONLY)
        for r in (r for r in report.results if r.case == WRITE_CASE and r.table == table):
            cpu_rate = r.rows_in / r.cpu_seconds if r.ok and r.cpu_seconds > 0 else float("nan")
            ratio = ratio_cpu = ""
            if ours is not None and ours.ok and r.ok and r.reader != MERGETREE:
                ratio = f"{ours.rows_per_second / r.rows_per_second:.2f}x"
                if r.cpu_seconds == r.cpu_seconds and ours.cpu_seconds > 0:
                    ratio_cpu = f"{(ours.rows_in / ours.cpu_seconds) / cpu_rate:.2f}x"
            rows.append([table, r.reader, r.operation, f"{r.rows_in:,}",
                         f"{r.seconds:.2f}" if r.ok else "-", f"{r.cpu_seconds:.2f}" if r.ok else "-",
                         rate_text(r.rows_per_second) if r.ok else "-", rate_text(cpu_rate) if r.ok else "-",
                         ratio, ratio_cpu, r.check])
    return [Text(f"write case: {WRITE_COMMITS_COUNT} commits of half the keys each into an empty table, every "
                 "writer the same rows; 'write' is level-0 files and an APPEND snapshot per commit (what "
                 "pypaimon and pypaimon-rust do: neither compacts), 'write + compact' also compacts the touched "
                 "buckets after each commit as Java's writers do by default; every table read back by mergetree "
                 "and checked in full; pypaimon times itself in its own process"),
            render.text_table(rows, right_aligned={3, 4, 5, 6, 7, 8, 9}), Text()]


def _dv_parts(report: PaimonReport) -> list:
    if not report.dv_tables:
        return []
    small = next((r.rows_in for r in report.results if r.case == DV_CASE and r.operation == WRITE_COMMITS), 0)
    changed = (f"{small:,} rows ({small / max(report.keys, 1):.1%} of the keys) over {DV_COMMITS} commits "
               f"({DV_DELETE_SHARE:.0%} of them deletions)")
    return [Text(f"deletion-vector case: pypaimon writes a base of {report.keys:,} keys into a table with "
                 f"deletion vectors ({MOR}: the same into one without), mergetree compacts it into the top level, "
                 f"pypaimon writes {changed}, mergetree compacts them (universal rules: into a lower level, the "
                 f"replaced rows of the base marked in deletion vectors)"),
            render.text_table(_read_rows(report, report.dv_tables, (MOR, DV)),
                              right_aligned=set(range(3, 16))), Text(),
            render.text_table(_dv_steps(report), right_aligned={4, 5, 6, 7, 8, 9}), Text()]


def format_paimon_results(report: PaimonReport) -> Group:
    """The reads table, the writes and compaction table, the deletion-vector case's tables, then the
    targets (print with `report.show`)."""
    if report.skipped:
        return Group(Text(f"paimon workload not run: {report.skipped}"))
    parts: list = []
    if report.tables:
        parts += [render.text_table(_read_rows(report), right_aligned=set(range(3, 16))),
                  Text(), render.text_table(_compaction_rows(report), right_aligned=set(range(1, 10))), Text()]
    parts += _dv_parts(report)
    parts += _write_parts(report)
    parts.append(Text("targets:"))
    parts.extend(Text(f"  {t.text}") for t in paimon_targets(report))
    parts.extend(Text(f"  {line}") for line in dv_findings(report))
    for name, entry in target_summary(report).items():
        parts.append(Text(f"{name}: met at {entry['met']} of {entry['tables']} tables"
                          + (f" ({entry['tables'] - entry['measured']} not measured)"
                             if entry["measured"] < entry["tables"] else "")))
    largest = max(report.commit_counts, default=0)
    smaller = [c for c in report.commit_counts if c != largest]
    lines = [
        "rows in: rows in the data files a read or compaction goes through, rows written; runs: the most sorted "
        "runs a bucket holds; mergetree is: its rows/s (or rows/cpu-s) over the reader's (reads), the reader's p50 "
        "over its p50 (lookups); cpu/wall above 1: more than one thread worked; rows/cpu-s: rows in per second of "
        "process CPU time, every thread counted (mergetree and pypaimon-rust in this process, in the same run; "
        "pypaimon in its own; the CPU time of the fastest run)",
        f"read s, rewrite s: the best of up to {REPEAT} runs (fewer once the runs took {READ_BUDGET_SECONDS:g} s); "
        f"lookups: {report.lookups} random existing ids, the same for every reader, stopped after "
        f"{LOOKUP_BUDGET_SECONDS:g} s; compaction: one run",
        "checked: mergetree's and pypaimon-rust's reads in full against the input's newest versions; pypaimon's "
        f"row count, distinct ids and {min(SAMPLE_KEYS, report.keys):,} sampled ids' values; every lookup's one row",
    ]
    if report.tables:
        lines.append(f"pypaimon wrote each bucket count's {largest} commits into one table"
                     + (f", copied after {' and '.join(map(str, smaller))} commits" if smaller else "")
                     + f"; the {len(report.bucket_counts)} bucket counts at once, in a process each (write times are "
                     "shown, not compared); rewrite: pq.read_table + pq.write_table of every live file, with its codec")
    if report.dv_tables:
        lines.append(f"deletion-vector case: {DV_CHANGED_LOOKUPS:.0%} of the lookups, and some sampled ids, are ids "
                     "the small commits updated or deleted (a deleted id must give no row); every read is checked "
                     f"against the live keys' newest versions (op +I); reads: the best of up to {DV_REPEAT} runs "
                     f"(fewer once they took {READ_BUDGET_SECONDS:g} s); the two tables are written at once; each "
                     "compaction runs once")
    parts.extend(Text(line) for line in lines)
    notes = [f"{r.table} {r.reader} {r.operation} ({r.phase}): {n}" for r in report.results for n in r.notes]
    if notes:
        parts.append(Text("notes:"))
        parts.extend(Text(f"  {n}") for n in notes)
    return Group(*parts)


def paimon_json(report: PaimonReport) -> dict:
    """Every number of the report, JSON-ready."""
    return {
        "keys": report.keys, "commit_counts": list(report.commit_counts), "bucket_counts": list(report.bucket_counts),
        "lookups": report.lookups, "sample_keys": min(SAMPLE_KEYS, report.keys), "versions": report.versions,
        "results": [r.to_dict() for r in report.results],
        "dv_buckets": list(report.dv_buckets),
        "targets": [{"name": t.name, "table": t.table, "text": t.text, "value": t.value, "met": t.met,
                     "goal": ALL_TARGETS[t.name]} for t in paimon_targets(report)],
        "dv_findings": dv_findings(report),
        "target_summary": target_summary(report),
        "skipped": report.skipped,
        "ok": report.ok,
        "seconds": report.seconds,
    }
