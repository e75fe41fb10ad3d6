"""The settings the Functions read: report store, storage connection, container, queue, timeout."""

from __future__ import annotations

import pytest

from core.errors import ConfigError
from core.reports import BlobFiles, LocalFiles
from core.settings import Settings


def test_defaults():
    s = Settings.from_env({"RAGTUNE_OUT_DIR": "/data/out"})
    assert (s.reports, s.storage_connection, s.golden_container, s.evaluations_queue, s.round_timeout_s) == (
        "/data/out", None, "golden", "evaluations", 1800)
    assert isinstance(s.report_store().files, LocalFiles)


def test_values_and_fallback_to_azure_web_jobs_storage():
    conn = "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=SECRETKEY;" \
           "BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;"
    s = Settings.from_env({"RAGTUNE_REPORTS": "http://127.0.0.1:10000/devstoreaccount1/reports",
                           "AzureWebJobsStorage": conn, "RAGTUNE_GOLDEN_CONTAINER": "gold",
                           "RAGTUNE_EVALUATIONS_QUEUE": "evals", "RAGTUNE_ROUND_TIMEOUT_S": "60"})
    assert (s.storage_connection, s.golden_container, s.evaluations_queue, s.round_timeout_s) == (conn, "gold", "evals", 60)
    assert "SECRETKEY" not in repr(s)
    assert isinstance(s.report_store().files, BlobFiles)
    own = Settings.from_env({"RAGTUNE_STORAGE_CONNECTION": "UseDevelopmentStorage=true", "AzureWebJobsStorage": conn})
    assert own.storage_connection == "UseDevelopmentStorage=true"


@pytest.mark.parametrize("raw", ["0", "-5", "1.5", "soon"])
def test_bad_round_timeout(raw):
    with pytest.raises(ConfigError, match="RAGTUNE_ROUND_TIMEOUT_S"):
        Settings.from_env({"RAGTUNE_ROUND_TIMEOUT_S": raw})
