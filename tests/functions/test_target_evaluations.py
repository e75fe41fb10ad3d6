"""Evaluations over targets through the Functions: the starter's checks (targets by configured
name only: no address, DSN or URL from a request), the orchestrator run by the SDK's replay
engine, and the activity over a real local report store and a Qdrant collection (local mode)
configured in ``RAGTUNE_TARGETS``, its report then served by the runs' routes."""

from __future__ import annotations

import asyncio
import json

import azure.functions as func
import pytest

from tests.support.durable import RecordingClient, ReplayHost, user_function

RUN_ID = "20260101T000000Z-abcdef"


def _start(app_functions, body: bytes):
    client = RecordingClient()
    starter = user_function(app_functions, "start_target_evaluation")
    resp = asyncio.run(starter(func.HttpRequest("POST", "https://app.example/api/evaluations?code=SECRET",
                                                body=body), client))
    return resp, client


def _configure(env, tmp_path, targets: str) -> None:
    env.setenv("RAGTUNE_REPORTS", str(tmp_path / "reports"))
    env.setenv("RAGTUNE_OUT_DIR", str(tmp_path / "work"))
    env.setenv("RAGTUNE_TARGETS", targets)
    env.setenv("RAGTUNE_RERANK_PROVIDER", "none")


TARGETS = ("targets:\n"
           "  - {name: prod, kind: qdrant, path: /nowhere, collection: docs}\n"
           "  - {name: team, kind: pgvector, dsn: 'postgresql://u:s3cret@127.0.0.1:1/x', table: t}\n")


def test_the_starter_keeps_the_request_and_starts_the_orchestration(app_functions, clean_env, tmp_path):
    _configure(clean_env, tmp_path, TARGETS)
    resp, client = _start(app_functions, json.dumps({"golden": "s3://bucket/g.jsonl", "targets": ["prod", "team"],
                                                     "skip": ["*+rerank"]}).encode())
    assert resp.status_code == 202, resp.get_body()
    ((name, instance_id, payload),) = client.started
    assert name == "target_evaluation_orchestrator" and payload == {"run_id": instance_id}
    body = json.loads(resp.get_body())
    assert body == {"id": instance_id, "status_url": f"https://app.example/api/evaluations/{instance_id}/status",
                    "report_url": f"https://app.example/api/runs/{instance_id}",
                    "page_url": f"https://app.example/api/runs/{instance_id}/page"}
    stored = json.loads((tmp_path / "reports" / "evaluations" / instance_id / "request.json").read_text())
    assert stored == {"golden": "s3://bucket/g.jsonl", "targets": ["prod", "team"], "only": [], "skip": ["*+rerank"],
                      "rank_by": None}


@pytest.mark.parametrize("body, message", [
    ({"golden": "s3://b/g", "targets": ["pgvector:postgresql://attacker:pw@10.0.0.5/db#t"]},
     "never given as an address, DSN or --target form"),
    ({"golden": "s3://b/g", "targets": ["https://169.254.169.254/latest"]}, "never given as an address"),
    ({"golden": "s3://b/g", "targets": ["azure-search:idx"]}, "never given as an address"),
    ({"golden": "s3://b/g", "targets": ["nope"]}, "unknown target 'nope' (configured: prod, team)"),
    ({"golden": "s3://b/g", "targets": []}, "'targets' is required"),
    ({"golden": "/etc/passwd", "targets": ["prod"]}, "local paths are not accepted here"),
    ({"golden": "s3://b/g", "targets": ["prod"], "endpoint": "https://x"}, "unknown field 'endpoint'"),
    ({"golden": "s3://b/g", "targets": ["prod"], "rank_by": "chunk"}, "'rank_by' must be one of"),
    ({"golden": "s3://b/g", "targets": ["prod"], "only": "prod/*"}, "'only' must be a list"),
])
def test_the_starter_refuses_addresses_and_bad_bodies(app_functions, clean_env, tmp_path, body, message):
    _configure(clean_env, tmp_path, TARGETS)
    resp, client = _start(app_functions, json.dumps(body).encode())
    assert resp.status_code == 400 and client.started == []
    errors = json.loads(resp.get_body())["errors"]
    assert any(message in e for e in errors), errors


def test_invalid_configured_targets_are_a_settings_error(app_functions, clean_env, tmp_path):
    _configure(clean_env, tmp_path, "- {name: x, kind: elastic}\n")
    resp, _ = _start(app_functions, json.dumps({"golden": "s3://b/g", "targets": ["x"]}).encode())
    assert resp.status_code == 500
    assert "RAGTUNE_TARGETS:1: kind must be one of" in json.loads(resp.get_body())["errors"][0]


@pytest.mark.parametrize("result, statuses", [
    ({"run_id": RUN_ID, "status": "done", "report": "retrieval/runs/x/report.json"},
     [{"phase": "evaluating"}, {"phase": "done"}]),
    ({"run_id": RUN_ID, "status": "failed", "error": "GoldenError: no file"},
     [{"phase": "evaluating"}, {"phase": "failed", "error": "GoldenError: no file"}]),
])
def test_the_orchestrator_runs_the_one_activity(app_functions, result, statuses):
    orchestrator = app_functions["target_evaluation_orchestrator"].get_user_function().orchestrator_function
    calls = []
    host = ReplayHost(orchestrator, {"evaluate_target_request": lambda ref: (calls.append(ref), result)[1]},
                      lambda name: None, instance_id=RUN_ID)
    assert host.run({"run_id": RUN_ID}) == ("completed", result)
    assert calls == [{"run_id": RUN_ID}] and host.statuses == statuses


@pytest.mark.integration
@pytest.mark.slow
def test_the_activity_runs_the_request_and_the_report_is_served_like_the_others(app_functions, clean_env, tmp_path,
                                                                                squad_dir):
    from qdrant_client import QdrantClient, models

    from core.chunking import get_chunker
    from core.documents import load_documents
    from core.models.local import local_embedding_model

    docs = [p for p in sorted((squad_dir / "docs").iterdir()) if p.name in ("Normans_p00.txt", "Normans_p01.txt")]
    chunks = get_chunker("recursive", 256, 32).chunk(load_documents(docs[0].parent).documents)
    chunks = [c for c in chunks if c.document_id in {p.name for p in docs}]
    model = local_embedding_model()
    vectors = model.embed_documents([c.text for c in chunks])
    folder = tmp_path / "qdrant"
    client = QdrantClient(path=str(folder))
    client.create_collection("docs", vectors_config=models.VectorParams(size=384, distance=models.Distance.COSINE))
    client.upsert("docs", [models.PointStruct(id=i, vector=[float(x) for x in v],
                                              payload={"text": c.text, "source": c.document_id})
                           for i, (c, v) in enumerate(zip(chunks, vectors))])
    client.close()
    golden = tmp_path / "golden.jsonl"
    golden.write_text("\n".join((squad_dir / "golden.jsonl").read_text(encoding="utf-8").splitlines()[:3]) + "\n",
                      encoding="utf-8")
    _configure(clean_env, tmp_path, TARGETS.replace("/nowhere", str(folder)))
    from core.experiment.target_requests import TargetEvaluationRequest, store_request
    from core.reports import LocalFiles

    files = LocalFiles(tmp_path / "reports")
    # the starter checked the request; the activity trusts what is stored (a local golden file here)
    store_request(files, RUN_ID, TargetEvaluationRequest(str(golden), ("prod", "team")))
    result = app_functions["evaluate_target_request"].get_user_function()({"run_id": RUN_ID})
    assert result == {"run_id": RUN_ID, "status": "done", "report": f"retrieval/runs/{RUN_ID}/report.json"}
    get_run = app_functions["get_run"].get_user_function()
    resp = get_run(func.HttpRequest("GET", f"/api/runs/{RUN_ID}", body=b"", route_params={"run_id": RUN_ID}))
    report = json.loads(resp.get_body())
    assert resp.status_code == 200 and [t["status"] for t in report["targets"]] == ["ok", "failed"]
    assert [s["name"] for s in report["setups"]] == ["prod/dense"]
    assert "s3cret" not in resp.get_body().decode()
    page = app_functions["run_page"].get_user_function()(
        func.HttpRequest("GET", f"/api/runs/{RUN_ID}/page", body=b"", route_params={"run_id": RUN_ID}))
    assert page.status_code == 200 and "Targets side by side" in page.get_body().decode()
    # a request that cannot run is recorded as failed, with no report
    store_request(files, "20260101T000000Z-fa11ed", TargetEvaluationRequest(str(tmp_path / "nope.jsonl"), ("prod",)))
    failed = app_functions["evaluate_target_request"].get_user_function()({"run_id": "20260101T000000Z-fa11ed"})
    assert failed["status"] == "failed" and failed["error"].startswith("GoldenError")
    assert json.loads(files.read_bytes("evaluations/20260101T000000Z-fa11ed/failed.json"))["status"] == "failed"
    assert not files.exists("retrieval/runs/20260101T000000Z-fa11ed/report.json")


def test_the_status_route(app_functions):
    status = user_function(app_functions, "get_target_evaluation_status")
    client = RecordingClient()
    client.started.append(("target_evaluation_orchestrator", RUN_ID, {"run_id": RUN_ID}))
    resp = asyncio.run(status(func.HttpRequest("GET", "/x", body=b"", route_params={"run_id": RUN_ID}), client))
    assert resp.status_code == 200
    assert json.loads(resp.get_body())["runtime_status"] == "Running"
    resp = asyncio.run(status(func.HttpRequest("GET", "/x", body=b"", route_params={"run_id": "nope-1"}), client))
    assert resp.status_code == 404
    resp = asyncio.run(status(func.HttpRequest("GET", "/x", body=b"", route_params={"run_id": "../x"}), client))
    assert resp.status_code == 400


def test_the_orchestrator_retries_a_storage_error_and_says_when_every_try_failed(app_functions):
    from core.errors import StoreError
    from core.experiment.orchestration import ACTIVITY_FIRST_RETRY_MS, ACTIVITY_MAX_ATTEMPTS

    orchestrator = app_functions["target_evaluation_orchestrator"].get_user_function().orchestrator_function
    done = {"run_id": RUN_ID, "status": "done", "report": "retrieval/runs/x/report.json"}
    tries = []

    def flaky(ref):  # the store answers 503 twice, then the run is made
        tries.append(ref)
        if len(tries) <= 2:
            raise StoreError("cannot read http://127.0.0.1:10000/devstoreaccount1/reports/x: 503 Server Busy")
        return done

    host = ReplayHost(orchestrator, {"evaluate_target_request": flaky}, lambda name: None, instance_id=RUN_ID)
    assert host.run({"run_id": RUN_ID}) == ("completed", done)
    assert len(tries) == 3 and host.statuses[-1] == {"phase": "done"}
    assert host.retry_options == [{"firstRetryIntervalInMilliseconds": ACTIVITY_FIRST_RETRY_MS,
                                   "maxNumberOfAttempts": ACTIVITY_MAX_ATTEMPTS}]

    def down(ref):
        raise StoreError("cannot read http://127.0.0.1:10000/devstoreaccount1/reports/x: 503 Server Busy")

    host = ReplayHost(orchestrator, {"evaluate_target_request": down}, lambda name: None, instance_id=RUN_ID)
    status, error = host.run({"run_id": RUN_ID})
    assert status == "failed" and host.activity_calls.count("evaluate_target_request") == ACTIVITY_MAX_ATTEMPTS
    last = host.statuses[-1]
    assert (last["phase"], last["step"]) == ("failed", "evaluate_target_request")
    assert last["error"].startswith(f"evaluate_target_request failed on each of its {ACTIVITY_MAX_ATTEMPTS} tries: ")
    assert "127.0.0.1" not in last["error"] and "503 Server Busy" in last["error"]
