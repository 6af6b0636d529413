"""The directories every table has, and temporary names: a Paimon table's own file names are
in `table.paimon.metadata`."""
from __future__ import annotations

import re

__all__ = ["CONSUMER_DIR", "MANIFEST_DIR", "SCHEMA_DIR", "SNAPSHOT_DIR", "temporary_final"]

SCHEMA_DIR = "schema"
SNAPSHOT_DIR = "snapshot"
MANIFEST_DIR = "manifest"
CONSUMER_DIR = "consumer"

_HEX = "[0-9a-f]{32}"
# a file being written: ``<final>.<hex>.tmp`` (a writer's own), or ``.<name>.tmp-<hex>`` (the store's)
_TEMPORARY = re.compile(rf"(.+)\.(?:{_HEX}|\d+)\.tmp")
_STORE_TEMPORARY = re.compile(rf"((?:.*/)?)\.([^/]+)\.tmp-{_HEX}")


def temporary_final(name: str) -> str | None:
    """The name a temporary file was to be published under, or None if it is not one."""
    temporary = _TEMPORARY.fullmatch(name)
    if temporary:
        return temporary.group(1)
    stored = _STORE_TEMPORARY.fullmatch(name)
    return stored.group(1) + stored.group(2) if stored else None
