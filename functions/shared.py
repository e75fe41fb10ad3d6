"""Pieces the function modules share: JSON answers, id checks, the report store, Durable
status, starting an orchestration once, and the store prefix of golden checks. It imports no
other function module, so the function modules never import each other."""

from __future__ import annotations

import asyncio
import json
import logging
import weakref
from typing import TYPE_CHECKING, Any, Callable

import azure.functions as func

from core.errors import ConfigError, StoreError
from core.redaction import shown_reason, without_locations, without_secrets
from core.reports.files import is_safe_id
from core.reports.keys import GOLDEN_CHECKS_PREFIX  # the store prefix of golden checks, for the function modules
from core.settings import Settings

if TYPE_CHECKING:
    from azure.durable_functions import DurableOrchestrationClient

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
    return is_safe_id(value)


def shown(exc: BaseException, settings: Settings | None = None, named: dict[str, str] | None = None) -> str:
    """``exc`` as an answer may say it: one line, what failed and not where
    (``core.redaction.shown_reason``; the places ``settings`` point at and ``named`` are named,
    any other URL or path is ``<location>``)."""
    places = dict(settings.shown_locations()) if settings is not None else {}
    return shown_reason(exc, {**places, **(named or {})})


def logged(exc: BaseException) -> str:
    """``exc``'s full text for the log, credentials masked (``core.redaction.without_secrets``)."""
    return without_secrets(f"{type(exc).__name__}: {exc}")


def answer(read: Callable[[Any], func.HttpResponse]) -> func.HttpResponse:
    """Open the report store and call ``read(store)``; store and settings errors become JSON
    that says what failed, not where (the detail goes to the log)."""
    settings = None
    try:
        settings = Settings.from_env()
        return read(settings.report_store())
    except ConfigError as exc:
        logger.error("report store settings are invalid: %s", logged(exc))
        return error(f"the report store is not configured correctly: {shown(exc, settings)}", 500)
    except StoreError as exc:
        logger.error("report store read failed: %s", logged(exc))
        return error(f"the report store could not be read: {shown(exc, settings)}", 500)
    except Exception:  # never a stack trace in an answer
        logger.exception("unexpected error reading the report store")
        return error("internal error reading the report store", 500)


def runtime_status(status: Any) -> str | None:
    """The runtime status (``"Running"``, ``"Completed"``, ...) in a ``get_status`` answer, or
    None when no orchestration has that id (the client answers a 404 with an empty status)."""
    runtime = getattr(status, "runtime_status", None)
    return None if runtime is None else str(getattr(runtime, "value", runtime))


async def read_status(client: DurableOrchestrationClient, instance_id: str | None, id_label: str,
                      kind: str) -> tuple[Any, func.HttpResponse | None]:
    """``(get_status answer, None)`` for an orchestration, or ``(None, the error answer)``: 400
    when ``instance_id`` is not a valid id ("{id_label} may only hold ..."), 500 (one line,
    the exception logged) when the Durable client fails, 404 when no orchestration has it
    ("no {kind} 'ID'")."""
    if not valid_id(instance_id):
        return None, error(f"{id_label} may only hold letters, digits, '_', '.' and '-'", 400)
    try:
        status = await client.get_status(instance_id)
    except Exception:  # noqa: BLE001 - never a stack trace in an answer
        logger.exception("status of %s %s could not be read", kind, instance_id)
        return None, error("the orchestration status could not be read", 500)
    if runtime_status(status) is None:
        return None, error(f"no {kind} {instance_id!r}", 404)
    return status, None


#: The orchestrator every start runs.
ORCHESTRATOR = "experiment_orchestrator"
_STARTING: "weakref.WeakValueDictionary[str, asyncio.Lock]" = weakref.WeakValueDictionary()


async def start_once(client: DurableOrchestrationClient, instance_id: str, client_input: Any,
                     before_start: Callable[[], None] | None = None) -> tuple[bool, str | None]:
    """Start the experiment orchestrator under ``instance_id`` unless an orchestration that has
    it is running or completed (``core.experiment.orchestration.start_refusal``): the status is
    looked up first, under a lock per instance id, so concurrent calls in this process start it
    once; a start from another process at the same moment is refused by the Durable extension
    (host.json ``overridableExistingInstanceStates``: ``NonRunningStates``), and that refusal
    is read back as "already started".

    Args:
        client: the Durable orchestration client.
        instance_id: the orchestration's (and the experiment's) id.
        client_input: the orchestration's input.
        before_start: called once it is decided to start, before ``start_new`` (to store the
            request the orchestration reads).

    Returns:
        ``(started, refusal)``: True and None when started, else False and why not.

    Raises:
        Exception: the Durable client failed (and the instance is not running since).
    """
    from core.experiment.orchestration import start_refusal

    lock = _STARTING.get(instance_id)
    if lock is None:
        lock = _STARTING[instance_id] = asyncio.Lock()
    async with lock:
        refusal = start_refusal(runtime_status(await client.get_status(instance_id)))
        if refusal is not None:
            return False, refusal
        if before_start is not None:
            before_start()
        try:
            await client.start_new(ORCHESTRATOR, instance_id, client_input)
        except Exception:  # noqa: BLE001 - the SDK raises plain Exception for the extension's refusal
            refusal = start_refusal(runtime_status(await client.get_status(instance_id)))
            if refusal is None:
                raise
            logger.info("orchestration %s was started elsewhere meanwhile: %s", instance_id, refusal)
            return False, refusal
        return True, None


def activity_with_retry(context: Any, name: str, data: Any, status: dict | None = None):
    """Call activity ``name`` of an orchestration (``context``: a
    ``DurableOrchestrationContext``) with the retry policy of
    ``core.experiment.orchestration`` (``ACTIVITY_MAX_ATTEMPTS`` tries,
    ``ACTIVITY_FIRST_RETRY_MS`` apart) and return its result, as ``yield from``. When it failed
    on every try, set the ``failed`` custom status (the progress in ``status`` kept, the step
    and the reason without storage locations) and raise its error: the orchestration ends
    Failed.

    Reference: Durable Functions' automatic retry on failure
    (https://learn.microsoft.com/azure/azure-functions/durable/durable-functions-error-handling).
    """
    import azure.durable_functions as df

    from core.experiment import cut_text
    from core.experiment.orchestration import ACTIVITY_FIRST_RETRY_MS, ACTIVITY_MAX_ATTEMPTS

    try:
        return (yield context.call_activity_with_retry(
            name, df.RetryOptions(ACTIVITY_FIRST_RETRY_MS, ACTIVITY_MAX_ATTEMPTS), data))
    except Exception as exc:  # noqa: BLE001 - said in the status, then raised: the orchestration ends Failed
        reason = cut_text(without_locations(str(exc).split("\n", 1)[0].strip()) or type(exc).__name__, 300)
        context.set_custom_status({**(status or {}), "phase": "failed", "step": name,
                                   "error": f"{name} failed on each of its {ACTIVITY_MAX_ATTEMPTS} tries: {reason}"})
        raise
