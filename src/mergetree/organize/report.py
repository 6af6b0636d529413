"""The organization report (`mergetree report PATH --html out.html`, `--png DIR`): one
self-contained HTML page (no server, no network, no script) with the table's and each
partition's statistics (size, files, last write, optimized share), the current configuration
next to the advisor's recommendation (kept / added / removed, as seed 003's page), the bytes
scanned per query from the query log before and after each optimization pass, how often each
column is filtered and how many files those queries skipped, and charts of all of it.

The charts are inline SVG drawn here (a few dozen lines beat a plotting dependency for a page);
`--png` writes them as PNG files through matplotlib (the `report` extra)."""
from __future__ import annotations

import datetime as dt
import html
import os
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidArgumentError
from ..table import Table
from ..table.advise import Advice, LoggedQuery, read_log
from ..table.history import history
from ..table.optimize import layout_signature, optimized_tier

__all__ = ["PartitionStats", "Report", "build_report", "render_html", "write_pngs"]


@dataclass
class PartitionStats:
    partition: str
    files: int = 0
    rows: int = 0
    bytes: int = 0
    last_write: dt.datetime | None = None
    optimized_bytes: int = 0     # laid out for the current layout (major)
    merged_bytes: int = 0        # merged by a minor pass

    @property
    def optimized_share(self) -> float:
        return self.optimized_bytes / self.bytes if self.bytes else 0.0


@dataclass
class Report:
    path: str
    generated: dt.datetime
    rows: int
    files: int
    bytes: int
    snapshots: int
    layout: str
    options: dict[str, str]
    partitions: list[PartitionStats]
    advice: Advice
    # (period start, queries, mean bytes scanned, mean share of the bytes scanned)
    scanned: list[tuple[dt.datetime, int, float, float]] = field(default_factory=list)
    passes: list[dict[str, Any]] = field(default_factory=list)          # the optimizer's history
    columns: list[tuple[str, int, float]] = field(default_factory=list)  # column, queries, mean share of files skipped
    queries: int = 0


def _partition_name(partition_by: Sequence[str], partition: tuple) -> str:
    return "/".join(f"{c}={v}" for c, v in zip(partition_by, partition)) or "(table)"


def _periods(queries: list[LoggedQuery]) -> list[tuple[dt.datetime, int, float, float]]:
    """Mean bytes scanned per query per minute (spans under two hours), hour (under two days)
    or day."""
    dated = [(q.ts, q) for q in queries if q.ts is not None and q.bytes_scanned is not None]
    if not dated:
        return []
    span = max(t for t, _ in dated) - min(t for t, _ in dated)
    step = 60 if span < dt.timedelta(hours=2) else 3600 if span < dt.timedelta(days=2) else 86_400
    buckets: dict[dt.datetime, list[LoggedQuery]] = defaultdict(list)
    for ts, q in dated:
        start = int(ts.timestamp()) // step * step
        buckets[dt.datetime.fromtimestamp(start, dt.timezone.utc)].append(q)
    out = []
    for key in sorted(buckets):
        group = buckets[key]
        total = sum(q.bytes_total or 0 for q in group)
        out.append((key, len(group), sum(q.bytes_scanned or 0 for q in group) / len(group),
                    sum(q.bytes_scanned or 0 for q in group) / total if total else 1.0))
    return out


def build_report(path: str, since: dt.timedelta | dt.datetime | None = None) -> Report:
    """Gather what the page shows (the advice is computed now, nothing is applied)."""
    table = Table.open(path)
    directory = table.directory
    options = directory.options
    snapshot = table.latest_snapshot()
    live = directory.live_files(snapshot) if snapshot else {}
    partitions: dict[str, PartitionStats] = {}
    for entry in live.values():
        name = _partition_name(directory.schema.partition_by, entry.partition)
        stats = partitions.setdefault(name, PartitionStats(name))
        meta = entry.file
        stats.files += 1
        stats.rows += meta.row_count
        stats.bytes += meta.file_size
        try:
            written = dt.datetime.fromtimestamp(os.path.getmtime(os.path.join(table.path, meta.file_name)),
                                                dt.timezone.utc)
        except OSError:
            written = None
        if written is not None and (stats.last_write is None or written > stats.last_write):
            stats.last_write = written
        tier = optimized_tier(meta, options)
        if tier == "major":
            stats.optimized_bytes += meta.file_size
        elif tier == "minor":
            stats.merged_bytes += meta.file_size
    queries = read_log(table.path, since)
    columns: dict[str, list[float]] = defaultdict(list)
    for q in queries:
        if q.files_total:
            skipped = 1.0 - (q.files_scanned or 0) / q.files_total
            for column in {c for c, _ in q.predicates if c}:
                columns[column].append(skipped)
    passes = history(table.path).to_pylist()
    return Report(
        table.path, dt.datetime.now(dt.timezone.utc), sum(e.file.row_count for e in live.values()), len(live),
        sum(e.file.file_size for e in live.values()), len(directory.store.snapshot_ids()),
        layout_signature(options), dict(directory.schema.options),
        sorted(partitions.values(), key=lambda p: p.partition), table.advise(since=since), _periods(queries),
        passes, sorted(((c, len(v), sum(v) / len(v)) for c, v in columns.items()), key=lambda x: -x[1]),
        len(queries))


# ---------------------------------------------------------------------------
# Charts (inline SVG)
# ---------------------------------------------------------------------------

_W, _H, _PAD = 640, 240, 44
_COLORS = ["#3b6ea5", "#e07b39", "#4a9c5d", "#c0504d", "#8064a2", "#4bacc6"]


def _esc(x: object) -> str:
    return html.escape(str(x), quote=True)


def bar_chart(title: str, labels: Sequence[str], series: dict[str, Sequence[float]], unit: str = "") -> str:
    """Grouped bars; `series` name -> one value per label."""
    values = [v for vs in series.values() for v in vs]
    top = max(values, default=0.0) or 1.0
    n, k = max(len(labels), 1), max(len(series), 1)
    slot = (_W - 2 * _PAD) / n
    width = slot * 0.8 / k
    parts = [f'<svg class="chart" role="img" aria-label="{_esc(title)}" viewBox="0 0 {_W} {_H + 40}" '
             f'xmlns="http://www.w3.org/2000/svg"><title>{_esc(title)}</title>',
             f'<text x="{_PAD}" y="16" class="t">{_esc(title)}</text>',
             f'<line x1="{_PAD}" y1="{_H}" x2="{_W - _PAD}" y2="{_H}" class="axis"/>']
    for s, (name, vs) in enumerate(series.items()):
        for i, v in enumerate(vs):
            h = (_H - 30) * (v / top)
            x = _PAD + i * slot + slot * 0.1 + s * width
            parts.append(f'<rect x="{x:.1f}" y="{_H - h:.1f}" width="{width:.1f}" height="{h:.1f}" '
                         f'fill="{_COLORS[s % len(_COLORS)]}"><title>{_esc(labels[i])} {_esc(name)}: '
                         f'{v:,.3g}{_esc(unit)}</title></rect>')
            parts.append(f'<text x="{x + width / 2:.1f}" y="{_H - h - 3:.1f}" class="v">{v:,.3g}</text>')
    for i, label in enumerate(labels):
        parts.append(f'<text x="{_PAD + (i + 0.5) * slot:.1f}" y="{_H + 14}" class="l">{_esc(label)}</text>')
    for s, name in enumerate(series):
        parts.append(f'<rect x="{_PAD + s * 150}" y="{_H + 24}" width="10" height="10" '
                     f'fill="{_COLORS[s % len(_COLORS)]}"/><text x="{_PAD + s * 150 + 14}" y="{_H + 33}" '
                     f'class="k">{_esc(name)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def line_chart(title: str, points: Sequence[tuple[dt.datetime, float]], markers: Sequence[tuple[dt.datetime, str]],
               unit: str = "") -> str:
    """A line over time with vertical markers (optimization passes)."""
    if not points:
        return (f'<svg class="chart" viewBox="0 0 {_W} 60" xmlns="http://www.w3.org/2000/svg">'
                f'<text x="{_PAD}" y="30" class="t">{_esc(title)}: no queries logged yet</text></svg>')
    times = [p[0].timestamp() for p in points] + [m[0].timestamp() for m in markers]
    t0, t1 = min(times), max(times)
    t1 = t1 if t1 > t0 else t0 + 1
    top = max(v for _, v in points) or 1.0

    def x(t: dt.datetime) -> float:
        return _PAD + (_W - 2 * _PAD) * (t.timestamp() - t0) / (t1 - t0)

    def y(v: float) -> float:
        return _H - (_H - 30) * v / top

    path = " ".join(f"{'M' if i == 0 else 'L'}{x(t):.1f},{y(v):.1f}" for i, (t, v) in enumerate(points))
    parts = [f'<svg class="chart" role="img" aria-label="{_esc(title)}" viewBox="0 0 {_W} {_H + 30}" '
             f'xmlns="http://www.w3.org/2000/svg"><title>{_esc(title)}</title>',
             f'<text x="{_PAD}" y="16" class="t">{_esc(title)}</text>',
             f'<line x1="{_PAD}" y1="{_H}" x2="{_W - _PAD}" y2="{_H}" class="axis"/>',
             f'<text x="{_PAD + 4}" y="{y(top) - 4:.1f}" class="k">{top:,.3g}{_esc(unit)}</text>']
    for when, label in markers:
        parts.append(f'<line x1="{x(when):.1f}" y1="24" x2="{x(when):.1f}" y2="{_H}" class="marker">'
                     f'<title>{_esc(label)}</title></line>')
    parts.append(f'<path d="{path}" class="line"/>')
    for t, v in points:
        parts.append(f'<circle cx="{x(t):.1f}" cy="{y(v):.1f}" r="3" class="dot"><title>{t:%Y-%m-%d %H:%M}: '
                     f'{v:,.3g}{_esc(unit)}</title></circle>')
    first = dt.datetime.fromtimestamp(t0, dt.timezone.utc)
    last = dt.datetime.fromtimestamp(t1, dt.timezone.utc)
    parts.append(f'<text x="{_PAD}" y="{_H + 16}" class="l0">{first:%Y-%m-%d %H:%M}</text>'
                 f'<text x="{_W - _PAD}" y="{_H + 16}" class="l1">{last:%Y-%m-%d %H:%M}</text></svg>')
    return "".join(parts)


def _charts(report: Report) -> dict[str, str]:
    mib = 2**20
    charts = {}
    markers = [(p["ts"], f"{p['tier']} pass: {p['files_in']} -> {p['files_out']} files") for p in report.passes]
    charts["scanned"] = line_chart("MiB scanned per query (vertical lines: optimization passes)",
                                   [(t, b / mib) for t, _, b, _ in report.scanned], markers, " MiB")
    levers = [lv for lv in report.advice.levers if lv.files_before is not None and lv.files_after is not None]
    charts["levers"] = bar_chart("files read per query, replayed: now vs recommended",
                                 [lv.lever for lv in levers] or ["(no change)"],
                                 {"now": [lv.files_before or 0.0 for lv in levers] or [0.0],
                                  "recommended": [lv.files_after or 0.0 for lv in levers] or [0.0]})
    parts = report.partitions[:12]
    charts["partitions"] = bar_chart("MiB per partition: laid out, merged, as written",
                                     [p.partition for p in parts] or ["(empty)"],
                                     {"laid out": [p.optimized_bytes / mib for p in parts] or [0.0],
                                      "merged": [p.merged_bytes / mib for p in parts] or [0.0],
                                      "as written": [(p.bytes - p.optimized_bytes - p.merged_bytes) / mib
                                                     for p in parts] or [0.0]}, " MiB")
    cols = report.columns[:10]
    charts["columns"] = bar_chart("filtered columns: share of queries, and of files their queries skipped",
                                  [c for c, _, _ in cols] or ["(none)"],
                                  {"% of queries": [100 * n / max(report.queries, 1) for _, n, _ in cols] or [0.0],
                                   "% of files skipped": [100 * s for _, _, s in cols] or [0.0]}, "%")
    return charts


# ---------------------------------------------------------------------------
# The page
# ---------------------------------------------------------------------------

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:1100px;color:#222;
padding:0 16px}
h1{font-size:22px;margin-bottom:4px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd;padding-bottom:4px}
.sub{color:#666}.kpis{display:flex;gap:12px;flex-wrap:wrap}
.kpi{border:1px solid #ddd;border-radius:6px;padding:8px 14px}
.kpi b{display:block;font-size:18px}table{border-collapse:collapse;margin:8px 0}
td,th{border-bottom:1px solid #eee;padding:4px 10px;text-align:left;vertical-align:top}th{background:#f6f6f6}
td.n{text-align:right;font-variant-numeric:tabular-nums}.added{color:#1a7f37;font-weight:600}
.removed{color:#c62828;text-decoration:line-through}.kept{color:#222}.why{color:#555;font-size:12px;max-width:520px}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(480px,1fr));gap:16px}
svg.chart{width:100%;height:auto;border:1px solid #eee;border-radius:6px;background:#fff}
svg .t{font-size:13px;font-weight:600}svg .axis{stroke:#999}
svg .l,svg .v,svg .k,svg .y,svg .l0,svg .l1{font-size:10px;fill:#444}
svg .l,svg .v{text-anchor:middle}svg .y{text-anchor:end}svg .l1{text-anchor:end}
svg .line{fill:none;stroke:#3b6ea5;stroke-width:2}svg .dot{fill:#3b6ea5}svg .marker{stroke:#e07b39;stroke-dasharray:4 3}
"""


def _mib(n: float) -> str:
    return f"{n / 2**20:,.1f} MiB"


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
    for label, value in (("rows", f"{report.rows:,}"), ("files", f"{report.files:,}"), ("size", _mib(report.bytes)),
                         ("snapshots", f"{report.snapshots:,}"), ("layout", report.layout),
                         ("laid out", f"{optimized / report.bytes:.0%}" if report.bytes else "-"),
                         ("queries logged", f"{report.queries:,}")):
        out.append(f"<div class=\"kpi\"><span>{_esc(label)}</span><b>{_esc(value)}</b></div>")
    out.append("</div></section>")

    out.append("<section id=\"partitions\"><h2>Partitions</h2><table><tr><th>partition</th><th>files</th>"
               "<th>rows</th><th>size</th><th>last write (UTC)</th><th>laid out</th><th>merged</th></tr>")
    for p in report.partitions:
        out.append(f"<tr><td>{_esc(p.partition)}</td><td class=\"n\">{p.files:,}</td><td class=\"n\">{p.rows:,}</td>"
                   f"<td class=\"n\">{_mib(p.bytes)}</td><td>{p.last_write:%Y-%m-%d %H:%M}</td>"
                   f"<td class=\"n\">{p.optimized_share:.0%}</td>"
                   f"<td class=\"n\">{(p.merged_bytes / p.bytes if p.bytes else 0):.0%}</td></tr>"
                   if p.last_write else
                   f"<tr><td>{_esc(p.partition)}</td><td class=\"n\">{p.files:,}</td><td class=\"n\">{p.rows:,}</td>"
                   f"<td class=\"n\">{_mib(p.bytes)}</td><td>-</td><td class=\"n\">{p.optimized_share:.0%}</td>"
                   f"<td class=\"n\">-</td></tr>")
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

    out.append("<section id=\"history\"><h2>Bytes scanned over time</h2><table><tr><th>period (UTC)</th>"
               "<th>queries</th><th>per query</th><th>share of the bytes</th></tr>")
    for start, n, scanned, share in report.scanned:
        out.append(f"<tr><td>{start:%Y-%m-%d %H:%M}</td><td class=\"n\">{n:,}</td><td class=\"n\">{_mib(scanned)}"
                   f"</td><td class=\"n\">{share:.1%}</td></tr>")
    out.append("</table><h2>Optimization passes</h2><table><tr><th>time (UTC)</th><th>tier</th><th>files</th>"
               "<th>size</th><th>layout</th><th>snapshot</th></tr>")
    for done in report.passes:
        out.append(f"<tr><td>{done['ts']:%Y-%m-%d %H:%M:%S}</td><td>{_esc(done['tier'])}</td>"
                   f"<td class=\"n\">{done['files_in']} &rarr; {done['files_out']}</td><td class=\"n\">"
                   f"{_mib(done['bytes_in'] or 0)}</td><td>{_esc(done['layout'] or '-')}</td>"
                   f"<td class=\"n\">{done['snapshot_id']}</td></tr>")
    if not report.passes:
        out.append("<tr><td colspan=\"6\">none yet (mergetree optimize-daemon)</td></tr>")
    out.append("</table><h2>Filtered columns</h2><table><tr><th>column</th><th>queries</th>"
               "<th>files skipped (mean)</th></tr>")
    for column, n, skipped in report.columns:
        out.append(f"<tr><td>{_esc(column)}</td><td class=\"n\">{n:,}</td><td class=\"n\">{skipped:.0%}</td></tr>")
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
        import matplotlib.pyplot as plt
    except ImportError:
        raise InvalidArgumentError("--png draws with matplotlib: pip install 'mergetree[report]'") from None
    os.makedirs(directory, exist_ok=True)
    written = []
    mib = 2**20

    def save(fig: Any, name: str) -> None:
        path = os.path.join(directory, f"{name}.png")
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)

    fig, ax = plt.subplots(figsize=(8, 3))
    if report.scanned:
        ax.plot([t for t, *_ in report.scanned], [b / mib for _, _, b, _ in report.scanned],  # type: ignore[arg-type]
                marker="o")
    for p in report.passes:
        ax.axvline(p["ts"], color="#e07b39", linestyle="--", linewidth=1)
    ax.set_title("MiB scanned per query (dashed: optimization passes)")
    ax.set_ylabel("MiB")
    save(fig, "scanned")
    levers = [lv for lv in report.advice.levers if lv.files_before is not None and lv.files_after is not None]
    fig, ax = plt.subplots(figsize=(8, 3))
    positions = range(len(levers))
    ax.bar([i - 0.2 for i in positions], [lv.files_before or 0 for lv in levers], width=0.4, label="now")
    ax.bar([i + 0.2 for i in positions], [lv.files_after or 0 for lv in levers], width=0.4, label="recommended")
    ax.set_xticks(list(positions), [lv.lever for lv in levers])
    ax.set_title("files read per query, replayed")
    ax.legend()
    save(fig, "levers")
    cols = report.columns[:10]
    fig, ax = plt.subplots(figsize=(8, 3))
    ax.bar([c for c, _, _ in cols], [100 * s for _, _, s in cols])
    ax.set_title("% of files skipped by the queries filtering each column")
    save(fig, "columns")
    return written
