"""Tables of formats other than mergetree's own that `Table.open` opens.  The format's reader
and writer live above this layer (Apache Paimon's in `mergetree.paimon`); the package root
registers an opener for it (`register`), called only when such a table is opened, so `table/`
never imports what is above it and `import mergetree` loads none of it."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..codec.layout import SCHEMA_DIR, is_paimon_schema_listing
from ..errors import UnsupportedFormatError
from ..storage import Store
from .objects import list_names

__all__ = ["Opener", "is_paimon_table", "open_paimon", "register"]

# (path as given, storage_options) -> the opened table (a `Table`)
Opener = Callable[[Any, Mapping[str, object] | None], Any]
_OPENERS: dict[str, Opener] = {}


def register(format_name: str, opener: Opener) -> None:
    _OPENERS[format_name] = opener


def is_paimon_table(storage: Store) -> bool:
    """A Paimon table: ``schema/schema-<id>`` files (mergetree's own are ``.json``)."""
    return is_paimon_schema_listing(list_names(storage, SCHEMA_DIR))


def open_paimon(path: Any, storage_options: Mapping[str, object] | None) -> Any:
    opener = _OPENERS.get("paimon")
    if opener is None:
        raise UnsupportedFormatError(f"{path} is an Apache Paimon table and no Paimon support is registered")
    return opener(path, storage_options)
