"""Deployed-app runs in a report store: ``app/runs/<run id>/report.json`` (the report
``ragtune evaluate-app`` writes, see ``core.evaluation.app_report``), written atomically, read
by id or as the newest; kept with the report stores so pages and the CLI read them without the
evaluation."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from core.errors import NotStoredError, StoreError
from core.reports.files import is_safe_id, read_json
from core.reports.keys import APP_RUNS_PREFIX

if TYPE_CHECKING:
    from core.reports.files import Files
    from core.reports.store import ReportStore


def save_app_run(store: ReportStore, run_id: str, report: dict[str, Any]) -> str:
    """Write ``report`` as ``app/runs/<run_id>/report.json`` (atomically) and keep its golden
    file once per sha256 (``ReportStore.save_golden``); returns the report's key."""
    key = f"{APP_RUNS_PREFIX}/{run_id}/report.json"
    store.files.write_bytes(key, json.dumps(report, indent=2, ensure_ascii=False, allow_nan=False).encode("utf-8"))
    return key


def app_run_ids(files: Files) -> list[str]:
    """Every stored app run id, newest first."""
    ids = {k.split("/")[2] for k in files.list(APP_RUNS_PREFIX) if k.endswith("/report.json") and k.count("/") == 3}
    return sorted(ids, reverse=True)


def is_app_run(files: Files, run_id: str) -> bool:
    """Whether ``run_id`` names a stored app run."""
    return is_safe_id(run_id) and files.exists(f"{APP_RUNS_PREFIX}/{run_id}/report.json")


def load_app_run(store: ReportStore, run_id: str = "latest") -> dict[str, Any]:
    """A stored app run (``latest``: the newest).

    Raises:
        NotStoredError: none stored, or none with that id (the message lists recent ones).
        StoreError: the file is not a valid report.
    """
    files = store.files
    if run_id == "latest":
        ids = app_run_ids(files)
        if not ids:
            raise NotStoredError("no app run is stored yet: run 'ragtune evaluate-app' first")
        run_id = ids[0]
    elif not is_app_run(files, run_id):
        raise NotStoredError(f"no app run {run_id!r}; recent app runs: {', '.join(app_run_ids(files)[:5]) or 'none'}")
    key = f"{APP_RUNS_PREFIX}/{run_id}/report.json"
    report = read_json(files, key)
    if not isinstance(report, dict) or report.get("kind") != "app":
        raise StoreError(f"{key} is not an app report")
    return report


__all__ = ["APP_RUNS_PREFIX", "app_run_ids", "is_app_run", "load_app_run", "save_app_run"]
