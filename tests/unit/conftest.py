"""Fixtures shared by the unit tests: the local OpenAI-compatible test server."""

from __future__ import annotations

import pytest

from tests.support.openai_app import OpenAITestApp


@pytest.fixture(scope="module")
def server():
    """One OpenAI-compatible test server per test module."""
    with OpenAITestApp() as app:
        yield app


@pytest.fixture()
def app(server):
    """The module's test server with an empty script and request log, reset after the test."""
    server.reset()
    yield server
    server.reset()
