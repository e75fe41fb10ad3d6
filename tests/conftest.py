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
def _stop_milvus_lite_servers_of_the_tests_folder(request):
    """Stop the Milvus Lite 2 servers (one native process per database) of the databases in
    the test's own ``tmp_path`` once it ends: pymilvus keeps each until the interpreter exits,
    so a whole suite's databases would otherwise all stay running. Databases elsewhere (those
    of fixtures shared by several tests) keep their servers."""
    import sys

    folder = Path(request.getfixturevalue("tmp_path")).resolve() if "tmp_path" in request.fixturenames else None
    yield
    manager = sys.modules.get("milvus_lite.server_manager")
    if manager is None or folder is None:
        return
    for path in list(getattr(manager.server_manager_instance, "_servers", {})):
        if Path(path).is_relative_to(folder):
            manager.server_manager_instance.release_server(path)
