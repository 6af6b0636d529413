"""Paimon's metadata files — manifest lists, manifests and index manifests — in either format a
Paimon writer gives them (``manifest.format``): Avro (the default, and the only one from Paimon
2.1 on) or ORC (Paimon 2.0 and older, when the table asked for it).

Both read into the same records: a dict per row, nested rows as dicts, arrays as lists, BYTES as
`bytes`, TINYINT as `int`.  The format comes from the file's magic bytes (Avro ``Obj\\x01``,
ORC ``ORC``), not from the table option, which the caller cross-checks; every record is checked
against Paimon's row type of its kind (`ROW_TYPES`: NOT NULL fields present, every value of its
type) before anyone uses it.  Writing (`write_metadata`) takes a template — a file of the same
kind as read, or `blank` from the row type — and writes the records with its schema, format
and codec, so a table keeps its own format and its writer's field set."""
from __future__ import annotations

import copy
import datetime as dt
import io
import threading
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple, cast

import fastavro
import pyarrow as pa

from ..errors import CorruptTableError, InvalidArgumentError, UnsupportedPaimonFeatureError
from ..storage import Store

__all__ = ["FORMATS", "ROW_TYPES", "MetadataFile", "blank", "detect_format", "fit", "read_metadata",
           "template_for", "version_of", "write_metadata"]

AVRO_MAGIC, ORC_MAGIC = b"Obj\x01", b"ORC"
FORMATS = ("avro", "orc")

# Paimon's row types of the metadata files (Java's ManifestEntry, DataFileMeta, SimpleStats,
# ManifestFileMeta, IndexManifestEntry, DeletionVectorMeta, GlobalIndexMeta; `_VERSION` first).
# A field is (name, type, nullable); a type is a root name, ("ARRAY", element, element nullable)
# or ("ROW", fields).  A nullable field may also be missing (older writers lack newer fields).
Field = tuple[str, Any, bool]
_STATS = ("ROW", (("_MIN_VALUES", "BYTES", False), ("_MAX_VALUES", "BYTES", False),
                  ("_NULL_COUNTS", ("ARRAY", "BIGINT", True), True)))
_STRINGS = ("ARRAY", "STRING", False)
_DATA_FILE = ("ROW", (
    ("_FILE_NAME", "STRING", False), ("_FILE_SIZE", "BIGINT", False), ("_ROW_COUNT", "BIGINT", False),
    ("_MIN_KEY", "BYTES", False), ("_MAX_KEY", "BYTES", False), ("_KEY_STATS", _STATS, False),
    ("_VALUE_STATS", _STATS, False), ("_MIN_SEQUENCE_NUMBER", "BIGINT", False),
    ("_MAX_SEQUENCE_NUMBER", "BIGINT", False), ("_SCHEMA_ID", "BIGINT", False), ("_LEVEL", "INT", False),
    ("_EXTRA_FILES", _STRINGS, False), ("_CREATION_TIME", "TIMESTAMP", True), ("_DELETE_ROW_COUNT", "BIGINT", True),
    ("_EMBEDDED_FILE_INDEX", "BYTES", True), ("_FILE_SOURCE", "TINYINT", True), ("_VALUE_STATS_COLS", _STRINGS, True),
    ("_EXTERNAL_PATH", "STRING", True), ("_FIRST_ROW_ID", "BIGINT", True), ("_WRITE_COLS", _STRINGS, True),
    # Java's from 2.1 (DataFileMeta's 21st field), pypaimon's too; Java 2.0's readers skip it
    ("_WRITE_COLS_SEQUENCES", ("ARRAY", "BIGINT", False), True),
))
_VERSION: Field = ("_VERSION", "INT", True)  # NOT NULL in Paimon, but files of early writers lack it
ROW_TYPES: dict[str, tuple[Field, ...]] = {
    "manifest": (_VERSION, ("_KIND", "TINYINT", False), ("_PARTITION", "BYTES", False), ("_BUCKET", "INT", False),
                 ("_TOTAL_BUCKETS", "INT", False), ("_FILE", _DATA_FILE, False)),
    "manifest list": (
        _VERSION, ("_FILE_NAME", "STRING", False), ("_FILE_SIZE", "BIGINT", False),
        ("_NUM_ADDED_FILES", "BIGINT", False), ("_NUM_DELETED_FILES", "BIGINT", False),
        ("_PARTITION_STATS", _STATS, False), ("_SCHEMA_ID", "BIGINT", False), ("_MIN_BUCKET", "INT", True),
        ("_MAX_BUCKET", "INT", True), ("_MIN_LEVEL", "INT", True), ("_MAX_LEVEL", "INT", True),
        ("_MIN_ROW_ID", "BIGINT", True), ("_MAX_ROW_ID", "BIGINT", True),
        ("_TOTAL_BUCKETS", "INT", True), ("_EXTRA_FILES", _STRINGS, True)),  # the last two: pypaimon's only
    "index manifest": (
        _VERSION, ("_KIND", "TINYINT", False), ("_PARTITION", "BYTES", False), ("_BUCKET", "INT", False),
        ("_INDEX_TYPE", "STRING", False), ("_FILE_NAME", "STRING", False), ("_FILE_SIZE", "BIGINT", False),
        ("_ROW_COUNT", "BIGINT", False),
        ("_DELETIONS_VECTORS_RANGES", ("ARRAY", ("ROW", (
            ("f0", "STRING", False), ("f1", "INT", False), ("f2", "INT", False),
            ("_CARDINALITY", "BIGINT", True))), False), True),
        ("_EXTERNAL_PATH", "STRING", True),
        ("_GLOBAL_INDEX", ("ROW", (
            ("_ROW_RANGE_START", "BIGINT", False), ("_ROW_RANGE_END", "BIGINT", False),
            ("_INDEX_FIELD_ID", "INT", False), ("_EXTRA_FIELD_IDS", ("ARRAY", "INT", False), True),
            ("_INDEX_META", "BYTES", True), ("_SOURCE_META", "BYTES", True))), True)),
}
_PYPAIMON_ONLY = {"manifest list": ("_TOTAL_BUCKETS", "_EXTRA_FILES")}
_ROOT_NAMES = {"manifest": "ManifestEntry", "manifest list": "ManifestFileMeta", "index manifest": "IndexManifestEntry"}
_RANGES = {"TINYINT": 7, "INT": 31, "BIGINT": 63}
_VERSIONS = {"manifest": 2, "manifest list": 2, "index manifest": 1}


class MetadataFile(NamedTuple):
    """A metadata file as read: its schema (Avro: the writer schema, a dict; ORC: the Arrow
    schema), its records and codec (as fastavro or pyarrow's ORC writer name it), and format."""
    schema: Any
    records: list[dict]
    codec: str
    format: str = "avro"


def detect_format(data: bytes) -> str | None:
    """"avro" or "orc" by the file's magic bytes; None for anything else."""
    if data.startswith(AVRO_MAGIC):
        return "avro"
    if data.startswith(ORC_MAGIC):
        return "orc"
    return None


def read_metadata(data: bytes, kind: str, path: str) -> MetadataFile:
    """The records of metadata file `path` (its bytes `data`), checked against Paimon's row
    type of `kind` ("manifest", "manifest list", "index manifest"; another kind is only
    parsed); CorruptTableError naming the file for anything else."""
    fmt = detect_format(data)
    if fmt is None:
        raise CorruptTableError(f"Paimon {kind} {path} is neither an Avro nor an ORC file "
                                f"(it starts with {data[:4]!r})", path=path)
    try:
        if fmt == "avro":
            reader = fastavro.reader(io.BytesIO(data))
            records = cast(list, list(reader))  # type: ignore[redundant-cast]
            found = MetadataFile(cast(dict, reader.writer_schema), records, str(reader.codec), "avro")
        else:
            from pyarrow import orc
            orc_file = orc.ORCFile(pa.BufferReader(data))
            table = orc_file.read()
            found = MetadataFile(table.schema, table.to_pylist(), str(orc_file.compression).lower(), "orc")
    except (ValueError, EOFError, StopIteration, OSError, pa.ArrowException,
            fastavro.read.SchemaResolutionError) as exc:
        raise CorruptTableError(f"Paimon {kind} {path} is unreadable ({fmt}): {exc}", path=path) from None
    fields = ROW_TYPES.get(kind)
    if fields is not None:
        for i, record in enumerate(found.records):
            problem = _check_row(record, fields, "")
            if problem is not None:
                raise CorruptTableError(f"Paimon {kind} {path}, record {i}: {problem}", path=path)
    return found


def _check_row(record: Any, fields: tuple[Field, ...], where: str) -> str | None:
    """What is wrong with `record` as a row of `fields` (None: nothing); extra fields pass."""
    if not isinstance(record, dict):
        return f"{where or 'the record'} is {type(record).__name__}, not a row"
    for name, t, nullable in fields:
        value = record.get(name)
        if value is None:
            if not nullable:
                return f"field {where}{name} is {'null' if name in record else 'missing'}"
            continue
        problem = _check_value(value, t, f"{where}{name}")
        if problem is not None:
            return problem
    return None


def _check_value(value: Any, t: Any, where: str) -> str | None:
    if isinstance(t, tuple):
        if t[0] == "ROW":
            return _check_row(value, t[1], where + ".")
        if not isinstance(value, list):
            return f"field {where} is {type(value).__name__}, not an array"
        for i, item in enumerate(value):
            if item is None:
                if not t[2]:
                    return f"field {where}[{i}] is null"
                continue
            problem = _check_value(item, t[1], f"{where}[{i}]")
            if problem is not None:
                return problem
        return None
    if t in _RANGES:
        bits = _RANGES[t]
        if isinstance(value, bool) or not isinstance(value, int) or not -(1 << bits) <= value < (1 << bits):
            return f"field {where} is {value!r}, not a {t}"
        return None
    wanted = {"STRING": str, "BYTES": bytes, "TIMESTAMP": dt.datetime}[t]
    if not isinstance(value, wanted):
        return f"field {where} is {type(value).__name__}, not a {t}"
    return None


# -- writing ---------------------------------------------------------------------------------

def fit(record: Mapping[str, Any], template: MetadataFile, kind: str) -> dict:
    """`record` with exactly the fields of `template`'s schema: a field it lacks is null (a NOT
    NULL field of Paimon's row type it lacks is refused; a missing `_VERSION` is the kind's),
    one the template lacks is dropped."""
    known = ROW_TYPES.get(kind, ())
    if record.get("_VERSION") is None and kind in _VERSIONS:
        record = {"_VERSION": _VERSIONS[kind], **record}
    if template.format == "avro":
        # Java's writer schema is a union of null and the record: fit the record
        schema = _resolved(template.schema)
        return _fit_avro(record, _record_type(schema) or schema, known, kind)
    return _fit_arrow(record, list(template.schema), known, kind)


def _required(name: str, known: tuple[Field, ...], kind: str) -> None:
    for n, _, nullable in known:
        if n == name and not nullable:
            raise UnsupportedPaimonFeatureError(f"the table's {kind} files have a field {name!r} that mergetree "
                                                f"cannot fill")


def _subfields(name: str, known: tuple[Field, ...]) -> tuple[Field, ...]:
    for n, t, _ in known:
        if n == name and isinstance(t, tuple) and t[0] == "ROW":
            return cast(tuple, t[1])
    return ()


def _fit_avro(record: Mapping[str, Any], schema: dict, known: tuple[Field, ...], kind: str) -> dict:
    out = {}
    for f in schema["fields"]:
        name = f["name"]
        if name in record:
            value = record[name]
            sub = _record_type(f["type"])
            if sub is not None and isinstance(value, Mapping):
                value = _fit_avro(value, sub, _subfields(name, known), kind)
            out[name] = value
        elif "default" in f or (isinstance(f["type"], list) and "null" in f["type"]):
            out[name] = f.get("default")
        else:
            _required(name, known, kind)
            raise UnsupportedPaimonFeatureError(f"the table's {kind} files have a field {name!r} that mergetree "
                                                f"does not know how to fill")
    return out


def _record_type(t: Any) -> dict | None:
    """The record schema of an Avro field type (a record, or a nullable union with one)."""
    if isinstance(t, dict) and t.get("type") == "record":
        return t
    if isinstance(t, list):
        records = [x for x in t if isinstance(x, dict) and x.get("type") == "record"]
        return records[0] if len(records) == 1 else None
    return None


def _fit_arrow(record: Mapping[str, Any], fields: list[pa.Field], known: tuple[Field, ...], kind: str) -> dict:
    out = {}
    for f in fields:
        if f.name in record:
            value = record[f.name]
            if pa.types.is_struct(f.type) and isinstance(value, Mapping):
                value = _fit_arrow(value, list(f.type), _subfields(f.name, known), kind)
            out[f.name] = value
        else:
            _required(f.name, known, kind)  # ORC has no NOT NULL: Paimon's row type says
            out[f.name] = None
    return out


# writer schema (by identity: a template's schema is one object for all its records) ->
# (the schema, it resolved, it parsed by fastavro); a few tables' templates at a time
_RESOLVED: dict[int, tuple[dict, dict, Any]] = {}
_RESOLVED_LOCK = threading.Lock()


def _resolved_and_parsed(writer_schema: dict) -> tuple[dict, Any]:
    """`_resolved` and fastavro's parse of it, once per template schema (each cost more than
    fitting the records of a small manifest)."""
    with _RESOLVED_LOCK:
        hit = _RESOLVED.get(id(writer_schema))
    if hit is not None and hit[0] is writer_schema:
        return hit[1], hit[2]
    resolved = _resolve(writer_schema)
    parsed = fastavro.parse_schema(copy.deepcopy(resolved))
    with _RESOLVED_LOCK:
        _RESOLVED[id(writer_schema)] = (writer_schema, resolved, parsed)
        while len(_RESOLVED) > 64:
            _RESOLVED.pop(next(iter(_RESOLVED)))
    return resolved, parsed


def _resolved(writer_schema: dict) -> dict:
    """An Avro schema with its named types written out where they are used (do not change it:
    it is shared)."""
    return _resolved_and_parsed(writer_schema)[0]


def _resolve(writer_schema: dict) -> dict:
    names: dict[str, Any] = {}

    def resolve(t: Any) -> Any:
        if isinstance(t, str):
            return names.get(t, t)
        if isinstance(t, list):
            return [resolve(x) for x in t]
        if isinstance(t, dict) and t.get("type") == "record":
            rec = dict(t, fields=[dict(f, type=resolve(f["type"])) for f in t["fields"]])
            names[t["name"]] = rec
            return rec
        if isinstance(t, dict) and t.get("type") == "array":
            return dict(t, items=resolve(t["items"]))
        if isinstance(t, dict) and t.get("type") == "map":
            return dict(t, values=resolve(t["values"]))
        return t
    return cast(dict, resolve(writer_schema))


def write_metadata(storage: Store, name: str, template: MetadataFile, records: list[dict], kind: str) -> int:
    """Write metadata file `name` (an object path under the table) through `storage`, in
    `template`'s format, schema and codec, each record `fit` to the schema; its size in bytes.
    The file appears whole when written, never partly (`open_output`)."""
    rows = [fit(r, template, kind) for r in records]
    fields = ROW_TYPES.get(kind)
    for i, row in enumerate(rows if fields is not None else ()):  # never a file mergetree would refuse to read
        problem = _check_row(row, cast(tuple, fields), "")
        if problem is not None:
            raise InvalidArgumentError(f"{kind} record {i} for {name}: {problem}")
    if template.format == "avro":
        parsed = _resolved_and_parsed(template.schema)[1]
        with storage.open_output(name) as out:
            fastavro.writer(out, parsed, rows, codec=template.codec)
            return int(out.tell())
    from pyarrow import orc
    try:
        table = pa.Table.from_pylist(rows, schema=template.schema)
    except (pa.ArrowException, TypeError, ValueError) as exc:
        raise UnsupportedPaimonFeatureError(f"the {kind} records do not fit the table's ORC {kind} schema: "
                                            f"{exc}") from None
    with storage.open_output(name) as out:
        orc.write_table(table, out, compression=template.codec)
        return int(out.tell())


# -- templates from Paimon's row types -----------------------------------------------------------

_AVRO_CODECS = {"zstd": "zstandard", "zstandard": "zstandard", "snappy": "snappy", "deflate": "deflate",
                "gzip": "deflate", "none": "null", "null": "null", "uncompressed": "null"}
_ORC_CODECS = {"zstd": "zstd", "zstandard": "zstd", "snappy": "snappy", "lz4": "lz4", "zlib": "zlib", "gzip": "zlib",
               "deflate": "zlib", "none": "uncompressed", "null": "uncompressed", "uncompressed": "uncompressed"}


def blank(kind: str, fmt: str, compression: str = "zstd") -> MetadataFile:
    """A template for writing `kind` files in `fmt` when the table has none to copy: Paimon's row
    type of that kind; `compression` is ``manifest.compression``'s value (default zstd)."""
    # Java's field set, in its order (ManifestEntry, DataFileMeta, ManifestFileMeta,
    # IndexManifestEntry): fields only pypaimon writes are read, never written from scratch
    fields = tuple(f for f in ROW_TYPES[kind] if f[0] not in _PYPAIMON_ONLY.get(kind, ()))
    codecs = _AVRO_CODECS if fmt == "avro" else _ORC_CODECS
    codec = codecs.get(compression.strip().lower())
    if codec is None:
        raise UnsupportedPaimonFeatureError(f"Paimon option 'manifest.compression' = {compression!r}: mergetree "
                                            f"writes {fmt} manifests with {', '.join(sorted(set(codecs)))}")
    # `_VERSION` may be missing from files read (early writers), never from files written
    fields = tuple((n, t, False if n == "_VERSION" else nullable) for n, t, nullable in fields)
    if fmt == "avro":
        schema: Any = {"type": "record", "name": _ROOT_NAMES[kind],
                       "fields": [_avro_field(f, "record") for f in fields]}
    else:
        schema = pa.schema([pa.field(n, _arrow_type(t)) for n, t, _ in fields])
    return MetadataFile(schema, [], codec, fmt)


def _avro_type(t: Any, nullable: bool, name: str) -> Any:
    if isinstance(t, tuple) and t[0] == "ROW":
        avro: Any = {"type": "record", "name": name, "fields": [_avro_field(f, name) for f in t[1]]}
    elif isinstance(t, tuple):
        avro = {"type": "array", "items": _avro_type(t[1], t[2], name + "_element")}
    else:
        avro = {"TINYINT": "int", "INT": "int", "BIGINT": "long", "STRING": "string", "BYTES": "bytes",
                "TIMESTAMP": {"type": "long", "logicalType": "timestamp-millis"}}[t]
    return ["null", avro] if nullable else avro


def _avro_field(f: Field, parent: str) -> dict:
    name, t, nullable = f
    out = {"name": name, "type": _avro_type(t, nullable, parent + name)}
    if nullable:
        out["default"] = None
    return out


def _arrow_type(t: Any) -> pa.DataType:
    if isinstance(t, tuple) and t[0] == "ROW":
        return pa.struct([pa.field(n, _arrow_type(s)) for n, s, _ in t[1]])
    if isinstance(t, tuple):
        return pa.list_(_arrow_type(t[1]))
    return {"TINYINT": pa.int8(), "INT": pa.int32(), "BIGINT": pa.int64(), "STRING": pa.string(),
            "BYTES": pa.binary(), "TIMESTAMP": pa.timestamp("ns")}[t]


def template_for(kind: str, options: Mapping[str, str], candidates: Iterable[MetadataFile]) -> MetadataFile:
    """What to write a new `kind` file like: the first of `candidates` (the table's files of that
    kind, newest first; taken lazily) in the format the table's ``manifest.format`` names — so
    its writer's field set and codec carry over — else, as just after an ALTER of the format,
    `blank` with ``manifest.compression``.  E.g. for an index manifest:
    ``template_for("index manifest", schema.options, [table.metadata_file(name, "index manifest")])``."""
    fmt = options.get("manifest.format", "avro").strip().lower()
    if fmt not in FORMATS:
        raise UnsupportedPaimonFeatureError(f"Paimon option 'manifest.format' = {fmt!r}: mergetree writes "
                                            f"{' and '.join(FORMATS)} metadata files")
    for candidate in candidates:
        if candidate.format == fmt:
            return candidate
    return blank(kind, fmt, options.get("manifest.compression", "zstd"))


def version_of(kind: str) -> int:
    """The `_VERSION` Paimon writes in files of `kind`."""
    return _VERSIONS[kind]
