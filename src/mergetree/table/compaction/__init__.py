"""Universal compaction: `planner` decides what to compact (pure rules, no I/O, imported by
the options layer); `runner` merges the chosen files and commits the result (it sits above the
write path's building blocks).  The package itself imports neither, so each stays in its layer."""

__all__: list[str] = []
