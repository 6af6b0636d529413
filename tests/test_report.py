"""The report page: built from a table with logged queries, an applied recommendation and
optimizer passes; opened in a real headless Chromium (Debian's package, installed by `make
test`), which must show no console error; the page holds the expected sections and numbers,
and a screenshot is taken."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest

from mergetree import Table
from mergetree.organize import build_report, render_html, run_once
from mergetree.table import querylog

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


def test_the_report_holds_its_sections_and_numbers(optimized_table):
    report = build_report(optimized_table.path)
    assert report.rows == ROWS and report.queries == 120
    assert report.passes and report.passes[0]["tier"] == "major"
    assert report.partitions[0].optimized_share == 1.0
    page = render_html(report)
    for section in ("summary", "partitions", "configuration", "charts", "history", "options"):
        assert f'id="{section}"' in page
    assert page.count("<svg") == 4 and "http://" not in page.replace("http://www.w3.org/2000/svg", "")
    assert "<script" not in page  # a page, not an app: nothing runs


def test_the_page_renders_in_chromium_without_console_errors(optimized_table, tmp_path):
    playwright = pytest.importorskip("playwright.sync_api")
    chromium = shutil.which("chromium")
    assert chromium, "Chromium is missing: `make test` installs it (scripts/ensure_chromium.sh)"
    out = tmp_path / "report.html"
    run = subprocess.run([sys.executable, "-m", "mergetree", "report", optimized_table.path, "--html", str(out),
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
            layout_cell = page.locator("#configuration td").nth(1).inner_text()
            charts = page.locator("svg.chart").count()
            chart_box = page.locator("#chart-scanned svg").bounding_box()
            passes = page.locator("#history table").nth(1).locator("tr").count()
        finally:
            browser.close()
    assert problems == []
    assert title == "mergetree report: events"
    assert headings[:3] == ["Table", "Partitions", "Configuration: current and recommended"]
    assert any("40,000" in k for k in kpis) and any("laid out\n100%" in k for k in kpis)
    assert layout_cell.split("(")[0] in ("hilbert", "linear", "qdtree")  # the applied layout is now current
    assert charts == 4 and chart_box is not None and chart_box["width"] > 300 and chart_box["height"] > 100
    assert passes >= 2  # the header and the major pass
    assert (tmp_path / "report.png").stat().st_size > 20_000
