"""Fixtures for RAG tests: the local OpenAI-compatible test server."""

from __future__ import annotations

import pytest

from tests.support.openai_app import OpenAITestApp


@pytest.fixture(scope="module")
def server():
    with OpenAITestApp() as app:
        yield app


@pytest.fixture()
def app(server):
    """The module's test server with an empty script and request log."""
    server.requests.clear()
    server._queue.clear()
    server.responder = None
    yield server
    server._queue.clear()
    server.responder = None
