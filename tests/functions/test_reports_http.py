"""The report store's HTTP reads, over a local-folder store and an Azurite (Blob) store."""

from __future__ import annotations

import json

import azure.functions as func
import pytest

from core.golden.checks import check_key
from core.reports.store import REPORT_SCHEMA_VERSION
from tests.support.report_stores import configured_report_store

GOLDEN = b'{"question": "q", "expected": ["a.md"]}\n'
SHA = "ab" * 32
OLD, NEW = "20260101T000000Z-aaaaaa", "20260102T000000Z-bbbbbb"
CHECKED_NAMES = ("hr/golden.jsonl", "my golden ü.jsonl", "a//b.jsonl", "a/b.jsonl", "d/" + "x" * 1000 + ".jsonl")


@pytest.fixture(params=["local", "azurite"])
def store(request, clean_env, tmp_path):
    """A report store with two runs and one golden check, and the settings pointing at it."""
    store = configured_report_store(request.param, request, clean_env, tmp_path)
    for run_id in (OLD, NEW):
        store.save_run(run_id, {"schema_version": REPORT_SCHEMA_VERSION, "run_id": run_id,
                                "golden": {"sha256": SHA if run_id == NEW else "cd" * 32}})
    store.save_golden(SHA, GOLDEN)
    store.files.write_bytes("golden_checks/g.jsonl.json", json.dumps({"ok": True, "errors": []}).encode())
    for name in CHECKED_NAMES:
        store.files.write_bytes(check_key(name), json.dumps({"ok": False, "blob": name}).encode())
    return store


def _get(app_functions, name: str, url: str, route_params: dict | None = None, params: dict | None = None):
    req = func.HttpRequest("GET", url, body=b"", route_params=route_params or {}, params=params or {})
    return app_functions[name].get_user_function()(req)


def _body(resp):
    return json.loads(resp.get_body())


def test_list_runs_newest_first_with_paging(store, app_functions):
    resp = _get(app_functions, "list_runs", "/api/runs")
    assert resp.status_code == 200 and resp.mimetype == "application/json"
    assert _body(resp) == {"runs": [NEW, OLD], "limit": 20, "offset": 0}
    assert _body(_get(app_functions, "list_runs", "/api/runs", params={"limit": "1", "offset": "1"}))["runs"] == [OLD]
    for bad in ({"limit": "0"}, {"limit": "x"}, {"offset": "-1"}, {"limit": "501"}):
        resp = _get(app_functions, "list_runs", "/api/runs", params=bad)
        assert resp.status_code == 400 and "must be an integer" in _body(resp)["error"]
    for bad in ({"limit": "²"}, {"offset": "9" * 40}):
        assert _get(app_functions, "list_runs", "/api/runs", params=bad).status_code == 400


def test_latest_and_by_id(store, app_functions):
    assert _body(_get(app_functions, "latest_run", "/api/runs/latest"))["run_id"] == NEW
    assert _body(_get(app_functions, "get_run", f"/api/runs/{OLD}", {"run_id": OLD}))["run_id"] == OLD
    resp = _get(app_functions, "get_run", "/api/runs/nope", {"run_id": "20990101T000000Z-cccccc"})
    assert resp.status_code == 404 and "no run" in _body(resp)["error"]


@pytest.mark.parametrize("bad", ["..", "../x", "a/b", "a%2Fb", "a b", "", "x\\y", "é"])
def test_bad_ids_are_refused_before_the_store_is_read(store, app_functions, bad):
    for name, key in (("get_run", "run_id"), ("get_run_golden", "run_id")):
        resp = _get(app_functions, name, "/api/x", {key: bad})
        assert resp.status_code == 400, (name, bad)
        assert "Traceback" not in resp.get_body().decode()


@pytest.mark.parametrize("bad", ["..", "../x", "a/../b", "/a", "./a", "a/", "", "x\\y", "a\x00b", "a\nb", "x" * 1025])
def test_bad_golden_check_names_are_refused(store, app_functions, bad):
    resp = _get(app_functions, "get_golden_check", "/api/x", {"name": bad})
    assert resp.status_code == 400, bad
    assert "Traceback" not in resp.get_body().decode()


def test_run_golden(store, app_functions):
    resp = _get(app_functions, "get_run_golden", f"/api/runs/{NEW}/golden", {"run_id": NEW})
    assert resp.status_code == 200 and resp.get_body() == GOLDEN and resp.mimetype == "application/x-ndjson"
    missing = _get(app_functions, "get_run_golden", f"/api/runs/{OLD}/golden", {"run_id": OLD})
    assert missing.status_code == 404 and "not stored" in _body(missing)["error"]
    unknown = _get(app_functions, "get_run_golden", "/api/runs/x/golden", {"run_id": "x"})
    assert unknown.status_code == 404


def test_golden_checks(store, app_functions):
    assert _body(_get(app_functions, "get_golden_check", "/api/golden-checks/g.jsonl", {"name": "g.jsonl"})) == {
        "ok": True, "errors": []}
    resp = _get(app_functions, "get_golden_check", "/api/golden-checks/other.jsonl", {"name": "other.jsonl"})
    assert resp.status_code == 404
    # Blob names with folders, spaces and non-ASCII letters, as the blob trigger stores them.
    # "a//b.jsonl" and "a/b.jsonl" are one path in a folder store: each must still get its own check
    # (the body names the blob); a 1,006-character name is more than a file system's 255 bytes.
    for name in CHECKED_NAMES:
        resp = _get(app_functions, "get_golden_check", f"/api/golden-checks/{name}", {"name": name})
        assert resp.status_code == 200 and _body(resp) == {"ok": False, "blob": name}
    assert _get(app_functions, "get_golden_check", "/api/x", {"name": "hr/other.jsonl"}).status_code == 404


def test_empty_store_and_broken_report(clean_env, tmp_path, app_functions):
    clean_env.setenv("RAGTUNE_REPORTS", str(tmp_path))
    resp = _get(app_functions, "latest_run", "/api/runs/latest")
    assert resp.status_code == 404 and _body(resp) == {"error": "no run is stored yet"}
    assert _body(_get(app_functions, "list_runs", "/api/runs"))["runs"] == []
    (tmp_path / "retrieval/runs/r1").mkdir(parents=True)
    (tmp_path / "retrieval/runs/r1/report.json").write_text("{not json")
    resp = _get(app_functions, "get_run", "/api/runs/r1", {"run_id": "r1"})
    assert resp.status_code == 500
    body = resp.get_body().decode()
    assert "not a valid report" in _body(resp)["error"] and "Traceback" not in body


def test_bad_settings_answer_500_without_a_trace(clean_env, app_functions):
    clean_env.setenv("RAGTUNE_REPORTS", "ftp://x/y")
    resp = _get(app_functions, "list_runs", "/api/runs")
    assert resp.status_code == 500 and "not configured correctly" in _body(resp)["error"]


# Experiments ---------------------------------------------------------------------------------------
def test_experiment_report_so_far_then_final(app_functions, clean_env, tmp_path):
    from core.reports import LocalFiles

    clean_env.setenv("RAGTUNE_REPORTS", str(tmp_path))
    get = app_functions["get_experiment"].get_user_function()

    def call(experiment_id):
        resp = get(func.HttpRequest("GET", f"/api/experiments/{experiment_id}", body=b"",
                                    route_params={"experiment_id": experiment_id}))
        return resp.status_code, json.loads(resp.get_body())

    assert call("nope")[0] == 404
    assert call("..")[0] == 400 and call("a b")[0] == 400
    experiment = _prepared_experiment(LocalFiles(tmp_path))
    (configuration,) = experiment.ask(1)
    experiment.evaluate(experiment.evaluation_request(configuration),
                        lambda c: {"status": "ok", "metrics": {"mrr": 0.5}, "timings": {"total_s": 1.0}})
    experiment.tell([configuration.key])
    (second,) = experiment.ask(1)
    status, body = call("exp-1")
    assert status == 200 and body["complete"] is False
    assert body["counts"] == {"evaluations": 1, "failed": 0, "stored": 0, "pending": 1}
    assert body["best"]["score"] == 0.5 and body["leaderboard"][0]["score"] == 0.5
    experiment.tell([second.key], missing="timed out")
    experiment.write_report()
    status, body = call("exp-1")
    assert status == 200 and body["complete"] is True and body["counts"]["failed"] == 1


def _prepared_experiment(files):
    """An experiment stored by hand: its spec and a two-configuration random study."""
    from core.experiment import Experiment, ExperimentSpec
    from core.optimization import Study
    from core.optimization.space import default_space

    space = default_space({"m": 256}, ["extractive"]).with_overrides(
        {"chunking_method": ("recursive",), "chunk_size": (256,), "chunk_overlap": (0,), "search_mode": ("vector",),
         "number_of_chunks": (3, 5)}, source="test")
    spec = ExperimentSpec(experiment_id="exp-1", golden="g.jsonl", documents="docs", objective="mrr",
                          optimizer="random", max_evals=2, golden_sha256="0" * 64)
    return Experiment.create(files, spec, Study(space, spec.sampler(), "mrr", 0, max_evals=2))


def test_experiment_status_through_the_durable_client(app_functions):
    import asyncio

    from tests.support.durable import RecordingClient, user_function

    status_fn = user_function(app_functions, "get_experiment_status")
    client = RecordingClient()

    def call(experiment_id):
        req = func.HttpRequest("GET", f"/api/experiments/{experiment_id}/status", body=b"",
                               route_params={"experiment_id": experiment_id})
        resp = asyncio.run(status_fn(req, client))
        return resp.status_code, json.loads(resp.get_body())

    assert call("exp-9")[0] == 404
    assert call("../x")[0] == 400
    asyncio.run(client.start_new("experiment_orchestrator", "exp-9", {}))
    status, body = call("exp-9")
    assert status == 200
    assert body == {"instance_id": "exp-9", "runtime_status": "Running", "custom_status": {"phase": "evaluating"},
                    "created_time": "2026-01-01T00:00:00+00:00", "last_updated_time": "2026-01-01T00:05:00+00:00",
                    "output": None}
