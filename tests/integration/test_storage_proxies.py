"""Azure Storage clients take the environment's proxy and CA settings once, when they are made
(``core.reports.blob.http_options``), and still honour them: a proxy in ``HTTP_PROXY`` is used
(a proxy nothing listens on makes the read fail), ``NO_PROXY`` naming the host bypasses it, and
``REQUESTS_CA_BUNDLE`` is passed on. Against the real Azurite that ``scripts/test.sh`` starts."""

from __future__ import annotations

import socket
import uuid

import pytest

from core.errors import StoreError
from core.reports.blob import BlobFiles, http_options
from tests.support.services import service

pytestmark = pytest.mark.integration

PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy",
              "no_proxy", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")


@pytest.fixture
def clean_env(monkeypatch):
    for name in PROXY_VARS:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def closed_port() -> int:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_options_say_what_requests_would_find_per_request(clean_env):
    assert http_options("http://127.0.0.1:10000/devstoreaccount1") == {"use_env_settings": False, "proxies": {}}
    clean_env.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    clean_env.setenv("REQUESTS_CA_BUNDLE", "/etc/ssl/certs/corporate.pem")
    options = http_options("https://acct.blob.core.windows.net")
    assert options["proxies"] == {"https": "http://proxy.example:3128"}
    assert options["connection_verify"] == "/etc/ssl/certs/corporate.pem" and options["use_env_settings"] is False
    clean_env.setenv("NO_PROXY", ".core.windows.net")
    assert http_options("https://acct.blob.core.windows.net")["proxies"] == {}


def test_a_blob_client_uses_the_proxy_of_its_environment_and_bypasses_it_for_no_proxy(clean_env):
    connection_string = service("RAGTUNE_TEST_AZURITE_CONNECTION_STRING", "azurite.sh")
    container = f"proxies-{uuid.uuid4().hex[:8]}"
    plain = BlobFiles(container, connection_string=connection_string)
    plain.container_client.create_container()
    try:
        plain.write_bytes("a.txt", b"hello")
        clean_env.setenv("HTTP_PROXY", f"http://127.0.0.1:{closed_port()}")
        proxied = BlobFiles(container, connection_string=connection_string)
        proxied.container_client._config.retry_policy.total_retries = 0
        with pytest.raises(StoreError, match="(?i)proxy"):  # sent to the proxy, which is not there
            proxied.read_bytes("a.txt")
        clean_env.setenv("NO_PROXY", "127.0.0.1")
        assert BlobFiles(container, connection_string=connection_string).read_bytes("a.txt") == b"hello"
    finally:
        plain.container_client.delete_container()
