"""How the benchmarks time a call, and the progress bar that counts their timed runs.

Every timed call is measured the same way: wall-clock time (``time.perf_counter``) and the
process's CPU time over all threads (``time.process_time``, which tells a one-thread reader
from a many-thread one).  By default Python's cyclic garbage collector is paused during the
call, as ``timeit`` does, so a collection that the previous run's garbage triggers is not
charged to this one; the young generations are collected first (the previous run's garbage),
not the whole heap: in a long-lived process (a test session, a notebook) a full collection
walks every object it ever kept, and cost a test of the benchmarks 5 s of its 7.
"""
from __future__ import annotations

import gc
import os
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple, TextIO

__all__ = ["Timed", "best_of", "progress_bar", "timed"]


class Timed(NamedTuple):
    seconds: float      # wall-clock time of the call
    cpu_seconds: float  # process CPU time of the call, every thread counted
    output: Any         # what the call returned


def timed(function: Callable, *args: Any, pause_gc: bool = True,
          ignore_warnings: tuple[type[Warning], ...] = ()) -> Timed:
    """One call of ``function(*args)``, timed.  ``pause_gc=False`` leaves the collector
    alone (for work that happens outside Python, where pausing it changes nothing);
    warnings of the ``ignore_warnings`` classes are not shown (a peer's deprecation noise)."""
    if pause_gc:
        gc.collect(1)
        gc.disable()
    try:
        with warnings.catch_warnings():
            for category in ignore_warnings:
                warnings.simplefilter("ignore", category)
            cpu, start = time.process_time(), time.perf_counter()
            output = function(*args)
            return Timed(time.perf_counter() - start, time.process_time() - cpu, output)
    finally:
        if pause_gc:
            gc.enable()


def best_of(function: Callable, *args: Any, repeat: int, pause_gc: bool = True,
            ignore_warnings: tuple[type[Warning], ...] = (), after_each: Callable[[], None] | None = None) -> Timed:
    """The fastest of ``repeat`` (at least one) timed calls: its wall and CPU seconds, and
    the output of the last call.  Each output is let go before the next call, so a large
    result does not hold memory while the next run is timed.  ``after_each`` is called
    after every call (to advance a progress bar)."""
    best_seconds, best_cpu, output = float("inf"), float("nan"), None
    for _ in range(max(repeat, 1)):
        output = None
        seconds, cpu_seconds, output = timed(function, *args, pause_gc=pause_gc, ignore_warnings=ignore_warnings)
        if seconds < best_seconds:
            best_seconds, best_cpu = seconds, cpu_seconds
        if after_each is not None:
            after_each()
    return Timed(best_seconds, best_cpu, output)


@contextmanager
def progress_bar(description: str, unit: str, total: int, enabled: bool | None = None,
                 stream: TextIO | None = sys.stderr) -> Iterator[Callable[[int], None]]:
    """A bar of ``total`` timed runs or steps for the duration of the block; yields
    ``advance(n)``, which moves it ``n`` forward.  ``enabled=None`` means on unless the
    environment variable ``MERGETREE_PROGRESS`` is ``0``; ``stream=None`` means off."""
    from rich.console import Console

    from mergetree.cli import render

    if enabled is None:
        enabled = os.environ.get("MERGETREE_PROGRESS", "1") != "0"
    console = None if stream is None or stream is sys.stderr else Console(file=stream, highlight=False)
    with render.progress(description, unit, console=console, enabled=enabled and stream is not None) as update:
        done = 0
        update(done, total)

        def advance(n: int = 1) -> None:
            nonlocal done
            done = min(done + n, total)
            update(done, total)
        yield advance

