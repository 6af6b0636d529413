"""`Table.update_schema()`: column changes gathered, then published as one schema change.

    with table.update_schema() as update:
        update.add_column("discount", pa.float64(), doc="in percent", after="price")
        update.rename_column("qty", "quantity")
        update.drop_column("legacy")
        update.update_column("quantity", field_type=pa.int64())
        update.move_column("note", first=True)

The shape pyiceberg users know; the rules are Paimon's (`paimon.schema_changes`). Nothing is
written until the block ends without an exception (or `commit()` is called); a refused change
raises then, and nothing is written either.  A top-level column is named by a string; a nested
field by a tuple of names (``("address", "zip")``; ``"element"`` of an array, ``"value"`` of a
map on the way)."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa

from ..codec.types import NoPaimonType, paimon_type, parse_type
from ..errors import InvalidArgumentError, MergeTreeError, UnsupportedTypeError
from .paimon.schema_changes import (
    AddColumn,
    DropColumn,
    MoveColumn,
    RenameColumn,
    SchemaChange,
    UpdateColumnComment,
    UpdateColumnNullability,
    UpdateColumnType,
)

__all__ = ["SchemaUpdate"]

ColumnPath = str | Sequence[str]


def _path(path: Any) -> tuple[str, ...]:
    if isinstance(path, str) and path:
        return (path,)
    if isinstance(path, (tuple, list)) and path and all(isinstance(p, str) and p for p in path):
        return tuple(path)
    raise InvalidArgumentError(f"a column is named by a string, a nested field by a tuple of names; not {path!r}")


def _type(field_type: Any, required: bool) -> Any:
    """Paimon's type JSON for `field_type` (a pyarrow type or a Paimon type string)."""
    if isinstance(field_type, pa.DataType):
        try:
            return paimon_type(field_type, nullable=not required)
        except NoPaimonType as exc:
            raise UnsupportedTypeError(str(exc)) from None
    if isinstance(field_type, str):
        try:
            parsed = parse_type(field_type)
        except MergeTreeError as exc:
            raise InvalidArgumentError(f"{field_type!r} is not a Paimon type: {exc}") from None
        text = parsed.text.upper()
        if text.endswith(" NOT NULL"):
            text = text[: -len(" NOT NULL")]
        return text if not required else f"{text} NOT NULL"
    raise InvalidArgumentError(f"a column type is a pyarrow type or a Paimon type string ('BIGINT', "
                               f"'DECIMAL(10, 2)'), not {field_type!r}")


def _position(first: bool, last: bool, after: str | None, before: str | None, name: str,
              required: bool) -> MoveColumn | None:
    given = [what for what, value in (("first", first), ("last", last), ("after", after), ("before", before))
             if value not in (None, False)]
    if len(given) > 1:
        raise InvalidArgumentError(f"give one of first, last, after and before, not {', '.join(given)}")
    if not given:
        if required:
            raise InvalidArgumentError("move_column needs first=True, last=True, after=COLUMN or before=COLUMN")
        return None
    for what, value in (("after", after), ("before", before)):
        if value is not None and (not isinstance(value, str) or not value):
            raise InvalidArgumentError(f"{what} names a column, not {value!r}")
    if first:
        return MoveColumn(name, "FIRST")
    if last:
        return MoveColumn(name, "LAST")
    return MoveColumn(name, "AFTER", after) if after is not None else MoveColumn(name, "BEFORE", before)


class SchemaUpdate:
    """Column changes to a table's schema, published together (`Table.update_schema`)."""

    def __init__(self, publish: Callable[[list[SchemaChange]], None]) -> None:
        self._publish = publish
        self.changes: list[SchemaChange] = []
        self._done = False

    def add_column(self, path: ColumnPath, field_type: Any, doc: str | None = None, required: bool = False, *,
                   first: bool = False, after: str | None = None, before: str | None = None) -> SchemaUpdate:
        """Add a nullable column (or nested field) of `field_type`, last unless placed by
        `first`, `after` or `before` (the rows written before it read it as null); Paimon adds
        no NOT NULL column (`required=True` is refused, as Java refuses it)."""
        where = _path(path)
        self._check_doc(doc)
        move = _position(first, False, after, before, where[-1], False)
        self.changes.append(AddColumn(where, _type(field_type, bool(required)), doc, move))
        return self

    def rename_column(self, path: ColumnPath, new_name: str) -> SchemaUpdate:
        """Rename a column or nested field (old files are read by field id; options naming it
        follow)."""
        if not isinstance(new_name, str) or not new_name:
            raise InvalidArgumentError(f"new_name must be a non-empty string, not {new_name!r}")
        self.changes.append(RenameColumn(_path(path), new_name))
        return self

    def drop_column(self, path: ColumnPath) -> SchemaUpdate:
        """Drop a column or nested field (its values stay in old files, never read again)."""
        self.changes.append(DropColumn(_path(path)))
        return self

    def update_column(self, path: ColumnPath, field_type: Any = None, required: bool | None = None,
                      doc: str | None = None) -> SchemaUpdate:
        """Change a column's type (as Paimon's casts allow; old files' values converted as Java
        converts them when read), its nullability (`required`) or its comment (`doc`)."""
        where = _path(path)
        if field_type is None and required is None and doc is None:
            raise InvalidArgumentError("update_column needs field_type, required or doc")
        if field_type is not None:
            new = _type(field_type, bool(required))
            if not isinstance(new, str):
                raise InvalidArgumentError(f"update_column changes atomic types only; change the fields of "
                                           f"{'.'.join(where)!r} by their paths")
            self.changes.append(UpdateColumnType(where, new, keep_nullability=required is None))
        elif required is not None:
            self.changes.append(UpdateColumnNullability(where, not required))
        if doc is not None:
            self._check_doc(doc)
            self.changes.append(UpdateColumnComment(where, doc))
        return self

    def move_column(self, path: ColumnPath, *, first: bool = False, last: bool = False, after: str | None = None,
                    before: str | None = None) -> SchemaUpdate:
        """Move a top-level column first, last, or after or before another."""
        where = _path(path)
        if len(where) != 1:
            raise InvalidArgumentError("move_column moves top-level columns (as Java does)")
        move = _position(first, last, after, before, where[0], True)
        assert move is not None
        self.changes.append(move)
        return self

    @staticmethod
    def _check_doc(doc: Any) -> None:
        if doc is not None and not isinstance(doc, str):
            raise InvalidArgumentError(f"doc must be a string, not {doc!r}")

    def commit(self) -> None:
        """Publish the changes as the table's next schema (once)."""
        if self._done:
            raise InvalidArgumentError("this schema update was committed already; start another")
        self._done = True
        self._publish(list(self.changes))

    def __enter__(self) -> SchemaUpdate:
        return self

    def __exit__(self, kind: Any, value: Any, traceback: Any) -> None:
        if kind is None and not self._done:
            self.commit()

    def __repr__(self) -> str:
        return f"SchemaUpdate({self.changes!r})"
