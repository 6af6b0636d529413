"""Apache Paimon tables inside the engine: their metadata (schemas, snapshots, manifests,
deletion files, tags) read and located through the table's store, their options classified,
their file indexes consulted.  The format itself (bytes in, values out) is `codec/`."""
from __future__ import annotations

__all__: list[str] = []
