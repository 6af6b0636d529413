"""Paimon tables whose manifests are ORC (``manifest.format=orc``, Paimon 2.0 and older): read
like their Avro originals and the row model, compacted with ORC manifests and lists written back,
mixed tables (Avro manifests from before an ALTER, ORC after), damage named.

pypaimon reads and writes Avro manifests only, so the ORC tables are built from Paimon's
specification: a real pypaimon-written table whose manifests and manifest lists are converted
to ORC with the Paimon field types as Java's ORC writer maps them (STRING -> string, BYTES ->
binary, TINYINT -> tinyint, INT -> int, BIGINT -> bigint,
TIMESTAMP(3) -> timestamp, ROW -> struct, ARRAY -> list; `_VERSION` first; Java 2.0's field
sets, so pypaimon's extra fields are dropped), the files' sizes in the manifest lists and the
snapshots updated, and ``manifest.format=orc`` set in the table's schema.  Index manifests
(no pypaimon write makes one) go through the codec's round trip, in both formats."""
from __future__ import annotations

import datetime as dt
import io
import json
import shutil
from pathlib import Path

import fastavro
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from paimon_fixtures import needs_pypaimon, pypaimon_read, rows, write_paimon
from pyarrow import orc
from test_paimon import _commits, _key, _options, model

import mergetree.paimon as mp
from mergetree.codec.manifest_files import ROW_TYPES, blank, read_metadata, write_metadata
from mergetree.errors import CorruptTableError, InvalidArgumentError
from mergetree.table.objects import storage_for
from mergetree.table.paimon.metadata import PaimonTable

# Paimon's row types as ORC (Arrow) types, written out from the specification
_STATS = pa.struct([("_MIN_VALUES", pa.binary()), ("_MAX_VALUES", pa.binary()),
                    ("_NULL_COUNTS", pa.list_(pa.int64()))])
_DATA_FILE = pa.struct([
    ("_FILE_NAME", pa.string()), ("_FILE_SIZE", pa.int64()), ("_ROW_COUNT", pa.int64()), ("_MIN_KEY", pa.binary()),
    ("_MAX_KEY", pa.binary()), ("_KEY_STATS", _STATS), ("_VALUE_STATS", _STATS), ("_MIN_SEQUENCE_NUMBER", pa.int64()),
    ("_MAX_SEQUENCE_NUMBER", pa.int64()), ("_SCHEMA_ID", pa.int64()), ("_LEVEL", pa.int32()),
    ("_EXTRA_FILES", pa.list_(pa.string())), ("_CREATION_TIME", pa.timestamp("ns")), ("_DELETE_ROW_COUNT", pa.int64()),
    ("_EMBEDDED_FILE_INDEX", pa.binary()), ("_FILE_SOURCE", pa.int8()), ("_VALUE_STATS_COLS", pa.list_(pa.string())),
    ("_EXTERNAL_PATH", pa.string()), ("_FIRST_ROW_ID", pa.int64()), ("_WRITE_COLS", pa.list_(pa.string())),
])
ORC_TYPES = {
    "manifest": pa.schema([("_VERSION", pa.int32()), ("_KIND", pa.int8()), ("_PARTITION", pa.binary()),
                           ("_BUCKET", pa.int32()), ("_TOTAL_BUCKETS", pa.int32()), ("_FILE", _DATA_FILE)]),
    "manifest list": pa.schema([
        ("_VERSION", pa.int32()), ("_FILE_NAME", pa.string()), ("_FILE_SIZE", pa.int64()),
        ("_NUM_ADDED_FILES", pa.int64()), ("_NUM_DELETED_FILES", pa.int64()), ("_PARTITION_STATS", _STATS),
        ("_SCHEMA_ID", pa.int64()), ("_MIN_BUCKET", pa.int32()), ("_MAX_BUCKET", pa.int32()),
        ("_MIN_LEVEL", pa.int32()), ("_MAX_LEVEL", pa.int32()), ("_MIN_ROW_ID", pa.int64()),
        ("_MAX_ROW_ID", pa.int64())]),
    "index manifest": pa.schema([
        ("_VERSION", pa.int32()), ("_KIND", pa.int8()), ("_PARTITION", pa.binary()), ("_BUCKET", pa.int32()),
        ("_INDEX_TYPE", pa.string()), ("_FILE_NAME", pa.string()), ("_FILE_SIZE", pa.int64()),
        ("_ROW_COUNT", pa.int64()),
        ("_DELETIONS_VECTORS_RANGES", pa.list_(pa.struct([("f0", pa.string()), ("f1", pa.int32()),
                                                          ("f2", pa.int32()), ("_CARDINALITY", pa.int64())]))),
        ("_EXTERNAL_PATH", pa.string())]),
}
NAME = "db.t"


def _kind(name: str) -> str:
    return "manifest list" if name.startswith("manifest-list-") else "index manifest" \
        if name.startswith("index-manifest-") else "manifest"


def _orc_bytes(records: list[dict], kind: str) -> bytes:
    sink = io.BytesIO()
    schema = ORC_TYPES[kind]
    orc.write_table(pa.Table.from_pylist(records, schema=schema), sink, compression="zstd")
    return sink.getvalue()


def _avro_records(path: Path) -> list[dict]:
    with path.open("rb") as f:
        return list(fastavro.reader(f))


def to_orc(table_dir: Path, only: set[str] | None = None, set_option: bool = True) -> None:
    """Convert the table's metadata files (those named in `only`, or all) to ORC, manifests
    first so that the lists record their new sizes, then the lists and the snapshots' sizes."""
    manifest = table_dir / "manifest"
    names = sorted(p.name for p in manifest.iterdir() if only is None or p.name in only)
    sizes: dict[str, int] = {}
    for name in [n for n in names if _kind(n) != "manifest list"]:
        data = _orc_bytes(_avro_records(manifest / name), _kind(name))
        (manifest / name).write_bytes(data)
        sizes[name] = len(data)
    for name in [n for n in names if _kind(n) == "manifest list"]:
        records = [dict(r, _FILE_SIZE=sizes.get(r["_FILE_NAME"], r["_FILE_SIZE"])) for r in
                   _avro_records(manifest / name)]
        data = _orc_bytes(records, "manifest list")
        (manifest / name).write_bytes(data)
        sizes[name] = len(data)
    for snap in (table_dir / "snapshot").glob("snapshot-*"):
        d = json.loads(snap.read_text())
        for field in ("baseManifestList", "deltaManifestList", "indexManifest"):
            if d.get(field) in sizes and f"{field}Size" in d:
                d[f"{field}Size"] = sizes[d[field]]
        snap.write_text(json.dumps(d))
    if set_option:
        _set_option(table_dir, "manifest.format", "orc")


def _set_option(table_dir: Path, key: str, value: str) -> None:
    """In every schema file: the option as the table was created with it."""
    for path in (table_dir / "schema").glob("schema-*"):
        d = json.loads(path.read_text())
        d["options"][key] = value
        path.write_text(json.dumps(d))


def _formats(table_dir: Path) -> dict[str, str]:
    return {p.name: p.read_bytes()[:3].decode("latin-1") for p in (table_dir / "manifest").iterdir()}


def _table(tmp_path: Path, seed: int = 5, count: int = 6) -> tuple[Path, Path, list[pa.Table]]:
    """A partitioned deduplicate table with deletes written by pypaimon, and an ORC copy."""
    wh, work = tmp_path / "avro", tmp_path / "work"
    commits = _commits(seed, count, 120, True, True)
    write_paimon(work, wh, NAME, commits, _key(True), ["region"], _options("deduplicate", 2, True, False))
    orc_wh = tmp_path / "orc"
    shutil.copytree(wh, orc_wh)
    return wh, orc_wh, commits


def _dir(wh: Path) -> Path:
    return wh / "db.db" / "t"


def _comparable(record: dict) -> dict:
    """A record with its timestamps as UTC instants (Avro's are zoned, ORC's local) and without
    the field only pypaimon writes (not in Java's field set, so not in the ORC files)."""
    out = {}
    for k, v in record.items():
        if k == "_WRITE_COLS_SEQUENCES":
            continue
        if isinstance(v, dict):
            v = _comparable(v)
        elif isinstance(v, dt.datetime) and v.tzinfo is not None:
            v = v.astimezone(dt.timezone.utc).replace(tzinfo=None)
        out[k] = v
    return out


@needs_pypaimon
def test_orc_manifests_read_like_the_avro_original(tmp_path: Path) -> None:
    wh, orc_wh, commits = _table(tmp_path)
    to_orc(_dir(orc_wh))
    assert set(_formats(_dir(orc_wh)).values()) == {"ORC"}
    key = _key(True)
    expected = model("deduplicate", commits, key)
    assert rows(mp.read(str(orc_wh), NAME), key) == expected == rows(mp.read(str(wh), NAME), key)
    for snapshot in (1, 3):  # time travel
        assert rows(mp.read(str(orc_wh), NAME, snapshot=snapshot), key) == \
            model("deduplicate", commits[:snapshot], key)
    assert rows(mp.read(str(orc_wh), NAME, filter=("id", "<", 30)), key) == [r for r in expected if r["id"] < 30]
    # the same live files, entry for entry
    a, o = PaimonTable.open(str(wh), NAME), PaimonTable.open(str(orc_wh), NAME)
    avro_files = [_comparable(f.record) for f in a.live_files(a.latest_snapshot())]
    orc_files = [_comparable(f.record) for f in o.live_files(o.latest_snapshot())]
    assert orc_files == avro_files and len(orc_files) > 2


@needs_pypaimon
def test_compaction_writes_orc_metadata_back(tmp_path: Path) -> None:
    wh, orc_wh, commits = _table(tmp_path, seed=9)
    to_orc(_dir(orc_wh))
    key = _key(True)
    expected = model("deduplicate", commits, key)
    new = mp.compact(str(orc_wh), NAME, full=True)
    assert new is not None and mp.compact(str(wh), NAME, full=True) == new
    table_dir = _dir(orc_wh)
    snap = json.loads((table_dir / "snapshot" / f"snapshot-{new}").read_text())
    assert set(_formats(table_dir).values()) == {"ORC"}
    for field in ("baseManifestList", "deltaManifestList"):
        path = table_dir / "manifest" / snap[field]
        assert path.stat().st_size == snap[f"{field}Size"]
        assert orc.ORCFile(str(path)).schema == ORC_TYPES["manifest list"]  # the table's own schema
    delta = orc.read_table(str(table_dir / "manifest" / snap["deltaManifestList"])).to_pylist()
    new_manifest = table_dir / "manifest" / delta[0]["_FILE_NAME"]
    assert orc.ORCFile(str(new_manifest)).schema == ORC_TYPES["manifest"]
    assert delta[0]["_FILE_SIZE"] == new_manifest.stat().st_size
    assert rows(mp.read(str(orc_wh), NAME), key) == expected == rows(mp.read(str(wh), NAME), key)
    assert rows(pypaimon_read(wh, NAME, tmp_path / "work"), key) == expected  # the Avro twin, by pypaimon
    assert mp.info(str(orc_wh), NAME).max_sorted_runs == 1
    # time travel to before the compaction: ORC files written by the converter, not by mergetree
    assert rows(mp.read(str(orc_wh), NAME, snapshot=new - 1), key) == expected


@needs_pypaimon
def test_older_avro_and_newer_orc_manifests_read_by_their_magic(tmp_path: Path) -> None:
    """An ALTER to ORC leaves the older manifests Avro: Java, trusting the option, could not read
    them; mergetree reads every file by its magic bytes as long as some schema of the table names
    its format, and compaction writes the option's format."""
    wh, orc_wh, commits = _table(tmp_path, seed=13)
    table_dir = _dir(orc_wh)
    latest = json.loads((table_dir / "snapshot" / "snapshot-6").read_text())
    delta = latest["deltaManifestList"]
    newest = {delta, *(r["_FILE_NAME"] for r in _avro_records(table_dir / "manifest" / delta))}
    to_orc(table_dir, only=newest, set_option=False)
    _add_schema(table_dir, {"manifest.format": "orc"})
    assert sorted(set(_formats(table_dir).values())) == ["ORC", "Obj"]
    key = _key(True)
    expected = model("deduplicate", commits, key)
    assert rows(mp.read(str(orc_wh), NAME), key) == expected == rows(mp.read(str(wh), NAME), key)
    new = mp.compact(str(orc_wh), NAME, full=True)
    assert new is not None
    snap = json.loads((table_dir / "snapshot" / f"snapshot-{new}").read_text())
    assert _formats(table_dir)[snap["baseManifestList"]] == "ORC"
    assert rows(mp.read(str(orc_wh), NAME), key) == expected


@needs_pypaimon
def test_option_orc_with_only_avro_files(tmp_path: Path) -> None:
    """Avro metadata in a table whose every schema says ORC (pypaimon and Paimon from 2.1 write
    Avro whatever the option) reads; compaction writes its manifest and lists in ORC from
    Paimon's row types (no ORC file to copy), with ``manifest.compression``."""
    _, orc_wh, commits = _table(tmp_path, seed=17, count=4)
    table_dir = _dir(orc_wh)
    _set_option(table_dir, "manifest.format", "orc")
    key = _key(True)
    assert rows(mp.read(str(orc_wh), NAME), key) == model("deduplicate", commits, key)
    _add_schema(table_dir, {"manifest.compression": "lz4"})
    new = mp.compact(str(orc_wh), NAME, full=True)
    assert new is not None
    snap = json.loads((table_dir / "snapshot" / f"snapshot-{new}").read_text())
    for field in ("baseManifestList", "deltaManifestList"):
        assert _formats(table_dir)[snap[field]] == "ORC"
        assert orc.ORCFile(str(table_dir / "manifest" / snap[field])).compression == "LZ4"
    assert rows(mp.read(str(orc_wh), NAME), key) == model("deduplicate", commits, key)


def _add_schema(table_dir: Path, options: dict) -> None:
    """ALTER TABLE SET options, as Paimon does it: the next schema file."""
    ids = sorted(int(p.name.split("-")[1]) for p in (table_dir / "schema").glob("schema-*"))
    d = json.loads((table_dir / "schema" / f"schema-{ids[-1]}").read_text())
    d["id"] = ids[-1] + 1
    d["options"].update(options)
    (table_dir / "schema" / f"schema-{ids[-1] + 1}").write_text(json.dumps(d))


@needs_pypaimon
def test_damaged_or_foreign_metadata_files_are_named(tmp_path: Path) -> None:
    wh, orc_wh, _ = _table(tmp_path, seed=21, count=3)
    table_dir = _dir(wh)
    latest = json.loads((table_dir / "snapshot" / "snapshot-3").read_text())
    manifest = _avro_records(table_dir / "manifest" / latest["deltaManifestList"])[0]["_FILE_NAME"]
    path = table_dir / "manifest" / manifest
    original = path.read_bytes()

    def refused(data: bytes, match: str) -> None:
        path.write_bytes(data)
        with pytest.raises(CorruptTableError, match=match) as err:
            mp.read(str(wh), NAME)
        assert manifest in str(err.value)
        with pytest.raises(CorruptTableError, match=match):
            mp.compact(str(wh), NAME, full=True)
    records = _avro_records(path)
    # an ORC manifest in a table whose manifests are Avro in every schema
    refused(_orc_bytes(records, "manifest"), "no schema of table db.t sets 'manifest.format' to 'orc'")
    refused(b"PAR1" + original[4:], "neither an Avro nor an ORC file")
    refused(original[: len(original) // 2], "unreadable")
    refused(_orc_bytes(records, "manifest")[:40], "neither an Avro nor an ORC|unreadable")
    # well-formed files whose records are not Paimon's: a wrong type, a NOT NULL field missing
    to_orc(_dir(orc_wh))
    orc_path = _dir(orc_wh) / "manifest" / manifest
    bad_schema = pa.schema([f if f.name != "_BUCKET" else pa.field("_BUCKET", pa.string())
                            for f in ORC_TYPES["manifest"]])
    for table, match in ((pa.Table.from_pylist([dict(r, _BUCKET="0") for r in records], schema=bad_schema),
                          "_BUCKET is '0', not a INT"),
                         (pa.Table.from_pylist(records, schema=ORC_TYPES["manifest"]).drop_columns(["_PARTITION"]),
                          "_PARTITION is missing"),
                         (pa.Table.from_pylist([dict(r, _FILE=dict(r["_FILE"], _LEVEL=None)) for r in records],
                                               schema=ORC_TYPES["manifest"]), r"_FILE\._LEVEL is null")):
        sink = io.BytesIO()
        orc.write_table(table, sink)
        orc_path.write_bytes(sink.getvalue())
        with pytest.raises(CorruptTableError, match=match):
            mp.read(str(orc_wh), NAME)


# -- the codec alone: any records of Paimon's row types, both formats, both ways ----------------

def _value(t, nullable: bool):
    if isinstance(t, tuple) and t[0] == "ROW":
        inner = st.fixed_dictionaries({n: _value(s, nb) for n, s, nb in t[1]})
    elif isinstance(t, tuple):
        inner = st.lists(_value(t[1], t[2]), max_size=3)
    else:
        inner = {"TINYINT": st.integers(-128, 127), "INT": st.integers(-2**31, 2**31 - 1),
                 "BIGINT": st.integers(-2**63, 2**63 - 1), "STRING": st.text(max_size=8),
                 "BYTES": st.binary(max_size=8),
                 "TIMESTAMP": st.datetimes(min_value=dt.datetime(1970, 1, 1), max_value=dt.datetime(2200, 1, 1))
                 .map(lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000))}[t]
    return st.one_of(st.none(), inner) if nullable else inner


@given(kind=st.sampled_from(sorted(ROW_TYPES)), fmt=st.sampled_from(["avro", "orc"]), data=st.data())
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_metadata_files_round_trip(tmp_path: Path, kind: str, fmt: str, data) -> None:
    # (`_VERSION` may be missing from a file read, never from one written)
    records = data.draw(st.lists(st.fixed_dictionaries({n: _value(t, nb and n != "_VERSION")
                                                        for n, t, nb in ROW_TYPES[kind]}), max_size=4))
    store = storage_for(str(tmp_path))
    name = f"{kind.replace(' ', '-')}-{fmt}-{len(records)}"
    size = write_metadata(store, name, blank(kind, fmt, "zstd"), records, kind)
    written = (tmp_path / name).read_bytes()
    assert size == len(written)
    got = read_metadata(written, kind, name)
    assert got.format == fmt
    # a file made from scratch has Java's field set: pypaimon's own manifest-list fields are not written
    pypaimon_only = ("_TOTAL_BUCKETS", "_EXTRA_FILES") if kind == "manifest list" else ()
    java = [n for n, _, _ in ROW_TYPES[kind] if n not in pypaimon_only]
    assert [list(r) for r in got.records] == [java] * len(records)
    assert [_comparable(r) for r in got.records] == [_comparable({n: r[n] for n in java}) for r in records]
    # written again like the file read (its own schema as the template): the same records
    write_metadata(store, name + "-again", got, got.records, kind)
    again = read_metadata((tmp_path / (name + "-again")).read_bytes(), kind, name)
    assert again.records == got.records and again.schema == got.schema


@pytest.mark.parametrize("fmt", ["avro", "orc"])
def test_writing_refuses_records_it_could_not_read_back(tmp_path: Path, fmt: str) -> None:
    store = storage_for(str(tmp_path))
    entry = {"_KIND": 0, "_PARTITION": b"", "_BUCKET": 0, "_INDEX_TYPE": "DELETION_VECTORS", "_FILE_NAME": "index-1",
             "_FILE_SIZE": 10, "_ROW_COUNT": 1, "_DELETIONS_VECTORS_RANGES": [{"f0": "data-1.parquet", "f1": 1,
                                                                                "f2": 5}]}
    write_metadata(store, "ok", blank("index manifest", fmt), [entry], "index manifest")
    got = read_metadata((tmp_path / "ok").read_bytes(), "index manifest", "ok").records
    assert got[0]["_VERSION"] == 1 and got[0]["_DELETIONS_VECTORS_RANGES"][0]["_CARDINALITY"] is None
    for bad, problem in ((dict(entry, _BUCKET="0"), "_BUCKET is '0'"),
                         (dict(entry, _DELETIONS_VECTORS_RANGES=[{"f0": "x", "f1": 1}]),
                          r"_DELETIONS_VECTORS_RANGES\[0\]\.f2 is missing"),
                         (dict(entry, _KIND=300), "_KIND is 300, not a TINYINT")):
        with pytest.raises(InvalidArgumentError, match=problem):
            write_metadata(store, "bad", blank("index manifest", fmt), [bad], "index manifest")
        assert not (tmp_path / "bad").exists()
