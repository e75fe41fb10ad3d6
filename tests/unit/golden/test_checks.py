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
