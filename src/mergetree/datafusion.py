"""DataFusion SQL over mergetree and Paimon tables with projection and filter pushdown
(`register`, `register_paimon`, `sql`); see `mergetree.engines.datafusion`."""
from __future__ import annotations

from .engines.datafusion import register, register_paimon, registered, sql

__all__ = ["register", "register_paimon", "registered", "sql"]
