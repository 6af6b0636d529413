"""A small progress bar with no dependencies.

On a terminal it redraws one line in place::

    bench  37% |#####        | 3/8 [1.2s<2.0s] polars

Anywhere else (a pipe, a CI log) it writes one line when it starts and one
when it finishes, so logs stay readable.
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
    """Counts ``total`` steps of ``unit``.  ``enabled=None`` means on unless
    the environment variable ``MERGETREE_PROGRESS`` is ``0``."""

    width = 24

    def __init__(self, total, desc="", unit="it", stream=sys.stderr, enabled=None):
        if enabled is None:
            enabled = os.environ.get("MERGETREE_PROGRESS", "1") != "0"
        self.total = max(int(total), 0)
        self.desc = desc
        self.unit = unit
        self.stream = stream
        self.enabled = bool(enabled) and stream is not None
        isatty = getattr(stream, "isatty", None)
        self.tty = bool(self.enabled and isatty is not None and isatty())
        self.count = 0
        self.note = ""
        self.start = time.perf_counter()

    def __enter__(self) -> "ProgressBar":
        self.start = time.perf_counter()
        if self.enabled and not self.tty:
            self._write(f"{self.desc}: {self.total} {self.unit} to go\n")
        self._draw()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close(failed=exc_type is not None)

    def update(self, n: int = 1, note: str | None = None) -> None:
        """Advance by ``n`` steps; ``note`` replaces the text after the bar."""
        self.count = min(self.count + n, self.total) if self.total else self.count + n
        if note is not None:
            self.note = note
        self._draw()

    def set_note(self, note: str) -> None:
        """Show ``note`` (for example the step now running) after the bar."""
        self.note = note
        self._draw()

    def render(self) -> str:
        elapsed = time.perf_counter() - self.start
        fraction = self.count / self.total if self.total else 1.0
        filled = int(round(fraction * self.width))
        bar = "#" * filled + " " * (self.width - filled)
        left = elapsed / self.count * (self.total - self.count) if self.count else None
        eta = _seconds(left) if left is not None else "?"
        line = (f"{self.desc} {fraction:4.0%} |{bar}| {self.count}/{self.total}"
                f" [{_seconds(elapsed)}<{eta}]")
        return f"{line} {self.note}".rstrip()

    def close(self, failed: bool = False) -> None:
        if not self.enabled:
            return
        if self.tty:
            self.note = "failed" if failed else ""
            self._write("\r" + self.render() + "\x1b[K\n")
        else:
            status = "stopped" if failed else "done"
            elapsed = _seconds(time.perf_counter() - self.start)
            self._write(f"{self.desc}: {status}, {self.count}/{self.total} {self.unit} in {elapsed}\n")
        self.enabled = False

    def _draw(self) -> None:
        if self.enabled and self.tty:
            self._write("\r" + self.render() + "\x1b[K")

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()
