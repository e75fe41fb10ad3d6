"""Where reports live: run reports, the golden files they used, and their history.

Layout under a :class:`~core.reports.files.Files` root::

    retrieval/runs/<run id>/report.json     one retrieval evaluation
    retrieval/summaries/<run id>.json       its summary, for the history page and the index
    golden_dataset/<sha256>.jsonl           each golden file once, by content hash

Run ids sort by time: ``YYYYmmddTHHMMSSZ-<6 hex digits>``.
"""

from __future__ import annotations

import json
import os
import secrets
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from core.errors import NotStoredError, StoreError
from core.reports.files import Files, is_safe_id, open_files, shown_key
from core.reports.keys import GOLDEN_PREFIX, RUNS_PREFIX, SUMMARIES_PREFIX
from core.reports.summary import SUMMARY_VERSION, run_summary
from core.reports.tables import upgrade_metric_names

if TYPE_CHECKING:
    from core.reports.blob import StorageCredential

#: Version of the retrieval report's JSON layout; the major part changes on incompatible changes.
REPORT_SCHEMA_VERSION = "1.0"


def new_run_id(now: datetime | None = None) -> str:
    """Return a new run id ``YYYYmmddTHHMMSSZ-mmmrrr`` (UTC time to the second, then 6 hex
    digits: the millisecond within that second as 3 hex digits, ``000``-``3e7``, and 3 random
    ones), so run ids sort in the order they were made, also within one second ("latest" is
    the last one made; two made in the same millisecond fall to the random digits)."""
    now = now or datetime.now(timezone.utc)
    return f"{now.strftime('%Y%m%dT%H%M%SZ')}-{now.microsecond // 1000:03x}{secrets.token_hex(2)[:3]}"


class ReportStore:
    """Reads and writes retrieval reports through a :class:`Files` store.

    Args:
        files: where to keep them (local folder, S3, Blob).
    """

    def __init__(self, files: Files) -> None:
        self.files = files

    def save_run(self, run_id: str, report: dict[str, Any]) -> str:
        """Write ``report`` as ``retrieval/runs/<run_id>/report.json`` (atomically), then its
        summary (:func:`core.reports.summary.run_summary`) as
        ``retrieval/summaries/<run_id>.json``; returns the report's key."""
        key = f"{RUNS_PREFIX}/{run_id}/report.json"
        self.files.write_bytes(key, json.dumps(report, indent=2, ensure_ascii=False, allow_nan=False).encode("utf-8"))
        summary = run_summary({**report, "run_id": report.get("run_id") or run_id})
        self.files.write_bytes(f"{SUMMARIES_PREFIX}/{run_id}.json",
                               json.dumps(summary, ensure_ascii=False, allow_nan=False).encode("utf-8"))
        return key

    def load_summary(self, run_id: str) -> dict[str, Any]:
        """The run's summary: ``retrieval/summaries/<run id>.json`` when it is there and
        current, else built from the report (runs stored before summaries existed).

        Raises:
            StoreError: as :meth:`load_run` when the summary must be built.
        """
        key = f"{SUMMARIES_PREFIX}/{run_id}.json"
        try:
            summary = json.loads(self.files.read_bytes(key))
            if isinstance(summary, dict) and summary.get("summary_version") == SUMMARY_VERSION:
                return upgrade_metric_names(summary)
        except (StoreError, UnicodeDecodeError, json.JSONDecodeError):
            pass
        report = self.load_run(run_id)
        return run_summary({**report, "run_id": report.get("run_id") or run_id})

    def save_golden(self, sha256: str, raw: bytes) -> str:
        """Keep the golden file once per content hash; returns its key (written only when new)."""
        key = f"{GOLDEN_PREFIX}/{sha256}.jsonl"
        if not self.files.exists(key):
            self.files.write_bytes(key, raw)
        return key

    def run_ids(self) -> list[str]:
        """Every stored run id, newest first.

        A store that can list the folders directly under a prefix (``folders``, as
        :class:`~core.reports.files.LocalFiles` does) is read with one listing of the runs'
        folder and one existence check per run instead of a listing of every file.
        """
        folders = getattr(self.files, "folders", None)
        if callable(folders):
            return [name for name in reversed(folders(RUNS_PREFIX))
                    if self.files.exists(f"{RUNS_PREFIX}/{name}/report.json")]
        ids = {
            key.split("/")[2] for key in self.files.list(RUNS_PREFIX)
            if key.endswith("/report.json") and key.count("/") == 3
        }
        return sorted(ids, reverse=True)

    def latest_run_id(self) -> str | None:
        """The newest stored run id, or None; with a ``folders`` listing (local folders) only
        the newest folders are checked."""
        folders = getattr(self.files, "folders", None)
        if not callable(folders):
            ids = self.run_ids()
            return ids[0] if ids else None
        return next((name for name in reversed(folders(RUNS_PREFIX))
                     if self.files.exists(f"{RUNS_PREFIX}/{name}/report.json")), None)

    def history(self, limit: int = 20, offset: int = 0) -> list[str]:
        """Run ids newest first, ``limit`` of them after skipping ``offset``."""
        return self.run_ids()[offset : offset + limit]

    def load_run(self, run_id: str = "latest") -> dict[str, Any]:
        """Return a stored report; ``"latest"`` is the newest.

        Raises:
            NotStoredError: no run is stored, or no run has that id (the message lists recent ids).
            StoreError: the file is not valid JSON, or its major schema version is not
                :data:`REPORT_SCHEMA_VERSION`'s.
        """
        if run_id == "latest":
            newest = self.latest_run_id()
            if newest is None:
                raise NotStoredError(f"no retrieval run is stored in {self._where(RUNS_PREFIX)} yet: run 'ragtune evaluate' first")
            run_id = newest
        elif not is_safe_id(run_id) or not self.files.exists(f"{RUNS_PREFIX}/{run_id}/report.json"):
            recent = ", ".join(self.run_ids()[:5]) or "none"
            raise NotStoredError(f"no run {run_id!r}; recent runs: {recent}")
        key = f"{RUNS_PREFIX}/{run_id}/report.json"
        try:
            report = json.loads(self.files.read_bytes(key))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise StoreError(f"{self._where(key)} is not a valid report: {exc}") from exc
        version = str(report.get("schema_version", "")) if isinstance(report, dict) else ""
        if version.split(".")[0] != REPORT_SCHEMA_VERSION.split(".")[0]:
            raise StoreError(
                f"{self._where(key)} has report schema version {version or 'none'}; "
                f"this ragtune reads version {REPORT_SCHEMA_VERSION}"
            )
        return upgrade_metric_names(report)

    def _where(self, key: str) -> str:
        return shown_key(self.files, key)


def report_store(
    where: str | os.PathLike[str] | Files,
    *,
    connection_string: str | None = None,
    endpoint_url: str | None = None,
    region: str | None = None,
    credential: StorageCredential | None = None,
) -> ReportStore:
    """Return a :class:`ReportStore` over ``where``.

    Args:
        where: a :class:`~core.reports.files.Files` store, or an address for
            :func:`~core.reports.files.open_files`.
        connection_string, endpoint_url, region, credential: passed to
            :func:`~core.reports.files.open_files` for an address.

    Raises:
        ConfigError: as :func:`~core.reports.files.open_files`.
    """
    if not isinstance(where, (str, os.PathLike)) and isinstance(where, Files):
        return ReportStore(where)
    return ReportStore(open_files(where, connection_string=connection_string, endpoint_url=endpoint_url,
                                  region=region, credential=credential))
