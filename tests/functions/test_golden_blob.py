"""The golden blob trigger, called directly with blobs downloaded from Azurite."""

from __future__ import annotations

import asyncio
import hashlib
import json

import azure.functions as func
import pytest
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


def test_blob_trigger_falls_back_to_azure_web_jobs_storage(azurite, new_container, clean_env, tmp_path, app_functions):
    service = BlobServiceClient.from_connection_string(azurite)
    container = new_container()
    service.create_container(container)
    clean_env.setenv("AzureWebJobsStorage", azurite)
    clean_env.setenv("RAGTUNE_OUT_DIR", str(tmp_path))
    clean_env.setenv("RAGTUNE_GOLDEN_CONTAINER", container)
    check = _check(app_functions)
    service.get_blob_client(container, "g.jsonl").upload_blob(VALID)
    check(func.blob.InputStream(data=VALID, name=f"{container}/g.jsonl"))
    stored = json.loads((tmp_path / "golden_checks" / "g.jsonl.json").read_bytes())
    assert stored["ok"] is True and stored["path"] == "g.jsonl"


SPEC = json.dumps({"documents": "s3://documents/hr", "max_evals": 4, "optimizer": "random", "seed": 2}).encode()


def _golden_setup(azurite, blob_endpoint, new_container, clean_env, tmp_path):
    service = BlobServiceClient.from_connection_string(azurite)
    container = new_container()
    service.create_container(container)
    clean_env.setenv("RAGTUNE_STORAGE_CONNECTION", azurite)
    clean_env.setenv("RAGTUNE_REPORTS", str(tmp_path / "reports"))
    clean_env.setenv("RAGTUNE_GOLDEN_CONTAINER", container)
    return service, container


def _stored_check(tmp_path, name):
    return json.loads((tmp_path / "reports" / "golden_checks" / f"{name}.json").read_text())


def test_a_valid_golden_file_with_a_spec_starts_one_experiment(azurite, blob_endpoint, new_container, clean_env,
                                                              tmp_path, app_functions):
    from core.experiment.requests import golden_instance_id

    service, container = _golden_setup(azurite, blob_endpoint, new_container, clean_env, tmp_path)
    service.get_blob_client(container, "hr/experiment.json").upload_blob(SPEC)
    client = RecordingClient()
    check = _check(app_functions, client)
    stream = _uploaded_stream(service, container, "hr/golden.jsonl", VALID)
    check(stream)
    # Reference: the id is derived from the blob name and hashlib's sha256 of the bytes.
    expected_id = "golden-%s-%s" % (hashlib.sha256(b"hr/golden.jsonl").hexdigest()[:16],
                                    hashlib.sha256(VALID).hexdigest()[:16])
    assert golden_instance_id("hr/golden.jsonl", hashlib.sha256(VALID).hexdigest()) == expected_id
    ((name, instance_id, payload),) = client.started
    assert (name, instance_id) == ("experiment_orchestrator", expected_id)
    assert payload == {"experiment_id": expected_id, "prepare": True}
    stored = json.loads((tmp_path / "reports" / "experiments" / expected_id / "request.json").read_text())
    assert stored == {"golden": f"{blob_endpoint}/{container}/hr/golden.jsonl",
                      "documents": "s3://documents/hr", "space": {},
                      "optimizer": "random", "max_evals": 4, "seed": 2, "objective": None, "vector_store": None,
                      "multi_fidelity": False}
    assert _stored_check(tmp_path, "hr/golden.jsonl")["experiment"] == {
        "spec": "hr/experiment.json", "instance_id": expected_id, "started": True, "reason": None}
    # The same event again (or a save that changed nothing): nothing new starts.
    check(_uploaded_stream(service, container, "hr/golden.jsonl", VALID))
    assert len(client.started) == 1
    again = _stored_check(tmp_path, "hr/golden.jsonl")["experiment"]
    assert again["started"] is False and again["reason"].startswith("already started")
    # The experiment failed (say its documents were missing): the same golden file runs again.
    client.failed.add(expected_id)
    check(_uploaded_stream(service, container, "hr/golden.jsonl", VALID))
    assert [s[1] for s in client.started] == [expected_id, expected_id]
    assert _stored_check(tmp_path, "hr/golden.jsonl")["experiment"]["started"] is True
    client.started.pop()
    # Changed content: a new experiment with a new id.
    changed = VALID + b'{"question": "Who pays?", "expected": ["plan.md"]}\n'
    check(_uploaded_stream(service, container, "hr/golden.jsonl", changed))
    assert [s[1] for s in client.started] == [expected_id, golden_instance_id("hr/golden.jsonl",
                                                                              hashlib.sha256(changed).hexdigest())]


def test_invalid_golden_files_and_specs_start_nothing(azurite, blob_endpoint, new_container, clean_env, tmp_path,
                                                      app_functions):
    service, container = _golden_setup(azurite, blob_endpoint, new_container, clean_env, tmp_path)
    client = RecordingClient()
    check = _check(app_functions, client)
    # No spec beside it: checked, nothing started.
    check(_uploaded_stream(service, container, "solo.jsonl", VALID))
    assert _stored_check(tmp_path, "solo.jsonl")["experiment"] is None
    # An invalid golden file beside a valid spec: its check says why, nothing starts.
    service.get_blob_client(container, "a/experiment.json").upload_blob(SPEC)
    check(_uploaded_stream(service, container, "a/golden.jsonl", INVALID))
    stored = _stored_check(tmp_path, "a/golden.jsonl")
    assert stored["ok"] is False and stored["experiment"] is None and {e["line"] for e in stored["errors"]} == {2}
    # A valid golden file beside an invalid spec: the spec's errors are in the check.
    service.get_blob_client(container, "b/experiment.json").upload_blob(b'{"max_evals": 0}')
    check(_uploaded_stream(service, container, "b/golden.jsonl", VALID))
    experiment = _stored_check(tmp_path, "b/golden.jsonl")["experiment"]
    assert experiment["started"] is False and experiment["spec"] == "b/experiment.json"
    assert any("'documents' is required" in e for e in experiment["errors"])
    assert any("'max_evals' must be an integer" in e for e in experiment["errors"])
    # A spec nested too deeply to read: reported, not a crash.
    service.get_blob_client(container, "c/experiment.json").upload_blob(b"[" * 100000)
    check(_uploaded_stream(service, container, "c/golden.jsonl", VALID))
    assert "not valid JSON" in _stored_check(tmp_path, "c/golden.jsonl")["experiment"]["errors"][0]
    # The spec itself, uploaded: checked as a spec, nothing started.
    check(_uploaded_stream(service, container, "b/experiment.json", b'{"documents": "d", "golden": "x"}'))
    spec_check = _stored_check(tmp_path, "b/experiment.json")
    assert spec_check["kind"] == "experiment_spec" and spec_check["ok"] is False
    assert "must not name 'golden'" in spec_check["errors"][0]
    assert client.started == []


def test_odd_blob_names_give_readable_golden_addresses(azurite, blob_endpoint, new_container, clean_env, tmp_path,
                                                       app_functions):
    """'?', '#', '%', spaces and non-ASCII letters in a blob name are percent-encoded in the
    golden address the experiment gets, which reads back the same bytes."""
    from core.golden import read_golden

    service, container = _golden_setup(azurite, blob_endpoint, new_container, clean_env, tmp_path)
    client = RecordingClient()
    check = _check(app_functions, client)
    for folder in ("s1", "s2", "s3", "s4"):
        service.get_blob_client(container, f"{folder}/experiment.json").upload_blob(SPEC)
    names = ["s1/what?.jsonl", "s2/a#b.jsonl", "s3/50%20off.jsonl", "s4/Ünïcode golden.jsonl"]
    for name in names:
        check(_uploaded_stream(service, container, name, VALID))
    assert len(client.started) == 4
    for name, (_, instance_id, _) in zip(names, client.started):
        stored = json.loads((tmp_path / "reports" / "experiments" / instance_id / "request.json").read_text())
        assert "?" not in stored["golden"] and "#" not in stored["golden"]
        golden = read_golden(stored["golden"], connection_string=azurite)
        assert golden.sha256 == hashlib.sha256(VALID).hexdigest(), name


def _stored_by_key(tmp_path, name):
    from core.golden.checks import check_key

    return json.loads((tmp_path / "reports" / check_key(name)).read_text())


def test_a_reupload_that_cannot_run_replaces_the_ok_check(azurite, blob_endpoint, new_container, clean_env, tmp_path,
                                                          app_functions):
    service, container = _golden_setup(azurite, blob_endpoint, new_container, clean_env, tmp_path)
    clean_env.setenv("RAGTUNE_GOLDEN_MAX_BYTES", "1000")
    check = _check(app_functions)
    check(_uploaded_stream(service, container, "g.jsonl", VALID))
    assert _stored_check(tmp_path, "g.jsonl")["ok"] is True
    # A lone surrogate and a 5,000-digit integer: line errors, and the check is stored.
    hostile = b'{"question": "\\ud800", "expected": ["a.md"]}\n{"id": ' + b"9" * 5000 + b"}\n"
    clean_env.setenv("RAGTUNE_GOLDEN_MAX_BYTES", "10000")
    check(_uploaded_stream(service, container, "g.jsonl", hostile))
    stored = _stored_check(tmp_path, "g.jsonl")
    assert stored["ok"] is False and [e["line"] for e in stored["errors"]] == [1, 2, None]
    check(_uploaded_stream(service, container, "g.jsonl", VALID))
    assert _stored_check(tmp_path, "g.jsonl")["ok"] is True
    # Over RAGTUNE_GOLDEN_MAX_BYTES: a failed check naming the limit, not the old one.
    clean_env.setenv("RAGTUNE_GOLDEN_MAX_BYTES", "40")
    check(_uploaded_stream(service, container, "g.jsonl", VALID))  # 66 bytes
    stored = _stored_check(tmp_path, "g.jsonl")
    assert stored["ok"] is False and stored["experiment"] is None
    assert stored["errors"][0]["message"].startswith(f"the file is {len(VALID)} bytes, more than the 40 bytes")


def test_blob_names_a_folder_would_merge_each_get_their_check(azurite, blob_endpoint, new_container, clean_env,
                                                              tmp_path, app_functions):
    service, container = _golden_setup(azurite, blob_endpoint, new_container, clean_env, tmp_path)
    check = _check(app_functions)
    # (a/./y.jsonl, which check_key also keeps apart, cannot be uploaded: HTTP clients fold the
    # dot segment of its URL; tests/unit/golden/test_checks.py covers its key)
    names = {"a/y.jsonl": VALID, "a//y.jsonl": INVALID, "l/" + "n" * 1000: VALID}
    for name, data in names.items():
        service.get_blob_client(container, name).upload_blob(data)
        check(func.blob.InputStream(data=data, name=f"{container}/{name}", length=len(data)))
    for name, data in names.items():
        stored = _stored_by_key(tmp_path, name)
        assert stored["blob"] == name and stored["sha256"] == hashlib.sha256(data).hexdigest()


def _stream_of(service, container, name, data, *, etag=True):
    """Upload ``data`` and wrap it as the host delivers it: with the blob's properties (its
    ETag) from the upload, or, with ``etag`` False, without properties."""
    blob = service.get_blob_client(container, name)
    uploaded = blob.upload_blob(data, overwrite=True)
    properties = {"ETag": uploaded["etag"], "ContentLength": len(data)} if etag else None
    return func.blob.InputStream(data=data, name=f"{container}/{name}", uri=blob.url, length=len(data),
                                 blob_properties=properties)


@pytest.mark.parametrize("etag", [True, False], ids=["by-etag", "by-content"])
def test_an_older_check_finishing_last_does_not_replace_the_newer_one(azurite, blob_endpoint, new_container,
                                                                     clean_env, tmp_path, app_functions, etag):
    """A valid file is uploaded, then at once a file with an error; the second's check ends
    first. The first's check, ending last, finds its file replaced (by its ETag, or without
    one by its size and MD5): it is not stored and starts nothing, so the stored check still
    says the file on the blob has an error."""
    service, container = _golden_setup(azurite, blob_endpoint, new_container, clean_env, tmp_path)
    service.get_blob_client(container, "hr/experiment.json").upload_blob(SPEC)
    client = RecordingClient()
    check = _check(app_functions, client)
    older = _stream_of(service, container, "hr/golden.jsonl", VALID, etag=etag)
    newer = _stream_of(service, container, "hr/golden.jsonl", INVALID, etag=etag)
    check(newer)
    check(older)
    stored = _stored_check(tmp_path, "hr/golden.jsonl")
    assert stored["ok"] is False and stored["sha256"] == hashlib.sha256(INVALID).hexdigest()
    assert client.started == []
    # The same bytes saved again (a new ETag): the check of either save holds for both.
    again = _stream_of(service, container, "hr/golden.jsonl", INVALID, etag=etag)
    check(newer)
    assert _stored_check(tmp_path, "hr/golden.jsonl")["sha256"] == hashlib.sha256(INVALID).hexdigest()
    check(again)
    # A blob removed before its check ends gets none.
    gone = _stream_of(service, container, "gone.jsonl", VALID, etag=etag)
    service.get_blob_client(container, "gone.jsonl").delete_blob()
    check(gone)
    assert not (tmp_path / "reports" / "golden_checks" / "gone.jsonl.json").exists()


def test_a_check_stored_meanwhile_makes_the_older_one_look_again(azurite, blob_endpoint, new_container, clean_env,
                                                                 tmp_path, app_functions):
    """The race the conditional write closes, with the report store in Azurite: the older
    check finds its file current, then (before it writes) the newer file is uploaded and its
    check stored; the older check's write, conditional on the stored check it saw, is refused,
    and looking again it finds its file replaced."""
    from core.golden.checks import check_key, delivered_version, is_current, store_check

    service, container = _golden_setup(azurite, blob_endpoint, new_container, clean_env, tmp_path)
    reports = new_container()
    address = f"{blob_endpoint}/{reports}/team"
    clean_env.setenv("RAGTUNE_REPORTS", address)
    store = report_store(address, connection_string=azurite)
    golden = report_store(f"{blob_endpoint}/{container}", connection_string=azurite).files
    check = _check(app_functions)
    older = _stream_of(service, container, "g.jsonl", VALID)
    check(older)  # an earlier check of the same file: the stored one the older check sees first
    key = check_key("g.jsonl")
    seen = []

    def older_is_current():
        delivered = delivered_version(VALID, len(VALID), older.blob_properties, complete=True)
        seen.append(is_current(delivered, hashlib.sha256(VALID).hexdigest(), golden.version("g.jsonl", exact=True),
                               lambda: golden.read_or_none("g.jsonl", exact=True)))
        if len(seen) == 1:  # just after the older check looked, the newer upload lands and is checked
            check(_stream_of(service, container, "g.jsonl", INVALID))
        return seen[-1]

    assert store_check(store.files, key, b'{"ok": true, "stale": true}', older_is_current) is False
    assert seen == [True, False]  # the write was refused, and the second look found the file replaced
    stored = json.loads(store.files.read_bytes(key))
    assert stored["ok"] is False and stored["sha256"] == hashlib.sha256(INVALID).hexdigest()


def test_a_stored_check_changed_between_look_and_write_is_not_replaced(azurite, blob_endpoint, new_container):
    """The conditional write itself: written when the stored check is the one seen (or none
    was there and none is), refused when another was written in between."""
    files = report_store(f"{blob_endpoint}/{new_container()}/p", connection_string=azurite).files
    assert files.version("c.json") is None
    assert files.write_bytes_if("c.json", b"first", etag=None) is True   # container made on the way
    assert files.write_bytes_if("c.json", b"again", etag=None) is False  # one is there now
    seen = files.version("c.json")
    files.write_bytes("c.json", b"meanwhile")
    assert files.write_bytes_if("c.json", b"late", etag=seen.etag) is False
    assert files.read_bytes("c.json") == b"meanwhile"
    assert files.write_bytes_if("c.json", b"next", etag=files.version("c.json").etag) is True
    # Reference: hashlib's MD5 of the bytes, which Put Blob stores as Content-MD5.
    assert files.version("c.json").content_md5 == hashlib.md5(b"next").digest()


def test_concurrent_deliveries_of_one_blob_start_one_experiment(azurite, blob_endpoint, new_container, clean_env,
                                                               tmp_path, app_functions):
    """Event Grid delivers one upload five times at once (each Durable call a round trip of
    20 ms): the instance status is looked up before each start, one at a time per instance
    id, so start_new is called once and the other deliveries say it was started already."""
    service, container = _golden_setup(azurite, blob_endpoint, new_container, clean_env, tmp_path)
    service.get_blob_client(container, "hr/experiment.json").upload_blob(SPEC)
    stream = _stream_of(service, container, "hr/golden.jsonl", VALID)
    client = RecordingClient(latency_s=0.02)
    fn = user_function(app_functions, "check_golden_blob")

    async def deliveries():
        streams = [func.blob.InputStream(data=VALID, name=stream.name, length=len(VALID),
                                         blob_properties=stream.blob_properties) for _ in range(5)]
        await asyncio.gather(*(fn(s, client) for s in streams))

    asyncio.run(deliveries())
    assert len(client.started) == 1 and client.refused == []
    experiment = _stored_check(tmp_path, "hr/golden.jsonl")["experiment"]
    assert experiment["instance_id"] == client.started[0][1]
