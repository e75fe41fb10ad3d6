"""Fixtures for calling the Functions directly: the app's functions, Azurite, report stores."""

from __future__ import annotations

import os
import uuid

import pytest

@pytest.fixture(scope="session")
def app_functions() -> dict:
    """The app's functions by name, as the host indexes them (``get_functions()`` runs once
    per session: a second call raises duplicate-name errors)."""
    import function_app

    return {f.get_function_name(): f for f in function_app.app.get_functions()}


@pytest.fixture(scope="session")
def azurite() -> str:
    """Azurite's connection string (Blob, Queue, Table); fails when Azurite is not started."""
    value = os.environ.get("RAGTUNE_TEST_AZURITE_CONNECTION_STRING")
    if not value:
        pytest.fail("RAGTUNE_TEST_AZURITE_CONNECTION_STRING is not set: start Azurite with "
                    "'bash scripts/services/azurite.sh start' and "
                    "'eval \"$(bash scripts/services/azurite.sh env)\"' (scripts/test.sh does both)")
    return value


@pytest.fixture(scope="session")
def blob_endpoint(azurite) -> str:
    """Azurite's ``BlobEndpoint`` (``http://127.0.0.1:10000/devstoreaccount1``)."""
    for part in azurite.split(";"):
        name, _, value = part.partition("=")
        if name.strip().lower() == "blobendpoint":
            return value.strip().rstrip("/")
    pytest.fail("the Azurite connection string has no BlobEndpoint")


@pytest.fixture
def new_container():
    """A factory of fresh, valid Blob container names."""
    return lambda: f"ragtune-{uuid.uuid4().hex[:20]}"


@pytest.fixture
def clean_env(monkeypatch):
    """Remove every setting the functions read, so each test sets its own."""
    for name in list(os.environ):
        if name.startswith("RAGTUNE_") and not name.startswith("RAGTUNE_TEST_") or name == "AzureWebJobsStorage":
            monkeypatch.delenv(name, raising=False)
    return monkeypatch
