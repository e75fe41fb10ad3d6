"""Read-only HTTP access to the report store (``RAGTUNE_REPORTS``).

| route | answer |
| --- | --- |
| ``GET /api/runs?limit=20&offset=0`` | ``{"runs": [run id, ...], "limit", "offset"}``, newest first |
| ``GET /api/runs/latest`` | the newest run's report |
| ``GET /api/runs/{run_id}`` | that run's report |
| ``GET /api/runs/{run_id}/golden`` | the golden file the run used (JSONL, ``application/x-ndjson``) |
| ``GET /api/golden-checks/{name}`` | the stored check of the uploaded golden file ``name`` (folders included) |

Every answer is JSON (except the golden file itself). Status 400 for an id or name with
characters outside ``[A-Za-z0-9_.-]`` (or made only of dots) and for a bad ``limit`` /
``offset``; 404 when nothing is stored under it; 500 with a one-line message when the store
cannot be reached or read. Stack traces are logged, never returned.
"""

import json
import logging
from typing import Any

import azure.functions as func

logger = logging.getLogger(__name__)

from functions.shared import answer, error, json_response, valid_id  # noqa: F401 - shared with the other modules

bp = func.Blueprint()

#: Largest ``limit`` accepted by ``GET /api/runs``.
MAX_LIMIT = 500


def _load_run(store: Any, run_id: str) -> dict | None:
    """The run's report, or None when no run has that id (``latest``: when none is stored)."""
    ids = store.run_ids()
    if (run_id == "latest" and not ids) or (run_id != "latest" and run_id not in ids):
        return None
    return store.load_run(run_id)


def _int_param(req: func.HttpRequest, name: str, default: int, low: int, high: int) -> int | str:
    raw = (req.params.get(name) or "").strip()
    if not raw:
        return default
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 12 or not low <= int(raw) <= high:
        return f"{name} must be an integer from {low} to {high}, got {raw!r}"
    return int(raw)


@bp.route(route="runs", methods=["GET"])
def list_runs(req: func.HttpRequest) -> func.HttpResponse:
    """``GET /api/runs?limit&offset``: run ids newest first (``limit`` 1..500, default 20)."""
    limit = _int_param(req, "limit", 20, 1, MAX_LIMIT)
    offset = _int_param(req, "offset", 0, 0, 10**9)
    for value in (limit, offset):
        if isinstance(value, str):
            return error(value, 400)
    return answer(lambda store: json_response({"runs": store.history(limit, offset), "limit": limit, "offset": offset}))


@bp.route(route="runs/latest", methods=["GET"])
def latest_run(req: func.HttpRequest) -> func.HttpResponse:
    """``GET /api/runs/latest``: the newest run's report; 404 when no run is stored."""
    def read(store: Any) -> func.HttpResponse:
        report = _load_run(store, "latest")
        return error("no run is stored yet", 404) if report is None else json_response(report)

    return answer(read)


@bp.route(route="runs/{run_id}", methods=["GET"])
def get_run(req: func.HttpRequest) -> func.HttpResponse:
    """``GET /api/runs/{run_id}``: the run's report; 400 for a bad id, 404 for an unknown one."""
    run_id = req.route_params.get("run_id")
    if not valid_id(run_id):
        return error("run id may only hold letters, digits, '_', '.' and '-'", 400)

    def read(store: Any) -> func.HttpResponse:
        report = _load_run(store, run_id)
        return error(f"no run {run_id!r}", 404) if report is None else json_response(report)

    return answer(read)


@bp.route(route="runs/{run_id}/golden", methods=["GET"])
def get_run_golden(req: func.HttpRequest) -> func.HttpResponse:
    """``GET /api/runs/{run_id}/golden``: the golden file the run used, as stored (JSONL).

    404 when the run is unknown or its golden file was not stored.
    """
    from core.reports.store import GOLDEN_PREFIX

    run_id = req.route_params.get("run_id")
    if not valid_id(run_id):
        return error("run id may only hold letters, digits, '_', '.' and '-'", 400)

    def read(store: Any) -> func.HttpResponse:
        report = _load_run(store, run_id)
        if report is None:
            return error(f"no run {run_id!r}", 404)
        sha256 = str((report.get("golden") or {}).get("sha256") or "")
        key = f"{GOLDEN_PREFIX}/{sha256}.jsonl"
        if not valid_id(sha256) or not store.files.exists(key):
            return error(f"the golden file of run {run_id!r} is not stored", 404)
        return func.HttpResponse(store.files.read_bytes(key), status_code=200, mimetype="application/x-ndjson")

    return answer(read)


def valid_blob_name(value: str | None) -> bool:
    """Whether ``value`` is a safe blob name to look up: 1-1,024 characters, no control
    characters or backslashes, not starting or ending with ``/``, no ``.`` or ``..`` segment
    (empty segments, ``a//b``, are legal blob names)."""
    if not value or len(value) > 1024 or "\\" in value or any(ord(c) < 32 or ord(c) == 127 for c in value):
        return False
    return not value.startswith("/") and not value.endswith("/") and all(
        part not in (".", "..") for part in value.split("/"))


@bp.route(route="golden-checks/{*name}", methods=["GET"])
def get_golden_check(req: func.HttpRequest) -> func.HttpResponse:
    """``GET /api/golden-checks/{name}``: the stored check of the uploaded golden file ``name``
    (its blob name, folders included: ``/api/golden-checks/hr/golden.jsonl``); 400 for a name
    with a ``.`` or ``..`` segment, a leading or trailing ``/`` or control characters, 404 when
    none is stored."""
    from core.golden.checks import check_key

    name = req.route_params.get("name")
    if not valid_blob_name(name):
        return error("golden file name must be a blob name: no '.' or '..' segments, no leading or trailing '/', "
                     "no control characters", 400)

    def read(store: Any) -> func.HttpResponse:
        key = check_key(name)
        if not store.files.exists(key):
            return error(f"no check of golden file {name!r} is stored", 404)
        return json_response(json.loads(store.files.read_bytes(key)))

    return answer(read)
