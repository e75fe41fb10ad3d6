"""Evaluations over targets asked of the Functions app: the request, its checks, where it is
kept, and the run.

A request names targets by the names the app's settings configure (``RAGTUNE_TARGETS``), never
by address: an endpoint, a DSN or a URL taken from a request would let anyone on the network
make the app connect where they choose with its credentials (server-side request forgery). The
golden file's address follows the experiments' rule (``s3://`` or the app's own Blob storage).

Layout under the report store: ``evaluations/<run id>/request.json`` (the request, stored by the
starter), ``evaluations/<run id>/failed.json`` (why the run failed, when it did); the report of
a run that finished is stored as every ``evaluate`` run is (``retrieval/runs/<run id>/report.json``)
and served by the same routes.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

from core.errors import ConfigError, RagtuneError, StoreError, TargetError
from core.evaluation.targets import TargetsOptions, evaluate_targets
from core.experiment.requests import MAX_ADDRESS_CHARS, _remote_problem
from core.golden import read_golden
from core.metrics.retrieval import GRAINS
from core.reports.keys import EVALUATIONS_PREFIX
from core.reports.files import read_json
from core.reports.store import ReportStore
from core.targets.spec import configured_targets

if TYPE_CHECKING:
    from core.reports.files import Files
    from core.settings import Settings

logger = logging.getLogger(__name__)

#: Fields a request may hold.
REQUEST_FIELDS = ("golden", "targets", "only", "skip", "rank_by")
#: Most ``only`` / ``skip`` patterns, and their longest, in characters.
MAX_PATTERNS = 20
MAX_PATTERN_CHARS = 200
#: Longest error kept in a failure record, in characters.
MAX_ERROR_CHARS = 4000


@dataclass(frozen=True)
class TargetEvaluationRequest:
    """An evaluation over targets, as the Functions app runs it.

    Attributes:
        golden: the golden file's address.
        targets: names of targets the app's settings configure.
        only: shell-style patterns of setup names to keep.
        skip: shell-style patterns of setup names to leave out.
        rank_by: the grain to rank by (``doc``, ``page``, ``evidence``), or None.
    """

    golden: str
    targets: tuple[str, ...]
    only: tuple[str, ...] = ()
    skip: tuple[str, ...] = ()
    rank_by: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The request as JSON."""
        return {"golden": self.golden, "targets": list(self.targets), "only": list(self.only),
                "skip": list(self.skip), "rank_by": self.rank_by}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "TargetEvaluationRequest":
        """The request :meth:`to_dict` wrote."""
        return cls(str(data["golden"]), tuple(data["targets"]), tuple(data.get("only") or ()),
                   tuple(data.get("skip") or ()), data.get("rank_by"))


def _patterns(body: Mapping[str, Any], name: str, errors: list[str]) -> tuple[str, ...]:
    value = body.get(name)
    if value is None:
        return ()
    if (not isinstance(value, list) or len(value) > MAX_PATTERNS
            or not all(isinstance(v, str) and 0 < len(v) <= MAX_PATTERN_CHARS for v in value)):
        errors.append(f"{name!r} must be a list of at most {MAX_PATTERNS} setup name patterns (strings of 1 to "
                      f"{MAX_PATTERN_CHARS} characters)")
        return ()
    return tuple(value)


def _targets(value: Any, configured: Mapping[str, Any], errors: list[str]) -> tuple[str, ...]:
    known = ", ".join(sorted(configured)) or "none: set RAGTUNE_TARGETS"
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        errors.append(f"'targets' is required: a non-empty list of target names (configured: {known})")
        return ()
    out = []
    for name in dict.fromkeys(value):
        if name in configured:
            out.append(name)
        elif any(mark in name for mark in ("://", "#", "@", "/")) or name.split(":", 1)[0] in (
                "azure-search", "pgvector", "qdrant", "milvus"):
            errors.append(f"target {name[:80]!r}: targets are named by the app's settings (RAGTUNE_TARGETS), never "
                          f"given as an address, DSN or --target form (configured: {known})")
        else:
            errors.append(f"unknown target {name[:80]!r} (configured: {known})")
    return tuple(out)


def parse_target_request(body: Any, *, configured: Mapping[str, Any],
                         blob_endpoint: str | None) -> tuple[TargetEvaluationRequest | None, list[str]]:
    """Check the body of ``POST /api/evaluations``.

    Fields: ``golden`` (``s3://`` or a URL in the app's own Blob storage, as experiments take
    it), ``targets`` (names from ``configured``), ``only`` / ``skip`` (setup name patterns),
    ``rank_by`` (a grain).

    Args:
        body: the parsed JSON.
        configured: the app's targets by name (``core.targets.spec.configured_targets``).
        blob_endpoint: the app's Blob endpoint (None refuses every http(s) golden address).

    Returns:
        ``(request, errors)``: the request (None when there are errors) and every problem found.
    """
    if not isinstance(body, dict):
        return None, ["the body must be a JSON object"]
    errors = [f"unknown field {str(k)[:80]!r} (known: {', '.join(REQUEST_FIELDS)})" for k in body
              if k not in REQUEST_FIELDS]
    golden = body.get("golden")
    if not isinstance(golden, str) or not golden.strip():
        errors.append("'golden' is required: the golden file's address as a non-empty string")
    elif len(golden) > MAX_ADDRESS_CHARS or any(ord(c) < 32 for c in golden):
        errors.append(f"'golden' must be an address of at most {MAX_ADDRESS_CHARS} characters without control "
                      "characters")
    else:
        problem = _remote_problem(golden.strip(), blob_endpoint)
        if problem:
            errors.append(f"'golden' {problem}")
    targets = _targets(body.get("targets"), configured, errors)
    only, skip = _patterns(body, "only", errors), _patterns(body, "skip", errors)
    rank_by = body.get("rank_by")
    if rank_by is not None and rank_by not in GRAINS:
        errors.append(f"'rank_by' must be one of {', '.join(GRAINS)}")
    if errors:
        return None, errors
    return TargetEvaluationRequest(golden.strip(), targets, only, skip, rank_by), []


def request_key(run_id: str) -> str:
    """Where a run's request is kept."""
    return f"{EVALUATIONS_PREFIX}/{run_id}/request.json"


def failure_key(run_id: str) -> str:
    """Where a failed run's reason is kept."""
    return f"{EVALUATIONS_PREFIX}/{run_id}/failed.json"


def store_request(files: Files, run_id: str, request: TargetEvaluationRequest) -> None:
    """Keep the request of run ``run_id`` (atomically, through ``files``)."""
    files.write_bytes(request_key(run_id), json.dumps(request.to_dict(), ensure_ascii=False).encode("utf-8"))


def run_stored_request(files: Files, run_id: str, settings: Settings) -> dict[str, Any]:
    """Run the stored request of ``run_id`` and store its report as run ``run_id``.

    The targets are looked up by name in the settings now (a target removed from them since the
    request fails the run). A run that cannot be made (a golden file with errors, a bad mapping,
    no target left) is recorded as failed (``evaluations/<id>/failed.json``) and its reason
    returned; a target that cannot be reached is recorded in the report, as the CLI does.

    Args:
        files: the report store's ``Files``.
        run_id: the run's id (the orchestration's instance id).
        settings: ``core.settings.Settings``.

    Returns:
        ``{"run_id", "status": "done", "report": key}`` or ``{"run_id", "status": "failed",
        "error": reason}``.

    Raises:
        StoreError: the report store cannot be read or written (the activity is retried).
    """
    request = TargetEvaluationRequest.from_dict(read_json(files, request_key(run_id)))
    try:
        configured = configured_targets(settings.targets_config)
        missing = [n for n in request.targets if n not in configured]
        if missing:
            raise ConfigError(f"target(s) {', '.join(missing)} are no longer configured (RAGTUNE_TARGETS)")
        golden = read_golden(request.golden)
        options = TargetsOptions(rank_grain=request.rank_by, only=request.only, skip=request.skip,
                                 show_progress=False)
        report = evaluate_targets(request.golden, [configured[n] for n in request.targets], settings=settings,
                                  out_dir=settings.out_dir, golden=golden, reranker=settings.reranker(),
                                  options=options)
    except TargetError as exc:  # a target's failure that stops the run (not a storage failure)
        return _failed(files, run_id, exc)
    except StoreError:
        raise
    except RagtuneError as exc:
        return _failed(files, run_id, exc)
    store = ReportStore(files)
    report["run_id"] = run_id
    report["golden"]["stored_as"] = store.save_golden(golden.sha256, golden.raw)
    return {"run_id": run_id, "status": "done", "report": store.save_run(run_id, report)}


def _failed(files: Files, run_id: str, exc: Exception) -> dict[str, Any]:
    reason = f"{type(exc).__name__}: {exc}"[:MAX_ERROR_CHARS]
    logger.warning("evaluation %s failed: %s", run_id, reason)
    files.write_bytes(failure_key(run_id), json.dumps({"run_id": run_id, "status": "failed", "error": reason},
                                                      ensure_ascii=False).encode("utf-8"))
    return {"run_id": run_id, "status": "failed", "error": reason}


__all__ = ["EVALUATIONS_PREFIX", "REQUEST_FIELDS", "TargetEvaluationRequest", "failure_key", "parse_target_request",
           "request_key", "run_stored_request", "store_request"]
