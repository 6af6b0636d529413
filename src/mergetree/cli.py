"""The `mergetree` command line: `mergetree demo`, `mergetree demo-spark`, `mergetree bench`."""
from __future__ import annotations

import sys

USAGE = """usage: mergetree COMMAND [options]

commands:
  demo     write sorted runs as Parquet, merge them with every engine, show a benchmark
  demo-spark  a CDC pipeline on Spark: upserts and deletes, compaction, a pruned point read, a bucket join
  bench    run the merge benchmark against its peers (see `mergetree bench --help`)
  info     PATH: a table's schema, snapshots, and each bucket's levels and sorted runs
  compact  PATH [--full]: compact the table, with a progress bar
  read     PATH [--filter 'col op value' ...] [--columns a,b] [--limit N] [--snapshot ID]
  expire   PATH [--retain N] [--older-than-hours H] [--orphans]: expire snapshots, clean up
"""


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if not args or args[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if args else 2
    command, rest = args[0], args[1:]
    if command == "bench":
        from .bench import main as bench_main
        return bench_main(rest)
    if command in ("info", "compact", "read", "expire"):
        from .table_cli import main as table_main
        return table_main(command, rest)
    if command == "demo":
        from .demo import main as demo_main
        return demo_main(rest)
    if command == "demo-spark":
        from .demo_spark import main as demo_spark_main
        return demo_spark_main(rest)
    print(f"mergetree: unknown command {command!r}\n\n{USAGE}", file=sys.stderr)
    return 2
