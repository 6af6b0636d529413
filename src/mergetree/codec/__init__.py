"""Apache Paimon's table format, encoded and decoded: the one codec under mergetree's tables.

Pure format logic, no policy (which options a table may have, what a write does) and no I/O
of its own beyond the `mergetree.storage` store a caller hands in:

- `types`: Paimon's type strings and the Arrow types they read as; schema evolution's casts
- `binary_row`: BinaryRow, the encoding of partitions, keys and statistics, both ways
- `buckets`: the bucket key and bucket functions (``default``: Murmur3 over the BinaryRow,
  hashed in the compiled core; ``mod``)
- `manifest_files`: manifests, manifest lists and index manifests in Avro or ORC
- `deletion_vectors`: deletion-vector index files (32- and 64-bit Roaring bitmaps)
- `stats`: column statistics under Paimon's stats modes (none, counts, full, truncate(n))
- `layout`: what makes a directory a Paimon table
- `json_files`: schema, snapshot and tag JSON as Java writes it (Jackson's layout, Java's field order)
"""
from __future__ import annotations

__all__: list[str] = []
