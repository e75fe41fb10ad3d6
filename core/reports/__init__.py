"""Report format and report stores over a small ``Files`` protocol."""

from core.reports.blob import BlobFiles
from core.reports.files import Files, LocalFiles, open_files
from core.reports.s3 import S3Files
from core.reports.store import ReportStore, new_run_id, report_store

__all__ = ["BlobFiles", "Files", "LocalFiles", "ReportStore", "S3Files", "new_run_id", "open_files", "report_store"]
