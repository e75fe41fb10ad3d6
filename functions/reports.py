"""Read-only HTTP access to the report store (``RAGTUNE_REPORTS``).

| route | answer |
| --- | --- |
| ``GET /api/runs?limit=20&offset=0`` | ``{"runs": [run id, ...], "limit", "offset"}``, newest first |
| ``GET /api/runs/latest`` | the newest run's report |
| ``GET /api/runs/{run_id}`` | that run's report |
| ``GET /api/runs/{run_id}/golden`` | the golden file the run used (JSONL, ``application/x-ndjson``) |
| ``GET /api/golden-checks/{name}`` | the stored check of the uploaded golden file ``name`` (folders included) |
| ``GET /api/runs/{run_id}/page`` | the run's page (HTML) |
| ``GET /api/experiments/{experiment_id}/page`` | the experiment's page, finished or running (HTML) |
| ``GET /api/history/page?golden=SHA256_OR_PATH`` | every run on one golden file over time (HTML) |
| ``GET /api/assets/plotly-<hash>.min.js`` | the plotly.js the pages share (anonymous, cached a year) |

Every answer is JSON except the golden file itself and the pages (``text/html;
charset=utf-8``, with ``core.reports.pages.PAGE_CSP``: only inline resources and the app's own
scripts; they reference the shared plotly.js at ``/api/assets/...``). Status 400 for an id or name with
characters outside ``[A-Za-z0-9_.-]`` (or made only of dots) and for a bad ``limit`` /
``offset``; 404 when nothing is stored under it; 500 with a one-line message when the store
cannot be reached or read: it says what failed and a short reason, never where (no store
path or URL: ``functions.shared.shown``). Stack traces and the full errors are logged, never
returned.
"""

import logging
from typing import Any, Callable

import azure.functions as func

from core.errors import ConfigError, NotStoredError, StoreError
from core.redaction import without_locations
from core.reports.files import read_json
from core.reports.keys import GOLDEN_PREFIX
from core.reports.store import ReportStore
from core.settings import Settings
from functions.shared import answer, error, json_response, valid_id  # noqa: F401 - shared with the other modules
from functions.shared import logged, shown

logger = logging.getLogger(__name__)

bp = func.Blueprint()

#: Largest ``limit`` accepted by ``GET /api/runs``.
MAX_LIMIT = 500


def _load_run(store: ReportStore, run_id: str) -> dict | None:
    """The run's report, or None when no run has that id (``latest``: when none is stored)."""
    try:
        return store.load_run(run_id)
    except NotStoredError:
        return None


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
    def read(store: ReportStore) -> func.HttpResponse:
        report = _load_run(store, "latest")
        return error("no run is stored yet", 404) if report is None else json_response(report)

    return answer(read)


@bp.route(route="runs/{run_id}", methods=["GET"])
def get_run(req: func.HttpRequest) -> func.HttpResponse:
    """``GET /api/runs/{run_id}``: the run's report; 400 for a bad id, 404 for an unknown one."""
    run_id = req.route_params.get("run_id")
    if not valid_id(run_id):
        return error("run id may only hold letters, digits, '_', '.' and '-'", 400)

    def read(store: ReportStore) -> func.HttpResponse:
        report = _load_run(store, run_id)
        return error(f"no run {run_id!r}", 404) if report is None else json_response(report)

    return answer(read)


@bp.route(route="runs/{run_id}/golden", methods=["GET"])
def get_run_golden(req: func.HttpRequest) -> func.HttpResponse:
    """``GET /api/runs/{run_id}/golden``: the golden file the run used, as stored (JSONL).

    404 when the run is unknown or its golden file was not stored.
    """
    run_id = req.route_params.get("run_id")
    if not valid_id(run_id):
        return error("run id may only hold letters, digits, '_', '.' and '-'", 400)

    def read(store: ReportStore) -> func.HttpResponse:
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

    def read(store: ReportStore) -> func.HttpResponse:
        key = check_key(name)
        if not store.files.exists(key):
            return error(f"no check of golden file {name!r} is stored", 404)
        return json_response(read_json(store.files, key))

    return answer(read)


def page_response(build: Callable[[], str]) -> func.HttpResponse:
    """``build()``'s page as ``text/html; charset=utf-8`` with the pages' CSP; a missing id is
    404, a store that cannot be read 500, each as a short page (the trace goes to the log)."""
    from core.reports.pages import PAGE_HEADERS, PAGE_MEDIA_TYPE
    from core.reports.pages.site import error_page

    def page(html: str, status: int) -> func.HttpResponse:
        return func.HttpResponse(html, status_code=status, mimetype="text/html", charset="utf-8",
                                 headers={**PAGE_HEADERS, "Content-Type": PAGE_MEDIA_TYPE})

    def settings() -> Any:
        try:
            return Settings.from_env()
        except ConfigError:
            return None

    try:
        return page(build(), 200)
    except NotStoredError as exc:
        current = settings()
        return page(error_page(404, without_locations(str(exc), current and current.shown_locations())), 404)
    except (ConfigError, StoreError) as exc:
        logger.error("page failed: %s", logged(exc))
        return page(error_page(500, f"the report store could not be read: {shown(exc, settings())}"), 500)
    except Exception:  # never a stack trace in an answer
        logger.exception("unexpected error rendering a page")
        return page(error_page(500, "internal error rendering the page"), 500)


@bp.route(route="runs/{run_id}/page", methods=["GET"])
def run_page(req: func.HttpRequest) -> func.HttpResponse:
    """``GET /api/runs/{run_id}/page``: the run's page (``latest``: the newest); 400 for a bad
    id, 404 for an unknown one."""
    from core.reports.pages import run_page as build
    from core.reports.pages.site import function_links

    run_id = req.route_params.get("run_id")
    if not valid_id(run_id):
        return error("run id may only hold letters, digits, '_', '.' and '-'", 400)
    links = function_links(req.params.get("code"))  # the page's links keep the function key it came with
    return page_response(lambda: build(Settings.from_env().report_store(), run_id, links))


@bp.route(route="experiments/{experiment_id}/page", methods=["GET"])
def experiment_page(req: func.HttpRequest) -> func.HttpResponse:
    """``GET /api/experiments/{experiment_id}/page``: the experiment's page, finished or running."""
    from core.experiment.engine import report_so_far
    from core.reports.pages import experiment_page as build
    from core.reports.pages.site import function_links

    experiment_id = req.route_params.get("experiment_id")
    if not valid_id(experiment_id):
        return error("experiment id may only hold letters, digits, '_', '.' and '-'", 400)
    links = function_links(req.params.get("code"))
    return page_response(lambda: build(Settings.from_env().report_store().files, experiment_id, links, report_so_far))


@bp.route(route="history/page", methods=["GET"])
def history_page(req: func.HttpRequest) -> func.HttpResponse:
    """``GET /api/history/page?golden=SHA256_OR_PATH``: every run on one golden file over time;
    400 without ``golden`` or with one over 1,024 characters or with control characters."""
    from core.reports.pages import history_page as build
    from core.reports.pages.site import function_links

    golden = (req.params.get("golden") or "").strip()
    if not golden or len(golden) > 1024 or any(ord(c) < 32 or ord(c) == 127 for c in golden):
        return error("give the golden file as ?golden=<sha256 or path> (at most 1,024 characters)", 400)
    links = function_links(req.params.get("code"))
    return page_response(lambda: build(Settings.from_env().report_store(), golden, links))


@bp.route(route="assets/{name}", methods=["GET"], auth_level=func.AuthLevel.ANONYMOUS)
def page_asset(req: func.HttpRequest) -> func.HttpResponse:
    """``GET /api/assets/{name}``: the plotly.js the pages share, with its cache headers; 304
    for a matching ``If-None-Match``; 404 for any other name. Anonymous: it is the public
    plotting library, the same for every store, and holds no data."""
    from core.reports.pages.render import page_asset as find

    found = find(req.route_params.get("name"))
    if found is None:
        return error("no such asset", 404)
    if req.headers.get("if-none-match") == found.etag:
        unchanged = {k: v for k, v in found.headers.items() if k != "Content-Type"}
        return func.HttpResponse(status_code=304, headers=unchanged)
    return func.HttpResponse(found.body, status_code=200, headers=found.headers)
