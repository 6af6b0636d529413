"""The report page: built from a table with logged queries, an applied recommendation and
optimizer passes; every layout change (the optimizer's passes and a manual `optimize`) in its
history; live rows counted as a read counts them; the report and `mergetree queries show`
counting filtered columns with one function; chart ticks and time buckets checked as
properties.  Then the page is opened in a real headless Chromium at 1280 px, as a reader
would: no console error, every chart with both axes, tick labels and a unit, no text under
11 px, no two labels overlapping, one time bucket drawn as a bar (not a dot), and a
screenshot.  Where no Chromium is installed the browser tests skip with a one-line note
(`bash .ci/run` installs it; `make test` never installs anything)."""
from __future__ import annotations

import datetime as dt
import itertools
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mergetree import Table
from mergetree.organize import build_report, import_sql, render_html, run_once
from mergetree.organize.report import Period, column_usage, live_rows, nice_ticks, time_buckets, time_chart, time_step
from mergetree.table.workload import querylog
from mergetree.table.workload.advise import LoggedQuery
from mergetree.table.workload.history import history

ROWS, FILES = 40_000, 20


@pytest.fixture(scope="module")
def optimized_table(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("report") / "events")
    rng = np.random.default_rng(5)
    data = pa.table({"id": rng.permutation(ROWS), "a": rng.integers(0, 10**9, ROWS), "b": rng.normal(0, 1, ROWS),
                     "category": np.array([f"c{i}" for i in range(8)])[rng.integers(0, 8, ROWS)]})
    t = Table.create(path, data.schema, options={"target-file-size": str(int(data.nbytes / FILES * 1.05)),
                                                 "write-only": "true", "optimize.major-threshold": "64 kb"})
    per = ROWS // FILES
    for i in range(FILES):
        t.write(data.slice(i * per, per))

    def workload():
        for i in range(60):
            low = int(rng.integers(0, 10**9 - 2 * 10**7))
            t.read(filter=[("a", ">=", low), ("a", "<", low + 2 * 10**7)] if i % 2 else
                   [("b", ">=", float(rng.normal())), ("b", "<", 0.5)], columns=["id"])

    workload()
    querylog.flush()
    t.advise(apply=True)
    run_once(path)
    t = Table.open(path)
    workload()
    querylog.flush()
    return t


@pytest.fixture(scope="module")
def updated_table(tmp_path_factory):
    """A primary-key table read within a second, then optimized by hand (a full compaction),
    then updated and partly deleted: stored rows exceed live rows; two imported queries."""
    root = tmp_path_factory.mktemp("updated")
    path = str(root / "t")
    rng = np.random.default_rng(9)

    def rows(keys):
        return pa.table({"id": keys, "a": rng.integers(0, 10**6, len(keys)), "c": rng.choice(["x", "y", "z"],
                                                                                            len(keys))})
    t = Table.create(path, rows(np.arange(1)).schema, primary_key="id", options={"write-only": "true"})
    for part in np.array_split(np.arange(6_000), 3):
        t.write(rows(part))
    for i in range(12):
        t.read(filter=[("a", ">=", i * 1000), ("a", "<", i * 1000 + 5000)] if i % 2 else [("c", "=", "x")])
    querylog.flush()
    (root / "history.sql").write_text("SELECT * FROM t\nWHERE c = 'y'\n  AND a > 1;\nSELECT * FROM t WHERE a = 7;\n")
    import_sql(path, str(root / "history.sql"), table_name="t")
    assert t.optimize() is not None
    t.write(rows(np.arange(1_000)))  # new versions of 1,000 keys
    t.delete(pa.table({"id": np.arange(5_000, 5_500)}))
    return Table.open(path)


# ---------------------------------------------------------------------------
# What the report gathers
# ---------------------------------------------------------------------------

def test_the_report_holds_its_sections_and_numbers(optimized_table):
    report = build_report(optimized_table.path)
    assert report.rows == ROWS and report.stored_rows == ROWS and report.queries == 120 == report.measured
    assert report.passes and report.passes[0]["tier"] == "major"
    assert report.partitions[0].optimized_share == 1.0
    page = render_html(report)
    for section in ("summary", "partitions", "configuration", "charts", "history", "options"):
        assert f'id="{section}"' in page
    assert page.count("<svg") == 4 and "http://" not in page.replace("http://www.w3.org/2000/svg", "")
    assert "<script" not in page  # a page, not an app: nothing runs


def test_a_manual_optimize_is_a_layout_change_in_the_history_and_on_the_page(tmp_path):
    rng = np.random.default_rng(3)
    t = Table.create(str(tmp_path / "t"), pa.schema([("a", pa.int64()), ("b", pa.float64())]),
                     options={"write-only": "true"})
    for _ in range(4):
        t.write(pa.table({"a": rng.integers(0, 1000, 500), "b": rng.normal(size=500)}))
    t.read(filter=("a", "<", 100))
    querylog.flush()
    snapshot = t.optimize("a")
    recorded = history(t.path).to_pylist()
    assert [(r["tier"], r["status"], r["files_in"], r["rows"], r["snapshot_id"], r["layout"]) for r in recorded] == [
        ("optimize", "committed", 4, 2000, snapshot.id, "linear(a)")]
    assert recorded[0]["files_out"] >= 1 and recorded[0]["bytes_in"] > 0
    empty = Table.create(str(tmp_path / "empty"), t.schema)
    assert empty.optimize("a") is None and len(history(empty.path)) == 0  # nothing rewritten, nothing recorded
    # the CLI's optimize is the same entry point: a second layout, a second line
    out = subprocess.run([sys.executable, "-m", "mergetree", "optimize", t.path, "--order", "b", "--no-progress"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert history(t.path).column("layout").to_pylist() == ["linear(a)", "linear(b)"]
    report = build_report(t.path)
    page = render_html(report)
    assert len(report.passes) == 2 and "none yet" not in page
    assert page.count('class="marker"') == 2 + 1  # a dashed line per change, and the legend's swatch
    assert "#1 optimize" in page and "#2 optimize" in page


def test_a_primary_key_optimize_is_recorded_and_live_rows_are_what_a_read_returns(updated_table, monkeypatch):
    monkeypatch.setenv("MERGETREE_QUERY_LOG", "0")  # the checking read stays out of the shared table's log
    t = updated_table
    assert [r["tier"] for r in history(t.path).to_pylist()] == ["optimize"]
    report = build_report(t.path)
    assert report.rows == t.read(columns=["id"]).num_rows == 5_500
    assert report.stored_rows == sum(e.file.row_count for e in t.directory.live_files(t.latest_snapshot()).values())
    assert report.stored_rows > report.rows
    page = render_html(report)
    assert "5,500" in page and f"{report.stored_rows:,} stored" in page


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["write", "delete", "compact"]), st.integers(0, 60), st.integers(1, 40)),
                min_size=1, max_size=6),
       st.sampled_from(["deduplicate", "first-row", "partial-update"]))
def test_live_rows_equal_the_rows_a_read_returns(steps, engine):
    with tempfile.TemporaryDirectory() as root:
        schema = pa.schema([("id", pa.int64()), ("v", pa.int64())])
        t = Table.create(os.path.join(root, "t"), schema, primary_key="id", buckets=2,
                         merge_engine=engine, options={"write-only": "true"})
        for op, start, n in steps:
            keys = np.arange(start, start + n)
            if op == "write":
                t.write(pa.table({"id": keys, "v": keys * 7}, schema=schema))
            elif op == "delete" and engine not in ("first-row", "partial-update"):  # Paimon refuses them
                t.delete(pa.table({"id": keys}))
            elif op == "compact":
                t.compact(full=True)
        assert live_rows(t.directory, t.latest_snapshot()) == t.read(columns=["id"]).num_rows


def test_the_report_and_queries_show_count_columns_alike(updated_table):
    report = build_report(updated_table.path)
    by_column = {u.column: u for u in report.columns}
    # twelve run here (a range, or c =) and two imported statements (c = and a range on a; a =)
    assert (by_column["a"].queries, by_column["a"].measured, by_column["a"].kinds) == (8, 6, (("range", 7), ("eq", 1)))
    assert (by_column["c"].queries, by_column["c"].measured, by_column["c"].kinds) == (7, 6, (("eq", 7),))
    assert report.queries - report.measured == 2  # the imported ones
    out = subprocess.run([sys.executable, "-m", "mergetree", "queries", "show", updated_table.path],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    shown = {line.split()[0]: line.split() for line in out.stdout.splitlines()
             if line.split() and line.split()[0] in by_column}
    for use in report.columns:
        assert f"{use.queries:,}" in shown[use.column], (use, shown[use.column])


def test_column_usage_counts_each_query_once_per_column():
    run = dict(files_scanned=1, files_total=4)
    queries = [LoggedQuery((("a", "range"), ("a", "range"), ("b", "eq")), **run),   # a twice in one query: once
               LoggedQuery((("a", "eq"),), files_scanned=4, files_total=4),
               LoggedQuery((("a", "in"), ("", "or"))),                              # imported: no files measured
               LoggedQuery(())]
    uses = column_usage(queries)
    assert [(u.column, u.queries, u.kinds, u.measured) for u in uses] == [
        ("a", 3, (("eq", 1), ("in", 1), ("range", 1)), 2), ("b", 1, (("eq", 1),), 1)]
    assert uses[0].skipped == pytest.approx((0.75 + 0.0) / 2) and uses[1].skipped == 0.75
    assert column_usage([]) == []


# ---------------------------------------------------------------------------
# Chart arithmetic
# ---------------------------------------------------------------------------

@given(st.floats(min_value=1e-6, max_value=1e12, allow_nan=False), st.integers(2, 10))
def test_nice_ticks_cover_the_values_tightly_in_round_steps(top, count):
    ticks = nice_ticks(top, count)
    step = ticks[1] - ticks[0]
    assert ticks[0] == 0 and ticks[-1] >= top * (1 - 1e-9) and ticks[-2] < top
    assert 2 <= len(ticks) <= count + 1
    assert all(abs((b - a) - step) <= 1e-9 * max(1.0, ticks[-1]) for a, b in itertools.pairwise(ticks))
    mantissa = step / 10 ** np.floor(np.log10(step))
    assert min(abs(mantissa - m) for m in (1, 2, 2.5, 5, 10)) < 1e-6


@given(st.floats(min_value=0, max_value=400 * 86_400, allow_nan=False), st.integers(4, 60))
def test_time_buckets_are_the_finest_that_fit(span, most):
    step = time_step(span, most)
    assert span / step <= most
    smaller = [s for s in (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600) if s < step]
    assert all(span / s > most for s in smaller)


def test_queries_within_a_minute_fall_into_several_buckets_and_one_bucket_is_a_bar():
    start = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)
    queries = [LoggedQuery(bytes_scanned=1000 + i, bytes_total=4000, ts=start + dt.timedelta(seconds=i))
               for i in range(40)]
    periods = time_buckets(queries)
    assert len(periods) == 40 and periods[0].seconds == 1 and sum(p.queries for p in periods) == 40
    one = time_buckets(queries[:1])
    assert one == [Period(start, 1, 1, 1000.0, 0.25)]
    svg = time_chart("t", one, [(start + dt.timedelta(seconds=2), "#1 optimize", "the pass")])
    bars = [part for part in svg.split("<rect") if "mean per measured" not in part and "<title>" in part]
    width = float(bars[0].split('width="')[1].split('"')[0])
    assert width >= 20  # a bar among empty neighbours, not a dot
    assert 'class="axis y"' in svg and 'class="axis x"' in svg and "bytes per query" in svg


def test_an_empty_period_still_draws_axes_and_says_why():
    svg = time_chart("t", [], [])
    assert 'class="axis y"' in svg and 'class="axis x"' in svg and "no measured queries yet" in svg


# ---------------------------------------------------------------------------
# In a real browser
# ---------------------------------------------------------------------------

def _browser() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


def _open_in_chromium():
    playwright = pytest.importorskip("playwright.sync_api", reason="playwright is missing (the `test` extra)")
    executable = _browser()
    if executable is None:
        pytest.skip("no Chromium installed: the report page was not opened in a browser (bash .ci/run installs it)")
    return playwright, executable


# every text of each chart: its rendered font size and its box on the page
_TEXT_FACTS = """() => [...document.querySelectorAll('svg.chart')].map(svg => ({
  id: svg.closest('figure').id,
  width: svg.getBoundingClientRect().width,
  yTicks: svg.querySelectorAll('g.axis.y text.y').length,
  xTicks: svg.querySelectorAll('g.axis.x line.tick').length,
  empty: svg.querySelector('text.note') !== null,
  axisTitles: [...svg.querySelectorAll('text.a')].map(t => t.textContent),
  bars: [...svg.querySelectorAll('rect')].filter(r => r.querySelector('title'))
          .map(r => r.getBoundingClientRect().width),
  texts: [...svg.querySelectorAll('text')].filter(t => t.textContent.trim()).map(t => {
    const m = t.getScreenCTM(); const b = t.getBoundingClientRect();
    return {text: t.textContent, px: parseFloat(getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b),
            box: [b.left, b.top, b.right, b.bottom]};
  }),
}))"""

# the smallest font size of any text on the page outside the charts
_PAGE_TEXT = """() => Math.min(...[...document.body.querySelectorAll('*')]
  .filter(e => !e.closest('svg') && [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim()))
  .map(e => parseFloat(getComputedStyle(e).fontSize)))"""


def _overlaps(texts: list[dict]) -> list[tuple[str, str]]:
    out = []
    for i, a in enumerate(texts):
        for b in texts[i + 1:]:
            (l1, t1, r1, b1), (l2, t2, r2, b2) = a["box"], b["box"]
            if min(r1, r2) - max(l1, l2) > 0.5 and min(b1, b2) - max(t1, t2) > 0.5:
                out.append((a["text"], b["text"]))
    return out


@pytest.mark.parametrize("fixture", ["optimized_table", "updated_table"])
def test_the_page_reads_well_in_chromium_at_1280_px(fixture, request, tmp_path):
    playwright, chromium = _open_in_chromium()
    table = request.getfixturevalue(fixture)
    out = tmp_path / "report.html"
    run = subprocess.run([sys.executable, "-m", "mergetree", "report", table.path, "--html", str(out),
                          "--png", str(tmp_path / "png")], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert sorted(os.listdir(tmp_path / "png")) == ["columns.png", "levers.png", "scanned.png"]
    problems: list[str] = []
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("console", lambda m: problems.append(f"{m.type}: {m.text}") if m.type in ("error", "warning")
                    else None)
            page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url}"))
            page.goto(out.as_uri())
            page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
            title = page.title()
            headings = page.locator("h2").all_inner_texts()
            kpis = page.locator(".kpi").all_inner_texts()
            changes = page.locator("#history table").nth(1).locator("tr").count()
            charts = page.evaluate(_TEXT_FACTS)
            smallest_page_text = page.evaluate(_PAGE_TEXT)
        finally:
            browser.close()
    assert problems == []
    assert title == f"mergetree report: {os.path.basename(table.path)}"
    assert headings[:3] == ["Table", "Partitions", "Configuration: current and recommended"]
    assert [c["id"] for c in charts] == ["chart-scanned", "chart-levers", "chart-partitions", "chart-columns"]
    for chart in charts:
        assert chart["width"] >= 900, chart["id"]                     # a chart per row, drawn about 1:1
        assert chart["yTicks"] >= 3 and (chart["xTicks"] >= 1 or chart["empty"]), chart["id"]
        assert len(chart["axisTitles"]) == 2 and all(chart["axisTitles"]), chart["id"]  # y unit, x title
        small = [(t["text"], round(t["px"], 1)) for t in chart["texts"] if t["px"] < 11]
        assert small == [], (chart["id"], small)
        assert _overlaps(chart["texts"]) == [], chart["id"]
    assert smallest_page_text >= 11
    scanned = charts[0]
    assert "bytes per query" in scanned["axisTitles"][0] or "B per query" in scanned["axisTitles"][0]
    assert scanned["bars"] and min(scanned["bars"]) >= 2 and max(scanned["bars"]) >= 10
    assert changes >= 2  # the header and at least one layout change
    if fixture == "updated_table":
        assert any(k.startswith("rows (live)\n5,500") and "stored" in k for k in kpis), kpis
        assert any("#1 optimize" in t["text"] for t in scanned["texts"])
    else:
        assert any("40,000" in k for k in kpis) and any("laid out\n100%" in k for k in kpis)
    assert (tmp_path / "report.png").stat().st_size > 20_000
