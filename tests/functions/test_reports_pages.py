"""The pages the Functions app serves, over a local-folder store and an Azurite (Blob) store:
HTML with the CSP, the same id rules as the JSON routes, 404 for what is not stored."""

from __future__ import annotations

import json
import re

import azure.functions as func
import pytest

from core.reports.pages import PAGE_CSP
from tests.support.report_stores import configured_report_store
from tests.support.reports import experiment_report, retrieval_report

RUN = "20260101T000000Z-aaaaaa"


@pytest.fixture(params=["local", "azurite"])
def store(request, clean_env, tmp_path):
    store = configured_report_store(request.param, request, clean_env, tmp_path)
    report = retrieval_report(RUN)
    report["questions"][0]["question"] = "<script>alert(1)</script>"
    store.save_run(RUN, report)
    store.files.write_bytes("experiments/e1/report.json", json.dumps(experiment_report("e1")).encode())
    return store


def _get(app_functions, name, route_params=None, params=None):
    req = func.HttpRequest("GET", "/api/x", body=b"", route_params=route_params or {}, params=params or {})
    return app_functions[name].get_user_function()(req)


def _is_page(resp, status=200):
    assert resp.status_code == status
    assert resp.headers["Content-Type"] == "text/html; charset=utf-8"
    assert (resp.mimetype, resp.charset) == ("text/html", "utf-8")
    assert resp.headers["Content-Security-Policy"].startswith(PAGE_CSP)
    return resp.get_body().decode("utf-8")


def test_run_page(store, app_functions):
    html = _is_page(_get(app_functions, "run_page", {"run_id": RUN}))
    assert f"Evaluate run {RUN}" in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<script>alert(1)" not in html
    assert f'href="/api/history/page?golden={"ab" * 32}"' in html
    assert f"Evaluate run {RUN}" in _is_page(_get(app_functions, "run_page", {"run_id": "latest"}))
    assert "no run" in _is_page(_get(app_functions, "run_page", {"run_id": "20990101T000000Z-000000"}), 404)
    bad = _get(app_functions, "run_page", {"run_id": "../x"})
    assert bad.status_code == 400


def test_experiment_page(store, app_functions):
    assert "Experiment e1" in _is_page(_get(app_functions, "experiment_page", {"experiment_id": "e1"}))
    _is_page(_get(app_functions, "experiment_page", {"experiment_id": "e2"}), 404)
    assert _get(app_functions, "experiment_page", {"experiment_id": "a/b"}).status_code == 400


def test_history_page(store, app_functions):
    html = _is_page(_get(app_functions, "history_page", params={"golden": "ab" * 32}))
    assert f'href="/api/runs/{RUN}/page"' in html
    assert "No stored run" in _is_page(_get(app_functions, "history_page", params={"golden": "cd" * 32}))
    assert _get(app_functions, "history_page").status_code == 400
    assert _get(app_functions, "history_page", params={"golden": "a\nb"}).status_code == 400


def test_links_keep_the_function_key_escaped(store, app_functions):
    """A page fetched with ``?code=K`` links to the other pages with ``code=K``; ``K`` is
    URL-encoded by hand here ('/' %2F, '+' %2B, '=' %3D, '&' %26, '"' %22) and the '&' between
    parameters is HTML-escaped; without a key the links carry none."""
    key = 'k/1+2=3&x"'
    encoded = "k%2F1%2B2%3D3%26x%22"
    run = _is_page(_get(app_functions, "run_page", {"run_id": RUN}, {"code": key}))
    assert f'href="/api/history/page?golden={"ab" * 32}&amp;code={encoded}"' in run
    assert key not in run
    history = _is_page(_get(app_functions, "history_page", params={"golden": "ab" * 32, "code": key}))
    assert f'href="/api/runs/{RUN}/page?code={encoded}"' in history
    plain = _is_page(_get(app_functions, "history_page", params={"golden": "ab" * 32}))
    assert f'href="/api/runs/{RUN}/page"' in plain and not [h for h in _hrefs(plain) if "code=" in h]
    empty = _is_page(_get(app_functions, "run_page", {"run_id": RUN}, {"code": ""}))
    assert _hrefs(empty) and not [h for h in _hrefs(empty) if "code=" in h]


def _hrefs(html):
    return re.findall(r'href="([^"]*)"', html)


def test_the_page_routes_are_indexed_with_function_auth(app_functions):
    for name, route in (("run_page", "runs/{run_id}/page"), ("experiment_page", "experiments/{experiment_id}/page"),
                        ("history_page", "history/page")):
        trigger = [b for b in app_functions[name].get_bindings() if b.type == "httpTrigger"][0]
        assert trigger.route == route and str(trigger.auth_level).lower().endswith("function")


def test_pages_share_the_anonymous_plotly_asset(store, app_functions):
    """The Functions' pages reference /api/assets/<name> (the same asset ``ragtune serve``
    gives) with its integrity hash; the asset route answers without a key, with a year's
    cache, 304 for its ETag, 404 for any other name; the links keep their key, the asset
    does not need one."""
    from core.reports.pages.render import plotly_asset

    asset = plotly_asset()
    html = _is_page(_get(app_functions, "run_page", {"run_id": RUN}, {"code": "k"}))
    assert f'<script src="/api/assets/{asset.name}" integrity="{asset.integrity}"></script>' in html
    assert len(html.encode()) < 100_000 < len(asset.body)
    trigger = [b for b in app_functions["page_asset"].get_bindings() if b.type == "httpTrigger"][0]
    assert trigger.route == "assets/{name}" and str(trigger.auth_level).lower().endswith("anonymous")
    resp = _get(app_functions, "page_asset", {"name": asset.name})
    assert resp.status_code == 200 and resp.get_body() == asset.body
    assert resp.headers["Cache-Control"] == "public, max-age=31536000, immutable"
    assert resp.headers["Content-Type"] == "text/javascript; charset=utf-8"
    req = func.HttpRequest("GET", "/api/x", body=b"", route_params={"name": asset.name},
                           headers={"If-None-Match": asset.etag})
    assert app_functions["page_asset"].get_user_function()(req).status_code == 304
    assert _get(app_functions, "page_asset", {"name": "plotly.min.js"}).status_code == 404
