"""The experiment orchestrator, stepped with ``orchestrator_generator_wrapper`` on a scripted
context (the Durable Functions Python samples' way), the starter's validation, and the
activities and queue-triggered evaluations over real stores and a real Azurite queue."""

from __future__ import annotations

import json

import azure.functions as func
import pytest
from azure.durable_functions.testing import orchestrator_generator_wrapper

from tests.support.durable import RUNNING, RecordingClient, ScriptedContext, user_function

C1, C2, C3 = {"chunk_size": 128}, {"chunk_size": 256}, {"chunk_size": 512}
REQUEST = {"experiment_id": "20260101T000000Z-abcdef", "golden": "g.jsonl", "documents": "docs",
           "space": {}, "optimizer": "gam", "max_evals": 3, "seed": 0, "objective": "mrr", "round_timeout_s": 60}


def _context(rounds, scores, **kw):
    """A scripted context: ``ask`` answers the batches in ``rounds`` then ``[]``; enqueueing a
    configuration makes its event ``evaluated-k<chunk_size>`` arrive with ``scores[chunk_size]``
    (None: a failed evaluation; ``RUNNING``: no event ever comes); ``tell`` keeps the best."""
    batches = iter(rounds)
    told: list = []
    context = ScriptedContext(REQUEST, {}, **kw)

    def tell(payload):
        told.extend(payload["results"])
        done = [r for r in told if r["score"] is not None]
        best = max(done, key=lambda r: r["score"], default=None)
        return {"evaluated": len(told), "failed": len(told) - len(done),
                "best_score": None if best is None else best["score"],
                "best_key": None if best is None else best["key"]}

    def enqueue(payload):
        keys = []
        for c in payload["configurations"]:
            key, score = f"k{c['chunk_size']}", scores[c["chunk_size"]]
            keys.append(key)
            if score is not RUNNING:
                context.events[f"evaluated-{key}"] = {
                    "configuration": c, "key": key, "score": score, "metrics": None,
                    "error": None if score is not None else "ConfigError: no chunks"}
        return {"keys": keys}

    context.activities.update({
        "prepare_experiment": lambda r: {"objective": "mrr", "n_valid": 3, "max_evals": 3},
        "ask_configurations": lambda r: {"configurations": next(batches, [])},
        "enqueue_evaluations": enqueue,
        "tell_results": tell,
        "write_experiment_report": lambda r: {"report": f"experiments/{r['experiment_id']}/report.json"},
    })
    return context, told


def _run(app_functions, context):
    orchestrator = app_functions["experiment_orchestrator"].get_user_function().orchestrator_function
    steps = list(orchestrator_generator_wrapper(orchestrator(context)))
    return steps[-1]


def test_two_rounds_then_report(app_functions):
    context, told = _context([[C1, C2], [C3]], {128: 0.5, 256: 0.75, 512: 0.25})
    out = _run(app_functions, context)
    assert out == {"experiment_id": REQUEST["experiment_id"], "status": "done",
                   "report": f"experiments/{REQUEST['experiment_id']}/report.json",
                   "best_key": "k256", "best_score": 0.75, "evaluated": 3}
    names = [a[1] for a in context.actions if a[0] == "activity"]
    assert names == ["prepare_experiment", "ask_configurations", "enqueue_evaluations", "tell_results",
                     "ask_configurations", "enqueue_evaluations", "tell_results", "ask_configurations",
                     "write_experiment_report"]
    enqueued = [a[2] for a in context.actions if a[:2] == ("activity", "enqueue_evaluations")]
    assert enqueued[0] == {"experiment_id": REQUEST["experiment_id"], "instance_id": "instance-1",
                           "configurations": [C1, C2]}
    assert [a[1] for a in context.actions if a[0] == "wait"] == ["evaluated-k128", "evaluated-k256", "evaluated-k512"]
    assert [a for a in context.actions if a[0] == "task_all"] == [("task_all", 2), ("task_all", 1)]
    # The round timeout is measured from the orchestration clock, not the machine's.
    assert ("timer", "2026-01-01T00:01:00+00:00") in context.actions


def test_a_failed_evaluation_is_told_as_none(app_functions):
    context, told = _context([[C1, C2]], {128: None, 256: 0.5})
    out = _run(app_functions, context)
    assert [(r["configuration"], r["score"], r["error"]) for r in told] == [
        (C1, None, "ConfigError: no chunks"), (C2, 0.5, None)]
    assert out["best_score"] == 0.5 and out["evaluated"] == 2


def test_a_round_past_its_timeout_tells_what_came_and_fails_the_rest(app_functions):
    context, told = _context([[C1, C2]], {128: 0.5, 256: RUNNING})
    out = _run(app_functions, context)
    assert [(r["configuration"], r["score"], r["error"]) for r in told] == [
        (C1, 0.5, None), (C2, None, "no result within the round's timeout of 60 s")]
    assert out["status"] == "done" and out["evaluated"] == 2 and out["best_score"] == 0.5


def test_custom_status(app_functions):
    context, _ = _context([[C1, C2], [C3]], {128: 0.5, 256: 0.75, 512: 0.25})
    _run(app_functions, context)
    assert context.statuses[0] == {"phase": "preparing", "evaluated": 0, "planned": 0, "best_score": None,
                                   "best_key": None}
    assert [s["phase"] for s in context.statuses] == [
        "preparing", "asking", "evaluating", "telling", "asking", "evaluating", "telling", "asking", "reporting", "done"]
    assert context.statuses[4] == {"phase": "asking", "evaluated": 2, "planned": 3, "best_score": 0.75,
                                   "best_key": "k256"}
    assert context.statuses[-1] == {"phase": "done", "evaluated": 3, "planned": 3, "best_score": 0.75,
                                    "best_key": "k256"}


def test_replaying_the_same_history_gives_the_same_actions(app_functions):
    runs = []
    for _ in range(2):
        context, _ = _context([[C1, C2], [C3]], {128: 0.5, 256: None, 512: RUNNING})
        out = _run(app_functions, context)
        runs.append((context.actions, context.statuses, out))
    assert runs[0] == runs[1]


def test_an_unusable_request_ends_failed_without_asking(app_functions):
    context, _ = _context([], {})
    context.activities["prepare_experiment"] = lambda r: {"error": "GoldenError: file not found"}
    out = _run(app_functions, context)
    assert out == {"experiment_id": REQUEST["experiment_id"], "status": "failed", "error": "GoldenError: file not found"}
    assert [a[1] for a in context.actions] == ["prepare_experiment"]
    assert context.statuses[-1]["phase"] == "failed"


# Starter ---------------------------------------------------------------------------------------
def _start(app_functions, body: bytes):
    import asyncio

    client = RecordingClient()
    starter = app_functions["start_experiment"].get_user_function().client_function
    resp = asyncio.run(starter(func.HttpRequest("POST", "/api/experiments", body=body), client))
    return resp, client


def test_starter_accepts_a_byte_order_mark(app_functions, clean_env):
    resp, client = _start(app_functions, b"\xef\xbb\xbf" + json.dumps(
        {"golden": "s3://bucket/g.jsonl", "documents": "s3://bucket/docs"}).encode())
    assert resp.status_code == 202 and len(client.started) == 1


def test_starter_starts_the_orchestrator(app_functions, clean_env):
    clean_env.setenv("RAGTUNE_ROUND_TIMEOUT_S", "90")
    resp, client = _start(app_functions, json.dumps(
        {"golden": "s3://bucket/g.jsonl", "documents": "s3://bucket/docs", "space": {"chunk_size": [128, 256]},
         "seed": 3}).encode())
    assert resp.status_code == 202
    ((name, instance_id, payload),) = client.started
    assert name == "experiment_orchestrator" and instance_id == payload["experiment_id"]
    assert json.loads(resp.get_body()) == {"id": instance_id}
    assert payload == {"experiment_id": instance_id, "round_timeout_s": 90, "golden": "s3://bucket/g.jsonl",
                       "documents": "s3://bucket/docs", "space": {"chunk_size": [128, 256]}, "optimizer": "gam",
                       "max_evals": 12, "seed": 3, "objective": None, "vector_store": None}


@pytest.mark.parametrize("body, message", [
    (b"not json", "not valid JSON"),
    (b"[" * 100000, "not valid JSON"),
    (b"\xff\xfe{}", "not valid JSON"),
    (b"[1]", "must be a JSON object"),
    (b"{}", "'golden' is required"),
    (b'{"golden": "/etc/passwd", "documents": "s3://b/d"}', "local paths are not accepted here"),
    (b'{"golden": "g", "documents": "d", "optimizer": "tpe"}', "'optimizer' must be 'gam' or 'random'"),
    (b'{"golden": "g", "documents": "d", "max_evals": 0}', "'max_evals' must be an integer"),
    (b'{"golden": "g", "documents": "d", "seed": -1}', "'seed' must be an integer from 0"),
    (b'{"golden": "g", "documents": "d", "space": {"chunk_sise": [1]}}', "unknown parameter 'chunk_sise'"),
    (b'{"golden": "g", "documents": "d", "space": {"chunk_size": []}}', "non-empty list"),
    (b'{"golden": "g", "documents": "d", "extra": 1}', "unknown field 'extra'"),
    (b'{"golden": "s3://b/g", "documents": "s3://b/d", "space": {"chunk_size": ["abc"]}}',
     "the request's space: chunk_size"),
    (b'{"golden": "s3://b/g", "documents": "s3://b/d", "space": {"ranker_alpha": [2]}}', "ranker_alpha"),
    (b'{"golden": "s3://b/g", "documents": "s3://b/d", "space": {"embedding_model": ["nope"]}}', "embedding_model"),
    (b'{"golden": "g", "documents": "d", "vector_store": "faiss"}', "'vector_store' must be one of"),
])
def test_starter_refuses_bad_bodies(app_functions, clean_env, body, message):
    resp, client = _start(app_functions, body)
    assert resp.status_code == 400 and client.started == []
    assert any(message in e for e in json.loads(resp.get_body())["errors"]), json.loads(resp.get_body())


# Activities and queue-triggered evaluations: local report store, real Azurite queue --------------
class FakeEmbedding:
    model_id = "fake-embedding"
    max_input_tokens = 256


def _score(configuration):
    """The fake evaluation's mrr: chunk_size / 1000 + number_of_chunks / 100 (chunk_size 128
    with 3 chunks fails)."""
    if configuration["chunk_size"] == 128 and configuration["number_of_chunks"] == 3:
        return None
    return configuration["chunk_size"] / 1000 + configuration["number_of_chunks"] / 100


@pytest.fixture
def queued_experiment(app_functions, clean_env, tmp_path, monkeypatch, azurite):
    """Settings for a local report store and a fresh Azurite queue; the evaluation itself is
    replaced by :func:`_score` (counted in ``calls``), the embedding model by a fake one."""
    import uuid

    import core.evaluation.single as single
    import core.optimization.stored as stored

    queue = f"evals-{uuid.uuid4().hex[:12]}"
    clean_env.setenv("RAGTUNE_REPORTS", str(tmp_path / "reports"))
    clean_env.setenv("RAGTUNE_OUT_DIR", str(tmp_path / "out"))
    clean_env.setenv("RAGTUNE_STORAGE_CONNECTION", azurite)
    clean_env.setenv("RAGTUNE_EVALUATIONS_QUEUE", queue)
    monkeypatch.setattr(stored, "models_from_settings", lambda settings: ({FakeEmbedding.model_id: FakeEmbedding()}, {}))
    monkeypatch.setattr(single.Corpus, "load", classmethod(lambda cls, d: cls(str(d), [])))
    calls: list = []

    def fake_evaluation(configuration, corpus, golden, *, context):
        calls.append(configuration)
        score = _score(configuration)
        if score is None:
            return {"key": "x", "status": "failed", "error": "ConfigError: no chunks", "metrics": {}}
        return {"key": "x", "status": "ok", "error": None, "metrics": {"mrr": score}}

    monkeypatch.setattr(single, "run_single_evaluation", fake_evaluation)
    fn = {name: user_function(app_functions, name) for name in (
        "prepare_experiment", "ask_configurations", "enqueue_evaluations", "tell_results", "write_experiment_report",
        "evaluate_from_queue", "evaluation_poisoned")}
    return {"fn": fn, "queue": queue, "calls": calls, "reports": tmp_path / "reports", "azurite": azurite}


def _receive(azurite: str, queue: str) -> list[func.QueueMessage]:
    """Take every message off the Azurite queue and hand it over as the host does: the body
    Base64-decoded (``host.json`` ``messageEncoding``), with its id and pop receipt."""
    import base64

    from azure.storage.queue import QueueClient

    client = QueueClient.from_connection_string(azurite, queue)
    out = []
    for m in client.receive_messages(max_messages=32, visibility_timeout=60):
        body = base64.b64decode(m.content)  # raw text on the wire: Base64, as the trigger expects
        out.append(func.QueueMessage(id=m.id, body=body, pop_receipt=m.pop_receipt))
        client.delete_message(m)
    return out


NARROW = {"chunking_method": ["recursive"], "search_mode": ["vector"], "chunk_overlap": [0], "number_of_chunks": [3, 5]}


def test_queue_driven_experiment_over_a_real_study(queued_experiment, northwind_dir):
    """prepare -> ask -> enqueue (Azurite) -> queue trigger per message -> events -> tell ->
    report, with the real Study and random sampler."""
    import asyncio

    fn, calls = queued_experiment["fn"], queued_experiment["calls"]
    request = {**REQUEST, "golden": str(northwind_dir / "golden.jsonl"), "documents": str(northwind_dir / "docs"), "optimizer": "random", "max_evals": 4,
               "space": NARROW, "vector_store": None}
    prepared = fn["prepare_experiment"](request)
    assert prepared == {"objective": "mrr", "n_valid": 4, "max_evals": 4}
    assert fn["prepare_experiment"](request) == prepared  # a second run keeps the stored study
    ref = {"experiment_id": REQUEST["experiment_id"]}
    client = RecordingClient()
    while True:
        asked = fn["ask_configurations"](ref)["configurations"]
        if not asked:
            break
        assert fn["ask_configurations"](ref)["configurations"] == asked  # pending ones come back first
        keys = fn["enqueue_evaluations"]({**ref, "instance_id": "inst-7", "configurations": asked})["keys"]
        messages = _receive(queued_experiment["azurite"], queued_experiment["queue"])
        assert len(messages) == len(asked)
        for m in messages:
            asyncio.run(fn["evaluate_from_queue"](m, client))
        events = {name: data for _, name, data in client.raised}
        told = fn["tell_results"]({**ref, "results": [events[f"evaluated-{k}"] for k in keys]})
    assert len(calls) == 4 and {i for i, _, _ in client.raised} == {"inst-7"}
    assert told["evaluated"] == 4 and told["failed"] == 1
    # Hand computation: the best of chunk_size/1000 + number_of_chunks/100 over {128, 256} x {3, 5}.
    assert told["best_score"] == pytest.approx(0.256 + 0.05)
    key = fn["write_experiment_report"](ref)["report"]
    report = json.loads((queued_experiment["reports"] / key).read_text())
    assert report["complete"] is True
    assert report["best"]["score"] == pytest.approx(0.306) and report["best"]["configuration"]["chunk_size"] == 256
    assert report["counts"] == {"evaluations": 4, "failed": 1, "pending": 0}
    assert len(report["leaderboard"]) == 4 and report["leaderboard"][-1]["status"] == "failed"
    assert report["leaderboard"][-1]["error"] == "ConfigError: no chunks"


def test_a_redelivered_message_is_not_evaluated_twice(queued_experiment, northwind_dir):
    import asyncio

    fn, calls = queued_experiment["fn"], queued_experiment["calls"]
    request = {**REQUEST, "golden": str(northwind_dir / "golden.jsonl"), "documents": str(northwind_dir / "docs"), "optimizer": "random", "max_evals": 1,
               "space": {**NARROW, "chunk_size": [256], "number_of_chunks": [5]}, "vector_store": None}
    fn["prepare_experiment"](request)
    ref = {"experiment_id": REQUEST["experiment_id"]}
    (configuration,) = fn["ask_configurations"](ref)["configurations"]
    fn["enqueue_evaluations"]({**ref, "instance_id": "inst-1", "configurations": [configuration]})
    # The activity retried: the same keys come back, nothing is sent twice.
    again = fn["enqueue_evaluations"]({**ref, "instance_id": "inst-1", "configurations": [configuration]})
    (message,) = _receive(queued_experiment["azurite"], queued_experiment["queue"])
    assert again["keys"] == [json.loads(message.get_body())["key"]]
    client = RecordingClient()
    asyncio.run(fn["evaluate_from_queue"](message, client))
    asyncio.run(fn["evaluate_from_queue"](message, client))  # the host delivers it again
    assert len(calls) == 1
    assert len(client.raised) == 2 and client.raised[0] == client.raised[1]
    (_, event, outcome) = client.raised[0]
    assert outcome["score"] == pytest.approx(0.256 + 0.05) and outcome["error"] is None
    assert event == f"evaluated-{outcome['key']}"
    stored = json.loads((queued_experiment["reports"] / "experiments" / REQUEST["experiment_id"] / "results"
                         / f"{outcome['key']}.json").read_text())
    assert stored["metrics"] == {"mrr": pytest.approx(0.306)}


def test_the_poison_queue_raises_a_failure_event(queued_experiment, northwind_dir):
    import asyncio

    fn = queued_experiment["fn"]
    fn["prepare_experiment"]({**REQUEST, "golden": str(northwind_dir / "golden.jsonl"), "documents": str(northwind_dir / "docs"), "optimizer": "random",
                              "max_evals": 1, "space": {**NARROW, "number_of_chunks": [5]}, "vector_store": None})
    ref = {"experiment_id": REQUEST["experiment_id"]}
    (configuration,) = fn["ask_configurations"](ref)["configurations"]
    fn["enqueue_evaluations"]({**ref, "instance_id": "inst-2", "configurations": [configuration]})
    (message,) = _receive(queued_experiment["azurite"], queued_experiment["queue"])
    client = RecordingClient()
    asyncio.run(fn["evaluation_poisoned"](message, client))
    ((instance, event, outcome),) = client.raised
    assert instance == "inst-2" and event == f"evaluated-{outcome['key']}"
    assert outcome["score"] is None and "poison queue" in outcome["error"] and message.id in outcome["error"]
    assert queued_experiment["calls"] == []
    # The orchestration already ended: the event is dropped with a warning, not retried forever.
    client.gone.add("inst-2")
    asyncio.run(fn["evaluation_poisoned"](message, client))


def test_a_malformed_message_raises_so_the_host_retries_it(queued_experiment):
    import asyncio

    from core.errors import ConfigError

    client = RecordingClient()
    for body, where in [(b"not json", "not JSON"), (b'{"v": 1}', "experiment_id"),
                        (b'{"v": 1, "experiment_id": "e", "instance_id": "i", "key": "k", "documents": "d",'
                         b' "golden": {"address": "g", "sha256": "s"}, "configuration": {"chunk_size": 1}}',
                         "'key' does not match")]:
        with pytest.raises(ConfigError, match=where):
            asyncio.run(queued_experiment["fn"]["evaluate_from_queue"](func.QueueMessage(body=body), client))
    assert client.raised == []


def test_messages_stay_small_for_a_large_golden_file(queued_experiment, tmp_path):
    """1,000 questions: the message holds references, far under the 64 KB queue limit."""
    from core.optimization.stored import StoredExperiment
    from core.settings import Settings

    golden = tmp_path / "big.jsonl"
    golden.write_text("".join(json.dumps({"question": f"What is item {i} of the handbook? " * 5,
                                          "expected": [f"doc-{i % 50}.md"], "reference": "x " * 200}) + "\n"
                              for i in range(1000)))
    fn = queued_experiment["fn"]
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "handbook.md").write_text("The handbook.")
    fn["prepare_experiment"]({**REQUEST, "golden": str(golden), "documents": str(tmp_path / "docs"),
                              "optimizer": "random", "max_evals": 2,
                              "space": NARROW, "objective": "mrr", "vector_store": None})
    settings = Settings.from_env()
    experiment = StoredExperiment(settings.report_store().files, REQUEST["experiment_id"])
    for configuration in experiment.ask():
        message = json.dumps(experiment.evaluation_message("inst", configuration)).encode()
        assert len(message) * 4 / 3 < 16 * 1024  # Base64 on the wire
        assert b"handbook" not in message
    assert golden.stat().st_size > 64 * 1024


def test_prepare_reports_an_unusable_golden_file(app_functions, clean_env, tmp_path):
    clean_env.setenv("RAGTUNE_REPORTS", str(tmp_path))
    out = app_functions["prepare_experiment"].get_user_function()({**REQUEST, "golden": str(tmp_path / "missing.jsonl")})
    assert out["error"].startswith("GoldenError") and "not found" in out["error"]
