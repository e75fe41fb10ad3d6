"""Address handling of ``core.inputs`` that needs no service (remote reads are in
``tests/integration/test_remote_inputs.py``). Expected values are written out by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.errors import ConfigError
from core.inputs import fetch_file, fetch_folder, is_remote, local_path, read_input_bytes, shown_address

SAS_URL = "https://acct.blob.core.windows.net/golden/q.jsonl?sv=2024-11-04&sp=r&sig=SECRETSIG%3D"


@pytest.mark.parametrize(
    ("address", "remote"),
    [
        ("golden.jsonl", False), ("/data/docs", False), ("C:\\data\\docs", False), ("file:///data/docs", False),
        (Path("x"), False), ("s3://b/k", True), ("https://a.blob.core.windows.net/c/k", True),
        ("http://127.0.0.1:10000/devstoreaccount1/c/k", True), ("ftp://h/k", False),
    ],
)
def test_is_remote(address, remote):
    assert is_remote(address) is remote


def test_shown_address_drops_the_query_string_of_remote_addresses_only():
    assert shown_address(SAS_URL) == "https://acct.blob.core.windows.net/golden/q.jsonl"
    assert shown_address("s3://b/docs#frag") == "s3://b/docs"
    assert shown_address("odd?name.jsonl") == "odd?name.jsonl"  # a local file name may hold '?'
    assert shown_address(Path("a/b.jsonl")) == str(Path("a/b.jsonl"))


def test_local_path():
    assert local_path("docs") == Path("docs")
    assert local_path("file:///data/my%20docs") == Path("/data/my docs")
    assert local_path("s3://b/k") is None
    with pytest.raises(ConfigError, match="another host"):
        local_path("file://server/share/x")
    with pytest.raises(ConfigError, match=r"cannot read ftp:// addresses"):
        local_path("ftp://host/x?token=abc")


def test_local_paths_are_returned_as_they_are(tmp_path):
    missing = tmp_path / "not-there.jsonl"
    assert fetch_file(missing, cache_dir=tmp_path / "cache") == missing  # not checked, not copied
    assert fetch_folder(str(tmp_path), cache_dir=tmp_path / "cache") == tmp_path
    assert not (tmp_path / "cache").exists()
    (tmp_path / "a.txt").write_bytes(b"abc")
    assert read_input_bytes((tmp_path / "a.txt").as_uri()) == b"abc"


@pytest.mark.parametrize("address", ["s3://bucket", "s3://bucket/docs/", SAS_URL.replace("q.jsonl", "")])
def test_a_file_address_needs_a_key(address, tmp_path):
    with pytest.raises(ConfigError, match="names a folder, not a file") as info:
        fetch_file(address, cache_dir=tmp_path)
    assert "SECRETSIG" not in str(info.value)
