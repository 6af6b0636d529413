"""The `mergetree` command line: one argparse entry with a subcommand per job.

User mistakes (a missing table, an unknown snapshot, a bad filter, a damaged file) print
one line to stderr and exit non-zero: 2 for a wrong argument, 1 for anything else that
went wrong.  `--debug` shows the traceback instead.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ..errors import InvalidArgumentError, MergeTreeError
from ..table.durations import seconds
from ..table.workload import querylog
from . import commands, loading, organize, paimon
from .options import add_table_path, redact_arguments
from .render import err_console

__all__ = ["build_parser", "main"]

EXIT_USAGE = 2
EXIT_FAILED = 1

# Tools that live beside the library in a source checkout, imported only when run:
# (command, module, help).  `import mergetree` never loads them.
FORWARDED = (
    ("demo", "examples.demo", "write sorted runs as Parquet, merge them with every engine, show a benchmark"),
    ("demo-spark", "examples.demo_spark", "a CDC pipeline on a local Spark: upserts and deletes, compaction, "
                                          "a pruned point read, a bucket join"),
    ("bench", "benchmarks.bench", "the benchmarks against their peers: merge, table, Spark, layout, advisor, scale, "
                                  "Paimon, storage (`mergetree bench --help`)"),
)


def _version() -> str:
    from .. import __version__
    return __version__


def _checkout_root() -> Path | None:
    """The source checkout this package runs from (an editable install), if any."""
    root = Path(__file__).resolve().parents[3]
    return root if (root / "benchmarks" / "__init__.py").is_file() and (root / "examples").is_dir() else None


def _forward(command: str, module: str) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        root = _checkout_root()
        if root is None:
            raise InvalidArgumentError(
                f"`mergetree {command}` runs from a source checkout of mergetree (the benchmarks and demos "
                f"are not part of the installed package): clone the repository and run `make "
                f"{'demo' if command == 'demo' else command}` there")
        if str(root) not in sys.path:
            sys.path.insert(0, str(root))
        return int(importlib.import_module(module).main(args.rest) or 0)
    return run


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {value}")
    return value


def _non_negative_hours(text: str) -> float:
    value = float(text)
    try:  # the table layer's check of every duration: not negative, finite, representable
        seconds(value * 3600, "hours")
    except InvalidArgumentError:
        raise argparse.ArgumentTypeError(f"must be 0 or more hours (a finite number), not {text}") from None
    return value


@contextlib.contextmanager
def _warnings_on_one_line(command: str) -> Iterator[None]:
    """A warning (a damaged query log left out, ...) is one line on stderr, not Python's two."""
    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             file: Any = None, line: str | None = None) -> None:
        print(f"mergetree {command}: warning: {message}", file=sys.stderr)
    with warnings.catch_warnings():
        warnings.showwarning = show
        yield


class _InOrder(argparse.Action):
    """Options of several kinds gathered into one list of (kind, value), in the order given."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        gathered = list(getattr(namespace, self.dest, None) or [])
        gathered.append(((option_string or "").lstrip("-"), values))
        setattr(namespace, self.dest, gathered)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mergetree", description="Primary-key LSM tables on Parquet, merged by a six-state loser tree.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--version", action="version", version=f"mergetree {_version()}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks instead of one-line errors")
    subcommands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def command(name: str, help: str, run: Callable[[argparse.Namespace], int],
                **kwargs: Any) -> argparse.ArgumentParser:
        p = subcommands.add_parser(name, help=help, description=help,
                                   formatter_class=argparse.ArgumentDefaultsHelpFormatter, **kwargs)
        p.set_defaults(run=run, forwarded=False)
        return p

    for name, module, help in FORWARDED:
        # the tool parses its own options (`mergetree NAME --help` shows them)
        command(name, help, _forward(name, module), add_help=False).set_defaults(forwarded=True)

    paimon.add_commands(subcommands, command)

    p = command("info", "a table's schema, snapshots, and each bucket's levels and sorted runs", commands.info)
    add_table_path(p)
    p.add_argument("--snapshots", type=_non_negative_int, default=10, help="how many recent snapshots to list")

    p = command("compact", "compact the table (with a progress bar)", commands.compact)
    add_table_path(p)
    p.add_argument("--full", action="store_true", help="compact every bucket into its last level")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")

    p = command("read", "read the table (rows come bucket by bucket, each bucket in key order; --sorted: all in "
                        "primary-key order); an Iceberg table's iceberg://CATALOG/NAMESPACE.TABLE too", commands.read)
    add_table_path(p)
    p.add_argument("--filter", action="append", metavar="'COL OP VALUE'",
                   help="a predicate; repeat for AND. Operators: = != < <= > >= in (a, b) not in (a, b) "
                        "is null, is not null")
    p.add_argument("--columns", help="comma-separated columns (default: all)")
    p.add_argument("--limit", type=_non_negative_int, default=20,
                   help="rows to show (0: only the count); with --order-by, a Top-N read of that many rows")
    p.add_argument("--order-by", metavar="COL[:desc],...", help="order the rows (nulls last)")
    p.add_argument("--sorted", action="store_true",
                   help="rows in primary-key order across buckets (merged as they are read)")
    p.add_argument("--snapshot", type=commands.snapshot_arg, metavar="ID|TAG|TIME",
                   help="time travel: a snapshot id, a tag, or a point in time (ISO 8601, e.g. 2024-05-01T12:00; "
                        "the newest snapshot at or before it); default: the latest")
    p.add_argument("--explain", action="store_true",
                   help="print what each pruning step removed and how many files the read touched")

    p = command("changes", "what commits changed: per key +I, -U/+U (old/new row), -D (see docs/CHANGES.md)",
                commands.changes)
    add_table_path(p)
    p.add_argument("--from", dest="start", type=commands.snapshot_arg, required=True, metavar="N|TAG|TIME",
                   help="the snapshot the change starts after (0: before the first commit; a tag or an ISO 8601 time "
                        "names one)")
    p.add_argument("--to", dest="end", type=commands.snapshot_arg, metavar="M|TAG|TIME",
                   help="the last commit (default: latest)")
    p.add_argument("--columns", help="comma-separated columns (keys always come too; default: all)")
    p.add_argument("--filter", action="append", metavar="'COL OP VALUE'",
                   help="the change of the rows that pass (docs/CHANGES.md); repeat for AND")
    p.add_argument("--per-commit", action="store_true", help="each commit's change, with _snapshot_id")
    p.add_argument("--source", choices=["auto", "delta", "changelog"], default="auto",
                   help="computed where needed (auto), always computed (delta), or the changelog files as written")
    p.add_argument("--limit", type=_non_negative_int, default=20, help="rows to show (0: only the count)")
    p.add_argument("--format", choices=["table", "json", "csv"], default="table",
                   help="a table preview, or every row (up to --limit) as JSON lines or CSV")

    p = command("optimize", "cluster an append table's files (linear, Z-order, Hilbert) or re-apply its layout; "
                            "a full compaction for a primary-key table; an Iceberg table's files rewritten by its "
                            "layout, a commit per partition", commands.optimize)
    add_table_path(p, help="the table's path or URI, or an Iceberg table's iceberg://CATALOG/NAMESPACE.TABLE")
    p.add_argument("--order", metavar="COL,...", help="columns to cluster by (default: the stored layout)")
    p.add_argument("--strategy", choices=["linear", "zorder", "hilbert"],
                   help="default: linear for one column, hilbert for more")
    p.add_argument("--sort-within", metavar="COL,...", help="sort rows inside each file by these columns")
    p.add_argument("--filter", action="append", metavar="'COL OP VALUE'", help="only the files this selects")
    p.add_argument("--tier", choices=["major", "minor"], default="major",
                   help="an Iceberg table: lay files out (major) or only bin-pack small ones (minor)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")

    p = command("build-indexes", "give existing files the indexes and pre-aggregates the options declare",
                commands.build_indexes)
    add_table_path(p)
    p.add_argument("--no-progress", action="store_true", help="no progress bar")

    p = command("alter", "change the table's columns in one schema change, as Paimon's ALTER TABLE "
                         "(the changes apply in the order given)", commands.alter)
    add_table_path(p)
    p.set_defaults(changes=[])
    for flag, metavar, what in (
            ("add", "NAME:TYPE", "add a nullable column of a Paimon type (BIGINT, STRING, 'DECIMAL(10, 2)'); "
                                 "a dotted NAME adds a nested field"),
            ("rename", "OLD:NEW", "rename a column"), ("drop", "NAME", "drop a column"),
            ("retype", "NAME:TYPE", "change a column's type as Paimon's casts allow"),
            ("nullable", "NAME", "let a column hold nulls"),
            ("required", "NAME", "make a column NOT NULL (only where the table allows it)"),
            ("comment", "NAME:TEXT", "set a column's comment"),
            ("move", "NAME:WHERE", "move a column: first, last, after=COL or before=COL")):
        p.add_argument(f"--{flag}", action=_InOrder, dest="changes", metavar=metavar, help=what + "; repeatable")

    p = command("delete", "delete the rows a condition selects (whole partitions when it names only partition "
                          "columns)", commands.delete)
    add_table_path(p)
    p.add_argument("--filter", action="append", required=True, metavar="'COL OP VALUE'",
                   help="a predicate; repeat for AND (the operators of read --filter)")
    p.add_argument("--count", action="store_true", help="count the rows first, and say how many went")

    loading.add_commands(command)  # create, write

    p = command("migrate", "make a table of mergetree's older format into an Apache Paimon table at a new path "
                           "(the old one is only read)", commands.migrate)
    p.add_argument("old", help="the table of mergetree's older format")
    add_table_path(p, help="where the Paimon table goes (a new or empty directory, or W/db.db/name)", name="new")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")

    p = command("tag", "tag a snapshot (kept by expiry until the tag is deleted), delete a tag, or list the tags",
                commands.tag)
    add_table_path(p)
    p.add_argument("name", nargs="?", help="the tag to create (none given: list the table's tags)")
    p.add_argument("--snapshot", type=commands.snapshot_arg, metavar="ID|TAG|TIME",
                   help="the snapshot to tag (default: the latest)")
    p.add_argument("--delete", metavar="NAME", help="delete this tag instead")

    p = command("expire", "expire old snapshots (and optionally orphan files)", commands.expire)
    add_table_path(p)
    p.add_argument("--retain", type=_positive_int, metavar="N",
                   help="snapshots always kept (default: the table's snapshot.num-retained.min, Paimon's 10)")
    p.add_argument("--retain-max", type=_positive_int, metavar="N",
                   help="snapshots kept at most, whatever their age (default: snapshot.num-retained.max, unbounded)")
    p.add_argument("--older-than-hours", type=_non_negative_hours,
                   help="between those, expire snapshots older than this (default: snapshot.time-retained, Paimon's "
                        "1 hour; 0: any age)")
    p.add_argument("--orphans", action="store_true",
                   help="also remove the table's unreferenced files (foreign files are never touched)")
    p.add_argument("--orphans-older-than-hours", type=_non_negative_hours, default=24.0,
                   help="only remove orphan files older than this (Paimon's default: a day), so commits in flight "
                        "keep theirs")

    def queries_help(args: argparse.Namespace) -> int:
        queries.print_help()
        return EXIT_USAGE

    queries = command("queries", "the table's query log: import a SQL history, show what was asked", queries_help)
    queries_commands = queries.add_subparsers(dest="queries_command", metavar="SUBCOMMAND")
    p = queries_commands.add_parser(
        "import", help="parse a SQL history with sqlglot and log the queries that read the table",
        description="parse a SQL history (statements separated by ';', split by sqlglot's tokenizer, so they "
                    "may span lines; or, when the file starts with '{', JSON lines with a 'query' or 'sql' field "
                    "and optionally 'ts', 'user', 'duration_ms') and log every query that reads the table; "
                    "predicates left out of the logged filters are counted and shown",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.set_defaults(run=organize.queries_import, forwarded=False)
    add_table_path(p)
    p.add_argument("--sql", required=True, metavar="FILE", help="the history file")
    p.add_argument("--dialect", help="the SQL dialect (sqlglot's names: trino, spark, hive, presto, duckdb, ...)")
    p.add_argument("--table", metavar="NAME", help="the table's name in the statements, e.g. db.events "
                                                   "(default: the table directory's name)")
    p.add_argument("--encoding", default="utf-8", help="the file's text encoding (Python's names: utf-8, latin-1, "
                                                       "cp1252, utf-16, ...)")
    p.add_argument("--max-statement-chars", type=_positive_int, default=1_000_000, metavar="N",
                   help="refuse (and count) a statement longer than this; parsing takes 3-6 s of CPU and "
                        "150-250 MB a million characters")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p = queries_commands.add_parser("show", help="a summary of the logged queries",
                                    formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.set_defaults(run=organize.queries_show, forwarded=False)
    add_table_path(p)
    p.add_argument("--since", type=organize.parse_age, metavar="AGE", help="only queries this recent (30d, 12h)")
    p.add_argument("--top", type=_positive_int, default=15, help="filtered columns to list")

    p = queries_commands.add_parser(
        "expire", help="remove logged queries older than the retention (the table's query-log.retention, "
                       "default 30 days)", formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.set_defaults(run=organize.queries_expire, forwarded=False)
    add_table_path(p)
    p.add_argument("--retention", metavar="AGE", help="keep this much (30d, 12h, or 'forever'); default: the "
                                                       "table's option")

    p = command("advise", "recommend a layout, indexes, an in-file sort and pre-aggregates from the query log, "
                          "each with its reason and replayed effect", organize.advise)
    add_table_path(p, help="the table's path or URI, or an Iceberg table's iceberg://CATALOG/NAMESPACE.TABLE")
    p.add_argument("--since", type=organize.parse_age, metavar="AGE", help="only queries this recent (30d, 12h)")
    p.add_argument("--json", action="store_true", help="print the advice as JSON")
    p.add_argument("--apply", action="store_true", help="write the recommendation into the table's options")

    p = command("replay", "re-plan logged queries on the table now, or on a simulated layout, and compare the "
                          "files and bytes they scan with what they scanned when they ran", organize.replay)
    add_table_path(p)
    p.add_argument("--since", type=organize.parse_age, metavar="AGE", help="only queries this recent (30d, 12h)")
    p.add_argument("--limit", type=_non_negative_int, default=1000,
                   help="replay a uniform sample of this many queries (0: all)")
    p.add_argument("--layout", metavar="STRATEGY:COL,...", help="simulate this layout, e.g. hilbert:a,b")
    p.add_argument("--bloom", metavar="COL,...", help="with --layout: also simulate Bloom filters on these")
    p.add_argument("--bitmap", metavar="COL,...", help="with --layout: also simulate bitmaps on these")
    p.add_argument("--per-query", type=_non_negative_int, default=0, metavar="N", help="list the first N queries")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")

    p = command("optimize-daemon", "optimize tables in the background: a minor pass merges new small files, a "
                                   "major pass lays out data once optimize.major-threshold of it waits",
                organize.optimize_daemon)
    add_table_path(p, help="table directories or URIs (s3://bucket/prefix, ...), Iceberg tables as "
                           "iceberg://CATALOG/NAMESPACE.TABLE", nargs="+", name="paths",
                   metavar="PATH")
    p.add_argument("--once", action="store_true", help="one round, then exit")
    p.add_argument("--interval", type=float, default=60.0, help="seconds between rounds")
    p.add_argument("--max-tasks", default="2", metavar="N",
                   help="tasks (one partition's rewrite, one commit each) at once over all tables")
    p.add_argument("--max-tasks-per-table", default="1", metavar="N",
                   help="tasks at once on one table (a table's optimize.max-concurrent-tasks replaces it)")
    p.add_argument("--max-task-size", default="4 gb", metavar="SIZE",
                   help="a partition's pending buckets are one task up to this many bytes, the rest another")
    p.add_argument("--since", type=organize.parse_age, default="1d", metavar="AGE",
                   help="the logged queries that order the tasks: this recent (their bytes read in each task's files)")

    p = command("report", "a self-contained HTML page: statistics, current vs recommended configuration, bytes "
                          "scanned before and after each optimization, charts", organize.report)
    add_table_path(p)
    p.add_argument("--html", metavar="FILE", help="write the page here")
    p.add_argument("--png", metavar="DIR", help="write the charts as PNG files into this directory (matplotlib)")
    p.add_argument("--since", type=organize.parse_age, metavar="AGE", help="only queries this recent (30d, 12h)")

    p = command("repair", "set a damaged latest snapshot aside so the table opens at the newest "
                          "intact one (the damaged file is kept in snapshot/damaged/); drop the damaged files "
                          "of its query log and optimizer history", commands.repair)
    add_table_path(p, help="table directory or URI, or its queries/ or optimizer/ directory")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, rest = parser.parse_known_args(sys.argv[1:] if argv is None else list(argv))
    if args.forwarded:
        args.rest = rest
    elif rest:
        # a mistyped option's KEY=VALUE may hold a secret: shown without its value
        parser.error(f"unrecognized arguments: {' '.join(redact_arguments(rest))}")
    try:
        with querylog.query_source("cli"), _warnings_on_one_line(args.command):
            return args.run(args)
    except KeyboardInterrupt:
        err_console.print("mergetree: interrupted")
        return 130
    except (MergeTreeError, OSError) as exc:
        if args.debug:
            raise
        print(f"mergetree {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE if isinstance(exc, InvalidArgumentError) else EXIT_FAILED


def run() -> None:
    """The `mergetree` command's process: `main`, then the query log and the output flushed
    (what the exit handlers would do for them) and an exit that skips the native libraries'
    static destructors, where pyarrow's thread pools can abort a process whose work is done
    ("terminate called without an active exception", exit -6: apache/arrow#34314).  A Spark
    the command started goes with it (its JVM exits when this process's pipe closes)."""
    code = main()  # a usage error or --help exits the usual way, inside
    querylog.flush()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
