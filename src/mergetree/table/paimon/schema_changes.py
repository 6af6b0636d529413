"""Schema evolution as Java's ``SchemaManager.generateTableSchema`` applies it, on the schema
document: no I/O; the store publishes the result (`PaimonSnapshotStore.alter_schema`).

Each change is one of Java's `SchemaChange`s; `apply_changes` applies a list of them in order
to a schema document and returns the next one (id + 1, field ids past ``highestFieldId`` for
what is added, renamed key columns renamed in ``primaryKeys`` and in the options naming them),
refusing — before anything is written — what Java refuses, with Java's reason:

- an added column must be nullable and new in its row; it goes where its move says, else
  before the partition columns under ``add-column-before-partition``, else last;
- partition columns are never renamed, retyped or dropped; primary-key columns are renamed
  (in ``primaryKeys`` too) but never retyped, dropped or made nullable;
- a type changes only as Paimon's casts allow (``DataTypeCasts``: explicit casts unless
  ``disable-explicit-type-casting``) and, here, only where mergetree converts old files'
  values exactly as Java does (`codec.types.evolve`); nullable to NOT NULL only where
  ``alter-column-null-to-not-null.disabled`` is false;
- a move follows Java's ``applyMove`` (FIRST, LAST, BEFORE, AFTER; never onto itself).

Paths: a top-level column is a name; a nested field a tuple of names, through ``element`` of
an ARRAY and ``value`` of a MAP, as Java's `NestedColumnModifier` walks them.
"""
from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ...codec.types import evolve, parse_type
from ...errors import InvalidArgumentError, UnsupportedPaimonFeatureError

__all__ = ["AddColumn", "DropColumn", "MoveColumn", "RenameColumn", "SchemaChange", "UpdateColumnComment",
           "UpdateColumnNullability", "UpdateColumnType", "apply_changes", "castable", "renamed_options"]

Path = tuple[str, ...]


@dataclass(frozen=True)
class AddColumn:
    path: Path
    type: Any          # Paimon's type JSON (nested row ids are reassigned when applied)
    doc: str | None = None
    move: MoveColumn | None = None


@dataclass(frozen=True)
class RenameColumn:
    path: Path
    new_name: str


@dataclass(frozen=True)
class DropColumn:
    path: Path


@dataclass(frozen=True)
class UpdateColumnType:
    path: Path
    type: Any          # an atomic Paimon type string
    keep_nullability: bool = True


@dataclass(frozen=True)
class UpdateColumnNullability:
    path: Path
    nullable: bool


@dataclass(frozen=True)
class UpdateColumnComment:
    path: Path
    doc: str | None


@dataclass(frozen=True)
class MoveColumn:
    """Java's `SchemaChange.Move`: `kind` FIRST, LAST, BEFORE or AFTER `reference`."""
    name: str
    kind: str
    reference: str | None = None


SchemaChange = (AddColumn | RenameColumn | DropColumn | UpdateColumnType | UpdateColumnNullability
                | UpdateColumnComment | MoveColumn)

# -- Paimon's casts (DataTypeCasts), by mergetree's type roots ------------------------------
_INTEGERS = ("TINYINT", "SMALLINT", "INT", "BIGINT")
_NUMERIC = (*_INTEGERS, "DECIMAL", "FLOAT", "DOUBLE")
_TIMESTAMPS = ("TIMESTAMP", "TIMESTAMP_LTZ")
_DATETIME = ("DATE", "TIME", *_TIMESTAMPS)
_ATOMIC = (*_NUMERIC, "BOOLEAN", "STRING", "BYTES", *_DATETIME)
_NESTED = ("ARRAY", "MAP", "MULTISET", "ROW")
# target -> (implicit sources, explicit sources)
_CASTS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "STRING": (("STRING",), (*_ATOMIC, *_NESTED)),
    "BOOLEAN": (("BOOLEAN",), ("STRING", *_INTEGERS)),
    "BYTES": (("BYTES",), ("STRING",)),
    "DECIMAL": (_NUMERIC, ("STRING", "BOOLEAN", *_TIMESTAMPS)),
    "TINYINT": (("TINYINT",), (*_NUMERIC, "STRING", "BOOLEAN", *_TIMESTAMPS)),
    "SMALLINT": (("TINYINT", "SMALLINT"), (*_NUMERIC, "STRING", "BOOLEAN", *_TIMESTAMPS)),
    "INT": (("TINYINT", "SMALLINT", "INT"), (*_NUMERIC, "STRING", "BOOLEAN", *_TIMESTAMPS)),
    "BIGINT": (_INTEGERS, (*_NUMERIC, "STRING", "BOOLEAN", *_TIMESTAMPS)),
    "FLOAT": ((*_INTEGERS, "FLOAT", "DECIMAL"), (*_NUMERIC, "STRING", "BOOLEAN", *_TIMESTAMPS)),
    "DOUBLE": (_NUMERIC, ("STRING", "BOOLEAN", *_TIMESTAMPS)),
    "DATE": (("DATE", "TIMESTAMP"), (*_TIMESTAMPS, "STRING")),
    "TIME": (("TIME", "TIMESTAMP"), ("TIME", *_TIMESTAMPS, "STRING")),
    "TIMESTAMP": (_TIMESTAMPS, (*_DATETIME, "STRING", *_NUMERIC)),
    "TIMESTAMP_LTZ": (_TIMESTAMPS, (*_DATETIME, "STRING", *_NUMERIC)),
}


def castable(old: Any, new: Any, explicit: bool = True) -> str | None:
    """Why a column of Paimon type `old` cannot change to `new` (None: it can): Paimon's cast
    rules, then whether mergetree reads the old files' values as Java converts them."""
    before, after = parse_type(old), parse_type(new)
    if not before.atomic or not after.atomic:
        if before.text.replace(" NOT NULL", "") == after.text.replace(" NOT NULL", ""):
            return None
        return "mergetree changes the types of atomic columns only; change a nested column's fields by their paths"
    implicit, explicit_sources = _CASTS.get(after.root, ((), ()))
    if before.root not in implicit and not (explicit and before.root in explicit_sources):
        return "Paimon's casts do not allow it" + ("" if explicit else " without explicit casting "
                                                   "('disable-explicit-type-casting' is true)")
    if before.root == "BYTES" and after.root == "STRING":
        return "bytes that are not UTF-8 would make the old files unreadable as strings"
    try:
        evolve(pa.array([], before.arrow), before, after, "?")
    except UnsupportedPaimonFeatureError as exc:
        return str(exc).split(": ", 1)[-1]
    return None


# -- type JSON helpers --------------------------------------------------------------------------
def _type_text(type_json: Any) -> str:
    return type_json if isinstance(type_json, str) else str(type_json["type"])


def _nullable(type_json: Any) -> bool:
    return not _type_text(type_json).rstrip().upper().endswith(" NOT NULL")


def _with_nullability(type_json: Any, nullable: bool) -> Any:
    text = _type_text(type_json).rstrip()
    if text.upper().endswith(" NOT NULL"):
        text = text[: -len(" NOT NULL")].rstrip()
    text = text if nullable else f"{text} NOT NULL"
    return text if isinstance(type_json, str) else {**type_json, "type": text}


def _root(type_json: Any) -> str:
    return _type_text(type_json).split()[0].split("(")[0].upper() if isinstance(type_json, dict) else \
        parse_type(type_json).root


def _reassign_ids(type_json: Any, highest: list[int]) -> Any:
    """`type_json` with its ROW fields numbered past ``highest`` depth first, as Java's
    ``ReassignFieldId`` numbers an added column's nested fields."""
    if not isinstance(type_json, dict):
        return type_json
    out = dict(type_json)
    if "fields" in out:
        fields = []
        for f in out["fields"]:
            highest[0] += 1
            fields.append({**f, "id": highest[0], "type": _reassign_ids(f["type"], highest)})
        out["fields"] = fields
    for part in ("element", "key", "value"):
        if part in out:
            out[part] = _reassign_ids(out[part], highest)
    return out


def _max_id(type_json: Any) -> int:
    if not isinstance(type_json, dict):
        return -1
    ids = [-1]
    for f in type_json.get("fields", ()):
        ids += [int(f["id"]), _max_id(f["type"])]
    ids += [_max_id(type_json[p]) for p in ("element", "key", "value") if p in type_json]
    return max(ids)


# -- walking to a field -------------------------------------------------------------------------
def _shown(path: Sequence[str]) -> str:
    return ".".join(path)


def _index(fields: list[dict], name: str, path: Sequence[str]) -> int:
    for i, f in enumerate(fields):
        if f["name"] == name:
            return i
    raise InvalidArgumentError(f"the table has no column {_shown(path)!r}")


def _in_type(type_json: Any, rest: Path, path: Path, apply: Callable[[list[dict], str], None]) -> Any:
    """`type_json` with `apply` run on the field list holding ``rest[-1]``, below it."""
    if not isinstance(type_json, dict):
        raise InvalidArgumentError(f"{_shown(path[: len(path) - len(rest)])!r} has no fields: it is "
                                   f"{_type_text(type_json)}")
    root = _root(type_json)
    head = rest[0]
    if root == "ARRAY" and head == "element" and len(rest) > 1:
        return {**type_json, "element": _in_type(type_json["element"], rest[1:], path, apply)}
    if root == "MAP" and head == "value" and len(rest) > 1:
        return {**type_json, "value": _in_type(type_json["value"], rest[1:], path, apply)}
    if root != "ROW":
        raise InvalidArgumentError(f"cannot change {_shown(path)!r}: {_shown(path[: len(path) - len(rest)])!r} "
                                   f"is {_type_text(type_json)}; its parts are 'element' (ARRAY) and 'value' (MAP)")
    fields = [dict(f) for f in type_json["fields"]]
    _in_fields(fields, rest, path, apply)
    return {**type_json, "fields": fields}


def _in_fields(fields: list[dict], rest: Path, path: Path, apply: Callable[[list[dict], str], None]) -> None:
    if len(rest) == 1:
        apply(fields, rest[0])
        return
    i = _index(fields, rest[0], path[: len(path) - len(rest) + 1])
    fields[i] = {**fields[i], "type": _in_type(fields[i]["type"], rest[1:], path, apply)}


def _type_at(fields: list[dict], path: Path, update: Callable[[Any], Any]) -> None:
    """Replace the type at `path` (a field, or through ``element``/``value`` a part of one)."""
    def on_type(type_json: Any, rest: Path) -> Any:
        if not rest:
            return update(type_json)
        root = _root(type_json) if isinstance(type_json, dict) else ""
        if root == "ARRAY" and rest[0] == "element":
            return {**type_json, "element": on_type(type_json["element"], rest[1:])}
        if root == "MAP" and rest[0] == "value":
            return {**type_json, "value": on_type(type_json["value"], rest[1:])}
        if root == "ROW":
            inner = [dict(f) for f in type_json["fields"]]
            i = _index(inner, rest[0], path)
            inner[i] = {**inner[i], "type": on_type(inner[i]["type"], rest[1:])}
            return {**type_json, "fields": inner}
        raise InvalidArgumentError(f"the table has no column {_shown(path)!r}")

    i = _index(fields, path[0], path[:1])
    fields[i] = {**fields[i], "type": on_type(fields[i]["type"], path[1:])}


def _move(fields: list[dict], move: MoveColumn) -> None:
    """Java's ``SchemaManager.applyMove``, index for index."""
    where = {f["name"]: i for i, f in enumerate(fields)}
    index = where.get(move.name, -1)
    if index == -1:
        raise InvalidArgumentError(f"the table has no column {move.name!r} to move")

    def check(target: int) -> None:
        if target == index:
            raise UnsupportedPaimonFeatureError(f"cannot move column {move.name!r} onto itself (Java refuses it too)")

    if move.kind in ("FIRST", "LAST"):
        target = 0 if move.kind == "FIRST" else len(fields) - 1
        check(target)
        fields.insert(target, fields.pop(index))
        return
    ref = where.get(move.reference or "", -1)
    if ref == -1:
        raise InvalidArgumentError(f"the table has no column {move.reference!r} to move {move.name!r} next to")
    check(ref)
    target = ref
    if move.kind == "AFTER" and index > ref:
        target += 1
    if move.kind == "BEFORE" and index < ref:
        target -= 1
    target = min(target, len(fields) - 1)
    fields.insert(target, fields.pop(index))


# -- options naming columns ---------------------------------------------------------------------
# option keys whose value is a comma-separated list of columns (Paimon's, and mergetree's own
# under its ``mergetree.`` prefix), renamed with their columns as Java renames bucket-key and
# sequence.field
_COLUMN_LIST_OPTIONS = ("bucket-key", "sequence.field", "file-index.bloom-filter.columns", "file-index.bitmap.columns",
                        "clustering.columns", "sort-within.columns")
_PREFIX = "mergetree."


def renamed_options(options: Mapping[str, str], renames: Mapping[str, str]) -> dict[str, str]:
    """`options` with top-level columns renamed (old -> new) wherever an option names one: the
    column lists, ``fields.<col>.*`` and ``fields.<cols>.sequence-group`` keys and values (as
    Java's ``applyRenameColumnsToOptions``), ``file-index.<index>.<col>.*`` keys,
    ``parquet.bloom.filter.*#<col>`` keys, and mergetree's pre-aggregate models."""
    if not renames:
        return dict(options)

    def names(text: str) -> str:
        return ",".join(renames.get(n.strip(), n.strip()) for n in text.split(","))

    out: dict[str, str] = {}
    for key, value in options.items():
        bare = key[len(_PREFIX):] if key.startswith(_PREFIX) else key
        prefix = key[: len(key) - len(bare)]
        if bare in _COLUMN_LIST_OPTIONS:
            value = names(value)
        elif bare.startswith("fields.") and bare.endswith((".sequence-group", ".nested-key")):
            suffix = bare.rsplit(".", 1)[1]
            bare = f"fields.{names(bare[len('fields.'): -len(suffix) - 1])}.{suffix}"
            value = names(value)
        elif bare.startswith("fields."):
            column, _, rest = bare[len("fields."):].rpartition(".")
            if column in renames:
                bare = f"fields.{renames[column]}.{rest}"
        elif bare.startswith("file-index.") and bare.count(".") >= 3:
            _, index, rest = bare.split(".", 2)
            column, _, what = rest.rpartition(".")
            if column in renames:
                bare = f"file-index.{index}.{renames[column]}.{what}"
        elif bare.startswith("parquet.bloom.filter.") and "#" in bare:
            head, _, column = bare.partition("#")
            bare = f"{head}#{renames.get(column, column)}"
        elif bare.startswith("aggregate.") and bare.endswith(".group-by"):
            value = names(value)
        elif bare.startswith("aggregate.") and bare.endswith(".measures"):
            value = ",".join(f"{renames.get(c, c)}:{fn}" for c, _, fn in
                             (part.strip().rpartition(":") for part in value.split(",") if part.strip()))
        out[prefix + bare] = value
    return out


# -- the changes --------------------------------------------------------------------------------
def _flag(options: Mapping[str, str], key: str, default: bool) -> bool:
    return str(options.get(key, str(default))).strip().lower() == "true"


def apply_changes(document: Mapping[str, Any], changes: Iterable[SchemaChange]) -> dict:
    """The schema document after `changes`, as Java's ``generateTableSchema`` makes it (its
    ``timeMillis`` the caller's to set); every refusal raised before anything is returned."""
    changes = list(changes)
    if not changes:
        raise InvalidArgumentError("the schema update holds no change")
    fields: list[dict] = copy.deepcopy(list(document["fields"]))
    options = {str(k): str(v) for k, v in (document.get("options") or {}).items()}
    partitions = list(document.get("partitionKeys") or ())
    keys = list(document.get("primaryKeys") or ())
    highest = [int(document.get("highestFieldId", max([_max_id(f["type"]) for f in fields]
                                                      + [int(f["id"]) for f in fields])))]
    null_to_not_null_disabled = _flag(options, "alter-column-null-to-not-null.disabled", True)
    explicit = not _flag(options, "disable-explicit-type-casting", False)
    renames: dict[str, str] = {}

    def top(path: Path, what: str, keys_too: bool) -> None:
        if len(path) == 1 and path[0] in partitions:
            raise UnsupportedPaimonFeatureError(f"cannot {what} partition column {path[0]!r} (Java refuses it too)")
        if keys_too and len(path) == 1 and path[0] in keys:
            raise UnsupportedPaimonFeatureError(f"cannot {what} primary-key column {path[0]!r} (Java refuses it too)")

    for change in changes:
        if isinstance(change, AddColumn):
            if not _nullable(change.type):
                raise UnsupportedPaimonFeatureError(
                    f"column {_shown(change.path)!r} cannot be added NOT NULL: rows written before it have no value "
                    f"(Java refuses it too)")
            field_id = highest[0] + 1
            highest[0] += 1
            added_type = _reassign_ids(change.type, highest)

            def add(siblings: list[dict], name: str, change: AddColumn = change, field_id: int = field_id,
                    added_type: Any = added_type) -> None:
                if any(f["name"] == name for f in siblings):
                    raise InvalidArgumentError(f"the table already has a column {_shown(change.path)!r}")
                field = {"id": field_id, "name": name, "type": added_type}
                if change.doc is not None:
                    field["description"] = change.doc
                move = change.move
                if move is not None and move.kind in ("BEFORE", "AFTER"):
                    at = next((i for i, f in enumerate(siblings) if f["name"] == move.reference), None)
                    if at is None:
                        raise InvalidArgumentError(f"the table has no column {move.reference!r} to add "
                                                   f"{name!r} next to")
                    siblings.insert(at + (move.kind == "AFTER"), field)
                elif move is not None and move.kind == "FIRST":
                    siblings.insert(0, field)
                elif (move is None and len(change.path) == 1 and partitions
                      and _flag(options, "add-column-before-partition", False)):
                    at = next((i for i, f in enumerate(siblings) if f["name"] in partitions), len(siblings))
                    siblings.insert(at, field)
                else:
                    siblings.append(field)

            _in_fields(fields, change.path, change.path, add)
        elif isinstance(change, RenameColumn):
            top(change.path, "rename", False)
            new_name = change.new_name

            def rename(siblings: list[dict], name: str, change: RenameColumn = change,
                       new_name: str = new_name) -> None:
                i = _index(siblings, name, change.path)
                if any(f["name"] == new_name for f in siblings):
                    raise InvalidArgumentError(f"cannot rename {_shown(change.path)!r} to {new_name!r}: the table "
                                               f"already has a column {new_name!r} there")
                siblings[i] = {**siblings[i], "name": new_name}

            _in_fields(fields, change.path, change.path, rename)
            if len(change.path) == 1:
                old = change.path[0]
                keys = [new_name if k == old else k for k in keys]
                earlier = [k for k, v in renames.items() if v == old]  # renamed twice: the first name maps on
                for k in earlier:
                    renames[k] = new_name
                if not earlier:
                    renames[old] = new_name
        elif isinstance(change, DropColumn):
            if len(change.path) == 1 and (change.path[0] in partitions or change.path[0] in keys):
                raise UnsupportedPaimonFeatureError(f"cannot drop partition key or primary key "
                                                    f"{change.path[0]!r} (Java refuses it too)")

            def drop(siblings: list[dict], name: str, change: DropColumn = change) -> None:
                siblings.pop(_index(siblings, name, change.path))
                if not siblings:
                    raise UnsupportedPaimonFeatureError(f"cannot drop {_shown(change.path)!r}: it is the last field "
                                                        f"of its row (Java refuses it too)")

            _in_fields(fields, change.path, change.path, drop)
        elif isinstance(change, UpdateColumnType):
            top(change.path, "change the type of", True)
            bucket_key = [c.strip() for c in options.get("bucket-key", "").split(",") if c.strip()]
            if len(change.path) == 1 and change.path[0] in bucket_key:
                raise UnsupportedPaimonFeatureError(
                    f"cannot change the type of bucket-key column {change.path[0]!r}: the rows written are placed in "
                    f"buckets by its values' hash, which a new type changes")

            def retype(old: Any, change: UpdateColumnType = change) -> Any:
                new = change.type
                if change.keep_nullability:
                    new = _with_nullability(new, _nullable(old))
                elif null_to_not_null_disabled and _nullable(old) and not _nullable(new):
                    raise UnsupportedPaimonFeatureError(_NOT_NULL.format(_shown(change.path)))
                why = castable(old, new, explicit)
                if why is not None:
                    raise UnsupportedPaimonFeatureError(f"column {_shown(change.path)!r} cannot change from "
                                                        f"{_type_text(old)} to {_type_text(new)}: {why}")
                return new

            _type_at(fields, change.path, retype)
        elif isinstance(change, UpdateColumnNullability):
            if change.nullable:
                top(change.path, "make nullable", True)

            def renull(old: Any, change: UpdateColumnNullability = change) -> Any:
                if null_to_not_null_disabled and _nullable(old) and not change.nullable:
                    raise UnsupportedPaimonFeatureError(_NOT_NULL.format(_shown(change.path)))
                return _with_nullability(old, change.nullable)

            _type_at(fields, change.path, renull)
        elif isinstance(change, UpdateColumnComment):
            def comment(siblings: list[dict], name: str, change: UpdateColumnComment = change) -> None:
                i = _index(siblings, name, change.path)
                field = {k: v for k, v in siblings[i].items() if k != "description"}
                if change.doc is not None:
                    field["description"] = change.doc
                siblings[i] = field

            _in_fields(fields, change.path, change.path, comment)
        elif isinstance(change, MoveColumn):
            _move(fields, change)
        else:
            raise InvalidArgumentError(f"not a schema change: {change!r}")

    out = {k: v for k, v in document.items() if k != "timeMillis"}
    out.update(id=int(document["id"]) + 1, fields=fields, highestFieldId=highest[0], partitionKeys=partitions,
               primaryKeys=keys, options=renamed_options(options, renames))
    return out


_NOT_NULL = ("cannot make column {0!r} NOT NULL: files written before may hold nulls; set the table option "
             "'alter-column-null-to-not-null.disabled' = 'false' to allow it (as Java asks)")
