"""The target file size that makes a rewrite write a given number of files, as the table's
writer rolls them: a Paimon table's by their size on disk (as Java's writers roll), mergetree's
own by the rows' size in memory (what the tests create such tables with)."""
from __future__ import annotations

from mergetree import Table


def rewrites_into(table: Table, files: int) -> Table:
    """`table` (reopened) with its ``target-file-size`` set so that a rewrite of its current
    files writes about `files` files."""
    if table.table_schema.paimon is None:
        return table
    on_disk = sum(m.file_size for m in table.plan().files)
    table.set_options({"target-file-size": str(int(on_disk / files * 1.05))})
    return Table.open(table.path)
