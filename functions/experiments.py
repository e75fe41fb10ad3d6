"""Experiments on Durable Functions: the ask / tell loop of ``core.optimization.Study``.

- starter ``POST /api/experiments``: validates the body
  (``core.optimization.stored.parse_experiment_request``), starts :func:`experiment_orchestrator`
  with a new experiment id as its instance id and answers with Durable's check-status response;
- orchestrator :func:`experiment_orchestrator`: ``prepare_experiment``, then rounds of
  ``ask_configurations`` -> ``enqueue_evaluations`` (one queue message per configuration) ->
  wait for one ``evaluated-<key>`` external event per configuration, or the round's timeout ->
  ``tell_results``, until nothing is asked; then ``write_experiment_report``;
- :func:`evaluate_from_queue`, triggered by the evaluations queue (``RAGTUNE_EVALUATIONS_QUEUE``):
  runs the evaluation, stores its result, and raises the completion event on the orchestration;
- :func:`evaluation_poisoned`, triggered by ``<queue>-poison`` (where the host moves a message
  after ``maxDequeueCount`` failed deliveries, ``host.json``): raises a failure event so the
  orchestration does not wait for its timeout.

The state lives in the report store under ``experiments/<experiment id>/``
(``core.optimization.stored.StoredExperiment``); payloads carry ids, configurations and scores.

Request body of ``POST /api/experiments``::

    {"golden": "https://<account>.blob.core.windows.net/golden/g.jsonl",  # or s3://...
     "documents": "https://<account>.blob.core.windows.net/documents/hr",
     "space": {"chunk_size": [256, 512]},  # optional: parameter -> values overrides
     "optimizer": "gam",                   # optional: "gam" (default) or "random"
     "max_evals": 12,                      # optional: 1..1000 (default 12)
     "seed": 0,                            # optional: >= 0 (default 0)
     "objective": "mrr",                   # optional: the metric to maximise
     "vector_store": "pgvector"}           # optional: a backend (default RAGTUNE_VECTOR_STORE)
"""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import timedelta
from typing import Any

import azure.durable_functions as df
import azure.functions as func

logger = logging.getLogger(__name__)

bp = df.Blueprint()


def runtime_status(status: Any) -> str | None:
    """The runtime status (``"Running"``, ``"Completed"``, ...) in a ``get_status`` answer, or
    None when no orchestration has that id (the client answers a 404 with an empty status)."""
    runtime = getattr(status, "runtime_status", None)
    return None if runtime is None else str(getattr(runtime, "value", runtime))


def _json(body: Any, status: int) -> func.HttpResponse:
    return func.HttpResponse(json.dumps(body), status_code=status, mimetype="application/json")


def _settings() -> Any:
    from core.settings import Settings

    return Settings.from_env()


def _experiment(experiment_id: str, settings: Any = None) -> Any:
    from core.optimization.stored import StoredExperiment

    return StoredExperiment((settings or _settings()).report_store().files, experiment_id)


# Starter --------------------------------------------------------------------------------------
@bp.route(route="experiments", methods=["POST"])
@bp.durable_client_input(client_name="client")
async def start_experiment(req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
    """``POST /api/experiments``: start an experiment; 202 with the status URLs, 400 with every
    problem of the body, 500 when the settings are invalid."""
    from core.errors import ConfigError
    from core.optimization.stored import check_request_space, parse_experiment_request
    from core.reports import new_run_id

    try:
        body = json.loads(req.get_body().decode("utf-8-sig"))  # a byte-order mark is allowed
    except (ValueError, UnicodeDecodeError, RecursionError):
        return _json({"errors": ["the body is not valid JSON (UTF-8)"]}, 400)
    try:
        settings = _settings()
    except ConfigError as exc:
        return _json({"errors": [f"the app's settings are invalid: {exc}"]}, 500)
    request, errors = parse_experiment_request(body, remote_only=True, blob_endpoint=settings.blob_endpoint())
    if not errors:
        errors = check_request_space(request, settings)
    if errors:
        return _json({"errors": errors}, 400)
    experiment_id = new_run_id()
    payload = {"experiment_id": experiment_id, "round_timeout_s": settings.round_timeout_s, **request}
    instance_id = await client.start_new("experiment_orchestrator", experiment_id, payload)
    logger.info("started experiment %s", instance_id)
    return client.create_check_status_response(req, instance_id)


# Orchestrator ---------------------------------------------------------------------------------
@bp.orchestration_trigger(context_name="context")
def experiment_orchestrator(context: df.DurableOrchestrationContext):
    """Drive the study: ask, enqueue the evaluations, wait for their events, tell, until
    nothing is asked; then report.

    Deterministic: it reads only its input, activity results and events (no I/O, clock other
    than ``context.current_utc_datetime``, environment or randomness).

    Custom status: ``{phase, evaluated, planned, best_score, best_key}`` with ``phase`` one of
    ``preparing``, ``asking``, ``evaluating``, ``telling``, ``reporting``, ``done``, ``failed``.

    Returns:
        ``{"experiment_id", "status": "done", "report", "best_key", "best_score", "evaluated"}``,
        or ``{"experiment_id", "status": "failed", "error"}`` when the request is unusable.
    """
    request = context.get_input()
    experiment_id = request["experiment_id"]
    status = {"phase": "preparing", "evaluated": 0, "planned": 0, "best_score": None, "best_key": None}
    context.set_custom_status(dict(status))
    prepared = yield context.call_activity("prepare_experiment", request)
    if prepared.get("error"):
        context.set_custom_status({**status, "phase": "failed"})
        return {"experiment_id": experiment_id, "status": "failed", "error": prepared["error"]}
    status["planned"] = prepared["max_evals"]
    ref = {"experiment_id": experiment_id}
    while True:
        context.set_custom_status({**status, "phase": "asking"})
        asked = yield context.call_activity("ask_configurations", ref)
        configurations = asked["configurations"]
        if not configurations:
            break
        context.set_custom_status({**status, "phase": "evaluating"})
        enqueued = yield context.call_activity(
            "enqueue_evaluations", {**ref, "instance_id": context.instance_id, "configurations": configurations})
        results = yield from _wait_for_round(context, configurations, enqueued["keys"], request.get("round_timeout_s"))
        context.set_custom_status({**status, "phase": "telling"})
        told = yield context.call_activity("tell_results", {**ref, "results": results})
        status.update(evaluated=told["evaluated"], best_score=told["best_score"], best_key=told["best_key"])
    context.set_custom_status({**status, "phase": "reporting"})
    report = yield context.call_activity("write_experiment_report", ref)
    context.set_custom_status({**status, "phase": "done"})
    return {"experiment_id": experiment_id, "status": "done", "report": report["report"],
            "best_key": status["best_key"], "best_score": status["best_score"], "evaluated": status["evaluated"]}


def _wait_for_round(context: Any, configurations: list[dict], keys: list[str], timeout_s: Any):
    """Wait for one ``evaluated-<key>`` event per configuration, or until ``timeout_s`` (None:
    no limit); configurations whose event did not come in time are failed (score None)."""
    from core.optimization.stored import evaluated_event, failed_outcome

    events = [context.wait_for_external_event(evaluated_event(key)) for key in keys]
    together = context.task_all(events)
    if not timeout_s:
        return (yield together)
    timer = context.create_timer(context.current_utc_datetime + timedelta(seconds=int(timeout_s)))
    winner = yield context.task_any([together, timer])
    if winner is together:
        timer.cancel()
        return together.result
    return [event.result if event.is_completed else
            failed_outcome(configuration, f"no result within the round's timeout of {timeout_s} s")
            for configuration, event in zip(configurations, events)]


# Activities -----------------------------------------------------------------------------------
@bp.activity_trigger(input_name="request")
def prepare_experiment(request: dict) -> dict:
    """``StoredExperiment.prepare``: returns ``{"objective", "n_valid", "max_evals"}``, or
    ``{"error": message}`` when the golden file, the documents, the space or the settings are
    unusable (never raises: the orchestration ends ``failed`` with the message)."""
    from core.errors import RagtuneError

    try:
        settings = _settings()
        return _experiment(request["experiment_id"], settings).prepare(request, settings)
    except RagtuneError as exc:
        logger.warning("experiment %s cannot start: %s", request.get("experiment_id"), exc)
        return {"error": f"{type(exc).__name__}: {exc}"}
    except Exception as exc:  # noqa: BLE001 - the orchestration ends "failed" with the reason
        logger.exception("experiment %s cannot start", request.get("experiment_id"))
        return {"error": f"{type(exc).__name__}: {exc}"}


@bp.activity_trigger(input_name="ref")
def ask_configurations(ref: dict) -> dict:
    """``StoredExperiment.ask``: ``{"configurations": [configuration dict, ...]}``."""
    return {"configurations": _experiment(ref["experiment_id"]).ask()}


@bp.activity_trigger(input_name="batch")
def enqueue_evaluations(batch: dict) -> dict:
    """Put one evaluation message per configuration on the evaluations queue (creating the
    queue when missing); a configuration whose message was sent by an earlier try of this
    activity is not sent again. Returns ``{"keys": [configuration key, ...]}`` in the same
    order."""
    settings = _settings()
    experiment = _experiment(batch["experiment_id"], settings)
    queue = settings.queue_client(settings.evaluations_queue)
    _ensure_queue(queue)
    keys, sent = [], 0
    for configuration in batch["configurations"]:
        message = experiment.evaluation_message(batch["instance_id"], configuration)
        keys.append(message["key"])
        if experiment.was_enqueued(message["key"]):
            continue  # a retried activity: sent before
        queue.send_message(json.dumps(message).encode("utf-8"))
        experiment.mark_enqueued(message["key"])
        sent += 1
    logger.info("experiment %s: %d evaluations enqueued", batch["experiment_id"], sent)
    return {"keys": keys}


def _ensure_queue(queue: Any) -> None:
    from azure.core.exceptions import ResourceExistsError

    try:
        queue.create_queue()
    except ResourceExistsError:
        pass


@bp.activity_trigger(input_name="told")
def tell_results(told: dict) -> dict:
    """``StoredExperiment.tell``: ``{"evaluated", "failed", "best_score", "best_key"}``."""
    return _experiment(told["experiment_id"]).tell(told["results"])


@bp.activity_trigger(input_name="ref")
def write_experiment_report(ref: dict) -> dict:
    """``StoredExperiment.write_report``: ``{"report": the report's key in the store}``."""
    return {"report": _experiment(ref["experiment_id"]).write_report()}


# Queue-triggered evaluations --------------------------------------------------------------------
@bp.queue_trigger(arg_name="msg", queue_name="%RAGTUNE_EVALUATIONS_QUEUE%", connection="RAGTUNE_STORAGE_CONNECTION")
@bp.durable_client_input(client_name="client")
async def evaluate_from_queue(msg: func.QueueMessage, client: df.DurableOrchestrationClient) -> None:
    """Evaluate the configuration in ``msg`` (``StoredExperiment.evaluate``, in a worker
    thread), store its result and raise ``evaluated-<key>`` on the orchestration with the
    outcome. A re-delivered message whose result is stored raises the event again without
    evaluating.

    Raises:
        ConfigError: a malformed message (after ``maxDequeueCount`` tries it goes to the
            poison queue, where nothing is lost).
        StoreError: the store failed (the host delivers the message again).
    """
    from core.optimization.stored import evaluated_event, parse_evaluation_message

    message = parse_evaluation_message(msg.get_body())
    settings = _settings()
    outcome = await asyncio.to_thread(_experiment(message["experiment_id"], settings).evaluate, message, settings)
    outcome.pop("stored", None)
    await _raise(client, message, evaluated_event(message["key"]), outcome)


@bp.queue_trigger(arg_name="msg", queue_name="%RAGTUNE_EVALUATIONS_QUEUE%-poison",
                  connection="RAGTUNE_STORAGE_CONNECTION")
@bp.durable_client_input(client_name="client")
async def evaluation_poisoned(msg: func.QueueMessage, client: df.DurableOrchestrationClient) -> None:
    """A message that failed ``maxDequeueCount`` times: raise ``evaluated-<key>`` with a
    failed outcome so the orchestration tells the study at once.

    Raises:
        ConfigError: a message too malformed to name its orchestration (it stays in the
            poison queue's own poison queue).
    """
    from core.optimization.stored import evaluated_event, failed_outcome, parse_evaluation_message

    message = parse_evaluation_message(msg.get_body())
    outcome = failed_outcome(message["configuration"],
                             f"the evaluation failed on every delivery and its message was moved to the poison queue "
                             f"(message id {msg.id})")
    logger.error("experiment %s: configuration %s poisoned", message["experiment_id"], message["key"])
    await _raise(client, message, evaluated_event(message["key"]), outcome)


async def _raise(client: Any, message: dict, event: str, outcome: dict) -> None:
    """Raise ``event`` on the message's orchestration; an orchestration that is gone (ended or
    purged) is logged, not retried."""
    try:
        await client.raise_event(message["instance_id"], event, outcome)
    except Exception as exc:  # noqa: BLE001 - the SDK raises plain Exception for 404 / 410
        text = str(exc)  # the SDK's messages for 410 and 404
        if "is gone" in text or text.startswith("No instance with ID"):
            logger.warning("orchestration %s no longer takes events (%s): %s", message["instance_id"], event, exc)
            return
        raise


# HTTP reads -------------------------------------------------------------------------------------
@bp.route(route="experiments/{experiment_id}", methods=["GET"])
def get_experiment(req: func.HttpRequest) -> func.HttpResponse:
    """``GET /api/experiments/{experiment_id}``: the final report when written, else the report
    so far (``complete`` False; per-configuration results included). 400 for a bad id, 404
    for an unknown one."""
    from functions.reports import answer, error, json_response, valid_id

    experiment_id = req.route_params.get("experiment_id")
    if not valid_id(experiment_id):
        return error("experiment id may only hold letters, digits, '_', '.' and '-'", 400)

    def read(store: Any) -> func.HttpResponse:
        from core.optimization.stored import StoredExperiment

        report = StoredExperiment(store.files, experiment_id).current_report()
        return error(f"no experiment {experiment_id!r}", 404) if report is None else json_response(report)

    return answer(read)


@bp.route(route="experiments/{experiment_id}/status", methods=["GET"])
@bp.durable_client_input(client_name="client")
async def get_experiment_status(req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
    """``GET /api/experiments/{experiment_id}/status``: the orchestration's ``{instance_id,
    runtime_status, custom_status, created_time, last_updated_time, output}`` through the
    Durable client. 400 for a bad id, 404 when no orchestration has that id, 500 (one line)
    when the Durable client fails."""
    from functions.reports import error, json_response, valid_id

    experiment_id = req.route_params.get("experiment_id")
    if not valid_id(experiment_id):
        return error("experiment id may only hold letters, digits, '_', '.' and '-'", 400)
    try:
        status = await client.get_status(experiment_id)
    except Exception:  # noqa: BLE001 - never a stack trace in an answer
        logger.exception("status of experiment %s could not be read", experiment_id)
        return error("the orchestration status could not be read", 500)
    runtime = runtime_status(status)
    if runtime is None:
        return error(f"no experiment {experiment_id!r}", 404)

    def when(value: Any) -> Any:
        return value.isoformat() if hasattr(value, "isoformat") else value

    return json_response({"instance_id": experiment_id, "runtime_status": runtime,
                          "custom_status": status.custom_status, "created_time": when(status.created_time),
                          "last_updated_time": when(status.last_updated_time), "output": status.output})
