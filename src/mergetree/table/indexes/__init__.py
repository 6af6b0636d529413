"""File indexes that let a read skip data files and row groups: `bloom` (the Parquet
split-block Bloom filters that pyarrow writes into data files, probed for ``=`` and ``IN``)."""

__all__: list[str] = []
