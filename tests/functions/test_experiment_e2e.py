"""Experiments through the Functions, end to end against Azurite: the HTTP starter's payload,
the orchestrator run by the SDK's replay engine, every activity run for real,
each evaluation taken off a real Azurite queue by the queue trigger, state and reports in Azurite
Blob storage.

The Durable host does not run here: ``tests.support.durable.ReplayHost`` answers activities by
calling the activity functions, and an external event the orchestrator waits for is produced by
taking the next messages off the queue and running the queue trigger.
"""

from __future__ import annotations

import asyncio
import base64
import json
import uuid

import azure.functions as func
import pytest
from azure.storage.blob import BlobServiceClient
from azure.storage.queue import QueueClient

from tests.support.durable import RecordingClient, ReplayHost, user_function

pytestmark = [pytest.mark.integration]


class Host:
    """Runs the experiment's functions the way the host would, against Azurite."""

    def __init__(self, app_functions: dict, azurite: str, queue: str):
        self.app_functions = app_functions
        self.queue = QueueClient.from_connection_string(azurite, queue)
        self.client = RecordingClient()
        self.delivered = 0

    def start(self, body: dict) -> dict:
        """POST /api/experiments; returns the orchestrator's input."""
        starter = user_function(self.app_functions, "start_experiment")
        resp = asyncio.run(starter(func.HttpRequest("POST", "/api/experiments", body=json.dumps(body).encode()),
                                   self.client))
        assert resp.status_code == 202, resp.get_body()
        return self.client.started[-1][2]

    def run(self, request: dict) -> tuple[dict, ReplayHost]:
        """Run the orchestration through the SDK's replay engine to its end."""
        activities = {name: user_function(self.app_functions, name) for name in (
            "prepare_experiment", "ask_configurations", "enqueue_evaluations", "tell_results",
            "write_experiment_report")}
        orchestrator = self.app_functions["experiment_orchestrator"].get_user_function().orchestrator_function
        replay = ReplayHost(orchestrator, activities, self._pump, instance_id=request["experiment_id"])
        status, out = replay.run(request)
        assert status == "completed", out
        return out, replay

    def _pump(self, name: str) -> dict:
        """Deliver queue messages to the queue trigger until event ``name`` has been raised."""
        evaluate = user_function(self.app_functions, "evaluate_from_queue")
        while not any(event == name for _, event, _ in self.client.raised):
            messages = list(self.queue.receive_messages(max_messages=1, visibility_timeout=600))
            assert messages, f"the orchestrator waits for {name} but the queue is empty"
            m = messages[0]
            body = base64.b64decode(m.content)
            asyncio.run(evaluate(func.QueueMessage(id=m.id, body=body, pop_receipt=m.pop_receipt), self.client))
            self.queue.delete_message(m)
            self.delivered += 1
        return next(data for _, event, data in self.client.raised if event == name)


@pytest.fixture
def azure_env(azurite, blob_endpoint, clean_env, tmp_path, new_container):
    """Fresh containers and queue in Azurite; reports in Blob; the local embedding model and
    Milvus Lite under ``tmp_path``."""
    service = BlobServiceClient.from_connection_string(azurite)
    inputs, reports = new_container(), new_container()
    service.create_container(inputs)
    queue = f"evals-{uuid.uuid4().hex[:12]}"
    clean_env.setenv("RAGTUNE_STORAGE_CONNECTION", azurite)
    clean_env.setenv("RAGTUNE_REPORTS", f"{blob_endpoint}/{reports}/ragtune")
    clean_env.setenv("RAGTUNE_OUT_DIR", str(tmp_path / "out"))
    clean_env.setenv("RAGTUNE_EVALUATIONS_QUEUE", queue)
    clean_env.setenv("RAGTUNE_EVALUATION_TIMEOUT_S", "600")
    return {"service": service, "inputs": inputs, "reports": reports, "queue": queue,
            "inputs_address": f"{blob_endpoint}/{inputs}", "reports_address": f"{blob_endpoint}/{reports}/ragtune"}


def _upload(service: BlobServiceClient, container: str, name: str, data: bytes) -> None:
    service.get_blob_client(container, name).upload_blob(data, overwrite=True)


@pytest.mark.slow
def test_squad_experiment_through_the_functions(app_functions, azurite, azure_env, squad_dir, tmp_path):
    """Two configurations of squad-mini (15 questions), evaluated by the queue trigger with the
    real model and Milvus Lite; each result must equal ``run_single_evaluation`` run directly
    on the local files (the reference)."""
    from core.evaluation.single import Corpus, EvaluationContext, run_single_evaluation
    from core.golden import read_golden
    from core.models.local import DEFAULT_LOCAL_EMBEDDING, local_embedding_model
    from core.reports import report_store
    from core.vectorstores import MilvusLiteConfig

    lines = (squad_dir / "golden.jsonl").read_text(encoding="utf-8").splitlines()[:15]
    golden_bytes = ("\n".join(lines) + "\n").encode("utf-8")
    service, inputs = azure_env["service"], azure_env["inputs"]
    _upload(service, inputs, "squad/golden.jsonl", golden_bytes)
    for path in sorted((squad_dir / "docs").iterdir()):
        _upload(service, inputs, f"squad/docs/{path.name}", path.read_bytes())

    host = Host(app_functions, azurite, azure_env["queue"])
    request = host.start({"golden": f"{azure_env['inputs_address']}/squad/golden.jsonl",
                          "documents": f"{azure_env['inputs_address']}/squad/docs",
                          "optimizer": "random", "max_evals": 2, "seed": 5, "objective": "mrr",
                          "space": {"chunking_method": ["recursive"], "chunk_size": [128], "chunk_overlap": [0],
                                    "search_mode": ["vector"], "number_of_chunks": [3, 5]}})
    out, context = host.run(request)
    assert out["status"] == "done" and out["evaluated"] == 2 and host.delivered == 2
    assert context.statuses[-1]["phase"] == "done" and context.statuses[-1]["evaluated"] == 2
    assert all(set(data) == {"key"} for _, _, data in host.client.raised)

    store = report_store(azure_env["reports_address"], connection_string=azurite)
    report = json.loads(store.files.read_bytes(out["report"]))
    assert report["complete"] is True and report["counts"] == {"evaluations": 2, "failed": 0, "stored": 0, "pending": 0}
    assert report["golden"]["sha256"] == read_golden(_write(tmp_path / "g.jsonl", golden_bytes)).sha256

    # Reference: the same configurations evaluated directly on the local files.
    golden = read_golden(tmp_path / "g.jsonl")
    corpus = Corpus.load(squad_dir / "docs")
    context_ref = EvaluationContext(out_dir=tmp_path / "ref", embedding_models={DEFAULT_LOCAL_EMBEDDING: local_embedding_model()},
                                    chat_models={}, vector_store_config=MilvusLiteConfig(str(tmp_path / "ref.db")))
    # One round asked both configurations; each evaluation's own texts embedded add up to what
    # the same two evaluations embed directly (each distinct text once, whichever ran first).
    assert [r["round"] for r in report["leaderboard"]] == [1, 1]
    embedded = 0
    for row in report["leaderboard"]:
        configuration = report["study"]["trials"][row["trial"]]["configuration"]
        direct = run_single_evaluation(configuration, corpus, golden, context=context_ref)
        embedded += direct["cost"]["texts_embedded"]
        assert row["cost"]["tokens"] == 0 and report["results"][row["key"]]["round"] == 1
        assert direct["status"] == "ok"
        assert row["score"] == pytest.approx(direct["metrics"]["mrr"], abs=1e-9)
        assert report["results"][row["key"]]["metrics"] == pytest.approx(direct["metrics"], abs=1e-9)
    assert report["best"]["score"] == max(r["score"] for r in report["leaderboard"])
    assert sum(r["cost"]["texts_embedded"] for r in report["leaderboard"]) == embedded > 0


def _write(path, data: bytes):
    path.write_bytes(data)
    return path


def test_gam_experiment_through_the_queue(app_functions, azurite, azure_env, squad_dir, monkeypatch):
    """A GAM experiment (random phase, then the surrogate) over 8 configurations, evaluations
    replaced by an additive score so the best is known by hand: chunk_size / 1000 +
    number_of_chunks / 100 + (0.01 for hybrid)."""
    import core.evaluation.single as single

    def fake_evaluation(configuration, corpus, golden, *, context):
        score = configuration["chunk_size"] / 1000 + configuration["number_of_chunks"] / 100 + (
            0.01 if configuration["search_mode"] == "hybrid" else 0.0)
        return {"key": "x", "status": "ok", "error": None, "metrics": {"mrr": score}}

    monkeypatch.setattr(single, "run_single_evaluation", fake_evaluation)
    monkeypatch.setattr(single.Corpus, "load", classmethod(lambda cls, d: cls(str(d), [])))
    _upload(azure_env["service"], azure_env["inputs"], "golden.jsonl", (squad_dir / "golden.jsonl").read_bytes())
    # one of the golden file's documents (prepare refuses a folder holding none), only listed
    _upload(azure_env["service"], azure_env["inputs"], "docs/Computational_complexity_theory_p00.txt",
            b"Only listed: the evaluation is replaced.")
    host = Host(app_functions, azurite, azure_env["queue"])
    body = {"golden": f"{azure_env['inputs_address']}/golden.jsonl", "documents": f"{azure_env['inputs_address']}/docs",
            "optimizer": "gam", "max_evals": 6, "seed": 1, "objective": "mrr",
            "space": {"chunking_method": ["recursive"], "chunk_size": [128, 256], "chunk_overlap": [0],
                      "search_mode": ["vector", "hybrid"], "ranker_strategy": ["rrf"], "number_of_chunks": [3, 5]}}
    request = host.start(body)
    out, context = host.run(request)
    assert out["status"] == "done" and out["evaluated"] == 6 and host.delivered == 6
    # Hand computation: the best of the 8 is chunk_size 256, 5 chunks, hybrid = 0.256 + 0.05 + 0.01.
    assert out["best_score"] == pytest.approx(0.316)
    assert context.statuses[-1] == {"phase": "done", "evaluated": 6, "planned": 6, "best_score": out["best_score"],
                                    "best_key": out["best_key"]}
    # The same request and seed replayed: the same configurations in the same order.
    from core.reports import report_store

    store = report_store(azure_env["reports_address"], connection_string=azurite)
    first = json.loads(store.files.read_bytes(out["report"]))
    keys = [t["configuration"] for t in first["study"]["trials"]]
    rerun = host.start(body)
    out2, _ = Host(app_functions, azurite, azure_env["queue"]).run(rerun)
    second = json.loads(store.files.read_bytes(out2["report"]))
    assert [t["configuration"] for t in second["study"]["trials"]] == keys
