"""No route's error body names where the app keeps things: every HTTP function is called while
its store fails (Azurite refusing a wrong account key, a local report store whose files cannot
be read, an empty one) and each answer of 400 or more is read for a path or URL of the store.
The detail still reaches the log."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os

import azure.functions as func
import pytest

from tests.support.durable import RecordingClient, Status, user_function

#: (function, method, url, route params, body): one request per HTTP route of the app.
ROUTES = [
    ("list_runs", "GET", "/api/runs", {}, b""),
    ("latest_run", "GET", "/api/runs/latest", {}, b""),
    ("get_run", "GET", "/api/runs/r1", {"run_id": "r1"}, b""),
    ("get_run_golden", "GET", "/api/runs/r1/golden", {"run_id": "r1"}, b""),
    ("get_golden_check", "GET", "/api/golden-checks/hr/g.jsonl", {"name": "hr/g.jsonl"}, b""),
    ("run_page", "GET", "/api/runs/latest/page", {"run_id": "latest"}, b""),
    ("run_page", "GET", "/api/runs/r1/page", {"run_id": "r1"}, b""),
    ("experiment_page", "GET", "/api/experiments/e1/page", {"experiment_id": "e1"}, b""),
    ("history_page", "GET", "/api/history/page?golden=abc", {}, b""),
    ("get_experiment", "GET", "/api/experiments/e1", {"experiment_id": "e1"}, b""),
    ("get_experiment_status", "GET", "/api/experiments/e1/status", {"experiment_id": "e1"}, b""),
    ("get_target_evaluation_status", "GET", "/api/evaluations/e1/status", {"run_id": "e1"}, b""),
    ("resume_experiment", "POST", "/api/experiments/e1/resume", {"experiment_id": "e1"}, b""),
    ("start_experiment", "POST", "/api/experiments", {},
     json.dumps({"golden": "s3://bucket/g.jsonl", "documents": "s3://bucket/docs"}).encode()),
    ("golden_template_http", "POST", "/api/golden/template", {}, None),
    ("golden_suggest_http", "POST", "/api/golden/suggest", {}, None),
    ("check_golden_http", "POST", "/api/golden/check", {}, b'{"question": "q", "expeted": ["a"]}\n'),
    ("health", "GET", "/api/health", {}, b""),
]


class FailedClient(RecordingClient):
    """A Durable client whose orchestration e1 failed in an activity with a store error, as
    the extension reports it (the failure's text in the output, the status the orchestrator
    set)."""

    def __init__(self, failure: str) -> None:
        super().__init__()
        self.failed.add("e1")
        self.failure = failure

    async def get_status(self, instance_id, *args, **kw):
        from azure.durable_functions.models.OrchestrationRuntimeStatus import OrchestrationRuntimeStatus

        if instance_id != "e1":
            return await super().get_status(instance_id)
        return Status(OrchestrationRuntimeStatus.Failed, {"phase": "failed", "step": "ask_configurations",
                                                         "error": self.failure}, self.failure)


def _call(app_functions, name, method, url, params, body, client):
    fn = user_function(app_functions, name)
    req = func.HttpRequest(method, url, body=body or b"", route_params=params,
                           params=dict(p.split("=", 1) for p in url.partition("?")[2].split("&") if p))
    out = fn(req, client) if "client" in fn.__code__.co_varnames[:fn.__code__.co_argcount] else fn(req)
    resp = asyncio.run(out) if asyncio.iscoroutine(out) else out
    return resp.status_code, resp.get_body().decode("utf-8")


def _answers(app_functions, golden_body, failure):
    answers = []
    for name, method, url, params, body in ROUTES:
        body = json.dumps(golden_body).encode() if body is None else body
        status, text = _call(app_functions, name, method, url, params, body, FailedClient(failure))
        answers.append((name, url, status, text))
    return answers


def _leaks(answers, places):
    return [(name, url, status, text) for name, url, status, text in answers
            if status >= 400 and any(p.lower() in text.lower() for p in places)]


@pytest.fixture
def wrong_key(azurite, blob_endpoint, new_container, clean_env):
    """The app's storage connection with a wrong account key: Azurite answers every request
    with 403 AuthorizationFailure, which the stores report with the blob's URL."""
    key = base64.b64encode(b"not the account key" * 3).decode()
    connection = ";".join(f"AccountKey={key}" if part.startswith("AccountKey=") else part
                          for part in azurite.split(";"))
    golden, documents, reports = new_container(), new_container(), new_container()
    clean_env.setenv("RAGTUNE_STORAGE_CONNECTION", connection)
    clean_env.setenv("RAGTUNE_REPORTS", f"{blob_endpoint}/{reports}/team")
    clean_env.setenv("RAGTUNE_GOLDEN_CONTAINER", golden)
    clean_env.setenv("RAGTUNE_DOCUMENTS_CONTAINER", documents)
    return {"documents": f"{blob_endpoint}/{documents}/hr", "golden": f"{blob_endpoint}/{golden}/hr/g.jsonl"}


def test_no_error_body_names_a_blob_url_of_the_store(app_functions, wrong_key, blob_endpoint, caplog):
    failure = (f"Activity function 'ask_configurations' failed: StoreError: cannot read "
               f"{blob_endpoint}/reports/experiments/e1/study.json: AuthorizationFailure: Server failed")
    with caplog.at_level(logging.ERROR):
        answers = _answers(app_functions, wrong_key, failure)
    assert _leaks(answers, [blob_endpoint, "127.0.0.1", "devstoreaccount1", "http://", "https://"]) == []
    failed = {name: (status, text) for name, _, status, text in answers if status >= 500 or status == 422}
    # the store was reached and refused: the answers say what failed and the service's reason
    status, text = failed["list_runs"]
    assert status == 500 and json.loads(text)["error"].startswith(
        "the report store could not be read: StoreError: cannot list the report store: ")
    assert "Server failed to authenticate the request" in text
    assert "the report store could not be read: StoreError: cannot check the report store: " \
        in failed["get_golden_check"][1]
    assert json.loads(failed["golden_template_http"][1])["errors"][0].startswith(
        "the template could not be made: ")
    assert "Server failed to authenticate" in failed["golden_suggest_http"][1]
    assert {"get_experiment", "resume_experiment", "start_experiment", "run_page"} <= set(failed)
    shown = ("Activity function 'ask_configurations' failed: StoreError: cannot read <location>: "
             "AuthorizationFailure: Server failed")
    for route in ("get_experiment_status", "get_target_evaluation_status"):
        status = json.loads(next(text for name, _, _, text in answers if name == route))
        assert status["output"] == shown and status["custom_status"]["error"] == shown, route
    # the log keeps the detail: which blob, and the service's reason
    assert any(blob_endpoint in r.getMessage() and "Server failed to authenticate" in r.getMessage()
               for r in caplog.records)


@pytest.mark.parametrize("broken", ["empty", "unreadable"])
def test_no_error_body_names_a_local_store_path(app_functions, clean_env, tmp_path, broken):
    """A local report store, empty (the newest run's page is a 404) or with files that cannot
    be read (a symbolic link to itself where the stored run, check and experiment are)."""
    reports = tmp_path / "secret-reports"
    reports.mkdir()
    if broken == "unreadable":
        for key in ("runs/r1/report.json", "golden_checks/hr/g.jsonl.json", "experiments/e1/report.json",
                    "experiments/e1/spec.json", "experiments/e1/study.json", "experiments/e1/request.json"):
            path = reports / key
            path.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(path, path)  # reading it fails: too many levels of symbolic links
    clean_env.setenv("RAGTUNE_REPORTS", str(reports))
    clean_env.setenv("RAGTUNE_OUT_DIR", str(tmp_path / "out"))
    failure = f"Activity function 'tell_results' failed: StoreError: cannot write {reports}/experiments/e1/study.json"
    answers = _answers(app_functions, {"documents": "s3://b/d", "golden": "s3://b/g.jsonl"}, failure)
    assert _leaks(answers, [str(reports), str(tmp_path), "secret-reports"]) == []
    statuses = {(name, url): status for name, url, status, _ in answers}
    assert statuses[("run_page", "/api/runs/latest/page")] == 404
    if broken == "unreadable":
        assert statuses[("get_experiment", "/api/experiments/e1")] == 500
        page = next(text for name, url, _, text in answers if url == "/api/experiments/e1/page")
        assert "could not be read" in page or "no experiment" in page
