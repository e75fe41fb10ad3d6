"""The experiment orchestrator, run by the SDK's replay engine (``tests.support.durable.ReplayHost``),
the starter's validation, and the activities and queue-triggered evaluations over real stores and
a real Azurite queue."""

from __future__ import annotations

import json

import azure.functions as func
import pytest

from tests.support.durable import RUNNING, RecordingClient, ReplayHost, user_function

C1, C2, C3 = {"chunk_size": 128}, {"chunk_size": 256}, {"chunk_size": 512}
EXPERIMENT_ID = "20260101T000000Z-abcdef"
REQUEST = {"experiment_id": EXPERIMENT_ID, "golden": "g.jsonl", "documents": "docs",
           "space": {}, "optimizer": "gam", "max_evals": 3, "seed": 0, "objective": "mrr", "vector_store": None}


def _key(configuration):
    return f"k{configuration['chunk_size']}"


def _host(app_functions, rounds, scores, *, timeout_s=60):
    """A ``ReplayHost`` over the real orchestrator: ``ask`` answers the batches in ``rounds``
    then nothing; the event of configuration ``c`` comes when ``scores[c['chunk_size']]`` is
    not ``RUNNING`` (its score is what the stored result would say); ``tell`` records what it is
    told and keeps the best of the stored scores."""
    batches = iter(rounds)
    told: list = []
    best: dict = {"score": None, "key": None}

    def ask(ref):
        batch = next(batches, [])
        done = [k for k in told if scores[int(k[1:])] not in (None, RUNNING)]
        return {"configurations": batch, "keys": [_key(c) for c in batch], "round_timeout_s": timeout_s,
                "summary": {"evaluated": len(told), "failed": len(told) - len(done), "pending": len(batch),
                            "planned": 3, "best_score": best["score"], "best_key": best["key"], "finished": False}}

    def tell(payload):
        told.extend(payload["keys"])
        for key in payload["keys"]:
            score = scores[int(key[1:])]
            if score not in (None, RUNNING) and (best["score"] is None or score > best["score"]):
                best.update(score=score, key=key)
        return {}

    def event(name):
        score = scores[int(name.removeprefix("evaluated-k"))]
        return None if score is RUNNING else {"key": name.removeprefix("evaluated-")}

    activities = {
        "prepare_experiment": lambda r: {"objective": "mrr", "n_valid": 3, "max_evals": 3, "notes": []},
        "ask_configurations": ask,
        "enqueue_evaluations": lambda r: {"keys": [_key(c) for c in r["configurations"]]},
        "tell_results": tell,
        "write_experiment_report": lambda r: {"report": f"experiments/{r['experiment_id']}/report.json"},
    }
    orchestrator = app_functions["experiment_orchestrator"].get_user_function().orchestrator_function
    return ReplayHost(orchestrator, activities, event, instance_id=EXPERIMENT_ID), told


def test_rounds_then_report_one_generation_each(app_functions):
    host, told = _host(app_functions, [[C1, C2], [C3]], {128: 0.5, 256: 0.75, 512: 0.25})
    assert host.run(REQUEST) == ("completed", {
        "experiment_id": EXPERIMENT_ID, "status": "done", "report": f"experiments/{EXPERIMENT_ID}/report.json",
        "best_key": "k256", "best_score": 0.75, "evaluated": 3})
    assert host.activity_calls == ["prepare_experiment", "ask_configurations", "enqueue_evaluations", "tell_results",
                                   "ask_configurations", "enqueue_evaluations", "tell_results", "ask_configurations",
                                   "write_experiment_report"]
    # prepare, two rounds, the report: each its own generation
    assert len(host.generations) == 4
    assert told == ["k128", "k256", "k512"]


def test_a_round_past_its_timeout_tells_which_keys_timed_out(app_functions):
    host, _ = _host(app_functions, [[C1, C2]], {128: 0.5, 256: RUNNING, 512: 0.0})
    calls = []
    tell = host.activities["tell_results"]
    host.activities["tell_results"] = lambda payload: (calls.append(payload), tell(payload))[1]
    status, out = host.run(REQUEST)
    assert status == "completed" and out["evaluated"] == 2 and out["best_score"] == 0.5
    assert calls == [{"experiment_id": EXPERIMENT_ID, "keys": ["k128", "k256"], "timed_out": ["k256"],
                      "round_timeout_s": 60}]


def test_custom_status(app_functions):
    host, _ = _host(app_functions, [[C1, C2], [C3]], {128: 0.5, 256: 0.75, 512: 0.25})
    host.run(REQUEST)
    assert host.statuses[0] == {"phase": "preparing", "evaluated": 0, "planned": 0, "best_score": None,
                                "best_key": None}
    assert [s["phase"] for s in host.statuses] == ["preparing", "evaluating", "evaluating", "reporting", "done"]
    assert host.statuses[2] == {"phase": "evaluating", "round": 1, "evaluated": 2, "planned": 3, "best_score": 0.75,
                                "best_key": "k256"}


def test_replaying_the_same_history_gives_the_same_actions(app_functions):
    runs = []
    for _ in range(2):
        host, told = _host(app_functions, [[C1, C2], [C3]], {128: 0.5, 256: None, 512: RUNNING})
        runs.append((host.run(REQUEST), host.activity_calls, host.statuses, host.generations, told))
    assert runs[0] == runs[1]


def test_an_unusable_request_ends_failed_with_a_short_reason(app_functions):
    host, _ = _host(app_functions, [], {})
    host.activities["prepare_experiment"] = lambda r: {"error": "GoldenError: file not found"}
    status, error = host.run(REQUEST)
    assert status == "failed" and error == "GoldenError: file not found"
    assert host.activity_calls == ["prepare_experiment"]
    assert host.statuses[-1] == {"phase": "failed", "error": "GoldenError: file not found", "step": "prepare_experiment"}


def test_a_hundred_rounds_keep_each_generations_history_bounded(app_functions):
    """100 rounds of 8 evaluations through the SDK's replay engine: every round is one
    generation (continue_as_new with the experiment id only), so no generation's history grows
    with the number of rounds, and the replays stay linear in the rounds."""
    n_rounds, width = 100, 8
    rounds = [[{"chunk_size": 1000 + r * width + i} for i in range(width)] for r in range(n_rounds)]
    scores = {c["chunk_size"]: 0.5 for batch in rounds for c in batch}
    host, told = _host(app_functions, rounds, scores)
    status, out = host.run(REQUEST)
    assert status == "completed" and len(told) == n_rounds * width
    assert len(host.generations) == n_rounds + 2  # prepare, the rounds, the report
    # One round's history: per episode an OrchestratorStarted; ask, enqueue and tell scheduled and
    # completed (6); the timer created; one event raised per evaluation.
    per_round = 2 + 5 + 6 + 1 + width
    assert max(host.generations) <= per_round
    assert host.generations[1] == host.generations[-2]  # the 1st and the 100th round alike
    assert host.episodes <= 5 * (n_rounds + 2)


# Starter ---------------------------------------------------------------------------------------
def _start(app_functions, body: bytes):
    import asyncio

    client = RecordingClient()
    starter = app_functions["start_experiment"].get_user_function().client_function
    resp = asyncio.run(starter(func.HttpRequest("POST", "/api/experiments", body=body), client))
    return resp, client


def test_starter_accepts_a_byte_order_mark(app_functions, clean_env, tmp_path):
    clean_env.setenv("RAGTUNE_REPORTS", str(tmp_path))
    resp, client = _start(app_functions, b"\xef\xbb\xbf" + json.dumps(
        {"golden": "s3://bucket/g.jsonl", "documents": "s3://bucket/docs"}).encode())
    assert resp.status_code == 202 and len(client.started) == 1


def test_starter_starts_the_orchestrator_and_answers_with_the_apps_own_urls(app_functions, clean_env, tmp_path):
    import asyncio

    clean_env.setenv("RAGTUNE_REPORTS", str(tmp_path))
    client = RecordingClient()
    starter = app_functions["start_experiment"].get_user_function().client_function
    body = json.dumps({"golden": "s3://bucket/g.jsonl", "documents": "s3://bucket/docs",
                       "space": {"chunk_size": [128, "256"]}, "seed": 3}).encode()
    resp = asyncio.run(starter(func.HttpRequest("POST", "https://app.example/api/experiments?code=SECRET", body=body),
                               client))
    assert resp.status_code == 202
    ((name, instance_id, payload),) = client.started
    assert name == "experiment_orchestrator" and instance_id == payload["experiment_id"]
    base = f"https://app.example/api/experiments/{instance_id}"
    assert json.loads(resp.get_body()) == {"id": instance_id, "status_url": f"{base}/status", "report_url": base}
    assert resp.headers["Location"] == f"{base}/status"
    assert "SECRET" not in resp.get_body().decode() and "webhooks" not in resp.get_body().decode()
    # the orchestration's input is the id only; the request waits beside the experiment
    assert payload == {"experiment_id": instance_id, "prepare": True}
    stored = json.loads((tmp_path / "experiments" / instance_id / "request.json").read_text())
    assert stored == {"golden": "s3://bucket/g.jsonl", "documents": "s3://bucket/docs",
                      "space": {"chunk_size": [128, 256]}, "optimizer": "screen", "max_evals": 12, "seed": 3,
                      "objective": None, "vector_store": None, "multi_fidelity": False}


@pytest.mark.parametrize("body, message", [
    (b"not json", "not valid JSON"),
    (b"[" * 100000, "not valid JSON"),
    (b"\xff\xfe{}", "not valid JSON"),
    (b"[1]", "must be a JSON object"),
    (b"{}", "'golden' is required"),
    (b'{"golden": "/etc/passwd", "documents": "s3://b/d"}', "local paths are not accepted here"),
    (b'{"golden": "g", "documents": "d", "optimizer": "tpe"}', "'optimizer' must be one of screen, gam, random"),
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
    import core.experiment.requests as stored
    import functions.experiments as experiments

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
    monkeypatch.setattr(experiments, "_EVALUATOR", None)  # each test its own loaded data
    fn = {name: user_function(app_functions, name) for name in (
        "prepare_experiment", "ask_configurations", "enqueue_evaluations", "tell_results", "write_experiment_report",
        "evaluate_from_queue", "evaluation_poisoned")}
    return {"fn": fn, "queue": queue, "calls": calls, "reports": tmp_path / "reports", "azurite": azurite,
            "app_functions": app_functions, "env": clean_env}


def _receive(azurite: str, queue: str) -> list[func.QueueMessage]:
    """Take every message off the Azurite queue and hand it over as the host does: the body
    Base64-decoded (``host.json`` ``messageEncoding``), with its id and pop receipt."""
    import base64

    from azure.functions.queue import QueueMessage as HostQueueMessage  # the type the host's binding gives
    from azure.storage.queue import QueueClient

    client = QueueClient.from_connection_string(azurite, queue)
    out = []
    for m in client.receive_messages(max_messages=32, visibility_timeout=60):
        body = base64.b64decode(m.content)  # raw text on the wire: Base64, as the trigger expects
        out.append(HostQueueMessage(id=m.id, body=body, pop_receipt=m.pop_receipt, dequeue_count=m.dequeue_count))
        client.delete_message(m)
    return out


NARROW = {"chunking_method": ["recursive"], "search_mode": ["vector"], "chunk_overlap": [0], "number_of_chunks": [3, 5]}


def _orchestrate(queued_experiment, request, client=None):
    """Run the real orchestrator through the SDK's replay engine with the real activities; an
    event is waited for by taking the messages off the Azurite queue and running the queue
    trigger on each (what the host's queue workers do)."""
    import asyncio

    fn = queued_experiment["fn"]
    client = client or RecordingClient()

    def event(name):
        if not any(e == name for _, e, _ in client.raised):
            for m in _receive(queued_experiment["azurite"], queued_experiment["queue"]):
                asyncio.run(fn["evaluate_from_queue"](m, client))
        return next((data for _, e, data in client.raised if e == name), None)

    activities = {name: fn[name] for name in ("prepare_experiment", "ask_configurations", "enqueue_evaluations",
                                              "tell_results", "write_experiment_report")}
    orchestrator = queued_experiment["app_functions"]["experiment_orchestrator"].get_user_function().orchestrator_function
    host = ReplayHost(orchestrator, activities, event, instance_id=request["experiment_id"])
    return host, host.run(request), client


def _request(northwind_dir, **kw):
    return {**REQUEST, "golden": str(northwind_dir / "golden.jsonl"), "documents": str(northwind_dir / "docs"),
            "optimizer": "random", "max_evals": 4, "space": NARROW, **kw}


def test_queue_driven_experiment_over_a_real_study(queued_experiment, northwind_dir):
    """prepare -> rounds of ask -> enqueue (Azurite) -> queue trigger per message -> events ->
    tell -> report, with the real Study, the real orchestrator and the SDK's replay engine;
    RAGTUNE_PARALLEL_EVALUATIONS=2 makes two rounds of two."""
    queued_experiment["env"].setenv("RAGTUNE_PARALLEL_EVALUATIONS", "2")
    host, (status, out), client = _orchestrate(queued_experiment, _request(northwind_dir))
    assert status == "completed", out
    assert len(queued_experiment["calls"]) == 4 and len(host.generations) == 4  # prepare, 2 rounds, report
    assert {i for i, _, _ in client.raised} == {EXPERIMENT_ID}
    assert all(set(data) == {"key"} for _, _, data in client.raised)  # events carry the key only
    assert out["evaluated"] == 4
    # Hand computation: the best of chunk_size/1000 + number_of_chunks/100 over {128, 256} x {3, 5}.
    assert out["best_score"] == pytest.approx(0.256 + 0.05)
    report = json.loads((queued_experiment["reports"] / out["report"]).read_text())
    assert report["complete"] is True
    assert report["best"]["score"] == pytest.approx(0.306) and report["best"]["configuration"]["chunk_size"] == 256
    assert report["counts"] == {"evaluations": 4, "failed": 1, "stored": 0, "pending": 0}
    assert len(report["leaderboard"]) == 4 and report["leaderboard"][-1]["status"] == "failed"
    assert report["leaderboard"][-1]["error"] == "ConfigError: no chunks"


def test_a_forged_event_is_not_believed(queued_experiment, northwind_dir):
    """An event for a configuration with no stored result (score 1e9 in its data) tells the
    study nothing but that no result was stored."""
    fn = queued_experiment["fn"]
    fn["prepare_experiment"](_request(northwind_dir, max_evals=1))
    ref = {"experiment_id": EXPERIMENT_ID}
    (key,) = fn["ask_configurations"](ref)["keys"]
    summary = fn["tell_results"]({**ref, "keys": [key], "timed_out": [], "round_timeout_s": 60})
    assert summary["best_score"] is None and summary["failed"] == 1 and summary["evaluated"] == 1
    report = json.loads((queued_experiment["reports"] / fn["write_experiment_report"](ref)["report"]).read_text())
    assert report["leaderboard"][0]["error"] == "its completion event came but no result was stored"


def test_a_golden_file_with_1500_bad_lines_ends_failed_with_a_capped_reason(queued_experiment, northwind_dir, tmp_path):
    """1,500 lines with no question: the prepare's output, the custom status and the failure
    each hold at most MAX_MESSAGE_BYTES, and the full reason is stored beside the experiment."""
    from core.experiment import MAX_MESSAGE_BYTES

    golden = tmp_path / "bad.jsonl"
    golden.write_text("".join(json.dumps({"id": f"q{i}", "answer": "a"}) + "\n" for i in range(1500)))
    request = _request(northwind_dir, golden=str(golden))
    out = queued_experiment["fn"]["prepare_experiment"](request)
    error = out["error"]
    assert len(json.dumps(out).encode("utf-8")) <= MAX_MESSAGE_BYTES + 100 and len(error.encode("utf-8")) <= MAX_MESSAGE_BYTES
    address = error.rsplit("full text: ", 1)[1].rstrip("]")
    full = (queued_experiment["reports"] / address).read_text(encoding="utf-8")
    assert full.startswith(error.split(" [cut; ")[0].removesuffix("...")) and len(full.encode("utf-8")) > MAX_MESSAGE_BYTES
    host, (status, reason), _ = _orchestrate(queued_experiment, request)
    assert status == "failed" and reason == error
    assert host.statuses[-1] == {"phase": "failed", "error": error, "step": "prepare_experiment"}


def test_a_redelivered_message_is_not_evaluated_twice(queued_experiment, northwind_dir):
    import asyncio

    fn, calls = queued_experiment["fn"], queued_experiment["calls"]
    fn["prepare_experiment"](_request(northwind_dir, max_evals=1,
                                      space={**NARROW, "chunk_size": [256], "number_of_chunks": [5]}))
    ref = {"experiment_id": EXPERIMENT_ID}
    configurations = fn["ask_configurations"](ref)["configurations"]
    fn["enqueue_evaluations"]({**ref, "configurations": configurations})
    # The activity retried: the same keys come back, nothing is sent twice.
    again = fn["enqueue_evaluations"]({**ref, "configurations": configurations})
    (message,) = _receive(queued_experiment["azurite"], queued_experiment["queue"])
    assert again["keys"] == [json.loads(message.get_body())["key"]]
    client = RecordingClient()
    asyncio.run(fn["evaluate_from_queue"](message, client))
    asyncio.run(fn["evaluate_from_queue"](message, client))  # the host delivers it again
    assert len(calls) == 1
    assert len(client.raised) == 2 and client.raised[0] == client.raised[1]
    (_, event, data) = client.raised[0]
    assert event == f"evaluated-{data['key']}"
    stored = json.loads((queued_experiment["reports"] / "experiments" / EXPERIMENT_ID / "results"
                         / f"{data['key']}.json").read_text())
    assert stored["metrics"] == {"mrr": pytest.approx(0.306)}


def test_a_transient_failure_raises_so_the_queue_delivers_it_again(queued_experiment, northwind_dir, monkeypatch):
    import asyncio

    import core.evaluation.single as single

    fn = queued_experiment["fn"]
    fn["prepare_experiment"](_request(northwind_dir, max_evals=1))
    ref = {"experiment_id": EXPERIMENT_ID}
    fn["enqueue_evaluations"]({**ref, "configurations": fn["ask_configurations"](ref)["configurations"]})
    (message,) = _receive(queued_experiment["azurite"], queued_experiment["queue"])
    monkeypatch.setattr(single, "run_single_evaluation", lambda *a, **k: {
        "status": "failed", "error": "EmbeddingError: 429 Too Many Requests", "transient": True, "metrics": {}})
    client = RecordingClient()
    with pytest.raises(Exception, match="429"):
        asyncio.run(fn["evaluate_from_queue"](message, client))
    assert client.raised == [] and not (queued_experiment["reports"] / "experiments" / EXPERIMENT_ID / "results").exists()


def test_the_poison_queue_fails_only_what_has_no_ok_result(queued_experiment, northwind_dir):
    import asyncio

    fn = queued_experiment["fn"]
    fn["prepare_experiment"](_request(northwind_dir, max_evals=2, space={**NARROW, "number_of_chunks": [5]}))
    ref = {"experiment_id": EXPERIMENT_ID}
    fn["enqueue_evaluations"]({**ref, "configurations": fn["ask_configurations"](ref)["configurations"]})
    first, second = _receive(queued_experiment["azurite"], queued_experiment["queue"])
    client = RecordingClient()
    asyncio.run(fn["evaluate_from_queue"](first, client))  # evaluated, then poisoned all the same
    asyncio.run(fn["evaluation_poisoned"](first, client))
    _fail_delivery(queued_experiment, second)
    asyncio.run(fn["evaluation_poisoned"](second, client))
    results = queued_experiment["reports"] / "experiments" / EXPERIMENT_ID / "results"
    ok = json.loads((results / f"{json.loads(first.get_body())['key']}.json").read_text())
    failed = json.loads((results / f"{json.loads(second.get_body())['key']}.json").read_text())
    assert ok["status"] == "ok"
    assert failed["status"] == "failed" and "poison queue" in failed["error"] and second.id in failed["error"]
    assert [e for _, e, _ in client.raised] == [f"evaluated-{json.loads(m.get_body())['key']}"
                                                 for m in (first, first, second)]
    # The orchestration already ended: the event is dropped with a warning, not retried forever.
    client.gone.add(EXPERIMENT_ID)
    asyncio.run(fn["evaluation_poisoned"](second, client))


def _fail_delivery(queued_experiment, message):
    """Deliver ``message`` once to the evaluations queue trigger with an evaluation that fails
    transiently (a 503 from the embedding endpoint): the host would deliver it again."""
    import asyncio

    import core.evaluation.single as single

    real = single.run_single_evaluation
    single.run_single_evaluation = lambda *a, **k: {"status": "failed", "error": "EmbeddingError: 503", "transient": True,
                                                    "metrics": {}}
    try:
        with pytest.raises(Exception, match="503"):
            asyncio.run(queued_experiment["fn"]["evaluate_from_queue"](message, RecordingClient()))
    finally:
        single.run_single_evaluation = real


def _forged(experiment_id, configuration):
    from core.optimization import Configuration

    return func.QueueMessage(id="forged", body=json.dumps({
        "v": 2, "experiment_id": experiment_id, "key": Configuration(configuration).key,
        "configuration": configuration}).encode())


def test_forged_poison_messages_fail_nothing_and_write_nothing(queued_experiment, northwind_dir):
    """A poison message is checked as an evaluation message is: one for an unknown experiment,
    for a configuration outside the space, or for a pending configuration none of whose
    deliveries failed is refused (ConfigError: the host retries it, then moves it to the
    poison queue's own poison queue) with nothing written and no event raised; the real one,
    after its deliveries failed, is stored as failed."""
    import asyncio

    from core.errors import ConfigError

    fn = queued_experiment["fn"]
    fn["prepare_experiment"](_request(northwind_dir, max_evals=2, space={**NARROW, "number_of_chunks": [5]}))
    ref = {"experiment_id": EXPERIMENT_ID}
    fn["enqueue_evaluations"]({**ref, "configurations": fn["ask_configurations"](ref)["configurations"]})
    pending, _ = _receive(queued_experiment["azurite"], queued_experiment["queue"])
    configuration = json.loads(pending.get_body())["configuration"]
    reports = queued_experiment["reports"]
    before = sorted(str(p.relative_to(reports)) for p in reports.rglob("*"))
    client = RecordingClient()
    for message, why in [
            (_forged("20990101T000000Z-unknown", configuration), "no experiment '20990101T000000Z-unknown'"),
            (_forged(EXPERIMENT_ID, {**configuration, "chunk_size": 4096}), "not in experiment"),
            (pending, "no failed delivery on record")]:
        with pytest.raises(ConfigError, match=why):
            asyncio.run(fn["evaluation_poisoned"](message, client))
    assert sorted(str(p.relative_to(reports)) for p in reports.rglob("*")) == before
    assert client.raised == [] and not (reports / "experiments" / "20990101T000000Z-unknown").exists()
    # The pending configuration is evaluated as usual, untouched by the forgeries.
    asyncio.run(fn["evaluate_from_queue"](pending, client))
    key = json.loads(pending.get_body())["key"]
    assert json.loads((reports / "experiments" / EXPERIMENT_ID / "results" / f"{key}.json").read_text())["status"] == "ok"
    report = json.loads((reports / fn["write_experiment_report"](ref)["report"]).read_text())
    assert list(report["results"]) == [key]


def test_a_delivery_after_one_that_did_not_finish_is_recorded(queued_experiment, northwind_dir):
    """The first delivery's worker dies without a word (its message is not deleted); Azurite
    delivers the message again with dequeue count 2, and that delivery records the earlier
    one (``tried/<key>``) before evaluating, so a poison message would be believed."""
    import asyncio
    import base64
    import time

    from azure.functions.queue import QueueMessage as HostQueueMessage
    from azure.storage.queue import QueueClient

    fn = queued_experiment["fn"]
    fn["prepare_experiment"](_request(northwind_dir, max_evals=1))
    ref = {"experiment_id": EXPERIMENT_ID}
    fn["enqueue_evaluations"]({**ref, "configurations": fn["ask_configurations"](ref)["configurations"]})
    queue = QueueClient.from_connection_string(queued_experiment["azurite"], queued_experiment["queue"])
    (first,) = queue.receive_messages(visibility_timeout=1)
    assert first.dequeue_count == 1  # ... and the worker is killed here
    time.sleep(1.5)
    (again,) = queue.receive_messages(visibility_timeout=60)
    assert again.dequeue_count == 2
    message = HostQueueMessage(id=again.id, body=base64.b64decode(again.content), dequeue_count=again.dequeue_count)
    asyncio.run(fn["evaluate_from_queue"](message, RecordingClient()))
    key = json.loads(message.get_body())["key"]
    assert (queued_experiment["reports"] / "experiments" / EXPERIMENT_ID / "tried" / key).exists()


def test_a_configuration_outside_the_space_is_refused(queued_experiment, northwind_dir):
    import asyncio

    from core.errors import ConfigError
    from core.optimization import Configuration

    fn = queued_experiment["fn"]
    fn["prepare_experiment"](_request(northwind_dir, max_evals=1))
    forged = {"chunking_method": "recursive", "chunk_size": 4096, "chunk_overlap": 0, "search_mode": "vector",
              "number_of_chunks": 3}
    body = json.dumps({"v": 2, "experiment_id": EXPERIMENT_ID, "key": Configuration(forged).key,
                       "configuration": forged, "golden": {"address": "/etc/passwd"}}).encode()
    with pytest.raises(ConfigError, match="not in experiment"):
        asyncio.run(fn["evaluate_from_queue"](func.QueueMessage(body=body), RecordingClient()))
    assert queued_experiment["calls"] == []


def test_a_malformed_message_raises_so_the_host_retries_it(queued_experiment):
    import asyncio

    from core.errors import ConfigError

    client = RecordingClient()
    for body, where in [(b"not json", "not JSON"), (b'{"v": 2}', "experiment_id"),
                        (b'{"v": 1, "experiment_id": "e", "key": "k", "configuration": {}}', "version"),
                        (b'{"v": 2, "experiment_id": "e", "key": "k", "configuration": {"chunk_size": 1}}',
                         "'key' does not match")]:
        with pytest.raises(ConfigError, match=where):
            asyncio.run(queued_experiment["fn"]["evaluate_from_queue"](func.QueueMessage(body=body), client))
    assert client.raised == []


def test_messages_stay_small_for_a_large_golden_file(queued_experiment, tmp_path):
    """1,000 questions: the message holds the experiment id, the configuration and its key."""
    golden = tmp_path / "big.jsonl"
    golden.write_text("".join(json.dumps({"question": f"What is item {i} of the handbook? " * 5,
                                          "expected": [f"doc-{i % 50}.md"], "reference": "x " * 200}) + "\n"
                              for i in range(1000)))
    fn = queued_experiment["fn"]
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "doc-0.md").write_text("The handbook.")
    fn["prepare_experiment"]({**REQUEST, "golden": str(golden), "documents": str(tmp_path / "docs"),
                              "optimizer": "random", "max_evals": 2, "space": NARROW, "objective": "mrr"})
    ref = {"experiment_id": EXPERIMENT_ID}
    fn["enqueue_evaluations"]({**ref, "configurations": fn["ask_configurations"](ref)["configurations"]})
    for message in _receive(queued_experiment["azurite"], queued_experiment["queue"]):
        body = message.get_body()
        assert len(body) * 4 / 3 < 2 * 1024  # Base64 on the wire
        assert set(json.loads(body)) == {"v", "experiment_id", "key", "configuration"}
    assert golden.stat().st_size > 64 * 1024


def test_prepare_reports_an_unusable_golden_file(app_functions, clean_env, tmp_path):
    clean_env.setenv("RAGTUNE_REPORTS", str(tmp_path))
    out = app_functions["prepare_experiment"].get_user_function()({**REQUEST, "golden": str(tmp_path / "missing.jsonl")})
    assert out["error"].startswith("GoldenError") and "not found" in out["error"]


def test_messages_share_one_store_object_while_the_settings_stay_the_same(tmp_path, monkeypatch):
    """So its HTTP connections and what the engine remembers of each experiment (spec, study)
    serve every message of a process; other settings get another store."""
    import functions.experiments as experiments

    monkeypatch.setattr(experiments, "_FILES", None)
    monkeypatch.setenv("RAGTUNE_OUT_DIR", str(tmp_path / "out"))
    monkeypatch.setenv("RAGTUNE_REPORTS", str(tmp_path / "reports-1"))
    first = experiments._experiment("e-1").files
    assert experiments._experiment("e-2").files is first and str(first.root).endswith("reports-1")
    monkeypatch.setenv("RAGTUNE_REPORTS", str(tmp_path / "reports-2"))
    other = experiments._experiment("e-1").files
    assert other is not first and str(other.root).endswith("reports-2")


def test_queue_driven_multi_fidelity_rungs_are_rounds(queued_experiment, northwind_dir, monkeypatch):
    """With multi-fidelity, each round's messages carry their rung's question ids and the queue
    trigger evaluates just those: northwind's 49 questions make rungs (16, 49) (16 * 3 = 48 <= 49,
    48 * 3 > 49); every configuration is first scored on 16 questions, a promotion on all 49
    raises ``evaluated-<key>-r1``. The fake evaluation gives each question the configuration's
    mrr, so a configuration below the rung's best is worse on all 16 questions (exact sign test
    p = 2 / 2**16) and stops there; the best (chunk_size 256, 5 chunks: 0.306) never meets a
    better one and is scored on all 49. All 4 valid configurations asked: the space is done."""
    import core.evaluation.single as single

    sizes: list = []

    def fake_evaluation(configuration, corpus, golden, *, context):
        score = _score(configuration)
        sizes.append(len(golden.questions))
        if score is None:
            return {"key": "x", "status": "failed", "error": "ConfigError: no chunks", "metrics": {}}
        ids = [q.id for q in golden.questions]
        return {"key": "x", "status": "ok", "error": None, "metrics": {"mrr": score},
                "per_question": {"ids": ids, "scores": {"mrr": [score] * len(ids)}}}

    monkeypatch.setattr(single, "run_single_evaluation", fake_evaluation)
    queued_experiment["env"].setenv("RAGTUNE_PARALLEL_EVALUATIONS", "2")
    host, (status, out), client = _orchestrate(queued_experiment, _request(northwind_dir, multi_fidelity=True))
    assert status == "completed", out
    events = [e for _, e, _ in client.raised]
    assert any(e.endswith("-r1") for e in events)
    # the four configurations start on 16 questions; a promotion scores the 33 its rung adds
    assert sorted(set(sizes)) == [16, 33] and sizes.count(16) == 4
    report = json.loads((queued_experiment["reports"] / out["report"]).read_text())
    assert report["fidelity"]["sizes"] == [16, 49]
    rows = report["leaderboard"]
    best = rows[0]
    assert best["fully_evaluated"] and best["n_questions"] == 49
    assert best["parameters"]["chunk_size"] == 256 and best["parameters"]["number_of_chunks"] == 5
    stopped = [r for r in rows if (r.get("fidelity") or {}).get("verdict") == "stop"]
    assert stopped and all(r["n_questions"] == 16 and not r["fully_evaluated"] for r in stopped)
    assert report["stop"]["reason"] == "space"
