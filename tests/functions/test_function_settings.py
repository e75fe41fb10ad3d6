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


def test_storage_access_for_addresses():
    """How a Blob address is reached: a SAS on the URL is its own credential; else the
    connection string; else, identity-based, a credential for https addresses only."""
    conn = Settings.from_env({"RAGTUNE_STORAGE_CONNECTION": "UseDevelopmentStorage=true"})
    assert conn.storage_access("https://a.blob.core.windows.net/c/g.jsonl?sv=1&sig=x") == {}
    assert conn.storage_access("https://a.blob.core.windows.net/c/g.jsonl") == {
        "connection_string": "UseDevelopmentStorage=true"}
    identity = Settings.from_env({"RAGTUNE_STORAGE_CONNECTION__blobServiceUri": "https://a.blob.core.windows.net",
                                  "RAGTUNE_STORAGE_CONNECTION__clientId": "00000000-0000-0000-0000-000000000001"})
    assert list(identity.storage_access("https://a.blob.core.windows.net/c/g.jsonl")) == ["credential"]
    assert identity.storage_access("http://127.0.0.1:10000/devstoreaccount1/c/g.jsonl") == {}
    assert Settings.from_env({}).storage_access("https://a.blob.core.windows.net/c/g.jsonl") == {}
