"""The levers of data organization, each a way to lay a table's data out so reads skip more:
`curves` (linear, Z-order and Hilbert keys), `qdtree` (the workload-driven layout),
`optimize` (the clustered rewrite, its tier marks and the background optimizer's `pending`
work, index builds), `preaggregates` (measures kept per file) and `aggregate` (answering
aggregates from them).  Which index a read probes is `mergetree.table.indexes`'; which lever
to pull is the advisor's (`mergetree.table.workload.advise`)."""

__all__: list[str] = []
