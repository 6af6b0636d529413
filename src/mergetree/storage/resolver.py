"""`resolve`: a location (URI or local path) to the `Store` rooted there."""
from __future__ import annotations

import os
from collections.abc import Mapping

from .cloud import CloudStore
from .hadoop import HadoopStore
from .local import LocalDiskStore
from .location import parse_location
from .options import HDFS, LOCAL
from .store import Store

__all__ = ["resolve"]


def resolve(uri: str | os.PathLike[str], storage_options: Mapping[str, object] | None = None) -> Store:
    """The `Store` for a location.  Unknown schemes, unknown option keys and a backend whose
    library is missing raise `InvalidArgumentError` naming the URI; nothing is contacted, so a
    missing bucket or bad credentials surface on the first request, as a `StorageError`."""
    location = parse_location(uri, storage_options)
    if location.backend == LOCAL:
        return LocalDiskStore(location)
    if location.backend == HDFS:
        return HadoopStore.connect(location)
    return CloudStore.connect(location)
