"""Import an existing SQL history into a table's query log (`mergetree queries import`).

The file is decoded with a stated encoding (UTF-8 by default; undecodable input is an error
naming the byte offset and line, and nothing is logged).  It is either a SQL script, whose
statements are separated by `;` (split by sqlglot's own tokenizer in the given dialect, so
statements may span lines and `;` may sit in string literals, quoted names and comments), or,
when its first character is `{`, JSON lines with the statement under "query"/"sql"/... and
optionally a time, a user and a duration — which takes the exports of Trino and Spark as they
write them (`history_format` says which a line is):

* rows of Trino's ``system.runtime.queries`` (``query``, ``user``, ``created``, ``started``,
  ``end``: the table's columns, trino.io/docs/current/connector/system.html), as JSON lines or as
  CSV with a header (Trino CLI's ``--output-format JSON`` / ``CSV_HEADER``);
* the JSON of Trino's HTTP event listener, one query-completed event a line (``metadata.query``,
  ``context.user``, ``createTime``, ``executionStartTime``, ``endTime``: trino-spi's
  ``QueryCompletedEvent``, trino.io/docs/current/admin/event-listeners-http.html);
* Spark event logs (``{"Event": ...}`` a line, as Spark's ``JsonProtocol`` writes them): the SQL text
  is the ``description`` of each ``SparkListenerSQLExecutionStart`` (its ``time``; the duration from
  the ``SparkListenerSQLExecutionEnd`` of the same ``executionId``; the classes in Spark's
  ``sql/core/.../execution/ui/SQLListener.scala``); every other event is counted, not read.

A statement longer than `max_statement_chars` is
refused (counted, with its line): parsing takes 3-6 s of CPU and 150-250 MB a million characters.

Each statement is parsed with sqlglot in the given dialect.  Every place the statement reads
the table (matched by name, case-insensitively, qualified or not) becomes one logged query:

* the predicates on the table's columns, from WHERE and from JOIN ... ON conditions with
  literals, through AND / OR / NOT, IN lists, BETWEEN, IS [NOT] NULL and LIKE 'prefix%'
  (kept as a range, logged as a LIKE-prefix predicate); through CTEs and subqueries that pass
  the table's columns on unchanged;
* ORDER BY (by name, alias or position) with LIMIT, GROUP BY with SUM / COUNT / MIN / MAX / AVG.

A predicate that cannot be turned into a filter (a subquery, a function of a column, a value
that is not a constant or not of the column's type, a column the table does not have) is still
logged by column and kind, left out of the replayable filter, and reported (`Dropped`, counted
by reason in `ImportResult.dropped`): under AND the rest still holds; under OR the whole OR is
dropped, so the filter kept is never narrower than the statement's.  Columns are attributed by
alias; an unqualified column goes to the table when the table has a column of that name.
Statements that do not parse are skipped and counted; statements that do not read the table
(other tables, GRANT, VACUUM, ...) are counted apart.
"""
from __future__ import annotations

import codecs
import contextlib
import csv
import datetime as dt
import io
import itertools
import json
import logging
import os
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any, ClassVar

import pyarrow as pa

from ..errors import InvalidArgumentError, MergeTreeError
from ..iceberg import IcebergTable, is_iceberg_location
from ..iceberg import open as open_iceberg
from ..table import Table
from ..table import filters as flt
from ..table.workload.querylog import MAX_FILTER_JSON, QueryRecord, append_rows, filter_to_json

__all__ = ["Dropped", "ImportResult", "Statement", "extract_queries", "import_sql", "read_statements"]

BATCH = 5_000  # records appended per commit
MAX_STATEMENT_CHARS = 1_000_000  # a longer statement is refused (parsing: 3-6 s, 150-250 MB a million)
EXAMPLES = 5  # problems and dropped predicates kept as examples, per kind
WINDOW = 256 * 1024  # characters of a SQL script tokenized at a time (tokens take ~80 bytes a character)

# Why a predicate on the table was left out of the logged filter (`Dropped.reason`)
UNKNOWN_COLUMN = "a column the table does not have"
FUNCTION = "a function or expression of a column"
SUBQUERY = "a subquery"
NOT_CONSTANT = "compared with something that is not a constant"
BAD_VALUE = "a value the column's type does not take"
TWO_COLUMNS = "two of the table's columns compared"
NULL_COMPARISON = "a comparison with NULL (never true)"
LIKE_PATTERN = "a LIKE pattern that is not a plain prefix, or NOT LIKE"
OR_BRANCH = "an OR with a branch that has no filter form (the whole OR is left out)"
TOO_LARGE = f"a filter over {MAX_FILTER_JSON // 1024} KB (logged by its shape only)"
NO_FORM = "a predicate the filter language has no form for"


@dataclass(frozen=True)
class Dropped:
    """A predicate on the table left out of a logged filter: its SQL (shortened), why (one of
    the reasons above, what `ImportResult.dropped` counts), what exactly (the unknown columns;
    for an OR, the branch that made it go) and the line of the file it is on, when known."""

    predicate: str
    reason: str
    detail: str = ""
    line: int | None = None

    def __str__(self) -> str:
        return f"{self.predicate}: {self.reason}" + (f" — {self.detail}" if self.detail else "")


@dataclass
class ImportResult:
    statements: int = 0
    imported: int = 0            # logged queries (a statement can read the table more than once)
    other_tables: int = 0        # statements that parse but do not read the table (other tables, GRANT, ...)
    skipped: int = 0             # statements that do not parse (or cannot be read)
    too_large: int = 0           # statements refused for their size (longer than max_statement_chars)
    unterminated: int = 0        # statements found without ';' between them, one per line (or block)
    other_events: int = 0        # lines of an event log that are not queries (Spark's job and task events)
    errors: list[str] = field(default_factory=list)   # the first few parse errors, with their lines
    refused: list[str] = field(default_factory=list)  # the first few statements refused for their size
    dropped: Counter[str] = field(default_factory=Counter)  # predicates left out of filters, by reason
    dropped_examples: list[str] = field(default_factory=list)  # the first few, with their lines

    def __repr__(self) -> str:
        return f"ImportResult({self.summary()})"

    def summary(self) -> str:
        text = (f"{self.statements:,} statements: {self.imported:,} queries of the table logged, "
                f"{self.other_tables:,} not reading it, {self.skipped:,} skipped (not parsable)")
        if self.too_large:
            text += f", {self.too_large:,} refused (too long)"
        if self.other_events:
            text += f"; {self.other_events:,} events that are not queries passed over"
        if self.unterminated:
            text += (f"; {self.unterminated:,} had no ';' between them and were split where a line starts "
                     f"a statement")
        return text

    def dropped_summary(self) -> str | None:
        """One line: how many predicates were left out of the logged filters, by reason."""
        total = sum(self.dropped.values())
        if not total:
            return None
        reasons = "; ".join(f"{n:,} {reason}" for reason, n in self.dropped.most_common())
        return f"{total:,} predicates left out of the logged filters: {reasons}"


@dataclass
class Statement:
    """One statement of a history; `problem` says why it cannot be analysed (not JSON, too long,
    cannot be tokenized), `too_large` when that is its length."""

    sql: str
    line: int = 1                 # where it starts in the file
    ts: dt.datetime | None = None
    user: str | None = None
    duration_ms: float | None = None
    problem: str | None = None
    too_large: bool = False
    tokens: list[Any] | None = field(default=None, repr=False)  # sqlglot's tokens, indexing `source`
    source: str = field(default="", repr=False)
    not_a_query: bool = False     # an event log's line that is no query (counted apart, not an error)


# ---------------------------------------------------------------------------
# Reading the history file
# ---------------------------------------------------------------------------

_SQL_KEYS = ("query", "sql", "statement", "query_text", "text")
_TIME_KEYS = ("ts", "time", "timestamp", "create_time", "start_time", "created", "query_start_time")
_USER_KEYS = ("user", "username", "user_name", "principal")
_DURATION_KEYS = ("duration_ms", "elapsed_ms", "wall_time_ms", "execution_time_ms")


def _first(record: dict, keys: tuple[str, ...]) -> Any:
    for key in keys:
        if record.get(key) is not None:
            return record[key]
    return None


def _timestamp(value: Any) -> dt.datetime | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = value / 1000 if value > 1e11 else value  # epoch milliseconds or seconds
        return dt.datetime.fromtimestamp(seconds, dt.timezone.utc)
    if isinstance(value, str):
        text = value.strip()
        if text.endswith(" UTC"):  # Trino's text of a timestamp with time zone
            text = text[:-4] + "+00:00"
        try:
            parsed = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            return None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.timezone.utc)
    return None


def decode_history(data: bytes, encoding: str, name: str) -> str:
    """`data` decoded; InvalidArgumentError naming the file, the byte offset and the line of the
    first undecodable byte.  A leading byte-order mark is dropped."""
    try:
        codecs.lookup(encoding)
    except LookupError:
        raise InvalidArgumentError(f"unknown encoding {encoding!r} (Python's names: utf-8, latin-1, "
                                   f"cp1252, utf-16, ...)") from None
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InvalidArgumentError(
            f"{name} is not valid {encoding}: byte 0x{data[exc.start]:02x} at offset {exc.start:,} (line {line:,}) "
            f"cannot be decoded; give the file's encoding (encoding=... in Python, --encoding on the CLI)") from None
    return text[1:] if text.startswith("\ufeff") else text


def _tokenize(dialect: Any, text: str) -> tuple[list[Any], str | None]:
    """sqlglot's tokens of `text`, and the tokenizer's error if it stopped early (its tokens up
    to there are kept)."""
    from sqlglot.errors import TokenError

    # a fresh one (it keeps its tokens), made from the class: `Dialect.tokenizer` is a cached
    # property in some sqlglot releases and a method in others
    tokenizer = dialect.tokenizer_class(dialect=dialect)
    try:
        return tokenizer.tokenize(text), None
    except TokenError as exc:
        return list(tokenizer.tokens), str(exc).splitlines()[0][:160]


def _semicolon(token: Any) -> bool:
    from sqlglot.tokens import TokenType

    return bool(token.token_type == TokenType.SEMICOLON)


def _chunks(tokens: list[Any]) -> Iterator[list[Any]]:
    """The statements' tokens between semicolons (empty statements left out)."""
    from sqlglot.tokens import TokenType

    semicolon = TokenType.SEMICOLON
    current: list[Any] = []
    for token in tokens:
        if token.token_type is semicolon:
            if current:
                yield current
            current = []
        else:
            current.append(token)
    if current:
        yield current


def _too_large(length: int, line: int, limit: int) -> Statement:
    return Statement("", line, problem=f"line {line:,}: a statement of {length:,} characters, longer than the limit "
                                       f"of {limit:,} (max_statement_chars, --max-statement-chars); not logged",
                     too_large=True)


def _unreadable(line: int, error: str, rest: int) -> Statement:
    return Statement("", line, problem=f"line {line:,}: cannot be split into tokens ({error}; an unterminated "
                                       f"quote or comment?): the last {rest:,} characters of the file are not read")


def _statement(tokens: list[Any], source: str, first_line: int, first_col: int, limit: int,
               **meta: Any) -> Statement:
    """A statement from its tokens in `source` (which starts at line `first_line`, column
    `first_col` of the file): token lines and columns are made the file's own, so sqlglot's
    messages point into the file."""
    for token in tokens:
        if token.line == 1:
            token.col += first_col
        token.line += first_line - 1
    start, end = tokens[0].start, tokens[-1].end + 1
    line = tokens[0].line
    if end - start > limit:
        return _too_large(end - start, line, limit)
    return Statement(source[start:end], line, tokens=tokens, source=source, **meta)


def _script_statements(text: str, dialect: Any, limit: int, progress: Callable[[int, int], None] | None,
                       window_chars: int = WINDOW) -> Iterator[Statement]:
    """The statements of a SQL script, split at the tokenizer's semicolons a window at a time
    (memory: the tokens of a window or of one statement, never the whole file's)."""
    n = len(text)
    pos, line, size = 0, 1, window_chars   # pos: a statement boundary; line: the file's line at pos
    delimiters = _delimiters(dialect)
    while pos < n:
        end = min(n, pos + size)
        window = text[pos:end]
        tokens, error = _tokenize(dialect, window)
        column = pos - (text.rfind("\n", 0, pos) + 1)
        last = next((i for i in range(len(tokens) - 1, -1, -1) if _semicolon(tokens[i])), None)
        if end == n or last is not None:
            complete = tokens if end == n and error is None else tokens[:last + 1] if last is not None else []
            for chunk in _chunks(complete):
                yield _statement(chunk, window, line, column, limit)
            if end == n and error is not None:  # the tokenizer stopped in the last statement read
                broken = complete[-1].end + 1 if complete else 0
                broken += len(window[broken:]) - len(window[broken:].lstrip())
                yield _unreadable(line + window.count("\n", 0, broken), error, n - pos - broken)
            consumed = n - pos if last is None or end == n else tokens[last].end + 1
            line += window.count("\n", 0, consumed)
            pos += consumed
            size = window_chars
        elif tokens and (longer := _longer(text, pos, tokens, limit, delimiters))[0]:
            first = line + window.count("\n", 0, tokens[0].start)
            start = pos + tokens[0].start
            resume = pos + (tokens[-2].end + 1 if len(tokens) >= 2 else tokens[0].start)
            stop, error = _skip_statement(text, dialect, resume, delimiters, window_chars)
            if error is not None:  # the tokenizer stopped in it, and it runs to the end of the file
                yield _unreadable(first, error, n - start)
            else:
                last_char = stop - 1 if text[stop - 1:stop] == ";" else stop
                while last_char > start and text[last_char - 1].isspace():
                    last_char -= 1
                yield _too_large(last_char - start, first, limit)
            line += text.count("\n", pos, stop)
            pos, size = stop, window_chars
        elif tokens:  # a statement longer than the window: read it whole (to its ';' when that is known)
            cap = tokens[0].start + limit + window_chars  # (comments after its last token may run past it)
            size = longer[1] - pos if longer[1] is not None else min(size * 4, cap) if cap > size else size * 4
        else:  # only comments (and space) so far: read on until a token comes
            size *= 4
        if progress is not None:
            progress(pos, n)


def _delimiters(dialect: Any) -> re.Pattern[str]:
    """Any character that can open a string, a quoted name or a comment in the dialect (the first
    characters of its tokenizer's quotes, identifiers and comments, and the non-alphanumeric ones
    of its prefixed strings): where none occurs, the tokenizer's next `;` is the next ';'."""
    tokenizer = dialect.tokenizer_class
    chars = set("'\"`[-/#${")  # every dialect's openers we know of, whatever the tokenizer below says
    for name in ("QUOTES", "IDENTIFIERS", "COMMENTS", "HEREDOC_STRINGS", "_QUOTES", "_IDENTIFIERS", "_COMMENTS"):
        for key in getattr(tokenizer, name, None) or ():
            opener = key[0] if isinstance(key, (tuple, list)) else key  # (start, end) pairs
            if opener:
                chars.add(str(opener)[0])
    for key in getattr(tokenizer, "_FORMAT_STRINGS", None) or ():
        chars.update(c for c in str(key) if not c.isalnum())
    return re.compile("[" + re.escape("".join(sorted(chars))) + "]")


def _plain_end(text: str, pos: int, delimiters: re.Pattern[str]) -> int | None:
    """Where the statement around `pos` (a token boundary) ends, when that is plain without
    tokenizing: no string, quoted name or comment can begin before the next ';' (or the file
    has none).  None: it takes the tokenizer to tell."""
    semicolon = text.find(";", pos)
    stop = len(text) if semicolon < 0 else semicolon
    if delimiters.search(text, pos, stop) is not None:
        return None
    return stop if semicolon < 0 else stop + 1


def _longer(text: str, pos: int, tokens: list[Any], limit: int,
            delimiters: re.Pattern[str]) -> tuple[bool, int | None]:
    """Whether the statement whose tokens (in a window at `pos` with no ';') begin `tokens` is
    longer than `limit`, first token to last: known when its complete tokens (the last may be cut
    by the window) span more already, or when its end is plain from there on; and that end
    (after its ';'), when it is known."""
    start = pos + tokens[0].start
    resume = pos + (tokens[-2].end + 1 if len(tokens) >= 2 else tokens[0].start)
    if resume - start > limit:
        return True, None
    plain = _plain_end(text, resume, delimiters)
    if plain is None:
        return False, None
    end = plain - 1 if text[plain - 1:plain] == ";" else plain
    return resume + len(text[resume:end].rstrip()) - start > limit, plain  # no comment in plain text


def _skip_statement(text: str, dialect: Any, pos: int, delimiters: re.Pattern[str],
                    window_chars: int) -> tuple[int, str | None]:
    """Where the statement around `pos` (a token boundary) ends: after its semicolon, or at the
    end of the file (with the tokenizer's error when it could not read to there).  Found without
    the tokenizer while the text is plain (`_plain_end`), else tokenized a window at a time, the
    tokens thrown away."""
    n, size = len(text), window_chars
    while True:
        plain = _plain_end(text, pos, delimiters)
        if plain is not None:
            return plain, None
        end = min(n, pos + size)
        tokens, error = _tokenize(dialect, text[pos:end])
        semicolon = next((t for t in tokens if _semicolon(t)), None)
        if semicolon is not None:
            return pos + semicolon.end + 1, None
        if end == n:
            return n, error
        if len(tokens) >= 2:  # the last token may be cut by the window: read it again
            pos, size = pos + tokens[-2].end + 1, window_chars
        else:
            size *= 2


SPARK_SQL_START = "SparkListenerSQLExecutionStart"
SPARK_SQL_END = "SparkListenerSQLExecutionEnd"


def history_format(record: Any) -> str:
    """Which export a JSON line is: "spark-event" (a Spark event log's line), "trino-event" (a
    Trino event listener's query-completed event), or "rows" (a row of a query table:
    Trino's ``system.runtime.queries``, or any record with the statement under a known key)."""
    if isinstance(record, dict) and "Event" in record:
        return "spark-event"
    if isinstance(record, dict) and isinstance(record.get("metadata"), dict) and "query" in record["metadata"]:
        return "trino-event"
    return "rows"


def _between(start: Any, end: Any) -> float | None:
    first, last = _timestamp(start), _timestamp(end)
    return (last - first).total_seconds() * 1000.0 if first is not None and last is not None else None


def _record_query(record: dict, shape: str, ends: dict[Any, Any]) -> tuple[Any, dict[str, Any]]:
    """The statement of one record and its time, user and duration."""
    if shape == "spark-event":
        end = ends.get(record.get("executionId"))
        return record.get("description"), {
            "ts": _timestamp(record.get("time")), "user": None,
            "duration_ms": float(end - record["time"]) if isinstance(end, (int, float))
            and isinstance(record.get("time"), (int, float)) else None}
    if shape == "trino-event":
        context = record.get("context")
        user = context.get("user") if isinstance(context, dict) else None
        return record["metadata"].get("query"), {
            "ts": _timestamp(record.get("createTime")), "user": str(user) if user is not None else None,
            "duration_ms": _between(record.get("executionStartTime") or record.get("createTime"),
                                    record.get("endTime"))}
    duration = _first(record, _DURATION_KEYS)
    user = _first(record, _USER_KEYS)
    if not isinstance(duration, (int, float)) or isinstance(duration, bool):
        duration = _between(record.get("started") or record.get("created"), record.get("end"))
    return _first(record, _SQL_KEYS), {"ts": _timestamp(_first(record, _TIME_KEYS)),
                                       "user": str(user) if user is not None else None,
                                       "duration_ms": float(duration) if duration is not None else None}


def _spark_ends(text: str) -> dict[Any, Any]:
    """executionId -> the time of its SparkListenerSQLExecutionEnd (a Spark event log's)."""
    ends: dict[Any, Any] = {}
    if SPARK_SQL_END not in text:
        return ends
    for line in text.splitlines():
        if SPARK_SQL_END in line:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and str(record.get("Event", "")).endswith(SPARK_SQL_END):
                ends[record.get("executionId")] = record.get("time")
    return ends


def _record_statements(sql: str, number: int, meta: dict[str, Any], dialect: Any,
                       limit: int) -> Iterator[Statement]:
    """The statements of one record's SQL (a JSON line's or a CSV row's), at the record's line."""
    if len(sql) > limit:
        yield _too_large(len(sql), number, limit)
        return
    tokens, error = _tokenize(dialect, sql)
    if error is not None:
        yield Statement(sql, number, problem=f"line {number:,}: {error}", **meta)
        return
    for chunk in _chunks(tokens):
        statement = _statement(chunk, sql, 1, 0, limit, **meta)
        statement.line = number  # the record's line, not the line inside its SQL
        yield statement


def _csv_header(text: str) -> list[str] | None:
    """The header of a CSV export of a query table (a first line of at least two names, one of
    them the statement's column), or None: a SQL script's first line is never one."""
    first = text.lstrip("\ufeff").split("\n", 1)[0].strip()
    if not first or first[:1] in ("-", "/"):
        return None
    names = [n.strip().lower() for n in next(csv.reader([first]), [])]
    if len(names) >= 2 and any(n in _SQL_KEYS for n in names) and all(re.fullmatch(r"[a-z_][a-z0-9_]*", n)
                                                                         for n in names):
        return names
    return None


def _csv_statements(text: str, dialect: Any, limit: int,
                    progress: Callable[[int, int], None] | None) -> Iterator[Statement]:
    """The rows of a CSV export (Trino CLI's ``CSV_HEADER`` of ``system.runtime.queries``): a
    quoted field may hold a statement's line breaks."""
    reader = csv.reader(io.StringIO(text.lstrip("\ufeff")))
    header = [n.strip().lower() for n in next(reader)]
    start = reader.line_num + 1
    for row in reader:
        number, start = start, reader.line_num + 1
        if progress is not None and number % 1000 == 0:
            progress(min(number * 80, len(text)), len(text))
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            yield Statement("", number, problem=f"line {number:,}: {len(row)} fields where the header has "
                                                f"{len(header)}")
            continue
        record = {k: (v if v != "" else None) for k, v in zip(header, row)}
        sql, meta = _record_query(record, "rows", {})
        if not isinstance(sql, str) or not sql.strip():
            yield Statement("", number, problem=f"line {number:,}: an empty statement")
            continue
        yield from _record_statements(sql, number, meta, dialect, limit)


def _json_statements(text: str, dialect: Any, limit: int,
                     progress: Callable[[int, int], None] | None) -> Iterator[Statement]:
    ends = _spark_ends(text)
    offset = 0
    for number, raw in enumerate(text.splitlines(), 1):
        offset += len(raw) + 1
        if progress is not None and number % 1000 == 0:
            progress(min(offset, len(text)), len(text))
        line = raw.strip()
        if not line:
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            yield Statement("", number, problem=f"line {number:,}: not a JSON object ({exc})")
            continue
        shape = history_format(record)
        if shape == "spark-event" and not str(record.get("Event", "")).endswith(SPARK_SQL_START):
            yield Statement("", number, not_a_query=True)
            continue
        sql, meta = _record_query(record, shape, ends)
        if not isinstance(sql, str) or not sql.strip():
            where = {"trino-event": "metadata.query", "spark-event": "description"}.get(
                shape, " / ".join(repr(k) for k in _SQL_KEYS))
            yield Statement("", number, problem=f"line {number:,}: no statement under {where}")
            continue
        yield from _record_statements(sql, number, meta, dialect, limit)


def read_statements(text: str, dialect: str | None = None, max_statement_chars: int = MAX_STATEMENT_CHARS,
                    progress: Callable[[int, int], None] | None = None,
                    window_chars: int = WINDOW) -> Iterator[Statement]:
    """The statements of a decoded history (see the module docstring): JSON lines when its first
    character is `{`, else a SQL script split at semicolons by sqlglot's tokenizer,
    `window_chars` at a time (the statements are the same for any window: tests use tiny ones).
    Statements that cannot be analysed come with a `problem` (and nothing to parse)."""
    from sqlglot.dialects.dialect import Dialect

    tokenizing = Dialect.get_or_raise(dialect)
    if text.lstrip()[:1] == "{":
        yield from _json_statements(text, tokenizing, max_statement_chars, progress)
    elif _csv_header(text) is not None:
        yield from _csv_statements(text, tokenizing, max_statement_chars, progress)
    else:
        yield from _script_statements(text, tokenizing, max_statement_chars, progress, max(1, window_chars))


# ---------------------------------------------------------------------------
# Extracting the patterns
# ---------------------------------------------------------------------------

@dataclass
class ExtractedQuery:
    """What one statement asked of the table at one place it reads it."""

    filter: flt.Filter
    predicates: list[tuple[str, str]]
    order_by: list[tuple[str, str]]
    limit: int | None
    group_by: list[str]
    measures: list[tuple[str, str]]
    columns: list[str] | None
    dropped: list[Dropped] = field(default_factory=list)  # predicates left out of `filter`
    filter_json: str | None = None  # `filter` as the log stores it


class _NotAStatement(ValueError):
    """Text that sqlglot reads as an expression, not as a statement ("SELEC * FORM t")."""


class _Unconvertible(Exception):
    """A predicate that has no filter form (it is still logged by column and kind); `reason` is
    None when the predicate is not about the table at all (another table's column)."""

    def __init__(self, reason: str | None, message: str = "") -> None:
        super().__init__(message or reason or "not about the table")
        self.reason = reason


def _table_matches(node: Any, wanted: tuple[str, ...]) -> bool:
    parts = [p.lower() for p in (node.catalog, node.db, node.name) if p]
    return len(parts) >= len(wanted) and tuple(parts[-len(wanted):]) == wanted


class _Extractor:
    def __init__(self, schema: pa.Schema, table_name: str, dialect: str | None) -> None:
        import sqlglot  # the SQL import's own dependency, loaded when it is used
        from sqlglot import exp
        from sqlglot.optimizer.scope import traverse_scope

        self.sqlglot, self.exp, self.traverse_scope = sqlglot, exp, traverse_scope
        self.schema = schema
        self.columns = {n.lower(): n for n in schema.names}
        self.wanted = tuple(p.lower() for p in table_name.split(".") if p)
        if not self.wanted:
            raise InvalidArgumentError(f"a table name to match is needed, not {table_name!r}")
        if dialect is not None:
            from sqlglot.dialects.dialect import Dialect

            try:
                Dialect.get_or_raise(dialect)
            except ValueError:
                raise InvalidArgumentError(f"unknown SQL dialect {dialect!r} (sqlglot's names: trino, spark, hive, "
                                           f"presto, duckdb, postgres, mysql, bigquery, snowflake, ...)") from None
        self.dialect = dialect
        from sqlglot.dialects.dialect import Dialect

        self.parser = Dialect.get_or_raise(dialect).parser()

    def parse(self, sql: str) -> Any:
        return self._statement(self.sqlglot.parse_one(sql, read=self.dialect))

    def parse_statement(self, statement: Statement) -> Any:
        """The tree of a statement `read_statements` split (its tokens parsed, not its text again)."""
        if statement.tokens is None:
            return self.parse(statement.sql)
        trees = self.parser.parse(statement.tokens, statement.source)
        if len(trees) != 1 or trees[0] is None:
            raise _NotAStatement("not one statement")
        return self._statement(trees[0])

    def _statement(self, tree: Any) -> Any:
        """`tree`, unless it is a bare expression ("SELEC * FORM t" is an alias of a product):
        any statement sqlglot knows (GRANT, REFRESH, COMMIT, ...) passes, as do its Commands."""
        exp = self.exp
        if isinstance(tree, (exp.Condition, exp.Alias, exp.Star, exp.Identifier)):
            raise _NotAStatement(f"not a statement (parsed as a bare {tree.key} expression)")
        return tree

    # -- which scopes read the table --------------------------------------------------
    def queries(self, tree: Any) -> list[ExtractedQuery]:
        exp = self.exp
        scopes = self.traverse_scope(tree)
        out = []
        for scope in scopes:
            for alias, source in scope.sources.items():
                if isinstance(source, exp.Table) and _table_matches(source, self.wanted):
                    chain = self._chain(scopes, scope, alias)
                    out.append(self._extract(chain))
        return out

    def _passes_through(self, scope: Any) -> set[str] | None:
        """The table's column names a scope passes on unchanged (None: every one, SELECT *)."""
        exp = self.exp
        names: set[str] = set()
        for projection in scope.expression.selects:
            if isinstance(projection, exp.Star) or (isinstance(projection, exp.Column)
                                                    and isinstance(projection.this, exp.Star)):
                return None
            inner = projection.this if isinstance(projection, exp.Alias) else projection
            if isinstance(inner, exp.Column) and projection.alias_or_name.lower() == inner.name.lower():
                names.add(inner.name.lower())
        return names

    def _chain(self, scopes: list, base: Any, alias: str) -> list[tuple[Any, set[str], set[str] | None]]:
        """(scope, names of the table or of a pass-through scope there, columns visible) from
        the scope reading the table outward through CTEs and subqueries that pass columns on."""
        chain: list[tuple[Any, set[str], set[str] | None]] = [(base, {alias.lower()}, None)]
        current, visible = base, None
        while True:
            if current.expression.args.get("group") or any(
                    isinstance(p, self.exp.AggFunc) for s in current.expression.selects
                    for p in s.find_all(self.exp.AggFunc)):
                break  # rows above an aggregation are groups, not the table's rows
            passed = self._passes_through(current)
            visible = passed if visible is None else (visible if passed is None else visible & passed)
            parent = next((s for s in scopes if s is not current
                           and any(src is current for src in s.sources.values())), None)
            if parent is None:
                break
            names = {a.lower() for a, src in parent.sources.items() if src is current}
            current = parent
            chain.append((current, names, visible))
        return chain

    # -- columns ------------------------------------------------------------------------
    def _column(self, node: Any, scope: Any, aliases: set[str], visible: set[str] | None) -> str:
        """The table column `node` names in this scope, or _Unconvertible."""
        exp = self.exp
        if not isinstance(node, exp.Column):
            raise _Unconvertible(FUNCTION, "not a plain column")
        name = node.name.lower()
        if name not in self.columns or (visible is not None and name not in visible):
            raise _Unconvertible(None, f"{node.name} is not a column of the table")
        qualifier = node.table.lower() if node.table else ""
        if qualifier and qualifier not in aliases:
            raise _Unconvertible(None, "another table's column")
        return self.columns[name]

    def _unknown(self, node: Any, ctx: tuple) -> list[str]:
        """Columns in `node` (not in its subqueries) that must be the table's, by qualifier or
        as the only source of the scope reading it, yet the table does not have."""
        exp = self.exp
        scope, aliases, _, base = ctx
        if not base:
            return []  # further out, a name may be a subquery's computed column
        single = len(scope.selected_sources) == 1
        found = []
        for column in node.find_all(exp.Column):
            if isinstance(column.this, exp.Star) or column.name.lower() in self.columns:
                continue
            if column.find_ancestor(exp.Select) is not scope.expression:
                continue  # a subquery's own column
            qualifier = column.table.lower() if column.table else ""
            if qualifier in aliases or (not qualifier and single):
                found.append(column.sql(dialect=self.dialect))
        return found

    def _involved(self, node: Any, scope: Any, aliases: set[str], visible: set[str] | None) -> list[str]:
        found = []
        for column in node.find_all(self.exp.Column):
            try:
                found.append(self._column(column, scope, aliases, visible))
            except _Unconvertible:
                pass
        return found

    # -- values -------------------------------------------------------------------------
    def _literal(self, node: Any) -> Any:
        exp = self.exp
        if isinstance(node, exp.Paren):
            return self._literal(node.this)
        if isinstance(node, exp.Neg):
            value = self._literal(node.this)
            if isinstance(value, (int, float, Decimal)) and not isinstance(value, bool):
                return -value
            raise _Unconvertible(BAD_VALUE, "negated non-number")
        if isinstance(node, exp.Boolean):
            return bool(node.this)
        if isinstance(node, exp.Literal):
            if node.is_string:
                return node.this
            text = str(node.this)
            try:
                return int(text)
            except ValueError:
                try:
                    return Decimal(text) if "e" not in text.lower() else float(text)
                except InvalidOperation:
                    raise _Unconvertible(BAD_VALUE, f"number {text!r}") from None
        if isinstance(node, (exp.Cast, exp.TryCast)) and isinstance(node.this, exp.Literal):
            value = self._literal(node.this)
            target = node.to.this.name.upper() if hasattr(node.to.this, "name") else str(node.to.this).upper()
            if isinstance(value, str) and "DATE" == target:
                return _parse_date(value)
            if isinstance(value, str) and target.startswith("TIMESTAMP"):
                return _parse_datetime(value)
            return value
        raise _Unconvertible(NOT_CONSTANT, f"not a literal: {node.sql()}")

    def _typed(self, column: str, value: Any) -> Any:
        dtype = self.schema.field(column).type
        if isinstance(value, str):
            if pa.types.is_date(dtype):
                return _parse_date(value)
            if pa.types.is_timestamp(dtype):
                parsed = _parse_datetime(value)
                if dtype.tz is None:
                    return parsed.replace(tzinfo=None)
                return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.timezone.utc)
        if isinstance(value, dt.datetime) and pa.types.is_date(dtype):
            return value.date()
        if isinstance(value, dt.date) and not isinstance(value, dt.datetime) and pa.types.is_timestamp(dtype):
            value = dt.datetime(value.year, value.month, value.day)
            return value if dtype.tz is None else value.replace(tzinfo=dt.timezone.utc)
        if isinstance(value, dt.datetime) and pa.types.is_timestamp(dtype):
            if dtype.tz is None and value.tzinfo is not None:
                return value.astimezone(dt.timezone.utc).replace(tzinfo=None)
            if dtype.tz is not None and value.tzinfo is None:
                return value.replace(tzinfo=dt.timezone.utc)
        if isinstance(value, Decimal) and pa.types.is_floating(dtype):
            return float(value)
        if isinstance(value, int) and not isinstance(value, bool) and pa.types.is_floating(dtype):
            return float(value)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and pa.types.is_decimal(dtype):
            return Decimal(str(value))
        if isinstance(value, Decimal) and pa.types.is_integer(dtype) and value == value.to_integral_value():
            return int(value)
        return value

    def _leaf(self, column: str, op: str, value: Any) -> flt.Filter:
        if isinstance(value, list):
            value = [self._typed(column, v) for v in value]
        elif value is not None:
            value = self._typed(column, value)
        try:
            return flt.normalize((column, op, value), self.schema)
        except MergeTreeError as exc:
            raise _Unconvertible(BAD_VALUE, str(exc)) from None

    # -- predicates ---------------------------------------------------------------------
    _FLIP: ClassVar[dict[str, str]] = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "=", "!=": "!="}
    _NEGATE: ClassVar[dict[str, str]] = {"=": "!=", "!=": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<",
                                         "in": "not in", "not in": "in", "is null": "is not null",
                                         "is not null": "is null"}

    def _comparison_op(self, node: Any) -> str | None:
        exp = self.exp
        for cls, op in ((exp.EQ, "="), (exp.NEQ, "!="), (exp.LT, "<"), (exp.LTE, "<="), (exp.GT, ">"),
                        (exp.GTE, ">=")):
            if isinstance(node, cls):
                return op
        return None

    def _dropped(self, node: Any, reason: str, detail: str = "") -> Dropped:
        """`node` left out of the filter, shown shortened, with the line of its first name."""
        text = " ".join(node.sql(dialect=self.dialect, comments=False).split())
        identifier = node.find(self.exp.Identifier)
        line = identifier.meta.get("line") if identifier is not None else None
        return Dropped(text if len(text) <= 100 else text[:97] + "...", reason, detail,
                       line if isinstance(line, int) else None)

    def _predicate(self, node: Any, ctx: tuple, kinds: list[tuple[str, str]], dropped: list[Dropped],
                   negate: bool = False) -> flt.Filter:
        """The filter of `node` for the table (None: says nothing about it); records kinds, and
        the predicates on the table it leaves out."""
        exp = self.exp
        scope, aliases, visible, _ = ctx
        if isinstance(node, exp.Paren):
            return self._predicate(node.this, ctx, kinds, dropped, negate)
        if isinstance(node, exp.Not):
            return self._predicate(node.this, ctx, kinds, dropped, not negate)
        if isinstance(node, (exp.And, exp.Or)):
            # flattened, not recursed into: a chain of 100,000 ORs is no deeper than one
            operands = list(node.flatten()) if isinstance(node.left, type(node)) or isinstance(
                node.right, type(node)) else [node.left, node.right]
            if isinstance(node, exp.And) != negate:  # AND, or NOT over OR (De Morgan)
                parts = [self._predicate(c, ctx, kinds, dropped, negate) for c in operands]
                kept = [p for p in parts if p is not None]
                return _combine("and", kept) if kept else None
            inner: list[Dropped] = []
            parts = [self._predicate(c, ctx, kinds, inner, negate) for c in operands]
            if all(p is not None for p in parts):
                dropped.extend(inner)  # left out of an AND inside a branch: the branch is wider
                return _combine("or", parts)
            if inner or any(p is not None for p in parts):
                dropped.append(self._dropped(node, OR_BRANCH, f"because of {inner[0]}" if inner
                                             else "a branch is about another table"))
            return None
        op = self._comparison_op(node)
        if op is not None and isinstance(node.left, exp.Column) and isinstance(node.right, exp.Column):
            try:  # a join condition; or, when both columns are the table's, a predicate with no filter form
                for column in (node.left, node.right):
                    self._column(column, scope, aliases, visible)
            except _Unconvertible:
                return None
            kinds.extend((column, "expression") for column in self._involved(node, scope, aliases, visible))
            dropped.append(self._dropped(node, TWO_COLUMNS))
            return None
        before = len(kinds)
        try:
            return self._simple(node, ctx, kinds, negate)
        except _Unconvertible as exc:
            involved = self._involved(node, scope, aliases, visible)
            if len(kinds) == before:  # else its kind is known, only its value has no filter form
                kinds.extend((column, "expression") for column in involved)
            unknown = self._unknown(node, ctx)
            if unknown:
                dropped.append(self._dropped(node, UNKNOWN_COLUMN, ", ".join(dict.fromkeys(unknown))))
            elif involved:
                subquery = node.find(exp.Subquery, exp.Select, exp.Exists) is not None
                dropped.append(self._dropped(node, SUBQUERY if subquery else exc.reason or NO_FORM))
            return None

    def _simple(self, node: Any, ctx: tuple, kinds: list[tuple[str, str]], negate: bool) -> flt.Filter:
        exp = self.exp
        scope, aliases, visible, _ = ctx
        op = self._comparison_op(node)
        if op is not None:
            left, right = node.left, node.right
            if not isinstance(left, exp.Column) and isinstance(right, exp.Column):
                left, right, op = right, left, self._FLIP[op]
            column = self._column(left, scope, aliases, visible)
            if isinstance(right, exp.Null):
                raise _Unconvertible(NULL_COMPARISON)
            value = self._literal(right)
            op = self._NEGATE[op] if negate else op
            kinds.append((column, "eq" if op == "=" else "ne" if op == "!=" else "range"))
            return self._leaf(column, op, value)
        if isinstance(node, exp.In):
            column = self._column(node.this, scope, aliases, visible)
            if node.args.get("query") is not None:
                raise _Unconvertible(SUBQUERY, "IN (subquery)")
            if not node.expressions:
                raise _Unconvertible(NO_FORM, "IN without a list")
            values = [self._literal(v) for v in node.expressions]
            kinds.append((column, "not_in" if negate else "in"))
            return self._leaf(column, "not in" if negate else "in", values)
        if isinstance(node, exp.Between):
            column = self._column(node.this, scope, aliases, visible)
            kinds.append((column, "range"))
            low, high = self._literal(node.args["low"]), self._literal(node.args["high"])
            if negate:
                return ("or", [self._leaf(column, "<", low), self._leaf(column, ">", high)])
            return ("and", [self._leaf(column, ">=", low), self._leaf(column, "<=", high)])
        if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
            column = self._column(node.this, scope, aliases, visible)
            kinds.append((column, "not_null" if negate else "is_null"))
            return self._leaf(column, "is not null" if negate else "is null", None)
        if isinstance(node, exp.Like):
            column = self._column(node.this, scope, aliases, visible)
            pattern = self._literal(node.expression)
            prefix = _like_prefix(pattern)
            dtype = self.schema.field(column).type
            if prefix is None or not (pa.types.is_string(dtype) or pa.types.is_large_string(dtype)) or negate:
                raise _Unconvertible(LIKE_PATTERN)  # skips no file
            kinds.append((column, "like_prefix"))
            upper = _next_prefix(prefix)
            low = self._leaf(column, ">=", prefix)
            return ("and", [low, self._leaf(column, "<", upper)]) if upper is not None else low
        if isinstance(node, exp.Func):
            raise _Unconvertible(FUNCTION, f"no filter form: {node.sql()}")
        raise _Unconvertible(NO_FORM, f"no filter form: {node.sql()}")

    # -- one place the table is read --------------------------------------------------
    def _extract(self, chain: list[tuple[Any, set[str], set[str] | None]]) -> ExtractedQuery:
        exp = self.exp
        kinds: list[tuple[str, str]] = []
        dropped: list[Dropped] = []
        parts: list[flt.Filter] = []
        for i, (scope, aliases, visible) in enumerate(chain):
            ctx = (scope, aliases, visible, i == 0)
            where = scope.expression.args.get("where")
            if where is not None:
                parts.append(self._predicate(where.this, ctx, kinds, dropped))
            for join in scope.expression.args.get("joins") or ():
                on = join.args.get("on")
                if on is not None:  # literal conditions of an ON clause restrict this table's rows too
                    parts.append(self._predicate(on, ctx, kinds, dropped))
        kept = [p for p in parts if p is not None]
        f = _combine("and", kept) if kept else None
        f_json = filter_to_json(f)
        if f is not None and f_json is None:
            dropped.append(Dropped(f"the whole filter ({len(_leaves(f)):,} values)", TOO_LARGE))
            f = None
        order_by: list[tuple[str, str]] = []
        limit = None
        group_by: list[str] = []
        measures: list[tuple[str, str]] = []
        columns: set[str] = set()
        for scope, aliases, visible in chain:
            select = scope.expression
            for column in select.find_all(exp.Column):
                try:
                    columns.add(self._column(column, scope, aliases, visible))
                except _Unconvertible:
                    pass
            if not order_by and select.args.get("order") is not None:
                order_by = self._order(select, scope, aliases, visible)
                limit = self._limit(select) if order_by else None
            if not group_by and not measures:
                group_by, measures = self._grouping(select, scope, aliases, visible)
        return ExtractedQuery(f, list(dict.fromkeys(kinds)), order_by, limit, group_by, measures,
                              sorted(columns) or None, dropped, f_json)

    def _resolve_projection(self, node: Any, select: Any) -> Any:
        exp = self.exp
        if isinstance(node, exp.Literal) and not node.is_string:
            position = int(str(node.this))
            if 1 <= position <= len(select.selects):
                projection = select.selects[position - 1]
                return projection.this if isinstance(projection, exp.Alias) else projection
        if isinstance(node, exp.Column) and not node.table:
            for projection in select.selects:
                if isinstance(projection, exp.Alias) and projection.alias.lower() == node.name.lower():
                    return projection.this
        return node

    def _order(self, select: Any, scope: Any, aliases: set[str], visible: set[str] | None) -> list[tuple[str, str]]:
        out = []
        for ordered in select.args["order"].expressions:
            target = self._resolve_projection(ordered.this, select)
            try:
                column = self._column(target, scope, aliases, visible)
                out.append((column, "desc" if ordered.args.get("desc") else "asc"))
            except _Unconvertible:
                return []  # ordered by something else first: no Top-N on the table's columns
        return out

    def _limit(self, select: Any) -> int | None:
        limit = select.args.get("limit")
        if limit is None:
            return None
        try:
            value = self._literal(limit.expression)
        except _Unconvertible:
            return None
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None

    def _grouping(self, select: Any, scope: Any, aliases: set[str],
                  visible: set[str] | None) -> tuple[list[str], list[tuple[str, str]]]:
        exp = self.exp
        group = select.args.get("group")
        group_by = []
        if group is not None:
            for node in group.expressions:
                try:
                    group_by.append(self._column(self._resolve_projection(node, select), scope, aliases, visible))
                except _Unconvertible:
                    return [], []  # grouped by an expression: no pre-aggregate model fits
        measures: list[tuple[str, str]] = []
        for projection in select.selects:
            for agg in projection.find_all(exp.AggFunc):
                if agg.find_ancestor(exp.Window) is not None or isinstance(agg.parent, exp.Window):
                    continue  # a window function does not group
                names = {exp.Sum: ["sum"], exp.Min: ["min"], exp.Max: ["max"], exp.Avg: ["sum", "count"],
                         exp.Count: ["count"]}
                functions = next((v for k, v in names.items() if isinstance(agg, k)), None)
                if functions is None:
                    continue
                target = agg.this
                if isinstance(agg, exp.Count) and (target is None or isinstance(target, exp.Star)):
                    measures.append(("*", "count"))
                    continue
                if isinstance(target, exp.Distinct):
                    continue
                try:
                    column = self._column(target, scope, aliases, visible)
                except _Unconvertible:
                    continue
                measures += [(column, f) for f in functions]
        if group is None and not measures:
            return [], []
        return group_by, list(dict.fromkeys(measures))


def _leaves(f: flt.Filter) -> list[Any]:
    """The values a filter holds (an IN list counts each of its values)."""
    if isinstance(f, tuple) and len(f) == 2 and f[0] in ("and", "or"):
        return [v for part in f[1] for v in _leaves(part)]
    value = f[2] if isinstance(f, tuple) and len(f) == 3 else None
    return list(value) if isinstance(value, list) else [value]


def _combine(op: str, parts: list[flt.Filter]) -> flt.Filter:
    """("and"|"or", parts) with nested parts of the same operator flattened; a single part as is."""
    flat: list[flt.Filter] = []
    for part in parts:
        if isinstance(part, tuple) and len(part) == 2 and part[0] == op:
            flat.extend(part[1])
        else:
            flat.append(part)
    return flat[0] if len(flat) == 1 else (op, flat)


def _parse_date(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text.strip()[:10])
    except ValueError:
        raise _Unconvertible(BAD_VALUE, f"date {text!r}") from None


def _parse_datetime(text: str) -> dt.datetime:
    try:
        return dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise _Unconvertible(BAD_VALUE, f"timestamp {text!r}") from None


def _like_prefix(pattern: Any) -> str | None:
    """'abc%' -> 'abc'; None when the pattern is not a plain prefix."""
    if not isinstance(pattern, str) or not pattern.endswith("%"):
        return None
    prefix = pattern.rstrip("%")
    if not prefix or any(c in prefix for c in "%_\\"):
        return None
    return prefix


def _next_prefix(prefix: str) -> str | None:
    """The smallest string above every string starting with `prefix` (None: no such string)."""
    chars = list(prefix)
    while chars:
        last = ord(chars[-1])
        if last < 0x10FFFF and not 0xD7FF <= last < 0xE000:
            chars[-1] = chr(last + 1)
            return "".join(chars)
        chars.pop()
    return None


def extract_queries(sql: str | Statement, schema: pa.Schema, table_name: str,
                    dialect: str | None = None) -> list[ExtractedQuery]:
    """The queries a statement (its text, or a `Statement` from `read_statements`, parsed from
    its tokens as the import does) runs against the table called `table_name` (see the module
    docstring); sqlglot's ParseError when it does not parse."""
    extractor = _Extractor(schema, table_name, dialect)
    if isinstance(sql, Statement):
        if sql.problem is not None:
            raise InvalidArgumentError(f"the statement cannot be analysed: {sql.problem}")
        return extractor.queries(extractor.parse_statement(sql))
    return extractor.queries(extractor.parse(sql))


def import_sql(path: str | os.PathLike, sql_file: str | os.PathLike, dialect: str | None = None,
               table_name: str | None = None, progress: Callable[[int, int], None] | None = None,
               encoding: str = "utf-8", max_statement_chars: int = MAX_STATEMENT_CHARS) -> ImportResult:
    """Parse a SQL history (see the module docstring) and append a record per query of the
    table to its query log (source "import").  `table_name` is the name the statements use
    for the table (default: the table directory's name).  The file is decoded with `encoding`
    (InvalidArgumentError, with the byte offset, if it cannot be: nothing is logged); a
    statement longer than `max_statement_chars` is refused and counted.  `progress(done, total)`
    is called in characters of the file as statements are parsed."""

    if not isinstance(max_statement_chars, int) or isinstance(max_statement_chars, bool) or max_statement_chars < 1:
        raise InvalidArgumentError(f"max_statement_chars must be a positive number of characters, "
                                   f"not {max_statement_chars!r}")
    table: Table | IcebergTable
    if is_iceberg_location(path):  # named by its catalog: the statements name it as the catalog does
        table = open_iceberg(str(path))
        name = table_name or table.location.table
    else:
        table = Table.open(path).at()  # the engine's view (a Paimon table's too)
        name = table_name or os.path.basename(os.path.normpath(table.path))
    extractor = _Extractor(table.schema, name, dialect)
    try:
        with open(sql_file, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise InvalidArgumentError(f"cannot read the SQL history {sql_file}: {exc}") from None
    text = decode_history(data, encoding, os.fspath(sql_file))
    del data
    result = ImportResult()
    rows: list[dict[str, Any]] = []
    with _quiet_sqlglot():
        for statement in read_statements(text, dialect, max_statement_chars, progress):
            _import_statement(statement, extractor, result, rows)
            if len(rows) >= BATCH:
                append_rows(table.path, rows)
                rows = []
    append_rows(table.path, rows)
    if progress is not None:
        progress(len(text), len(text))
    return result


@contextlib.contextmanager
def _quiet_sqlglot() -> Iterator[None]:
    """sqlglot's own warnings ("falling back to parsing as a 'Command'") off while a history is
    read: such a statement is counted (as not reading the table), not a stderr line each."""
    log = logging.getLogger("sqlglot")
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(level)


def _import_statement(statement: Statement, extractor: _Extractor, result: ImportResult,
                      rows: list[dict[str, Any]]) -> None:
    """Count one statement in `result`; its queries of the table appended to `rows`."""
    from sqlglot.errors import SqlglotError

    if statement.not_a_query:
        result.other_events += 1
        return
    result.statements += 1
    if statement.problem is not None:
        if statement.too_large:
            result.too_large += 1
            if len(result.refused) < EXAMPLES:
                result.refused.append(statement.problem)
        else:
            result.skipped += 1
            if len(result.errors) < EXAMPLES:
                result.errors.append(statement.problem)
        return
    try:
        found = extractor.queries(extractor.parse_statement(statement))
    except (SqlglotError, ValueError, RecursionError, _NotAStatement) as exc:
        pieces = _split_at_statement_lines(statement)
        if len(pieces) > 1 and _all_parse(extractor, pieces):
            # a history without ';' (one statement per line, or per block): split where a line
            # starts a statement, and say so
            result.statements -= 1
            result.unterminated += len(pieces)
            for piece in pieces:
                _import_statement(piece, extractor, result, rows)
            return
        result.skipped += 1
        if len(result.errors) < EXAMPLES:
            result.errors.append(_parse_problem(statement, exc))
        return
    if not found:
        result.other_tables += 1
        return
    for query in found:
        for dropped in query.dropped:
            result.dropped[dropped.reason] += 1
            if len(result.dropped_examples) < EXAMPLES:
                result.dropped_examples.append(f"line {dropped.line or statement.line:,}: {dropped}")
        record = QueryRecord("read" if not query.group_by and not query.measures else "aggregate",
                             query.filter, query.columns, query.order_by, query.limit, query.group_by,
                             query.measures, duration_ms=statement.duration_ms, sql=statement.sql,
                             source="import", user=statement.user, predicates=query.predicates,
                             filter_json=query.filter_json)
        if statement.ts is not None:
            record.ts = statement.ts
        rows.append(record.to_row())
        result.imported += 1


_STATEMENT_WORDS = {"SELECT", "WITH", "INSERT", "UPDATE", "DELETE", "MERGE", "CREATE", "DROP", "ALTER", "USE",
                    "SET", "SHOW", "DESCRIBE", "EXPLAIN", "TRUNCATE", "VALUES", "FROM"}
_STATEMENT_LINE = re.compile(r"^[ \t]*(SELECT|WITH|INSERT|UPDATE|DELETE|MERGE|CREATE|DROP|ALTER|USE|SET|SHOW|"
                             r"DESCRIBE|EXPLAIN|TRUNCATE)\b", re.IGNORECASE | re.MULTILINE)


def _split_at_statement_lines(statement: Statement) -> list[Statement]:
    """A text that did not parse as one statement, cut before each line that starts with a
    statement's first word (histories exported one statement per line, without ';')."""
    starts = [m.start() for m in _STATEMENT_LINE.finditer(statement.sql)]
    if len(starts) < 2:
        return []
    bounds = starts + [len(statement.sql)]
    if bounds[0] != 0 and statement.sql[:bounds[0]].strip():
        return []  # text before the first statement word: not a run of statements
    return [Statement(statement.sql[a:b].strip(), statement.line + statement.sql.count("\n", 0, a),
                      statement.ts, statement.user, statement.duration_ms)
            for a, b in itertools.pairwise(bounds) if statement.sql[a:b].strip()]


def _all_parse(extractor: _Extractor, pieces: list[Statement]) -> bool:
    from sqlglot.errors import SqlglotError
    try:
        for piece in pieces:
            extractor.parse_statement(piece)
    except (SqlglotError, ValueError, RecursionError, _NotAStatement):
        return False
    return True


def _parse_problem(statement: Statement, exc: BaseException) -> str:
    """One line: where the statement starts, how it begins, what sqlglot said."""
    from sqlglot.errors import ParseError

    if isinstance(exc, RecursionError):
        message = "nested too deeply to analyse"
    else:
        message = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
    if isinstance(exc, ParseError) and exc.errors and \
            str(exc.errors[0].get("highlight") or "").upper() in _STATEMENT_WORDS:
        message += " (a statement starts there: is the ';' before it missing?)"
    head = " ".join(statement.sql[:200].split())
    head = head if len(head) <= 80 else head[:77] + "..."
    return f"line {statement.line:,}: {head!r}: {message}"
