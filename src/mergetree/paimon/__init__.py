"""Apache Paimon tables, read, written and compacted from Python without a JVM, by the engine
every mergetree table has (these are thin aliases of `Table.open` on the table).

- `read(warehouse, "db.table", columns=None, filter=None, snapshot=None, order_by=None, limit=None)` -> `pa.Table`
- `scan(...)` -> `pa.RecordBatchReader` (an Arrow C stream), bucket by bucket
- `compact(warehouse, "db.table", full=False)` -> the committed snapshot id, or None
- `info(warehouse, "db.table")` -> what the table holds (snapshots, buckets, sorted runs)
- `changes(warehouse, "db.table", start, end=None, columns=None, filter=None, source="auto",
  consumer_id=None)` -> `pa.RecordBatchReader` of what changed between two snapshots, with a
  ``_row_kind`` column; a consumer records its progress in Paimon's ``consumer/consumer-<id>``
- `write(warehouse, "db.table", data, row_kind_column=None)` / `delete(warehouse, "db.table", keys)`
  -> `PaimonWrite`: rows written into a fixed-bucket primary-key table as Java's batch writers
  write them (level-0 files, an APPEND snapshot, then a COMPACT one unless write-only)

A warehouse is a local directory or an object-store URI (``s3://lake/warehouse``, ``gs://``,
``az://``, ...); each function takes `storage_options=` with the keys `Table.open` takes
(``aws_access_key_id``, ``aws_endpoint_url``, ...; see docs/STORAGE.md).  Every file is read and
written through `mergetree.storage`; a compaction commits with the store's conditional create.

Metadata is read directly (snapshot and schema JSON, Avro or ORC manifests, deletion-vector
index files), so mergetree does not depend on pypaimon.  Options mergetree cannot honour raise
`UnsupportedPaimonFeatureError` naming the option.
"""
from __future__ import annotations

from .handle import changes, compact, read, scan
from .info import PaimonBucketInfo, PaimonInfo, PaimonSnapshotInfo, info
from .write import PaimonWrite, delete, write

__all__ = ["PaimonBucketInfo", "PaimonInfo", "PaimonSnapshotInfo", "PaimonWrite", "changes", "compact", "delete",
           "info", "read", "scan", "write"]
