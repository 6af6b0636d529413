"""Iceberg tables by name: ``iceberg://CATALOG/NAMESPACE.TABLE``, the catalog configured as pyiceberg
users configure it (``.pyiceberg.yaml`` in ``PYICEBERG_HOME``, the home or the working directory;
``PYICEBERG_CATALOG__<NAME>__<KEY>`` variables), read afresh at every open so a change is seen.  A
catalog named nowhere is the embedded one: a `SqlCatalog` on SQLite under ``MERGETREE_ICEBERG_HOME``
(default ``~/.mergetree/iceberg``), ``<name>/catalog.db`` with its warehouse in ``<name>/warehouse``.
Object stores go through pyiceberg's FileIO, with the catalog's own properties (``s3.endpoint``,
``s3.access-key-id``, ...) and any storage options given at the open."""
from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidArgumentError, TableNotFoundError

__all__ = ["HOME_ENVIRONMENT", "SCHEME", "IcebergLocation", "embedded_home", "is_iceberg_location", "load_catalog",
           "load_table", "parse_location"]

SCHEME = "iceberg://"
HOME_ENVIRONMENT = "MERGETREE_ICEBERG_HOME"
_NAME = re.compile(r"[A-Za-z0-9_\-]+")
# mergetree's storage options (as `Table.open` takes them) in pyiceberg's FileIO names
_FILEIO_NAMES = {"endpoint": "s3.endpoint", "endpoint_url": "s3.endpoint", "aws_endpoint": "s3.endpoint",
                 "aws_endpoint_url": "s3.endpoint",
                 "access_key_id": "s3.access-key-id", "aws_access_key_id": "s3.access-key-id",
                 "secret_access_key": "s3.secret-access-key", "aws_secret_access_key": "s3.secret-access-key",
                 "session_token": "s3.session-token", "aws_session_token": "s3.session-token",
                 "region": "s3.region", "aws_region": "s3.region"}


@dataclass(frozen=True)
class IcebergLocation:
    catalog: str
    namespace: tuple[str, ...]
    table: str

    @property
    def identifier(self) -> tuple[str, ...]:
        return (*self.namespace, self.table)

    def __str__(self) -> str:
        return f"{SCHEME}{self.catalog}/{'.'.join(self.identifier)}"


def is_iceberg_location(text: object) -> bool:
    return isinstance(text, str) and text.startswith(SCHEME)


def parse_location(text: object) -> IcebergLocation:
    """``iceberg://CATALOG/NAMESPACE.TABLE`` (a nested namespace: ``a.b.TABLE``), checked."""
    if not is_iceberg_location(text):
        raise InvalidArgumentError(f"an Iceberg table is named iceberg://CATALOG/NAMESPACE.TABLE, not {text!r}")
    rest = str(text)[len(SCHEME):]
    catalog, _, name = rest.partition("/")
    parts = name.split(".") if name else []
    if not _NAME.fullmatch(catalog) or len(parts) < 2 or not all(parts):
        raise InvalidArgumentError(f"an Iceberg table is named iceberg://CATALOG/NAMESPACE.TABLE (a catalog name, "
                                   f"then the namespace and the table joined by '.'), not {text!r}")
    return IcebergLocation(catalog, tuple(parts[:-1]), parts[-1])


def embedded_home() -> str:
    return os.path.abspath(os.path.expanduser(os.environ.get(HOME_ENVIRONMENT) or "~/.mergetree/iceberg"))


def _require_pyiceberg() -> None:
    try:
        import pyiceberg  # noqa: F401
    except ImportError:
        raise ImportError("Iceberg tables need pyiceberg: pip install 'pyiceberg[sql-sqlite,pyiceberg-core]>=0.12' "
                          "(from a clone of mergetree: pip install '.[iceberg]')") from None


def _configured(name: str) -> dict[str, Any] | None:
    _require_pyiceberg()
    from pyiceberg.utils.config import Config
    found = Config().get_catalog_config(name)
    return dict(found) if found else None


def load_catalog(name: str, storage_options: Mapping[str, object] | None = None) -> Any:
    """The pyiceberg catalog `name`: as configured, or the embedded SQLite one (made on first use)."""
    _require_pyiceberg()
    from pyiceberg.catalog import load_catalog as pyiceberg_load
    properties = _configured(name)
    if properties is None:
        home = os.path.join(embedded_home(), name)
        os.makedirs(os.path.join(home, "warehouse"), exist_ok=True)
        properties = {"type": "sql", "uri": f"sqlite:///{os.path.join(home, 'catalog.db')}",
                      "warehouse": f"file://{os.path.join(home, 'warehouse')}"}
    for key, value in (storage_options or {}).items():
        if value is not None:
            properties[_FILEIO_NAMES.get(key.lower(), key)] = str(value)
    try:
        return pyiceberg_load(name, **properties)
    except (ValueError, ImportError) as exc:
        raise InvalidArgumentError(f"cannot open the Iceberg catalog {name!r} as configured ({exc}); configure it as "
                                   f"pyiceberg does (.pyiceberg.yaml or PYICEBERG_CATALOG__{name.upper()}__URI=...)"
                                   ) from None


def load_table(location: IcebergLocation, storage_options: Mapping[str, object] | None = None) -> tuple[Any, Any]:
    """(catalog, pyiceberg table) for `location`; TableNotFoundError naming it when it has none."""
    _require_pyiceberg()
    from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError
    catalog = load_catalog(location.catalog, storage_options)
    try:
        return catalog, catalog.load_table(location.identifier)
    except (NoSuchTableError, NoSuchNamespaceError):
        raise TableNotFoundError(f"no Iceberg table {location}: catalog {location.catalog!r} has no table "
                                 f"{'.'.join(location.identifier)}") from None
