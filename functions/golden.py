"""Golden file checks: over HTTP, and on every upload to the golden Blob container.

- ``POST /api/golden/check``: the body is the golden JSONL itself; the answer is the check
  result as JSON (status 200 when the file can be run, 422 when it has errors), every problem
  with its line number.
- Blob trigger on ``%RAGTUNE_GOLDEN_CONTAINER%/{name}`` (connection
  ``RAGTUNE_STORAGE_CONNECTION``, Event Grid source as the Flex Consumption plan requires):
  checks the uploaded file and writes the result to the report store as
  ``golden_checks/<blob name>.json``.
"""

import json
import logging
import os
import tempfile

import azure.functions as func

logger = logging.getLogger(__name__)

#: Report store prefix of the stored golden checks.
GOLDEN_CHECKS_PREFIX = "golden_checks"

bp = func.Blueprint()

#: Largest golden file accepted in a request body, in bytes.
MAX_BODY_BYTES = 20 * 1024 * 1024


@bp.route(route="golden/check", methods=["POST"])
def check_golden_http(req: func.HttpRequest) -> func.HttpResponse:
    """Check the golden JSONL in the body; returns ``GoldenCheck.to_dict()`` as JSON.

    Status: 200 when the file can be run, 422 when it has errors, 413 when the body is larger
    than :data:`MAX_BODY_BYTES`.
    """
    body = req.get_body()
    if len(body) > MAX_BODY_BYTES:
        return func.HttpResponse(
            json.dumps({"error": f"golden file larger than {MAX_BODY_BYTES} bytes"}), status_code=413,
            mimetype="application/json",
        )
    name = req.params.get("name") or "golden.jsonl"
    result = _check_bytes(body, name)
    return func.HttpResponse(json.dumps(result), status_code=200 if result["ok"] else 422, mimetype="application/json")


def _check_bytes(data: bytes, name: str) -> dict:
    """Check ``data`` as a golden file named ``name``; returns ``GoldenCheck.to_dict()``.

    The bytes go to a temporary file with the same base name (so the format is told the same
    way as for a local file); ``path`` in the result is ``name``.
    """
    from core.golden import check_golden

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, os.path.basename(name) or "golden.jsonl")
        with open(path, "wb") as fh:
            fh.write(data)
        result = check_golden(path).to_dict()
    result["path"] = name
    return result


def blob_name(full_name: str | None) -> str:
    """The blob's name inside its container: the host gives ``<container>/<name>``."""
    text = (full_name or "").replace("\\", "/").lstrip("/")
    return text.split("/", 1)[1] if "/" in text else text


@bp.blob_trigger(
    arg_name="blob", path="%RAGTUNE_GOLDEN_CONTAINER%/{name}", connection="RAGTUNE_STORAGE_CONNECTION",
    source=func.BlobSource.EVENT_GRID,
)
def check_golden_blob(blob: func.InputStream) -> None:
    """Check an uploaded golden file and store the result as ``golden_checks/<name>.json``.

    The stored JSON is ``GoldenCheck.to_dict()`` (``ok``, ``errors`` and ``warnings`` with their
    line numbers, ``sha256``, counts) plus ``blob`` (the blob's name). A file with errors is a
    result, not a failure.

    Raises:
        ConfigError: the settings or the report store address are invalid.
        StoreError: the blob name is not a valid key, or the result cannot be written (the
            host retries the trigger).
    """
    from core.settings import Settings

    name = blob_name(blob.name)
    result = _check_bytes(blob.read(), name)
    result["blob"] = name
    store = Settings.from_env().report_store()
    key = f"{GOLDEN_CHECKS_PREFIX}/{name}.json"
    store.files.write_bytes(key, json.dumps(result, ensure_ascii=False, allow_nan=False).encode("utf-8"))
    log = logger.info if result["ok"] else logger.warning
    log("golden file %s checked: %d errors, %d warnings; stored as %s",
        name, len(result["errors"]), len(result["warnings"]), key)
