"""What an error may show over HTTP (``core.redaction``): expected texts written by hand."""

from __future__ import annotations

import pytest

from core.errors import NotStoredError, StoreError
from core.redaction import shown_reason, without_locations, without_secrets


@pytest.mark.parametrize("text, shown", [
    ("cannot read http://127.0.0.1:10000/devstoreaccount1/reports/x/study.json: AuthorizationFailure: no.",
     "cannot read <location>: AuthorizationFailure: no."),
    ("cannot read https://acct.blob.core.windows.net/r/x?sig=SECRET&se=1, then gave up",
     "cannot read <location>, then gave up"),
    ("s3://bucket/key.json does not exist.", "<location> does not exist."),
    ("cannot read /tmp/r/x.json: [Errno 21] Is a directory: '/tmp/r/x.json'",
     "cannot read <location>: [Errno 21] Is a directory: '<location>'"),
    ("C:\\data\\reports\\x does not exist", "<location> does not exist"),
    ("(see /var/log/x)", "(see <location>)"),
    # words with slashes, ratios and quoted separators are not locations
    ("use a relative path without '..' and/or '/'", "use a relative path without '..' and/or '/'"),
    ("found@10 is 1/3; golden.jsonl line 3: unknown field", "found@10 is 1/3; golden.jsonl line 3: unknown field"),
])
def test_locations_are_replaced(text, shown):
    assert without_locations(text) == shown


def test_named_locations_are_named_with_the_rest_of_their_path():
    named = {"ragtune-out": "the app's working folder", "ragtune-out/reports": "the report store"}
    assert without_locations("no run in ragtune-out/reports/runs yet; cache ragtune-out/cache/e.sqlite: locked",
                             named) == "no run in the report store yet; cache the app's working folder: locked"
    assert without_locations("my-ragtune-out/x", named) == "my-ragtune-out/x"  # only the whole name


def test_secrets_are_masked():
    assert without_secrets("AccountKey=abc==;BlobEndpoint=x sig=s&se=1 password=p api_key=k") == \
        "AccountKey=***;BlobEndpoint=x sig=***&se=1 password=*** api_key=***"


def test_a_shown_reason_is_one_short_line():
    exc = StoreError("cannot write https://a.blob.core.windows.net/r/k: 503 Server Busy\nRequestId: 42\nTime: now")
    assert shown_reason(exc) == "StoreError: cannot write <location>: 503 Server Busy"
    assert shown_reason(NotStoredError("x" * 500), limit=20) == "NotStoredError: x..."
    assert shown_reason(StoreError("")) == "StoreError"


def test_json_values_have_their_strings_redacted_and_keep_their_shape():
    from core.redaction import json_without_locations

    value = {"phase": "failed", "n": 3, "ok": None,
             "errors": ["cannot read /srv/x.json", {"where": "https://a.example/c?sig=abc"}],
             "/keys/stay": 1.5}
    assert json_without_locations(value) == {
        "phase": "failed", "n": 3, "ok": None,
        "errors": ["cannot read <location>", {"where": "<location>"}],
        "/keys/stay": 1.5}
    deep = "/a/b"
    for _ in range(12):
        deep = [deep]
    # below the depth bound values are returned as they are: the walk is bounded
    assert json_without_locations(deep, max_depth=3) == deep
    assert json_without_locations([[["/a/b"]]], max_depth=3) == [[["<location>"]]]


@pytest.mark.parametrize("address, shown", [
    ("http://reader:pw@host:19530", "http://host:19530"),
    ("https://reader:p%40ss@my.search.windows.net/x?api-key=k#frag", "https://my.search.windows.net/x"),
    ("http://host:19530?token=t0k", "http://host:19530"),
    ("http://tok3n@host", "http://host"),
    ("./qdrant-data", "./qdrant-data"),
    (":memory:", ":memory:"),
])
def test_a_shown_address_has_no_credentials(address, shown):
    from core.redaction import shown_url

    assert shown_url(address) == shown


def test_credentials_of_urls_are_found_and_taken_out_of_messages():
    from core.redaction import url_secrets, without_credentials

    assert url_secrets("http://reader:p%40ss@host:1/?token=t0k&db=x") == ["p%40ss", "t0k", "p@ss"]
    assert url_secrets("http://tok3n@host") == ["tok3n"]
    assert url_secrets("http://host:1/db") == []
    message = "cannot reach http://reader:p%40ss@host:1/?token=t0k: refused (user reader, password p@ss)"
    assert without_credentials(message, url_secrets("http://reader:p%40ss@host:1/?token=t0k")) == \
        "cannot reach http://***@host:1/?token=*** refused (user reader, password ***)"  # the pair takes the colon
    assert without_credentials("see grpc://u:v@h:2 and x", ()) == "see grpc://***@h:2 and x"


def test_a_milvus_config_shows_no_credential_of_its_uri():
    from core.vectorstores.milvus import MilvusConfig

    shown = repr(MilvusConfig(uri="http://reader:S3cret@host:19530", token="tok"))
    assert "S3cret" not in shown and "tok'" not in shown and "http://host:19530" in shown
