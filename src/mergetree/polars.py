"""Polars scans of mergetree and Paimon tables with projection, predicate and limit pushdown
(`scan_table`, `scan_paimon` -> `pl.LazyFrame`); see `mergetree.engines.polars`."""
from __future__ import annotations

from .engines.polars import scan_paimon, scan_table

__all__ = ["scan_paimon", "scan_table"]
