"""Report format, report stores over a small ``Files`` protocol, and exports
(:func:`to_dataframe`, :func:`to_csv`; pages in :mod:`core.reports.pages`)."""

from core.reports.blob import BlobFiles
from core.reports.exports import to_csv, to_dataframe
from core.reports.files import Files, LocalFiles, open_files
from core.reports.s3 import S3Files
from core.reports.store import ReportStore, new_run_id, report_store

__all__ = ["BlobFiles", "Files", "LocalFiles", "ReportStore", "S3Files", "new_run_id", "open_files", "report_store",
           "to_csv", "to_dataframe"]
