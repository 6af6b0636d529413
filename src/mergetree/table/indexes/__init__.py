"""Skipping data files and row groups, and the file indexes it uses: `skipping` (which files
and row groups a filter can rule out, from min/max statistics, Bloom filters and bitmaps),
`bloom` (the Parquet split-block Bloom filters that pyarrow writes into data files, probed for
``=`` and ``IN``) and `bitmap` (Roaring bitmaps per value in a sidecar file, for ``=``, ``IN``,
ranges and ``IS NULL`` on columns with few values).  Which types take which index is the type
policy's (`mergetree.table.type_policy`)."""

__all__: list[str] = []
