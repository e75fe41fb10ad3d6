"""Experiments on Durable Functions: the steps of ``core.experiment.Experiment``, fanned out.

- ``POST /api/experiments/{id}/resume``: starts a failed experiment's orchestration again from
  its stored state (:func:`resume_experiment`); a running or completed one is refused (409);
- starter ``POST /api/experiments``: validates the body
  (``core.experiment.requests.parse_experiment_request``), starts :func:`experiment_orchestrator`
  with a new experiment id as its instance id (the request is stored beside the experiment, the
  orchestration's input is ``{"experiment_id", "prepare": true}``), and answers 202 with the experiment id and the
  app's own URLs (``/api/experiments/{id}/status``, ``/api/experiments/{id}``), never Durable's
  management URLs (they carry the system key);
- orchestrator :func:`experiment_orchestrator`: its first generation runs ``prepare_experiment``
  (a failure ends the orchestration Failed with a short reason) and continues as new; every
  later generation is one round: ``ask_configurations`` (up to ``RAGTUNE_PARALLEL_EVALUATIONS``),
  ``enqueue_evaluations`` (one queue message per configuration), a wait for one
  ``evaluated-<key>`` event per configuration or the round's timeout, ``tell_results``, then
  ``continue_as_new`` with only the experiment id, so the history of a generation stays the
  size of one round whatever ``max_evals`` is; when nothing is asked, ``write_experiment_report``;
- :func:`evaluate_from_queue`, triggered by the evaluations queue (``RAGTUNE_EVALUATIONS_QUEUE``):
  evaluates within ``RAGTUNE_EVALUATION_TIMEOUT_S``, stores the result, and raises the event;
  a transient failure (storage, timeouts, 429 / 5xx answers) raises so the queue delivers the
  message again;
- :func:`evaluation_poisoned`, triggered by ``<queue>-poison`` (after ``maxDequeueCount``
  deliveries, ``host.json``): checks the message as the evaluations queue does, and that a
  delivery of it failed, then stores a failed result, unless an OK one is stored, and raises
  the event so the orchestration does not wait for its timeout.

Messages and events carry the experiment id, configurations and keys only: the evaluator reads
the golden file's and the documents' addresses from the stored experiment, and the study is
told from stored results only. Texts that travel are cut to ``core.experiment.MAX_MESSAGE_BYTES``
with the full text beside the experiment.

Request body of ``POST /api/experiments``::

    {"golden": "https://<account>.blob.core.windows.net/golden/g.jsonl",  # or s3://...
     "documents": "https://<account>.blob.core.windows.net/documents/hr",
     "space": {"chunk_size": [256, 512]},  # optional: parameter -> values overrides
     "optimizer": "screen",                # optional: "screen" (default), "gam" or "random"
     "max_evals": 12,                      # optional: 1..1000 (default 12)
     "seed": 0,                            # optional: >= 0 (default 0)
     "objective": "mrr",                   # optional: the metric to maximise
     "vector_store": "pgvector",           # optional: a backend (default RAGTUNE_VECTOR_STORE)
     "multi_fidelity": true}               # optional: rungs for "gam" or "random" (default false; "screen" has them)
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import azure.durable_functions as df
import azure.functions as func

from core.errors import ConfigError, RagtuneError, StoreError
from core.redaction import json_without_locations
from core.reports import new_run_id
from core.settings import Settings
from functions.shared import (activity_with_retry, answer, error, json_response, logged, read_status, runtime_status,
                              shown, start_once, valid_id)

if TYPE_CHECKING:
    from core.experiment.types import EvaluationRequest
    from core.reports.store import ReportStore

logger = logging.getLogger(__name__)

bp = df.Blueprint()

__all__ = ["bp", "runtime_status"]


def _settings() -> Any:
    return Settings.from_env()


_FILES: tuple[Any, Any] | None = None
_FILES_LOCK = threading.Lock()


def _report_files(settings: Settings) -> Any:
    """The report store's ``Files`` for ``settings``, one object while the settings stay the
    same: its HTTP connections, and what ``core.experiment`` remembers of each experiment,
    serve every message of the process."""
    global _FILES
    with _FILES_LOCK:
        if _FILES is None or _FILES[0] != settings:
            _FILES = (settings, settings.report_store().files)
        return _FILES[1]


def _experiment(experiment_id: str, settings: Settings | None = None) -> Any:
    from core.experiment import Experiment

    return Experiment(_report_files(settings or _settings()), experiment_id)


# Starter --------------------------------------------------------------------------------------
@bp.route(route="experiments", methods=["POST"])
@bp.durable_client_input(client_name="client")
async def start_experiment(req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
    """``POST /api/experiments``: start an experiment; 202 with ``{"id", "status_url",
    "report_url"}`` (and ``Location``: the status URL), 400 with every problem of the body, 500
    when the settings are invalid."""
    from core.experiment.requests import check_request_space, parse_experiment_request

    try:
        body = json.loads(req.get_body().decode("utf-8-sig"))  # a byte-order mark is allowed
    except (ValueError, UnicodeDecodeError, RecursionError):
        return json_response({"errors": ["the body is not valid JSON (UTF-8; integers of at most 4,300 digits)"]}, 400)
    try:
        settings = _settings()
    except ConfigError as exc:
        logger.error("the app's settings are invalid: %s", logged(exc))
        return json_response({"errors": [f"the app's settings are invalid: {shown(exc)}"]}, 500)
    request, errors = parse_experiment_request(body, remote_only=True, blob_endpoint=settings.blob_endpoint())
    if not errors:
        errors = check_request_space(request, settings)
    if errors:
        return json_response({"errors": errors}, 400)
    experiment_id = new_run_id()
    try:
        _experiment(experiment_id, settings).store_request(request)
    except Exception:  # noqa: BLE001 - never a stack trace in an answer
        logger.exception("experiment %s: the request could not be stored", experiment_id)
        return json_response({"errors": ["the report store could not be written"]}, 500)
    instance_id = await client.start_new("experiment_orchestrator", experiment_id,
                                         {"experiment_id": experiment_id, "prepare": True})
    logger.info("started experiment %s", instance_id)
    return _accepted(req, instance_id)


def _accepted(req: func.HttpRequest, instance_id: str, **extra: Any) -> func.HttpResponse:
    """202 with ``{"id", "status_url", "report_url", **extra}`` and ``Location``: the app's own
    URLs of the experiment, on the request's origin."""
    from urllib.parse import urlsplit

    url = urlsplit(req.url)
    origin = f"{url.scheme}://{url.netloc}" if url.scheme and url.netloc else ""
    base = f"{origin}/api/experiments/{instance_id}"
    return json_response({"id": instance_id, "status_url": f"{base}/status", "report_url": base, **extra}, 202,
                         headers={"Location": f"{base}/status"})


@bp.route(route="experiments/{experiment_id}/resume", methods=["POST"])
@bp.durable_client_input(client_name="client")
async def resume_experiment(req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
    """``POST /api/experiments/{experiment_id}/resume``: start a failed (or terminated)
    experiment's orchestration again from its stored state
    (``core.experiment.orchestration.resume_plan``): at prepare when it was never prepared,
    else at its next round, whose pending configurations come first; stored evaluations are
    not sent or run again.

    Status: 202 with ``{"id", "status_url", "report_url", "resumed_from", "message"}``; 409 with
    ``{"error", "runtime_status"}`` when the orchestration is running or completed; 404 when
    nothing is stored under the id; 400 for a bad id; 500 (one line) when the Durable client,
    the settings or the store fail.
    """
    from core.experiment.orchestration import resume_plan

    experiment_id = req.route_params.get("experiment_id")
    if not valid_id(experiment_id):
        return error("experiment id may only hold letters, digits, '_', '.' and '-'", 400)
    try:
        runtime = runtime_status(await client.get_status(experiment_id))
    except Exception:  # noqa: BLE001 - never a stack trace in an answer
        logger.exception("status of experiment %s could not be read", experiment_id)
        return error("the orchestration status could not be read", 500)
    try:
        plan = resume_plan(_experiment(experiment_id), runtime)
    except (ConfigError, StoreError) as exc:
        logger.error("experiment %s cannot be resumed: %s", experiment_id, exc)
        return error("the experiment's stored state could not be read", 500)
    if plan.outcome == "unknown":
        return error(plan.message, 404)
    if plan.outcome != "resume":
        return json_response({"error": plan.message, "runtime_status": runtime}, 409)
    try:
        started, refusal = await start_once(client, experiment_id, dict(plan.input))
    except Exception:  # noqa: BLE001 - never a stack trace in an answer
        logger.exception("experiment %s could not be started again", experiment_id)
        return error("the orchestration could not be started", 500)
    if not started:
        return json_response({"error": f"experiment {experiment_id} is not resumed: {refusal}",
                              "runtime_status": runtime_status(await client.get_status(experiment_id))}, 409)
    logger.info("experiment %s resumed (was %s): %s", experiment_id, runtime, plan.message)
    return _accepted(req, experiment_id, resumed_from=runtime, message=plan.message)


# Orchestrator ---------------------------------------------------------------------------------
@bp.orchestration_trigger(context_name="context")
def experiment_orchestrator(context: df.DurableOrchestrationContext):
    """One generation of the experiment: prepare (first generation), or one round of ask,
    enqueue, wait, tell; then continue as new with ``{"experiment_id"}`` only.

    Deterministic: it reads only its input, activity results and events (no I/O, clock other
    than ``context.current_utc_datetime``, environment or randomness).

    Every activity is called with the retry policy of ``core.experiment.orchestration``
    (``ACTIVITY_MAX_ATTEMPTS`` tries, ``ACTIVITY_FIRST_RETRY_MS`` apart): each step may be
    retried, so a passing storage error costs a wait. One that outlasts the retries ends the
    orchestration Failed; ``POST /api/experiments/{id}/resume`` starts it again from the stored
    state.

    Custom status: ``{phase, evaluated, planned, best_score, best_key}`` with ``phase`` one of
    ``preparing``, ``evaluating``, ``reporting``, ``done``, ``failed`` (then with ``error``, a
    short reason, and ``step``, the activity that failed).

    Returns:
        ``{"experiment_id", "status": "done", "report", "best_key", "best_score", "evaluated"}``
        in the last generation.

    Raises:
        ExperimentFailed: the experiment cannot run (its prepare failed): the orchestration
            ends Failed with the short reason.
        Exception: an activity failed on every try (the orchestration ends Failed).
    """
    from core.experiment import ExperimentFailed

    data = context.get_input()
    experiment_id = data["experiment_id"]
    ref = {"experiment_id": experiment_id}
    if data.get("prepare") or "golden" in data:  # the first generation (the request is stored, or given)
        context.set_custom_status({"phase": "preparing", "evaluated": 0, "planned": 0, "best_score": None,
                                   "best_key": None})
        prepared = yield from activity_with_retry(context, "prepare_experiment", data if "golden" in data else ref)
        if prepared.get("error"):
            context.set_custom_status({"phase": "failed", "error": prepared["error"], "step": "prepare_experiment"})
            raise ExperimentFailed(prepared["error"])
        context.continue_as_new(ref)
        return None
    asked = yield from activity_with_retry(context, "ask_configurations", ref)
    summary = asked["summary"]
    status = {k: summary[k] for k in ("evaluated", "planned", "best_score", "best_key")}
    keys = asked["keys"]
    if not keys:
        context.set_custom_status({**status, "phase": "reporting"})
        report = yield from activity_with_retry(context, "write_experiment_report", ref, status)
        context.set_custom_status({**status, "phase": "done"})
        return {"experiment_id": experiment_id, "status": "done", "report": report["report"],
                "best_key": status["best_key"], "best_score": status["best_score"], "evaluated": status["evaluated"]}
    context.set_custom_status({**status, "phase": "evaluating", "round": len(keys)})
    batch = {"requests": asked["requests"]} if asked.get("requests") else {"configurations": asked["configurations"]}
    yield from activity_with_retry(context, "enqueue_evaluations", {**ref, **batch}, status)
    stored = set(asked.get("stored") or [])  # a resumed round: these results came while it was down
    events = dict(zip(keys, asked.get("events") or [None] * len(keys)))
    waiting = [k for k in keys if k not in stored]
    arrived = (yield from _wait_for_round(context, waiting, asked.get("round_timeout_s"),
                                          [events[k] for k in waiting])) if waiting else []
    yield from activity_with_retry(context, "tell_results", {**ref, "keys": keys,
                                                             "timed_out": [k for k, came in zip(waiting, arrived)
                                                                           if not came],
                                                             "round_timeout_s": asked.get("round_timeout_s")}, status)
    context.continue_as_new(ref)
    return None


def _wait_for_round(context: df.DurableOrchestrationContext, keys: list[str], timeout_s: Any,
                    names: list[Any] | None = None):
    """Wait for one completion event per key (``names``, else ``evaluated-<key>``), or until
    ``timeout_s`` (None: no limit).

    Returns:
        One bool per key: whether its event came (its data is not read).
    """
    from core.experiment.types import evaluated_event

    names = names or [None] * len(keys)
    events = [context.wait_for_external_event(name or evaluated_event(key)) for key, name in zip(keys, names)]
    together = context.task_all(events)
    if not timeout_s:
        yield together
        return [True] * len(keys)
    timer = context.create_timer(context.current_utc_datetime + timedelta(seconds=int(timeout_s)))
    winner = yield context.task_any([together, timer])
    if winner is together:
        timer.cancel()
        return [True] * len(keys)
    return [bool(event.is_completed) for event in events]


# Activities -----------------------------------------------------------------------------------
@bp.activity_trigger(input_name="request")
def prepare_experiment(request: dict) -> dict:
    """``core.experiment.prepare.prepare_request`` of ``{"experiment_id"}`` (the request stored
    by the starter) or of a whole request: ``Prepared.to_dict()``, or ``{"error": short
    reason}`` (full text beside the experiment) when the golden file, the documents, the space
    or the settings are unusable; a storage failure raises (the activity is retried)."""
    from core.experiment import cut_text
    from core.experiment.prepare import prepare_request

    experiment_id = request.get("experiment_id")
    try:
        settings = _settings()
        given = request if "golden" in request else None
        return prepare_request(settings.report_store().files, experiment_id, given, settings).to_dict()
    except StoreError:
        raise
    except Exception as exc:  # noqa: BLE001 - the orchestration ends Failed with the reason
        if not isinstance(exc, RagtuneError):
            logger.exception("experiment %s cannot start", experiment_id)
        else:
            logger.warning("experiment %s cannot start: %s", experiment_id, exc)
        text = f"{type(exc).__name__}: {exc}"
        try:
            return {"error": _experiment(experiment_id).cap(text)}
        except Exception:  # noqa: BLE001 - no store to keep the full text: cut it
            return {"error": cut_text(text)}


@bp.activity_trigger(input_name="ref")
def ask_configurations(ref: dict) -> dict:
    """The round's evaluation requests (``Experiment.ask_requests(RAGTUNE_PARALLEL_EVALUATIONS)``:
    with multi-fidelity a round is a rung's work, promotions first, each request carrying its
    rung and question ids; the GAM is fitted here): ``{"configurations", "keys", "requests",
    "events", "stored", "round_timeout_s", "summary"}`` (``events``: each request's completion
    event, ``evaluated-<key>`` or ``evaluated-<key>-r<rung>``), where
    ``stored`` lists the keys, among configurations asked before and still pending (a resumed
    or retried round), whose result is stored already: no event is waited for them."""
    settings = _settings()
    experiment = _experiment(ref["experiment_id"], settings)
    study = experiment.study()
    pending = {t.configuration.key for t in study.pending_trials}
    requests = experiment.ask_requests(settings.parallel_evaluations, study=study)
    keys = [r.key for r in requests]
    rung_zero = [r.key for r in requests if not r.rung and r.key in pending]
    return {"configurations": [dict(r.configuration) for r in requests], "keys": keys,
            "requests": [r.to_dict() for r in requests], "events": [r.event for r in requests],
            "stored": experiment.stored_keys(rung_zero),
            "round_timeout_s": settings.round_timeout_s, "summary": experiment.summary(study).to_dict()}


@bp.activity_trigger(input_name="batch")
def enqueue_evaluations(batch: dict) -> dict:
    """Put one evaluation message (``EvaluationRequest``) per configuration (or per request of
    ``ask_configurations``, with its rung and questions) on the evaluations queue (creating the queue when missing); a configuration whose message was sent by an
    earlier try of this activity is not sent again. Returns ``{"keys": [...]}``."""
    settings = _settings()
    experiment = _experiment(batch["experiment_id"], settings)
    queue = settings.queue_client(settings.evaluations_queue)
    _ensure_queue(queue)
    from core.experiment import EvaluationRequest

    items = [EvaluationRequest.parse(r) for r in batch["requests"]] if batch.get("requests") else batch["configurations"]
    keys, sent = experiment.enqueue(items, queue.send_message)
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
    """``Experiment.tell`` from the stored results of the round's keys; a key without one is
    told failed (timed out, or its event came without a result). Returns the summary."""
    timeout = told.get("round_timeout_s")
    late = set(told.get("timed_out") or [])
    missing = {key: (f"no result within the round's timeout of {timeout} s" if key in late
                     else "its completion event came but no result was stored") for key in told["keys"]}
    return _experiment(told["experiment_id"]).tell(told["keys"], missing=missing).to_dict()


@bp.activity_trigger(input_name="ref")
def write_experiment_report(ref: dict) -> dict:
    """``Experiment.write_report``: ``{"report": the report's key in the store}``."""
    settings = _settings()
    return {"report": _experiment(ref["experiment_id"], settings).write_report(prices=settings.prices)}


# Queue-triggered evaluations --------------------------------------------------------------------
_EVALUATOR: Any = None


def _evaluator(settings: Settings) -> Any:
    """The process's ``StoredEvaluator`` (it keeps the last experiment's corpus loaded)."""
    global _EVALUATOR
    from core.experiment.prepare import StoredEvaluator

    if _EVALUATOR is None or _EVALUATOR.settings != settings:
        _EVALUATOR = StoredEvaluator(settings)
    return _EVALUATOR


@bp.queue_trigger(arg_name="msg", queue_name="%RAGTUNE_EVALUATIONS_QUEUE%", connection="RAGTUNE_STORAGE_CONNECTION")
@bp.durable_client_input(client_name="client")
async def evaluate_from_queue(msg: func.QueueMessage, client: df.DurableOrchestrationClient) -> None:
    """Evaluate the configuration in ``msg`` (``core.experiment.prepare.evaluate_request`` in a
    worker thread, within ``RAGTUNE_EVALUATION_TIMEOUT_S``), store its result and raise
    ``evaluated-<key>`` on the orchestration (the event carries the key only). A re-delivered
    message whose OK result is stored raises the event again without evaluating.

    Raises:
        ConfigError: a malformed message, an unknown experiment, or a configuration outside the
            experiment's space or never asked (after ``maxDequeueCount`` tries it goes to the
            poison queue, where nothing is lost).
        Exception: a transient failure (the host delivers the message again).
    """
    from core.experiment import EvaluationRequest
    from core.experiment.prepare import evaluate_request

    request = EvaluationRequest.parse(msg.get_body())
    settings = _settings()
    experiment = _experiment(request.experiment_id, settings)
    await asyncio.to_thread(evaluate_request, experiment, request, _evaluator(settings), settings.evaluation_timeout_s,
                            getattr(msg, "dequeue_count", None) or 1)
    await _raise(client, request)


@bp.queue_trigger(arg_name="msg", queue_name="%RAGTUNE_EVALUATIONS_QUEUE%-poison",
                  connection="RAGTUNE_STORAGE_CONNECTION")
@bp.durable_client_input(client_name="client")
async def evaluation_poisoned(msg: func.QueueMessage, client: df.DurableOrchestrationClient) -> None:
    """A message that failed ``maxDequeueCount`` times: checked as an evaluation message is
    (``Experiment.record_poisoned``: ids only, a stored experiment, a configuration of its space
    that its study asked and whose evaluation failed on a delivery), then a failed result is
    stored (unless an OK one is: then nothing failed) and ``evaluated-<key>`` raised so the
    orchestration tells the study at once.

    Raises:
        ConfigError: a malformed message, an unknown experiment, a configuration outside its
            space, never asked, or with no failed delivery on record: nothing is written (after
            ``maxDequeueCount`` tries the message goes to the poison queue's own poison queue).
    """
    from core.experiment import EvaluationRequest

    request = EvaluationRequest.parse(msg.get_body())
    experiment = _experiment(request.experiment_id)
    outcome = await asyncio.to_thread(
        experiment.record_poisoned, request,
        f"the evaluation failed on every delivery and its message was moved to the poison queue (message id {msg.id})")
    if outcome.status != "ok":
        logger.error("experiment %s: configuration %s poisoned", request.experiment_id, request.key)
    await _raise(client, request)


async def _raise(client: df.DurableOrchestrationClient, request: EvaluationRequest) -> None:
    """Raise ``evaluated-<key>`` (data: the key) on the experiment's orchestration; one that is
    gone (ended or purged) is logged, not retried."""
    from core.experiment.types import evaluated_event

    event = evaluated_event(request.key, request.rung)
    try:
        await client.raise_event(request.experiment_id, event, {"key": request.key})
    except Exception as exc:  # noqa: BLE001 - the SDK raises plain Exception for 404 / 410
        text = str(exc)  # the SDK's messages for 410 and 404
        if "is gone" in text or text.startswith("No instance with ID"):
            logger.warning("orchestration %s no longer takes events (%s): %s", request.experiment_id, event, exc)
            return
        raise


# HTTP reads -------------------------------------------------------------------------------------
@bp.route(route="experiments/{experiment_id}", methods=["GET"])
def get_experiment(req: func.HttpRequest) -> func.HttpResponse:
    """``GET /api/experiments/{experiment_id}``: the final report when written, else the report
    so far (``complete`` False; per-configuration results included). 400 for a bad id, 404
    for an unknown one."""
    experiment_id = req.route_params.get("experiment_id")
    if not valid_id(experiment_id):
        return error("experiment id may only hold letters, digits, '_', '.' and '-'", 400)

    def read(store: ReportStore) -> func.HttpResponse:
        from core.experiment import Experiment

        report = Experiment(store.files, experiment_id).current_report()
        return error(f"no experiment {experiment_id!r}", 404) if report is None else json_response(report)

    return answer(read)


@bp.route(route="experiments/{experiment_id}/status", methods=["GET"])
@bp.durable_client_input(client_name="client")
async def get_experiment_status(req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
    """``GET /api/experiments/{experiment_id}/status``: the orchestration's ``{instance_id,
    runtime_status, custom_status, created_time, last_updated_time, output}`` through the
    Durable client, store paths and URLs in its texts replaced (a failure says what failed,
    not where). 400 for a bad id, 404 when no orchestration has that id, 500 (one line) when
    the Durable client fails."""
    experiment_id = req.route_params.get("experiment_id")
    status, refused = await read_status(client, experiment_id, "experiment id", "experiment")
    if refused is not None:
        return refused
    runtime = runtime_status(status)

    def when(value: Any) -> Any:
        return value.isoformat() if hasattr(value, "isoformat") else value

    return json_response({"instance_id": experiment_id, "runtime_status": runtime,
                          "custom_status": json_without_locations(status.custom_status),
                          "created_time": when(status.created_time),
                          "last_updated_time": when(status.last_updated_time),
                          "output": json_without_locations(status.output)})
