"""A table location is a local path, a file:// URI or an object-store URI resolved by the
storage layer; a Paimon warehouse (not on the storage layer yet) is a local path or a file://
URI.  An unknown scheme is refused naming it, with nothing written (taken as a path,
`s3://lake/t` used to become a local directory `s3:/lake/t` beside the caller)."""
from __future__ import annotations

import os

import pyarrow as pa
import pytest

import mergetree
from mergetree import InvalidArgumentError, Table

SCHEMA = pa.schema([("id", pa.int64())])


@pytest.mark.parametrize("uri", ["ftp://host/t", "foo://bucket/t", "s3:/lake/t", "s3:lake"])
def test_an_unknown_or_mistyped_warehouse_scheme_is_refused_and_nothing_is_written(tmp_path, monkeypatch, uri):
    """Warehouses on object stores are read (tests/test_paimon_s3.py); a scheme no store knows,
    or a known one missing its slashes, is refused naming it, and never becomes a local folder."""
    monkeypatch.chdir(tmp_path)
    for call in (lambda: mergetree.paimon.read(uri, "db.t"), lambda: mergetree.paimon.compact(uri, "db.t")):
        with pytest.raises(InvalidArgumentError) as caught:
            call()
        assert uri.split(":")[0] in str(caught.value)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("uri", ["ftp://host/t", "foo://bucket/t", "s3:/lake/t", "s3:lake"])
def test_an_unknown_or_mistyped_scheme_is_refused_for_tables(tmp_path, monkeypatch, uri):
    monkeypatch.chdir(tmp_path)
    for call in (lambda: Table.create(uri, SCHEMA), lambda: Table.open(uri), lambda: Table.repair(uri)):
        with pytest.raises(InvalidArgumentError) as caught:
            call()
        assert uri.split(":")[0] in str(caught.value)
    assert os.listdir(tmp_path) == []


def test_a_bad_storage_option_is_refused_before_anything(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidArgumentError, match="no_such_key"):
        Table.create("s3://lake/t", SCHEMA, storage_options={"no_such_key": "x"})
    with pytest.raises(InvalidArgumentError, match="does not apply to a local path"):
        Table.create(tmp_path / "t", SCHEMA, storage_options={"aws_region": "x"})
    assert os.listdir(tmp_path) == []


def test_a_file_uri_names_the_local_path(tmp_path):
    t = Table.create(f"file://{tmp_path}/t", SCHEMA)
    t.write({"id": [1, 2]})
    assert t.path == str(tmp_path / "t")
    assert Table.open(f"file://{tmp_path}/t").read().num_rows == 2
    with pytest.raises(InvalidArgumentError, match="file:///"):
        Table.open("file://relative/t")
