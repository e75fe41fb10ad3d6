"""The experiment orchestrator, stepped with ``orchestrator_generator_wrapper`` on a mocked
context (the Durable Functions Python samples' way), and the starter's validation."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import azure.functions as func
import pytest
from azure.durable_functions.testing import orchestrator_generator_wrapper

C1, C2, C3 = {"chunk_size": 128}, {"chunk_size": 256}, {"chunk_size": 512}
REQUEST = {"experiment_id": "20260101T000000Z-abcdef", "golden": "g.jsonl", "documents": "docs",
           "space": {}, "optimizer": "gam", "max_evals": 3, "seed": 0, "objective": "mrr", "round_timeout_s": 60}


class Task:
    """A finished task: its ``result`` (raised when it is an exception)."""

    def __init__(self, value):
        self._value = value
        self.cancelled = False

    @property
    def result(self):
        if isinstance(self._value, BaseException):
            raise self._value
        return self._value

    def cancel(self):
        self.cancelled = True


class FakeContext:
    """The parts of ``DurableOrchestrationContext`` the orchestrator uses; activities are
    answered by ``activities[name](input)`` and every call is recorded in ``actions``."""

    def __init__(self, request, activities, timer_wins=False):
        self._input = request
        self.activities = activities
        self.timer_wins = timer_wins
        self.actions: list = []
        self.statuses: list = []
        self.current_utc_datetime = datetime(2026, 1, 1, tzinfo=timezone.utc)

    def get_input(self):
        return self._input

    def call_activity(self, name, input_=None):
        self.actions.append(("activity", name, json.loads(json.dumps(input_))))
        return Task(self.activities[name](input_))

    def task_all(self, tasks):
        self.actions.append(("task_all", len(tasks)))
        return Task([t.result for t in tasks])

    def create_timer(self, fire_at):
        self.actions.append(("timer", fire_at.isoformat()))
        return Task(None)

    def task_any(self, tasks):
        self.actions.append(("task_any", len(tasks)))
        return Task(tasks[1] if self.timer_wins else tasks[0])

    def set_custom_status(self, status):
        self.statuses.append(json.loads(json.dumps(status)))


def _activities(rounds, scores):
    """Fake activities: ``ask`` answers the batches in ``rounds`` then ``[]``; ``evaluate``
    gives ``scores[chunk_size]`` (None: failed); ``tell`` keeps the best score."""
    batches = iter(rounds)
    told: list = []

    def tell(payload):
        told.extend(payload["results"])
        done = [r for r in told if r["score"] is not None]
        best = max(done, key=lambda r: r["score"], default=None)
        return {"evaluated": len(told), "failed": len(told) - len(done),
                "best_score": None if best is None else best["score"],
                "best_key": None if best is None else f"k{best['configuration']['chunk_size']}"}

    def evaluate(payload):
        c = payload["configuration"]
        score = scores[c["chunk_size"]]
        return {"configuration": c, "key": f"k{c['chunk_size']}", "score": score, "metrics": None,
                "error": None if score is not None else "ConfigError: no chunks"}

    return {
        "prepare_experiment": lambda r: {"objective": "mrr", "n_valid": 3, "max_evals": 3},
        "ask_configurations": lambda r: {"configurations": next(batches, [])},
        "evaluate_configuration": evaluate,
        "tell_results": tell,
        "write_experiment_report": lambda r: {"report": f"experiments/{r['experiment_id']}/report.json"},
    }, told


def _run(app_functions, context):
    orchestrator = app_functions["experiment_orchestrator"].get_user_function().orchestrator_function
    steps = list(orchestrator_generator_wrapper(orchestrator(context)))
    return steps[-1]


def test_two_rounds_then_report(app_functions):
    activities, told = _activities([[C1, C2], [C3]], {128: 0.5, 256: 0.75, 512: 0.25})
    context = FakeContext(REQUEST, activities)
    out = _run(app_functions, context)
    assert out == {"experiment_id": REQUEST["experiment_id"], "status": "done",
                   "report": f"experiments/{REQUEST['experiment_id']}/report.json",
                   "best_key": "k256", "best_score": 0.75, "evaluated": 3}
    names = [a[1] for a in context.actions if a[0] == "activity"]
    assert names == ["prepare_experiment", "ask_configurations", "evaluate_configuration", "evaluate_configuration",
                     "tell_results", "ask_configurations", "evaluate_configuration", "tell_results",
                     "ask_configurations", "write_experiment_report"]
    assert [a for a in context.actions if a[0] == "task_all"] == [("task_all", 2), ("task_all", 1)]
    # The round timeout is measured from the orchestration clock, not the machine's.
    assert ("timer", "2026-01-01T00:01:00+00:00") in context.actions


def test_a_failed_evaluation_is_told_as_none(app_functions):
    activities, told = _activities([[C1, C2]], {128: None, 256: 0.5})
    out = _run(app_functions, FakeContext(REQUEST, activities))
    assert [(r["configuration"], r["score"], r["error"]) for r in told] == [
        (C1, None, "ConfigError: no chunks"), (C2, 0.5, None)]
    assert out["best_score"] == 0.5 and out["evaluated"] == 2


def test_a_round_past_its_timeout_is_told_failed(app_functions):
    activities, told = _activities([[C1, C2]], {128: 0.5, 256: 0.5})
    _run(app_functions, FakeContext(REQUEST, activities, timer_wins=True))
    assert [(r["score"], r["error"]) for r in told] == [(None, "the round did not finish within 60 s")] * 2


def test_custom_status(app_functions):
    activities, _ = _activities([[C1, C2], [C3]], {128: 0.5, 256: 0.75, 512: 0.25})
    context = FakeContext(REQUEST, activities)
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
        activities, _ = _activities([[C1, C2], [C3]], {128: 0.5, 256: None, 512: 0.25})
        context = FakeContext(REQUEST, activities)
        out = _run(app_functions, context)
        runs.append((context.actions, context.statuses, out))
    assert runs[0] == runs[1]


def test_an_unusable_request_ends_failed_without_asking(app_functions):
    activities, _ = _activities([], {})
    activities["prepare_experiment"] = lambda r: {"error": "GoldenError: file not found"}
    context = FakeContext(REQUEST, activities)
    out = _run(app_functions, context)
    assert out == {"experiment_id": REQUEST["experiment_id"], "status": "failed", "error": "GoldenError: file not found"}
    assert [a[1] for a in context.actions] == ["prepare_experiment"]
    assert context.statuses[-1]["phase"] == "failed"


# Starter ---------------------------------------------------------------------------------------
class FakeClient:
    """The parts of ``DurableOrchestrationClient`` the starter uses."""

    def __init__(self):
        self.started: list = []

    async def start_new(self, name, instance_id=None, client_input=None):
        self.started.append((name, instance_id, client_input))
        return instance_id

    def create_check_status_response(self, request, instance_id):
        return func.HttpResponse(json.dumps({"id": instance_id}), status_code=202, mimetype="application/json")


def _start(app_functions, body: bytes):
    import asyncio

    client = FakeClient()
    starter = app_functions["start_experiment"].get_user_function().client_function
    resp = asyncio.run(starter(func.HttpRequest("POST", "/api/experiments", body=body), client))
    return resp, client


def test_starter_starts_the_orchestrator(app_functions, clean_env):
    clean_env.setenv("RAGTUNE_ROUND_TIMEOUT_S", "90")
    resp, client = _start(app_functions, json.dumps(
        {"golden": "/data/g.jsonl", "documents": "/data/docs", "space": {"chunk_size": [128, 256]}, "seed": 3}).encode())
    assert resp.status_code == 202
    ((name, instance_id, payload),) = client.started
    assert name == "experiment_orchestrator" and instance_id == payload["experiment_id"]
    assert json.loads(resp.get_body()) == {"id": instance_id}
    assert payload == {"experiment_id": instance_id, "round_timeout_s": 90, "golden": "/data/g.jsonl",
                       "documents": "/data/docs", "space": {"chunk_size": [128, 256]}, "optimizer": "gam",
                       "max_evals": 12, "seed": 3, "objective": None}


@pytest.mark.parametrize("body, message", [
    (b"not json", "not valid JSON"),
    (b"[1]", "must be a JSON object"),
    (b"{}", "'golden' is required"),
    (b'{"golden": "g", "documents": "d", "optimizer": "tpe"}', "'optimizer' must be 'gam' or 'random'"),
    (b'{"golden": "g", "documents": "d", "max_evals": 0}', "'max_evals' must be an integer"),
    (b'{"golden": "g", "documents": "d", "seed": -1}', "'seed' must be a non-negative integer"),
    (b'{"golden": "g", "documents": "d", "space": {"chunk_sise": [1]}}', "unknown parameter 'chunk_sise'"),
    (b'{"golden": "g", "documents": "d", "space": {"chunk_size": []}}', "non-empty list"),
    (b'{"golden": "g", "documents": "d", "extra": 1}', "unknown field 'extra'"),
])
def test_starter_refuses_bad_bodies(app_functions, clean_env, body, message):
    resp, client = _start(app_functions, body)
    assert resp.status_code == 400 and client.started == []
    assert any(message in e for e in json.loads(resp.get_body())["errors"]), json.loads(resp.get_body())


# Activities over a local report store ------------------------------------------------------------
class FakeEmbedding:
    model_id = "fake-embedding"
    max_input_tokens = 256


def test_activities_drive_a_real_study(app_functions, clean_env, tmp_path, northwind_dir, monkeypatch):
    """prepare -> ask -> evaluate (run_single_evaluation replaced) -> tell -> report, with the
    real Study and GAM-free random sampler, state in a local report store."""
    import core.evaluation.single as single
    import functions.experiments as experiments

    clean_env.setenv("RAGTUNE_REPORTS", str(tmp_path / "reports"))
    clean_env.setenv("RAGTUNE_OUT_DIR", str(tmp_path / "out"))
    monkeypatch.setattr(experiments, "_models", lambda settings: ({FakeEmbedding.model_id: FakeEmbedding()}, {}))
    monkeypatch.setattr(single.Corpus, "load", classmethod(lambda cls, d: cls(str(d), [])))

    def fake_evaluation(configuration, corpus, golden, *, context):
        if configuration["chunk_size"] == 128 and configuration["number_of_chunks"] == 3:
            return {"key": "x", "status": "failed", "error": "ConfigError: no chunks", "metrics": {}}
        return {"key": "x", "status": "ok", "error": None,
                "metrics": {"mrr": configuration["chunk_size"] / 1000 + configuration["number_of_chunks"] / 100}}

    monkeypatch.setattr(single, "run_single_evaluation", fake_evaluation)
    fn = {name: app_functions[name].get_user_function() for name in (
        "prepare_experiment", "ask_configurations", "evaluate_configuration", "tell_results", "write_experiment_report")}
    request = {**REQUEST, "golden": str(northwind_dir / "golden.jsonl"), "optimizer": "random", "max_evals": 4,
               "space": {"chunking_method": ["recursive"], "search_mode": ["vector"], "chunk_overlap": [0],
                         "number_of_chunks": [3, 5]}}
    prepared = fn["prepare_experiment"](request)
    assert prepared == {"objective": "mrr", "n_valid": 4, "max_evals": 4}
    assert fn["prepare_experiment"](request) == prepared  # a second run keeps the stored study
    ref = {"experiment_id": REQUEST["experiment_id"]}
    rounds = 0
    while True:
        asked = fn["ask_configurations"](ref)["configurations"]
        if not asked:
            break
        assert fn["ask_configurations"](ref)["configurations"] == asked  # pending ones come back first
        results = [fn["evaluate_configuration"]({**ref, "configuration": c}) for c in asked]
        told = fn["tell_results"]({**ref, "results": results})
        rounds += 1
    assert rounds >= 1 and told["evaluated"] == 4 and told["failed"] == 1
    # Hand computation: the best of chunk_size/1000 + number_of_chunks/100 over {128, 256} x {3, 5}.
    assert told["best_score"] == pytest.approx(0.256 + 0.05)
    key = fn["write_experiment_report"](ref)["report"]
    report = json.loads((tmp_path / "reports" / key).read_text())
    assert report["best"]["score"] == pytest.approx(0.306) and report["best"]["configuration"]["chunk_size"] == 256
    assert report["counts"] == {"evaluations": 4, "failed": 1}
    assert len(report["leaderboard"]) == 4 and report["leaderboard"][-1]["status"] == "failed"


def test_prepare_reports_an_unusable_golden_file(app_functions, clean_env, tmp_path):
    clean_env.setenv("RAGTUNE_REPORTS", str(tmp_path))
    out = app_functions["prepare_experiment"].get_user_function()({**REQUEST, "golden": str(tmp_path / "missing.jsonl")})
    assert out["error"].startswith("GoldenError") and "not found" in out["error"]
