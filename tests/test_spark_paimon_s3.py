"""Spark on Paimon warehouses in a real S3 server (moto's, tests/s3_server.py): tables written
there by pypaimon are read by `spark.read.format("mergetree").option("paimon.warehouse",
"s3://...")` with the storage options as data source options, as `mergetree.paimon.read` reads
them; `mergetree.spark.compact_paimon` compacts one on the server (tasks write the store,
journal on it, the driver commits by conditional create) and pypaimon reads the compacted
table back; a read-only user's compaction fails with one error naming the table and leaves
nothing behind; the secret key is in no object written and no error message."""
from __future__ import annotations

import re
import uuid

import pytest
from paimon_fixtures import needs_pypaimon, rows
from test_paimon import _commits, model
from test_paimon_s3 import KEY, OPTIONS, Pypaimon

import mergetree.paimon as mp

pytestmark = needs_pypaimon

READ, COMPACTED = "db.t", "db.c"


@pytest.fixture(autouse=True)
def _no_query_log(monkeypatch):
    monkeypatch.setenv("MERGETREE_QUERY_LOG", "0")


@pytest.fixture(scope="module")
def warehouse(s3_server, tmp_path_factory):
    """A warehouse on the server with two pypaimon tables of four commits each: db.t (read
    only by the tests) and db.c (compacted by one test)."""
    uri = f"s3://lake/spark-paimon-{uuid.uuid4().hex[:10]}"
    data = {READ: _commits(91, 4, 150, True, True), COMPACTED: _commits(92, 4, 150, True, True)}
    driver = Pypaimon(s3_server, tmp_path_factory.mktemp("spark-paimon-s3"))
    for name, commits in data.items():
        driver.write(uri, name, commits, OPTIONS)
    driver.run()
    return {"uri": uri, "data": data, "driver": driver}


def _options(s3_server, **overrides) -> dict[str, str]:
    return {k: str(v) for k, v in s3_server.options(**overrides).items()}


def _load(spark, uri: str, name: str, options: dict[str, str], **more: str):
    import mergetree.spark
    mergetree.spark.register(spark)
    return spark.read.format("mergetree").option("paimon.warehouse", uri).options(**options, **more).load(name)


def _objects(s3_server, uri: str) -> dict[str, bytes]:
    client = s3_server.client("s3", s3_server.access_key_id, s3_server.secret_access_key)
    out = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket="lake", Prefix=uri[len("s3://lake/"):] + "/"):
        for item in page.get("Contents", []):
            out[item["Key"]] = client.get_object(Bucket="lake", Key=item["Key"])["Body"].read()
    return out


def test_spark_reads_a_pypaimon_table_on_s3_as_mergetree_paimon_does(spark, s3_server, warehouse) -> None:
    uri, opts = warehouse["uri"], _options(s3_server)
    expected = model("deduplicate", warehouse["data"][READ], KEY)
    ours = mp.read(uri, READ, storage_options=opts)
    assert rows(ours, KEY) == expected and len(expected) > 30
    assert rows(_load(spark, uri, READ, opts).toArrow(), KEY) == expected

    # a pushed filter (pyspark <= 4.3 takes it only with pushFilters), a projection, time travel
    where = "region = 'r1' and id < 60"
    filtered = _load(spark, uri, READ, opts, pushFilters="true").where(where).toArrow()
    assert filtered.num_rows > 0
    assert rows(filtered, KEY) == rows(mp.read(uri, READ, filter=[("region", "=", "r1"), ("id", "<", 60)],
                                               storage_options=opts), KEY)
    projected = _load(spark, uri, READ, opts, columns="id, region, name").toArrow()
    assert projected.column_names == ["id", "region", "name"]
    assert rows(projected, KEY) == rows(mp.read(uri, READ, columns=["id", "region", "name"], storage_options=opts),
                                        KEY)
    assert rows(_load(spark, uri, READ, opts, snapshot="2").toArrow(), KEY) == \
        model("deduplicate", warehouse["data"][READ][:2], KEY)

    # a wrong secret: one error naming the warehouse, the secret in no message
    secret = "recognizable-secret-" + uuid.uuid4().hex
    with pytest.raises(Exception, match=re.escape(uri)) as raised:
        _load(spark, uri, READ, _options(s3_server, aws_secret_access_key=secret)).collect()
    assert secret not in str(raised.value) and secret not in repr(raised.value)


def test_compact_paimon_on_s3_then_pypaimon_reads_the_same_rows(spark, s3_server, warehouse) -> None:
    import mergetree.spark
    from mergetree.errors import StorageAccessError

    uri, opts = warehouse["uri"], _options(s3_server)
    expected = model("deduplicate", warehouse["data"][COMPACTED], KEY)
    before = mp.info(uri, COMPACTED, storage_options=opts)
    assert before.max_sorted_runs > 1 and before.snapshot_id == 4

    # the read-only user plans, its tasks cannot write: one error naming the table, nothing left
    reader = _options(s3_server, aws_access_key_id=s3_server.read_only_key_id,
                      aws_secret_access_key=s3_server.read_only_secret)
    objects = _objects(s3_server, uri)
    with pytest.raises(StorageAccessError, match=re.escape(f"{uri}/db.db/c")) as raised:
        mergetree.spark.compact_paimon(spark, uri, COMPACTED, full=True, storage_options=reader)
    for text in (str(raised.value), repr(raised.value), str(raised.value.__cause__)):
        assert s3_server.read_only_secret not in text and s3_server.secret_access_key not in text
    assert _objects(s3_server, uri) == objects

    snapshot = mergetree.spark.compact_paimon(spark, uri, COMPACTED, full=True, storage_options=opts)
    assert snapshot == 5
    after = mp.info(uri, COMPACTED, storage_options=opts)
    assert after.max_sorted_runs == 1 and after.snapshots[-1].commit_kind == "COMPACT"
    written = {k: v for k, v in _objects(s3_server, uri).items() if k not in objects}
    assert any("/bucket-" in k and k.endswith(".parquet") for k in written)
    assert any(k.endswith("/snapshot/snapshot-5") for k in written)
    assert not [k for k in written if ".mergetree-compact-" in k]  # the tasks' journals are gone
    everything = _objects(s3_server, uri)
    assert not [k for k, v in everything.items() if s3_server.secret_access_key.encode() in v]

    driver = warehouse["driver"]
    first = driver.read(uri, COMPACTED)
    (theirs,) = driver.run()
    assert rows(theirs, KEY) == expected == rows(mp.read(uri, COMPACTED, storage_options=opts), KEY)
    assert rows(_load(spark, uri, COMPACTED, opts).toArrow(), KEY) == expected
    assert first == 0
    # nothing left to do
    assert mergetree.spark.compact_paimon(spark, uri, COMPACTED, full=True, storage_options=opts) is None
