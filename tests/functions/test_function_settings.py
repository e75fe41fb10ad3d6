"""The settings the Functions read: report store, storage connection, container, queue, timeout."""

from __future__ import annotations

import pytest

from core.errors import ConfigError
from core.reports import BlobFiles, LocalFiles
from core.settings import Settings


def test_defaults():
    s = Settings.from_env({"RAGTUNE_OUT_DIR": "/data/out"})
    assert (s.reports, s.storage_connection, s.golden_container, s.evaluations_queue) == (
        "/data/out", None, "golden", "evaluations")
    assert (s.evaluation_timeout_s, s.parallel_evaluations) == (1500, 8)
    # 3 deliveries (host.json maxDequeueCount) of 1500 s each, 60 s invisible after each: 4680 s
    assert s.round_timeout_s == 3 * (1500 + 60)
    assert isinstance(s.report_store().files, LocalFiles)


def test_values_and_fallback_to_azure_web_jobs_storage():
    conn = "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=SECRETKEY;" \
           "BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;"
    s = Settings.from_env({"RAGTUNE_REPORTS": "http://127.0.0.1:10000/devstoreaccount1/reports",
                           "AzureWebJobsStorage": conn, "RAGTUNE_GOLDEN_CONTAINER": "gold",
                           "RAGTUNE_EVALUATIONS_QUEUE": "evals", "RAGTUNE_EVALUATION_TIMEOUT_S": "60",
                           "RAGTUNE_PARALLEL_EVALUATIONS": "16"})
    assert (s.storage_connection, s.golden_container, s.evaluations_queue, s.evaluation_timeout_s,
            s.parallel_evaluations, s.round_timeout_s) == (conn, "gold", "evals", 60, 16, 360)
    assert "SECRETKEY" not in repr(s)
    assert isinstance(s.report_store().files, BlobFiles)
    own = Settings.from_env({"RAGTUNE_STORAGE_CONNECTION": "UseDevelopmentStorage=true", "AzureWebJobsStorage": conn})
    assert own.storage_connection == "UseDevelopmentStorage=true"


@pytest.mark.parametrize("raw", ["0", "-5", "1.5", "soon"])
def test_bad_evaluation_timeout(raw):
    with pytest.raises(ConfigError, match="RAGTUNE_EVALUATION_TIMEOUT_S"):
        Settings.from_env({"RAGTUNE_EVALUATION_TIMEOUT_S": raw})


@pytest.mark.parametrize("raw", ["0", "65", "x"])
def test_bad_parallel_evaluations(raw):
    with pytest.raises(ConfigError, match="RAGTUNE_PARALLEL_EVALUATIONS must be an integer from 1 to 64"):
        Settings.from_env({"RAGTUNE_PARALLEL_EVALUATIONS": raw})


def test_the_deliveries_match_host_json():
    import json
    from pathlib import Path

    from core.settings import EVALUATION_DELIVERIES, EVALUATION_VISIBILITY_S

    queues = json.loads((Path(__file__).parents[2] / "host.json").read_text())["extensions"]["queues"]
    h, m, sec = (int(x) for x in queues["visibilityTimeout"].split(":"))
    assert (queues["maxDequeueCount"], h * 3600 + m * 60 + sec) == (EVALUATION_DELIVERIES, EVALUATION_VISIBILITY_S)


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
