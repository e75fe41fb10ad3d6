"""The one reading of an address's scheme and of a file:// URL's path (core.addresses), and
that the readers of addresses (inputs, report stores, experiment requests) all use it."""

import pytest

from core.addresses import file_url_path, scheme_of
from core.errors import ConfigError


@pytest.mark.parametrize("address, scheme", [
    ("s3://bucket/key", "s3"), ("S3://bucket/key", "s3"), ("HTTPS://a.blob.core.windows.net/c", "https"),
    ("file:///data", "file"), ("ftp://host/x", "ftp"), ("data/docs", None), ("/data/docs", None),
    ("C://data", None),  # a one-letter scheme is a Windows drive
    (" s3://bucket/key", None),  # read as given: callers strip when they accept blanks
])
def test_scheme_by_hand(address, scheme):
    assert scheme_of(address) == scheme


@pytest.mark.parametrize("url, path", [
    ("file:///data/my%20docs", "/data/my docs"), ("file://localhost/data", "/data"), ("file:///C:/data", "C:/data"),
])
def test_file_url_paths_by_hand(url, path):
    assert file_url_path(url) == path


def test_a_file_url_on_another_host_is_refused():
    with pytest.raises(ConfigError, match=r"^file:// store address on another host is not supported: 'file://h/x'$"):
        file_url_path("file://h/x", "store address")


def test_inputs_and_stores_read_the_scheme_alike():
    from core.inputs import is_remote, local_path
    from core.reports import LocalFiles, open_files

    assert local_path("file:///data/my%20docs").as_posix() == "/data/my docs"
    assert isinstance(open_files("file:///tmp/x%20y"), LocalFiles) and open_files("file:///tmp/x%20y").root.as_posix() == "/tmp/x y"
    assert is_remote(" s3://b/k") and not is_remote("C://data")
