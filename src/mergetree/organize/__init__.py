"""Data organization driven by the query history (seed 003): importing a SQL history into a
table's query log (`sqlimport`), replaying logged queries on the table or a simulated layout
(`replay`), the background optimizer's passes and daemon (`scheduler`), and the report page
(`report`).  The query log, the advisor and the levers themselves live in `mergetree.table`;
this layer sits above it."""
from __future__ import annotations

from .replay import ReplayResult, replay
from .report import Report, build_report, render_html, write_pngs
from .scheduler import PassReport, history, pending, run_daemon, run_once
from .sqlimport import ImportResult, extract_queries, import_sql

__all__ = ["ImportResult", "PassReport", "ReplayResult", "Report", "build_report", "extract_queries", "history",
           "import_sql", "pending", "render_html", "replay", "run_daemon", "run_once", "write_pngs"]
