"""The workload loop of one table: what was asked and what was done about it, kept beside the
table as append tables, and the advice drawn from them.  `querylog` (every read's shape and
cost, at `<table>/queries/`), `history` (every layout change, at `<table>/optimizer/`: written
by whoever commits one, `Table.optimize` as the optimizer's passes), `logtables` (reading
both, skipping what is damaged) and `advise` (the advisor's rules over the log, layouts
simulated on a sample)."""

__all__: list[str] = []
