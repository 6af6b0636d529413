"""Skipping data files and row groups, and the indexes it uses: `skipping` (which files and row
groups a filter can rule out, from min/max statistics, a file's Paimon file index and Parquet's
Bloom filters), `bloom` (the Parquet split-block Bloom filters that pyarrow writes into data
files, probed for ``=`` and ``IN``) and `parquet_footer` (the footer and page index, read by
hand).  Which types take which index is the type policy's (`mergetree.table.type_policy`)."""

__all__: list[str] = []
