"""Engines that query mergetree and Paimon tables with their projections, filters and limits
pushed into the scan: Polars (`polars.scan_table`), DuckDB (`duckdb.register`) and DataFusion
(`datafusion.register` + `datafusion.sql`); `predicates` translates their filter expressions.
The engines themselves are imported only when one of these modules is (`import mergetree`
loads none of them); the public paths are `mergetree.polars`, `mergetree.duckdb` and
`mergetree.datafusion`.  How each route was chosen: docs/ENGINES.md."""
from __future__ import annotations

__all__: list[str] = []
