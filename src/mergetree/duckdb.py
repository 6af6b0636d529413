"""DuckDB views of mergetree and Paimon tables with projection and filter pushdown
(`register`, `register_paimon`); see `mergetree.engines.duckdb`."""
from __future__ import annotations

from .engines.duckdb import register, register_paimon

__all__ = ["register", "register_paimon"]
