"""What a table directory holds on disk, for tests that compare it before and after."""
from __future__ import annotations

import os

from mergetree.table.workload.history import HISTORY_DIR
from mergetree.table.workload.querylog import QUERY_LOG_DIR


def table_files(root) -> set[str]:
    """The table's own files (relative paths).  Its query log under queries/ and its optimizer
    history under optimizer/ (written by optimize) are tables of their own, so they are left out."""
    root = os.fspath(root)
    out = set()
    for folder, subfolders, names in os.walk(root):
        if folder == root:
            subfolders[:] = [s for s in subfolders if s not in (QUERY_LOG_DIR, HISTORY_DIR)]
        out.update(os.path.relpath(os.path.join(folder, n), root) for n in names)
    return out
