"""`Table.open` on Apache Paimon tables: a table pypaimon made (``W/db.db/name``), one Java
made (at a path of its own), on local disk and on the S3 server; write, delete, read, scan,
compact, changes and info through `Table` as `mergetree.paimon` does them, pypaimon reading the
result; mergetree's own tables open as before."""
from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import pyarrow as pa
from paimon_fixtures import needs_pypaimon, pypaimon_read, write_paimon

import mergetree.paimon as mp
from mergetree import Table

JAVA = Path(__file__).resolve().parent / "data" / "java_paimon"
SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("cnt", pa.int64())])


def _by_id(t: pa.Table) -> dict:
    return {r["id"]: (r["name"], r["cnt"]) for r in t.to_pylist()}


@needs_pypaimon
def test_a_pypaimon_table_opened_as_a_table(tmp_path):
    wh, work = tmp_path / "wh", tmp_path / "work"
    write_paimon(work, wh, "db.t", [pa.table({"id": pa.array([1, 2, 3], pa.int64()), "name": ["a", "b", "c"],
                                              "cnt": pa.array([1, 2, 3], pa.int64())})], ["id"], [],
                 {"bucket": "2", "num-sorted-run.compaction-trigger": "2"})
    t = Table.open(wh / "db.db" / "t")
    assert isinstance(t, Table) and "Paimon" in repr(t) and t.schema.names == ["id", "name", "cnt"]
    start = t.latest_snapshot()
    result = t.write(pa.table({"id": pa.array([2, 4], pa.int64()), "name": ["B", "d"],
                               "cnt": pa.array([20, 4], pa.int64())}))
    assert result.id == start.id + 1
    t.delete({"id": [1]})
    expected = {2: ("B", 20), 3: ("c", 3), 4: ("d", 4)}
    assert _by_id(t.read()) == expected
    assert _by_id(t.scan().read_all()) == expected
    assert _by_id(t.read(filter=[("id", "=", 4)])) == {4: ("d", 4)}
    assert t.read(order_by=[("cnt", "desc")], limit=1).column("id").to_pylist() == [2]
    assert _by_id(pypaimon_read(wh, "db.t", work)) == expected
    change = t.changes(start.id).read_all().to_pylist()
    assert {(r["id"], r["_row_kind"]) for r in change} == {(1, "-D"), (2, "-U"), (2, "+U"), (4, "+I")}
    t.compact(full=True)
    assert t.info().max_sorted_runs == 1 and _by_id(t.read()) == expected
    assert _by_id(pypaimon_read(wh, "db.t", work)) == expected
    assert t.build_indexes() is None  # no lever declared: nothing to build
    assert t.optimize() is None  # a primary-key table's optimize is a full compaction: it is one run already
    # the query log and the advisor: logged reads of the pypaimon table, advised on
    assert t.advise().queries == 0  # logging is off unless asked for
    t.set_options({"query-log.enabled": True})
    for i in range(6):
        t.read(filter=[("cnt", ">=", i)])
    advice = t.advise()
    assert advice.queries == 6 and advice.replayed == 6
    assert Table.open(wh / "db.db" / "t" / "queries").read().num_rows == 6  # a Paimon table of its own
    assert _by_id(pypaimon_read(wh, "db.t", work)) == expected  # pypaimon reads past mergetree's options
    assert t.expire_queries("1s").rows == 0


def test_a_java_table_at_a_path_of_its_own(tmp_path):
    path = tmp_path / "orders"  # no warehouse around it
    shutil.copytree(JAVA / "parquet" / "pk_table_scan_and_read_mor.db" / "pk_table_scan_and_read_mor", path)
    t = Table.open(path)
    before = t.read()
    assert before.equals(mp.read(str(JAVA / "parquet"), "pk_table_scan_and_read_mor.pk_table_scan_and_read_mor"))
    t.write({"f0": ["Zed"], "f1": [10], "f2": [0], "f3": [9.5]})
    after = t.read()
    assert after.num_rows == before.num_rows + 1
    assert [r for r in after.to_pylist() if r["f0"] == "Zed"] == [{"f0": "Zed", "f1": 10, "f2": 0, "f3": 9.5}]


@needs_pypaimon
def test_a_paimon_table_on_s3_opened_written_and_compacted(s3_server, tmp_path):
    from test_paimon_s3 import Pypaimon

    uri, opts = f"s3://lake/wh-{uuid.uuid4().hex[:10]}", s3_server.options()
    driver = Pypaimon(s3_server, tmp_path / "work")
    first = pa.table({"id": pa.array([1, 2], pa.int64()), "region": ["r0", "r1"], "name": ["a", "b"]})
    driver.write(uri, "db.t", [first], {"bucket": "2"}, partition_keys=("region",))
    driver.run()
    t = Table.open(f"{uri}/db.db/t", storage_options=opts)
    # the primary key is (region, name, id) (test_paimon_s3's): ("r1", "b", 2) is written again, ("r0", "c", 3) is new
    result = t.write(pa.table({"id": pa.array([2, 3], pa.int64()), "region": ["r1", "r0"], "name": ["b", "c"]}))
    assert result is not None
    t.delete(pa.table({"id": pa.array([1], pa.int64()), "region": ["r0"], "name": ["a"]}))
    expected = [("r0", "c", 3), ("r1", "b", 2)]

    def rows(table: pa.Table) -> list:
        return sorted((r["region"], r["name"], r["id"]) for r in table.to_pylist())
    assert rows(t.read()) == expected
    t.compact(full=True)
    assert t.info().max_sorted_runs == 1
    driver.read(uri, "db.t")
    (theirs,) = driver.run()
    assert rows(theirs) == expected
    # its services on the object store: options altered, old snapshots expired, no orphans left
    t.set_options({"snapshot.num-retained.min": "1"})
    assert t.expire_snapshots(retain_last=1, older_than=0)
    storage = t.directory.storage
    names = {info.path for info in storage.list("")}
    assert storage.read("snapshot/EARLIEST").decode() == str(t.latest_snapshot().id)
    assert not t.remove_orphan_files(older_than=0) and {info.path for info in storage.list("")} == names
    assert rows(Table.open(f"{uri}/db.db/t", storage_options=opts).read()) == expected
    driver.read(uri, "db.t")
    (theirs,) = driver.run()
    assert rows(theirs) == expected
