"""What makes a directory a Paimon table: ``schema/schema-<id>`` files, named without an
extension (mergetree's older format wrote ``schema/schema-<id>.json``)."""
from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["SCHEMA_DIR", "is_paimon_schema_listing", "schema_ids"]

SCHEMA_DIR = "schema"
_SCHEMA_FILE = re.compile(r"schema-(\d+)")


def schema_ids(names: Iterable[str]) -> list[int]:
    """The schema ids among the names of a table's ``schema/`` directory, ascending."""
    return sorted(int(m.group(1)) for m in map(_SCHEMA_FILE.fullmatch, names) if m)


def is_paimon_schema_listing(names: Iterable[str]) -> bool:
    """Whether the names of a directory's ``schema/`` entries are a Paimon table's."""
    return bool(schema_ids(names))
