"""A Milvus server that cannot be reached is a transient failure (the queue retries the
evaluation, a local run stops it without recording the configuration as bad); a request
Milvus refuses is not. Real pymilvus against a port nothing listens on."""

from __future__ import annotations

import socket

import pytest

from core.errors import is_transient


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed when the block ends: nothing listens there


def test_an_unreachable_milvus_server_is_transient():
    from pymilvus import MilvusClient

    with pytest.raises(Exception) as caught:
        MilvusClient(uri=f"http://127.0.0.1:{_closed_port()}", timeout=2)
    # pymilvus wraps gRPC's UNAVAILABLE in its own MilvusException (code 2)
    assert type(caught.value).__name__ == "MilvusException"
    assert is_transient(caught.value)


def test_a_request_milvus_refuses_is_not_transient():
    from pymilvus.exceptions import MilvusException

    assert not is_transient(MilvusException(code=1100, message="collection name must be a string"))
