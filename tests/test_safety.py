"""One test per item of the safety pass: cleanup never deletes a user's file, bad arguments
get clear errors before anything is written, malformed Arrow raises instead of crashing."""
from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
import time
import uuid

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from disk import table_files

import mergetree
from mergetree import (
    InvalidArgumentError,
    MalformedArrowError,
    SchemaMismatchError,
    Table,
    TableExistsError,
    TableNotFoundError,
    UnsupportedTypeError,
)

SCHEMA = pa.schema([("id", pa.int64()), ("city", pa.string()), ("visits", pa.int64())])


def make(tmp_path, **kwargs) -> Table:
    return Table.create(str(tmp_path / "t"), SCHEMA, primary_key="id", **kwargs)


def files_under(path) -> list[str]:
    return sorted(table_files(path))


# -- 1. cleanup deletes only what the table owns ------------------------------------------

def test_create_refuses_a_non_empty_foreign_directory(tmp_path):
    target = tmp_path / "t"
    target.mkdir()
    (target / "report.csv").write_text("a,b\n")
    with pytest.raises(TableExistsError, match="already holds files"):
        Table.create(str(target), SCHEMA, primary_key="id")
    assert files_under(target) == ["report.csv"]
    (tmp_path / "f").write_text("x")
    with pytest.raises(TableExistsError, match="is a file"):
        Table.create(str(tmp_path / "f"), SCHEMA, primary_key="id")
    empty = tmp_path / "empty"
    empty.mkdir()
    Table.create(str(empty), SCHEMA, primary_key="id")  # an empty directory is fine
    with pytest.raises(TableExistsError, match="a table already exists"):
        Table.create(str(empty), SCHEMA, primary_key="id")


@pytest.mark.parametrize("partitioned", [False, True])
def test_cleanup_never_deletes_foreign_files_whatever_the_age(tmp_path, partitioned):
    schema = SCHEMA.append(pa.field("p", pa.string()))
    t = Table.create(str(tmp_path / "t"), schema, primary_key=["id", "p"] if partitioned else "id",
                     partition_by="p" if partitioned else None, buckets=2)
    for i in range(3):
        t.write(pa.table({"id": [i, i + 10], "city": ["a", "b"], "visits": [1, 2], "p": ["x", "y"]}))
    root = tmp_path / "t"
    # (near misses of Paimon's names: `data-<uuid>-<n>.parquet`, `snapshot-<n>`, `manifest-<uuid>-<n>`)
    foreign = ["report.csv", "notes.md", "sub/keep.txt", "bucket-0/mine.parquet", "manifest/readme.json",
               "manifest/manifest-notes", "snapshot/snapshot-notes", "snapshot/snapshot-notes.json",
               "bucket-0/data-123.parquet", "bucket-0/data-123-0.parquet", "schema/extra.txt", "index/readme.txt",
               "bucket-1/data-01234567-89ab-cdef-0123-456789abcdeg-0.parquet"]
    for name in foreign:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("mine")
    old = time.time() - 10 * 86400
    for name in foreign:
        os.utime(root / name, (old, old))
    # a real orphan, old: the only thing cleanup may take
    orphan = f"{'p=x/' if partitioned else ''}bucket-0/data-{uuid.uuid4()}-0.parquet"  # Paimon's data file name
    (root / orphan).parent.mkdir(parents=True, exist_ok=True)
    (root / orphan).write_text("x")
    os.utime(root / orphan, (old, old))
    t.expire_snapshots(retain_last=1, older_than=0)
    removed = t.remove_orphan_files(older_than=0)
    assert removed == [orphan]
    for name in foreign:
        assert (root / name).read_text() == "mine", name
    assert t.read().num_rows == 6


def test_cli_orphan_cleanup_keeps_foreign_files(tmp_path):
    t = make(tmp_path)
    t.write(pa.table({"id": [1], "city": ["a"], "visits": [1]}))
    (tmp_path / "t" / "report.csv").write_text("keep")
    out = run_cli("expire", str(tmp_path / "t"), "--orphans", "--orphans-older-than-hours", "0")
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "t" / "report.csv").read_text() == "keep"


def test_a_manifest_naming_a_foreign_path_is_damage_not_a_deletion(tmp_path):
    t = make(tmp_path)
    t.write(pa.table({"id": [1], "city": ["a"], "visits": [1]}))
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    import fastavro
    manifest_dir = tmp_path / "t" / "manifest"
    damaged = 0
    for path in manifest_dir.iterdir():  # Paimon's Avro manifests (not the manifest lists)
        if path.name.startswith("manifest-list-") or not path.name.startswith("manifest-"):
            continue
        with path.open("rb") as f:
            reader = fastavro.reader(f)
            schema, codec, records = reader.writer_schema, reader.codec, list(reader)
        for r in records:
            r["_FILE"]["_FILE_NAME"] = "../victim.txt"
            damaged += 1
        with path.open("wb") as f:
            fastavro.writer(f, fastavro.parse_schema(schema), records, codec=codec)
    assert damaged == 1
    # in a fresh process (this one keeps the table's metadata, which Paimon never rewrites, cached)
    path = str(tmp_path / "t")
    check = (f"import mergetree\nt = mergetree.Table.open({path!r}, check=False)\n"
             f"for call in (lambda: mergetree.Table.open({path!r}), t.read,\n"
             "             lambda: t.remove_orphan_files(older_than=0)):\n"
             "    try:\n        call()\n    except mergetree.CorruptTableError as exc:\n        print('corrupt', exc)\n"
             "    else:\n        print('no error')\n")
    out = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("corrupt") == 3 and "victim.txt" in out.stdout, out.stdout
    assert victim.read_text() == "precious"


# -- 2. malformed Arrow never crashes (the fuzz test is tests/test_malformed_arrow.py) -----

def bad_strings() -> pa.Array:
    offsets = pa.py_buffer(np.array([0, 5, 3, 8], dtype=np.int32).tobytes())
    return pa.Array.from_buffers(pa.string(), 3, [None, offsets, pa.py_buffer(b"abcdefgh")])


def test_decreasing_offsets_raise_in_merge_bucket_hash_join_and_write(tmp_path):
    keys = bad_strings()
    with pytest.raises(MalformedArrowError, match="run 0 batch 0, column 'k'"):
        mergetree.merge([pa.table({"k": keys})], "k").read_all()
    with pytest.raises(MalformedArrowError):  # in a payload column too
        mergetree.merge([pa.table({"k": [1, 2, 3], "v": keys})], "k").read_all()
    from mergetree.codec.buckets import buckets_of
    from mergetree.codec.types import parse_type
    with pytest.raises(MalformedArrowError):
        buckets_of([keys], [parse_type("STRING")], 4)
    from mergetree import join_sorted
    with pytest.raises(MalformedArrowError):
        join_sorted(pa.table({"k": keys}), pa.table({"k": ["a"]}), "k")
    t = Table.create(str(tmp_path / "s"), pa.schema([("k", pa.string())]), primary_key="k")
    with pytest.raises(MalformedArrowError):
        t.write(pa.table({"k": keys}))
    assert t.latest_snapshot() is None


def test_the_core_checks_what_it_is_given():
    from mergetree import _core
    core = _core.MergeCore(1, [_core.KEY_CLASSES["int64"]], [8], False, False, "loser-tree",
                           _core.MODE_LAST, False, True, False, 16, 16)
    with pytest.raises(ValueError, match="does not match"):  # told int64, handed strings
        core.install_batch(0, pa.record_batch({"k": ["a"]}))
    with pytest.raises(TypeError, match="__arrow_c_array__"):
        core.install_batch(0, object())
    with pytest.raises(ValueError, match="columns"):
        core.install_batch(0, pa.record_batch({"k": [1], "j": [2]}))
    with pytest.raises(ValueError, match="neither a batch"):
        core.step()
    with pytest.raises(ValueError, match="capacities"):
        _core.MergeCore(1, [3], [8], False, False, "heap", 0, False, True, False, 0, 16)
    with pytest.raises(ValueError, match="out of order"):
        _core.last_valid_per_group(np.array([3, 1], np.int64), np.ones(3, np.uint8), np.zeros(0, np.int8), False)
    with pytest.raises(ValueError, match="beyond"):
        _core.live_groups_after_delete(np.array([5], np.int64), np.zeros(3, np.int8))
    with pytest.raises(ValueError, match="values has"):
        _core.fold_sum_product(np.array([1], np.int64), np.zeros(2, np.int64), np.ones(1, np.uint8),
                               np.zeros(0, np.int8), False)


# -- 3. damaged tables: see tests/test_damaged_tables.py; opening wrong paths here ---------

def test_open_names_what_is_wrong_with_the_path(tmp_path):
    with pytest.raises(TableNotFoundError, match="no Paimon table 'nope'.*no .*nope/schema"):
        Table.open(str(tmp_path / "nope"))
    (tmp_path / "file").write_text("x")
    with pytest.raises(TableNotFoundError, match="no Paimon table 'file'"):
        Table.open(str(tmp_path / "file"))
    with pytest.raises(TableNotFoundError, match="no Paimon table .*schema"):
        Table.open(str(tmp_path))
    assert not os.path.exists(tmp_path / "snapshot")  # opening creates nothing


# -- 4. strict, early validation ----------------------------------------------------------

@pytest.mark.parametrize("data, message", [
    (pa.table({"id": ["7"], "city": ["a"], "visits": [1]}), "casts only within a kind"),
    (pa.table({"id": [7], "city": [123], "visits": [1]}), "casts only within a kind"),
    ({"id": ["7"], "city": ["a"], "visits": [1]}, r"column 'id', row 0: '7' \(str\) is not a value of type int64"),
    ({"id": [7], "city": [123], "visits": [1]}, r"column 'city', row 0: 123 \(int\) is not a value of type string"),
    ([{"id": 7, "city": "a", "visits": 1, "extra": 1}], r"column\(s\) \['extra'\]"),
])
def test_values_are_never_parsed_or_formatted(tmp_path, data, message):
    t = make(tmp_path)
    with pytest.raises(SchemaMismatchError, match=message):
        t.write(data)
    assert t.latest_snapshot() is None


def test_python_and_pandas_values_convert_value_by_value(tmp_path):
    t = Table.create(str(tmp_path / "t"), pa.schema([("id", pa.int32()), ("v", pa.float64())]), primary_key="id")
    t.write({"id": [1, 2], "v": [1, 2.5]})
    t.write([{"id": 3, "v": 4}])
    pd = pytest.importorskip("pandas")
    t.write(pd.DataFrame({"id": [4], "v": [5.0]}, index=[42]))  # a non-default index is not a column
    with pytest.raises(SchemaMismatchError, match="too large"):
        t.write({"id": [2**40], "v": [1.0]})
    assert sorted(t.read().column("id").to_pylist()) == [1, 2, 3, 4]
    assert t.read().schema.names == ["id", "v"]


@pytest.mark.parametrize("kwargs, error, message", [
    ({"options": {"write-buffer-sise": "1 mb"}}, InvalidArgumentError, "did you mean 'write-buffer-size'"),
    ({"options": {"target-file-size": "ten"}}, InvalidArgumentError, "memory size"),
    ({"options": {"write-only": "yes"}}, InvalidArgumentError, "'true' or 'false'"),
    ({"options": {"num-sorted-run.compaction-trigger": "0"}}, InvalidArgumentError, "at least 1"),
    ({"merge_engine": "aggregate", "options": {"fields.visits.aggregate-function": "summ"}},
     InvalidArgumentError, "did you mean 'sum'"),
    ({"merge_engine": "aggregate", "options": {"fields.city.aggregate-function": "sum"}},
     UnsupportedTypeError, "cannot apply"),
    ({"merge_engine": "aggregate", "options": {"fields.nope.aggregate-function": "sum"}},
     InvalidArgumentError, "lacks"),
    ({"options": {"fields.visits.aggregate-function": "sum"}}, InvalidArgumentError, "needs merge_engine"),
    ({"options": ["write-only"]}, InvalidArgumentError, "dict"),
    ({"buckets": "4"}, InvalidArgumentError, "buckets must be an integer"),
    ({"partition_by": 3}, InvalidArgumentError, "partition_by must be"),
])
def test_bad_options_and_arguments_fail_at_create(tmp_path, kwargs, error, message):
    with pytest.raises(error, match=message):
        make(tmp_path, **kwargs)
    assert not (tmp_path / "t").exists()


def test_unorderable_primary_key_fails_at_create(tmp_path):
    schema = pa.schema([("k", pa.list_(pa.int64())), ("v", pa.int64())])
    with pytest.raises(UnsupportedTypeError, match="column .k. has type .*does not support primary keys"):
        Table.create(str(tmp_path / "t"), schema, primary_key="k")
    assert not (tmp_path / "t").exists()


def test_read_and_plan_check_their_arguments(tmp_path):
    t = make(tmp_path, buckets=2)
    t.write(pa.table({"id": [1, 2], "city": ["a", "b"], "visits": [1, 2]}))
    assert t.read(columns="id").column_names == ["id"]  # a single name is a column, not letters
    with pytest.raises(InvalidArgumentError, match="no column 'nope'"):
        t.read(columns=["nope"])
    for call in (t.plan, t.read):
        with pytest.raises(InvalidArgumentError, match="lacks"):
            call(filter=("nope", "=", 1))
    with pytest.raises(InvalidArgumentError, match="list of values"):
        t.read(filter=("id", "in", 1))
    with pytest.raises(InvalidArgumentError, match="is not a int64 value"):
        t.read(filter=("id", "=", "abc"))
    with pytest.raises(InvalidArgumentError, match="whole number"):
        t.read(filter=("id", "=", 1.5))
    with pytest.raises(InvalidArgumentError, match="is null"):
        t.read(filter=("city", "in", [None]))
    with pytest.raises(InvalidArgumentError, match="does not apply"):
        t.read(filter=pc.field("nope") == 1)
    with pytest.raises(InvalidArgumentError, match="snapshot must be"):
        t.read(snapshot=1.5)
    with pytest.raises(mergetree.SnapshotNotFoundError, match="no tag '1'"):  # a string names a tag
        t.read(snapshot="1")
    with pytest.raises(mergetree.SnapshotNotFoundError, match="has no snapshot 99 "):
        t.read(snapshot=99)
    with pytest.raises(InvalidArgumentError, match="threads"):
        t.read(threads=0)
    assert t.read(filter=("id", "=", 2.0)).column("id").to_pylist() == [2]


def test_merge_arguments_are_checked():
    run = pa.table({"id": [1, 2], "v": [1, 2]})
    for kwargs, message in [
        ({"key": 1}, "key must be a column name"),
        ({"key": "id", "engine": "aggregate", "aggregations": ["sum"]}, "aggregations must map"),
        ({"key": "id", "batch_size": True}, "batch_size"),
        ({"key": "id", "keep_deletes": "yes"}, "keep_deletes"),
        ({"key": "id", "sequence": 3}, "sequence must be"),
    ]:
        with pytest.raises(InvalidArgumentError, match=message):
            mergetree.merge([run], **kwargs)
    with pytest.raises(InvalidArgumentError, match="list of sorted runs"):
        mergetree.merge(5, "id")


@pytest.mark.parametrize("older_than", [0, 0.0, dt.timedelta(0), 3600])
def test_durations_are_timedeltas_or_seconds(tmp_path, older_than):
    t = make(tmp_path)
    for i in range(3):
        t.write(pa.table({"id": [i], "city": ["a"], "visits": [1]}))
    t.remove_orphan_files(older_than=older_than)
    expired = t.expire_snapshots(retain_last=1, older_than=older_than)
    assert expired == ([] if older_than == 3600 else [1, 2])
    for bad in (-1, "1h", dt.timedelta(seconds=-1)):
        with pytest.raises(InvalidArgumentError, match="older_than"):
            t.remove_orphan_files(older_than=bad)


# -- 5. the command line -------------------------------------------------------------------

def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mergetree", *args], capture_output=True, text=True)


def test_cli_errors_are_one_line_with_a_non_zero_status(tmp_path):
    t = make(tmp_path)
    t.write(pa.table({"id": [1, 2, 3], "city": ["a", None, "c"], "visits": [1, 2, 3]}))
    path = str(tmp_path / "t")
    cases = [
        (("read", str(tmp_path / "nope")), "there is no Paimon table 'nope'"),
        (("read", path, "--snapshot", "999"), "has no snapshot 999 (snapshots: 1..1)"),
        (("read", path, "--filter", "id = abc"), "cannot read 'abc' as int64"),
        (("read", path, "--limit", "-1"), "must be 0 or more"),
        (("expire", path, "--older-than-hours", "-1"), "must be 0 or more hours"),
        (("expire", path, "--retain", "0"), "must be 1 or more"),
        (("read", path, "--filter", "id ~ 3"), "cannot read filter"),
    ]
    for args, message in cases:
        out = run_cli(*args)
        assert out.returncode != 0, args
        assert message in out.stderr, (args, out.stderr)
        assert "Traceback" not in out.stderr, args
    debug = run_cli("--debug", "read", str(tmp_path / "nope"))
    assert debug.returncode != 0 and "Traceback" in debug.stderr


def test_cli_filters_limits_and_version(tmp_path):
    t = make(tmp_path)
    t.write(pa.table({"id": [1, 2, 3], "city": ["a b", None, "c"], "visits": [1, 2, 3]}))
    path = str(tmp_path / "t")
    for text, count in [("city is null", 1), ("city is not null", 2), ("id in (1,2)", 2), ("id in 1,3", 2),
                        ("id not in (1)", 2), ("city = 'a b'", 1), ("id >= 2", 2)]:
        out = run_cli("read", path, "--filter", text, "--limit", "0")
        assert out.returncode == 0, (text, out.stderr)
        assert out.stdout.strip() == f"({count} row{'' if count == 1 else 's'})", (text, out.stdout)
    out = run_cli("read", path, "--limit", "1")
    assert "... 2 more rows" in out.stdout and "(3 rows)" in out.stdout
    version = run_cli("--version")
    assert version.returncode == 0 and version.stdout.strip() == f"mergetree {mergetree.__version__}"
    help_text = run_cli("expire", "--help").stdout
    assert "snapshot.num-retained.min" in help_text and "Paimon's 10" in help_text  # Paimon's retention
