"""Apache Iceberg tables in the organize loop (seed 003 where its users are): ``iceberg://CATALOG/
NAMESPACE.TABLE`` names a table of a pyiceberg catalog (`catalog`); `open` gives an `IcebergTable`
whose reads are planned by pyiceberg, filtered exactly and logged beside the catalog, and which the
advisor reads as it reads a Paimon table (`advise`).  Needs pyiceberg (the ``iceberg`` extra)."""
from __future__ import annotations

from .catalog import SCHEME, IcebergLocation, is_iceberg_location, load_catalog, parse_location
from .table import IcebergFile, IcebergInfo, IcebergTable, open

__all__ = ["SCHEME", "IcebergFile", "IcebergInfo", "IcebergLocation", "IcebergTable", "is_iceberg_location",
           "load_catalog", "open", "parse_location"]
