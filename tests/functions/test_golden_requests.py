"""``POST /api/golden/template`` and ``/api/golden/suggest`` over Azurite addresses, and the blob
trigger on a file of drafts and templates only.

Expected rows are read off the squad-mini documents and golden file uploaded (hand computation:
three documents, one question each)."""

from __future__ import annotations

import asyncio
import json

import azure.functions as func
import pytest
from azure.storage.blob import BlobServiceClient

from tests.support.durable import RecordingClient, user_function

DOCS = ("Normans_p00.txt", "Normans_p01.txt", "Computational_complexity_theory_p00.txt")


@pytest.fixture
def storage(azurite, blob_endpoint, new_container, clean_env, tmp_path, squad_dir):
    """A container with three squad-mini documents under ``docs/`` and the settings to reach it."""
    service = BlobServiceClient.from_connection_string(azurite)
    container = new_container()
    service.create_container(container)
    for name in DOCS:
        service.get_blob_client(container, f"docs/{name}").upload_blob((squad_dir / "docs" / name).read_bytes())
    clean_env.setenv("RAGTUNE_STORAGE_CONNECTION", azurite)
    clean_env.setenv("RAGTUNE_REPORTS", str(tmp_path / "reports"))
    clean_env.setenv("RAGTUNE_GOLDEN_CONTAINER", container)
    return service, container, f"{blob_endpoint}/{container}"


def post(app_functions, name, route, body):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    resp = app_functions[name].get_user_function()(func.HttpRequest("POST", f"/api/{route}", body=data))
    return resp.status_code, json.loads(resp.get_body())


def blob_rows(service, container, name):
    text = service.get_blob_client(container, name).download_blob().readall().decode()
    return [json.loads(line) for line in text.splitlines()]


def test_template_is_written_beside_the_golden_file_once(storage, app_functions):
    service, container, base = storage
    body = {"documents": f"{base}/docs", "golden": f"{base}/hr/golden.jsonl", "by": "doc", "n": 10}
    status, answer = post(app_functions, "golden_template_http", "golden/template", body)
    assert status == 201, answer
    assert answer["address"] == f"{base}/hr/golden.template.jsonl" and answer["rows"] == 3
    rows = blob_rows(service, container, "hr/golden.template.jsonl")
    assert sorted(r["expected"][0] for r in rows) == sorted(DOCS)
    assert all(r["question"] == "" and r["hint"] for r in rows)
    status, answer = post(app_functions, "golden_template_http", "golden/template", body)
    assert status == 409 and "never overwritten" in answer["errors"][0]


def test_template_skips_a_document_over_its_limit_and_says_which(storage, app_functions, clean_env):
    # the route loads documents as every other caller does: limits from RAGTUNE_DOCUMENT_MAX_*
    service, container, base = storage
    service.get_blob_client(container, "docs/huge.txt").upload_blob(b"word " * 1000)  # 5,000 bytes
    clean_env.setenv("RAGTUNE_DOCUMENT_MAX_BYTES", "2048")  # the three documents are 482 to 1,427 bytes
    body = {"documents": f"{base}/docs", "golden": f"{base}/hr/golden.jsonl", "by": "doc", "n": 10}
    status, answer = post(app_functions, "golden_template_http", "golden/template", body)
    assert status == 201, answer
    assert answer["rows"] == 3 and answer["skipped"] == [{
        "document_id": "huge.txt",
        "reason": "over the size limit: 5,000 bytes on disk, more than 2,048 (limit: RAGTUNE_DOCUMENT_MAX_BYTES); "
                  "not downloaded"}]


@pytest.fixture
def containers(storage, new_container, clean_env, squad_dir):
    """Besides ``storage``'s golden container: a documents container holding one document, and
    a container standing for the account's others (the task hub's, ``azure-webjobs-secrets``)
    holding a secret."""
    service, golden, base = storage
    documents, other = new_container(), new_container()
    for name in (documents, other):
        service.create_container(name)
    service.get_blob_client(documents, "hr/Normans_p00.txt").upload_blob((squad_dir / "docs" / DOCS[0]).read_bytes())
    service.get_blob_client(other, "host/keys.json").upload_blob(b'{"masterKey": "SECRET-MASTER-KEY"}')
    clean_env.setenv("RAGTUNE_DOCUMENTS_CONTAINER", documents)
    endpoint = base.rsplit("/", 1)[0]
    return service, endpoint, golden, documents, other


def _blobs(service, container):
    return sorted(b.name for b in service.get_container_client(container).list_blobs())


def test_documents_from_the_documents_container_and_the_template_beside_the_golden_file(containers, app_functions):
    service, endpoint, golden, documents, _ = containers
    body = {"documents": f"{endpoint}/{documents}/hr", "golden": f"{endpoint}/{golden}/hr/golden.jsonl", "by": "doc"}
    status, answer = post(app_functions, "golden_template_http", "golden/template", body)
    assert status == 201, answer
    assert [r["expected"] for r in blob_rows(service, golden, "hr/golden.template.jsonl")] == [["Normans_p00.txt"]]
    assert _blobs(service, documents) == ["hr/Normans_p00.txt"]  # nothing written there


@pytest.mark.parametrize("documents, golden, field", [
    ("{endpoint}/{other}/host", "{endpoint}/{golden}/g.jsonl", "documents"),     # read another container
    ("{endpoint}/{documents}/hr", "{endpoint}/{other}/g.jsonl", "golden"),       # write in another container
    ("{endpoint}/{documents}/hr", "{endpoint}/{documents}/g.jsonl", "golden"),   # write among the documents
    ("{endpoint}/{golden}/..%2F{other}/host", "{endpoint}/{golden}/g.jsonl", "documents"),
    ("{endpoint}/{golden}/../{other}/host", "{endpoint}/{golden}/g.jsonl", "documents"),
    ("{endpoint}/{documents}/hr", "{endpoint}/{golden}%2F..%2F{other}/g.jsonl", "golden"),
    ("{endpoint}/{documents}/hr", "{endpoint}/{golden}/a\\..\\..\\{other}/g.jsonl", "golden"),
    ("{endpoint}//{other}/host", "{endpoint}/{golden}/g.jsonl", "documents"),
    ("{endpoint}/%24logs/blob", "{endpoint}/{golden}/g.jsonl", "documents"),
    ("s3://bucket/docs", "{endpoint}/{golden}/g.jsonl", "documents"),
    ("{endpoint}/{documents}/hr", "s3://bucket/g.jsonl", "golden"),
])
@pytest.mark.parametrize("route", ["template", "suggest"])
def test_addresses_outside_their_containers_are_refused(containers, app_functions, documents, golden, field, route):
    """Whatever the spelling (percent-encoded or backslash separators, '..', empty segments),
    a request reads documents only from the documents or golden container and reads and
    writes golden files only in the golden container; nothing is read or written elsewhere."""
    service, endpoint, golden_c, documents_c, other = containers
    names = {"endpoint": endpoint, "golden": golden_c, "documents": documents_c, "other": other}
    body = {"documents": documents.format(**names), "golden": golden.format(**names)}
    before = {c: _blobs(service, c) for c in (golden_c, documents_c, other)}
    status, answer = post(app_functions, f"golden_{route}_http", f"golden/{route}", body)
    assert status == 400, answer
    (message,) = [e for e in answer["errors"] if e.startswith(f"{field!r}")]
    assert f"{endpoint}/{golden_c}/ (RAGTUNE_GOLDEN_CONTAINER)" in message
    assert (f"{endpoint}/{documents_c}/ (RAGTUNE_DOCUMENTS_CONTAINER)" in message) == (field == "documents")
    assert {c: _blobs(service, c) for c in before} == before
    assert "SECRET-MASTER-KEY" not in json.dumps(answer)


@pytest.mark.parametrize("body, wanted", [
    ({"documents": "/etc", "golden": "/tmp/g.jsonl"}, "'golden'"),
    ({"documents": "https://example.com/docs", "golden": "s3://b/g.jsonl"}, "'documents'"),
    ({"documents": "s3://b/docs", "golden": "s3://b/g.jsonl", "top": 2}, "unknown field 'top'"),
    ({"documents": "s3://b/docs", "golden": "s3://b/g.jsonl", "by": "chunk"}, "'by' must be one of doc, page"),
    ({"documents": "s3://b/docs", "golden": "s3://b/g.jsonl", "n": 0}, "'n' must be an integer from 1 to 1000"),
    ({"documents": "{base}/docs", "golden": "{base}/hr/"}, "must name a file"),
    (b"not json", "not valid JSON"),
])
def test_bad_template_requests_say_what_is_wrong(storage, app_functions, body, wanted):
    if isinstance(body, dict):
        body = {k: v.replace("{base}", storage[2]) if isinstance(v, str) else v for k, v in body.items()}
    status, answer = post(app_functions, "golden_template_http", "golden/template", body)
    assert status == 400 and any(wanted in e for e in answer["errors"]), answer


@pytest.mark.slow
def test_suggest_labels_the_golden_file_in_the_store(storage, app_functions, squad_dir):
    service, container, base = storage
    golden = [json.loads(line) for line in (squad_dir / "golden.jsonl").read_text(encoding="utf-8").splitlines()]
    rows = []
    for doc in DOCS:
        row = next(r for r in golden if r["expected"] == [doc] and len(r["reference"].split()) >= 3)
        rows.append({k: v for k, v in row.items() if k != "expected"})
    rows.append({"id": "person", "question": "Who labelled this?", "expected": ["Normans_p00.txt"]})
    service.get_blob_client(container, "hr/golden.jsonl").upload_blob("".join(json.dumps(r) + "\n" for r in rows))
    body = {"documents": f"{base}/docs", "golden": f"{base}/hr/golden.jsonl", "by": "doc"}
    status, answer = post(app_functions, "golden_suggest_http", "golden/suggest", body)
    assert status == 201, answer
    assert answer["address"] == f"{base}/hr/golden.suggested.jsonl"
    assert (answer["suggested"], answer["kept"]) == (3, 1)
    written = blob_rows(service, container, "hr/golden.suggested.jsonl")
    assert [r["expected"] for r in written[:3]] == [[d] for d in DOCS]
    assert all(r["draft"] is True for r in written[:3]) and written[3] == rows[3]
    service.get_blob_client(container, "hr/bad.jsonl").upload_blob(b'{"question": "q", "expeted": ["a"]}\n')
    status, answer = post(app_functions, "golden_suggest_http", "golden/suggest", {**body, "golden": f"{base}/hr/bad.jsonl"})
    assert status == 422 and answer["errors"][0]["line"] == 1


def test_blob_trigger_starts_nothing_for_drafts_and_templates_only(storage, app_functions, tmp_path):
    service, container, _ = storage
    service.get_blob_client(container, "hr/experiment.json").upload_blob(
        json.dumps({"documents": "s3://documents/hr", "max_evals": 2}).encode())
    data = (b'{"id": "d1", "question": "Who?", "expected": ["a.txt"], "draft": true}\n'
            b'{"id": "t1", "question": "", "expected": ["a.txt"], "hint": "page 1 of a.txt"}\n')
    blob = service.get_blob_client(container, "hr/golden.suggested.jsonl")
    blob.upload_blob(data)
    client = RecordingClient()
    fn = user_function(app_functions, "check_golden_blob")
    stream = func.blob.InputStream(data=data, name=f"{container}/hr/golden.suggested.jsonl", length=len(data))
    asyncio.run(fn(stream, client))
    stored = json.loads((tmp_path / "reports" / "golden_checks" / "hr/golden.suggested.jsonl.json").read_text())
    assert client.started == [] and stored["experiment"] is None
    assert stored["n_drafts"] == 1 and stored["n_templates"] == 1 and stored["n_ready"] == 0
