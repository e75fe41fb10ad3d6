"""The pages of ``evaluate-app`` runs and of two app versions compared, from real runs against the
scripted deployed app (real HTTP), loaded in headless Chromium (Debian's package, driven by
Playwright): no console error, the plots drawn with data, a screenshot that is not blank; an
answer holding ``<script>`` stays text."""

from __future__ import annotations

import json

import pytest

from core.evaluation.app import evaluate_app
from core.evaluation.app_config import AppConfig
from core.evaluation.app_report import compare_apps
from core.golden import read_golden
from core.reports.pages import render_report
from core.reports.pages.app_page import render_app_compare
from core.settings import AppSettings
from tests.support.app_server import AppResponse, DeployedApp, demo_reply
from tests.support.browser import check_page, launch

pytestmark = [pytest.mark.integration, pytest.mark.slow]

XSS = "<script>window.__pwned = 1</script> the answer"


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        context = launch(p, tmp_path_factory.mktemp("chromium-profile"))
        yield context
        context.close()


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("app-pages")
    golden_path = base / "golden.jsonl"
    rows = [{"id": f"q{i}", "question": f"question {i}?", "expected": [f"doc.pdf#page={i + 1}"],
             "reference": f"answer {i}"} for i in range(8)]
    golden_path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    golden = read_golden(golden_path)

    def version(shift):
        def respond(body, request):
            i = int(body["messages"][-1]["content"].split()[1].rstrip("?"))
            if i == 7:
                return AppResponse({"error": "boom"}, status=500)
            answer = XSS if i == 0 else f"answer {i}"
            return demo_reply(f"{answer} [doc.pdf#page={i + 1 + shift}]", [f"doc.pdf#page={i + 1}: answer {i}"])
        return respond

    config = AppConfig(citations_in_answer=r"\[([^\]]+)\]", contexts="context.data_points.text",
                       context_pattern=r"^(?P<document>[^#:]+)(?:#page=(?P<page>\d+))?: (?P<text>.*)$")
    reports = []
    for shift in (0, 1):
        with DeployedApp(version(shift)) as app:
            report = evaluate_app(golden, config.with_overrides(url=app.url),
                                  AppSettings(max_attempts=1, concurrency=2), retry_wait_s=0.01)
            report["run_id"] = f"20260101T00000{shift}Z-abcdef"
            reports.append(report)
    return reports


def _file_page(tmp_path, name, html):
    path = tmp_path / f"{name}.html"
    path.write_text(html, encoding="utf-8")
    return path.as_uri()


def test_the_app_page_renders(runs, browser, tmp_path):
    result = check_page(browser, _file_page(tmp_path, "app", render_report(runs[0])), tmp_path / "app.png")
    assert result["errors"] == []
    assert len(result["plots"]) == 2 - 1 and all(p["rendered"] == "1" and p["marks"] >= 1 for p in result["plots"])
    assert result["colours"] > 50 and result["ink"] > 0.05
    page = result["page"]
    assert page.locator("#app-questions tbody tr").count() == 8
    assert page.evaluate("() => window.__pwned") is None
    text = page.inner_text("body")
    assert "<script>window.__pwned = 1</script> the answer" in text
    assert "server error" in text and "1 failed" in text
    assert page.locator("#citation-metrics tbody tr").count() == 2 + 3  # citations: doc, page; contexts: 3 grains


def test_the_comparison_page_renders(runs, browser, tmp_path):
    html = render_app_compare(compare_apps(runs[0], runs[1]))
    result = check_page(browser, _file_page(tmp_path, "cmp", html), tmp_path / "cmp.png")
    assert result["errors"] == [] and all(p["rendered"] == "1" for p in result["plots"])
    text = result["page"].inner_text("body")
    # version 2 cites the page after the right one for the 7 answered questions: McNemar p = 2 / 2^7
    assert "0.0156" in text
