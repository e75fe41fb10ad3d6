"""Stored golden checks: one key per blob name, and a result for every upload."""

from __future__ import annotations

import hashlib
import json

import pytest

from core.golden.checks import check_key, check_upload
from core.reports.files import LocalFiles


def test_plain_names_keep_their_key():
    assert check_key("golden.jsonl") == "golden_checks/golden.jsonl.json"
    assert check_key("hr/my golden ü.jsonl") == "golden_checks/hr/my golden ü.jsonl.json"


@pytest.mark.parametrize("names", [("a//y", "a/y", "a/./y", "a/../a/y"), ("x", "x/", "/x", "x\\"), ("~", "%7E")])
def test_names_a_store_would_merge_get_distinct_keys(tmp_path, names):
    files = LocalFiles(tmp_path)
    for name in names:
        files.write_bytes(check_key(name), name.encode())
    # every check reads back as its own: no two names share a file
    assert [files.read_bytes(check_key(name)).decode() for name in names] == list(names)


def test_long_names_are_stored_by_their_hash(tmp_path):
    for n in (300, 1024):
        name = "n" * n
        key = check_key(name)
        # reference: hashlib over the name's UTF-8 bytes
        assert key == f"golden_checks/~/{hashlib.sha256(name.encode()).hexdigest()}.json"
        LocalFiles(tmp_path).write_bytes(key, b"{}")  # a file system takes it (255-byte names)


def test_an_upload_over_the_limit_is_a_failed_check_naming_it():
    result = check_upload(b"x" * 11, "big.jsonl", max_bytes=10)
    assert result["ok"] is False and result["path"] == "big.jsonl"
    assert [e["message"] for e in result["errors"]] == [
        "the file is 11 bytes, more than the 10 bytes checked here (RAGTUNE_GOLDEN_MAX_BYTES): split it, or "
        "check it with `ragtune check`"]
    # a blob's length says it before anything is read
    assert check_upload(b"", "big.jsonl", max_bytes=10, size=5000)["errors"][0]["message"].startswith(
        "the file is 5,000 bytes")


def test_an_upload_whose_check_fails_is_a_failed_check(monkeypatch):
    from core.golden import reader

    def broken(*args, **kwargs):
        raise MemoryError("no room")

    monkeypatch.setattr(reader, "check_golden", broken)
    data = b'{"question": "q", "expected": ["a.md"]}\n'
    result = check_upload(data, "g.jsonl", max_bytes=100)
    assert result["ok"] is False and result["sha256"] == hashlib.sha256(data).hexdigest()
    assert result["errors"][0]["message"] == "the file could not be checked (MemoryError); nothing in it is ready to run"


def test_a_hostile_upload_gives_a_result_that_stores_as_utf8():
    data = b'{"question": "\\ud800", "expected": ["a.md"]}\n{"id": ' + b"9" * 5000 + b'}\n'
    result = check_upload(data, "g.jsonl", max_bytes=100_000)
    assert result["ok"] is False and [e["line"] for e in result["errors"]] == [1, 2, None]
    json.dumps(result, ensure_ascii=False).encode("utf-8")


def test_whether_a_blob_still_holds_the_checked_file():
    """Each rule of is_current, with versions written out by hand (MD5 and sha256 from hashlib)."""
    import hashlib

    from core.golden.checks import delivered_version, is_current
    from core.reports.blob import BlobVersion

    data, other = b'{"question": "q"}\n', b'{"question": "Q"}\n'  # same size, other bytes
    sha = hashlib.sha256(data).hexdigest()
    delivered = delivered_version(data, len(data), {"ETag": '"0x1"'}, complete=True)
    assert delivered == BlobVersion('"0x1"', len(data), hashlib.md5(data).digest())
    never = lambda: pytest.fail("the content is not read when the properties tell")  # noqa: E731
    assert is_current(delivered, sha, None, never) is False  # removed
    assert is_current(delivered, sha, BlobVersion("0x1", 999, None), never) is True  # same ETag (quotes aside)
    assert is_current(delivered, sha, BlobVersion('"0x2"', len(data) + 1, None), never) is False  # other size
    assert is_current(delivered, sha, BlobVersion('"0x2"', len(data), hashlib.md5(data).digest()), never) is True
    assert is_current(delivered, sha, BlobVersion('"0x2"', len(data), hashlib.md5(other).digest()), never) is False
    # no MD5 kept (a blob put in blocks): the content is read again and its sha256 compared
    assert is_current(delivered, sha, BlobVersion('"0x2"', len(data), None), lambda: data) is True
    assert is_current(delivered, sha, BlobVersion('"0x2"', len(data), None), lambda: other) is False
    assert is_current(delivered, sha, BlobVersion('"0x2"', len(data), None), lambda: None) is False
    # over the size limit, not read: its check depends on the size alone
    large = delivered_version(b"", 50_000_000, None, complete=False)
    assert large == BlobVersion(None, 50_000_000, None)
    assert is_current(large, None, BlobVersion('"0x3"', 50_000_000, None), never) is True
    assert is_current(large, None, BlobVersion('"0x3"', 60_000_000, None), never) is False
