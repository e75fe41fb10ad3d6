"""Pieces the function modules share: JSON answers, id checks, the report store, Durable
status, and the store prefix of golden checks. It imports no other function module, so the
function modules never import each other."""

from __future__ import annotations

import json
import logging
from typing import Any, Callable

import azure.functions as func

from core.reports.keys import GOLDEN_CHECKS_PREFIX  # the store prefix of golden checks, for the function modules

logger = logging.getLogger(__name__)


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> func.HttpResponse:
    """``body`` as a JSON response with ``status`` (and ``headers``)."""
    return func.HttpResponse(json.dumps(body, ensure_ascii=False, allow_nan=False), status_code=status,
                             mimetype="application/json", headers=headers)


def error(message: str, status: int) -> func.HttpResponse:
    """``{"error": message}`` with ``status``."""
    return json_response({"error": message}, status)


def valid_id(value: str | None) -> bool:
    """Whether ``value`` is a safe id (``core.reports.files.is_safe_id``)."""
    from core.reports.files import is_safe_id

    return is_safe_id(value)


def answer(read: Callable[[Any], func.HttpResponse]) -> func.HttpResponse:
    """Open the report store and call ``read(store)``; store and settings errors become JSON."""
    from core.errors import ConfigError, StoreError
    from core.settings import Settings

    try:
        return read(Settings.from_env().report_store())
    except ConfigError as exc:
        logger.error("report store settings are invalid: %s", exc)
        return error(f"the report store is not configured correctly: {exc}", 500)
    except StoreError as exc:
        logger.error("report store read failed: %s", exc)
        return error(f"the report store could not be read: {exc}", 500)
    except Exception:  # never a stack trace in an answer
        logger.exception("unexpected error reading the report store")
        return error("internal error reading the report store", 500)


def runtime_status(status: Any) -> str | None:
    """The runtime status (``"Running"``, ``"Completed"``, ...) in a ``get_status`` answer, or
    None when no orchestration has that id (the client answers a 404 with an empty status)."""
    runtime = getattr(status, "runtime_status", None)
    return None if runtime is None else str(getattr(runtime, "value", runtime))
