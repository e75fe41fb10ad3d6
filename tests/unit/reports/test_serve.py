"""The serve app's routes and answers, called in process (the real server is started in
tests/integration/test_pages_browser.py)."""

import json

import pytest
from starlette.testclient import TestClient

from core.reports import LocalFiles, ReportStore
from core.reports.pages import PAGE_CSP
from core.reports.pages.render import plotly_js
from core.reports.serve import create_app
from tests.support.reports import experiment_report, retrieval_report


@pytest.fixture
def client(tmp_path):
    store = ReportStore(LocalFiles(tmp_path))
    store.save_run("20260101T000000Z-aaaaaa", retrieval_report("20260101T000000Z-aaaaaa"))
    store.files.write_bytes("experiments/e1/report.json", json.dumps(experiment_report("e1")).encode())
    store.files.write_bytes("chunking/runs/c1/report.json", json.dumps(
        {"run_id": "c1", "techniques": [{"name": "recursive", "found@10": 0.8, "tied_with_best": True},
                                        {"name": "fixed", "found@10": 0.6}]}).encode())
    return TestClient(create_app(store, where=str(tmp_path)))


@pytest.mark.parametrize("path", ["/", "/runs/latest", "/runs/20260101T000000Z-aaaaaa", "/experiments/e1",
                                  "/chunking/runs/c1", "/history?golden=" + "ab" * 32,
                                  "/compare?a=20260101T000000Z-aaaaaa&b=20260101T000000Z-aaaaaa"])
def test_pages_answer_html_with_the_csp(client, path):
    response = client.get(path)
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert response.headers["content-security-policy"].startswith(PAGE_CSP)
    assert response.headers["x-content-type-options"] == "nosniff"


def test_chunking_page_marks_ties(client):
    html = client.get("/chunking/runs/c1").text
    assert "tied with best" in html and "recursive" in html


@pytest.mark.parametrize("path,status", [
    ("/runs/20990101T000000Z-000000", 404), ("/experiments/nope", 404), ("/chunking/runs/nope", 404),
    ("/chunking/other/c1", 404), ("/runs/bad%20id", 400), ("/history", 400), ("/compare?a=x", 400),
])
def test_errors_are_short_pages(client, path, status):
    response = client.get(path)
    assert response.status_code == status
    assert "Traceback" not in response.text and response.headers["content-security-policy"].startswith(PAGE_CSP)
    # an error page draws no plot, so it goes without the plotting library's bundle
    assert len(response.content) < 50_000


def test_served_pages_share_one_plotly_asset(client):
    """Served pages reference one copy of plotly.js instead of inlining it (several MB each):
    the asset is the plotly package's own file, named by its sha256 and given with its SRI
    hash (recomputed here with hashlib), served with a year's immutable cache, an ETag that
    a revalidation gets a 304 for, and no other name served."""
    import base64
    import hashlib
    import re

    from core.reports.pages.render import _bundle_path

    body = open(_bundle_path(), "rb").read()
    name = f"plotly-{hashlib.sha256(body).hexdigest()[:16]}.min.js"
    integrity = "sha384-" + base64.b64encode(hashlib.sha384(body).digest()).decode()
    assert len(client.get("/").content) < 50_000
    for path in ("/runs/latest", "/experiments/e1", "/chunking/runs/c1", "/history?golden=" + "ab" * 32):
        page = client.get(path)
        assert len(page.content) < 100_000 < len(plotly_js()), path  # the page alone, not the bundle
        assert re.findall(r'<script src="([^"]+)" integrity="([^"]+)">', page.text) == [(f"/assets/{name}", integrity)]
    asset = client.get(f"/assets/{name}")
    assert asset.status_code == 200 and asset.content == body
    assert asset.headers["cache-control"] == "public, max-age=31536000, immutable"
    assert asset.headers["content-type"] == "text/javascript; charset=utf-8"
    assert asset.headers["etag"] == f'"{hashlib.sha256(body).hexdigest()}"'
    again = client.get(f"/assets/{name}", headers={"If-None-Match": asset.headers["etag"]})
    assert again.status_code == 304 and again.content == b""
    for other in ("plotly.min.js", "plotly-0000000000000000.min.js", "..%2Freport.json"):
        assert client.get(f"/assets/{other}").status_code == 404


def test_report_json(client):
    assert client.get("/runs/latest/report.json").json()["run_id"] == "20260101T000000Z-aaaaaa"


def test_a_stored_sweep_is_listed_and_has_its_page(tmp_path):
    from core.evaluation.sweep import save_sweep

    store = ReportStore(LocalFiles(tmp_path))
    # where `ragtune sweep` saves it: sweep/runs/<id>/report.json
    key = save_sweep(tmp_path, {"rows": [{"key": "fixed-64-8-plain", "method": "fixed", "ndcg@10": 0.75}]},
                     run_id="20260102T000000Z-bbbbbb")
    assert key == "sweep/runs/20260102T000000Z-bbbbbb/report.json"
    client = TestClient(create_app(store, where=str(tmp_path)))
    assert "/chunking/sweeps/20260102T000000Z-bbbbbb" in client.get("/").text
    page = client.get("/chunking/sweeps/20260102T000000Z-bbbbbb")
    assert page.status_code == 200 and "fixed" in page.text
