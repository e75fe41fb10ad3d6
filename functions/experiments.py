"""Experiments on Durable Functions: the ask / tell loop of ``core.optimization.Study``.

Roles, as in the Durable Functions Python samples:

- starter ``POST /api/experiments``: validates the body, starts :func:`experiment_orchestrator`
  with the experiment id as its instance id and answers with the status URLs;
- orchestrator :func:`experiment_orchestrator`: ``prepare_experiment``, then rounds of
  ``ask_configurations`` -> ``evaluate_configuration`` for each configuration, in parallel ->
  ``tell_results`` until no configuration is returned, then ``write_experiment_report``;
- activities: everything that reads or writes (the study, the stores, the models; the GAM is
  fitted in ``ask_configurations``).

Evaluations fan out as activities (``context.task_all``) with a per-round timeout
(``round_timeout_s``, from ``RAGTUNE_ROUND_TIMEOUT_S`` at start); a configuration not finished
in time is told as failed.

The experiment's state lives in the report store (``RAGTUNE_REPORTS``) under
``experiments/<experiment id>/``: ``request.json``, ``study.json``,
``results/<configuration key>.json`` and ``report.json``. Payloads between functions are small
JSON: ids, configuration dicts, scores and metric means.

Request body of ``POST /api/experiments``::

    {"golden": "/data/golden.jsonl",      # golden file (local path on the Function's storage)
     "documents": "/data/docs",            # documents folder (local path)
     "space": {"chunk_size": [256, 512]},  # optional: parameter -> values overrides
     "optimizer": "gam",                   # optional: "gam" (default) or "random"
     "max_evals": 12,                      # optional: 1..1000 (default 12)
     "seed": 0,                            # optional: >= 0 (default 0)
     "objective": "mrr"}                   # optional: the metric to maximise
"""

from __future__ import annotations

import json
import logging
from datetime import timedelta
from typing import Any

import azure.durable_functions as df
import azure.functions as func

logger = logging.getLogger(__name__)

bp = df.Blueprint()

#: Prefix of an experiment's files in the report store.
EXPERIMENTS_PREFIX = "experiments"
#: Largest ``max_evals`` a request may ask for.
MAX_EVALS_LIMIT = 1000
_FIELDS = ("golden", "documents", "space", "optimizer", "max_evals", "seed", "objective")


# Parsing --------------------------------------------------------------------------------------
def parse_experiment_request(body: Any) -> tuple[dict[str, Any] | None, list[str]]:
    """Validate a ``POST /api/experiments`` body.

    Args:
        body: the parsed JSON body.

    Returns:
        ``(request, errors)``: the request with defaults filled in (None when there are
        errors), and every problem found, one message each.
    """
    from core.optimization.space import PARAMETER_NAMES

    if not isinstance(body, dict):
        return None, ["the body must be a JSON object"]
    errors = [f"unknown field {k!r} (known: {', '.join(_FIELDS)})" for k in body if k not in _FIELDS]
    for name in ("golden", "documents"):
        if not isinstance(body.get(name), str) or not body[name].strip():
            errors.append(f"{name!r} is required: the {name} address as a non-empty string")
    space = body.get("space") or {}
    if not isinstance(space, dict):
        errors.append("'space' must be an object: parameter name -> list of values")
        space = {}
    for name, values in space.items():
        if name not in PARAMETER_NAMES:
            errors.append(f"space: unknown parameter {name!r} (known: {', '.join(PARAMETER_NAMES)})")
        elif not isinstance(values, list) or not values:
            errors.append(f"space: {name!r} must be a non-empty list of values")
    optimizer = body.get("optimizer", "gam")
    if optimizer not in ("gam", "random"):
        errors.append(f"'optimizer' must be 'gam' or 'random', got {optimizer!r}")
    max_evals = body.get("max_evals", 12)
    if isinstance(max_evals, bool) or not isinstance(max_evals, int) or not 1 <= max_evals <= MAX_EVALS_LIMIT:
        errors.append(f"'max_evals' must be an integer from 1 to {MAX_EVALS_LIMIT}, got {max_evals!r}")
    seed = body.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        errors.append(f"'seed' must be a non-negative integer, got {seed!r}")
    objective = body.get("objective")
    if objective is not None and (not isinstance(objective, str) or not objective.strip()):
        errors.append(f"'objective' must be a metric name, got {objective!r}")
    if errors:
        return None, errors
    return {"golden": body["golden"].strip(), "documents": body["documents"].strip(), "space": space,
            "optimizer": optimizer, "max_evals": max_evals, "seed": seed, "objective": objective}, []


# Starter --------------------------------------------------------------------------------------
@bp.route(route="experiments", methods=["POST"])
@bp.durable_client_input(client_name="client")
async def start_experiment(req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
    """``POST /api/experiments``: start an experiment; 202 with the status URLs, 400 with every
    problem of the body, 500 when the settings are invalid."""
    from core.errors import ConfigError
    from core.reports import new_run_id
    from core.settings import Settings

    try:
        body = req.get_json()
    except ValueError:
        return _json({"errors": ["the body is not valid JSON"]}, 400)
    request, errors = parse_experiment_request(body)
    if errors:
        return _json({"errors": errors}, 400)
    try:
        settings = Settings.from_env()
    except ConfigError as exc:
        return _json({"errors": [f"the app's settings are invalid: {exc}"]}, 500)
    experiment_id = new_run_id()
    payload = {"experiment_id": experiment_id, "round_timeout_s": settings.round_timeout_s, **request}
    instance_id = await client.start_new("experiment_orchestrator", experiment_id, payload)
    logger.info("started experiment %s", instance_id)
    return client.create_check_status_response(req, instance_id)


def _json(body: Any, status: int) -> func.HttpResponse:
    return func.HttpResponse(json.dumps(body), status_code=status, mimetype="application/json")


# Orchestrator ---------------------------------------------------------------------------------
@bp.orchestration_trigger(context_name="context")
def experiment_orchestrator(context: df.DurableOrchestrationContext):
    """Drive the study: ask, evaluate in parallel, tell, until nothing is asked; then report.

    Deterministic: it reads only its input and activity results (no I/O, clock other than
    ``context.current_utc_datetime``, environment or randomness).

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
        results = yield from _evaluate_round(context, experiment_id, configurations, request.get("round_timeout_s"))
        context.set_custom_status({**status, "phase": "telling"})
        told = yield context.call_activity("tell_results", {**ref, "results": results})
        status.update(evaluated=told["evaluated"], best_score=told["best_score"], best_key=told["best_key"])
    context.set_custom_status({**status, "phase": "reporting"})
    report = yield context.call_activity("write_experiment_report", ref)
    context.set_custom_status({**status, "phase": "done"})
    return {"experiment_id": experiment_id, "status": "done", "report": report["report"],
            "best_key": status["best_key"], "best_score": status["best_score"], "evaluated": status["evaluated"]}


def _evaluate_round(context: Any, experiment_id: str, configurations: list[dict], timeout_s: Any):
    """Fan out one ``evaluate_configuration`` per configuration and wait for all of them, or
    until ``timeout_s`` (None: no limit); unfinished ones come back failed (score None)."""
    tasks = [context.call_activity("evaluate_configuration", {"experiment_id": experiment_id, "configuration": c})
             for c in configurations]
    together = context.task_all(tasks)
    if not timeout_s:
        return (yield together)
    timer = context.create_timer(context.current_utc_datetime + timedelta(seconds=int(timeout_s)))
    winner = yield context.task_any([together, timer])
    if winner is together:
        timer.cancel()
        return together.result
    return [{"configuration": c, "score": None, "metrics": None,
             "error": f"the round did not finish within {timeout_s} s"} for c in configurations]


# Activities -----------------------------------------------------------------------------------
def _files() -> Any:
    from core.settings import Settings

    return Settings.from_env().report_store().files


def _write_json(files: Any, key: str, data: Any) -> None:
    files.write_bytes(key, json.dumps(data, ensure_ascii=False, allow_nan=False).encode("utf-8"))


def _read_json(files: Any, key: str) -> Any:
    return json.loads(files.read_bytes(key))


def _load_study(files: Any, experiment_id: str) -> Any:
    from core.optimization import Study

    return Study.from_json(files.read_bytes(f"{EXPERIMENTS_PREFIX}/{experiment_id}/study.json"))


def _save_study(files: Any, experiment_id: str, study: Any) -> None:
    files.write_bytes(f"{EXPERIMENTS_PREFIX}/{experiment_id}/study.json", study.to_json().encode("utf-8"))


def _models(settings: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(embedding models, chat models)`` by model id, from the settings."""
    embedding = settings.embedding_model()
    chat = settings.chat_model()
    return {embedding.model_id: embedding}, ({chat.model_id: chat} if chat is not None else {})


@bp.activity_trigger(input_name="request")
def prepare_experiment(request: dict) -> dict:
    """Check the golden file, build the space and store a new study (``study.json``) and the
    request (``request.json``); an existing study is kept (the activity may run twice).

    Returns:
        ``{"objective", "n_valid", "max_evals"}``, or ``{"error": message}`` when the golden
        file, the space or the settings are unusable.
    """
    from core.errors import RagtuneError
    from core.evaluation.single import EXTRACTIVE
    from core.golden import read_golden
    from core.optimization.runner import DEFAULT_ANSWER_OBJECTIVE, DEFAULT_RETRIEVAL_OBJECTIVE, ExperimentOptions, \
        _sampler, build_space
    from core.optimization.study import Study
    from core.settings import Settings

    experiment_id = request["experiment_id"]
    prefix = f"{EXPERIMENTS_PREFIX}/{experiment_id}"
    try:
        settings = Settings.from_env()
        files = settings.report_store().files
        if files.exists(f"{prefix}/study.json"):
            study = _load_study(files, experiment_id)
        else:
            golden = read_golden(request["golden"])
            objective = request.get("objective") or (
                DEFAULT_ANSWER_OBJECTIVE if any(q.reference for q in golden.questions) else DEFAULT_RETRIEVAL_OBJECTIVE)
            options = ExperimentOptions(optimizer=request["optimizer"], max_evals=request["max_evals"],
                                        seed=request["seed"], objective=objective,
                                        overrides={k: tuple(v) for k, v in (request.get("space") or {}).items()})
            embedding, chat = _models(settings)
            space = build_space(options, embedding, [EXTRACTIVE, *chat])
            study = Study(space, _sampler(options), objective, options.seed, max_evals=options.max_evals)
            _write_json(files, f"{prefix}/request.json", {**request, "objective": objective})
            _save_study(files, experiment_id, study)
    except RagtuneError as exc:
        logger.warning("experiment %s cannot start: %s", experiment_id, exc)
        return {"error": f"{type(exc).__name__}: {exc}"}
    return {"objective": study.objective_metric, "n_valid": study.space.n_valid, "max_evals": study.max_evals}


@bp.activity_trigger(input_name="ref")
def ask_configurations(ref: dict) -> dict:
    """Load the study, ask for its next batch (the sampler's natural batch size; the GAM is
    fitted here), save it; returns ``{"configurations": [configuration dict, ...]}``.

    Configurations asked in an earlier run of this activity and never told are returned again
    first, so a retried activity loses nothing.
    """
    files = _files()
    study = _load_study(files, ref["experiment_id"])
    pending = [dict(t.configuration) for t in study.pending_trials]
    if pending:
        return {"configurations": pending}
    configurations = [dict(c) for c in study.ask(None)]
    _save_study(files, ref["experiment_id"], study)
    return {"configurations": configurations}


@bp.activity_trigger(input_name="task")
def evaluate_configuration(task: dict) -> dict:
    """Evaluate one configuration (``run_single_evaluation``) and store its full result as
    ``results/<key>.json``.

    Returns:
        ``{"configuration", "key", "score", "metrics", "error"}``: ``score`` is the objective's
        mean, or None when the evaluation failed or did not compute it (``error`` says why).
        Never raises for a failed evaluation.
    """
    from core.evaluation.single import Corpus, EvaluationContext, run_single_evaluation
    from core.golden import read_golden
    from core.optimization import Configuration
    from core.settings import Settings

    experiment_id, configuration = task["experiment_id"], task["configuration"]
    out = {"configuration": configuration, "key": Configuration(configuration).key, "score": None,
           "metrics": None, "error": None}
    try:
        settings = Settings.from_env()
        files = settings.report_store().files
        request = _read_json(files, f"{EXPERIMENTS_PREFIX}/{experiment_id}/request.json")
        embedding, chat = _models(settings)
        context = EvaluationContext(out_dir=settings.out_dir, embedding_models=embedding, chat_models=chat,
                                    vector_store_config=settings.vector_store_config(settings.out_dir),
                                    judge=settings.judge_model())
        result = run_single_evaluation(configuration, Corpus.load(request["documents"]),
                                       read_golden(request["golden"]), context=context)
        _write_json(files, f"{EXPERIMENTS_PREFIX}/{experiment_id}/results/{out['key']}.json", result)
    except Exception as exc:  # a failed evaluation is a result: the study goes on
        logger.exception("configuration %s of experiment %s failed", out["key"], experiment_id)
        out["error"] = f"{type(exc).__name__}: {exc}"
        return out
    out["metrics"] = result.get("metrics") or None
    if result["status"] != "ok":
        out["error"] = result.get("error") or "evaluation failed"
    else:
        out["score"] = (result.get("metrics") or {}).get(request["objective"])
        if out["score"] is None:
            out["error"] = f"objective metric {request['objective']!r} was not computed"
    return out


@bp.activity_trigger(input_name="told")
def tell_results(told: dict) -> dict:
    """Tell the study each result (a None score is a failed trial) and save it.

    Returns:
        ``{"evaluated", "failed", "best_score", "best_key"}`` after telling.
    """
    files = _files()
    study = _load_study(files, told["experiment_id"])
    for item in told["results"]:
        trial = study.trial_of(item["configuration"])
        if trial is None or trial.status != "pending":
            continue  # a retried activity: already told
        if item.get("score") is None:
            study.tell(item["configuration"], None, error=item.get("error") or "evaluation failed",
                       metrics=item.get("metrics"))
        else:
            study.tell(item["configuration"], float(item["score"]), metrics=item.get("metrics"))
    _save_study(files, told["experiment_id"], study)
    best = study.best_trial
    done = [t for t in study.trials if t.status != "pending" and not t.warm_start]
    return {"evaluated": len(done), "failed": sum(1 for t in done if t.status == "failed"),
            "best_score": None if best is None else best.score,
            "best_key": None if best is None else best.configuration.key}


@bp.activity_trigger(input_name="ref")
def write_experiment_report(ref: dict) -> dict:
    """Write ``report.json``: the leaderboard, the best configuration and the study's state.

    Returns:
        ``{"report": the report's key in the store}``.
    """
    from core.optimization.runner import EXPERIMENT_SCHEMA_VERSION, leaderboard

    experiment_id = ref["experiment_id"]
    prefix = f"{EXPERIMENTS_PREFIX}/{experiment_id}"
    files = _files()
    study = _load_study(files, experiment_id)
    request = _read_json(files, f"{prefix}/request.json")
    results = {}
    for key in files.list(f"{prefix}/results"):  # results/<Configuration.key>.json
        results[key.rsplit("/", 1)[-1].removesuffix(".json")] = _read_json(files, key)
    best = study.best_trial
    report = {
        "schema_version": EXPERIMENT_SCHEMA_VERSION, "kind": "experiment", "experiment_id": experiment_id,
        "golden": {"path": request["golden"]}, "corpus": {"path": request["documents"]},
        "space": {"n_valid": study.space.n_valid, "parameters": study.space.to_dict()},
        "optimizer": {"name": request["optimizer"], "seed": request["seed"], "max_evals": study.max_evals},
        "objective": study.objective_metric, "leaderboard": leaderboard(study, results),
        "best": None if best is None else {"key": best.configuration.key, "score": best.score,
                                           "configuration": dict(best.configuration)},
        "counts": {"evaluations": sum(1 for t in study.trials if t.status != "pending"),
                   "failed": sum(1 for t in study.trials if t.status == "failed")},
        "study": study.to_dict(),
    }
    key = f"{prefix}/report.json"
    _write_json(files, key, report)
    return {"report": key}
