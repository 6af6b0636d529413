"""The organization report (`mergetree report PATH --html out.html`, `--png DIR`): one
self-contained HTML page (no server, no network, no script) with the table's and each
partition's statistics (live and stored rows, size, files, last write, optimized share), the
current configuration next to the advisor's recommendation (kept / added / removed, as seed
003's page), the bytes scanned per query from the query log before and after every layout
change (the optimizer's passes and `Table.optimize`, both in the optimizer history), how often
each column is filtered and how many files those queries skipped, and charts of all of it.

The charts are inline SVG drawn here (a few dozen lines beat a plotting dependency for a page):
each has a y axis with ticks and its unit, an x axis with ticks, text of 12 px or more when the
page is 1280 px wide, and labels placed so that none overlaps another (a label that would not
fit is shortened, with the full text in its tooltip). `--png` writes them as PNG files through
matplotlib (the `report` extra)."""
from __future__ import annotations

import datetime as dt
import html
import math
import os
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidArgumentError
from ..iceberg import is_iceberg_location
from ..iceberg import open as open_iceberg
from ..iceberg.rewrite import written_tier
from ..table import Table
from ..table.directory import TableDirectory
from ..table.display import count_text, moment_text, size_text
from ..table.levers.optimize import layout_signature, optimized_tier
from ..table.read import plan_read, read_bucket
from ..table.snapshots import Snapshot
from ..table.workload.advise import Advice, LoggedQuery, read_log
from ..table.workload.history import history

__all__ = ["ColumnUse", "PartitionStats", "Period", "Report", "bar_chart", "build_report", "column_usage",
           "live_rows", "nice_ticks", "render_html", "time_buckets", "time_chart", "time_step",
           "write_pngs"]


@dataclass
class PartitionStats:
    partition: str
    files: int = 0
    rows: int = 0                # stored rows (old versions and retractions included)
    bytes: int = 0
    last_write: dt.datetime | None = None
    optimized_bytes: int = 0     # laid out for the current layout (major)
    merged_bytes: int = 0        # merged by a minor pass

    @property
    def optimized_share(self) -> float:
        return self.optimized_bytes / self.bytes if self.bytes else 0.0


@dataclass(frozen=True)
class ColumnUse:
    """How often one column is filtered in the query log."""

    column: str
    queries: int                        # queries with a predicate on the column (each query once)
    kinds: tuple[tuple[str, int], ...]  # (predicate kind, queries), most used first
    measured: int                       # of those, the queries that ran here (imported ones never did)
    skipped: float | None               # mean share of files the measured ones skipped (None: none measured)

    def kinds_text(self) -> str:
        return ", ".join(f"{kind} {n:,}" for kind, n in self.kinds)

    def skipped_text(self) -> str:
        if self.skipped is None:
            return "- (none ran here)"
        return f"{self.skipped:.0%}" + (f" of {self.measured:,} run here" if self.measured < self.queries else "")


def column_usage(queries: Iterable[LoggedQuery]) -> list[ColumnUse]:
    """The one count of filtered columns (the report's and `mergetree queries show`'s): each
    query counts once per column it has a predicate on, whatever its source (imported queries
    count); the mean share of files skipped is over the queries that ran here and measured
    their files.  Most filtered first, then by name."""
    counts: Counter[str] = Counter()
    kinds: dict[str, Counter[str]] = defaultdict(Counter)
    skipped: dict[str, list[float]] = defaultdict(list)
    for q in queries:
        by_column: dict[str, set[str]] = defaultdict(set)
        for column, kind in q.predicates:
            if column:
                by_column[column].add(kind)
        for column, found in by_column.items():
            counts[column] += 1
            kinds[column].update(found)
            if q.files_total:
                skipped[column].append(1.0 - (q.files_scanned or 0) / q.files_total)
    return [ColumnUse(column, n, tuple(sorted(kinds[column].items(), key=lambda kv: (-kv[1], kv[0]))),
                      len(skipped[column]),
                      sum(skipped[column]) / len(skipped[column]) if skipped[column] else None)
            for column, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]


@dataclass(frozen=True)
class Period:
    """The measured queries of one time bucket: how many, mean bytes scanned, and the share of
    the bytes their snapshots held."""

    start: dt.datetime
    seconds: int
    queries: int
    bytes_per_query: float
    share: float


@dataclass
class Report:
    path: str
    generated: dt.datetime
    rows: int                 # live rows: what a read returns
    files: int
    bytes: int
    snapshots: int
    layout: str
    options: dict[str, str]
    partitions: list[PartitionStats]
    advice: Advice
    scanned: list[Period] = field(default_factory=list)                 # measured queries per time bucket
    passes: list[dict[str, Any]] = field(default_factory=list)          # the optimizer history, oldest first
    columns: list[ColumnUse] = field(default_factory=list)
    queries: int = 0          # every logged query in the period (imported ones too)
    measured: int = 0         # of those, the ones that ran here (bytes and files measured)
    stored_rows: int = 0      # rows in the data files: old versions and retractions included
    primary_key: bool = False

    def __repr__(self) -> str:
        return (f"Report({self.path!r}, {self.rows:,} rows in {self.files:,} files, {size_text(self.bytes)}, "
                f"{count_text(self.queries, 'query')}, generated {moment_text(self.generated)})")


def _partition_name(partition_by: Sequence[str], partition: tuple) -> str:
    return "/".join(f"{c}={v}" for c, v in zip(partition_by, partition)) or "(table)"


# steps of time buckets and of time-axis ticks, in seconds
_TIME_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10_800, 21_600, 43_200, 86_400,
               172_800, 604_800, 1_209_600, 2_592_000)


def time_step(span: float, most: int) -> int:
    """The smallest step of the ladder (1 s ... 30 d) that cuts `span` seconds into at most
    `most` steps."""
    for step in _TIME_STEPS:
        if span / step <= most:
            return step
    return _TIME_STEPS[-1] * math.ceil(span / (_TIME_STEPS[-1] * most))


def time_buckets(queries: Sequence[LoggedQuery], most: int = 48) -> list[Period]:
    """Mean bytes scanned per measured query per time bucket: the finest step that keeps the
    chart at `most` buckets or fewer, so queries of one minute still show as several."""
    dated = [q for q in queries if q.ts is not None and q.bytes_scanned is not None]
    if not dated:
        return []
    first = min(q.ts.timestamp() for q in dated if q.ts is not None)
    last = max(q.ts.timestamp() for q in dated if q.ts is not None)
    step = time_step(last - first, most)
    buckets: dict[int, list[LoggedQuery]] = defaultdict(list)
    for q in dated:
        assert q.ts is not None
        buckets[int(q.ts.timestamp()) // step * step].append(q)
    out = []
    for start in sorted(buckets):
        group = buckets[start]
        scanned = sum(q.bytes_scanned or 0 for q in group)
        total = sum(q.bytes_total or 0 for q in group)
        out.append(Period(dt.datetime.fromtimestamp(start, dt.timezone.utc), step, len(group), scanned / len(group),
                          scanned / total if total else 1.0))
    return out


def live_rows(directory: TableDirectory, snapshot: Snapshot | None) -> int:
    """The rows a read of `snapshot` returns, counted without logging a query: a section of
    one sorted run without retractions holds its rows less those its deletion vectors remove;
    any other section is read, decoding only the first key column (and the kind column where a
    file may hold retractions: a file's recorded count is not trusted, `holds_retractions`).  An
    append table's live rows are its stored rows less those deleted."""
    if snapshot is None:
        return 0
    ts = directory.schema
    if not ts.has_primary_key:
        return sum(e.file.row_count - e.file.deleted_rows for e in directory.live_files(snapshot).values())
    rows = 0
    plan = plan_read(directory, None, snapshot.id)
    for bucket in plan.buckets:
        for section in bucket.sections:
            if len(section) == 1 and not any(m.holds_retractions for m in section[0]):
                rows += sum(m.row_count - m.deleted_rows for m in section[0])
            else:
                rows += sum(batch.num_rows for batch in read_bucket(directory, bucket, [ts.primary_key[0]], None,
                                                                     None, sections=[section]))
    return rows


def _iceberg_report(path: str, since: dt.timedelta | dt.datetime | None) -> Report:
    """An Iceberg table's page: its partitions from the manifests (no write times: an Iceberg data
    file records none), the files mergetree's rewrites laid out, its log and passes."""
    table = open_iceberg(path)
    options = table.options
    files = table.data_files()
    spec = table.iceberg.spec()
    partitions: dict[str, PartitionStats] = {}
    for meta in files:
        values = tuple(meta.origin.task.file.partition)
        name = "/".join(f"{f.name}={v}" for f, v in zip(spec.fields, values)) or "(table)"
        stats = partitions.setdefault(name, PartitionStats(name))
        stats.files += 1
        stats.rows += meta.row_count
        stats.bytes += meta.file_size
        tier = written_tier(meta.file_name, options)
        if tier == "major":
            stats.optimized_bytes += meta.file_size
        elif tier == "minor":
            stats.merged_bytes += meta.file_size
    stored = sum(m.row_count for m in files)
    deletes = any(m.origin.delete_files for m in files)
    live = int(table.iceberg.scan().count()) if deletes else stored
    queries = read_log(table.path, since)
    return Report(
        table.path, dt.datetime.now(dt.timezone.utc), live, len(files), sum(m.file_size for m in files),
        len(table.iceberg.snapshots()), layout_signature(options), table.properties,
        sorted(partitions.values(), key=lambda p: p.partition), table.advise(since=since), time_buckets(queries),
        history(table.path).to_pylist(), column_usage(queries), len(queries),
        sum(q.bytes_scanned is not None for q in queries), stored, False)


def build_report(path: str, since: dt.timedelta | dt.datetime | None = None) -> Report:
    """Gather what the page shows (the advice is computed now, nothing is applied); an Iceberg
    table (``iceberg://...``) too."""
    if is_iceberg_location(path):
        return _iceberg_report(path, since)
    table = Table.open(path).at()  # the engine's view (a Paimon table's too)
    directory = table.directory
    options = directory.options
    snapshot = table.latest_snapshot()
    live = directory.live_files(snapshot) if snapshot else {}
    # when each data file was written: the store's own timestamps, one listing (on an object
    # store a request per file would be a round trip each)
    written_at = {info.path: info.last_modified for info in directory.storage.list("")} if live else {}
    partitions: dict[str, PartitionStats] = {}
    for entry in live.values():
        name = _partition_name(directory.schema.partition_by, entry.partition)
        stats = partitions.setdefault(name, PartitionStats(name))
        meta = entry.file
        stats.files += 1
        stats.rows += meta.row_count
        stats.bytes += meta.file_size
        written = written_at.get(meta.file_name)
        if written is not None and (stats.last_write is None or written > stats.last_write):
            stats.last_write = written
        tier = optimized_tier(meta, options)
        if tier == "major":
            stats.optimized_bytes += meta.file_size
        elif tier == "minor":
            stats.merged_bytes += meta.file_size
    queries = read_log(table.path, since)
    passes = history(table.path).to_pylist()
    return Report(
        table.path, dt.datetime.now(dt.timezone.utc), live_rows(directory, snapshot), len(live),
        sum(e.file.file_size for e in live.values()), len(directory.store.snapshot_ids()),
        layout_signature(options), dict(directory.schema.options),
        sorted(partitions.values(), key=lambda p: p.partition), table.advise(since=since), time_buckets(queries),
        passes, column_usage(queries), len(queries), sum(q.bytes_scanned is not None for q in queries),
        sum(e.file.row_count for e in live.values()), directory.schema.has_primary_key)


# ---------------------------------------------------------------------------
# Charts (inline SVG)
# ---------------------------------------------------------------------------

# drawn 1:1 at 1000 px (the page's charts are at most that wide): text sizes are pixel sizes
_W, _H = 1000, 330
_LEFT, _RIGHT, _TOP, _BOTTOM = 84, 28, 66, 64
_TEXT, _TITLE = 12, 15          # px
_COLORS = ["#3b6ea5", "#e07b39", "#4a9c5d", "#c0504d", "#8064a2", "#4bacc6"]


def _esc(x: object) -> str:
    return html.escape(str(x), quote=True)


def _width(text: str, size: float = _TEXT) -> float:
    """A generous estimate of a label's width in a sans-serif face (no font metrics here)."""
    return len(text) * size * 0.62 + 2


def _fit(text: str, room: float, size: float = _TEXT, middle: bool = False) -> str:
    """`text` shortened with an ellipsis to fit `room` pixels (empty when nothing fits); with
    `middle`, the ellipsis goes in the middle (names that differ at their end stay apart)."""
    if _width(text, size) <= room:
        return text
    keep = int((room - 2) / (size * 0.62)) - 1
    if keep < 2:
        return ""
    if middle:
        head = (keep + 1) // 2
        return text[:head] + "\u2026" + text[len(text) - (keep - head):]
    return text[:keep] + "\u2026"


def nice_ticks(top: float, count: int = 5) -> list[float]:
    """Ticks 0, s, 2s, ... up to the first multiple of s at or above `top`, with s 1, 2, 2.5 or
    5 times a power of ten chosen to give at most `count` steps (at least two ticks)."""
    if not math.isfinite(top) or top <= 0:
        top = 1.0
    raw = top / max(count, 1)
    magnitude = 10.0 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1.0, 2.0, 2.5, 5.0, 10.0) if m * magnitude >= raw * (1 - 1e-12))
    steps = max(1, math.ceil(top / step - 1e-9))
    return [i * step for i in range(steps + 1)]


def _tick_text(value: float, ticks: Sequence[float]) -> str:
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
    decimals = max(0, -math.floor(math.log10(step) + 1e-9)) + (1 if f"{step:.10g}".rstrip("0").endswith("25") else 0)
    return f"{value:,.{decimals}f}"


def _byte_unit(top: float) -> tuple[str, float]:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if top >= size:
            return unit, float(size)
    return "bytes", 1.0


class _Plot:
    """The frame of one chart: title, legend, y axis (ticks, grid, unit) and the plot area."""

    def __init__(self, title: str, y_title: str, top: float, legend: Sequence[tuple[str, str]],
                 label_rows: int = 1) -> None:
        self.ticks = nice_ticks(top)
        self.top = self.ticks[-1]
        self.rows = label_rows                   # rows of x labels (two: staggered, for long ones)
        self.height = _H + 16 * (label_rows - 1)
        self.x0, self.x1 = _LEFT, _W - _RIGHT
        self.y0, self.y1 = _TOP, _H - _BOTTOM    # plot area top and bottom (the x axis)
        self.parts = [f'<svg class="chart" role="img" aria-label="{_esc(title)}" width="{_W}" '
                      f'height="{self.height}" viewBox="0 0 {_W} {self.height}" xmlns="http://www.w3.org/2000/svg">'
                      f'<title>{_esc(title)}</title>',
                      f'<text x="{_LEFT}" y="24" class="t">{_esc(_fit(title, _W - _LEFT - _RIGHT, _TITLE))}</text>']
        x = float(_LEFT)
        for name, style in legend:
            swatch = (f'<line x1="{x:.1f}" y1="44" x2="{x + 14:.1f}" y2="44" class="marker"/>' if style == "marker"
                      else f'<rect x="{x:.1f}" y="38" width="12" height="12" fill="{style}"/>')
            self.parts.append(f'<g class="legend">{swatch}<text x="{x + 18:.1f}" y="48" class="k">{_esc(name)}'
                              f'</text></g>')
            x += 18 + _width(name) + 20
        self.parts.append('<g class="axis y">')
        for tick in self.ticks:
            y = self.y(tick)
            self.parts.append(f'<line x1="{self.x0}" y1="{y:.1f}" x2="{self.x1}" y2="{y:.1f}" class="grid"/>'
                              f'<line x1="{self.x0 - 5}" y1="{y:.1f}" x2="{self.x0}" y2="{y:.1f}" class="tick"/>'
                              f'<text x="{self.x0 - 8}" y="{y + 4:.1f}" class="y">'
                              f'{_tick_text(tick, self.ticks)}</text>')
        middle = (self.y0 + self.y1) / 2
        self.parts.append(f'<line x1="{self.x0}" y1="{self.y0}" x2="{self.x0}" y2="{self.y1}" class="line-axis"/>'
                          f'<text x="18" y="{middle:.1f}" transform="rotate(-90 18 {middle:.1f})" class="a">'
                          f'{_esc(_fit(y_title, self.y1 - self.y0))}</text></g>')

    def y(self, value: float) -> float:
        return self.y1 - (self.y1 - self.y0) * max(0.0, value) / self.top

    def x_axis(self, ticks: Sequence[tuple[float, str, str]], title: str) -> None:
        """Ticks (x, label, tooltip) under the plot area, the labels in `rows` staggered rows, a
        label left out where it would touch the last one drawn in its row; the axis title below."""
        self.parts.append(f'<g class="axis x"><line x1="{self.x0}" y1="{self.y1}" x2="{self.x1}" y2="{self.y1}" '
                          'class="line-axis"/>')
        right = [-math.inf] * self.rows
        for i, (x, label, tip) in enumerate(ticks):
            row = i % self.rows
            self.parts.append(f'<line x1="{x:.1f}" y1="{self.y1}" x2="{x:.1f}" y2="{self.y1 + 5 + 16 * row}" '
                              'class="tick"/>')
            half = _width(label) / 2
            middle = min(max(x, half + 2), _W - 2 - half)  # at the edges: inside the chart, off-centre
            if label and middle - half > right[row] + 6:
                hint = f"<title>{_esc(tip)}</title>" if tip != label else ""
                self.parts.append(f'<text x="{middle:.1f}" y="{self.y1 + 20 + 16 * row}" class="l">{_esc(label)}'
                                  f'{hint}</text>')
                right[row] = middle + half
        self.parts.append(f'<text x="{(self.x0 + self.x1) / 2:.1f}" y="{self.height - 14}" class="a">'
                          f'{_esc(_fit(title, self.x1 - self.x0))}</text></g>')

    def note(self, text: str) -> None:
        self.parts.append(f'<text x="{(self.x0 + self.x1) / 2:.1f}" y="{(self.y0 + self.y1) / 2:.1f}" '
                          f'class="note">{_esc(text)}</text>')

    def svg(self) -> str:
        return "".join(self.parts) + "</svg>"


def _common_start(texts: Sequence[str]) -> str:
    first, last = min(texts), max(texts)  # what the smallest and largest share, all share
    n = next((i for i, (a, b) in enumerate(zip(first, last)) if a != b), min(len(first), len(last)))
    return first[:n]


def _distinct_labels(labels: Sequence[str], room: float) -> tuple[list[str], str]:
    """Labels that do not all fit `room` pixels lose what they all share: a common beginning
    and end become an ellipsis (`europe-west-3-zone` -> `...3...`), and the shared pattern
    (`europe-west-...-zone`) is returned for the axis title; otherwise the labels as they are."""
    if len(labels) < 2 or all(_width(label) <= room for label in labels):
        return list(labels), ""
    head = _common_start(labels)
    tail = _common_start([label[::-1] for label in labels])[::-1]
    shortest = min(len(label) for label in labels)
    head = head[:max(0, shortest - 1)]
    tail = tail[:max(0, shortest - len(head) - 1)] if tail else ""
    if len(head) + len(tail) < 4:
        return list(labels), ""
    cut = [label[len(head):len(label) - len(tail)] for label in labels]
    return [("\u2026" if head else "") + c + ("\u2026" if tail else "") for c in cut], f"{head}\u2026{tail}"


def bar_chart(title: str, labels: Sequence[str], series: dict[str, Sequence[float | None]], unit: str,
              x_title: str, stacked: bool = False, empty: str = "nothing to show yet") -> str:
    """Bars per label, grouped (or stacked) by series; `series` name -> one value per label
    (None: no bar).  The y axis is in `unit`; each bar's value is written above it where the
    bar is wide enough, and is always in its tooltip."""
    values = [[v for v in vs] for vs in series.values()]
    if stacked:
        top = max((sum(v or 0.0 for v in column) for column in zip(*values)), default=0.0)
    else:
        top = max((v for vs in values for v in vs if v is not None), default=0.0)
    n, k = max(len(labels), 1), 1 if stacked else max(len(series), 1)
    slot = (_W - _RIGHT - _LEFT) / n
    shown, pattern = _distinct_labels(labels, slot - 8)
    rows = 2 if any(_width(label) > slot - 8 for label in shown) else 1  # long labels: two staggered rows
    if pattern:
        x_title = f"{x_title}: {pattern}"
    frame = _Plot(title, unit, top * 1.12, [(name, _COLORS[i % len(_COLORS)]) for i, name in enumerate(series)],
                  rows)
    width = min(slot * 0.8 / k, 90.0)
    for i, label in enumerate(labels):
        left = frame.x0 + i * slot + (slot - width * k) / 2
        base = 0.0
        for s, (name, vs) in enumerate(series.items()):
            v = vs[i] if i < len(vs) else None
            if v is None:
                continue
            x = left if stacked else left + s * width
            low, high = (base, base + v) if stacked else (0.0, v)
            y_top, y_bottom = frame.y(high), frame.y(low)
            tip = f"{label} {name}: {v:,.3g} {unit}"
            frame.parts.append(f'<rect x="{x:.1f}" y="{y_top:.1f}" width="{width:.1f}" '
                               f'height="{max(y_bottom - y_top, 0.0):.1f}" fill="{_COLORS[s % len(_COLORS)]}">'
                               f'<title>{_esc(tip)}</title></rect>')
            text = f"{v:,.3g}"
            if not stacked and _width(text) <= width + 4:
                frame.parts.append(f'<text x="{x + width / 2:.1f}" y="{y_top - 5:.1f}" class="v">{text}</text>')
            base = high
        if stacked and _width(f"{base:,.3g}") <= slot - 4:
            frame.parts.append(f'<text x="{left + width / 2:.1f}" y="{frame.y(base) - 5:.1f}" class="v">'
                               f'{base:,.3g}</text>')
    frame.x_axis([(frame.x0 + (i + 0.5) * slot, _fit(short, rows * slot - 8, middle=True), label)
                  for i, (short, label) in enumerate(zip(shown, labels))], x_title)
    if not labels:
        frame.note(empty)
    return frame.svg()


def _time_ticks(t0: float, t1: float, room: float) -> tuple[list[tuple[float, str]], str]:
    """Tick moments with labels that fit `room` pixels, and the axis title (with the date when
    the labels leave it out)."""
    day0 = dt.datetime.fromtimestamp(t0, dt.timezone.utc).date()
    one_day = day0 == dt.datetime.fromtimestamp(t1, dt.timezone.utc).date()
    step = 1
    fmt = "%H:%M:%S"
    for step in _TIME_STEPS:
        fmt = ("%H:%M:%S" if step < 60 else "%H:%M") if step < 86_400 else "%Y-%m-%d"
        if not one_day and step < 86_400:
            fmt = "%m-%d " + fmt
        label = len(dt.datetime.fromtimestamp(t0, dt.timezone.utc).strftime(fmt))
        if (t1 - t0) / step * (label * _TEXT * 0.62 + 24) <= room:
            break
    ticks: list[tuple[float, str]] = []
    moment = float(math.ceil(t0 / step) * step)
    while moment <= t1 + 1e-6:
        ticks.append((moment, dt.datetime.fromtimestamp(moment, dt.timezone.utc).strftime(fmt)))
        moment += step
    title = f"time (UTC) on {day0:%Y-%m-%d}" if one_day and step < 86_400 else "time (UTC)"
    return ticks, title


def _time_domain(periods: Sequence[Period], markers: Sequence[dt.datetime]) -> tuple[float, float]:
    """The span of a time chart in seconds: the buckets and the markers, at least eight
    buckets wide (one bucket stands among empty neighbours), half a bucket of margin."""
    step = periods[0].seconds if periods else 60
    moments = [p.start.timestamp() for p in periods] + [p.start.timestamp() + p.seconds for p in periods]
    moments += [m.timestamp() for m in markers]
    if not moments:
        now = dt.datetime.now(dt.timezone.utc).timestamp()
        moments = [now - 3600, now]
    t0, t1 = min(moments), max(moments)
    if t1 - t0 < 8 * step:
        pad = (8 * step - (t1 - t0)) / 2
        return t0 - pad, t1 + pad
    return t0 - step / 2, t1 + step / 2


def time_chart(title: str, periods: Sequence[Period], markers: Sequence[tuple[dt.datetime, str, str]],
               empty: str = "no measured queries yet") -> str:
    """Mean bytes scanned per query as one bar per time bucket, on a time axis that also spans
    the markers (layout changes: a dashed line each, labelled with its short name where there is
    room; the full line is the tooltip).  One bucket is one bar among empty neighbours."""
    top = max((p.bytes_per_query for p in periods), default=0.0)
    unit, size = _byte_unit(top)
    step = periods[0].seconds if periods else 60
    t0, t1 = _time_domain(periods, [m for m, _, _ in markers])
    frame = _Plot(title, f"{unit} per query", top / size * 1.05,
                  [("mean per measured query", _COLORS[0])] + ([("layout change", "marker")] if markers else []))

    def x(t: float) -> float:
        return frame.x0 + (frame.x1 - frame.x0) * (t - t0) / (t1 - t0)

    bar = max((frame.x1 - frame.x0) * step / (t1 - t0) - 2, 2.0)
    for p in periods:
        left = x(p.start.timestamp()) + 1
        y_top = frame.y(p.bytes_per_query / size)
        tip = (f"{p.start:%Y-%m-%d %H:%M:%S} + {p.seconds}s: {p.queries:,} queries, "
               f"{p.bytes_per_query / size:,.3g} {unit} per query ({p.share:.1%} of the bytes)")
        frame.parts.append(f'<rect x="{left:.1f}" y="{y_top:.1f}" width="{bar:.1f}" height="{frame.y1 - y_top:.1f}" '
                           f'fill="{_COLORS[0]}"><title>{_esc(tip)}</title></rect>')
    rows: list[float] = [-math.inf, -math.inf]   # right edge of the last label in each of two rows
    for when, short, full in markers:
        at = x(when.timestamp())
        frame.parts.append(f'<line x1="{at:.1f}" y1="{frame.y0 - 4}" x2="{at:.1f}" y2="{frame.y1}" class="marker">'
                           f'<title>{_esc(full)}</title></line>')
        wide = _width(short)
        for row in range(2):
            left = at + 4 if at + 4 + wide <= frame.x1 else at - 4 - wide
            if left > rows[row] + 6:
                anchor = "start" if left > at else "end"
                frame.parts.append(f'<text x="{at + 4 if anchor == "start" else at - 4:.1f}" '
                                   f'y="{frame.y0 + 12 + 16 * row}" class="m" text-anchor="{anchor}">'
                                   f'{_esc(short)}<title>{_esc(full)}</title></text>')
                rows[row] = left + wide
                break
    ticks, x_title = _time_ticks(t0, t1, frame.x1 - frame.x0)
    frame.x_axis([(x(t), label, label) for t, label in ticks], x_title)
    if not periods:
        frame.note(empty)
    return frame.svg()


def _partition_labels(names: Sequence[str]) -> tuple[list[str], str]:
    """Partition names as bar labels: when every name is `col=value/...` over the same columns,
    the values alone, and the columns (for the axis title)."""
    split = [[part.partition("=") for part in name.split("/")] for name in names]
    columns = {tuple(c for c, _, _ in parts) for parts in split}
    if len(columns) != 1 or not all(eq for parts in split for _, eq, _ in parts):
        return list(names), ""
    return ["/".join(v for _, _, v in parts) for parts in split], "/".join(next(iter(columns)))


def _pass_line(number: int, done: dict[str, Any]) -> tuple[str, str]:
    kind = "Table.optimize" if done["tier"] == "optimize" else f"{done['tier']} pass"
    return (f"#{number} {done['tier']}",
            f"#{number} {kind} at {done['ts']:%Y-%m-%d %H:%M:%S} UTC: {done['files_in']} -> {done['files_out']} "
            f"files, snapshot {done['snapshot_id']}")


def _charts(report: Report) -> dict[str, str]:
    charts = {}
    markers = [(done["ts"], *_pass_line(i, done)) for i, done in enumerate(report.passes, 1)]
    charts["scanned"] = time_chart("Bytes scanned per query over time, and the layout changes", report.scanned,
                                   markers, empty="no measured queries yet" if not report.queries else
                                   "no query ran here yet (imported queries have no measured bytes)")
    levers = [lv for lv in report.advice.levers if lv.files_before is not None and lv.files_after is not None]
    charts["levers"] = bar_chart("Files read per query, replayed: now vs recommended", [lv.lever for lv in levers],
                                 {"now": [lv.files_before for lv in levers],
                                  "recommended": [lv.files_after for lv in levers]},
                                 "files per query", "lever", empty="no replayed change to show")
    parts = report.partitions[:12]
    unit, size = _byte_unit(max((p.bytes for p in parts), default=0))
    names, columns = _partition_labels([p.partition for p in parts])
    charts["partitions"] = bar_chart("Size per partition: laid out, merged, as written", names,
                                     {"laid out": [p.optimized_bytes / size for p in parts],
                                      "merged": [p.merged_bytes / size for p in parts],
                                      "as written": [(p.bytes - p.optimized_bytes - p.merged_bytes) / size
                                                     for p in parts]},
                                     unit, "partition" + (f" ({columns})" if columns else "")
                                     + (f", the first 12 of {len(report.partitions)}" if len(report.partitions) > 12
                                        else ""), stacked=True, empty="no data files yet")
    cols = report.columns[:10]
    charts["columns"] = bar_chart("Filtered columns: share of queries, and of files their queries skipped",
                                  [c.column for c in cols],
                                  {"% of queries": [100 * c.queries / max(report.queries, 1) for c in cols],
                                   "% of files skipped (queries run here)": [None if c.skipped is None else
                                                                             100 * c.skipped for c in cols]},
                                  "%", "column", empty="no filtered queries logged yet")
    return charts


# ---------------------------------------------------------------------------
# The page
# ---------------------------------------------------------------------------

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:1100px;color:#222;
padding:0 16px}
h1{font-size:22px;margin-bottom:4px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd;padding-bottom:4px}
.sub{color:#555}.kpis{display:flex;gap:12px;flex-wrap:wrap}
.kpi{border:1px solid #ddd;border-radius:6px;padding:8px 14px}
.kpi b{display:block;font-size:18px}.kpi small{display:block;color:#555;font-size:12px}
table{border-collapse:collapse;margin:8px 0}
td,th{border-bottom:1px solid #eee;padding:4px 10px;text-align:left;vertical-align:top}th{background:#f6f6f6}
td.n{text-align:right;font-variant-numeric:tabular-nums}.added{color:#1a7f37;font-weight:600}
.removed{color:#c62828;text-decoration:line-through}.kept{color:#222}.why{color:#555;font-size:13px;max-width:520px}
.charts{display:grid;grid-template-columns:1fr;gap:20px}.charts figure{margin:0}
#options td:first-child{white-space:nowrap}#options td:last-child{word-break:break-all;max-width:760px}
svg.chart{display:block;width:100%;max-width:1000px;height:auto;border:1px solid #eee;border-radius:6px;
background:#fff}
svg text{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;font-size:12px;fill:#333}
svg .t{font-size:15px;font-weight:600;fill:#222}svg .a{text-anchor:middle;fill:#555}
svg .l,svg .v,svg .note{text-anchor:middle}svg .y{text-anchor:end}svg .note{fill:#777}
svg .grid{stroke:#eee}svg .tick,svg .line-axis{stroke:#888}
svg .marker{stroke:#e07b39;stroke-width:2;stroke-dasharray:5 3}svg .m{fill:#b35a1f;font-weight:600}
"""


def _mib(n: float) -> str:
    """A size in the unit that shows it (a small table is not "0.0 MiB")."""
    unit, size = _byte_unit(n)
    return f"{n:,.0f} bytes" if size == 1 else f"{n / size:,.1f} {unit}"


def _layout_text(report: Report) -> str:
    if report.layout == "none" and report.primary_key:
        return "key order"
    return report.layout


def render_html(report: Report) -> str:
    charts = _charts(report)
    advice = report.advice
    out = ["<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">",
           f"<title>mergetree report: {_esc(os.path.basename(report.path))}</title>",
           f"<style>{_CSS}</style></head><body>",
           f"<h1>{_esc(os.path.basename(report.path))}</h1>",
           f"<p class=\"sub\">{_esc(report.path)} &middot; generated {report.generated:%Y-%m-%d %H:%M} UTC</p>",
           "<section id=\"summary\"><h2>Table</h2><div class=\"kpis\">"]
    optimized = sum(p.optimized_bytes for p in report.partitions)
    stored = report.stored_rows - report.rows
    imported = report.queries - report.measured
    cards = [("rows (live)", f"{report.rows:,}",
              f"{report.stored_rows:,} stored: +{stored:,} old versions, deletes" if stored else "no old versions"),
             ("files", f"{report.files:,}", ""), ("size", _mib(report.bytes), ""),
             ("snapshots", f"{report.snapshots:,}", ""), ("layout", _layout_text(report), ""),
             ("laid out", "-", "files stay in key order") if report.primary_key else
             ("laid out", f"{optimized / report.bytes:.0%}" if report.bytes else "-", "for the current layout"),
             ("layout changes", f"{len(report.passes):,}", "optimizer passes and optimize"),
             ("queries logged", f"{report.queries:,}", f"{imported:,} imported (not run here)" if imported else "")]
    for label, value, note in cards:
        out.append(f"<div class=\"kpi\"><span>{_esc(label)}</span><b>{_esc(value)}</b>"
                   + (f"<small>{_esc(note)}</small>" if note else "") + "</div>")
    out.append("</div></section>")

    out.append("<section id=\"partitions\"><h2>Partitions</h2><table><tr><th>partition</th><th>files</th>"
               "<th>stored rows</th><th>size</th><th>last write (UTC)</th><th>laid out</th><th>merged</th></tr>")
    for p in report.partitions:
        written = f"{p.last_write:%Y-%m-%d %H:%M}" if p.last_write else "-"
        out.append(f"<tr><td>{_esc(p.partition)}</td><td class=\"n\">{p.files:,}</td><td class=\"n\">{p.rows:,}</td>"
                   f"<td class=\"n\">{_mib(p.bytes)}</td><td>{written}</td>"
                   f"<td class=\"n\">{p.optimized_share:.0%}</td>"
                   f"<td class=\"n\">{(p.merged_bytes / p.bytes if p.bytes else 0):.0%}</td></tr>")
    out.append("</table></section>")

    out.append("<section id=\"configuration\"><h2>Configuration: current and recommended</h2>"
               "<table><tr><th>lever</th><th>current</th><th>recommended</th><th>files per query (replay)</th>"
               "<th>why</th></tr>")
    for lever in advice.levers:
        items = " ".join(f"<span class=\"{status}\">{_esc(item)}</span>" for item, status in lever.changes) or "-"
        effect = (f"{lever.files_before:,.1f} &rarr; {lever.files_after:,.1f}"
                  if lever.files_before is not None and lever.files_after is not None else "")
        out.append(f"<tr><td>{_esc(lever.lever)}</td><td>{_esc(', '.join(lever.current) or '-')}</td><td>{items}</td>"
                   f"<td class=\"n\">{effect}</td><td class=\"why\">{_esc(lever.reason)}</td></tr>")
    out.append("</table>")
    if advice.refused:
        out.append("<ul class=\"why\">" + "".join(f"<li>not recommended: {_esc(r)}</li>" for r in advice.refused)
                   + "</ul>")
    if advice.reduction is not None:
        out.append(f"<p>Replaying {advice.replayed:,} logged queries: {advice.files_before:,.1f} &rarr; "
                   f"{advice.files_after:,.1f} files per query, <b>{advice.reduction:.0%}</b> fewer bytes scanned "
                   f"with the recommendation. Legend: <span class=\"kept\">kept</span>, <span class=\"added\">added"
                   f"</span>, <span class=\"removed\">removed</span>.</p>")
    out.append("</section>")

    out.append("<section id=\"charts\"><h2>Charts</h2><div class=\"charts\">")
    out += [f"<figure id=\"chart-{name}\">{svg}</figure>" for name, svg in charts.items()]
    out.append("</div></section>")

    step = f" (buckets of {report.scanned[0].seconds:,} s)" if report.scanned else ""
    out.append(f"<section id=\"history\"><h2>Bytes scanned over time{step}</h2>")
    if imported:
        out.append(f"<p class=\"why\">{imported:,} imported queries never ran here: they have no measured bytes "
                   "and are left out of this table and of the time chart.</p>")
    out.append("<table><tr><th>period (UTC)</th><th>queries</th><th>per query</th><th>share of the bytes</th></tr>")
    for period in report.scanned:
        out.append(f"<tr><td>{period.start:%Y-%m-%d %H:%M:%S}</td><td class=\"n\">{period.queries:,}</td>"
                   f"<td class=\"n\">{_mib(period.bytes_per_query)}</td><td class=\"n\">{period.share:.1%}</td></tr>")
    out.append("</table><h2>Layout changes</h2><table><tr><th>#</th><th>time (UTC)</th><th>by</th><th>files</th>"
               "<th>size</th><th>layout</th><th>snapshot</th></tr>")
    for number, done in enumerate(report.passes, 1):
        by = "Table.optimize / mergetree optimize" if done["tier"] == "optimize" else f"optimizer, {done['tier']} pass"
        out.append(f"<tr><td class=\"n\">{number}</td><td>{done['ts']:%Y-%m-%d %H:%M:%S}</td><td>{_esc(by)}</td>"
                   f"<td class=\"n\">{done['files_in']} &rarr; {done['files_out']}</td><td class=\"n\">"
                   f"{_mib(done['bytes_in'] or 0)}</td><td>{_esc(done['layout'] or '-')}</td>"
                   f"<td class=\"n\">{done['snapshot_id']}</td></tr>")
    if not report.passes:
        out.append("<tr><td colspan=\"7\">none yet (mergetree optimize, or the optimizer: mergetree optimize-daemon)"
                   "</td></tr>")
    out.append("</table><h2>Filtered columns</h2><table><tr><th>column</th><th>predicates (queries)</th>"
               "<th>queries</th><th>share of queries</th><th>files skipped (mean)</th></tr>")
    for use in report.columns:
        out.append(f"<tr><td>{_esc(use.column)}</td><td>{_esc(use.kinds_text())}</td><td class=\"n\">{use.queries:,}"
                   f"</td><td class=\"n\">{use.queries / max(report.queries, 1):.0%}</td>"
                   f"<td class=\"n\">{_esc(use.skipped_text())}</td></tr>")
    out.append("</table></section>")
    out.append("<section id=\"options\"><h2>Table options</h2><table>")
    for key, value in sorted(report.options.items()):
        out.append(f"<tr><td>{_esc(key)}</td><td>{_esc(value)}</td></tr>")
    out.append("</table></section></body></html>")
    return "\n".join(out)


def write_pngs(report: Report, directory: str) -> list[str]:
    """The charts as PNG files (matplotlib, the `report` extra); returns their paths."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.dates as mdates
        import matplotlib.pyplot as plt
    except ImportError:
        raise InvalidArgumentError("--png draws with matplotlib: pip install 'mergetree[report]'") from None
    os.makedirs(directory, exist_ok=True)
    written = []

    def save(fig: Any, name: str) -> None:
        path = os.path.join(directory, f"{name}.png")
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)

    fig, ax = plt.subplots(figsize=(9, 3.5))
    top = max((p.bytes_per_query for p in report.scanned), default=0.0)
    unit, size = _byte_unit(top)
    if report.scanned:
        days = report.scanned[0].seconds / 86_400  # matplotlib's dates are in days
        ax.bar([p.start for p in report.scanned], [p.bytes_per_query / size for p in report.scanned],  # type: ignore[arg-type]
               width=days * 0.95, align="edge", label="mean per measured query", color=_COLORS[0])
    for number, done in enumerate(report.passes, 1):
        ax.axvline(done["ts"], color=_COLORS[1], linestyle="--", linewidth=1.5,
                   label="layout change" if number == 1 else None)
    t0, t1 = _time_domain(report.scanned, [done["ts"] for done in report.passes])
    ax.set_xlim(mdates.date2num(dt.datetime.fromtimestamp(t0, dt.timezone.utc)),
                mdates.date2num(dt.datetime.fromtimestamp(t1, dt.timezone.utc)))
    locator = mdates.AutoDateLocator()
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
    ax.set_ylim(0, (top / size or 1.0) * 1.3)  # headroom for the legend
    ax.set_title("Bytes scanned per query over time, and the layout changes")
    ax.set_ylabel(f"{unit} per query")
    ax.set_xlabel("time (UTC)")
    if report.scanned or report.passes:
        ax.legend(loc="upper left", ncol=2, frameon=False)
    save(fig, "scanned")
    levers = [lv for lv in report.advice.levers if lv.files_before is not None and lv.files_after is not None]
    fig, ax = plt.subplots(figsize=(9, 3.5))
    positions = range(len(levers))
    ax.bar([i - 0.2 for i in positions], [lv.files_before or 0 for lv in levers], width=0.4, label="now")
    ax.bar([i + 0.2 for i in positions], [lv.files_after or 0 for lv in levers], width=0.4, label="recommended")
    ax.set_xticks(list(positions), [lv.lever for lv in levers])
    ax.set_title("Files read per query, replayed: now vs recommended")
    ax.set_ylabel("files per query")
    if levers:
        ax.legend()
    save(fig, "levers")
    cols = report.columns[:10]
    fig, ax = plt.subplots(figsize=(9, 3.5))
    positions = range(len(cols))
    ax.bar([i - 0.2 for i in positions], [100 * c.queries / max(report.queries, 1) for c in cols], width=0.4,
           label="% of queries")
    ax.bar([i + 0.2 for i in positions], [100 * (c.skipped or 0.0) for c in cols], width=0.4,
           label="% of files skipped (queries run here)")
    ax.set_xticks(list(positions), [c.column for c in cols])
    ax.set_title("Filtered columns: share of queries, and of files their queries skipped")
    ax.set_ylabel("%")
    if cols:
        ax.legend()
    save(fig, "columns")
    return written
