"""The golden blob trigger, called directly with blobs downloaded from Azurite."""

from __future__ import annotations

import asyncio
import hashlib
import json

import azure.functions as func
from azure.storage.blob import BlobServiceClient

from core.reports import report_store
from tests.support.durable import RecordingClient, user_function

VALID = b'{"question": "What is the deductible?", "expected": ["plan.md"]}\n'
# Line 2 misspells "expected" (an error); line 1 is fine.
INVALID = b'{"question": "q1", "expected": ["a.md"]}\n{"question": "q2", "expeted": ["b.md"]}\n'


def _uploaded_stream(service: BlobServiceClient, container: str, name: str, data: bytes) -> func.blob.InputStream:
    """Upload ``data`` to Azurite, download it again and wrap it as the host would."""
    blob = service.get_blob_client(container, name)
    blob.upload_blob(data, overwrite=True)
    body = blob.download_blob().readall()
    return func.blob.InputStream(data=body, name=f"{container}/{name}", uri=blob.url, length=len(body))


def _check(app_functions, client=None):
    """Call the blob trigger as the host would, with a recording Durable client."""
    fn = user_function(app_functions, "check_golden_blob")
    client = client or RecordingClient()
    return lambda stream: asyncio.run(fn(stream, client))


def test_blob_trigger_stores_the_check_in_an_azurite_report_store(azurite, blob_endpoint, new_container, clean_env,
                                                                  app_functions):
    from functions.golden import blob_name

    service = BlobServiceClient.from_connection_string(azurite)
    golden_container, reports_container = new_container(), new_container()
    service.create_container(golden_container)
    address = f"{blob_endpoint}/{reports_container}/team"
    clean_env.setenv("RAGTUNE_STORAGE_CONNECTION", azurite)
    clean_env.setenv("RAGTUNE_REPORTS", address)
    clean_env.setenv("RAGTUNE_GOLDEN_CONTAINER", golden_container)
    check = _check(app_functions)

    check(_uploaded_stream(service, golden_container, "valid.jsonl", VALID))
    check(_uploaded_stream(service, golden_container, "invalid.jsonl", INVALID))

    store = report_store(address, connection_string=azurite)
    assert store.files.list("golden_checks") == ["golden_checks/invalid.jsonl.json", "golden_checks/valid.jsonl.json"]
    ok = json.loads(store.files.read_bytes("golden_checks/valid.jsonl.json"))
    assert ok["ok"] is True and ok["errors"] == [] and ok["blob"] == "valid.jsonl"
    assert ok["sha256"] == hashlib.sha256(VALID).hexdigest()  # reference: hashlib over the uploaded bytes
    bad = json.loads(store.files.read_bytes("golden_checks/invalid.jsonl.json"))
    assert bad["ok"] is False
    # Line 2: the unknown field "expeted" and the missing "expected", both on line 2.
    assert {e["line"] for e in bad["errors"]} == {2}
    assert any("expeted" in e["message"] for e in bad["errors"])
    assert bad["sha256"] == hashlib.sha256(INVALID).hexdigest()
    assert blob_name("golden/nested/x.jsonl") == "nested/x.jsonl"


def test_blob_trigger_falls_back_to_azure_web_jobs_storage(azurite, clean_env, tmp_path, app_functions):
    clean_env.setenv("AzureWebJobsStorage", azurite)
    clean_env.setenv("RAGTUNE_OUT_DIR", str(tmp_path))
    check = _check(app_functions)
    check(func.blob.InputStream(data=VALID, name="golden/g.jsonl"))
    stored = json.loads((tmp_path / "golden_checks" / "g.jsonl.json").read_bytes())
    assert stored["ok"] is True and stored["path"] == "g.jsonl"
