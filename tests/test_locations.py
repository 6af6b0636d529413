"""A table or warehouse location is a local path or a file:// URI; any other URI is refused
naming it, with nothing written (taken as a path, `s3://lake/t` used to become a local
directory `s3:/lake/t` beside the caller)."""
from __future__ import annotations

import os

import pyarrow as pa
import pytest

import mergetree
from mergetree import InvalidArgumentError, Table

SCHEMA = pa.schema([("id", pa.int64())])
URIS = ["s3://lake/events", "S3A://lake/events", "gs://bucket/t", "az://container/t", "abfss://c@acct.dfs/t",
        "hdfs://namenode:8020/t", "ftp://host/t"]


@pytest.mark.parametrize("uri", URIS)
def test_an_object_store_uri_is_refused_and_nothing_is_written(tmp_path, monkeypatch, uri):
    monkeypatch.chdir(tmp_path)
    for call in (lambda: Table.create(uri, SCHEMA), lambda: Table.open(uri), lambda: Table.repair(uri),
                 lambda: mergetree.paimon.read(uri, "db.t")):
        with pytest.raises(InvalidArgumentError, match=uri.split("://")[0] + "://") as caught:
            call()
        assert uri in str(caught.value) and "nothing was written" in str(caught.value)
    assert os.listdir(tmp_path) == []


def test_a_file_uri_names_the_local_path(tmp_path):
    t = Table.create(f"file://{tmp_path}/t", SCHEMA)
    t.write({"id": [1, 2]})
    assert t.path == str(tmp_path / "t")
    assert Table.open(f"file://{tmp_path}/t").read().num_rows == 2
    with pytest.raises(InvalidArgumentError, match="absolute"):
        Table.open("file://relative/t")
