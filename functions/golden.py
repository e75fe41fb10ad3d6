"""Golden file checks: over HTTP, and on every upload to the golden Blob container.

- ``POST /api/golden/check``: the body is the golden JSONL itself; the answer is the check
  result as JSON (status 200 when the file can be run, 422 when it has errors), its problems
  with their line numbers, bounded (``core.golden.problems``: the first 100 of each kind, then
  their count and lines), so the answer stays under 1 MB whatever the body.
- Blob trigger on ``%RAGTUNE_GOLDEN_CONTAINER%/{name}`` (connection
  ``RAGTUNE_STORAGE_CONNECTION``; Event Grid source as the Flex Consumption plan requires, or
  the polling source with ``RAGTUNE_GOLDEN_TRIGGER_SOURCE=LogsAndContainerScan`` for local runs):
  checks the uploaded file (at most ``RAGTUNE_GOLDEN_MAX_BYTES``) and writes the result to the
  report store as ``golden_checks/<blob name>.json`` (``core.golden.checks.check_key``); a valid
  file with an ``experiment.json`` beside it starts that experiment (once per blob name and
  content). A file whose rows are all drafts or
  template rows has nothing ready to score, so it never starts one.
- ``POST /api/golden/template`` and ``POST /api/golden/suggest``: a JSON body of addresses
  (``core.golden.requests``, the same address rules as experiment requests, and each in its
  own container: documents in ``RAGTUNE_DOCUMENTS_CONTAINER`` or ``RAGTUNE_GOLDEN_CONTAINER``,
  the golden file in ``RAGTUNE_GOLDEN_CONTAINER``; anything else is a 400 naming the field and
  the containers allowed); the template or the suggested labels are written beside the golden
  file in the store (never over a file) and the answer holds the address written.
"""

import json
import logging
import posixpath
from typing import Any

import azure.durable_functions as df
import azure.functions as func

from core.errors import ConfigError, GoldenError, RagtuneError
from core.redaction import without_locations
from core.settings import Settings, golden_trigger_source
from functions.shared import GOLDEN_CHECKS_PREFIX, logged, shown, start_once

logger = logging.getLogger(__name__)

bp = df.Blueprint()

#: The experiment specification a golden file may have beside it (same folder).
EXPERIMENT_SPEC = "experiment.json"


@bp.route(route="golden/check", methods=["POST"])
def check_golden_http(req: func.HttpRequest) -> func.HttpResponse:
    """Check the golden JSONL in the body; returns ``GoldenCheck.to_dict()`` as JSON.

    Status: 200 when the file can be run, 422 when it has errors, 413 when the body is larger
    than ``RAGTUNE_GOLDEN_MAX_BYTES``, 400 for a ``name`` parameter that is not a file name.
    """
    max_bytes = Settings.from_env().golden_max_bytes
    body = req.get_body()
    if len(body) > max_bytes:
        return func.HttpResponse(
            json.dumps({"error": f"golden file larger than {max_bytes} bytes (RAGTUNE_GOLDEN_MAX_BYTES)"}),
            status_code=413, mimetype="application/json",
        )
    name = req.params.get("name") or "golden.jsonl"
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    if base in ("", ".", "..") or len(base) > 200 or any(ord(c) < 32 for c in base):
        return func.HttpResponse(
            json.dumps({"error": "name must be a file name (1-200 characters, no control characters)"}),
            status_code=400, mimetype="application/json",
        )
    from core.golden.checks import check_upload

    result = check_upload(body, name, max_bytes=max_bytes)
    return func.HttpResponse(json.dumps(result), status_code=200 if result["ok"] else 422, mimetype="application/json")


def _json_response(body: Any, status: int) -> func.HttpResponse:
    return func.HttpResponse(json.dumps(body), status_code=status, mimetype="application/json")


def _golden_request(req: func.HttpRequest, kind: str) -> func.HttpResponse:
    """Parse, run and answer a template or suggestion request (see ``core.golden.requests``)."""
    from core.golden.requests import OutputExistsError, parse_golden_request, run_golden_request

    try:
        body = json.loads(req.get_body().decode("utf-8-sig"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        return _json_response({"errors": ["the body is not valid JSON (UTF-8)"]}, 400)
    try:
        settings = Settings.from_env()
    except ConfigError as exc:
        logger.error("the app's settings are invalid: %s", logged(exc))
        return _json_response({"errors": [f"the app's settings are invalid: {shown(exc)}"]}, 500)
    request, errors = parse_golden_request(body, kind, blob_endpoint=settings.blob_endpoint(),
                                           golden_container=settings.golden_container,
                                           documents_container=settings.documents_container)
    if errors:
        return _json_response({"errors": errors}, 400)
    named = {request["golden"]: "the golden file", request["documents"]: "the documents",
             request["output"]: f"the {kind} file"}
    what = "the template" if kind == "template" else "the suggested labels"
    try:
        answer = run_golden_request(request, kind, settings)
    except OutputExistsError as exc:
        return _json_response({"errors": [without_locations(str(exc), named)], "address": exc.address}, 409)
    except GoldenError as exc:
        logger.warning("golden %s request failed: %s", kind, logged(exc))
        problems = [{**p.to_dict(), "message": without_locations(p.message, named)} for p in exc.problems]
        return _json_response({"errors": problems or [f"{what} could not be made: {shown(exc, settings, named)}"]}, 422)
    except RagtuneError as exc:
        logger.warning("golden %s request failed: %s", kind, logged(exc))
        return _json_response({"errors": [f"{what} could not be made: {shown(exc, settings, named)}"]}, 422)
    logger.info("golden %s written to %s", kind, answer["address"])
    return _json_response(answer, 201)


@bp.route(route="golden/template", methods=["POST"])
def golden_template_http(req: func.HttpRequest) -> func.HttpResponse:
    """``POST /api/golden/template``: write template rows beside the golden file.

    Status: 201 with ``{"address", "rows", ...}``, 400 for a bad body (every problem), 409 when
    the file exists already, 422 when the documents cannot be read, 500 for invalid settings.
    """
    return _golden_request(req, "template")


@bp.route(route="golden/suggest", methods=["POST"])
def golden_suggest_http(req: func.HttpRequest) -> func.HttpResponse:
    """``POST /api/golden/suggest``: write the golden file with suggested labels beside it.

    Status: 201 with ``{"address", "rows", "suggested", "kept", ...}``, 400 for a bad body, 409
    when the file exists already, 422 when the golden file has errors (each problem with its
    line) or the documents cannot be read, 500 for invalid settings.
    """
    return _golden_request(req, "suggest")


def blob_name(full_name: str | None) -> str:
    """The blob's name inside its container: the host gives ``<container>/<name>``."""
    text = (full_name or "").replace("\\", "/").lstrip("/")
    return text.split("/", 1)[1] if "/" in text else text


@bp.blob_trigger(
    arg_name="blob", path="%RAGTUNE_GOLDEN_CONTAINER%/{name}", connection="RAGTUNE_STORAGE_CONNECTION",
    source=func.BlobSource(golden_trigger_source()),
)
@bp.durable_client_input(client_name="client")
async def check_golden_blob(blob: func.InputStream, client: df.DurableOrchestrationClient) -> None:
    """Check an uploaded golden file, store the result as ``golden_checks/<name>.json`` and,
    when the file is valid and ``experiment.json`` sits in the same folder, start the
    experiment it describes.

    The stored JSON is ``GoldenCheck.to_dict()`` (``ok``, ``errors`` and ``warnings`` with their
    line numbers, bounded, ``sha256``, counts) plus ``blob`` (the blob's name) and ``experiment``: None
    without a specification, else ``{"spec", "instance_id", "started", "reason"}`` or
    ``{"spec", "errors"}`` for an invalid specification. The instance id comes from the blob
    name and the file's sha256 (``core.experiment.requests.golden_instance_id``): a repeated
    event or an unchanged save starts nothing new. An upload of ``experiment.json`` itself is
    checked as a specification (stored the same way) and starts nothing. A file with errors is
    a result, not a failure; so is a file over ``RAGTUNE_GOLDEN_MAX_BYTES`` (not read past the
    limit) or one whose check fails: each gets a failed check, replacing any earlier one.

    A check is stored only while the blob still holds the file checked (its ETag, else its
    size and Content-MD5 or sha256; ``core.golden.checks.is_current``), with a conditional
    write where the report store allows one (``core.golden.checks.store_check``): of two quick
    uploads, the older one's check, finishing last, neither replaces the newer one's nor starts
    an experiment. A blob removed meanwhile gets no check.

    Raises:
        ConfigError: the settings or the report store address are invalid.
        StoreError: the blob name is not a valid key, or the result cannot be written (the
            host retries the trigger).
    """
    import hashlib

    from core.golden.checks import check_key, check_upload, delivered_version, is_current, store_check

    name = blob_name(blob.name)
    settings = Settings.from_env()
    limit = settings.golden_max_bytes
    size = getattr(blob, "length", None)
    data = b"" if size is not None and size > limit else blob.read(limit + 1)
    complete = len(data) <= limit and (size is None or size <= limit)
    golden = settings.files(settings.blob_address(settings.golden_container))
    delivered = delivered_version(data, size, getattr(blob, "blob_properties", None), complete=complete)
    sha256 = hashlib.sha256(data).hexdigest() if complete else None

    def still_current() -> bool:  # the blob still holds the file checked here
        current = is_current(delivered, sha256, golden.version(name, exact=True),
                             lambda: golden.read_or_none(name, exact=True))
        if not current:
            logger.warning("%s was replaced (or removed) while it was checked: this check is not stored", name)
        return current

    if posixpath.basename(name) == EXPERIMENT_SPEC:
        spec = ({"errors": [f"{EXPERIMENT_SPEC} is larger than {limit:,} bytes (RAGTUNE_GOLDEN_MAX_BYTES)"],
                 "request": None} if not complete else _check_spec(data, settings))
        result = {"blob": name, "kind": "experiment_spec", **spec}
        result["ok"] = not result["errors"]
    else:
        result = check_upload(data, name, max_bytes=limit, size=size)
        result["blob"] = name
        if not still_current():  # a newer upload is checked on its own: start nothing for this one
            return
        result["experiment"] = await _start_experiment(name, result, settings, client) if result["ok"] else None
    key = check_key(name)
    payload = json.dumps(result, ensure_ascii=False, allow_nan=False).encode("utf-8")
    if not store_check(settings.report_store().files, key, payload, still_current):
        return
    log = logger.info if result["ok"] else logger.warning
    log("%s checked: %d errors; stored as %s", name, result.get("n_errors", len(result["errors"])), key)


def _check_spec(data: bytes, settings: Settings) -> dict:
    """``{"errors": [...], "request": request or None}`` for an ``experiment.json``."""
    from core.experiment.requests import check_request_space, parse_experiment_request

    try:
        body = json.loads(data)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        return {"errors": [f"{EXPERIMENT_SPEC} is not valid JSON: {type(exc).__name__}: {exc}"], "request": None}
    if isinstance(body, dict) and "golden" in body:
        return {"errors": [f"{EXPERIMENT_SPEC} must not name 'golden': the golden file is the blob uploaded "
                           "beside it"], "request": None}
    request, errors = parse_experiment_request(body, golden_required=False, remote_only=True,
                                               blob_endpoint=settings.blob_endpoint())
    if not errors:
        errors = check_request_space(request, settings)
    return {"errors": errors, "request": None if errors else request}


async def _start_experiment(name: str, check: dict, settings: Settings,
                            client: df.DurableOrchestrationClient) -> dict | None:
    """Start the experiment of the ``experiment.json`` beside golden blob ``name``, once."""
    from core.experiment.requests import golden_instance_id

    container = settings.golden_container
    spec_key = posixpath.join(posixpath.dirname(name), EXPERIMENT_SPEC)
    files = settings.files(settings.blob_address(container))
    if not files.exists(spec_key):
        return None
    spec = _check_spec(files.read_bytes(spec_key), settings)
    if spec["errors"]:
        logger.warning("%s beside %s is invalid: %s", spec_key, name, "; ".join(spec["errors"]))
        return {"spec": spec_key, "errors": spec["errors"], "started": False}
    from core.experiment import Experiment

    instance_id = golden_instance_id(name, check["sha256"])
    request = {**spec["request"], "golden": settings.blob_address(container, name)}
    started, refusal = await start_once(  # a failed or terminated one runs again; never two at once
        client, instance_id, {"experiment_id": instance_id, "prepare": True},
        before_start=lambda: Experiment(settings.report_store().files, instance_id).store_request(request))
    if not started:
        return {"spec": spec_key, "instance_id": instance_id, "started": False, "reason": f"already started: {refusal}"}
    logger.info("golden file %s started experiment %s", name, instance_id)
    return {"spec": spec_key, "instance_id": instance_id, "started": True, "reason": None}
