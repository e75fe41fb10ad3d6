"""Evaluations over targets on Durable Functions: the targets are the ones the app's settings
name (``RAGTUNE_TARGETS``), never addresses from a request.

- starter ``POST /api/evaluations``: checks the body
  (``core.experiment.target_requests.parse_target_request``), keeps the request in the report
  store under a new run id, starts :func:`target_evaluation_orchestrator` with ``{"run_id"}``
  as its input and instance id, and answers 202 with the app's own URLs: the status, the report
  (``/api/runs/{id}``, served as every run's is) and its page;
- orchestrator :func:`target_evaluation_orchestrator`: one activity, its custom status
  ``{"phase": "evaluating" | "done" | "failed"}``;
- activity :func:`evaluate_target_request`: ``core.experiment.target_requests.run_stored_request``
  (a run that cannot be made is recorded as failed; a storage failure raises, and the activity
  is retried);
- ``GET /api/evaluations/{run_id}/status``: the orchestration's status.

Request body::

    {"golden": "https://<account>.blob.core.windows.net/golden/g.jsonl",  # or s3://...
     "targets": ["prod", "candidate"],   # names configured in RAGTUNE_TARGETS
     "only": ["prod/*"], "skip": ["*+rerank"],   # optional setup name patterns
     "rank_by": "doc"}                   # optional grain
"""

from __future__ import annotations

import json
import logging

import azure.durable_functions as df
import azure.functions as func

from core.errors import ConfigError
from core.redaction import json_without_locations
from core.reports import new_run_id
from core.settings import Settings
from functions.shared import activity_with_retry, json_response, read_status, runtime_status

logger = logging.getLogger(__name__)

bp = df.Blueprint()


@bp.route(route="evaluations", methods=["POST"])
@bp.durable_client_input(client_name="client")
async def start_target_evaluation(req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
    """``POST /api/evaluations``: 202 with ``{"id", "status_url", "report_url", "page_url"}``,
    400 with every problem of the body, 500 when the settings are invalid."""
    from urllib.parse import urlsplit

    from core.experiment.target_requests import parse_target_request, store_request
    from core.targets.spec import configured_targets

    try:
        body = json.loads(req.get_body().decode("utf-8-sig"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        return json_response({"errors": ["the body is not valid JSON (UTF-8)"]}, 400)
    try:
        settings = Settings.from_env()
        configured = configured_targets(settings.targets_config)
    except ConfigError as exc:
        return json_response({"errors": [f"the app's settings are invalid: {exc}"]}, 500)
    request, errors = parse_target_request(body, configured=configured, blob_endpoint=settings.blob_endpoint())
    if errors:
        return json_response({"errors": errors}, 400)
    run_id = new_run_id()
    try:
        store_request(settings.report_store().files, run_id, request)
    except Exception:  # noqa: BLE001 - never a stack trace in an answer
        logger.exception("evaluation %s: the request could not be stored", run_id)
        return json_response({"errors": ["the report store could not be written"]}, 500)
    instance_id = await client.start_new("target_evaluation_orchestrator", run_id, {"run_id": run_id})
    url = urlsplit(req.url)
    origin = f"{url.scheme}://{url.netloc}" if url.scheme and url.netloc else ""
    status_url = f"{origin}/api/evaluations/{instance_id}/status"
    return json_response({"id": instance_id, "status_url": status_url, "report_url": f"{origin}/api/runs/{instance_id}",
                          "page_url": f"{origin}/api/runs/{instance_id}/page"}, 202, headers={"Location": status_url})


@bp.orchestration_trigger(context_name="context")
def target_evaluation_orchestrator(context: df.DurableOrchestrationContext):
    """Run the evaluation's one activity; deterministic (reads only its input and the
    activity's result). Returns the activity's ``{"run_id", "status", "report" | "error"}``."""
    ref = {"run_id": context.get_input()["run_id"]}
    context.set_custom_status({"phase": "evaluating"})
    # a storage error is retried; a run that cannot be made comes back as a failed result
    result = yield from activity_with_retry(context, "evaluate_target_request", ref, {"phase": "evaluating"})
    if result.get("status") == "failed":
        context.set_custom_status({"phase": "failed", "error": result.get("error")})
    else:
        context.set_custom_status({"phase": "done"})
    return result


@bp.activity_trigger(input_name="ref")
def evaluate_target_request(ref: dict) -> dict:
    """``core.experiment.target_requests.run_stored_request`` of ``{"run_id"}``."""
    from core.experiment.target_requests import run_stored_request

    settings = Settings.from_env()
    return run_stored_request(settings.report_store().files, ref["run_id"], settings)


@bp.route(route="evaluations/{run_id}/status", methods=["GET"])
@bp.durable_client_input(client_name="client")
async def get_target_evaluation_status(req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
    """``GET /api/evaluations/{run_id}/status``: ``{id, runtime_status, custom_status, output}``,
    their strings without storage locations (``core.redaction.json_without_locations``); 400
    for a bad id, 404 when no evaluation has it, 500 (one line) when the client fails."""
    run_id = req.route_params.get("run_id")
    status, refused = await read_status(client, run_id, "run id", "evaluation")
    if refused is not None:
        return refused
    return json_response({"id": run_id, "runtime_status": runtime_status(status),
                          "custom_status": json_without_locations(status.custom_status),
                          "output": json_without_locations(getattr(status, "output", None))})


__all__ = ["bp"]
