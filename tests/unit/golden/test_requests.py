"""Which containers a template or suggestion request may name (``core.golden.requests``), for
an account's virtual-host URLs (``https://<account>.blob.core.windows.net``); the path-style
URLs of Azurite are covered end to end in ``tests/functions/test_golden_requests.py``."""

from __future__ import annotations

import pytest

from core.golden.requests import container_problem, parse_golden_request

ENDPOINT = "https://acct.blob.core.windows.net"
GOLDEN = [("golden", "RAGTUNE_GOLDEN_CONTAINER")]
DOCUMENTS = [("documents", "RAGTUNE_DOCUMENTS_CONTAINER"), *GOLDEN]


@pytest.mark.parametrize("address", [
    f"{ENDPOINT}/documents/hr", f"{ENDPOINT}/golden/hr/docs", f"{ENDPOINT}//documents//hr",
    f"{ENDPOINT}/documents/a%20b", f"{ENDPOINT}/documents",
])
def test_documents_in_their_containers_are_accepted(address):
    assert container_problem("documents", address, ENDPOINT, DOCUMENTS) is None


@pytest.mark.parametrize("address, found", [
    (f"{ENDPOINT}/azure-webjobs-secrets/host.json", "not in container 'azure-webjobs-secrets'"),
    (f"{ENDPOINT}/%24logs/blob/2026", "not in container '$logs'"),
    (f"{ENDPOINT}/ragtune-largemessages/x", "not in container 'ragtune-largemessages'"),
    (f"{ENDPOINT}/documents/..%2Fazure-webjobs-secrets", "without '.' or '..' segments"),
    (f"{ENDPOINT}/documents%2F..%2Freports/x", "without '.' or '..' segments"),
    (f"{ENDPOINT}/documents\\..\\reports/x", "without '.' or '..' segments"),
    (f"{ENDPOINT}/./reports/x", "without '.' or '..' segments"),
    ("https://other.blob.core.windows.net/documents/hr", "other addresses are not read or written here"),
    ("s3://documents/hr", "other addresses are not read or written here"),
])
def test_other_containers_and_spellings_are_refused(address, found):
    problem = container_problem("documents", address, ENDPOINT, DOCUMENTS)
    assert problem.startswith(f"'documents' must be in the app's Blob storage below {ENDPOINT}/documents/ "
                              f"(RAGTUNE_DOCUMENTS_CONTAINER) or {ENDPOINT}/golden/ (RAGTUNE_GOLDEN_CONTAINER)")
    assert found in problem


def test_the_golden_file_and_its_output_only_in_the_golden_container():
    request, errors = parse_golden_request(
        {"documents": f"{ENDPOINT}/documents/hr", "golden": f"{ENDPOINT}/golden/hr/g.jsonl"}, "template",
        blob_endpoint=ENDPOINT, golden_container="golden", documents_container="documents")
    assert errors == [] and request["output"] == f"{ENDPOINT}/golden/hr/g.template.jsonl"
    _, errors = parse_golden_request(
        {"documents": f"{ENDPOINT}/documents/hr", "golden": f"{ENDPOINT}/documents/hr/g.jsonl"}, "suggest",
        blob_endpoint=ENDPOINT, golden_container="golden", documents_container="documents")
    assert errors == [f"'golden' must be in the app's Blob storage below {ENDPOINT}/golden/ (RAGTUNE_GOLDEN_CONTAINER), "
                      "not in container 'documents': no other container of the account is read or written here"]


def test_without_blob_storage_the_message_says_so():
    assert container_problem("golden", "s3://b/g.jsonl", None, GOLDEN) == (
        "'golden' must be in the app's Blob storage, in container 'golden' (RAGTUNE_GOLDEN_CONTAINER), but no Blob "
        "storage is configured (RAGTUNE_STORAGE_CONNECTION)")
