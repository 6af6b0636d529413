"""Paimon tables compacted by the engine (issue 36): the compaction mergetree's own tables have —
the same universal rules, the loser tree, files written with a page index — commits Paimon's
manifests through the codec's store.  Random pypaimon commits (upserts and deletes by
`rowkind.field`, partitions, two buckets; deduplicate and a sum aggregation), compacted by the
rules and in full: mergetree and pypaimon read the model's rows; the new files are Paimon's
(named and listed as Java lists them, statistics under the table's stats modes); a failed
compaction leaves the table and its files as they were, a killed one a readable table."""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from paimon_fixtures import needs_pypaimon, pypaimon_read, write_paimon

import mergetree.paimon as mp
from mergetree.table.paimon.metadata import PaimonTable
from mergetree.table.paimon.tables import engine_compacts

TABLE = "db.t"
SCHEMA = pa.schema([("p", pa.string()), ("k", pa.int64()), ("v", pa.int64()), ("s", pa.string()),
                    ("op", pa.string())])
OPTIONS = {"bucket": "2", "rowkind.field": "op", "num-sorted-run.compaction-trigger": "3"}


def _commits(seed: int, count: int, aggregate: bool) -> tuple[list[pa.Table], dict]:
    """Random commits and the model they leave: (p, k) -> row (deletes only where not aggregating)."""
    rng = random.Random(seed)
    model: dict = {}
    out = []
    for _ in range(count):
        rows = []
        for p, k in rng.sample([(p, k) for p in "ab" for k in range(30)], rng.randint(1, 12)):
            if not aggregate and (p, k) in model and rng.random() < 0.25:
                rows.append({"p": p, "k": k, "v": None, "s": None, "op": "-D"})
                del model[(p, k)]
                continue
            v = rng.randint(-5, 5)
            row = {"p": p, "k": k, "v": v, "s": rng.choice(["x", "y" * 40, None]), "op": "+I"}
            if aggregate and (p, k) in model:
                row = dict(row, v=model[(p, k)]["v"] + v)  # the model holds the sums
            rows.append({"p": p, "k": k, "v": v, "s": row["s"], "op": "+I"})
            model[(p, k)] = row
        out.append(pa.Table.from_pylist(rows, schema=SCHEMA))
    return out, model


def _rows(table: pa.Table) -> list[tuple]:
    return sorted((r["p"], r["k"], r["v"], r["s"]) for r in table.to_pylist())


def _model_rows(model: dict) -> list[tuple]:
    return sorted((r["p"], r["k"], r["v"], r["s"]) for r in model.values())


@needs_pypaimon
@pytest.mark.parametrize("aggregate", [False, True], ids=["deduplicate", "aggregate"])
def test_the_engine_compacts_a_pypaimon_table_as_paimon_reads_it(tmp_path, aggregate) -> None:
    options = dict(OPTIONS, **({"merge-engine": "aggregation", "fields.v.aggregate-function": "sum",
                                "fields.s.aggregate-function": "last_value"} if aggregate else {}))
    commits, model = _commits(36 + aggregate, 8, aggregate)
    wh, work = tmp_path / "wh", tmp_path / "work"
    write_paimon(work, wh, TABLE, commits[:5], ["p", "k"], partition_keys=["p"], options=options)
    t = PaimonTable.open(wh, TABLE)
    assert engine_compacts(t.schema())
    before = {f.file_name for f in t.live_files(t.latest_snapshot())}
    assert mp.compact(wh, TABLE) is not None  # by the universal rules: some runs merge
    write_paimon(work, wh, TABLE, commits[5:], ["p", "k"], partition_keys=["p"], options=options)
    compacted = mp.compact(wh, TABLE, full=True)
    assert compacted == PaimonTable.open(wh, TABLE).latest_snapshot_id()
    assert _rows(mp.read(wh, TABLE)) == _model_rows(model) == _rows(pypaimon_read(wh, TABLE, work))
    t = PaimonTable.open(wh, TABLE)
    files = t.live_files(t.latest_snapshot())
    # one run at the top level (num-levels: the trigger + 1), every file new
    assert files and {f.level for f in files} == {3} and not {f.file_name for f in files} & before
    for f in files:
        entry = f.record["_FILE"]
        assert entry["_FILE_NAME"].startswith("data-") and entry["_FILE_NAME"].endswith("-0.parquet")
        assert entry["_FILE_SOURCE"] == 1 and entry["_SCHEMA_ID"] == 0 and entry["_DELETE_ROW_COUNT"] == 0
        metadata = pq.ParquetFile(f.path).metadata
        assert metadata.num_rows == f.row_count
        assert metadata.row_group(0).column(0).has_column_index  # the engine's writer: lookups by page
        # statistics as the table keeps them: the 40-character string truncated to 16 (Java's default)
        stats = f.value_stats(t.schema())
        lo, hi, _ = stats["s"]
        assert lo is None or (len(lo) <= 16 and (hi is None or len(hi) <= 16))
    assert mp.compact(wh, TABLE, full=True) is None  # one run at the top, no retractions: nothing to do


@needs_pypaimon
def test_a_failed_engine_compaction_leaves_the_table_as_it_was(tmp_path, monkeypatch) -> None:
    import mergetree.table.paimon.store as store_module
    commits, model = _commits(7, 5, False)
    wh, work = tmp_path / "wh", tmp_path / "work"
    write_paimon(work, wh, TABLE, commits, ["p", "k"], partition_keys=["p"], options=OPTIONS)
    root = wh / "db.db" / "t"
    files_before = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    latest = PaimonTable.open(wh, TABLE).latest_snapshot_id()

    def broken(*args, **kwargs):
        raise OSError("the disk filled up while committing")
    monkeypatch.setattr(store_module, "commit_files", broken)
    with pytest.raises(OSError, match="disk filled up"):
        mp.compact(wh, TABLE, full=True)
    assert sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()) == files_before
    assert PaimonTable.open(wh, TABLE).latest_snapshot_id() == latest
    assert _rows(mp.read(wh, TABLE)) == _model_rows(model)


KILLED = """
import os, sys
import mergetree.table.paimon.store as store_module
import mergetree.paimon as mp
def killed(*args, **kwargs):
    os._exit(9)  # the data files are written, the snapshot is not
store_module.commit_files = killed
mp.compact(sys.argv[1], "db.t", full=True)
"""


@needs_pypaimon
def test_a_killed_engine_compaction_leaves_a_readable_table(tmp_path) -> None:
    commits, model = _commits(8, 5, False)
    wh, work = tmp_path / "wh", tmp_path / "work"
    write_paimon(work, wh, TABLE, commits, ["p", "k"], partition_keys=["p"], options=OPTIONS)
    latest = PaimonTable.open(wh, TABLE).latest_snapshot_id()
    done = subprocess.run([sys.executable, "-c", KILLED, str(wh)], env=dict(os.environ), capture_output=True,
                          timeout=300)
    assert done.returncode == 9, done.stderr.decode()[-2000:]
    assert PaimonTable.open(wh, TABLE).latest_snapshot_id() == latest
    assert _rows(mp.read(wh, TABLE)) == _model_rows(model) == _rows(pypaimon_read(wh, TABLE, work))
    assert mp.compact(wh, TABLE, full=True) == latest + 1  # the next compaction commits over the orphans
    assert _rows(mp.read(wh, TABLE)) == _model_rows(model) == _rows(pypaimon_read(wh, TABLE, work))


@pytest.mark.parametrize(("options", "by_engine"), [
    ({}, True),
    ({"merge-engine": "aggregation"}, True),
    ({"deletion-vectors.enabled": "true"}, True),
    ({"merge-engine": "first-row"}, True),
    ({"merge-engine": "partial-update"}, True),
    ({"sequence.field": "v"}, True),
    ({"file-index.bloom-filter.columns": "v"}, True),
    ({"file.format": "orc"}, True),
    ({"data-file.thin-mode": "true"}, True),
    ({"data-file.path-directory": "data"}, True),
    ({"changelog-producer": "input"}, True),
    ({"changelog-producer": "lookup"}, True),  # its compaction writes the changelog, as Java's
    ({"changelog-producer": "full-compaction"}, False),
])
def test_which_tables_the_engine_compacts(tmp_path, options, by_engine) -> None:
    from mergetree.table.paimon.create import create_table
    options = dict(options)
    engine = options.pop("merge-engine", "deduplicate")
    engine = {"aggregation": "aggregate"}.get(engine, engine)
    create_table(tmp_path / "wh", TABLE, SCHEMA, ["p", "k"], ["p"], 2, engine,
                 {k: v for k, v in dict(OPTIONS, **options).items() if k != "bucket"})
    assert engine_compacts(PaimonTable.open(tmp_path / "wh", TABLE).schema()) is by_engine
    assert json.loads((tmp_path / "wh" / "db.db" / "t" / "schema" / "schema-0").read_text())["options"]["bucket"] == "2"


@needs_pypaimon
def test_the_engine_refuses_what_java_would_do_more_for_before_writing(tmp_path) -> None:
    """A compaction whose changelog Java's full compaction would produce (``changelog-producer``
    full-compaction), and an append table's compaction, are refused by name before anything is written;
    the table stays as it was, readable by pypaimon."""
    from mergetree import UnsupportedPaimonFeatureError
    from mergetree.paimon.handle import PaimonTableHandle
    commits, model = _commits(9, 3, False)
    wh, work = tmp_path / "wh", tmp_path / "work"
    write_paimon(work, wh, TABLE, commits, ["p", "k"], partition_keys=["p"],
                 options=dict(OPTIONS, **{"changelog-producer": "full-compaction"}))
    root = wh / "db.db" / "t"
    files = sorted(str(p) for p in root.rglob("*"))
    engine = PaimonTableHandle(wh, None, TABLE).at()
    with pytest.raises(UnsupportedPaimonFeatureError, match="cannot compact Paimon table db.t: option "
                                                             "'changelog-producer' = 'full-compaction'"):
        engine.compact(full=True)
    with pytest.raises(UnsupportedPaimonFeatureError, match="'changelog-producer' = 'full-compaction'"):
        mp.compact(wh, TABLE, full=True)
    with pytest.raises(UnsupportedPaimonFeatureError, match="'changelog-producer' = 'full-compaction'"):
        engine.write(commits[0])
    assert sorted(str(p) for p in root.rglob("*")) == files
    assert _rows(mp.read(wh, TABLE)) == _model_rows(model) == _rows(pypaimon_read(wh, TABLE, work))
    appended = [pa.table({"k": [1, 2], "v": ["a", "b"]}), pa.table({"k": [3], "v": ["c"]})]
    write_paimon(work, wh, "db.a", appended, [], options={"bucket": "-1"})
    root = wh / "db.db" / "a"
    files = sorted(str(p) for p in root.rglob("*"))
    with pytest.raises(UnsupportedPaimonFeatureError, match="cannot compact Paimon table db.a: it is an append table"):
        mp.compact(wh, "db.a", full=True)
    assert sorted(str(p) for p in root.rglob("*")) == files


@needs_pypaimon
def test_updates_move_up_once_and_new_files_go_where_paimon_readers_look(tmp_path) -> None:
    """Files of +U rows hold no retractions: compacted once, they stay (a footer's kinds 0..2
    are no -U or -D).  A date partition's directory is named as the writer named it (pypaimon:
    days since the epoch), and the compacted files go beside the bucket's files, where every
    reader looks."""
    import datetime as dt
    schema = pa.schema([("d", pa.date32()), ("k", pa.int64()), ("v", pa.int64()), ("op", pa.string())])
    commits = [pa.table({"d": [dt.date(2024, 1, 1 + k % 2) for k in range(10)], "k": list(range(10)),
                         "v": [c] * 10, "op": ["+U" if c else "+I"] * 10}, schema=schema) for c in range(3)]
    wh, work = tmp_path / "wh", tmp_path / "work"
    write_paimon(work, wh, TABLE, commits, ["d", "k"], partition_keys=["d"], options=OPTIONS)
    first = mp.compact(wh, TABLE, full=True)
    assert first is not None and mp.compact(wh, TABLE, full=True) is None
    t = PaimonTable.open(wh, TABLE)
    assert {Path(f.path).parent.parent.name for f in t.live_files(t.latest_snapshot())} == {"d=19723", "d=19724"}
    expected = sorted((r["d"], r["k"], 2) for r in commits[0].to_pylist())
    assert sorted((r["d"], r["k"], r["v"]) for r in pypaimon_read(wh, TABLE, work).to_pylist()) == expected
    assert sorted((r["d"], r["k"], r["v"]) for r in mp.read(wh, TABLE).to_pylist()) == expected
