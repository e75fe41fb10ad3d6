"""Activities called with a retry policy, and a failed experiment resumed over HTTP.

The orchestrator is stepped as a generator over a real ``DurableOrchestrationContext`` (what
it asks for, with which retry options), run through the SDK's replay engine
(``tests.support.durable.ReplayHost``, which writes the history DTFx's retry interceptor
writes: a failed task, a timer, the task again), and resumed with ``POST
/api/experiments/{id}/resume`` over the real activities, a local report store and an Azurite
queue.
"""

from __future__ import annotations

import asyncio
import json

import azure.durable_functions as df
import azure.functions as func
import pytest

from core.errors import StoreError
from core.experiment.orchestration import ACTIVITY_FIRST_RETRY_MS, ACTIVITY_MAX_ATTEMPTS
from tests.functions.test_experiments import (C1, C2, EXPERIMENT_ID, NARROW, REQUEST, _host, _receive,  # noqa: F401
                                              _request, queued_experiment)
from tests.support.durable import RecordingClient, ReplayHost, user_function

ACTIVITIES = ("prepare_experiment", "ask_configurations", "enqueue_evaluations", "tell_results",
              "write_experiment_report")


def _context(input_: dict) -> df.DurableOrchestrationContext:
    """A real orchestration context at the start of a generation (history: orchestrator and
    execution started), as the SDK builds it from the host's JSON."""
    history = [{"EventType": 12, "EventId": -1, "IsPlayed": False, "Timestamp": "2026-01-01T00:00:00Z"},
               {"EventType": 0, "EventId": -1, "IsPlayed": False, "Timestamp": "2026-01-01T00:00:00Z",
                "Version": ""}]
    return df.DurableOrchestrationContext.from_json(json.dumps({
        "history": history, "instanceId": EXPERIMENT_ID, "isReplaying": False, "parentInstanceId": None,
        "input": json.dumps(input_)}))


def _activity_of(task) -> tuple[str, dict, dict]:
    """``(activity name, input, retry options)`` of a yielded activity task; fails for a call
    without retry options."""
    from azure.durable_functions.models.actions.CallActivityWithRetryAction import CallActivityWithRetryAction

    (action,) = task.action_repr  # a retried task: its one action (later tries add none)
    assert isinstance(action, CallActivityWithRetryAction), type(action).__name__
    return action.function_name, json.loads(action.input_), action.retry_options.to_json()


RETRY = {"firstRetryIntervalInMilliseconds": ACTIVITY_FIRST_RETRY_MS, "maxNumberOfAttempts": ACTIVITY_MAX_ATTEMPTS}


def test_stepping_a_round_every_activity_has_the_retry_policy(app_functions):
    orchestrator = app_functions["experiment_orchestrator"].get_user_function().orchestrator_function
    context = _context({"experiment_id": EXPERIMENT_ID})
    steps = orchestrator(context)
    ask = next(steps)
    assert _activity_of(ask) == ("ask_configurations", {"experiment_id": EXPERIMENT_ID}, RETRY)
    summary = {"evaluated": 0, "failed": 0, "pending": 2, "planned": 3, "best_score": None, "best_key": None,
               "finished": False}
    enqueue = steps.send({"configurations": [C1, C2], "keys": ["k128", "k256"], "stored": ["k128"],
                          "round_timeout_s": 60, "summary": summary})
    assert _activity_of(enqueue)[0::2] == ("enqueue_evaluations", RETRY)
    wait = steps.send({"keys": ["k128", "k256"]})
    # k128's result was stored while the orchestration was down: only k256's event is awaited
    assert [a.external_event_name for a in wait.children[0].action_repr] == ["evaluated-k256"]
    tell = steps.send(wait.children[0])
    assert _activity_of(tell) == ("tell_results", {"experiment_id": EXPERIMENT_ID, "keys": ["k128", "k256"],
                                                   "timed_out": [], "round_timeout_s": 60}, RETRY)
    with pytest.raises(StopIteration):
        steps.send({})
    assert context.will_continue_as_new


def test_stepping_an_activity_that_failed_every_try_ends_failed_with_the_step(app_functions):
    orchestrator = app_functions["experiment_orchestrator"].get_user_function().orchestrator_function
    context = _context({"experiment_id": EXPERIMENT_ID, "prepare": True})
    steps = orchestrator(context)
    assert _activity_of(next(steps))[0::2] == ("prepare_experiment", RETRY)
    with pytest.raises(Exception, match="StoreError: cannot read"):
        steps.throw(Exception("StoreError: cannot read the study \n details"))
    assert context.custom_status == {
        "phase": "failed", "step": "prepare_experiment",
        "error": f"prepare_experiment failed on each of its {ACTIVITY_MAX_ATTEMPTS} tries: StoreError: cannot read the study"}


def _flaky(activity, failures: int):
    """``activity`` raising a StoreError (a storage outage) on its first ``failures`` calls."""
    calls = {"n": 0}

    def run(data):
        calls["n"] += 1
        if calls["n"] <= failures:
            raise StoreError("cannot write the study: 503 Server Busy")
        return activity(data)

    return run


def test_a_storage_error_in_each_activity_is_retried_through_the_replay_engine(app_functions):
    """Each of prepare, ask, enqueue, tell and report fails twice (a 503 from the store) and
    succeeds on its third try: the experiment completes as if nothing happened."""
    host, told = _host(app_functions, [[C1, C2]], {128: 0.5, 256: 0.75, 512: 0.25})
    for name in ACTIVITIES:
        host.activities[name] = _flaky(host.activities[name], 2)
    status, out = host.run(REQUEST)
    assert status == "completed" and out["best_score"] == 0.75 and told == ["k128", "k256"]
    # each activity's first two calls fail: prepare and report take 3 tries, ask 2 failures + its two calls
    assert host.activity_calls.count("prepare_experiment") == 3
    assert host.activity_calls.count("ask_configurations") == 2 + 2  # two failures, then two rounds' asks
    assert host.activity_calls.count("write_experiment_report") == 3
    assert all(options == RETRY for options in host.retry_options)
    assert "failed" not in [s["phase"] for s in host.statuses]


def test_an_activity_failing_on_every_try_ends_the_orchestration_failed(app_functions):
    host, _ = _host(app_functions, [[C1, C2]], {128: 0.5, 256: 0.75, 512: 0.25})
    host.activities["enqueue_evaluations"] = _flaky(host.activities["enqueue_evaluations"], 10**6)
    status, error = host.run(REQUEST)
    assert status == "failed" and "503 Server Busy" in error
    assert host.activity_calls.count("enqueue_evaluations") == ACTIVITY_MAX_ATTEMPTS
    last = host.statuses[-1]
    assert (last["phase"], last["step"], last["evaluated"]) == ("failed", "enqueue_evaluations", 0)
    assert last["error"].startswith(f"enqueue_evaluations failed on each of its {ACTIVITY_MAX_ATTEMPTS} tries: ")


def test_replaying_retries_gives_the_same_actions(app_functions):
    runs = []
    for _ in range(2):
        host, told = _host(app_functions, [[C1, C2]], {128: 0.5, 256: 0.75, 512: 0.25})
        host.activities["tell_results"] = _flaky(host.activities["tell_results"], 3)
        runs.append((host.run(REQUEST), host.activity_calls, host.statuses, host.generations, told))
    assert runs[0] == runs[1]


# Resuming over HTTP ------------------------------------------------------------------------------
def _resume(app_functions, client, experiment_id=EXPERIMENT_ID):
    fn = user_function(app_functions, "resume_experiment")
    req = func.HttpRequest("POST", f"https://app.example/api/experiments/{experiment_id}/resume", body=b"",
                           route_params={"experiment_id": experiment_id})
    resp = asyncio.run(fn(req, client))
    return resp.status_code, json.loads(resp.get_body())


def test_a_failed_experiment_resumes_without_redoing_stored_evaluations(queued_experiment, northwind_dir):
    """A round's enqueue activity fails for good after one of its two messages was sent and
    evaluated: the orchestration is Failed. Resumed, the next round asks the two pending
    configurations first, sends only the one not sent, waits only for it (the other's result is
    stored), evaluates it alone, and the experiment completes with both."""
    fn, calls = queued_experiment["fn"], queued_experiment["calls"]
    app_functions = queued_experiment["app_functions"]
    request = _request(northwind_dir, max_evals=2, space={**NARROW, "number_of_chunks": [3, 5], "chunk_size": [256]})
    fn["prepare_experiment"](request)
    ref = {"experiment_id": EXPERIMENT_ID}
    asked = fn["ask_configurations"](ref)
    first, second = asked["configurations"]
    fn["enqueue_evaluations"]({**ref, "configurations": [first]})  # the second send failed: Failed
    (message,) = _receive(queued_experiment["azurite"], queued_experiment["queue"])
    client = RecordingClient()
    asyncio.run(fn["evaluate_from_queue"](message, client))  # its event goes to a failed orchestration
    assert len(calls) == 1
    client.failed.add(EXPERIMENT_ID)

    status, answer = _resume(app_functions, client)
    assert status == 202, answer
    assert answer["id"] == EXPERIMENT_ID and answer["resumed_from"] == "Failed"
    assert answer["status_url"] == f"https://app.example/api/experiments/{EXPERIMENT_ID}/status"
    assert answer["message"] == f"experiment {EXPERIMENT_ID} resumes at its next round: 0 of 2 configurations told, 2 pending"
    ((name, instance_id, input_),) = client.started
    assert (name, instance_id, input_) == ("experiment_orchestrator", EXPERIMENT_ID, ref)

    waited: list = []

    def event(name):
        waited.append(name)
        for m in _receive(queued_experiment["azurite"], queued_experiment["queue"]):
            asyncio.run(fn["evaluate_from_queue"](m, client))
        return next((data for _, e, data in client.raised if e == name), None)

    activities = {name: fn[name] for name in ACTIVITIES}
    orchestrator = app_functions["experiment_orchestrator"].get_user_function().orchestrator_function
    host = ReplayHost(orchestrator, activities, event, instance_id=EXPERIMENT_ID)
    resumed_ask = fn["ask_configurations"](ref)
    assert resumed_ask["keys"] == asked["keys"] and resumed_ask["stored"] == [asked["keys"][0]]
    status, out = host.run(input_)
    assert status == "completed", out
    assert len(calls) == 2 and calls[1]["number_of_chunks"] == second["number_of_chunks"]
    assert waited == [f"evaluated-{asked['keys'][1]}"]
    assert out["evaluated"] == 2 and out["best_score"] == pytest.approx(0.256 + 0.05)  # mrr = 256/1000 + 5/100


@pytest.mark.parametrize("runtime, wanted", [("Running", "it is still running (Running)"),
                                             ("Pending", "it is still running (Pending)"),
                                             ("Completed", "it completed")])
def test_a_running_or_completed_experiment_is_not_resumed(queued_experiment, northwind_dir, runtime, wanted):
    queued_experiment["fn"]["prepare_experiment"](_request(northwind_dir, max_evals=1))
    client = RecordingClient()
    client.statuses[EXPERIMENT_ID] = runtime
    status, answer = _resume(queued_experiment["app_functions"], client)
    assert (status, answer) == (409, {"error": f"experiment {EXPERIMENT_ID} is not resumed: {wanted}",
                                      "runtime_status": runtime})
    assert client.started == []


def test_resuming_an_experiment_that_never_prepared_starts_at_prepare(queued_experiment, northwind_dir):
    """The starter stored the request, then the prepare step failed on every try: resumed,
    the orchestration prepares it again; a terminated one resumes too; an unknown id is 404."""
    from core.experiment import Experiment
    from core.reports import LocalFiles

    Experiment(LocalFiles(queued_experiment["reports"]), EXPERIMENT_ID).store_request(_request(northwind_dir))
    client = RecordingClient()
    client.statuses[EXPERIMENT_ID] = "Terminated"
    status, answer = _resume(queued_experiment["app_functions"], client)
    assert status == 202 and answer["message"] == f"experiment {EXPERIMENT_ID} resumes at prepare"
    assert client.started == [("experiment_orchestrator", EXPERIMENT_ID, {"experiment_id": EXPERIMENT_ID,
                                                                         "prepare": True})]
    status, answer = _resume(queued_experiment["app_functions"], RecordingClient(), "20990101T000000Z-none")
    assert (status, answer) == (404, {"error": "no experiment '20990101T000000Z-none'"})
    status, answer = _resume(queued_experiment["app_functions"], RecordingClient(), "..")
    assert status == 400


def test_concurrent_resumes_start_the_orchestration_once(queued_experiment, northwind_dir):
    queued_experiment["fn"]["prepare_experiment"](_request(northwind_dir, max_evals=1))
    client = RecordingClient(latency_s=0.02)
    client.failed.add(EXPERIMENT_ID)
    fn = user_function(queued_experiment["app_functions"], "resume_experiment")

    async def together():
        requests = [func.HttpRequest("POST", f"/api/experiments/{EXPERIMENT_ID}/resume", body=b"",
                                     route_params={"experiment_id": EXPERIMENT_ID}) for _ in range(5)]
        return await asyncio.gather(*(fn(r, client) for r in requests))

    answers = asyncio.run(together())
    assert sorted(r.status_code for r in answers) == [202, 409, 409, 409, 409]
    assert len(client.started) == 1 and client.refused == []
