"""Primary-key and append tables on Parquet: schema and options, data files, snapshots and
manifests, the write and read paths, buckets, filters, compaction and housekeeping.  Built
on `mergetree.merge`; `Table` is the public face."""
from __future__ import annotations

from .changes import ChangePlan, ChangeUnit
from .consumers import Consumer
from .files import DataFileMeta
from .options import OPTIONS, TableOptions
from .read import BucketPlan, ReadPlan
from .schema import TableSchema
from .snapshots import FileEntry, Snapshot
from .table import Table
from .workload.places import set_workload_warehouse

__all__ = ["OPTIONS", "BucketPlan", "ChangePlan", "ChangeUnit", "Consumer", "DataFileMeta", "FileEntry", "ReadPlan",
           "Snapshot", "Table", "TableOptions", "TableSchema", "set_workload_warehouse"]
