"""One storage layer under `table/` and `paimon/`: a table location is a URI (`s3://`,
`gs://`, `az://`/`abfss://`, `hdfs://`, `file://`) or a local path, resolved once into a
`Store` that every read, write, listing, delete and commit goes through.

    store = resolve("s3://lake/events", {"aws_region": "eu-west-1"})
    store.create("snapshot/snapshot-7", data)   # ObjectExistsError if another writer won

Backends: `LocalDiskStore` (plain files), `CloudStore` (S3, GCS, Azure through obstore),
`HadoopStore` (HDFS through pyarrow.fs; no conditional create, so no commits).  See
docs/STORAGE.md."""
from __future__ import annotations

from mergetree.errors import (
    ConditionalCreateUnsupportedError,
    ObjectExistsError,
    ObjectNotFoundError,
    StorageAccessError,
    StorageError,
)

from .cloud import CloudStore, ObjectInputFile, ObjectOutputFile
from .hadoop import ArrowFileSystemStore, HadoopStore
from .local import LocalDiskStore, LocalOutputFile
from .location import Location, parse_location
from .options import OPTION_KEYS, REDACTED
from .resolver import resolve
from .store import ObjectInfo, RequestCounter, Store, coalesce_ranges

__all__ = ["OPTION_KEYS", "REDACTED", "ArrowFileSystemStore", "CloudStore", "ConditionalCreateUnsupportedError",
           "HadoopStore", "LocalDiskStore", "LocalOutputFile", "Location", "ObjectExistsError", "ObjectInfo",
           "ObjectInputFile", "ObjectNotFoundError", "ObjectOutputFile", "RequestCounter", "StorageAccessError",
           "StorageError", "Store", "coalesce_ranges", "parse_location", "resolve"]
