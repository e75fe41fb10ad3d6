"""The serve app over remote report stores: moto's S3 server and Azurite (Blob); the index
lists runs newest first and every page reads through the store."""

from __future__ import annotations

import json
import uuid

import pytest
from starlette.testclient import TestClient

from core.reports import report_store
from core.reports.serve import create_app
from tests.support.reports import experiment_report, retrieval_report
from tests.support.services import delete_bucket, service

pytestmark = [pytest.mark.integration]

OLD, NEW = "20260101T000000Z-aaaaaa", "20260102T000000Z-bbbbbb"


@pytest.fixture(params=["s3", "blob"])
def store(request, monkeypatch):
    if request.param == "s3":
        import boto3

        endpoint = service("RAGTUNE_TEST_S3_ENDPOINT", "moto.sh")
        for name, value in {"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s",
                            "AWS_DEFAULT_REGION": "us-east-1"}.items():
            monkeypatch.setenv(name, value)
        client = boto3.client("s3", endpoint_url=endpoint)
        bucket = f"ragtune-{uuid.uuid4().hex[:16]}"
        client.create_bucket(Bucket=bucket)
        request.addfinalizer(lambda: delete_bucket(client, bucket))
        return report_store(f"s3://{bucket}/reports", endpoint_url=endpoint)
    from azure.storage.blob import BlobServiceClient

    connection = service("RAGTUNE_TEST_AZURITE_CONNECTION_STRING", "azurite.sh")
    blob = BlobServiceClient.from_connection_string(connection)
    container = f"ragtune-{uuid.uuid4().hex[:16]}"
    blob.create_container(container)
    request.addfinalizer(lambda: blob.delete_container(container))
    return report_store(f"{blob.url.rstrip('/')}/{container}/reports", connection_string=connection)


def test_index_and_pages_over_a_remote_store(store):
    for run_id in (OLD, NEW):
        store.save_run(run_id, retrieval_report(run_id))
    store.files.write_bytes("experiments/e1/report.json", json.dumps(experiment_report("e1")).encode())
    client = TestClient(create_app(store, where="remote"))
    index = client.get("/")
    assert index.status_code == 200
    assert index.text.index(f'href="/runs/{NEW}"') < index.text.index(f'href="/runs/{OLD}"')
    assert 'href="/experiments/e1"' in index.text
    assert f"Evaluate run {NEW}" in client.get("/runs/latest").text
    assert "Experiment e1" in client.get("/experiments/e1").text
    history = client.get("/history", params={"golden": "ab" * 32}).text
    assert OLD in history and NEW in history
    assert client.get("/runs/20990101T000000Z-000000").status_code == 404
