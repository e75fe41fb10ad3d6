"""The ``Files`` contract, run against every backend: a local folder, S3 (moto's server, started
by ``scripts/services/moto.sh``) and Azure Blob Storage (Azurite, started by
``scripts/services/azurite.sh``). Each test gets its own folder, bucket or container.

Expected values are written out by hand from the keys each test writes.
"""

from __future__ import annotations

import contextlib
import io
import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tests.support.services import delete_bucket, service

from core.errors import StoreError
from core.reports import BlobFiles, Files, LocalFiles, ReportStore, S3Files, open_files, report_store

pytestmark = pytest.mark.integration

BACKENDS = ["local", "s3", "blob"]
S3_SECRET = "ragtune-test-secret-never-printed"
S3_KEY_ID = "ragtune-test-key-id"


def _unique_name() -> str:
    """A bucket or container name valid on S3 and Blob: 3-63 lowercase letters, digits, hyphens."""
    return f"ragtune-{uuid.uuid4().hex[:20]}"


class Spy:
    """A :class:`Files` wrapper that records which methods were called."""

    def __init__(self, inner: Files) -> None:
        self.inner, self.calls = inner, []

    def read_bytes(self, key: str) -> bytes:
        self.calls.append("read_bytes")
        return self.inner.read_bytes(key)

    def write_bytes(self, key: str, data: bytes) -> None:
        self.calls.append("write_bytes")
        self.inner.write_bytes(key, data)

    def exists(self, key: str) -> bool:
        self.calls.append("exists")
        return self.inner.exists(key)

    def list(self, prefix: str = "") -> list[str]:
        self.calls.append("list")
        return self.inner.list(prefix)


@dataclass
class Backend:
    """One backend under test.

    Attributes:
        name: ``local``, ``s3`` or ``blob``.
        make: ``make(prefix, page_size)`` -> a store under ``prefix`` of this test's folder,
            bucket or container (``page_size`` None: the default).
        address: the address of this test's folder, bucket or container for ``open_files``.
        open_kw: keyword arguments ``open_files`` needs for it.
        location: ``location(key)`` -> how error messages name ``key`` of the root store.
        requests: service requests made so far (S3 operation names; Blob ``METHOD path?query``).
        interrupt: context manager making writes fail part-way; yields a dict whose
            ``"sent_bytes"`` says how much of the new content got out before the failure.
    """

    name: str
    make: Callable[..., Files]
    address: str
    open_kw: dict[str, Any]
    location: Callable[[str], str]
    interrupt: Callable[[], Any]
    requests: list[str] = field(default_factory=list)

    @property
    def files(self) -> Files:
        return self.make("")


def _local(tmp_path: Path, monkeypatch) -> Backend:
    root = tmp_path / "store"

    def make(prefix: str = "", page_size: int | None = None) -> Files:
        return LocalFiles(root / prefix.strip("/") if prefix.strip("/") else root)

    @contextlib.contextmanager
    def interrupt() -> Iterator[dict]:
        # The data reaches the temporary file; fsync then fails, so the rename never happens.
        seen = {"sent_bytes": 0}

        def broken_fsync(fd: int) -> None:
            seen["sent_bytes"] = os.fstat(fd).st_size
            raise OSError("I/O error during fsync")

        with monkeypatch.context() as patch:
            patch.setattr(os, "fsync", broken_fsync)
            yield seen

    return Backend("local", make, str(root), {}, lambda key: str(root / key), interrupt)


class _CutBody(io.RawIOBase):
    """A request body that delivers the first half of ``data``, then fails like a dropped connection."""

    def __init__(self, data: bytes, seen: dict) -> None:
        self.data, self.pos, self.seen = data, 0, seen

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        half = len(self.data) // 2
        if self.pos >= half:
            raise OSError("connection dropped mid-upload")
        end = min(half, self.pos + (size if size and size > 0 else 8192))
        chunk, self.pos = self.data[self.pos:end], end
        self.seen["sent_bytes"] = self.pos
        return chunk


def _s3(request) -> Backend:
    import boto3
    from botocore.config import Config

    endpoint = service("RAGTUNE_TEST_S3_ENDPOINT", "moto.sh")
    client = boto3.client(
        "s3", endpoint_url=endpoint, region_name="us-east-1",
        aws_access_key_id=S3_KEY_ID, aws_secret_access_key=S3_SECRET,
        config=Config(retries={"total_max_attempts": 1}),
    )
    bucket = _unique_name()
    client.create_bucket(Bucket=bucket)
    ops: list[str] = []
    client.meta.events.register("before-call.s3", lambda model, **kw: ops.append(model.name))

    request.addfinalizer(lambda: delete_bucket(client, bucket))

    def make(prefix: str = "", page_size: int | None = None) -> Files:
        return S3Files(bucket, prefix, client=client, **({"list_page_size": page_size} if page_size else {}))

    @contextlib.contextmanager
    def interrupt() -> Iterator[dict]:
        # Half of the PutObject body goes over the socket, then the connection breaks.
        seen = {"sent_bytes": 0}

        def cut(request, **kw) -> None:
            request.body.seek(0)
            request.body = _CutBody(request.body.read(), seen)

        client.meta.events.register("before-send.s3.PutObject", cut)
        try:
            yield seen
        finally:
            client.meta.events.unregister("before-send.s3.PutObject", cut)

    return Backend(
        "s3", make, f"s3://{bucket}", {"endpoint_url": endpoint, "region": "us-east-1"},
        lambda key: f"s3://{bucket}/{key}", interrupt, ops,
    )


def _blob(request) -> Backend:
    from azure.core.exceptions import ServiceRequestError
    from azure.storage.blob import BlobServiceClient

    connection_string = service("RAGTUNE_TEST_AZURITE_CONNECTION_STRING", "azurite.sh")
    seen: list[str] = []
    state = {"interrupt": False, "sent_bytes": 0}

    def hook(http_request) -> None:
        url = http_request.http_request.url
        seen.append(f"{http_request.http_request.method} {url.split('/', 3)[-1]}")
        if state["interrupt"] and "comp=block" in url:
            if "comp=blocklist" in url:
                raise ServiceRequestError("connection dropped before the block list was committed")
            state["sent_bytes"] += len(http_request.http_request.body or b"")

    # Small block sizes: a 20 KB write goes up as staged blocks plus one Put Block List.
    blob_service = BlobServiceClient.from_connection_string(
        connection_string, raw_request_hook=hook, retry_total=0,
        max_single_put_size=4096, max_block_size=4096,
    )
    container = _unique_name()
    blob_service.create_container(container)
    request.addfinalizer(lambda: blob_service.delete_container(container))
    blob_endpoint = blob_service.url.rstrip("/")

    def make(prefix: str = "", page_size: int | None = None) -> Files:
        return BlobFiles(container, prefix, client=blob_service, **({"list_page_size": page_size} if page_size else {}))

    @contextlib.contextmanager
    def interrupt() -> Iterator[dict]:
        state.update(interrupt=True, sent_bytes=0)
        try:
            yield state
        finally:
            state["interrupt"] = False

    return Backend(
        "blob", make, f"{blob_endpoint}/{container}", {"connection_string": connection_string},
        lambda key: f"{blob_endpoint}/{container}/{key}", interrupt, seen,
    )


@pytest.fixture(params=BACKENDS)
def backend(request, tmp_path, monkeypatch) -> Backend:
    if request.param == "local":
        return _local(tmp_path, monkeypatch)
    if request.param == "s3":
        return _s3(request)
    return _blob(request)


def test_write_read_overwrite_exists(backend):
    files = backend.files
    assert not files.exists("r/report.json")
    files.write_bytes("r/report.json", b'{"n": 1}')
    assert files.exists("r/report.json")
    assert files.read_bytes("r/report.json") == b'{"n": 1}'
    files.write_bytes("r/report.json", b"second")
    assert files.read_bytes("r/report.json") == b"second"
    files.write_bytes("empty.bin", b"")
    assert files.read_bytes("empty.bin") == b""
    assert not files.exists("r")  # a folder-like prefix is not a file


def test_read_or_none_is_one_request(backend):
    from core.reports.files import read_if_present

    files = backend.files
    assert files.read_or_none("r/missing.json") is None
    files.write_bytes("r/here.json", b'{"n": 2}')
    files.write_bytes("r/empty.json", b"")
    assert files.read_or_none("r/here.json") == b'{"n": 2}'
    assert files.read_or_none("r/empty.json") == b""  # empty, not missing
    assert files.read_or_none("r") is None  # a folder-like prefix is not a file
    if backend.name != "local":
        backend.requests.clear()
        assert files.read_or_none("r/here.json") == b'{"n": 2}'
        assert files.read_or_none("r/missing.json") is None
        assert len(backend.requests) == 2  # one request each, found or not
    # a store without read_or_none: exists, then read
    spy = Spy(files)
    assert read_if_present(spy, "r/here.json") == b'{"n": 2}' and read_if_present(spy, "r/nope.json") is None
    assert spy.calls == ["exists", "read_bytes", "exists"]
    with pytest.raises(StoreError):
        files.read_or_none("../escape.json")


def test_list_is_recursive_sorted_and_relative(backend):
    files = backend.files
    for key in ["b/z.json", "a/2.json", "a/1/x.json", "ab.json", "a/1/y/z.json"]:
        files.write_bytes(key, b"x")
    assert files.list() == ["a/1/x.json", "a/1/y/z.json", "a/2.json", "ab.json", "b/z.json"]
    assert files.list("a") == ["a/1/x.json", "a/1/y/z.json", "a/2.json"]  # not ab.json
    assert files.list("/a/") == files.list("a")
    assert files.list("a/1/y") == ["a/1/y/z.json"]
    assert files.list("nothing") == []
    assert files.list("ab.json") == []  # a file is not a folder


def test_store_under_a_prefix_sees_relative_keys(backend):
    team = backend.make("team/reports")
    team.write_bytes("runs/1.json", b"1")
    backend.files.write_bytes("other/2.json", b"2")
    assert team.list() == ["runs/1.json"]
    assert team.list("runs") == ["runs/1.json"]
    assert team.read_bytes("runs/1.json") == b"1"
    assert backend.files.list() == ["other/2.json", "team/reports/runs/1.json"]
    assert backend.make("/team/reports/").list() == ["runs/1.json"]


def test_empty_prefix_is_the_root(backend):
    files = backend.make("")
    files.write_bytes("top.json", b"t")
    assert files.list() == ["top.json"]
    assert files.list("") == ["top.json"]


def test_missing_key_is_a_store_error_naming_where(backend):
    with pytest.raises(StoreError) as info:
        backend.files.read_bytes("runs/missing.json")
    assert str(info.value) == f"{backend.location('runs/missing.json')} does not exist"


def test_keys_with_spaces_and_unicode(backend):
    files = backend.files
    keys = ["reports/año 2026/résumé final.json", "reports/名前/データ.json", "reports/emoji 🙂.txt"]
    for i, key in enumerate(keys):
        files.write_bytes(key, f"{i}".encode())
    assert files.list("reports") == sorted(keys)
    assert [files.read_bytes(k) for k in keys] == [b"0", b"1", b"2"]
    assert files.exists(keys[0])
    assert files.list("reports/año 2026") == [keys[0]]


@pytest.mark.parametrize("key", ["../x.json", "a/../../x.json", "..", ""])
def test_keys_that_escape_or_are_empty_are_refused(backend, key):
    files = backend.files
    with pytest.raises(StoreError, match="invalid key"):
        files.write_bytes(key, b"x")
    with pytest.raises(StoreError, match="invalid key"):
        files.read_bytes(key)
    with pytest.raises(StoreError, match="invalid key"):
        files.exists(key)
    if key:
        with pytest.raises(StoreError, match="invalid key"):
            files.list(key)


def test_failed_upload_leaves_the_old_content(backend):
    files = backend.files
    files.write_bytes("r.json", b"old")
    new = bytes(range(256)) * 80  # 20 KB
    with backend.interrupt() as seen, pytest.raises(StoreError, match="cannot write"):
        files.write_bytes("r.json", new)
    assert seen["sent_bytes"] > 0  # part of the new content did get out before the failure
    assert files.read_bytes("r.json") == b"old"
    assert files.list() == ["r.json"]
    files.write_bytes("r.json", new)  # the next write goes through
    assert files.read_bytes("r.json") == new


def test_report_store_on_every_backend(backend):
    store = ReportStore(backend.files)
    assert store.history() == []
    with pytest.raises(StoreError, match="no retrieval run"):
        store.load_run("latest")
    ids = ["20260101T000000Z-aaaaaa", "20260102T000000Z-bbbbbb", "20260103T000000Z-cccccc"]
    for n, run_id in enumerate(ids, 1):
        assert store.save_run(run_id, {"schema_version": "1.0", "n": n, "note": "é"}) == f"retrieval/runs/{run_id}/report.json"
    assert store.load_run()["n"] == 3
    assert store.load_run("latest") == {"schema_version": "1.0", "n": 3, "note": "é"}
    assert store.load_run(ids[0])["n"] == 1
    assert store.history() == ids[::-1]
    assert store.history(limit=1) == [ids[2]]
    assert store.history(limit=2, offset=1) == [ids[1], ids[0]]
    assert store.history(limit=5, offset=3) == []
    with pytest.raises(StoreError, match="recent runs: 20260103T000000Z-cccccc"):
        store.load_run("nope")
    key = store.save_golden("abc123", b'{"q": 1}\n')
    assert key == "golden_dataset/abc123.jsonl"
    store.save_golden("abc123", b"different bytes are not written again\n")
    assert backend.files.read_bytes(key) == b'{"q": 1}\n'


def test_history_lists_keys_and_reads_no_report(backend):
    files = backend.make("", page_size=2)
    store = ReportStore(files)
    ids = [f"2026010{d}T000000Z-aaaaaa" for d in range(1, 6)]
    for run_id in ids:
        store.save_run(run_id, {"schema_version": "1.0"})
    spy = Spy(files)
    backend.requests.clear()
    assert ReportStore(spy).history(limit=2, offset=1) == [ids[3], ids[2]]
    assert spy.calls == ["list"]
    if backend.name == "s3":
        assert backend.requests == ["ListObjectsV2"] * 3  # 5 keys, 2 per page
    elif backend.name == "blob":
        assert len(backend.requests) == 3
        assert all(r.startswith("GET ") and "comp=list" in r for r in backend.requests)


def test_open_files_and_report_store_reach_the_same_store(backend, monkeypatch):
    if backend.name == "s3":  # open_files' S3 client takes credentials from boto3's chain
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", S3_KEY_ID)
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", S3_SECRET)
    opened = open_files(backend.address + "/team/reports", **backend.open_kw)
    assert type(opened) is type(backend.files)
    opened.write_bytes("a b/é.json", b"via address")
    assert backend.make("team/reports").read_bytes("a b/é.json") == b"via address"
    assert backend.files.list() == ["team/reports/a b/é.json"]
    store = report_store(backend.address, **backend.open_kw)
    store.save_run("20260101T000000Z-aaaaaa", {"schema_version": "1.0"})
    assert ReportStore(backend.files).history() == ["20260101T000000Z-aaaaaa"]
    with pytest.raises(StoreError, match="no run 'zzz'"):
        store.load_run("zzz")


def test_errors_do_not_show_credentials(backend):
    files = backend.files
    with pytest.raises(StoreError) as info:
        files.read_bytes("missing.json")
    shown = [str(info.value), repr(info.value)]
    if backend.name == "s3":
        assert not any(S3_SECRET in text for text in shown)
    if backend.name == "blob":
        account_key = dict(
            part.split("=", 1) for part in backend.open_kw["connection_string"].split(";") if "=" in part
        )["AccountKey"]
        assert not any(account_key in text for text in shown)


def test_s3_missing_bucket_is_named():
    import boto3

    endpoint = service("RAGTUNE_TEST_S3_ENDPOINT", "moto.sh")
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                          aws_access_key_id=S3_KEY_ID, aws_secret_access_key=S3_SECRET)
    bucket = _unique_name()
    files = S3Files(bucket, "p", client=client)
    with pytest.raises(StoreError, match=f"s3://{bucket}/p/x.json does not exist: there is no bucket"):
        files.read_bytes("x.json")
    assert not files.exists("x.json")
    assert files.read_or_none("x.json") is None
    with pytest.raises(StoreError, match=f"cannot write s3://{bucket}/p/x.json: NoSuchBucket"):
        files.write_bytes("x.json", b"x")


def test_blob_container_is_created_on_first_write():
    from azure.storage.blob import BlobServiceClient

    connection_string = service("RAGTUNE_TEST_AZURITE_CONNECTION_STRING", "azurite.sh")
    container = _unique_name()
    files = BlobFiles(container, "p", connection_string=connection_string)
    try:
        assert files.list() == []
        assert not files.exists("x.json")
        with pytest.raises(StoreError, match=f"/{container}/p/x.json does not exist"):
            files.read_bytes("x.json")
        assert files.read_or_none("x.json") is None  # no container yet
        files.write_bytes("x.json", b"x")
        assert files.read_bytes("x.json") == b"x"
        assert files.list() == ["x.json"]
    finally:
        BlobServiceClient.from_connection_string(connection_string).delete_container(container)
