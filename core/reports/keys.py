"""Store keys: the ``/``-separated relative paths every :class:`~core.reports.files.Files`
store (local folder, S3, Blob) names its files by, and the prefixes under which each kind of
report lives in a report store.

Kept apart from the stores so each of them imports these rules without importing another, and
so the pages find every kind of report without importing the workflows that write them.
"""

from __future__ import annotations

from core.errors import ConfigError, StoreError

#: Evaluate runs (``<prefix>/<run id>/report.json``).
RUNS_PREFIX = "retrieval/runs"
#: One small summary per evaluate run (:func:`core.reports.summary.run_summary`), apart from the
#: runs so listing the runs lists one key per run.
SUMMARIES_PREFIX = "retrieval/summaries"
#: Golden files kept by content (``<prefix>/<sha256>.jsonl``).
GOLDEN_PREFIX = "golden_dataset"
#: Stored golden checks.
GOLDEN_CHECKS_PREFIX = "golden_checks"
#: Experiments (``<prefix>/<experiment id>/``: see ``core.experiment.engine``).
EXPERIMENTS_PREFIX = "experiments"
#: Chunking comparisons (``<prefix>/<run id>/report.json``).
CHUNKING_RUNS_PREFIX = "chunking/runs"
#: Chunking sweeps (``<prefix>/<run id>/report.json``).
SWEEP_RUNS_PREFIX = "sweep/runs"
#: Deployed-app runs (``<prefix>/<run id>/report.json``: see ``core.reports.app_runs``).
APP_RUNS_PREFIX = "app/runs"
#: Evaluations the Functions run on a request (``<prefix>/<run id>/request.json`` and, when it
#: failed, ``failed.json``: see ``core.experiment.target_requests``).
EVALUATIONS_PREFIX = "evaluations"


def clean_key(key: str) -> str:
    """Return ``key`` normalised: ``\\`` read as ``/``, empty and ``.`` segments dropped.

    Raises:
        StoreError: the key is empty after that, or has a ``..`` segment.
    """
    parts = [p for p in key.replace("\\", "/").split("/") if p not in ("", ".")]
    if not parts or any(p == ".." for p in parts):
        raise StoreError(f"invalid key {key!r}: use a relative path without '..'")
    return "/".join(parts)


def clean_prefix(prefix: str) -> str:
    """``prefix`` as a clean key (``""`` for the root).

    Raises:
        ConfigError: the prefix has a ``..`` segment.
    """
    if not prefix.strip("/").strip():
        return ""
    try:
        return clean_key(prefix)
    except StoreError as exc:
        raise ConfigError(f"invalid store prefix {prefix!r}: use a relative path without '..'") from exc
