"""A small progress bar with no dependencies.

On a terminal it redraws one line in place::

    bench  37% |#########               | 3/8 [1.2s<2.0s] polars

Anywhere else (a pipe, a CI log) it writes one line at the start and one at
the end, so logs stay clean.  ``enabled=None`` means on unless the environment
variable ``MERGETREE_PROGRESS`` is ``0``.
"""
from __future__ import annotations

import os
import sys
import time

__all__ = ["ProgressBar"]


def _seconds(value: float) -> str:
    if value < 60:
        return f"{value:.1f}s"
    minutes, secs = divmod(int(value), 60)
    return f"{minutes}m{secs:02d}s"


class ProgressBar:
    width = 24

    def __init__(self, total, desc="", unit="it", stream=sys.stderr, enabled=None):
        if enabled is None:
            enabled = os.environ.get("MERGETREE_PROGRESS", "1") != "0"
        self.total, self.desc, self.unit, self.stream = max(int(total), 0), desc, unit, stream
        self.enabled = bool(enabled) and stream is not None
        self.tty = self.enabled and bool(getattr(stream, "isatty", lambda: False)())
        self.count, self.note, self.start = 0, "", time.perf_counter()

    def __enter__(self) -> "ProgressBar":
        self.start = time.perf_counter()
        if self.enabled and not self.tty:
            self._write(f"{self.desc}: {self.total} {self.unit} to go\n")
        self._draw()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close(failed=exc_type is not None)

    def update(self, n: int = 1, note: str | None = None) -> None:
        """Advance by ``n``; ``note`` (say, the step now running) replaces the text after the bar."""
        self.count = min(self.count + n, self.total)
        self.note = self.note if note is None else note
        self._draw()

    def set_note(self, note: str) -> None:
        self.update(0, note)

    def render(self) -> str:
        elapsed = time.perf_counter() - self.start
        fraction = self.count / self.total if self.total else 1.0
        bar = ("#" * round(fraction * self.width)).ljust(self.width)
        eta = _seconds(elapsed / self.count * (self.total - self.count)) if self.count else "?"
        line = f"{self.desc} {fraction:4.0%} |{bar}| {self.count}/{self.total} [{_seconds(elapsed)}<{eta}]"
        return f"{line} {self.note}".rstrip()

    def close(self, failed: bool = False) -> None:
        if not self.enabled:
            return
        if self.tty:
            self.note = "failed" if failed else ""
            self._write("\r" + self.render() + "\x1b[K\n")
        else:
            status, elapsed = "stopped" if failed else "done", _seconds(time.perf_counter() - self.start)
            self._write(f"{self.desc}: {status}, {self.count}/{self.total} {self.unit} in {elapsed}\n")
        self.enabled = False

    def _draw(self) -> None:
        if self.enabled and self.tty:
            self._write("\r" + self.render() + "\x1b[K")

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()
