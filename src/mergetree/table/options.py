"""Table options: every key a table accepts, with its default, parser and meaning, in one table.

Options are stored as strings in the table's schema file (as Paimon stores them) and
checked when the table is created: an unknown key, a malformed value or an aggregate
function that cannot apply to its column is an `InvalidArgumentError` before anything is
written.  `TableOptions` is the parsed, typed view the table code reads.
"""
from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from ..errors import InvalidArgumentError
from ..merge.engines import AGGREGATE_FUNCTIONS, check_aggregate_type
from .compaction.planner import (
    KEY_MAX_SIZE_AMP,
    KEY_NUM_LEVELS,
    KEY_SIZE_RATIO,
    KEY_SMALL_FILE_RATIO,
    KEY_STOP_TRIGGER,
    KEY_TARGET_FILE_SIZE,
    KEY_TRIGGER,
    CompactionOptions,
    parse_memory_size,
)

__all__ = ["OPTIONS", "OptionSpec", "TableOptions", "aggregate_option", "describe_options", "resolve_options"]


def _parse_bool(text: str, key: str) -> bool:
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise InvalidArgumentError(f"option {key!r} must be 'true' or 'false', got {text!r}")
    return lowered == "true"


def _int_parser(minimum: int) -> Callable[[str, str], int]:
    def parse(text: str, key: str) -> int:
        match = re.fullmatch(r"\s*([+-]?\d+)\s*", text)
        if match is None:
            raise InvalidArgumentError(f"option {key!r} must be an integer, got {text!r}")
        value = int(match.group(1))
        if value < minimum:
            raise InvalidArgumentError(f"option {key!r} must be at least {minimum}, got {value}")
        return value
    return parse


def _parse_size(text: str, key: str) -> int:
    value = parse_memory_size(text, key)
    if value < 1:
        raise InvalidArgumentError(f"option {key!r} must be at least 1 byte, got {text!r}")
    return value


def _parse_ratio(text: str, key: str) -> float:
    try:
        value = float(text.strip())
    except ValueError:
        raise InvalidArgumentError(f"option {key!r} must be a number, got {text!r}") from None
    if not 0 <= value <= 1:
        raise InvalidArgumentError(f"option {key!r} must be between 0 and 1, got {text!r}")
    return value


@dataclass(frozen=True)
class OptionSpec:
    """One table option: its key, default (None: derived from others), parser and meaning."""

    key: str
    default: str | None
    parse: Callable[[str, str], Any]
    doc: str


OPTIONS: dict[str, OptionSpec] = {spec.key: spec for spec in (
    OptionSpec("write-buffer-size", "256 mb", _parse_size,
               "rows are buffered up to about this much Arrow memory, then sorted and flushed as level-0 files"),
    OptionSpec(KEY_TARGET_FILE_SIZE, "128 mb", _parse_size,
               "data files are rolled at about this size (in memory)"),
    OptionSpec("write-only", "false", _parse_bool,
               "true: writes never compact (run `compact` yourself or from Spark)"),
    OptionSpec("manifest.merge-min-count", "30", _int_parser(1),
               "fold a snapshot's base manifests into one once it has this many"),
    OptionSpec(KEY_TRIGGER, "5", _int_parser(1),
               "sorted runs per bucket that trigger a compaction"),
    OptionSpec(KEY_STOP_TRIGGER, None, _int_parser(1),
               "sorted runs per bucket at which writes compact inline (default: trigger + 3)"),
    OptionSpec(KEY_NUM_LEVELS, None, _int_parser(2), "LSM levels (default: trigger + 1)"),
    OptionSpec(KEY_MAX_SIZE_AMP, "200", _int_parser(0),
               "compact everything when newer runs exceed this percentage of the oldest run"),
    OptionSpec(KEY_SIZE_RATIO, "1", _int_parser(0),
               "percentage slack when collecting runs of similar size for a compaction"),
    OptionSpec(KEY_SMALL_FILE_RATIO, "0.7", _parse_ratio,
               "files below this fraction of target-file-size are rewritten with their neighbours"),
)}

# fields.<column>.aggregate-function (aggregate tables): the column's aggregate.
_AGGREGATE_KEY = re.compile(r"fields\.(.+)\.aggregate-function")


def aggregate_option(column: str) -> str:
    return f"fields.{column}.aggregate-function"


def describe_options() -> list[tuple[str, str, str]]:
    """(key, default, meaning) of every option, for help texts and docs."""
    rows = [(s.key, s.default if s.default is not None else "(derived)", s.doc) for s in OPTIONS.values()]
    rows.append((aggregate_option("<column>"), "last_non_null_value",
                 f"aggregate tables: one of {', '.join(AGGREGATE_FUNCTIONS)}"))
    return rows


def resolve_options(options: Mapping[str, Any] | None, schema: pa.Schema, merge_engine: str,
                    system_columns: set[str]) -> dict[str, str]:
    """Check user options for a new table; returns every option as stored (defaults filled in)."""
    if options is None:
        options = {}
    if not isinstance(options, Mapping):
        raise InvalidArgumentError(f"options must be a dict of option -> value, not {type(options).__name__}")
    stored = {key: spec.default for key, spec in OPTIONS.items() if spec.default is not None}
    for key, value in options.items():
        if not isinstance(key, str):
            raise InvalidArgumentError(f"option keys are strings, not {key!r}")
        if isinstance(value, bool):
            value = "true" if value else "false"
        if not isinstance(value, (str, int, float)):
            raise InvalidArgumentError(f"option {key!r} must be a string or number, not {value!r}")
        stored[key] = str(value)
    TableOptions.parse(stored, schema, merge_engine, system_columns)  # raises on anything wrong
    return stored


@dataclass(frozen=True)
class TableOptions:
    """A table's options, parsed."""

    write_buffer_size: int
    target_file_size: int
    write_only: bool
    manifest_merge_min_count: int
    compaction: CompactionOptions
    aggregations: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, raw: Mapping[str, str], schema: pa.Schema, merge_engine: str,
              system_columns: set[str]) -> TableOptions:
        values: dict[str, Any] = {}
        aggregations: dict[str, str] = {}
        for key, text in raw.items():
            spec = OPTIONS.get(key)
            if spec is not None:
                values[key] = spec.parse(text, key)
                continue
            match = _AGGREGATE_KEY.fullmatch(key)
            if match is None:
                close = difflib.get_close_matches(key, [*OPTIONS, "fields.<column>.aggregate-function"], n=1)
                hint = f"; did you mean {close[0]!r}?" if close else f"; known options: {', '.join(OPTIONS)}"
                raise InvalidArgumentError(f"unknown table option {key!r}{hint}")
            column, function = match.group(1), text.strip()
            if merge_engine != "aggregate":
                raise InvalidArgumentError(f"option {key!r} needs merge_engine='aggregate', not {merge_engine!r}")
            if column not in schema.names:
                raise InvalidArgumentError(f"option {key!r} names column {column!r}, which the schema lacks")
            if column in system_columns:
                raise InvalidArgumentError(f"option {key!r}: {column!r} is a primary-key column; "
                                           f"keys are not aggregated")
            if function not in AGGREGATE_FUNCTIONS:
                close = difflib.get_close_matches(function, AGGREGATE_FUNCTIONS, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise InvalidArgumentError(f"option {key!r}: unknown aggregate function {function!r}{hint} "
                                           f"(choose one of {', '.join(AGGREGATE_FUNCTIONS)})")
            check_aggregate_type(column, function, schema.field(column).type)
            aggregations[column] = function
        compaction = CompactionOptions.from_options(raw)
        defaults = {k: spec.parse(spec.default, k) for k, spec in OPTIONS.items() if spec.default is not None}
        merged = {**defaults, **values}
        return cls(merged["write-buffer-size"], merged[KEY_TARGET_FILE_SIZE], merged["write-only"],
                   merged["manifest.merge-min-count"], compaction, aggregations)
