"""What kind of table a location holds.  An Apache Paimon table is opened by the opener the
package root registers (`register`; it loads `mergetree.paimon` only when such a table is
opened, so `table/` never imports what is above it and `import mergetree` loads none of it).
A table of mergetree's older, private format opens nowhere but in `mergetree migrate`, which
makes it a Paimon table."""
from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from ..codec.layout import SCHEMA_DIR, is_paimon_schema_listing
from ..errors import UnsupportedFormatError
from ..storage import Store
from .objects import list_names, table_path

__all__ = ["Opener", "is_older_table", "is_paimon_table", "open_paimon", "refuse_older", "register"]

# (path as given, storage_options, check) -> the opened table (a `Table`)
Opener = Callable[[Any, Mapping[str, object] | None, bool], Any]
_OPENERS: dict[str, Opener] = {}
_OLDER_SCHEMA = re.compile(r"schema-\d+\.json")


def register(format_name: str, opener: Opener) -> None:
    _OPENERS[format_name] = opener


def is_paimon_table(storage: Store) -> bool:
    """A Paimon table: ``schema/schema-<id>`` files."""
    return is_paimon_schema_listing(list_names(storage, SCHEMA_DIR))


def is_older_table(storage: Store) -> bool:
    """A table of mergetree's older format: ``schema/schema-<id>.json`` files."""
    return any(_OLDER_SCHEMA.fullmatch(name) for name in list_names(storage, SCHEMA_DIR))


def refuse_older(storage: Store) -> None:
    """Raise UnsupportedFormatError, saying how to migrate it, if a table of the older format is there."""
    if is_older_table(storage):
        path = table_path(storage)
        raise UnsupportedFormatError(
            f"{path} is a table of mergetree's older format, which this release reads only to migrate it: "
            f"run `mergetree migrate {path} NEW_PATH` (or mergetree.migrate) to make it an Apache Paimon table")


def open_paimon(path: Any, storage_options: Mapping[str, object] | None, check: bool = True) -> Any:
    opener = _OPENERS.get("paimon")
    if opener is None:
        raise UnsupportedFormatError(f"{path} is an Apache Paimon table and no Paimon support is registered")
    return opener(path, storage_options, check)
