"""The engine's view of a table's schema: columns, primary key, partitioning, buckets, merge
engine, options (`table.paimon.tables.table_schema` makes it from a Paimon schema)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from ..errors import InvalidArgumentError
from ..merge.engines import ENGINES
from ..merge.runs import plan_key_column
from .options import resolve_options
from .type_policy import require, stored_schema

__all__ = ["KEY_PREFIX", "KIND_COLUMN", "SEQUENCE_COLUMN", "SYSTEM_COLUMNS", "TableSchema", "column_names"]

# Physical columns of primary-key data files, laid out as Paimon does:
# _KEY_<pk>..., _SEQUENCE_NUMBER, _VALUE_KIND, then every table column.
KEY_PREFIX = "_KEY_"
SEQUENCE_COLUMN = "_SEQUENCE_NUMBER"
KIND_COLUMN = "_VALUE_KIND"
SYSTEM_COLUMNS = (SEQUENCE_COLUMN, KIND_COLUMN)


@dataclass(frozen=True)
class TableSchema:
    """A table's columns, keys, partitioning, buckets, engine and options, under one schema id."""

    schema: pa.Schema
    primary_key: tuple[str, ...] = ()
    partition_by: tuple[str, ...] = ()
    buckets: int = 1
    bucket_key: tuple[str, ...] = ()
    merge_engine: str = "deduplicate"
    options: dict[str, str] = field(default_factory=dict)
    schema_id: int = 0
    # the Paimon schema it is the view of (`PaimonSchema`).  `primary_key` is the key its data
    # files hold — the primary key without the partition columns, as a key lives in one
    # partition — and its options are Paimon's
    paimon: Any = field(default=None, compare=False, repr=False)

    @classmethod
    def create(cls, schema: pa.Schema, primary_key=None, partition_by=None, buckets: int = 1,
               bucket_key=None, merge_engine: str = "deduplicate",
               options: dict[str, str] | None = None) -> TableSchema:
        """Check everything about a new table before anything is written (the type policy's
        rules, the engine's options)."""
        if not isinstance(schema, pa.Schema):
            raise InvalidArgumentError(f"schema must be a pyarrow.Schema, not {type(schema).__name__}")
        # the types the files give back; refuses what such a table cannot store
        schema = stored_schema(schema)
        pk = column_names(primary_key, "primary_key")
        parts = column_names(partition_by, "partition_by")
        bkey = column_names(bucket_key, "bucket_key")
        names = schema.names
        if not names:
            raise InvalidArgumentError("a table needs at least one column")
        if len(set(names)) != len(names):
            raise InvalidArgumentError(f"the schema repeats a column name: {names}")
        for name in names:
            if name in SYSTEM_COLUMNS or name.startswith(KEY_PREFIX):
                raise InvalidArgumentError(f"column name {name!r} is reserved")
        for role, cols in (("primary key", pk), ("partition", parts), ("bucket key", bkey)):
            if len(set(cols)) != len(cols):
                raise InvalidArgumentError(f"the {role} names a column twice: {list(cols)}")
            for c in cols:
                if c not in names:
                    raise InvalidArgumentError(f"{role} column {c!r} is not in the schema {names}")
        if isinstance(buckets, bool) or not isinstance(buckets, int) or not 1 <= buckets <= 2**31 - 1:
            raise InvalidArgumentError(f"buckets must be an integer from 1 to 2147483647, not {buckets!r}")
        if not isinstance(merge_engine, str) or merge_engine not in ENGINES or merge_engine == "none":
            choices = ", ".join(e for e in ENGINES if e != "none")
            raise InvalidArgumentError(f"unknown merge engine {merge_engine!r}; choose one of {choices}")
        if pk:
            for c in parts:
                if c not in pk:
                    raise InvalidArgumentError(
                        f"partition column {c!r} must be part of the primary key {list(pk)} "
                        f"(a key must live in exactly one partition)")
            if not bkey:
                bkey = tuple(c for c in pk if c not in parts) or pk
            for c in bkey:
                if c not in pk:
                    raise InvalidArgumentError(f"bucket key column {c!r} must be part of the primary key")
        elif merge_engine != "deduplicate":
            raise InvalidArgumentError("merge engines need a primary key")
        if buckets > 1 and not bkey:
            raise InvalidArgumentError("an append table with several buckets needs a bucket_key")
        _check_column_types(schema, pk, parts, bkey if buckets > 1 else ())
        opts = resolve_options(options, schema, merge_engine, pk)
        fields = [f.with_nullable(False) if f.name in pk else f for f in schema]
        return cls(pa.schema(fields), pk, parts, buckets, bkey, merge_engine, opts)

    @property
    def has_primary_key(self) -> bool:
        return bool(self.primary_key)

    @property
    def file_schema(self) -> pa.Schema:
        """The columns of a data file."""
        if not self.primary_key:
            return self.schema
        keys = [pa.field(KEY_PREFIX + k, self.schema.field(k).type, nullable=False) for k in self.primary_key]
        system = [pa.field(SEQUENCE_COLUMN, pa.int64(), nullable=False),
                  pa.field(KIND_COLUMN, pa.int8(), nullable=False)]
        # value columns are nullable in files: a delete carries only the key
        return pa.schema(keys + system + [f.with_nullable(True) for f in self.schema])

    @property
    def file_key(self) -> list[str]:
        return [KEY_PREFIX + k for k in self.primary_key]

    def restore_key_columns(self, data):
        """Copy the `_KEY_` columns over the table's key columns.  Merge engines fold the
        table columns like values, which can null a key (a key whose versions are all
        deletes); the `_KEY_` columns are the truth."""
        for k in self.primary_key:
            i = data.schema.get_field_index(k)
            if i >= 0:  # a read of some columns may leave a key column out
                data = data.set_column(i, data.schema.field(i), data.column(KEY_PREFIX + k))
        return data


def column_names(value: Any, role: str) -> tuple[str, ...]:
    """A column name or a list of them, as a tuple (InvalidArgumentError otherwise)."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise InvalidArgumentError(f"{role} must be a column name or a list of names, not {value!r}")


def _check_column_types(schema: pa.Schema, primary_key: tuple[str, ...], partition_by: tuple[str, ...],
                        hashed: tuple[str, ...]) -> None:
    """Keys must be orderable, partition values storable, bucket columns hashable by Paimon's
    bucket hash: the type policy's rules; the core's comparators and the bucket hash agree with it."""
    for name in primary_key:
        require(name, schema.field(name).type, "key")
        plan_key_column(name, schema.field(name).type)
    for name in partition_by:
        require(name, schema.field(name).type, "partition")
    for name in hashed:
        require(name, schema.field(name).type, "bucket")
