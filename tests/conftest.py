"""Shared pytest fixtures: paths to the bundled example data."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "data"


@pytest.fixture(scope="session")
def squad_dir() -> Path:
    """The bundled squad-mini dataset folder (docs/ and golden.jsonl)."""
    return EXAMPLES / "squad-mini"


@pytest.fixture(scope="session")
def northwind_dir() -> Path:
    """The bundled northwind-benefits dataset folder (docs/ and golden files)."""
    return EXAMPLES / "northwind-benefits"


@pytest.fixture(autouse=True)
def _stop_milvus_lite_servers_a_test_started():
    """Stop the Milvus Lite 2 servers (one native process per database) a test started, once
    it ends: pymilvus keeps each until the interpreter exits, so a whole suite's databases
    would otherwise all stay running. Servers started before the test (by fixtures of a wider
    scope) keep running."""
    import sys

    def running() -> set[str]:
        manager = sys.modules.get("milvus_lite.server_manager")
        return set(getattr(getattr(manager, "server_manager_instance", None), "_servers", {}))

    before = running()
    yield
    manager = sys.modules.get("milvus_lite.server_manager")
    if manager is not None:
        for path in running() - before:
            manager.server_manager_instance.release_server(path)
