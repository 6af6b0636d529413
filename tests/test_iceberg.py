"""Iceberg tables in the organize loop (issue 39, step 1): `iceberg://CATALOG/NAMESPACE.TABLE` names a
table of a pyiceberg catalog (SQLite, configured through pyiceberg's environment variables or
embedded); reads are pruned by pyiceberg's planning and filtered exactly (against pyiceberg's own
scan filtered by a plain model of SQL's rules); reads are logged beside the catalog, never in the
table's folders; the SQL history import finds the table by its catalog name; the advisor advises
on it and `apply` writes properties Iceberg's writers read."""
from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyiceberg", reason="the Iceberg tests need pyiceberg (the iceberg extra)")

from sql_truth import truth

from mergetree.errors import InvalidArgumentError, SnapshotNotFoundError, TableNotFoundError
from mergetree.iceberg import load_catalog, parse_location
from mergetree.iceberg import open as open_iceberg
from mergetree.organize import import_sql
from mergetree.table import filters as flt
from mergetree.table.workload import querylog

ROWS = 24_000
FILES = 12


@pytest.fixture
def lake(tmp_path, monkeypatch):
    """A SQLite catalog `lake` configured as pyiceberg's users configure one (its variables)."""
    querylog.flush()  # an earlier test's reads of a table of the same name go to that test's log
    monkeypatch.setenv("PYICEBERG_CATALOG__LAKE__TYPE", "sql")
    monkeypatch.setenv("PYICEBERG_CATALOG__LAKE__URI", f"sqlite:///{tmp_path}/catalog.db")
    monkeypatch.setenv("PYICEBERG_CATALOG__LAKE__WAREHOUSE", f"file://{tmp_path}/warehouse")
    monkeypatch.delenv("MERGETREE_WORKLOAD_WAREHOUSE", raising=False)
    catalog = load_catalog("lake")
    catalog.create_namespace("db")
    return catalog


def _events(seed: int = 0, n: int = ROWS, first: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    site = rng.integers(0, 40, n).astype(str).astype(object)
    site[rng.random(n) < 0.05] = None
    return pa.table({"id": pa.array(np.arange(first, first + n), pa.int64()),
                     "site": pa.array(site, pa.string()),
                     "day": pa.array((np.datetime64("2024-01-01") + rng.integers(0, 90, n)).astype("datetime64[D]")),
                     "amount": pa.array(np.round(rng.random(n) * 100, 2))})


@pytest.fixture
def events(lake):
    """db.events: 12 appends of random rows, partitioned by month of `day`, small target files."""
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.transforms import MonthTransform
    data = _events()
    table = lake.create_table("db.events", data.schema, properties={"write.target-file-size-bytes": "60000"})
    with table.update_spec() as spec:
        spec.add_field("day", MonthTransform(), "day_month")
    del PartitionField, PartitionSpec
    for i in range(FILES):
        table.append(data.slice(i * ROWS // FILES, ROWS // FILES))
    return open_iceberg("iceberg://lake/db.events")


def _reference(table, f) -> list[dict]:
    """pyiceberg's own full scan, filtered by a plain model of SQL's rules (`sql_truth`)."""
    rows = table.iceberg.scan().to_arrow().to_pylist()
    typed = flt.normalize(f, table.schema)  # text values as the columns' types, as a read reads them
    return sorted((r for r in rows if truth(typed, r) is True), key=lambda r: r["id"])


FILTERS = [("site", "=", "7"), ("site", "!=", "7"), ("site", "is null"), ("site", "in", ["1", "2", "39"]),
           ("day", ">=", "2024-03-01"), ("and", [("day", ">=", "2024-02-01"), ("day", "<", "2024-02-08")]),
           ("amount", "<", 3.5), ("id", "=", 12_345)]


def test_reads_are_the_rows_pyiceberg_reads_and_prune_files(events):
    for f in FILTERS:
        got = sorted(events.read(filter=f).to_pylist(), key=lambda r: r["id"])
        assert got == _reference(events, f), f
        streamed = pa.table(events.scan(filter=f, columns=["id"]))
        assert sorted(streamed.column("id").to_pylist()) == [r["id"] for r in _reference(events, f)], f
    events.read(filter=("day", ">=", "2024-03-01"))
    month = events.last_read
    assert month.files_total == len(events.data_files()) and 0 < month.files_read < month.files_total
    events.read(filter=("id", "=", 12_345))
    # the ids' bounds leave the append that wrote it: its three files, one per month
    assert events.last_read.files_read == 3 < events.last_read.files_total == 3 * FILES
    assert events.read(limit=5).num_rows == 5 and events.read(columns="id", limit=0).num_rows == 0


def test_time_travel_schema_evolution_and_deletes(events):
    from pyiceberg.types import StringType
    first = events.snapshot_id()
    total = events.read().num_rows
    sevens = len(_reference(events, ("site", "=", "7")))
    events.iceberg.delete("site = '7'")  # pyiceberg deletes by copy on write
    with events.iceberg.update_schema() as update:
        update.add_column("note", StringType())
    events.refresh()
    assert "note" in events.schema.names
    now = events.read()
    assert now.num_rows == total - sevens > 0
    assert now.filter(pc.equal(now.column("site"), "7")).num_rows == 0 and now.column("note").null_count == now.num_rows
    assert events.read(snapshot=first).num_rows == total  # the snapshot before the delete
    with pytest.raises(SnapshotNotFoundError):
        events.read(snapshot=1)
    with pytest.raises(InvalidArgumentError, match="no column"):
        events.read(columns=["nope"])


def test_reads_are_logged_beside_the_catalog_not_in_the_table(events, tmp_path):
    location = Path(events.iceberg.location().removeprefix("file://"))
    before = {p for p in location.rglob("*")}
    for k in range(3):
        events.read(filter=("site", "=", str(k)))
    querylog.flush(events.path)
    log = querylog.read_rows(events.path)
    assert log.num_rows == 3 and set(log.column("kind").to_pylist()) == {"read"}
    assert {p for p in location.rglob("*")} == before  # nothing of mergetree's in the table's folders
    assert (tmp_path / "warehouse" / "mergetree_workload.db").is_dir()


def test_the_sql_history_names_the_table_as_its_catalog_does(events, tmp_path):
    history = tmp_path / "history.sql"
    history.write_text("""
        SELECT site, count(*)
        FROM lake.db.events
        WHERE day >= DATE '2024-02-01'
          AND day < DATE '2024-02-15'
        GROUP BY site;
        select * from db.events where site = '3';
        SELECT id FROM events WHERE id = 42;
        SELECT * FROM other_table WHERE x = 1;
    """)
    result = import_sql("iceberg://lake/db.events", history, dialect="trino")
    assert (result.imported, result.other_tables) == (3, 1), result.summary()
    log = querylog.read_rows(events.path)
    assert log.num_rows == 3 and set(log.column("source").to_pylist()) == {"import"}


def test_advice_on_an_iceberg_table_and_apply_writes_its_properties(events):
    for k in range(30):  # lookups of a site: a Bloom filter or a layout by site pays
        events.read(filter=("site", "=", str(k % 40)))
        events.read(filter=("id", "=", 997 * k))
    advice = events.advise()
    assert advice.queries == 60 and advice.replayed > 0
    assert advice.table == "iceberg://lake/db.events"
    changed = {lever.lever for lever in advice.levers if lever.changed}
    assert changed, advice.explain()
    applied = events.advise(apply=True)
    props = events.properties
    for key, value in applied.options.items():
        assert props.get(key) == value or (value is None and key not in props), key
    assert all(k.startswith(("mergetree.", "write.parquet.bloom-filter")) for k in applied.options)
    # what an Iceberg table cannot carry is not advised (no bitmap index, no pre-aggregates)
    assert not any("bitmap" in k or "aggregate." in k for k in applied.options)
    assert {lever.lever for lever in applied.levers} <= {"distribution", "bloom", "sort"}
    # what was applied is what the table's options now say: advising again changes nothing
    assert not events.advise().options


def test_locations_and_catalogs_are_checked(lake, tmp_path, monkeypatch):
    for bad in ("iceberg://lake", "iceberg://lake/events", "iceberg:///db.t", "s3://x/db.t", "iceberg://la ke/db.t"):
        with pytest.raises(InvalidArgumentError, match="iceberg://CATALOG/NAMESPACE.TABLE"):
            parse_location(bad)
    assert parse_location("iceberg://lake/a.b.t").identifier == ("a", "b", "t")
    with pytest.raises(TableNotFoundError, match="iceberg://lake/db.missing"):
        open_iceberg("iceberg://lake/db.missing")
    # a catalog configured nowhere is the embedded SQLite one, under MERGETREE_ICEBERG_HOME
    monkeypatch.setenv("MERGETREE_ICEBERG_HOME", str(tmp_path / "home"))
    embedded = load_catalog("scratch")
    embedded.create_namespace("n")
    embedded.create_table("n.t", _events(n=10).schema).append(_events(n=10))
    assert open_iceberg("iceberg://scratch/n.t").read().num_rows == 10
    assert (tmp_path / "home" / "scratch" / "catalog.db").is_file()


def test_the_cli_advises_on_an_iceberg_table(events):
    for k in range(5):
        events.read(filter=("site", "=", str(k)))
    querylog.flush(events.path)
    out = subprocess.run([sys.executable, "-m", "mergetree", "advise", "iceberg://lake/db.events"],
                         capture_output=True, text=True, env=dict(os.environ))
    assert out.returncode == 0, out.stderr
    assert "5 logged queries" in out.stdout
    for command in (["queries", "show"], ["replay"], ["report", "--html", "page.html"], ["queries", "expire"]):
        done = subprocess.run([sys.executable, "-m", "mergetree", *command[:2 if command[0] == "queries" else 1],
                               "iceberg://lake/db.events", *command[2 if command[0] == "queries" else 1:]],
                              capture_output=True, text=True, env=dict(os.environ), cwd=events_dir(events))
        assert done.returncode == 0, (command, done.stderr)
    assert "<svg" in (events_dir(events) / "page.html").read_text()


def events_dir(table) -> Path:
    """A scratch directory beside the test's catalog (the CLI's working directory)."""
    path = Path(table.iceberg.location().removeprefix("file://")).parents[2] / "cli"
    path.mkdir(exist_ok=True)
    return path


# -- rewrites --------------------------------------------------------------------------------

def _sorted_rows(table) -> list[dict]:
    return sorted(table.iceberg.scan().to_arrow().to_pylist(), key=lambda r: r["id"])


def _lookups(table, n: int = 30) -> None:
    for k in range(n):
        table.read(filter=("site", "=", str(k % 40)))


def test_advise_apply_optimize_lays_the_files_out_and_changes_no_row(events, monkeypatch):
    import polars as pl
    monkeypatch.setenv("POLARS_ICEBERG_PLANNER", "pyiceberg")
    before = _sorted_rows(events)
    first = events.snapshot_id()
    _lookups(events)
    advice = events.advise(apply=True)
    assert events.options.clustering is not None, advice.explain()
    events.set_properties({"write.parquet.bloom-filter-enabled.column.id": "true"})  # as another engine's owner might
    assert events.options.bloom_columns == ("id",)
    events.read(filter=("site", "=", "7"))
    files_before = events.last_read.files_read
    result = events.optimize()
    assert result.status == "committed" and result.rows == len(before) and result.files_in == 3 * FILES, result
    assert _sorted_rows(events) == before  # pyiceberg's own reader
    assert pl.scan_iceberg(events.iceberg).select(pl.len()).collect().item() == len(before)
    assert len(events.iceberg.scan(snapshot_id=first).to_arrow()) == len(before)  # time travel to before
    summary = events.iceberg.current_snapshot().summary
    # the three months in one task (their input is below rewrite.TASK_BYTES): one commit swapping every file
    assert summary["mergetree.rewrite"] == "major" and summary["mergetree.files-read"] == str(3 * FILES)
    assert len(result.snapshot_ids) == result.commits == 1 and result.partitions == 3
    events.read(filter=("site", "=", "7"))
    assert events.last_read.files_read < files_before  # the layout pays
    new_files = [m.file_name for m in events.data_files()]
    assert all(p.rsplit("/", 1)[-1].startswith("mt-major-") for p in new_files)
    import pyarrow.parquet as pq

    from mergetree.table.indexes import bloom
    path = new_files[0].removeprefix("file://")
    described = bloom.describe(path, ["id"])["id"]
    assert all(length for _, length in described.filters), "Bloom filters for the column the properties name"
    present = pq.read_table(path, columns=["id"]).column("id")[0].as_py()
    assert bloom.file_may_contain(path, described, [present])
    assert not bloom.file_may_contain(path, described, [-1, 10**12])  # mergetree's own probe skips with them
    field = pq.ParquetFile(path).schema_arrow.field("id")
    assert field.metadata[b"PARQUET:field_id"] == b"1"  # every engine reads the file by field id
    # the manifests say of each new file what pyiceberg says reading it back (the rewrite takes
    # the statistics from its writer's footer instead)
    from pyiceberg.io.pyarrow import parquet_file_to_data_file
    for task in events.iceberg.scan().plan_files():
        read_back = parquet_file_to_data_file(events.iceberg.io, events.iceberg.metadata, task.file.file_path)
        for name in ("record_count", "file_size_in_bytes", "column_sizes", "value_counts", "null_value_counts",
                     "lower_bounds", "upper_bounds", "split_offsets", "partition"):
            assert getattr(task.file, name) == getattr(read_back, name), name
        assert task.file.spec_id == events.iceberg.spec().spec_id
    again = events.optimize()
    assert again.status == "nothing" and again.files_in == 0  # laid out already


def test_a_bucket_partitioned_table_is_rewritten_into_its_own_buckets(lake):
    """bucket(4, id) and identity(site) partitions (Flink's and Spark's usual upsert layout): a
    bucket's ids span its whole range, so a file's partition cannot be read off its columns'
    bounds; each new file is given the partition whose rows it holds, and pyiceberg prunes
    and reads by it as before."""
    import pyarrow.parquet as pq
    from pyiceberg.transforms import BucketTransform, IdentityTransform
    data = _events(seed=9, n=4000).filter(pc.is_in(pc.field("site"), pa.array(["1", "2"])))
    created = lake.create_table("db.buckets", data.schema, properties={"write.target-file-size-bytes": "20000"})
    with created.update_spec() as spec:
        spec.add_field("id", BucketTransform(4), "id_bucket")
        spec.add_field("site", IdentityTransform(), "site")
    for part in range(3):
        created.append(data.slice(part * (data.num_rows // 3), data.num_rows // 3 + 1))
    table = open_iceberg("iceberg://lake/db.buckets")
    before = _sorted_rows(table)
    partitions = {tuple(t.file.partition) for t in table.iceberg.scan().plan_files()}
    assert len(partitions) == 8
    table.set_properties({"mergetree.clustering.columns": "day", "mergetree.clustering.strategy": "linear"})
    result = table.optimize()
    assert result.status == "committed" and result.partitions == 8, result
    assert _sorted_rows(table.refresh()) == before
    after = list(table.iceberg.scan().plan_files())
    assert {tuple(t.file.partition) for t in after} == partitions
    bucket = BucketTransform(4).transform(created.schema().find_field("id").field_type)
    for task in after:
        with table.iceberg.io.new_input(task.file.file_path).open() as f:
            held = pq.read_table(f, columns=["id", "site"]).to_pylist()
        assert {(bucket(r["id"]), r["site"]) for r in held} == {tuple(task.file.partition)}
    some = before[17]
    found = table.iceberg.scan(row_filter=f"id == {some['id']}").plan_files()
    assert len(list(found)) < len(after) and _by_id(table.read(filter=("id", "=", some["id"])).to_pylist()) == [some]


def test_a_qdtree_layout_packs_each_partitions_leaves_into_files(events):
    """A qd-tree's leaves, cut by the partitions, are packed into files of the target size as
    the advisor simulates them (small neighbouring leaves share a file, a large one has files of
    its own), every row kept."""
    from mergetree.table.levers.qdtree import build_qdtree
    before = _sorted_rows(events)
    sample = events.read(columns=["site", "amount"])
    boxes = [{"site": (str(k), str(k))} for k in range(10, 30)]
    boxes += [{"amount": (lo, lo + 10.0)} for lo in range(0, 100, 10)]
    tree = build_qdtree(sample, boxes, 24)
    assert tree.leaves > 4
    events.set_properties({"mergetree.clustering.columns": ",".join(tree.columns),
                           "mergetree.clustering.strategy": "qdtree", "mergetree.clustering.qdtree": tree.to_json()})
    assert events.options.clustering.tree.nodes == tree.nodes
    result = events.optimize()
    assert result.status == "committed" and result.rows == len(before), result
    assert _sorted_rows(events) == before
    rows_per_file = max(1, int(events.options.target_file_size / (result.bytes_in / result.rows)))
    pairs = 0
    for partition, files in _files_by_partition(events).items():
        leaves_of_files = [np.unique(tree.route(events.read_file(m, ["site", "amount"]))) for m in files]
        pairs += len(np.unique(np.concatenate(leaves_of_files)))
        for leaves in leaves_of_files:  # a file holds a run of the partition's leaves, in leaf order
            present = np.unique(np.concatenate(leaves_of_files))
            at = np.searchsorted(present, leaves)
            assert np.all(np.diff(at) == 1), (partition, leaves)
        assert all(m.row_count <= 1.25 * rows_per_file for m in files)  # (each task estimates its own bytes per row)
    assert result.files_out <= pairs  # never more files than leaves cut by partitions


def _files_by_partition(table) -> dict:
    out: dict = {}
    for meta in table.data_files():
        out.setdefault(table.layout_group(meta), []).append(meta)
    return out


def test_a_minor_pass_bin_packs_small_files(events):
    before = _sorted_rows(events)
    count = len(events.data_files())
    result = events.optimize(tier="minor")
    assert result.status == "committed" and result.files_out < result.files_in == count
    assert len(events.data_files()) == count - result.files_in + result.files_out
    assert _sorted_rows(events) == before
    assert events.optimize(tier="minor").status == "nothing"
    with pytest.raises(InvalidArgumentError, match="tier"):
        events.optimize(tier="full")


def _concurrent(op: str, catalog, model: list[dict]) -> list[dict]:
    """Another writer's commit (pyiceberg, its own table object) and the rows it leaves."""
    other = catalog.load_table("db.events")
    if op == "append":
        extra = _events(seed=9, n=500, first=10**6)
        other.append(extra)
        return model + extra.to_pylist()
    if op == "delete":
        other.delete("site = '5'")
        return [r for r in model if r["site"] != "5"]
    # an overwrite of February's rows
    from pyiceberg.expressions import And, GreaterThanOrEqual, LessThan
    february = And(GreaterThanOrEqual("day", "2024-02-01"), LessThan("day", "2024-03-01"))
    fresh = _events(seed=11, n=300, first=2 * 10**6)
    fresh = fresh.set_column(2, "day", pa.array([dt.date(2024, 2, 10)] * 300))
    other.overwrite(fresh, overwrite_filter=february)
    return [r for r in model if not dt.date(2024, 2, 1) <= r["day"] < dt.date(2024, 3, 1)] + fresh.to_pylist()


@pytest.mark.parametrize("phase", ["planned", "written", "checked"])
@pytest.mark.parametrize("op", ["append", "delete", "overwrite"])
def test_a_concurrent_commit_in_any_phase_loses_nothing_and_brings_nothing_back(events, lake, monkeypatch, phase,
                                                                                op):
    """Another engine commits while a rewrite runs: after the files are planned, after the new
    files are written, or between the rewrite's check of the snapshot and its commit.  The table
    then holds exactly the other commit's result: nothing lost, duplicated or resurrected."""
    from pyiceberg.table import Table as PyicebergTable

    import mergetree.iceberg.rewrite as rewrite_module
    monkeypatch.setattr(rewrite_module, "TASK_BYTES", 1)  # a task (a commit) per month: some may commit, some not
    events.set_properties({"mergetree.clustering.columns": "site", "mergetree.clustering.strategy": "linear"})
    model = _sorted_rows(events)
    fired: list[str] = []

    def fire() -> None:
        if not fired:
            fired.append(phase)
            model[:] = _concurrent(op, lake, model)
    if phase == "planned":
        real_write = rewrite_module._write_group
        monkeypatch.setattr(rewrite_module, "_write_group", lambda *a: (fire(), real_write(*a))[1])
    elif phase == "written":
        real_commit = rewrite_module._commit
        monkeypatch.setattr(rewrite_module, "_commit", lambda *a: (fire(), real_commit(*a))[1])
    else:
        real_transaction = PyicebergTable.transaction
        monkeypatch.setattr(PyicebergTable, "transaction", lambda self: (fire(), real_transaction(self))[1])
    result = events.optimize()
    assert fired == [phase]
    got = _sorted_rows(events)
    assert got == sorted(model, key=lambda r: r["id"]), result
    assert len({r["id"] for r in got}) == len(got)
    if op == "append":  # appends touch none of the files read: every partition is rewritten
        assert result.partitions == result.commits == 3 and not result.conflicts, result
    else:
        assert result.conflicts or result.partitions == 3, result
    # the partitions given up left no file of theirs behind
    live = {m.file_name for m in events.data_files()}
    on_disk = {str(p) for p in Path(events.iceberg.location().removeprefix("file://")).rglob("mt-*.parquet")}
    assert {f"file://{p}" for p in on_disk} <= live


CHILD = """
import os, sys
os.environ["PYICEBERG_CATALOG__LAKE__TYPE"] = "sql"
os.environ["PYICEBERG_CATALOG__LAKE__URI"] = sys.argv[1]
os.environ["PYICEBERG_CATALOG__LAKE__WAREHOUSE"] = sys.argv[2]
import mergetree.iceberg
table = mergetree.iceberg.open("iceberg://lake/db.events")
print("ready", flush=True)
for tier in ("minor", "major") * 3:
    table.optimize(tier=tier)
"""


def test_sigkill_mid_rewrite_leaves_the_table_readable_with_every_row(events, tmp_path):
    import random
    import signal
    events.set_properties({"mergetree.clustering.columns": "site", "mergetree.clustering.strategy": "zorder",
                           "mergetree.sort-within.columns": "id"})
    before = _sorted_rows(events)
    rng = random.Random(7)
    for run in range(4):
        if run:  # fresh small files to rewrite, in their own transaction, appended and later swapped
            events.set_properties({"mergetree.clustering.strategy": ("linear", "zorder", "hilbert")[run % 3]})
        child = subprocess.Popen([sys.executable, "-c", CHILD, f"sqlite:///{tmp_path}/catalog.db",
                                  f"file://{tmp_path}/warehouse"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert child.stdout is not None and child.stdout.readline().strip() == b"ready"
        import time
        time.sleep(rng.uniform(0.05, 1.0))
        child.send_signal(signal.SIGKILL)
        child.wait()
        assert child.returncode in (0, -signal.SIGKILL), child.stderr.read().decode()[-2000:] if child.stderr else ""
        events.refresh()
        assert _sorted_rows(events) == before, f"run {run}"


def test_the_cli_optimizes_an_iceberg_table(events):
    before = _sorted_rows(events)
    done = subprocess.run([sys.executable, "-m", "mergetree", "optimize", "iceberg://lake/db.events", "--order",
                           "site,day", "--no-progress"], capture_output=True, text=True, env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    assert "committed, 3 partitions" in done.stdout
    events.refresh()
    assert events.options.clustering.columns == ("site", "day") and events.options.clustering.strategy == "hilbert"
    assert _sorted_rows(events) == before
    refused = subprocess.run([sys.executable, "-m", "mergetree", "optimize", "iceberg://lake/db.events", "--filter",
                              "site = 1"], capture_output=True, text=True, env=dict(os.environ))
    assert refused.returncode != 0 and "--filter" in refused.stderr


def test_the_cli_reads_an_iceberg_table(events):
    expected = sorted((r for r in _sorted_rows(events) if r["site"] == "7"), key=lambda r: -r["amount"])[:3]
    done = subprocess.run([sys.executable, "-m", "mergetree", "read", "iceberg://lake/db.events",
                           "--filter", "site = 7", "--order-by", "amount:desc", "--limit", "3",
                           "--columns", "id,amount", "--explain"],
                          capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"})
    assert done.returncode == 0, done.stderr
    for row in expected:
        assert str(row["id"]) in done.stdout
    assert "(3 rows)" in done.stdout and "deprecated" not in done.stderr, done.stdout
    assert "read " in done.stdout and f"of {3 * FILES} files" in done.stdout
    refused = subprocess.run([sys.executable, "-m", "mergetree", "read", "iceberg://lake/db.events", "--sorted"],
                             capture_output=True, text=True, env=dict(os.environ))
    assert refused.returncode != 0 and "no primary key" in refused.stderr


def test_files_of_an_older_partition_spec_are_rewritten_into_the_current_specs_partitions(events, lake):
    """After partition evolution (month -> day) a major pass rewrites the older spec's files too:
    their rows re-partitioned by the current spec as pyiceberg's appends partition them, each
    partition's files in its folder; pyiceberg then plans and reads every row by the new spec."""
    from pyiceberg.expressions import EqualTo
    from pyiceberg.transforms import DayTransform

    from mergetree.iceberg.rewrite import OlderSpec, pending_groups
    with events.iceberg.update_spec() as spec:
        spec.remove_field("day_month")
        spec.add_field("day", DayTransform(), "day_day")
    events.refresh()
    current = events.iceberg.spec().spec_id
    extra = _events(seed=5, n=3000, first=ROWS)
    for i in range(3):
        events.iceberg.append(extra.slice(i * 1000, 1000))
    events.refresh()
    before = _sorted_rows(events)
    old_spec = {m.file_name for m in events.data_files() if m.origin.task.file.spec_id != current}
    assert len(old_spec) == 3 * FILES
    events.set_properties({"mergetree.clustering.columns": "site", "mergetree.clustering.strategy": "linear"})
    groups = pending_groups(events, "major")
    monthly = {m.origin.task.file.spec_id for m in events.data_files() if m.file_name in old_spec}
    assert {k for k in groups if isinstance(k[0], OlderSpec)} == {(OlderSpec(*monthly), m) for m in (648, 649, 650)}
    result = events.optimize()
    assert result.status == "committed" and result.rows == ROWS + 3000, result
    files = events.refresh().data_files()
    assert not old_spec & {m.file_name for m in files}
    assert {m.origin.task.file.spec_id for m in files} == {current}
    for meta in files:  # each file's rows are of its partition, in the partition's folder
        data = meta.origin.task.file
        days = pq.read_table(data.file_path.removeprefix("file://"), columns=["day"]).column("day")
        day = (pc.min(days).as_py() - dt.date(1970, 1, 1)).days
        assert pc.max(days) == pc.min(days) and tuple(data.partition) == (day,)
        assert f"/day_day={pc.min(days).as_py().isoformat()}/" in data.file_path
    assert _sorted_rows(events) == before
    assert sorted(events.iceberg.scan().to_arrow().to_pylist(), key=lambda r: r["id"]) == before
    one_day = dt.date(2024, 2, 3)
    planned = list(events.iceberg.scan(row_filter=EqualTo("day", one_day.isoformat())).plan_files())
    assert planned and all(tuple(t.file.partition) == ((one_day - dt.date(1970, 1, 1)).days,) for t in planned)
    assert sorted(r["id"] for r in events.read(columns=["id"], filter=("site", "=", "3")).to_pylist()) == \
        sorted(r["id"] for r in before if r["site"] == "3")
    assert pending_groups(events, "major") == {}


def test_a_v1_table_whose_transform_changed_is_rewritten_and_the_shares_merge_on_the_next_pass(lake):
    """Format v1 keeps a removed partition field as `void`: month(day) -> day(day) leaves
    [void(day), day(day)], which pyiceberg's own appends refuse; the rewrite still moves the
    older spec's rows into the day partitions.  And where an older partition spreads over the
    new ones (bucket(id) -> month(day)), each older partition leaves a share in each month: the
    next pass merges a month's shares into its files."""
    from pyiceberg.transforms import BucketTransform, DayTransform, MonthTransform, VoidTransform

    from mergetree.iceberg.rewrite import RESPEC, pending_groups
    data = _events(n=6000)
    for name, version, older, newer in (("db.v1", "1", ("day", MonthTransform()), ("day", DayTransform())),
                                        ("db.spread", "2", ("id", BucketTransform(4)), ("day", MonthTransform()))):
        created = lake.create_table(name, data.schema, properties={"format-version": version,
                                                                   "write.target-file-size-bytes": "60000"})
        with created.update_spec() as spec:
            spec.add_field(older[0], older[1], "older")
        for i in range(4):
            created.append(data.slice(i * 1500, 1500))
        with lake.load_table(name).update_spec() as spec:
            spec.remove_field("older")
            spec.add_field(newer[0], newer[1], "newer")
        table = open_iceberg(f"iceberg://lake/{name}")
        fields = [type(f.transform) for f in table.iceberg.spec().fields]
        assert fields == ([VoidTransform, DayTransform] if version == "1" else [MonthTransform])
        before = _sorted_rows(table)
        first = table.optimize()
        assert first.status == "committed" and first.rows == 6000, first
        files = table.refresh().data_files()
        assert {m.origin.task.file.spec_id for m in files} == {table.iceberg.spec().spec_id}
        assert all(f"-{RESPEC}-" in m.file_name for m in files)
        assert _sorted_rows(table) == before
        assert sorted(lake.load_table(name).scan().to_arrow().to_pylist(), key=lambda r: r["id"]) == before
        partitions = {tuple(m.origin.task.file.partition) for m in files}
        if version == "2":  # four buckets' shares in each of three months
            assert len(partitions) == 3 and len(files) == 12
        second = table.optimize()
        if len(files) > len(partitions):  # shares to merge
            assert second.status == "committed" and second.files_out == len(partitions), second
        else:
            assert second.status == "nothing", second
        assert len(table.refresh().data_files()) == len(partitions) and _sorted_rows(table) == before
        assert pending_groups(table, "major") == {} and table.optimize().status == "nothing"


def test_an_interrupted_rewrite_removes_the_files_its_threads_were_writing(events, monkeypatch):
    import signal
    import threading
    import time

    import mergetree.iceberg.rewrite as rewrite_module
    real = rewrite_module.pq.ParquetWriter
    main = threading.main_thread().ident
    calls: list[int] = []

    class Interrupted(real):
        def write_table(self, table, *args, **kwargs):
            calls.append(1)
            if len(calls) == 1:
                signal.pthread_kill(main, signal.SIGINT)  # Ctrl-C while the threads write
            time.sleep(0.2)
            return super().write_table(table, *args, **kwargs)
    monkeypatch.setattr(rewrite_module.pq, "ParquetWriter", Interrupted)
    events.set_properties({"mergetree.clustering.columns": "site", "mergetree.clustering.strategy": "linear"})
    snapshot = events.snapshot_id()
    with pytest.raises(KeyboardInterrupt):
        events.optimize()
    assert len(calls) >= 1 and events.refresh().snapshot_id() == snapshot
    warehouse = Path(events.iceberg.location().removeprefix("file://"))
    assert not list(warehouse.rglob("mt-*.parquet"))


@pytest.mark.parametrize("fields", [
    [("s.x", "identity")], [("n", "bucket")], [("day", "day"), ("site", "truncate")],
    [("s.x", "identity"), ("n", "bucket"), ("day", "month")], []])
def test_rows_are_partitioned_by_the_current_spec_as_pyicebergs_appends_partition_them(lake, fields):
    """`current_partitions` (an older spec's rows re-partitioned) against pyiceberg's own append
    of the same rows: each row in the partition pyiceberg's files put it in, nulls (of a nested
    source too) a partition of their own, a partition's folder as pyiceberg names it."""
    from pyiceberg.transforms import BucketTransform, DayTransform, IdentityTransform, MonthTransform, TruncateTransform

    from mergetree.iceberg.rewrite import current_partitions
    rng = np.random.default_rng(len(fields))
    n = 3000
    base = _events(seed=len(fields), n=n)
    nested = rng.choice(["a", "b", "c"], n).astype(object)
    nested[rng.random(n) < 0.1] = None
    numbers = rng.integers(-10**6, 10**6, n).astype(object)
    numbers[rng.random(n) < 0.1] = None
    rows = base.append_column("n", pa.array(numbers, pa.int64())).append_column(
        "s", pa.StructArray.from_arrays([pa.array(nested, pa.string())], ["x"]))
    table = lake.create_table(f"db.parts_{len(fields)}_{fields[0][1] if fields else 'none'}", rows.schema)
    transforms = {"identity": IdentityTransform(), "bucket": BucketTransform(5), "day": DayTransform(),
                  "month": MonthTransform(), "truncate": TruncateTransform(1)}
    with table.update_spec() as spec:
        for source, transform in fields:
            spec.add_field(source, transforms[transform], f"{source.replace('.', '_')}_{transform}")
    table.append(rows)
    theirs: dict[int, tuple] = {}
    folders: dict[tuple, str] = {}
    for task in table.scan().plan_files():
        ids = pq.read_table(task.file.file_path.removeprefix("file://"), columns=["id"]).column("id").to_pylist()
        theirs.update({i: tuple(task.file.partition) for i in ids})
        folders[tuple(task.file.partition)] = task.file.file_path.rsplit("/", 1)[0]
    ours: dict[int, tuple] = {}
    parts = current_partitions(table.metadata, rows)
    for partition, folder, part in parts:
        assert folder == folders[tuple(partition)]
        ours.update({i: tuple(partition) for i in part.column("id").to_pylist()})
    assert ours == theirs and sum(p.num_rows for _, _, p in parts) == n
    assert len(parts) == len(folders) and (len(parts) == 1) == (not fields)


HISTORIES = Path(__file__).parent / "data" / "histories"


@pytest.mark.parametrize("name,imported,skipped,other_events", [
    ("trino_runtime_queries.jsonl", 3, 2, 0),   # the failed (unparsable) statement, the cut-short line
    ("trino_runtime_queries.csv", 3, 2, 0),     # the same rows; the row cut short
    ("trino_query_completed.jsonl", 3, 1, 0),   # the event without its query text
    ("spark_eventlog.jsonl", 2, 2, 8),          # the DataFrame action's call site, the cut-short line
])
def test_trino_and_spark_histories_import_as_they_export_them(events, name, imported, skipped, other_events):
    result = import_sql("iceberg://lake/db.events", HISTORIES / name, dialect="spark" if "spark" in name else "trino")
    assert (result.imported, result.skipped, result.other_events) == (imported, skipped, other_events), result
    assert all("line" in e for e in result.errors) and len(result.errors) == skipped  # each one reported
    log = querylog.read_rows(events.path).to_pylist()
    assert len(log) == imported
    first = min(log, key=lambda r: r["ts"])
    assert first["ts"].year == 2024 and first["source"] == "import"
    if "spark" not in name:
        assert sorted({r["user"] for r in log}) == ["ana", "bo", "cy"]
    assert all(r["duration_ms"] is not None and r["duration_ms"] > 0 for r in log), log
    filtered = {r["filter"] for r in log}
    assert any("site" in (f or "") for f in filtered) and any("day" in (f or "") for f in filtered)


def test_replay_re_plans_the_logged_queries_on_the_table_now_and_on_a_simulated_layout(events):
    from mergetree.organize.replay import replay
    _lookups(events, 20)
    querylog.flush(events.path)
    now = replay(events.path)
    assert len(now.queries) == 20 and now.files == sum(q.logged_files for q in now.queries)  # nothing changed yet
    simulated = replay(events.path, layout="linear:site")
    assert simulated.bytes < simulated.baseline_bytes  # a layout by site would pay, on the same sample
    events.set_properties({"mergetree.clustering.columns": "site", "mergetree.clustering.strategy": "linear"})
    events.optimize()
    after = replay(events.path)
    assert after.files < now.files and after.versus_logged is not None and after.versus_logged < 1


def test_a_linear_layout_is_the_tables_sort_order_and_a_curve_clears_only_its_own(events):
    from pyiceberg.transforms import IdentityTransform

    def order(table) -> list[str]:
        schema = table.iceberg.schema()
        return [schema.find_column_name(f.source_id) for f in table.iceberg.sort_order().fields]
    events.set_properties({"mergetree.clustering.columns": "site,day", "mergetree.clustering.strategy": "linear"})
    assert order(events) == ["site", "day"]  # Spark's and Flink's writers sort by it too
    events.set_properties({"mergetree.clustering.strategy": "zorder"})
    assert order(events) == [] and "mergetree.sort-order" not in events.properties
    with events.iceberg.update_sort_order() as update:  # an order the table's owner chose
        update.asc("id", IdentityTransform())
    events.refresh().set_properties({"mergetree.clustering.strategy": "hilbert"})
    assert order(events) == ["id"]  # not mergetree's to clear


def _s3_table(s3_server, tmp_path, monkeypatch):
    """db.events in a catalog whose warehouse is on the S3 server: (table, warehouse, options)."""
    import uuid
    warehouse = f"s3://lake/iceberg-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("PYICEBERG_CATALOG__S3LAKE__TYPE", "sql")
    monkeypatch.setenv("PYICEBERG_CATALOG__S3LAKE__URI", f"sqlite:///{tmp_path}/s3catalog.db")
    monkeypatch.setenv("PYICEBERG_CATALOG__S3LAKE__WAREHOUSE", warehouse)
    monkeypatch.delenv("MERGETREE_WORKLOAD_WAREHOUSE", raising=False)
    options = s3_server.options()
    catalog = load_catalog("s3lake", options)
    catalog.create_namespace("db")
    data = _events(n=4000)
    created = catalog.create_table("db.events", data.schema, properties={"write.target-file-size-bytes": "20000"})
    for part in range(4):
        created.append(data.slice(part * 1000, 1000))
    return open_iceberg("iceberg://s3lake/db.events", options), warehouse, options


def test_an_iceberg_table_on_s3_is_read_logged_advised_and_rewritten(s3_server, tmp_path, monkeypatch):
    """The catalog's warehouse on the S3 server (pyiceberg's FileIO with the storage options given
    at the open), the workload tables beside it on the same store."""
    table, warehouse, _ = _s3_table(s3_server, tmp_path, monkeypatch)
    assert table.read(filter=("site", "=", "7")).num_rows == len(_reference(table, ("site", "=", "7")))
    for k in range(12):
        table.read(filter=("site", "=", str(k)))
    querylog.flush(table.path)
    assert querylog.read_rows(table.path).num_rows == 13
    assert querylog.log_path(table.path).startswith(f"{warehouse}/mergetree_workload.db/")  # on the server
    table.set_properties({"mergetree.clustering.columns": "site", "mergetree.clustering.strategy": "linear"})
    before = _sorted_rows(table)
    result = table.optimize()
    assert result.status == "committed" and _sorted_rows(table) == before
    assert all(m.file_name.startswith(warehouse) for m in table.data_files())


def test_spark_rewrites_an_iceberg_table_on_s3(s3_server, tmp_path, monkeypatch, spark):
    """The executors write to the store with the FileIO properties of the driver's open."""
    import mergetree.spark
    table, warehouse, options = _s3_table(s3_server, tmp_path, monkeypatch)
    before, files_before = _sorted_rows(table), len(table.data_files())
    result = mergetree.spark.optimize(spark, table.path, order="site", storage_options=options)
    assert result.status == "committed" and result.files_in == files_before and _sorted_rows(table.refresh()) == before
    names = [m.file_name for m in table.data_files()]
    assert all(n.startswith(warehouse) and n.rsplit("/", 1)[-1].startswith("mt-major-") for n in names)


def test_the_report_page_shows_an_iceberg_table_and_its_passes(events):
    from mergetree.organize.report import build_report, render_html
    _lookups(events, 12)
    events.set_properties({"mergetree.clustering.columns": "site", "mergetree.clustering.strategy": "linear"})
    events.optimize()
    report = build_report(events.path)
    assert report.rows == ROWS and report.files == len(events.data_files()) and not report.primary_key
    assert [p.partition for p in report.partitions] == ["day_month=648", "day_month=649", "day_month=650"]
    assert all(p.optimized_share == 1.0 for p in report.partitions)  # every file laid out by the rewrite
    assert len(report.passes) == 1 and report.passes[0]["tier"] == "major" and report.queries == 12
    page = render_html(report)
    assert "<svg" in page and "iceberg://lake/db.events" in page


def test_the_optimizer_daemon_runs_an_iceberg_tables_partitions_by_benefit(events):
    """The daemon plans an Iceberg table's pending partitions as a Paimon table's (major once
    `optimize.major-threshold` of data waits), orders them by what the logged queries read there,
    runs each as one checked Iceberg commit under the limits, and records each pass."""
    from mergetree.organize.scheduler import plan_tasks, run_daemon
    from mergetree.table.workload.history import history
    before = _sorted_rows(events)
    events.set_properties({"mergetree.clustering.columns": "site", "mergetree.clustering.strategy": "linear",
                           "mergetree.optimize.major-threshold": "1 kb"})
    for _ in range(5):  # March is read: its partition first
        events.read(filter=[("day", ">=", "2024-03-01"), ("site", "=", "3")])
    querylog.flush(events.path)
    tasks, nothing = plan_tasks(events.path)
    assert [t.tier for t in tasks] == ["major"] * 3 and [r.tier for r in nothing] == ["minor"]
    from mergetree.organize.scheduler import order_tasks
    ordered = order_tasks(tasks)
    assert ordered[0].reads > 0 and ordered[1].reads == ordered[2].reads == 0
    reports: list = []
    committed = run_daemon([events.path], once=True, on_report=reports.append, max_tasks=2)
    rewrites = [r for r in reports if r.tier == "major"]
    assert committed == 3 and [r.status for r in rewrites] == ["committed"] * 3, reports
    assert rewrites[0].snapshot_id is not None
    events.refresh()
    assert _sorted_rows(events) == before
    assert all(m.file_name.rsplit("/", 1)[-1].startswith("mt-major-") for m in events.data_files())
    assert history(events.path).column("status").to_pylist().count("committed") == 3
    again: list = []
    assert run_daemon([events.path], once=True, on_report=again.append) == 0  # laid out already
    assert {r.status for r in again} <= {"nothing"}
    done = subprocess.run([sys.executable, "-m", "mergetree", "optimize-daemon", events.path, "--once"],
                          capture_output=True, text=True, env=dict(os.environ))
    assert done.returncode == 0 and "0 pass(es) committed" in done.stdout, done.stderr


# -- rewrites on Spark: the executors write the files, the driver commits ---------------------

def _layout_files(table) -> list[str]:
    return sorted(m.file_name for m in table.data_files())


def test_spark_rewrites_an_iceberg_table_as_the_local_rewrite_does(events, spark):
    import mergetree.spark
    from mergetree.table.workload.history import history
    before = _sorted_rows(events)
    first = events.snapshot_id()
    result = mergetree.spark.optimize(spark, events.path, order=["site", "day"], strategy="zorder")
    assert events.refresh().properties["mergetree.clustering.columns"] == "site,day"
    assert result.status == "committed" and result.rows == len(before) and result.files_in == 3 * FILES, result
    assert result.commits == 1 and result.partitions == 3
    assert _sorted_rows(events) == before
    assert len(events.iceberg.scan(snapshot_id=first).to_arrow()) == len(before)  # time travel to before
    assert events.iceberg.current_snapshot().summary["mergetree.rewrite"] == "major"
    files = _layout_files(events)
    assert len(files) == result.files_out and all(p.rsplit("/", 1)[-1].startswith("mt-major-") for p in files)
    assert history(events.path).column("status").to_pylist() == ["committed"]
    assert mergetree.spark.optimize(spark, events.path).status == "nothing"  # laid out for it already
    assert events.refresh().optimize().status == "nothing"  # and the local rewrite knows the files too
    with pytest.raises(InvalidArgumentError, match="filter"):
        mergetree.spark.optimize(spark, events.path, filter=("site", "=", "1"))


def test_spark_executors_rewrite_an_older_specs_files_into_the_current_spec(events, spark):
    """After partition evolution (by month, then by site instead), Spark's
    executors re-partition the older spec's rows as the local rewrite does."""
    from pyiceberg.transforms import IdentityTransform

    import mergetree.spark
    with events.iceberg.update_spec() as spec:
        spec.remove_field("day_month")
        spec.add_field("site", IdentityTransform(), "site")
    events.refresh()
    before = _sorted_rows(events)
    result = mergetree.spark.optimize(spark, events.path, order=["day"], strategy="linear")
    assert result.status == "committed" and result.rows == len(before) and result.files_in == 3 * FILES, result
    files = events.refresh().data_files()
    current = events.iceberg.spec().spec_id
    assert {m.origin.task.file.spec_id for m in files} == {current}
    for meta in files:  # each file one site's rows (null: a partition of its own), in its folder
        data = meta.origin.task.file
        sites = pq.read_table(data.file_path.removeprefix("file://"), columns=["site"]).column("site").unique()
        assert sites.to_pylist() == [data.partition[0]], (sites, data.partition)
        assert f"/site={'null' if data.partition[0] is None else data.partition[0]}/" in data.file_path
    assert len({m.origin.task.file.partition[0] for m in files}) == 41  # 40 sites and null
    assert _sorted_rows(events) == before
    assert sorted(events.iceberg.scan().to_arrow().to_pylist(), key=lambda r: r["id"]) == before


def test_a_failed_spark_task_commits_nothing_and_leaves_no_file(events, spark):
    import mergetree.spark
    from mergetree.errors import MergeTreeError
    events.set_properties({"mergetree.clustering.columns": "site", "mergetree.clustering.strategy": "linear"})
    snapshot = events.snapshot_id()
    victim = sorted(m.file_name for m in events.data_files())[-1]
    Path(victim.removeprefix("file://")).write_bytes(b"not a parquet file")  # one partition's task fails to read it
    with pytest.raises((MergeTreeError, OSError, ValueError), match="Parquet") as raised:
        mergetree.spark.optimize(spark, events.path)
    assert raised.value.__cause__ is not None and "Spark task" in str(raised.value.__cause__)
    assert events.refresh().snapshot_id() == snapshot  # nothing committed
    warehouse = Path(events.iceberg.location().removeprefix("file://"))
    assert not list(warehouse.rglob("mt-*.parquet"))  # every task's files removed


def test_spark_runs_an_iceberg_tables_pending_partitions(events, spark, monkeypatch):
    import mergetree.iceberg.rewrite as rewrite_module
    import mergetree.spark
    monkeypatch.setattr(rewrite_module, "TASK_BYTES", 1)  # a task (a commit) per month
    before = _sorted_rows(events)
    events.set_properties({"mergetree.clustering.columns": "site", "mergetree.clustering.strategy": "linear",
                           "mergetree.optimize.major-threshold": "1 kb"})
    model = list(before)
    fired: list[int] = []
    real_commit = rewrite_module._commit

    def commit_after_another(*args):  # another engine deletes rows between the executors' writes and the commit
        if not fired:
            fired.append(1)
            model[:] = _concurrent("delete", load_catalog("lake"), model)
        return real_commit(*args)
    monkeypatch.setattr(rewrite_module, "_commit", commit_after_another)
    reports = mergetree.spark.optimize_pending(spark, events.path)
    majors = [r for r in reports if r.tier == "major"]
    assert fired and len(majors) == 3 and {r.status for r in majors} <= {"committed", "conflict"}, reports
    got = _sorted_rows(events.refresh())
    assert got == sorted(model, key=lambda r: r["id"]) and len(got) < len(before)  # nothing resurrected
    live = set(_layout_files(events))
    on_disk = {f"file://{p}" for p in Path(events.iceberg.location().removeprefix("file://")).rglob("mt-*.parquet")}
    assert on_disk <= live  # the given-up tasks' files removed


# -- delete files ----------------------------------------------------------------------------
# pyiceberg 0.12 writes no delete files (its deletes copy on write); Flink and Spark's merge-on-read
# writers do.  These helpers write them as the spec lays them out (position deletes: file_path,
# pos with the reserved field ids; equality deletes: the equality fields' columns with the
# table's field ids) and commit them in a delete manifest, as Iceberg's RowDelta does.

POSITION_FIELDS = pa.schema([pa.field("file_path", pa.string(), False, {b"PARQUET:field_id": b"2147483546"}),
                             pa.field("pos", pa.int64(), False, {b"PARQUET:field_id": b"2147483545"})])


def _delete_file(table, content, rows: pa.Table, spec_id: int, partition, equality_ids=None):
    import uuid

    import pyarrow.parquet as pq
    from pyiceberg.manifest import DataFile, FileFormat
    path = f"{table.location()}/data/deletes-{uuid.uuid4()}.parquet"
    with table.io.new_output(path).create() as sink:
        pq.write_table(rows, sink)
    delete_file = DataFile.from_args(content=content, file_path=path, file_format=FileFormat.PARQUET,
                                     partition=partition, record_count=rows.num_rows,
                                     file_size_in_bytes=len(table.io.new_input(path)), equality_ids=equality_ids,
                                     sort_order_id=None, key_metadata=None)
    delete_file.spec_id = spec_id
    return delete_file


def _position_deletes(table, data_file, positions: list[int]):
    from pyiceberg.manifest import DataFileContent
    rows = pa.table({"file_path": [data_file.file_path] * len(positions), "pos": sorted(positions)},
                    schema=POSITION_FIELDS)
    return _delete_file(table, DataFileContent.POSITION_DELETES, rows, data_file.spec_id, data_file.partition)


def _equality_deletes(table, rows: pa.Table, spec_id: int, partition):
    """Rows of the equality fields `rows` names (by the table's current field ids)."""
    from pyiceberg.manifest import DataFileContent
    schema = table.schema()
    ids = [schema.find_field(name).field_id for name in rows.column_names]
    typed = pa.schema([pa.field(n, rows.schema.field(n).type, True, {b"PARQUET:field_id": str(i).encode()})
                       for n, i in zip(rows.column_names, ids)])
    return _delete_file(table, DataFileContent.EQUALITY_DELETES, rows.cast(typed), spec_id, partition, ids)


def _commit_deletes(table, delete_files) -> None:
    """One commit adding delete files (all of one spec) in a delete manifest."""
    from pyiceberg.manifest import ManifestContent, ManifestWriterV2
    from pyiceberg.table.snapshots import Operation
    from pyiceberg.table.update.snapshot import _FastAppendFiles

    class DeleteManifestWriter(ManifestWriterV2):
        def content(self):
            return ManifestContent.DELETES

        @property
        def _meta(self):
            return {**super()._meta, "content": "deletes"}

    class RowDelta(_FastAppendFiles):
        def new_manifest_writer(self, spec):
            return DeleteManifestWriter(self.spec(delete_files[0].spec_id), self.schema(), self.new_manifest_output(),
                                        self._snapshot_id, self._compression)

    with table.transaction() as tx:
        delta = RowDelta(operation=Operation.DELETE, transaction=tx, io=table.io)
        for delete_file in delete_files:
            delta.append_data_file(delete_file)
        delta.commit()


def _by_id(rows) -> list[dict]:
    return sorted(rows, key=lambda r: r["id"])


def test_position_deletes_are_applied_by_reads_and_rewrites(events, monkeypatch):
    """Position delete files (a Flink or Spark merge-on-read delete): mergetree's reads drop
    the rows they name as pyiceberg's do; a rewrite applies them (and a global equality delete),
    so the new files hold exactly the live rows and the delete files leave the table, which
    pyiceberg and Polars read again; time travel still reads the old files."""
    import polars as pl
    import pyarrow.parquet as pq
    from pyiceberg.typedef import Record
    tasks = sorted(events.iceberg.scan().plan_files(), key=lambda t: t.file.file_path)
    model = _sorted_rows(events)
    gone: set[int] = set()
    deletes = []
    for task, positions in ((tasks[0], [0, 5, 7]), (tasks[4], list(range(0, int(tasks[4].file.record_count), 2)))):
        with events.iceberg.io.new_input(task.file.file_path).open() as f:
            ids = pq.read_table(f, columns=["id"]).column("id").to_pylist()  # in file order: row i is position i
        gone |= {ids[p] for p in positions}
        deletes.append(_position_deletes(events.iceberg, task.file, positions))
    for delete_file in deletes:  # one commit each, as two engines' deletes would be
        _commit_deletes(events.iceberg, [delete_file])
    events.refresh()
    model = [r for r in model if r["id"] not in gone]
    assert _by_id(events.read().to_pylist()) == model == _sorted_rows(events)  # pyiceberg's own read agrees
    assert events.info().delete_files == 2
    sevens = _by_id(events.read(filter=("site", "=", "7")).to_pylist())
    assert sevens == [r for r in model if r["site"] == "7"]
    # and a global equality delete (which pyiceberg refuses to read): mergetree applies it
    _commit_deletes(events.iceberg, [_equality_deletes(events.iceberg, pa.table({"site": ["9"]}), 0, Record())])
    model = [r for r in model if r["site"] != "9"]
    assert _by_id(events.refresh().read().to_pylist()) == model
    before = events.snapshot_id()
    events.set_properties({"mergetree.clustering.columns": "site", "mergetree.clustering.strategy": "linear"})
    result = events.optimize()
    assert result.status == "committed" and result.rows == len(model), result
    # the rewritten files carry the deletes, which left the table with the last files subject to
    # them: pyiceberg reads it again
    assert _by_id(events.read().to_pylist()) == model == _sorted_rows(events)
    assert events.info().delete_files == 0 and result.delete_files_removed == 3
    summary = events.iceberg.current_snapshot().summary
    assert (summary["total-delete-files"], summary["total-records"]) == ("0", str(len(model)))
    monkeypatch.setenv("POLARS_ICEBERG_PLANNER", "pyiceberg")
    polars_rows = pl.scan_iceberg(events.iceberg).collect().to_arrow().to_pylist()
    assert _by_id(polars_rows) == model
    assert _by_id(events.read(snapshot=before).to_pylist()) == model


def test_equality_deletes_are_applied_as_the_spec_scopes_them_and_rewritten_away(lake, monkeypatch):
    """Equality delete files (which pyiceberg refuses to read): a delete applies to the data
    files of a strictly smaller sequence number — in its partition, or in all of them when its
    spec is unpartitioned — on its equality fields, a null equal to a null, a dropped field
    still compared; a rewrite applies them and removes each with the last file subject to it,
    and an equality delete another engine commits while the rewrite runs makes it give up rather
    than bring the rows back."""
    import pickle

    from pyiceberg.transforms import MonthTransform
    from pyiceberg.typedef import Record

    import mergetree.iceberg.rewrite as rewrite_module
    from mergetree.iceberg.deletes import plan_files
    first, second = _events(seed=1, n=3000), _events(seed=2, n=3000, first=3000)
    late = _events(seed=3, n=500, first=6000)
    table = lake.create_table("db.upserts", first.schema, properties={"write.target-file-size-bytes": "40000"})
    table.append(first)  # spec 0: unpartitioned
    with table.update_spec() as spec:
        spec.add_field("day", MonthTransform(), "day_month")
    table.append(second)  # spec 1: by month
    february = Record(649)  # months since 1970-01
    def month_pairs(rows: pa.Table, month: int, n: int) -> pa.Table:  # (id, site) of rows no global delete takes
        kept = pc.and_(pc.equal(pc.month(rows.column("day")), month), pc.invert(pc.is_in(rows.column("site"),
                                                                                   pa.array(["3"]))))
        return rows.filter(pc.and_(kept, pc.is_valid(rows.column("site")))).select(["id", "site"]).slice(0, n)
    pairs, january_pairs, spec0_pairs = month_pairs(second, 2, 40), month_pairs(second, 1, 5), month_pairs(first, 2, 5)
    # global: every site 3 and null-site row written before it; scoped to February of spec 1: the pairs
    _commit_deletes(table, [_equality_deletes(table, pa.table({"site": pa.array(["3", None])}), 0, Record())])
    _commit_deletes(table, [_equality_deletes(table, pa.concat_tables([pairs, january_pairs, spec0_pairs]), 1,
                                              february)])
    table.append(late)  # written after the deletes: they do not apply to it
    deleted_pairs = {(r["id"], r["site"]) for r in pairs.to_pylist()}
    model = [r for r in first.to_pylist() if r["site"] not in ("3", None)]
    model += [r for r in second.to_pylist()
              if r["site"] not in ("3", None) and not (r["day"].month == 2 and (r["id"], r["site"]) in deleted_pairs)]
    model = _by_id(model + late.to_pylist())
    kept_ids = {r["id"] for r in model}
    assert deleted_pairs and {r["id"] for r in pa.concat_tables([january_pairs, spec0_pairs]).to_pylist()} <= kept_ids
    with pytest.raises(ValueError, match="equality deletes"):
        table.scan().to_arrow()  # why mergetree applies them itself
    upserts = open_iceberg("iceberg://lake/db.upserts")
    assert _by_id(upserts.read().to_pylist()) == model
    assert _by_id(upserts.read(filter=("site", "is null")).to_pylist()) == [r for r in model if r["site"] is None]
    assert upserts.info().delete_files == 2
    task = next(t for t in plan_files(table.scan()) if t.equality_deletes)
    assert pickle.loads(pickle.dumps(task)).equality_deletes == task.equality_deletes  # as Spark ships it

    # a global equality delete of site 7 committed between the rewrite's writes and its commit
    monkeypatch.setattr(rewrite_module, "TASK_BYTES", 1)  # a commit per partition
    real_commit, fired = rewrite_module._commit, []

    def commit_after_another(*args):
        if not fired:
            fired.append(True)
            _commit_deletes(table, [_equality_deletes(table, pa.table({"site": ["7"]}), 0, Record())])
        return real_commit(*args)
    monkeypatch.setattr(rewrite_module, "_commit", commit_after_another)
    upserts.set_properties({"mergetree.clustering.columns": "site", "mergetree.clustering.strategy": "linear"})
    before = upserts.snapshot_id()
    given_up = upserts.optimize()
    model_after = [r for r in model if r["site"] != "7"]  # every row so far was written before it
    assert fired and given_up.conflicts, given_up  # the files read are those the new delete applies to
    assert _by_id(upserts.refresh().read().to_pylist()) == model_after
    assert _by_id(upserts.read(snapshot=before).to_pylist()) == model
    monkeypatch.setattr(rewrite_module, "_commit", real_commit)
    result = upserts.optimize()  # on the new snapshot: the deletes applied into the new files
    assert result.status == "committed", result
    assert _by_id(upserts.refresh().read().to_pylist()) == model_after
    # every data file was rewritten (spec 0's unpartitioned ones into spec 1's months), so no
    # delete file is left to apply: all three went, and pyiceberg reads the table again
    assert (given_up.delete_files_removed, result.delete_files_removed) == (0, 3)
    assert upserts.info().delete_files == 0
    summary = upserts.iceberg.current_snapshot().summary
    assert (summary["total-delete-files"], summary["total-records"]) == ("0", str(len(model_after)))
    assert {f.spec_id for f in (t.file for t in upserts.iceberg.scan().plan_files())} == {1}
    assert _by_id(upserts.iceberg.refresh().scan().to_arrow().to_pylist()) == model_after
    upserts.set_properties({"mergetree.clustering.columns": None, "mergetree.clustering.strategy": None})
    with upserts.refresh().iceberg.update_schema() as update:  # the equality field dropped: still applied
        update.delete_column("site")
    assert _by_id(upserts.refresh().read().to_pylist()) == [{k: v for k, v in r.items() if k != "site"}
                                                           for r in model_after]


def test_the_equality_delete_cache_is_bounded_by_bytes_and_reads_stay_right(events, monkeypatch):
    """Each equality delete file is read once and kept for the other data files it applies to,
    up to a number of bytes; past it the least recently used goes, and the reads are the same."""
    from pyiceberg.typedef import Record

    from mergetree.iceberg import deletes
    for sites in (["1", "2"], ["3"], ["4", None]):  # three delete files, one commit each
        _commit_deletes(events.iceberg, [_equality_deletes(events.iceberg, pa.table({"site": sites}), 0, Record())])
    model = [r for r in _by_id(_events().to_pylist()) if r["site"] not in ("1", "2", "3", "4", None)]
    deletes._delete_rows_cache.clear()
    assert _by_id(events.refresh().read().to_pylist()) == model
    assert len(deletes._delete_rows_cache) == 3  # under the bound: each file read once, all kept
    monkeypatch.setattr(deletes, "_CACHED_DELETE_BYTES", 1)
    deletes._delete_rows_cache.clear()
    assert _by_id(events.read().to_pylist()) == model
    assert len(deletes._delete_rows_cache) == 1  # only the one in use


# -- format versions ---------------------------------------------------------------------------

def test_a_format_v1_table_is_read_advised_and_rewritten(lake):
    data = _events(seed=4, n=3000)
    created = lake.create_table("db.v1", data.schema, properties={"format-version": "1",
                                                                   "write.target-file-size-bytes": "20000"})
    for part in range(3):
        created.append(data.slice(part * 1000, 1000))
    table = open_iceberg("iceberg://lake/db.v1")
    assert table.info().format_version == 1
    before = _sorted_rows(table)
    assert _by_id(table.read().to_pylist()) == before == _by_id(data.to_pylist())
    _lookups(table, 12)
    table.advise(apply=True)
    table.set_properties({"mergetree.clustering.columns": "site", "mergetree.clustering.strategy": "linear"})
    result = table.optimize()
    assert result.status == "committed" and result.rows == 3000, result
    assert _sorted_rows(table.refresh()) == before and table.info().format_version == 1
    summary = table.iceberg.current_snapshot().summary
    assert summary["mergetree.rewrite"] == "major" and summary["total-records"] == "3000"


def test_a_format_v3_table_is_read_and_advised_and_its_rewrite_refused_before_writing(lake):
    """A table upgraded to format v3 by another engine (its older manifests stay v2, as an
    upgrade leaves them): read and advised on; pyiceberg 0.12 commits nothing to a v3 table, so
    applying the advice and rewriting are refused up front with nothing written."""
    from pydantic import BaseModel
    from pyiceberg.table.metadata import TableMetadataV3
    data = _events(seed=6, n=2000)
    created = lake.create_table("db.old", data.schema, properties={"write.target-file-size-bytes": "20000"})
    for part in range(2):
        created.append(data.slice(part * 1000, 1000))
    fields = created.metadata.model_dump(by_alias=True)
    upgraded = TableMetadataV3.model_validate({**fields, "format-version": 3, "next-row-id": 0})
    location = f"{created.location()}/metadata/00099-v3.metadata.json"
    with created.io.new_output(location).create() as sink:  # as a v3 writer would (pyiceberg refuses to)
        sink.write(BaseModel.model_dump_json(upgraded, by_alias=True, exclude_none=True).encode())
    lake.drop_table("db.old")  # the catalog's entry only: the files stay, for the v3 table
    lake.register_table("db.v3", location)
    table = open_iceberg("iceberg://lake/db.v3")
    assert table.info().format_version == 3
    assert _by_id(table.read().to_pylist()) == _by_id(data.to_pylist())
    _lookups(table, 12)
    advice = table.advise()
    assert advice.queries == 13 and advice.replayed == 13  # the whole read and the lookups
    snapshot, metadata = table.snapshot_id(), table.iceberg.metadata_location
    with pytest.raises(InvalidArgumentError, match="format v3 table: .* its properties commit through pyiceberg"):
        table.set_properties({"mergetree.clustering.columns": "site"})  # what advise(apply=True) commits
    with pytest.raises(InvalidArgumentError, match="format v3 table: .* its rewrites commit"):
        table.optimize()
    assert table.refresh().iceberg.metadata_location == metadata
    assert table.refresh().snapshot_id() == snapshot
    assert not list(Path(created.location().removeprefix("file://")).rglob("mt-*.parquet"))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_concurrent_commits_through_a_rewrite_lose_nothing(events, lake, monkeypatch, seed):
    """Other engines commit at random moments of a rewrite of a commit per partition — after a
    partition's files are planned, after its files are written, between the snapshot's check and
    the commit — appends, copy-on-write deletes, overwrites and merge-on-read equality deletes,
    several per rewrite.  The table then holds exactly what their commits leave: nothing lost,
    duplicated or brought back, and no file of a given-up partition left behind."""
    import random

    from pyiceberg.table import Table as PyicebergTable
    from pyiceberg.typedef import Record

    import mergetree.iceberg.rewrite as rewrite_module
    rng = random.Random(seed)
    monkeypatch.setattr(rewrite_module, "TASK_BYTES", 1)
    events.set_properties({"mergetree.clustering.columns": "site", "mergetree.clustering.strategy": "linear"})
    model = _sorted_rows(events)
    fired: list[str] = []
    busy: list[bool] = []

    def maybe_fire(phase: str) -> None:
        if busy or rng.random() < 0.5:
            return
        busy.append(True)
        try:
            k = len(fired)
            # pyiceberg's own deletes and overwrites plan with its reader, which refuses a table
            # that has equality deletes: after one, only appends and more equality deletes
            merged = any(f.startswith("equality") for f in fired)
            op = rng.choice(["append", "equality delete"] if merged else
                            ["append", "delete", "overwrite", "equality delete"])
            fired.append(f"{op} when {phase}")
            other = lake.load_table("db.events")
            if op == "append":
                extra = _events(seed=100 + k, n=200, first=10**6 + 1000 * k)
                other.append(extra)
                model[:] = model + extra.to_pylist()
            elif op in ("delete", "equality delete"):
                site = str(rng.randrange(40))
                if op == "delete":
                    other.delete(f"site = '{site}'")
                else:  # in spec 0 (unpartitioned): it applies to every partition
                    _commit_deletes(other, [_equality_deletes(other, pa.table({"site": [site]}), 0, Record())])
                model[:] = [r for r in model if r["site"] != site]
            else:
                from pyiceberg.expressions import And, GreaterThanOrEqual, LessThan
                february = And(GreaterThanOrEqual("day", "2024-02-01"), LessThan("day", "2024-03-01"))
                fresh = _events(seed=200 + k, n=100, first=2 * 10**6 + 1000 * k)
                fresh = fresh.set_column(2, "day", pa.array([dt.date(2024, 2, 10)] * 100))
                other.overwrite(fresh, overwrite_filter=february)
                model[:] = [r for r in model if not dt.date(2024, 2, 1) <= r["day"] < dt.date(2024, 3, 1)]
                model[:] = model + fresh.to_pylist()
        finally:
            busy.clear()

    real_write, real_commit, real_transaction = rewrite_module._write_group, rewrite_module._commit, \
        PyicebergTable.transaction
    monkeypatch.setattr(rewrite_module, "_write_group", lambda *a: (maybe_fire("planned"), real_write(*a))[1])
    monkeypatch.setattr(rewrite_module, "_commit", lambda *a: (maybe_fire("written"), real_commit(*a))[1])
    monkeypatch.setattr(PyicebergTable, "transaction", lambda self: (maybe_fire("checked"), real_transaction(self))[1])
    result = events.optimize()
    busy.append(True)  # no more commits: the checks below read
    context = f"seed {seed}: {fired}; {result}"
    assert len(fired) >= 2, context  # the seeds are chosen so that other commits do land mid-rewrite
    got = _by_id(events.refresh().read().to_pylist())
    assert got == _by_id(model), context
    assert len({r["id"] for r in got}) == len(got), context
    # a rewritten file another engine's delete then replaced is still in the older snapshots;
    # a file no snapshot references is one a given-up partition left behind
    referenced = {m.file_name for s in events.iceberg.snapshots() for m in events.data_files(snapshot=s.snapshot_id)}
    on_disk = {f"file://{p}" for p in Path(events.iceberg.location().removeprefix("file://")).rglob("mt-*.parquet")}
    assert on_disk <= referenced, context


def test_spark_executors_apply_equality_and_position_deletes(events, spark):
    """The executors read each task's delete files themselves (pyiceberg's reader refuses the
    equality deletes): the rewritten table holds exactly the live rows."""
    from pyiceberg.typedef import Record

    import mergetree.spark
    first = sorted(events.iceberg.scan().plan_files(), key=lambda t: t.file.file_path)[0]
    _commit_deletes(events.iceberg, [_position_deletes(events.iceberg, first.file, [0, 1, 2])])
    model = _sorted_rows(events)  # pyiceberg applies the position deletes
    _commit_deletes(events.iceberg, [_equality_deletes(events.iceberg, pa.table({"site": ["4", None]}), 0,
                                                       Record())])
    model = [r for r in model if r["site"] not in ("4", None)]
    result = mergetree.spark.optimize(spark, events.refresh().path, order="site")
    assert result.status == "committed" and result.rows == len(model), result
    assert _by_id(events.refresh().read().to_pylist()) == model
    assert result.delete_files_removed == 2 and _sorted_rows(events) == model  # pyiceberg reads it again
