"""``mergetree bench --table`` (and ``--table-dv-only``): the deletion-vector case.

A primary-key table of ``rows`` rows (int64 ``id``; ``t``, an int64 that grows with the id, as a
creation time does; a random int64 ``v``, a float and a short string), written once and fully
compacted, then ``commits`` commits that together update ``update_fraction`` of the keys (random
keys, new ``v`` and string).  The same commits go into two tables: one with
``deletion-vectors.enabled``, one without.  Then:

* merge-on-read of the table without deletion vectors (a full read, and a selective read:
  ``t`` in a range of 0.1% of the rows, which statistics cannot prune in a merge);
* compaction: with deletion vectors (``compact()``: the updates folded, the replaced rows marked)
  against the table without (``compact()``, which leaves two runs to merge, and
  ``compact(full=True)``, which makes its reads merge-free);
* a full scan of the deletion-vector table against ``pyarrow.dataset`` scanning the same
  surviving rows written as plain Parquet files (as many files as the table has data files),
  and (for scale) ``pyarrow.dataset`` on the table's own data files, vectors not applied;
* the selective read of the deletion-vector table (each file read alone, the filter in the scan).

Targets (issue 25): the full scan within 15% of pyarrow.dataset, the selective read at least 3x
the merge-on-read one, compaction with deletion vectors at most 1.5x the time of the compaction
without.  Every read's answer is checked against the table without deletion vectors.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from mergetree import Table

from . import timing
from .report import compare_tables

__all__ = ["DEFAULT_ROWS", "DvReport", "format_dv_results", "run_dv_bench"]

DEFAULT_ROWS = 10_000_000
QUICK_ROWS = 1_000_000
COMMITS = 5
UPDATE_FRACTION = 0.01
BUCKETS = 4
SELECTIVITY = 0.001
SEED = 20251125
SCHEMA = pa.schema([("id", pa.int64()), ("t", pa.int64()), ("v", pa.int64()), ("f", pa.float64()),
                    ("s", pa.string())])


@dataclass
class DvReport:
    rows: int
    commits: int
    update_fraction: float
    seconds: dict[str, float] = field(default_factory=dict)
    checks: dict[str, str] = field(default_factory=dict)
    data_files: int = 0
    deleted_rows: int = 0

    def ratios(self) -> dict[str, float]:
        s = self.seconds
        return {
            "full scan: DV read / pyarrow.dataset": s["dv read"] / s["pyarrow.dataset"],
            "selective read: merge-on-read / DV read": s["merge-on-read selective"] / s["dv read selective"],
            "compaction: DV / without DV (compact())": s["dv compact"] / s["plain compact"],
            "compaction: DV / without DV (compact(full=True))": s["dv compact"] / s["plain compact full"],
        }

    def targets(self) -> list[tuple[str, bool]]:
        r = self.ratios()
        return [
            ("full scan within 15% of pyarrow.dataset", r["full scan: DV read / pyarrow.dataset"] <= 1.15),
            ("selective read >= 3x merge-on-read", r["selective read: merge-on-read / DV read"] >= 3),
            ("compaction with DV <= 1.5x without (compact(full=True))",
             r["compaction: DV / without DV (compact(full=True))"] <= 1.5),
            ("answers equal", all(v == "ok" for v in self.checks.values())),
        ]

    @property
    def ok(self) -> bool:
        return all(ok for _, ok in self.targets())


def _rows(rows: int, rng: np.random.Generator) -> pa.Table:
    ids = np.arange(rows, dtype=np.int64)
    return pa.table({"id": ids, "t": ids * 10 + 1_700_000_000_000, "v": rng.integers(0, 1 << 40, rows),
                     "f": rng.random(rows), "s": pc.binary_join_element_wise("r", pc.cast(pa.array(ids % 100_003),
                                                                                          pa.string()), "")},
                    schema=SCHEMA)


def _updates(rows: int, commits: int, fraction: float, rng: np.random.Generator) -> list[pa.Table]:
    keys = rng.choice(rows, size=max(int(rows * fraction), commits), replace=False).astype(np.int64)
    out = []
    for i, part in enumerate(np.array_split(keys, commits)):
        n = len(part)
        out.append(pa.table({"id": part, "t": part * 10 + 1_700_000_000_000, "v": rng.integers(0, 1 << 40, n),
                             "f": rng.random(n), "s": pa.array([f"u{i}"] * n)}, schema=SCHEMA))
    return out


def run_dv_bench(rows: int = DEFAULT_ROWS, commits: int = COMMITS, update_fraction: float = UPDATE_FRACTION,
                 repeat: int = 3, directory: str | None = None) -> DvReport:
    root = directory or tempfile.mkdtemp(prefix="mergetree-bench-dv-")
    os.makedirs(root, exist_ok=True)
    report = DvReport(rows, commits, update_fraction)
    rng = np.random.default_rng(SEED)
    try:
        options = {"write-only": "true"}
        dv = Table.create(os.path.join(root, "dv"), SCHEMA, primary_key="id", buckets=BUCKETS,
                          options={**options, "deletion-vectors.enabled": "true"})
        plain = Table.create(os.path.join(root, "plain"), SCHEMA, primary_key="id", buckets=BUCKETS, options=options)
        base = _rows(rows, rng)
        for t in (dv, plain):
            t.write(base)
            t.compact(full=True)
        del base
        for update in _updates(rows, commits, update_fraction, rng):
            for t in (dv, plain):
                t.write(update)
        low = rows * 10 // 2 + 1_700_000_000_000
        selective = [("t", ">=", low), ("t", "<", low + int(rows * SELECTIVITY) * 10)]

        def best(name: str, function, *args) -> pa.Table:
            result = timing.best_of(function, *args, repeat=repeat)
            report.seconds[name] = result.seconds
            return result.output

        mor = best("merge-on-read", plain.read)
        mor_selective = best("merge-on-read selective", lambda: plain.read(filter=selective))
        # compaction, once each (it changes the table); the plain table is copied first so that
        # both of its compactions start from the same files
        shutil.copytree(plain.path, os.path.join(root, "plain-full"))
        plain_full = Table.open(os.path.join(root, "plain-full"))
        report.seconds["dv compact"] = timing.timed(dv.compact).seconds
        report.seconds["plain compact"] = timing.timed(plain.compact).seconds
        report.seconds["plain compact full"] = timing.timed(lambda: plain_full.compact(full=True)).seconds
        files = dv.plan().files
        report.data_files = len(files)
        report.deleted_rows = sum(m.deleted_rows for m in files)
        got = best("dv read", dv.read)
        report.checks["full read"] = compare_tables(got, mor.sort_by("id"), "id")
        got_selective = best("dv read selective", lambda: dv.read(filter=selective))
        report.checks["selective read"] = compare_tables(got_selective, mor_selective.sort_by("id"), "id")
        # the same surviving rows as plain Parquet, as many files as the table has
        plain_dir = os.path.join(root, "parquet")
        os.makedirs(plain_dir)
        per_file = -(-got.num_rows // max(len(files), 1))
        for i, start in enumerate(range(0, got.num_rows, per_file)):
            pq.write_table(got.slice(start, per_file), os.path.join(plain_dir, f"part-{i}.parquet"),
                           compression="zstd")
        del got, mor
        scanned = best("pyarrow.dataset", lambda: ds.dataset(plain_dir, format="parquet").to_table())
        # the same reader on the table's own data files (8,192-row row groups, no vectors applied):
        # what the file layout costs apart from the deletion vectors
        own = [os.path.join(dv.path, m.file_name) for m in files]
        best("pyarrow.dataset, the table's files", lambda: ds.dataset(own, format="parquet").to_table(
            columns=SCHEMA.names))
        report.checks["pyarrow.dataset rows"] = "ok" if scanned.num_rows == rows else \
            f"{scanned.num_rows:,} rows, not {rows:,}"
        return report
    finally:
        if directory is None:
            shutil.rmtree(root, ignore_errors=True)


def format_dv_results(report: DvReport) -> str:
    lines = [f"deletion vectors: {report.rows:,} rows, {report.update_fraction:.1%} updated over {report.commits} "
             f"commits, {BUCKETS} buckets; after compaction {report.data_files} data files, "
             f"{report.deleted_rows:,} rows marked deleted"]
    for name, seconds in report.seconds.items():
        lines.append(f"  {name:<36} {seconds:8.3f} s")
    for name, ratio in report.ratios().items():
        lines.append(f"  {name:<52} {ratio:6.2f}x")
    for name, ok in report.targets():
        lines.append(f"  target {'met' if ok else 'MISSED'}: {name}")
    for name, check in report.checks.items():
        if check != "ok":
            lines.append(f"  WRONG {name}: {check}")
    return "\n".join(lines)
