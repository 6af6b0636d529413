"""The read path, shared by `Table.read`/`Table.scan`/`Table.plan` and the Spark data source:
`plan` decides which files (and row groups) a filtered read touches and reports what each
pruning step removed; `merged` merges each bucket's sections on read; `execute` runs a planned
read (all buckets in threads, Top-N, first rows, a stream); `keyorder` merges the buckets into
primary-key order (`read(sorted=True)`); `topn` holds the Top-N rules over
file statistics; `split` cuts a bucket into key ranges for parallel tasks and reads several
buckets as one; `model` is what they pass between them."""
from __future__ import annotations

from .execute import read_table, scan_table
from .merged import ordered_by_file, read_bucket, select_bucket
from .model import BucketPlan, OrderBy, PreparedRead, PruneStep, ReadPlan, ReadStats, format_requests, requests_since
from .plan import columns_for, file_filter, final_filter, order_by_for, plan_read, prepare_read, snapshot_for
from .split import combine_buckets, split_bucket, split_by_file
from .topn import top_rows

__all__ = ["BucketPlan", "OrderBy", "PreparedRead", "PruneStep", "ReadPlan", "ReadStats", "columns_for",
           "combine_buckets", "file_filter", "final_filter", "format_requests", "order_by_for", "ordered_by_file",
           "plan_read", "prepare_read", "read_bucket", "read_table", "requests_since", "scan_table", "select_bucket",
           "snapshot_for", "split_bucket", "split_by_file", "top_rows"]
