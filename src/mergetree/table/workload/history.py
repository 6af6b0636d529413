"""The history of layout changes: one row per pass of the background optimizer (tier minor or
major) and per `Table.optimize` (tier "optimize"): files in and out, bytes, the snapshot it
committed, the layout it applied.  Kept as an append table at `<table>/optimizer/` (or in the
workload warehouse: `places`) so the report can show scanned bytes before and after every
change of the data's layout."""
from __future__ import annotations

import datetime as dt
import logging
from dataclasses import asdict, dataclass

import pyarrow as pa

from ...errors import MergeTreeError
from ...merge import RowKind
from ..directory import TableDirectory
from ..levers.optimize import layout_signature
from ..paimon.create import open_or_create
from ..snapshots import FileEntry, Snapshot
from ..write import write_rows
from .logtables import read_rows
from .places import side_table

__all__ = ["HISTORY_DIR", "HISTORY_SCHEMA", "PassReport", "history", "record_pass", "record_rewrite"]

_log = logging.getLogger("mergetree.history")

HISTORY_DIR = "optimizer"
HISTORY_SCHEMA = pa.schema([
    ("ts", pa.timestamp("us", "UTC")), ("tier", pa.string()), ("status", pa.string()),
    ("groups", pa.int64()), ("files_in", pa.int64()), ("files_out", pa.int64()), ("rows", pa.int64()),
    ("bytes_in", pa.int64()), ("bytes_out", pa.int64()), ("snapshot_id", pa.int64()),
    ("layout", pa.string()), ("seconds", pa.float64()),
])


@dataclass
class PassReport:
    table: str
    tier: str                 # minor | major (the optimizer's passes) | optimize (Table.optimize)
    status: str               # committed | conflict | nothing
    groups: int = 0           # (partition, bucket) pairs rewritten
    files_in: int = 0
    files_out: int = 0
    rows: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    snapshot_id: int | None = None
    layout: str = ""
    seconds: float = 0.0
    group_name: str = "bucket"  # what a group is: a Paimon table's bucket, an Iceberg table's partition

    def __repr__(self) -> str:
        return f"PassReport({self.table!r}, {self.line()})"

    def line(self) -> str:
        if self.status != "committed":
            return f"{self.tier}: {self.status}"
        return (f"{self.tier}: {self.files_in} files ({self.bytes_in / 2**20:,.1f} MiB) of {self.groups} "
                f"{self.group_name}(s) -> {self.files_out} files in snapshot {self.snapshot_id} ({self.seconds:.1f}s)")


def _history_table(table_path: str) -> TableDirectory:
    return open_or_create(side_table(table_path, HISTORY_DIR), HISTORY_SCHEMA,
                          {"mergetree.query-log.enabled": "false"})


def record_pass(report: PassReport) -> None:
    """Append a pass to the table's history (after its commit: a crash in between loses the
    line, never the pass)."""
    directory = _history_table(report.table)
    row = {k: v for k, v in asdict(report).items() if k not in ("table", "group_name")}
    row["ts"] = dt.datetime.now(dt.timezone.utc)
    data = pa.Table.from_pylist([row], schema=HISTORY_SCHEMA)
    write_rows(directory, data, RowKind.INSERT)


def record_rewrite(directory: TableDirectory, snapshot: Snapshot, tier: str = "optimize",
                   seconds: float = 0.0) -> PassReport:
    """Record a rewrite committed outside the optimizer's rounds (`Table.optimize`), read from
    the commit's own delta manifests: the files it replaced, the files it wrote, the layout they
    were marked with.  The commit is done: a history that cannot be written is logged as a
    warning, never raised (the line is lost, not the rewrite)."""
    store = directory.store
    added: list[FileEntry] = []
    removed: list[FileEntry] = []
    for name in store.manifest_names(snapshot.delta_manifest_list):
        for kind, entry in store.read_manifest(name):
            (added if kind == "ADD" else removed).append(entry)
    marks = [e.file.indexes.get("optimized") for e in added]
    layouts = sorted({str(m.get("layout", "")) for m in marks if isinstance(m, dict) and m.get("tier") == "major"})
    if not layouts:  # a Paimon file laid out: above level 0, for the layout of the schema it was written under
        written = [e.file.origin.written_options() for e in added if e.file.origin is not None and e.file.level > 0]
        layouts = sorted({layout_signature(w) for w in written if w is not None})
    report = PassReport(directory.path, tier, "committed", groups=len({(e.partition, e.bucket) for e in removed}),
                        files_in=len(removed), files_out=len(added), rows=sum(e.file.row_count for e in removed),
                        bytes_in=sum(e.file.file_size for e in removed),
                        bytes_out=sum(e.file.file_size for e in added), snapshot_id=snapshot.id,
                        layout=";".join(layouts) if layouts else "", seconds=seconds)
    try:
        record_pass(report)
    except (MergeTreeError, OSError) as exc:
        _log.warning("snapshot %s of %s is committed but its line in the optimizer history was not written: %s",
                     snapshot.id, directory.path, exc)
    return report


def history(table_path: str) -> pa.Table:
    """Every pass recorded for the table, oldest first (empty when none ran)."""
    # the history can be lost without losing the table: a damaged part is left out with a warning
    rows = read_rows(side_table(table_path, HISTORY_DIR), HISTORY_SCHEMA, "optimizer history")
    return rows.sort_by("ts")
