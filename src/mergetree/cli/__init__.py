"""The `mergetree` command line (`python -m mergetree`, or the `mergetree` script)."""
from __future__ import annotations

from .app import main, run

__all__ = ["main", "run"]
