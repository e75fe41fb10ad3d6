"""Golden files and document folders read from S3 (moto's server, started by
``scripts/services/moto.sh``) and Azure Blob Storage (Azurite, started by
``scripts/services/azurite.sh``) give the same results as the same files on the local disk.

The bundled squad-mini golden file and documents (plus a file in a sub-folder, a hidden file
and an empty file) are uploaded to a fresh bucket or container per test. Expected values are
the results on the local copy (the reference), or written out by hand from the bytes uploaded.
"""

from __future__ import annotations

import json
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pytest

from tests.support.services import delete_bucket, service

from core.cli import main
from core.documents import list_document_ids
from core.errors import DocumentError, GoldenError
from core.evaluation.single import Corpus
from core.golden import check_golden, read_golden
from core.inputs import InputNotFoundError, fetch_file, fetch_folder, read_input_bytes

pytestmark = pytest.mark.integration

S3_KEY_ID = "ragtune-test-key-id"
S3_SECRET = "ragtune-test-secret-never-printed"
BAD_GOLDEN = (
    '{"question": "q1", "expected": ["a.txt"]}\n'
    "not json\n"
    '{"question": "q2", "expeted": ["a.txt"]}\n'
    '{"question": "q3", "expected": ["b.pdf#page=0"]}\n'
)


def _unique_name() -> str:
    """A bucket or container name valid on S3 and Blob: 3-63 lowercase letters, digits, hyphens."""
    return f"ragtune-in-{uuid.uuid4().hex[:20]}"


@dataclass
class Remote:
    """One bucket or container under test.

    Attributes:
        name: ``s3`` or ``blob``.
        put: ``put(key, data)`` uploads ``data`` at ``key``.
        address: ``address(key)`` -> the address of ``key`` (``s3://...`` or a path-style Blob URL).
        access: keyword arguments that reach the service (``endpoint_url`` or ``connection_string``).
        env: environment variables with which the defaults (Settings, boto3) reach it.
        secrets: strings that must never appear in a message.
        sas_access: for Blob, keyword arguments with a connection string that holds a SAS token.
    """

    name: str
    put: Callable[[str, bytes], None]
    address: Callable[[str], str]
    access: dict[str, Any]
    env: dict[str, str]
    secrets: list[str] = field(default_factory=list)
    sas_access: dict[str, Any] | None = None


def _s3(request, monkeypatch) -> Remote:
    import boto3

    endpoint = service("RAGTUNE_TEST_S3_ENDPOINT", "moto.sh")
    for name, value in {"AWS_ACCESS_KEY_ID": S3_KEY_ID, "AWS_SECRET_ACCESS_KEY": S3_SECRET,
                        "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    client = boto3.client("s3", endpoint_url=endpoint)
    bucket = _unique_name()
    client.create_bucket(Bucket=bucket)

    request.addfinalizer(lambda: delete_bucket(client, bucket))
    return Remote(
        "s3", lambda key, data: client.put_object(Bucket=bucket, Key=key, Body=data),
        lambda key: f"s3://{bucket}/{key}", {"endpoint_url": endpoint}, {"AWS_ENDPOINT_URL": endpoint},
        [S3_SECRET],
    )


def _blob(request) -> Remote:
    from datetime import datetime, timedelta, timezone

    from azure.storage.blob import BlobServiceClient, ContainerSasPermissions, generate_container_sas

    connection_string = service("RAGTUNE_TEST_AZURITE_CONNECTION_STRING", "azurite.sh")
    blob_service = BlobServiceClient.from_connection_string(connection_string)
    container = _unique_name()
    blob_service.create_container(container)
    request.addfinalizer(lambda: blob_service.delete_container(container))
    endpoint = blob_service.url.rstrip("/")
    account_key = blob_service.credential.account_key
    sas = generate_container_sas(
        blob_service.account_name, container, account_key=account_key,
        permission=ContainerSasPermissions(read=True, list=True),
        expiry=datetime.now(timezone.utc) + timedelta(hours=1),
    )
    signature = dict(part.split("=", 1) for part in sas.split("&"))["sig"]
    sas_connection = f"BlobEndpoint={endpoint};SharedAccessSignature={sas}"
    return Remote(
        "blob", lambda key, data: blob_service.get_blob_client(container, key).upload_blob(data, overwrite=True),
        lambda key: f"{endpoint}/{container}/{key}", {"connection_string": connection_string},
        {"RAGTUNE_STORAGE_CONNECTION": connection_string}, [account_key, signature],
        {"connection_string": sas_connection},
    )


@pytest.fixture(params=["s3", "blob"])
def remote(request, monkeypatch) -> Remote:
    return _s3(request, monkeypatch) if request.param == "s3" else _blob(request)


@pytest.fixture
def local_corpus(squad_dir, tmp_path) -> Path:
    """The squad-mini documents plus ``sub/nested.txt``, a hidden file and an empty file."""
    docs = tmp_path / "local-docs"
    shutil.copytree(squad_dir / "docs", docs)
    (docs / "sub").mkdir()
    (docs / "sub" / "nested.txt").write_text("A paragraph in a sub-folder.\n\nAnd a second one.", encoding="utf-8")
    (docs / ".hidden.txt").write_text("never loaded", encoding="utf-8")
    (docs / "empty.txt").write_text("", encoding="utf-8")
    return docs


def _upload_tree(remote: Remote, folder: Path, prefix: str) -> None:
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            remote.put(f"{prefix}/{path.relative_to(folder).as_posix()}", path.read_bytes())


def _problems(check) -> list[tuple]:
    return [(p.severity, p.line, p.field, p.message) for p in check.problems]


def _assert_no_secret(remote: Remote, text: str) -> None:
    for secret in remote.secrets:
        assert secret not in text


# --- golden files -------------------------------------------------------------------------------


def test_check_golden_matches_the_local_file(remote, squad_dir, local_corpus):
    local = squad_dir / "golden.jsonl"
    remote.put("sets/golden.jsonl", local.read_bytes())
    _upload_tree(remote, local_corpus, "corpus/docs")
    address = remote.address("sets/golden.jsonl")

    ids = list_document_ids(remote.address("corpus/docs"), **remote.access)
    assert ids == list_document_ids(local_corpus)  # listed, hidden file left out, nothing downloaded
    assert "sub/nested.txt" in ids and ".hidden.txt" not in ids

    for documents in (None, ids[:40]):  # the second: warnings with line numbers for missing documents
        want = check_golden(local, documents=documents)
        got = check_golden(address, documents=documents, **remote.access)
        assert got.path == address
        assert (got.ok, got.n_lines, got.n_ready, got.sha256, got.format) == \
               (want.ok, want.n_lines, want.n_ready, want.sha256, want.format)
        assert _problems(got) == _problems(want)
    assert want.warnings  # the reference did report missing documents, by line

    golden = read_golden(address, **remote.access)
    reference = read_golden(local)
    assert golden.path == address and golden.sha256 == reference.sha256 == want.sha256
    assert golden.raw == local.read_bytes()
    assert [q.to_dict() for q in golden.questions] == [q.to_dict() for q in reference.questions]


def test_defaults_come_from_the_environment(remote, squad_dir, monkeypatch):
    """No keyword arguments: boto3 reads AWS_ENDPOINT_URL; Blob takes RAGTUNE_STORAGE_CONNECTION
    through ``Settings``."""
    local = squad_dir / "golden.jsonl"
    remote.put("golden.jsonl", local.read_bytes())
    for name, value in remote.env.items():
        monkeypatch.setenv(name, value)
    check = check_golden(remote.address("golden.jsonl"))
    assert check.ok and check.sha256 == check_golden(local).sha256


def test_invalid_remote_golden_file_reports_lines_and_the_address(remote, tmp_path):
    local = tmp_path / "g.jsonl"
    local.write_text(BAD_GOLDEN, encoding="utf-8")
    remote.put("bad/g.jsonl", local.read_bytes())
    address = remote.address("bad/g.jsonl")

    check = check_golden(address, **remote.access)
    assert not check.ok and check.path == address
    assert sorted({p.line for p in check.errors}) == [2, 3, 4]  # written out by hand from BAD_GOLDEN
    assert _problems(check) == _problems(check_golden(local))

    with pytest.raises(GoldenError) as info:
        read_golden(address, **remote.access)
    message = str(info.value)
    for line in (2, 3, 4):
        assert f"{address}:{line}: error" in message
    assert str(tmp_path) not in message and "/tmp" not in message.replace(address, "")


def test_missing_golden_file_names_the_address_without_secrets(remote):
    remote.put("sets/golden.jsonl", b'{"question": "q", "expected": ["a.txt"]}\n')
    missing = remote.address("sets/nope.jsonl")
    check = check_golden(missing, **remote.access)
    assert check.path == missing and check.sha256 is None
    assert [p.message for p in check.problems] == ["file not found"]

    folder = remote.address("sets")  # keys exist below it: a folder, not a file
    assert "is a directory, not a golden file" in check_golden(folder, **remote.access).problems[0].message

    with pytest.raises(GoldenError) as info:
        read_golden(missing, **remote.access)
    assert str(info.value) == f"{missing}: 1 error — cannot run\n{missing}: error: file not found"
    _assert_no_secret(remote, str(info.value))

    with pytest.raises(InputNotFoundError) as raw:
        read_input_bytes(missing, **remote.access)
    assert missing in str(raw.value)
    _assert_no_secret(remote, str(raw.value))


@pytest.fixture
def blob_remote(request) -> Remote:
    return _blob(request)


def test_blob_sas_never_shows_in_errors(blob_remote):
    remote = blob_remote
    remote.put("golden.jsonl", b'{"question": "q", "expected": ["a.txt"]}\n')
    # A connection string holding a SAS token reads the file ...
    assert check_golden(remote.address("golden.jsonl"), **remote.sas_access).ok
    # ... and a missing key is reported by its address, with neither the signature nor the account key.
    missing = remote.address("nope.jsonl")
    with pytest.raises(GoldenError) as info:
        read_golden(missing, **remote.sas_access)
    assert str(info.value) == f"{missing}: 1 error — cannot run\n{missing}: error: file not found"
    _assert_no_secret(remote, str(info.value))
    with pytest.raises(InputNotFoundError) as raw:
        read_input_bytes(missing, **remote.sas_access)
    _assert_no_secret(remote, str(raw.value))
    with pytest.raises(DocumentError) as docs:
        Corpus.load(remote.address("no-docs"), **remote.sas_access)
    _assert_no_secret(remote, str(docs.value))

    # A SAS query string on the URL is dropped from the reported path and from errors.
    sig = remote.secrets[1]
    with_query = f"{missing}?sv=2024-11-04&sp=r&sig={sig}"
    check = check_golden(with_query, **remote.access)
    assert check.path == missing and not check.ok
    text = json.dumps(check.to_dict())
    _assert_no_secret(remote, text)


# --- document folders ---------------------------------------------------------------------------


def _texts(corpus: Corpus) -> dict[str, list[str]]:
    return {d.document_id: [item.text for item in d.document.texts] for d in corpus.documents}


def test_corpus_load_matches_the_local_folder(remote, local_corpus, tmp_path):
    _upload_tree(remote, local_corpus, "corpus/docs")
    address = remote.address("corpus/docs")
    cache = tmp_path / "cache"

    reference = Corpus.load(local_corpus)
    corpus = Corpus.load(address, cache_dir=cache, **remote.access)
    assert corpus.docs_dir == address
    assert [d.document_id for d in corpus.documents] == [d.document_id for d in reference.documents]
    assert len(corpus.documents) == 88  # 87 squad-mini documents + sub/nested.txt
    assert _texts(corpus) == _texts(reference)
    assert [(d.document_id, d.sha256) for d in corpus.documents] == [(d.document_id, d.sha256) for d in reference.documents]
    assert corpus.fingerprint == reference.fingerprint
    assert corpus.skipped == reference.skipped  # the empty file and the hidden file, as locally

    # The local mirror: same keys, same bytes; a second fetch of unchanged content gives the same folder.
    folder = fetch_folder(address, cache_dir=cache, **remote.access)
    assert folder.is_relative_to(cache)
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()) == \
           sorted(p.relative_to(local_corpus).as_posix() for p in local_corpus.rglob("*") if p.is_file())
    assert (folder / "sub" / "nested.txt").read_bytes() == (local_corpus / "sub" / "nested.txt").read_bytes()
    assert fetch_folder(address + "/", cache_dir=cache, **remote.access) == folder
    assert not [p for p in cache.rglob("*") if p.name.startswith(".partial-") or p.name.endswith(".tmp")]

    # Changed content: a new folder, the old one left as it was for readers still using it.
    remote.put("corpus/docs/sub/nested.txt", b"Changed text in the sub-folder.")
    changed = fetch_folder(address, cache_dir=cache, **remote.access)
    assert changed != folder and (changed / "sub" / "nested.txt").read_bytes() == b"Changed text in the sub-folder."
    assert (folder / "sub" / "nested.txt").read_bytes() == (local_corpus / "sub" / "nested.txt").read_bytes()


def test_fetch_file_keeps_the_base_name(remote, squad_dir, tmp_path):
    local = squad_dir / "unanswerable.jsonl"
    remote.put("sets/unanswerable.jsonl", local.read_bytes())
    address = remote.address("sets/unanswerable.jsonl")
    path = fetch_file(address, cache_dir=tmp_path / "cache", **remote.access)
    assert path.name == "unanswerable.jsonl" and path.read_bytes() == local.read_bytes()
    assert fetch_file(address, cache_dir=tmp_path / "cache", **remote.access) == path
    with pytest.raises(InputNotFoundError) as info:
        fetch_file(remote.address("sets/missing.jsonl"), cache_dir=tmp_path / "cache", **remote.access)
    assert remote.address("sets/missing.jsonl") in str(info.value)
    _assert_no_secret(remote, str(info.value))


def test_missing_document_folder_names_the_address(remote, tmp_path):
    remote.put("other/a.txt", b"some text here")
    address = remote.address("corpus/nothing-here")
    with pytest.raises(DocumentError) as info:
        Corpus.load(address, cache_dir=tmp_path / "cache", **remote.access)
    assert str(info.value) == f"corpus folder not found: {address} (no files below this address)"
    _assert_no_secret(remote, str(info.value))


def test_missing_s3_bucket_is_a_clear_error(monkeypatch, request, tmp_path):
    remote = _s3(request, monkeypatch)
    bucket = _unique_name()
    address = f"s3://{bucket}/golden.jsonl"
    check = check_golden(address, **remote.access)
    assert check.path == address
    assert [p.message for p in check.problems] == [f"file not found (there is no bucket '{bucket}')"]
    with pytest.raises(DocumentError) as info:
        Corpus.load(f"s3://{_unique_name()}/docs", cache_dir=tmp_path, **remote.access)
    assert "NoSuchBucket" in str(info.value)
    _assert_no_secret(remote, str(info.value))


def test_a_document_over_the_size_limit_is_skipped_without_being_downloaded(remote, tmp_path, monkeypatch):
    # what a queue evaluation loads (Corpus.load), with the limit from the environment
    remote.put("corpus/docs/small.txt", b"A small document.")
    remote.put("corpus/docs/large.txt", b"x" * 5000)
    remote.put("corpus/docs/sub/exact.txt", b"y" * 4096)
    monkeypatch.setenv("RAGTUNE_DOCUMENT_MAX_BYTES", "4096")
    address = remote.address("corpus/docs")
    cache = tmp_path / "cache"
    corpus = Corpus.load(address, cache_dir=cache, **remote.access)
    assert [d.document_id for d in corpus.documents] == ["small.txt", "sub/exact.txt"]  # 4,096 bytes: at the limit
    assert [(s.document_id, s.reason) for s in corpus.skipped] == [
        ("large.txt", "over the size limit: 5,000 bytes on disk, more than 4,096 (limit: RAGTUNE_DOCUMENT_MAX_BYTES); "
                      "not downloaded")]
    assert not list(cache.rglob("large.txt"))


def test_a_file_larger_than_listed_is_read_only_past_the_limit(remote, tmp_path):
    from core.reports import open_files

    remote.put("docs/grown.txt", b"z" * 10_000)
    files = open_files(remote.address("docs"), **remote.access)
    assert files.sizes() == {"grown.txt": 10_000}
    assert files.read_at_most("grown.txt", 100) == b"z" * 101  # one byte past the limit says it is larger
    assert files.read_at_most("grown.txt", 20_000) == b"z" * 10_000
    remote.put("docs/empty.txt", b"")
    assert files.read_at_most("empty.txt", 100) == b""
    skipped = []
    folder = fetch_folder(remote.address("docs"), cache_dir=tmp_path, max_file_bytes=100, **remote.access,
                          on_skip=lambda key, reason: skipped.append(key))
    assert skipped == ["grown.txt"] and [p.name for p in folder.iterdir()] == ["empty.txt"]


def test_a_remote_golden_file_over_the_cap_is_read_only_past_it(remote, monkeypatch):
    import core.golden.reader as reader
    from core.inputs import InputTooLargeError

    row = b'{"id": "q1", "question": "Who pays?", "expected": ["a.txt"]}\n'  # 61 bytes
    remote.put("golden/big.jsonl", row * 3)  # 183 bytes
    address = remote.address("golden/big.jsonl")
    assert read_input_bytes(address, max_bytes=183, **remote.access) == row * 3
    with pytest.raises(InputTooLargeError):
        read_input_bytes(address, max_bytes=182, **remote.access)
    monkeypatch.setattr(reader, "GOLDEN_FILE_MAX_BYTES", 182)
    [problem] = check_golden(address, **remote.access).problems
    assert problem.message == ("file larger than 182 bytes, the most a golden file may hold (not read further): "
                               "split it into several files")


# --- the command line ---------------------------------------------------------------------------


def test_cli_check_remote_exits_as_for_the_local_file(remote, squad_dir, local_corpus, tmp_path, monkeypatch, capsys):
    for name, value in remote.env.items():
        monkeypatch.setenv(name, value)
    local = squad_dir / "golden.jsonl"
    remote.put("golden.jsonl", local.read_bytes())
    _upload_tree(remote, local_corpus, "docs")
    address = remote.address("golden.jsonl")

    assert main(["check", str(local), "--docs", str(local_corpus), "--json"]) == 0
    want = json.loads(capsys.readouterr().out)
    assert main(["check", address, "--docs", remote.address("docs"), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["path"] == address
    assert {**got, "path": None} == {**want, "path": None}

    assert main(["check", address]) == 0
    assert capsys.readouterr().out.startswith(f"{address}: OK — ")

    bad = tmp_path / "g.jsonl"
    bad.write_text(BAD_GOLDEN, encoding="utf-8")
    remote.put("g.jsonl", bad.read_bytes())
    assert main(["check", str(bad)]) == 1
    capsys.readouterr()
    assert main(["check", remote.address("g.jsonl")]) == 1
    out = capsys.readouterr().out
    for line in (2, 3, 4):
        assert f"{remote.address('g.jsonl')}:{line}: error" in out

    assert main(["check", remote.address("missing.jsonl")]) == 1
    assert f"{remote.address('missing.jsonl')}: error: file not found" in capsys.readouterr().out
    assert main(["check", address, "--docs", remote.address("no-docs")]) == 1
    assert "holds no documents" in capsys.readouterr().err
