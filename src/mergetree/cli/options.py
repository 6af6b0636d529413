"""`--storage-option KEY=VALUE`: how a command given a table path learns the options of the
store it lives on (an endpoint, a region, credentials; the key names of docs/STORAGE.md, as
`Table.open(path, storage_options=...)` takes them).

The values are handed to the storage layer and shown nowhere: a malformed item is an error that
names its position and at most its key, never its value (which may be a secret key)."""
from __future__ import annotations

import argparse
import re
from typing import Any

from ..errors import InvalidArgumentError
from ..iceberg import IcebergTable, is_iceberg_location
from ..iceberg import open as open_iceberg
from ..table import Table
from ..table.objects import locate, table_path

__all__ = ["add_storage_option", "add_table_path", "open_organized", "open_table", "redact_arguments",
           "remember_location", "storage_options"]

_KEY = re.compile(r"[A-Za-z][A-Za-z0-9_.\-]*")
_EXAMPLE = "e.g. --storage-option aws_endpoint_url=http://127.0.0.1:9000"


TABLE_PATH_HELP = "table directory, or its URI (s3://bucket/prefix, gs://, az://, abfss://)"


def add_table_path(parser: argparse.ArgumentParser, help: str = TABLE_PATH_HELP, nargs: Any = None,
                   name: str = "path", metavar: str | None = None) -> None:
    """The table path argument and `--storage-option` beside it."""
    if nargs is None:
        parser.add_argument(name, help=help, metavar=metavar)
    else:
        parser.add_argument(name, help=help, nargs=nargs, metavar=metavar)
    add_storage_option(parser)


def add_storage_option(parser: argparse.ArgumentParser) -> None:
    """`--storage-option KEY=VALUE`, repeatable (read back with `storage_options(args)`)."""
    parser.add_argument("--storage-option", action="append", dest="storage_option", metavar="KEY=VALUE",
                        help="an option of the store the table lives on (docs/STORAGE.md: aws_endpoint_url, "
                             "aws_region, aws_access_key_id, aws_secret_access_key, google_service_account, "
                             "azure_storage_account_name, ...); repeat for more. Not given: the environment's "
                             "(AWS_*, GOOGLE_*, AZURE_STORAGE_*). Values are never printed")


def storage_options(args: argparse.Namespace) -> dict[str, str] | None:
    """The `--storage-option` items as a dict (None when none were given).  A malformed item
    (no '=', no key, no value, a key given twice) is an InvalidArgumentError naming its position
    and key, never its value."""
    items = getattr(args, "storage_option", None)
    if not items:
        return None
    options: dict[str, str] = {}
    seen: dict[str, str] = {}
    for position, item in enumerate(items, 1):
        key, sep, value = item.partition("=")
        key = key.strip()
        where = f"--storage-option #{position}"
        if not sep:
            raise InvalidArgumentError(f"{where} is not KEY=VALUE (it has no '='; {_EXAMPLE})")
        if not _KEY.fullmatch(key):
            raise InvalidArgumentError(f"{where} is not KEY=VALUE: the part before '=' is not an option name "
                                       f"({_EXAMPLE})")
        if not value.strip():
            raise InvalidArgumentError(f"{where} gives no value for {key!r}")
        folded = key.lower()  # the storage layer reads keys case-insensitively
        if folded in seen:
            raise InvalidArgumentError(f"--storage-option {key!r} is given twice (as {seen[folded]!r} before)")
        seen[folded] = key
        options[key] = value
    return options


def open_table(args: argparse.Namespace, path: str | None = None, check: bool = True) -> Table:
    """`Table.open` of the command's table path (or `path`) with its `--storage-option`s."""
    return Table.open(args.path if path is None else path, check=check, storage_options=storage_options(args))


def open_organized(args: argparse.Namespace) -> Table | IcebergTable:
    """The table the organize commands (`advise`, ...) work on: a Paimon table's path, or an
    Iceberg table's ``iceberg://CATALOG/NAMESPACE.TABLE`` (its catalog as pyiceberg configures it)."""
    if is_iceberg_location(args.path):
        return open_iceberg(args.path, storage_options(args))
    return open_table(args)


def remember_location(args: argparse.Namespace, path: str) -> str:
    """For the commands that hand a table path on to code that opens it itself (the replay, the
    report, the daemon, the SQL import, repair): the path's store is resolved with the
    `--storage-option`s and kept for this process (nothing is contacted), so the code that
    opens the path by name reaches it with them.  Returns the table's path as the table layer
    names it (its absolute local path, or its URI)."""
    options = storage_options(args)
    if options is None or is_iceberg_location(path):  # an Iceberg table's store is its catalog's FileIO
        return path
    return table_path(locate(path, options))


_ASSIGNMENT = re.compile(r"^([^=\s]*)=.*$", re.DOTALL)


def redact_arguments(arguments: list[str]) -> list[str]:
    """Command-line words as they may be shown in an error: the value of every KEY=VALUE word
    (a mistyped `--storage-options aws_secret_access_key=...`) replaced by ***."""
    return [_ASSIGNMENT.sub(r"\1=***", word) for word in arguments]
