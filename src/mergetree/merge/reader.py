"""`mergetree.merge`: a streaming k-way merge of sorted Arrow runs."""
from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import numpy as np
import pyarrow as pa

from .. import _core
from ..errors import (
    InvalidArgumentError,
    MalformedArrowError,
    MergeStateError,
    RetractionError,
    SchemaMismatchError,
    UnsortedRunError,
    UnsupportedTypeError,
)
from .arrow_input import sort_indices
from .assemble import RowSelection, select_rows
from .engines import EnginePlan
from .runs import (
    KeyColumnPlan,
    RunLike,
    RunSource,
    check_kind_values,
    check_same_schema,
    check_sequence_values,
    plan_key_column,
)

__all__ = ["ALGORITHMS", "MAX_BATCH_SIZE", "MergeReader", "MergeStats", "exact_batches", "materialize", "merge"]

ALGORITHMS = ("loser-tree", "heap")
MIN_ROWS_PER_THREAD = 16_384  # smaller merges do not split: threads would cost more than they save
SAMPLES_PER_THREAD = 256      # keys sampled per key range when choosing where to cut
MAX_BATCH_SIZE = 1 << 28  # rows per output batch at most (the core sizes its buffers by it)


@dataclass(frozen=True)
class MergeStats:
    """Counters of a merge so far."""

    rows_in: int
    rows_out: int
    key_comparisons: int
    sequence_comparisons: int
    rows_stretched: int = 0  # rows handed out as slices of a run's batch, without tree work


def merge(
    runs: Sequence[RunLike],
    key: str | Sequence[str],
    *,
    sequence: str | None = None,
    kind: str | None = None,
    engine: str = "deduplicate",
    aggregations: Mapping[str, str] | None = None,
    keep_deletes: bool = False,
    algorithm: str = "loser-tree",
    batch_size: int = 65536,
    check_order: bool = True,
    threads: int = 1,
) -> MergeReader:

    """Merge sorted runs by key, folding the versions of each key with a merge engine.

    Parameters
    ----------
    runs
        Sorted runs, oldest first: each a ``pa.Table``, ``pa.RecordBatch``,
        ``pa.RecordBatchReader``, an object with ``__arrow_c_stream__``, or an
        iterable of record batches.  Every run is strictly ascending by `key`
        and all runs share one schema.  Runs are streamed a batch at a time.
    key
        Key column name, or names for a composite key (lexicographic,
        ascending, nulls first).
    sequence
        An int64 column ordering versions of one key (higher is newer).  When
        omitted, a later run is newer than an earlier one; ties also go to the later run.
    kind
        An int8 row-kind column: 0 (+I), 1 (-U), 2 (+U), 3 (-D).
    engine
        ``"deduplicate"`` (newest wins), ``"first-row"`` (oldest wins),
        ``"partial-update"`` (newest non-null value per column), ``"aggregate"``
        (a function per column, see `aggregations`) or ``"none"`` (every row, in
        key then sequence order).
    aggregations
        For ``engine="aggregate"``: column name -> function (sum, product, min,
        max, bool_and, bool_or, first_value, last_value, first_non_null_value,
        last_non_null_value, listagg).  Unnamed columns use last_non_null_value.
    keep_deletes
        Keep keys whose merged result is a retraction (deduplicate,
        partial-update); by default they are dropped.
    algorithm
        ``"loser-tree"`` (the six-state loser tree) or ``"heap"`` (a binary heap).
    batch_size
        Maximum rows per output batch.
    check_order
        Verify that every run is strictly ascending (raises `UnsortedRunError`).
    threads
        Merge in this many threads (``0``: one per CPU).  The runs are cut at the
        same N - 1 keys (chosen from samples of the runs, found in each run by
        binary search) and the N key ranges merge at once, the core running
        without the GIL; batches still come out in key order, the same batches
        as with one thread.  Each run is read into memory first (tables and
        batches are used as they are).
    """
    if isinstance(key, str):
        keys = [key]
    elif isinstance(key, (list, tuple)) and key and all(isinstance(k, str) for k in key):
        keys = list(key)
    else:
        raise InvalidArgumentError(f"key must be a column name or a non-empty list of names, not {key!r}")
    if len(set(keys)) != len(keys):
        raise InvalidArgumentError(f"key names a column twice: {keys}")
    for name, value in (("sequence", sequence), ("kind", kind)):
        if value is not None and not isinstance(value, str):
            raise InvalidArgumentError(f"{name} must be a column name or None, not {value!r}")
    if not isinstance(engine, str):
        raise InvalidArgumentError(f"engine must be a string such as 'deduplicate', not {engine!r}")
    if aggregations is not None and not (isinstance(aggregations, Mapping)
                                         and all(isinstance(k, str) and isinstance(v, str)
                                                 for k, v in aggregations.items())):
        raise InvalidArgumentError(f"aggregations must map column names to function names, e.g. "
                                   f"{{'amount': 'sum'}}, not {aggregations!r}")
    for name, flag in (("keep_deletes", keep_deletes), ("check_order", check_order)):
        if not isinstance(flag, bool):
            raise InvalidArgumentError(f"{name} must be True or False, not {flag!r}")
    if algorithm not in ALGORITHMS:
        raise InvalidArgumentError(f"unknown algorithm {algorithm!r}; choose 'loser-tree' or 'heap'")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or not 1 <= batch_size <= MAX_BATCH_SIZE:
        raise InvalidArgumentError(f"batch_size must be an integer from 1 to {MAX_BATCH_SIZE}, not {batch_size!r}")
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 0:
        raise InvalidArgumentError(f"threads must be 0 (one per CPU) or a positive integer, not {threads!r}")
    if isinstance(runs, (pa.Table, pa.RecordBatch, pa.RecordBatchReader)):
        raise InvalidArgumentError("runs must be a list of runs; wrap a single run in a list")
    if isinstance(runs, (str, bytes, Mapping)) or not isinstance(runs, Iterable):
        raise InvalidArgumentError(f"runs must be a list of sorted runs, not {type(runs).__name__}")
    threads = threads or os.cpu_count() or 1
    run_list = list(runs)
    if threads > 1:
        run_list = [materialize(i, run) for i, run in enumerate(run_list)]
    return MergeReader(run_list, keys, sequence, kind, engine, aggregations, keep_deletes,
                       algorithm, batch_size, check_order, threads)


def materialize(index: int, run: RunLike) -> RunLike:
    """A run as a pa.Table (streams and iterables are read); an iterable with no
    batches stays an empty list (it has no schema)."""
    if isinstance(run, pa.Table):
        return run
    if isinstance(run, pa.RecordBatch):
        return pa.Table.from_batches([run])
    source = RunSource(index, run)   # checked as it is read; errors name the run
    batches = []
    while (batch := source.next_batch()) is not None:
        batches.append(batch)
    schema = batches[0].schema if batches else source.peek_schema()
    return pa.Table.from_batches(batches, schema=schema) if schema is not None else []


def exact_batches(batches: Iterable[pa.RecordBatch], size: int) -> Iterator[pa.RecordBatch]:
    """The rows of `batches` in batches of exactly `size` rows, the last one shorter."""
    carry: list[pa.RecordBatch] = []
    held = 0
    for batch in batches:
        if not carry and batch.num_rows == size:
            yield batch
            continue
        start = 0
        while start < batch.num_rows:
            take = min(size - held, batch.num_rows - start)
            carry.append(batch.slice(start, take))
            held += take
            start += take
            if held == size:
                yield carry[0] if len(carry) == 1 else pa.concat_batches(carry)
                carry, held = [], 0
    if held:
        yield carry[0] if len(carry) == 1 else pa.concat_batches(carry)


class MergeReader:
    """The merged stream.  Iterate it for record batches, call `read_all()`,
    or hand it to anything that accepts an Arrow stream (``__arrow_c_stream__``)."""

    def __repr__(self) -> str:
        return (f"MergeReader({len(self._sources)} runs by {self._key}, {self._settings[0]}, {self._algorithm}, "
                f"{self._rows_out:,} rows out)")

    def __init__(self, runs: list[RunLike], key: list[str], sequence: str | None, kind: str | None,
                 engine: str, aggregations: Mapping[str, str] | None, keep_deletes: bool,
                 algorithm: str, batch_size: int, check_order: bool, threads: int = 1,
                 first_positions: Sequence[int] | None = None) -> None:
        # a parallel merge keeps its (materialized) runs to cut them into key ranges;
        # a range's merge counts each run's positions from where its piece starts
        self._threads = threads
        self._runs = runs if threads > 1 else []
        self._settings = (engine, aggregations, keep_deletes, check_order)
        self._check_order = check_order
        self._parts: list[MergeReader] = []
        self._first_positions = list(first_positions) if first_positions is not None else [0] * len(runs)
        self._sources = [RunSource(i, run) for i, run in enumerate(runs)]
        self._key = key
        self._sequence = sequence
        self._kind = kind
        self._rows_out = 0
        self._batch_size = batch_size
        self._algorithm = algorithm
        self._started = False
        self.schema = self._common_schema()
        self._key_plans = self._plan_columns()
        self._engine = EnginePlan.create(engine, self.schema, key, sequence, kind, keep_deletes,
                                         aggregations)
        self._core_names = [p.name for p in self._key_plans]
        self._core_names += [c for c in (sequence, kind) if c is not None]
        # per run: [(first position, batch)] still referenced by pending output
        self._retained: list[list[tuple[int, pa.RecordBatch]]] = [[] for _ in runs]
        self._next_pos = list(self._first_positions)
        self._core: _core.MergeCore | None = None  # None: no runs, nothing to merge
        if runs and self.schema.names:  # no schema at all means every run is an empty iterable
            group_capacity = batch_size
            out_capacity = batch_size if engine in ("deduplicate", "first-row", "none") else 4 * batch_size
            self._core = _core.MergeCore(
                len(runs), [p.key_class for p in self._key_plans], [p.width for p in self._key_plans],
                sequence is not None, kind is not None, algorithm, self._engine.emit_mode,
                keep_deletes, check_order, engine == "first-row", out_capacity, group_capacity)
            for source in self._sources:
                self._supply(source.index)

    # -- set-up ---------------------------------------------------------------------
    def _common_schema(self) -> pa.Schema:
        schemas = [(s.index, s.peek_schema()) for s in self._sources]
        known = [(i, sch) for i, sch in schemas if sch is not None]
        if not known:
            return pa.schema([])
        _, reference = known[0]
        for i, sch in known[1:]:
            check_same_schema(reference, sch, i)
        return reference

    def _plan_columns(self) -> list[KeyColumnPlan]:
        if not self._sources or not self.schema.names:
            return []
        names = self.schema.names
        for col, role in [(k, "key") for k in self._key] + [(self._sequence, "sequence"), (self._kind, "kind")]:
            if col is not None and col not in names:
                raise SchemaMismatchError(f"the runs have no {role} column {col!r}; columns: {names}")
        if self._sequence is not None:
            if self._sequence in self._key:
                raise InvalidArgumentError(f"column {self._sequence!r} cannot be both key and sequence")
            dtype = self.schema.field(self._sequence).type
            if dtype != pa.int64():
                raise UnsupportedTypeError(f"sequence column {self._sequence!r} must be int64, not {dtype}")
        if self._kind is not None:
            if self._kind in self._key or self._kind == self._sequence:
                raise InvalidArgumentError(f"column {self._kind!r} cannot be the kind column and a key/sequence")
            dtype = self.schema.field(self._kind).type
            if dtype != pa.int8():
                raise UnsupportedTypeError(f"kind column {self._kind!r} must be int8, not {dtype}")
        return [plan_key_column(k, self.schema.field(k).type) for k in self._key]

    # -- feeding the core -----------------------------------------------------------
    def _running(self) -> _core.MergeCore:
        if self._core is None:
            raise MergeStateError("the merge has no core (it has no runs): nothing to feed or read")
        return self._core

    def _supply(self, run: int) -> None:
        """Give the core run's next non-empty batch, or tell it the run has ended."""
        source = self._sources[run]
        batch = source.next_batch()
        if batch is None:
            self._running().finish_run(run)
            return
        if batch.schema is not self.schema:
            check_same_schema(self.schema, batch.schema, run)
            if not batch.schema.equals(self.schema):
                batch = pa.RecordBatch.from_arrays(batch.columns, schema=self.schema)
        pos = self._next_pos[run]
        self._next_pos[run] = pos + batch.num_rows
        core_pos = pos - self._first_positions[run]   # the core counts from the piece's start
        columns = []
        for plan in self._key_plans:
            col = batch.column(plan.name)
            columns.append(plan.normalize(col) if plan.normalize else col)
        if self._sequence is not None:
            col = batch.column(self._sequence)
            check_sequence_values(col, run, pos, self._sequence)
            columns.append(col)
        if self._kind is not None:
            col = batch.column(self._kind)
            check_kind_values(col, run, pos, self._kind)
            columns.append(col)
        core_batch = pa.RecordBatch.from_arrays(columns, names=self._core_names)
        self._retained[run].append((core_pos, batch))
        try:
            installed = self._running().install_batch(run, core_batch)  # the core keeps core_batch alive
        except ValueError as exc:  # checked in Python already; this is the core's own check
            raise MalformedArrowError(f"run {run}: the core rejected a batch: {exc}") from None
        if not installed:
            self._raise_unsorted()

    def _raise_unsorted(self) -> None:
        core = self._running()
        run = core.error_run
        row = core.error_pos + self._first_positions[run]
        raise UnsortedRunError(
            f"run {run} is not sorted by {self._key} at row {row}: its key is not greater than the "
            f"key of row {row - 1} (runs must be strictly ascending, without repeated keys)",
            run=run, row=row, column=", ".join(self._key))

    # -- output -----------------------------------------------------------------------
    def __iter__(self) -> Iterator[pa.RecordBatch]:
        yield from exact_batches(self._merged(), self._batch_size)

    def _merged(self) -> Iterator[pa.RecordBatch]:
        """The output batches as they come: cut where the output buffers filled, a stretch
        as the slice of its input batch."""
        if self._started:
            raise RuntimeError("a MergeReader can be consumed only once")
        self._started = True
        if self._core is None:
            return
        yield from self._merge_in_threads() if self._threads > 1 else self._merge()

    def selections(self) -> Iterator[RowSelection]:
        """The merged rows as selections of the input batches, before any column is copied
        (so a consumer copies only the rows it keeps).  Deduplicate, first-row and none pick
        whole input rows; other engines fold columns, so their batches come whole.  The
        selections are not cut to `batch_size`.  A reader is consumed once, by iterating it
        or by this."""
        if self._started:
            raise RuntimeError("a MergeReader can be consumed only once")
        self._started = True
        if self._core is None:
            return
        if self._threads > 1 or not self._engine.selects_rows:
            batches = self._merge_in_threads() if self._threads > 1 else self._merge()
            for batch in exact_batches(batches, self._batch_size):
                yield RowSelection.of_batch(batch)
            return
        yield from self._merge(selections=True)

    def _merge(self, selections: bool = False) -> Iterator[Any]:
        core = self._running()
        while True:
            result = core.step()
            if result == _core.NEED_BATCH:
                self._supply(core.need_run)
                continue
            if result == _core.STRETCH:
                if core.pending_rows:  # the rows before the stretch go first
                    yield self._flush_selection() if selections else self._flush()
                rows = self._stretch_rows()
                self._rows_out += rows.num_rows
                if rows.num_rows:
                    yield RowSelection.of_batch(rows) if selections else rows
                continue
            if result == _core.OUTPUT_FULL or (result == _core.DONE and core.pending_rows):
                yield self._flush_selection() if selections else self._flush()
                if result == _core.OUTPUT_FULL:
                    continue
            if result == _core.DONE:
                return
            self._raise_step_error(result)

    def _merge_in_threads(self) -> Iterator[pa.RecordBatch]:
        """Cut every run at the same keys and merge the key ranges in threads; their
        batches come out in key order."""
        cuts = self._cut_runs()
        engine, aggregations, keep_deletes, check_order = self._settings
        for lo, hi in pairwise(cuts):
            pieces = [run.slice(int(a), int(b - a)) for run, a, b in zip(self._runs, lo, hi)]
            self._parts.append(MergeReader(pieces, self._key, self._sequence, self._kind, engine, aggregations,
                                           keep_deletes, self._algorithm, self._batch_size, check_order,
                                           first_positions=[int(a) for a in lo]))
        with ThreadPoolExecutor(max_workers=self._threads, thread_name_prefix="mergetree-merge") as pool:
            futures = [pool.submit(list, part) for part in self._parts]
            try:
                for future in futures:
                    for batch in future.result():
                        self._rows_out += batch.num_rows
                        yield batch
            finally:
                for future in futures:
                    future.cancel()

    def _cut_runs(self) -> list[np.ndarray]:
        """Positions cutting every run into `threads` key ranges: [0s, cut 1, ..., lengths].

        The cut keys are quantiles of a sample of all runs' keys (each run sampled in
        proportion to its length), found in every run with the core's comparators; a
        run's cut positions never decrease, so a key lands in the same range in every
        run.  With order checks on, the rows on both sides of every cut are checked
        too (each range checks its own pieces)."""
        tables = self._runs = [r if isinstance(r, pa.Table) else self.schema.empty_table() for r in self._runs]
        lengths = np.array([t.num_rows for t in tables], dtype=np.int64)
        total = int(lengths.sum())
        n = min(self._threads, max(1, total // MIN_ROWS_PER_THREAD))
        zeros = np.zeros(len(tables), dtype=np.int64)
        if n < 2:
            return [zeros, lengths]
        classes = [p.key_class for p in self._key_plans]
        widths = [p.width for p in self._key_plans]
        keys = [t.select([p.name for p in self._key_plans]) for t in tables]  # zero-copy
        per_row = SAMPLES_PER_THREAD * n / total
        samples = [sample for k in keys if k.num_rows
                   for sample in self._sample(k, max(1, round(k.num_rows * per_row)))]
        pool = pa.Table.from_batches(samples)
        order = sort_indices(pool, [(c, "ascending") for c in pool.column_names], "at_start")
        picks = order.take(pa.array([len(order) * j // n for j in range(1, n)], type=pa.int64()))
        probes = self._key_batch(pool.take(picks))
        found = []
        for k in keys:
            # a run is sorted, so its lower bound is the sum of its chunks' lower bounds
            bounds = np.zeros(n - 1, dtype=np.int64)
            for chunk in k.to_batches():
                if chunk.num_rows:
                    bounds += _core.lower_bounds(self._key_batch(chunk), probes, classes, widths)
            found.append(np.maximum.accumulate(bounds))
        cuts = [zeros] + [np.array([f[j] for f in found], dtype=np.int64) for j in range(n - 1)] + [lengths]
        if self._check_order:  # the rows on both sides of every cut
            for run, (k, f) in enumerate(zip(keys, found)):
                for seam in np.unique(f[(f > 0) & (f < k.num_rows)]):
                    pair = self._key_batch(k.slice(int(seam) - 1, 2))
                    if _core.first_unordered(pair, np.array([1], dtype=np.int64), classes, widths) >= 0:
                        raise UnsortedRunError(
                            f"run {run} is not sorted by {self._key} at row {seam}: its key is not greater than "
                            f"the key of row {seam - 1} (runs must be strictly ascending, without repeated keys)",
                            run=run, row=int(seam), column=", ".join(self._key))
        return cuts

    def _sample(self, keys: pa.Table, count: int) -> list[pa.RecordBatch]:
        """`count` evenly spaced rows of a run's key columns, taken chunk by chunk (a take
        across chunks would concatenate them first)."""
        positions = np.linspace(0, keys.num_rows - 1, count, dtype=np.int64)
        out, start = [], 0
        for chunk in keys.to_batches():
            end = start + chunk.num_rows
            local = positions[(positions >= start) & (positions < end)] - start
            if len(local):
                out.append(self._key_batch(chunk.take(pa.array(local, type=pa.int64()))))
            start = end
        return out

    def _key_batch(self, table: pa.Table | pa.RecordBatch) -> pa.RecordBatch:
        """Key columns, normalized as the core sees them, in one batch."""
        columns = []
        for plan in self._key_plans:
            col = table.column(plan.name)
            if isinstance(col, pa.ChunkedArray):
                col = col.combine_chunks()
            columns.append(plan.normalize(col) if plan.normalize else col)
        return pa.RecordBatch.from_arrays(columns, names=[p.name for p in self._key_plans])

    def _raise_step_error(self, result: int) -> None:
        core = self._running()
        if result == _core.UNSORTED:
            self._raise_unsorted()
        if result == _core.RETRACTION:
            run = core.error_run
            row = core.error_pos + self._first_positions[run]
            raise RetractionError(
                f"run {run} row {row}: engine 'first-row' cannot accept a retraction row (-U/-D) "
                f"in column {self._kind!r}; filter retractions out first or use 'deduplicate'",
                run=run, row=row, column=str(self._kind))
        raise MergeStateError(f"the merge tree reached an impossible state (step result {result}); "
                              f"this is a bug in mergetree, please report it")

    def _stretch_rows(self) -> pa.RecordBatch:
        """The stretch the core handed out, as the engine leaves it: a slice of the run's
        current batch, not copied."""
        run, pos, length = self._running().stretch
        (start, batch), = self._slices(run, pos, pos + length)  # a stretch lies in one batch
        if not batch.schema.equals(self.schema, check_metadata=True):  # a run's own metadata stays out
            batch = pa.RecordBatch.from_arrays(batch.columns, schema=self.schema)
        for retained in self._retained:  # nothing pending: only current batches are referenced
            del retained[:-1]
        retract = self._engine.retractions(batch)
        if retract is not None and self._engine.engine == "first-row":
            member = int(np.flatnonzero(retract)[0])
            row = start + member + self._first_positions[run]
            raise RetractionError(
                f"run {run} row {row}: engine 'first-row' cannot accept a retraction row (-U/-D) "
                f"in column {self._kind!r}; filter retractions out first or use 'deduplicate'",
                run=run, row=row, column=str(self._kind))
        return self._engine.alone(batch, retract)

    def _take_output(self) -> tuple[RowSelection, np.ndarray | None, np.ndarray, np.ndarray]:
        out_run, out_pos, group_ends, lo, hi = self._running().take_output()
        run_slices = [self._slices(run, int(lo[run]), int(hi[run])) if hi[run] > lo[run] else []
                      for run in range(len(lo))]
        selection = select_rows(run_slices, out_run, out_pos)
        for retained in self._retained:  # only each run's current batch can be referenced again
            del retained[:-1]
        return selection, group_ends, out_run, out_pos

    def _flush_selection(self) -> RowSelection:
        selection, _, _, _ = self._take_output()
        self._rows_out += selection.num_rows
        return selection

    def _flush(self) -> pa.RecordBatch:
        selection, group_ends, out_run, out_pos = self._take_output()
        rows = selection.gather(self.schema)

        def locate(member: int) -> tuple[int, int]:
            run = int(out_run[member])
            return run, int(out_pos[member]) + self._first_positions[run]

        batch = self._engine.assemble(rows, group_ends, locate)
        self._rows_out += batch.num_rows
        return batch

    def _slices(self, run: int, lo: int, hi: int) -> list[tuple[int, pa.RecordBatch]]:
        """Run's retained batches cut to positions [lo, hi), with their first positions."""
        out = []
        for start, batch in self._retained[run]:
            a, b = max(lo, start), min(hi, start + batch.num_rows)
            if a < b:
                out.append((a, batch.slice(a - start, b - a)))
        return out

    def read_all(self) -> pa.Table:
        """Every remaining output row as one table (chunks of at most `batch_size` rows, not
        re-cut to exactly that: a stretch of one run stays a slice of its input, not copied)."""
        size = self._batch_size
        return pa.Table.from_batches([batch.slice(start, size) for batch in self._merged()  # slices: no copy
                                      for start in range(0, batch.num_rows, size)], schema=self.schema)

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        reader = pa.RecordBatchReader.from_batches(self.schema, iter(self))
        return reader.__arrow_c_stream__(requested_schema)

    @property
    def stats(self) -> MergeStats:
        if self._parts:
            parts = [p.stats for p in self._parts]
            return MergeStats(sum(p.rows_in for p in parts), self._rows_out,
                              sum(p.key_comparisons for p in parts), sum(p.sequence_comparisons for p in parts),
                              sum(p.rows_stretched for p in parts))
        if self._core is None:
            return MergeStats(0, self._rows_out, 0, 0)
        rows_in, key_cmp, seq_cmp = self._core.counters
        return MergeStats(rows_in, self._rows_out, key_cmp, seq_cmp, self._core.rows_stretched)

    @property
    def path(self) -> str:
        """Which merge runs: ``"fixed-width"`` (the loser tree over one fixed-width key
        without nulls, keys inline in the nodes), ``"six-state"`` (the six-state loser
        tree, every other key) or ``"heap"``; ``"none"`` when there is nothing to merge.
        Decided when the first batches arrive."""
        if self._core is None:
            return "none"
        if self._parts:
            return self._parts[0].path
        if self._core.fixed_path:
            return "fixed-width"
        return "heap" if self._algorithm == "heap" else "six-state"

    @property
    def batches_pulled(self) -> list[int]:
        """How many batches each run has yielded so far (streaming diagnostics)."""
        return [s.batches_pulled for s in self._sources]
