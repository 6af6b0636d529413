"""Paimon's JSON metadata files — schemas, snapshots, tags (a tag is its snapshot's JSON),
consumers — as Java writes them: Jackson's default pretty printer (objects one field a line,
indented two spaces a level, ``"key" : value``; arrays inline, ``[ 1, 2 ]``; ``{ }`` and ``[ ]``
when empty), UTF-8 without escaping non-ASCII text, no trailing newline.  Byte for byte what
Java wrote for the same values (tests/test_codec.py reads every JSON file of the Java tables and
writes it again)."""
from __future__ import annotations

import json
from typing import Any

__all__ = ["SNAPSHOT_FIELDS", "dumps", "loads", "schema_json", "snapshot_json"]


def loads(data: bytes | str) -> Any:
    return json.loads(data)


def dumps(value: Any) -> bytes:
    """`value` (dicts keep their order) as Jackson's DefaultPrettyPrinter writes it."""
    out: list[str] = []
    _write(value, 0, out)
    return "".join(out).encode("utf-8")


def _write(value: Any, nesting: int, out: list[str]) -> None:
    if isinstance(value, dict):
        if not value:
            out.append("{ }")
            return
        out.append("{")
        inner = nesting + 1
        for i, (key, item) in enumerate(value.items()):
            out.append(("," if i else "") + "\n" + "  " * inner + _scalar(str(key)) + " : ")
            _write(item, inner, out)
        out.append("\n" + "  " * nesting + "}")
    elif isinstance(value, (list, tuple)):
        if not value:
            out.append("[ ]")
            return
        out.append("[ ")  # arrays are inline: their objects indent by the enclosing object's level
        for i, item in enumerate(value):
            if i:
                out.append(", ")
            _write(item, nesting, out)
        out.append(" ]")
    else:
        out.append(_scalar(value))


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    return json.dumps(str(value), ensure_ascii=False)


# a snapshot's fields in the order Java's Snapshot declares them; `logOffsets` is Java 2.0's and
# older (later readers ignore it, older ones expect it)
SNAPSHOT_FIELDS = ("version", "uuid", "id", "schemaId", "baseManifestList", "baseManifestListSize",
                   "deltaManifestList", "deltaManifestListSize", "changelogManifestList",
                   "changelogManifestListSize", "indexManifest", "commitUser", "writerVersion", "commitIdentifier",
                   "commitKind", "timeMillis", "logOffsets", "totalRecordCount", "deltaRecordCount",
                   "changelogRecordCount", "watermark", "statistics", "properties", "nextRowId", "operation")
# written even when null, as Java up to 2.0 wrote them
_NULL_KEPT = ("changelogManifestList",)


def snapshot_json(fields: dict[str, Any]) -> dict[str, Any]:
    """A snapshot's JSON object from its fields: Java's order, unknown fields refused, nulls left
    out (``changelogManifestList`` written as null, as Java 0.9 to 2.0 write it)."""
    unknown = sorted(set(fields) - set(SNAPSHOT_FIELDS))
    if unknown:
        raise ValueError(f"a Paimon snapshot has no fields {unknown}")
    return {k: fields.get(k) for k in SNAPSHOT_FIELDS if fields.get(k) is not None or k in _NULL_KEPT}


def schema_json(schema_id: int, fields: list[dict], highest_field_id: int, partition_keys: list[str],
                primary_keys: list[str], options: dict[str, str], time_millis: int,
                comment: str | None = None) -> dict[str, Any]:
    """A schema file's JSON object in the order Java's ``SchemaSerializer`` writes it (version
    3; `comment` only when there is one)."""
    out: dict[str, Any] = {"version": 3, "id": schema_id, "fields": fields, "highestFieldId": highest_field_id,
                           "partitionKeys": list(partition_keys), "primaryKeys": list(primary_keys),
                           "options": {str(k): str(v) for k, v in options.items()}}
    if comment is not None:
        out["comment"] = comment
    out["timeMillis"] = time_millis
    return out
