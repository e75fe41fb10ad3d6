"""The verdict blocks of a run's page (the CI gate and "cannot tell the setups apart") in
headless Chromium (Debian's package, driven by Playwright), at 1,280 and 390 px wide: shown,
readable without a horizontal scroll, a hostile question id kept as text, no console error.
The reports are tests/support/reports.py's, judged by the real gate against a baseline
stored in a real local report store; the counts are by hand (see test_gate_baseline.py)."""

from __future__ import annotations

import pytest

from core.evaluation.gate import BaselineRule, find_baseline, judge_gate, parse_thresholds
from core.evaluation.undecided import undecided
from core.reports import LocalFiles, ReportStore
from core.reports.pages import render_run
from tests.support.browser import check_page, launch, layout_problems
from tests.support.reports import retrieval_report

pytestmark = [pytest.mark.integration, pytest.mark.slow]

HOSTILE = "<script>window.__pwned = 1</script>"


def _run(run_id: str, found_a: int) -> dict:
    ranks = {f"q{i}": {"A": 1 if i < found_a else None, "B": 1} for i in range(9)}
    ranks[HOSTILE] = {"A": 1 if found_a == 10 else None, "B": 1}
    report = retrieval_report(run_id=run_id, ranks=ranks)
    report["branch"] = "main"
    return report


@pytest.fixture(scope="module")
def page_url(tmp_path_factory):
    """A regressed run (A finds 4 of 10, the baseline 10) judged against the stored baseline,
    with every setup also marked tied with the pick."""
    root = tmp_path_factory.mktemp("verdict")
    store = ReportStore(LocalFiles(root / "store"))
    base = _run("20260101T000000Z-000001", 10)
    base["gate"] = judge_gate(base, branch="main").to_dict()
    store.save_run(base["run_id"], base)
    now = _run("20260102T000000Z-000002", 4)
    baseline, note = find_baseline(store, BaselineRule("ab" * 32, "docs", "main"))
    now["gate"] = judge_gate(now, baseline=baseline, branch="main", note=note,
                             thresholds=parse_thresholds(["found@10=0.5"])).to_dict()
    now["picks"]["tied_with_all"] = True
    now["undecided"] = undecided("setups", "A", 2, "doc", 0.05)
    path = root / "run.html"
    path.write_text(render_run(now), encoding="utf-8")
    return path.as_uri()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        context = launch(p, tmp_path_factory.mktemp("chromium-profile"))
        yield context
        context.close()


@pytest.mark.parametrize("width", [1280, 390])
def test_gate_and_tie_blocks_read_at_desktop_and_phone_widths(page_url, browser, tmp_path, width):
    result = check_page(browser, page_url, tmp_path / f"run-{width}.png")
    page = result["page"]
    page.set_viewport_size({"width": width, "height": 1200})
    assert result["errors"] == []
    gate = page.locator("#gate")
    assert gate.is_visible()
    text = gate.inner_text()
    assert "CI gate: failed" in text and "exit code 4" in text
    assert "A (the setup baseline 20260101T000000Z-000001 gated)" in text
    assert "20260101T000000Z-000001 (the newest run that passed its gate on this golden file, corpus docs and " \
           "branch main)" in text
    assert "A finds 6 fewer of 10 questions than in 20260101T000000Z-000001" in text
    page.click("#gate-questions summary")  # the per-question differences open on a click
    lost = page.inner_text("#gate-questions")
    assert "q4, q5, q6, q7, q8" in lost and HOSTILE in lost  # the hostile id is shown as text
    assert page.evaluate("() => window.__pwned") is None
    tie = page.locator("#undecided")
    assert tie.is_visible() and "these questions cannot tell the setups apart" in tie.inner_text()
    for block in ("#gate", "#undecided"):  # nothing in the blocks is wider than the page
        overflow = page.evaluate(f"() => {{ const e = document.querySelector('{block}'); "
                                 "return e.scrollWidth - e.clientWidth; }")
        assert overflow <= 1, (block, width, overflow)
        box = page.locator(block).bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= width + 1, (block, width, box)


@pytest.mark.parametrize(("fastest_ms", "b_rank"), [(1.3, 2), (1.05, None)])
def test_the_log_wait_axis_keeps_its_ticks_off_the_corner(tmp_path, browser, fastest_ms, b_rank):
    """A setup waiting about 1 ms against one waiting 300 ms makes the wait axis logarithmic
    with a decade's tick near its left end (``core.reports.pages.plots.log_range`` keeps it
    off the corner, see tests/unit/reports/test_pages.py). No plot label overlaps or is
    clipped at 1,280 or 390 px."""
    ranks = {f"q{i}": {"A": 1, "B": b_rank if i else 1} for i in range(4)}  # MRR 1 against 0.625, 0.5 or 0.25
    report = retrieval_report(run_id="20260103T000000Z-000003", ranks=ranks)
    for setup, median in zip(report["setups"], (300.0, fastest_ms)):
        setup["timings_ms"] = {"median": median, "p95": median * 2, "mean": median, "n": 4}
    path = tmp_path / "run.html"
    path.write_text(render_run(report), encoding="utf-8")
    result = check_page(browser, path.as_uri(), tmp_path / "run.png")
    page = result["page"]
    assert result["errors"] == []
    assert "log scale" in page.content()
    problems = [f"{width} px: {p}" for width in (1280, 390) for p in layout_problems(page, [], width)]
    page.close()
    assert problems == []
