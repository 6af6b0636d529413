"""The layout advisor: what the query log says, replayed on layouts simulated from a sample of
the table's rows, turned into recommended options by written rules (`rules`, called lever by
lever from `advisor`)."""
from __future__ import annotations

from .advisor import Advice, LeverAdvice, advise, advise_workload
from .simulate import IndexSpec, Sample, SimulatedLayout, draw_sample, simulate
from .summary import LoggedQuery, Workload, read_log, summarize

__all__ = ["Advice", "IndexSpec", "LeverAdvice", "LoggedQuery", "Sample", "SimulatedLayout", "Workload", "advise",
           "advise_workload", "draw_sample", "read_log", "simulate", "summarize"]
