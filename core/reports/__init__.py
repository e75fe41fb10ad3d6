"""Report format and report stores over a small ``Files`` protocol."""

from core.reports.files import Files, LocalFiles
from core.reports.store import ReportStore, new_run_id

__all__ = ["Files", "LocalFiles", "ReportStore", "new_run_id"]
