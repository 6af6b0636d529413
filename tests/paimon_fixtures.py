"""Real Paimon tables for the tests, written by pypaimon in its own interpreter (`make
paimon-env` builds it in .venv-paimon; MERGETREE_PAIMON_PYTHON points elsewhere)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pytest

ROOT = Path(__file__).resolve().parent.parent
TOOL = Path(__file__).resolve().parent / "paimon_tool.py"
PAIMON_PYTHON = os.environ.get("MERGETREE_PAIMON_PYTHON") or str(ROOT / ".venv-paimon" / "bin" / "python")

needs_pypaimon = pytest.mark.skipif(not os.path.exists(PAIMON_PYTHON),
                                    reason=f"no pypaimon interpreter at {PAIMON_PYTHON} (make paimon-env)")


def _ipc(path: Path, table: pa.Table) -> str:
    with pa.OSFile(str(path), "wb") as f, pa.ipc.new_file(f, table.schema) as w:
        w.write_table(table)
    return str(path)


def _run(*args: str) -> dict:
    done = subprocess.run([PAIMON_PYTHON, str(TOOL), *args], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"pypaimon failed ({' '.join(args[:1])}):\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def write_paimon(workdir: Path, warehouse: Path, table: str, commits: Sequence[pa.Table], primary_keys: list[str],
                 partition_keys: Sequence[str] = (), options: dict | None = None,
                 tags: dict[str, int] | None = None, alter: list | None = None,
                 stages: Sequence[tuple[list, Sequence[pa.Table]]] = (),
                 overwrite: dict[int, dict] | None = None) -> dict:
    """Create `table` if it is new and commit each table of `commits` with pypaimon; then for
    each (alter, commits) of `stages` (in the same pypaimon process), the ALTER, then its commits.
    `overwrite`: commit index -> the partition (column -> value; {}: the table) it overwrites."""
    workdir.mkdir(parents=True, exist_ok=True)
    n = len(list(workdir.glob("spec-*.json")))
    files = [_ipc(workdir / f"commit-{n}-{i}.arrow", c) for i, c in enumerate(commits)]
    staged = [{"alter": changes, "commits": [_ipc(workdir / f"commit-{n}-s{s}-{i}.arrow", c)
                                             for i, c in enumerate(tables)]}
              for s, (changes, tables) in enumerate(stages)]
    spec = {"warehouse": str(warehouse), "table": table, "primary_keys": list(primary_keys),
            "partition_keys": list(partition_keys), "options": {k: str(v) for k, v in (options or {}).items()},
            "schema": files[0], "commits": files, "tags": tags or {}, "alter": alter or [], "stages": staged,
            "overwrite": {str(i): p for i, p in (overwrite or {}).items()}}
    path = workdir / f"spec-{n}.json"
    path.write_text(json.dumps(spec))
    return _run("write", str(path))


def pypaimon_read(warehouse: Path, table: str, workdir: Path, snapshot: int | None = None) -> pa.Table:
    out = workdir / f"read-{len(list(workdir.glob('read-*.arrow')))}.arrow"
    _run("read", str(warehouse), table, str(out), *([] if snapshot is None else [str(snapshot)]))
    with pa.OSFile(str(out), "rb") as f:
        return pa.ipc.open_file(f).read_all()


def expire_keeping_changelog(warehouse: Path, table: str, ids: Sequence[int]) -> dict:
    """Expire snapshots `ids` with pypaimon's ChangelogManager keeping their changelog (see paimon_tool)."""
    return _run("expire", str(warehouse), table, *(str(i) for i in ids))


def rows(table: pa.Table, key: Sequence[str]) -> list[dict]:
    """A table's rows sorted by `key`, types made comparable (nullability and string widths aside)."""
    fields = [pa.field(f.name, pa.string() if pa.types.is_large_string(f.type) else f.type) for f in table.schema]
    table = table.cast(pa.schema(fields)).sort_by([(k, "ascending") for k in key])
    return table.to_pylist()


if __name__ == "__main__":
    print(PAIMON_PYTHON, os.path.exists(PAIMON_PYTHON), file=sys.stderr)
