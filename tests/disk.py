"""What a table directory holds on disk, for tests that compare it before and after."""
from __future__ import annotations

import os

from mergetree.table.querylog import QUERY_LOG_DIR


def table_files(root) -> set[str]:
    """The table's own files (relative paths).  Its query log under queries/ is a table of its
    own, written in the background by reads, so it is left out."""
    root = os.fspath(root)
    out = set()
    for folder, subfolders, names in os.walk(root):
        if folder == root and QUERY_LOG_DIR in subfolders:
            subfolders.remove(QUERY_LOG_DIR)
        out.update(os.path.relpath(os.path.join(folder, n), root) for n in names)
    return out
