"""Loading from the shell: `mergetree create` (a table from a schema written out or taken from a
data file) and `mergetree write` (Parquet, CSV and JSON-lines files, or an Arrow IPC stream on
standard input, streamed through the table's write buffer with a progress bar)."""
from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.json as pajson
import pyarrow.parquet as pq

from ..codec.types import NoPaimonType, parse_type
from ..errors import InvalidArgumentError, MergeTreeError, UnsupportedFormatError
from ..merge import ROW_KIND_COLUMN
from ..table import Table
from .options import open_table, remember_location, storage_options
from .render import out_console, progress

__all__ = ["FORMATS", "add_commands", "arrow_type", "parse_schema"]

FORMATS = ("parquet", "csv", "json")  # `write --format`; "auto": by the file's suffix
_SUFFIXES = {".parquet": "parquet", ".parq": "parquet", ".csv": "csv", ".json": "json", ".jsonl": "json",
             ".ndjson": "json"}
_TIMESTAMP = re.compile(r"timestamp\[(s|ms|us|ns)(?:,\s*tz=([^\]]+))?\]")
_DECIMAL = re.compile(r"decimal(?:128)?\((\d+),\s*(\d+)\)")
_CONTAINER = re.compile(r"(list|large_list)<(.+)>")


def add_commands(command: Any) -> None:
    """The `create` and `write` subcommands (`command` is app.py's subcommand factory)."""
    from .options import add_table_path
    p = command("create", "create a table from a schema ('id:int64,name:string,...') or a data file's schema",
                create)
    add_table_path(p, help="where the table goes: a new or empty directory, a URI, or W/db.db/name")
    shape = p.add_mutually_exclusive_group(required=True)
    shape.add_argument("--schema", metavar="'COL:TYPE,...'",
                       help="the columns, with Arrow type names: int64, string, double, bool, date32, "
                            "timestamp[us], timestamp[us, tz=UTC], decimal128(12, 2), list<int64>, ... "
                            "(Paimon's names too: BIGINT, STRING, DECIMAL(12, 2))")
    shape.add_argument("--schema-of", metavar="FILE", help="take the columns of this Parquet, CSV or JSON-lines file")
    p.add_argument("--primary-key", action="append", metavar="COL[,COL]", help="the primary key (repeatable)")
    p.add_argument("--partition-by", action="append", metavar="COL[,COL]", help="partition columns (repeatable)")
    p.add_argument("--buckets", type=int, help="buckets per partition (default 1; -1: dynamic buckets)")
    p.add_argument("--bucket-key", action="append", metavar="COL[,COL]", help="the bucket key (repeatable)")
    p.add_argument("--merge-engine", default="deduplicate",
                   choices=["deduplicate", "first-row", "partial-update", "aggregate"])
    p.add_argument("--option", action="append", metavar="KEY=VALUE", help="a table option (repeatable)")

    p = command("write", "write Parquet, CSV or JSON-lines files (or '-': an Arrow IPC stream on standard "
                         "input) into a table, in one commit", write)
    add_table_path(p)
    p.add_argument("files", nargs="+", metavar="FILE", help="the files to write ('-' reads standard input)")
    p.add_argument("--format", choices=["auto", *FORMATS], default="auto",
                   help="the files' format (auto: by suffix; '-' is always an Arrow IPC stream)")
    p.add_argument("--row-kind-column", metavar="COL",
                   help=f"a column of row kinds (+I -U +U -D, or Debezium's c r u d) applied as the kinds say "
                        f"(default: {ROW_KIND_COLUMN!r} when the files have it)")
    how = p.add_mutually_exclusive_group()
    how.add_argument("--delete", action="store_true", help="the rows are keys to delete")
    how.add_argument("--overwrite", action="store_true", help="replace the partitions the rows are in")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


# -- types --------------------------------------------------------------------------------

def arrow_type(text: str) -> pa.DataType:
    """An Arrow type from its name as pyarrow prints it (``int64``, ``timestamp[us, tz=UTC]``,
    ``decimal128(12, 2)``, ``list<string>``), or a Paimon type name (``BIGINT``)."""
    spec = text.strip()
    lowered = spec.lower()
    found = _TIMESTAMP.fullmatch(lowered)
    if found:
        zone = spec[spec.lower().index("tz=") + 3:-1].strip() if found.group(2) else None
        return pa.timestamp(found.group(1), zone)
    found = _DECIMAL.fullmatch(lowered)
    if found:
        return pa.decimal128(int(found.group(1)), int(found.group(2)))
    found = _CONTAINER.fullmatch(spec)
    if found:
        item = arrow_type(found.group(2))
        return pa.list_(item) if found.group(1) == "list" else pa.large_list(item)
    try:
        return pa.type_for_alias(lowered)
    except ValueError:
        pass
    try:
        return parse_type(spec).arrow
    except (NoPaimonType, UnsupportedFormatError, MergeTreeError, KeyError, ValueError):
        raise InvalidArgumentError(f"unknown type {spec!r}: give an Arrow type name (int64, string, double, bool, "
                                   f"date32, timestamp[us], decimal128(12, 2), list<int64>, ...) or a Paimon "
                                   f"one (BIGINT, STRING, ...)") from None


def _split_top(text: str, sep: str) -> list[str]:
    """`text` split at `sep` outside brackets: ``a:decimal(12, 2),b:list<int64>`` -> two parts."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "(<[":
            depth += 1
        elif ch in ")>]":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def parse_schema(text: str) -> pa.Schema:
    """``'id:int64 not null,name:string'`` as an Arrow schema (InvalidArgumentError naming the
    column and what is wrong)."""
    fields = []
    for item in _split_top(text, ","):
        if not item.strip():
            continue
        name, colon, type_text = item.partition(":")
        name = name.strip()
        if not colon or not name or not type_text.strip():
            raise InvalidArgumentError(f"--schema: {item.strip()!r} is not COLUMN:TYPE")
        nullable = True
        if type_text.strip().lower().endswith(" not null"):
            type_text, nullable = type_text.strip()[: -len(" not null")], False
        try:
            fields.append(pa.field(name, arrow_type(type_text), nullable=nullable))
        except InvalidArgumentError as exc:
            raise InvalidArgumentError(f"--schema: column {name!r}: {exc}") from None
    if not fields:
        raise InvalidArgumentError("--schema names no column")
    return pa.schema(fields)


def _names(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    return [n.strip() for v in values for n in v.split(",") if n.strip()]


def _options(values: list[str] | None) -> dict[str, str]:
    out = {}
    for text in values or ():
        key, eq, value = text.partition("=")
        if not eq or not key.strip():
            raise InvalidArgumentError(f"--option {text!r} is not KEY=VALUE")
        out[key.strip()] = value.strip()
    return out


# -- files --------------------------------------------------------------------------------

def _format_of(path: str, given: str) -> str:
    if given != "auto":
        return given
    kind = _SUFFIXES.get(os.path.splitext(path)[1].lower())
    if kind is None:
        raise InvalidArgumentError(f"{path}: cannot tell its format from the suffix; give --format "
                                   f"{'|'.join(FORMATS)}")
    return kind


def _checked(path: str) -> str:
    if not os.path.isfile(path):
        raise InvalidArgumentError(f"{path}: no such file")
    return path


def file_schema(path: str, kind: str) -> pa.Schema:
    """The columns of a data file (CSV and JSON lines: as their first block's values say)."""
    _checked(path)
    try:
        if kind == "parquet":
            return pq.read_schema(path)
        if kind == "csv":
            with pacsv.open_csv(path) as reader:
                return reader.schema
        return next(iter(_json_batches(path, None)), pa.record_batch({})).schema
    except (pa.ArrowException, OSError) as exc:
        raise InvalidArgumentError(f"{path}: not a readable {kind} file: {exc}") from None


def _parsed_natively(t: pa.DataType) -> bool:
    """Types Arrow's JSON reader parses from JSON values (the rest are read as text and cast)."""
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t) or pa.types.is_string(t) \
        or pa.types.is_timestamp(t)


def _json_batches(path: str, schema: pa.Schema | None) -> Iterator[pa.RecordBatch]:
    """A JSON-lines file's rows (in `schema`'s types: dates, times and decimals written as
    strings, as people write them, are cast)."""
    if schema is None:
        yield from pajson.read_json(path).to_batches()
        return
    read = pa.schema([f if _parsed_natively(f.type) else pa.field(f.name, pa.string()) for f in schema])
    table = pajson.read_json(path, parse_options=pajson.ParseOptions(explicit_schema=read))
    for f in schema:
        if f.name in table.column_names and table.schema.field(f.name).type != f.type:
            try:
                at = table.schema.get_field_index(f.name)
                table = table.set_column(at, f.name, table.column(f.name).cast(f.type))
            except pa.ArrowException as exc:
                raise InvalidArgumentError(f"{path}: column {f.name!r} does not hold {f.type} values: {exc}") from None
    yield from table.to_batches()


def file_batches(path: str, kind: str, schema: pa.Schema) -> tuple[Iterator[pa.RecordBatch], int | None]:
    """A file's rows as batches in the table's types where the format has none of its own (CSV,
    JSON lines), and its row count where the file says it up front (Parquet)."""
    _checked(path)
    if kind == "parquet":
        try:
            parquet = pq.ParquetFile(path)
        except (pa.ArrowException, OSError) as exc:
            raise InvalidArgumentError(f"{path}: not a readable Parquet file: {exc}") from None
        return parquet.iter_batches(batch_size=65536), parquet.metadata.num_rows
    types = {f.name: f.type for f in schema}
    if kind == "csv":
        try:
            with open(path, "rb") as f:
                header = f.readline().decode("utf-8", "replace")
            named = [c.strip().strip('"') for c in header.rstrip("\r\n").split(",")]
            reader = pacsv.open_csv(path, convert_options=pacsv.ConvertOptions(
                column_types={n: types[n] for n in named if n in types}, strings_can_be_null=True))
        except (pa.ArrowException, OSError) as exc:
            raise InvalidArgumentError(f"{path}: not a readable CSV file: {exc}") from None
        return iter(reader), None
    present = file_schema(path, "json").names
    return _json_batches(path, pa.schema([pa.field(n, types[n]) if n in types else pa.field(n, pa.string())
                                          for n in present])), None


def _counted(path: str, batches: Iterator[pa.RecordBatch], advance: Any, done: list[int],
             total: int | None) -> Iterator[pa.RecordBatch]:
    """The batches, the progress bar advanced by their rows; a file that stops reading midway
    (a broken CSV line, a truncated Parquet file) is named with where it broke."""
    try:
        for batch in batches:
            done[0] += batch.num_rows
            advance(done[0], total)
            yield batch
    except (pa.ArrowException, OSError) as exc:
        raise InvalidArgumentError(f"{path}: cannot be read past row {done[0]:,}: {exc}; nothing was "
                                   f"written") from None


# -- the commands -------------------------------------------------------------------------

def create(args: argparse.Namespace) -> int:
    """Create a table (nothing is written when anything is wrong)."""
    if args.schema is not None:
        schema = parse_schema(args.schema)
    else:
        schema = file_schema(args.schema_of, _format_of(args.schema_of, "auto"))
    options = storage_options(args)
    table = Table.create(args.path, schema, primary_key=_names(args.primary_key),
                         partition_by=_names(args.partition_by), buckets=args.buckets,
                         bucket_key=_names(args.bucket_key), merge_engine=args.merge_engine,
                         options=_options(args.option), storage_options=options)
    remember_location(args, table.path)
    out_console.print(f"created {table.path}: {len(table.schema)} column(s)"
                      + (f", primary key {', '.join(table.table_schema.paimon.primary_keys)}"
                         if table.table_schema.paimon.primary_keys else " (an append table)"))
    return 0


def write(args: argparse.Namespace) -> int:
    """Write the files into the table in one commit: each streamed through the write buffer."""
    table = open_table(args)
    schema = table.schema
    sources = []
    for path in args.files:
        if path == "-":
            sources.append((path, "arrow"))
        else:
            sources.append((path, _format_of(path, args.format)))
    done = [0]
    totals = [0]

    def pieces(advance: Any) -> Iterator[pa.RecordBatch]:
        for path, kind in sources:
            if kind == "arrow":
                try:
                    reader = pa.ipc.open_stream(sys.stdin.buffer)
                except pa.ArrowException as exc:
                    raise InvalidArgumentError(f"standard input is not an Arrow IPC stream: {exc}; nothing was "
                                               f"written") from None
                yield from _counted("standard input", iter(reader), advance, done, None)
                continue
            batches, rows = file_batches(path, kind, schema)
            if rows is not None:
                totals[0] += rows
            yield from _counted(path, batches, advance, done, totals[0] or None)

    with progress("write", "rows", enabled=not args.no_progress) as advance:
        def moved(rows: int, total: int | None) -> None:
            advance(rows, max(total or 0, rows))
        stream = pieces(moved)
        first = next(stream, None)
        if first is None:
            out_console.print("the files hold no rows; nothing was written")
            return 0
        kinds = args.row_kind_column or (ROW_KIND_COLUMN if ROW_KIND_COLUMN in first.schema.names else None)

        def everything() -> Iterator[pa.RecordBatch]:
            yield first
            yield from stream
        reader = pa.RecordBatchReader.from_batches(first.schema, everything())
        if args.delete:
            snapshot = table.delete(reader)
        else:
            snapshot = table.write(reader, row_kind_column=kinds, overwrite=bool(args.overwrite))
    if snapshot is None:
        out_console.print(f"{done[0]:,} row(s) read; nothing changed")
    else:
        out_console.print(f"wrote {done[0]:,} row(s) from {len(sources)} file(s) in snapshot {snapshot.id} "
                          f"({snapshot.commit_kind})")
    return 0
