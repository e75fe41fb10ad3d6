"""A report store the Functions app reads, for the tests of its HTTP routes and pages: a local
folder or a fresh Azurite Blob container, with the settings pointing at it."""

from __future__ import annotations

from typing import Any


def configured_report_store(kind: str, request: Any, clean_env: Any, tmp_path: Any) -> Any:
    """An empty report store of ``kind`` (``"local"``: a folder under ``tmp_path``; ``"azurite"``:
    a new container of Azurite's Blob storage) with ``RAGTUNE_REPORTS`` (and, for Azurite,
    ``RAGTUNE_STORAGE_CONNECTION``) set on ``clean_env`` to reach it.

    Args:
        kind: ``"local"`` or ``"azurite"``.
        request: the pytest request (for the ``azurite``, ``blob_endpoint`` and
            ``new_container`` fixtures of ``tests/functions/conftest.py``).
        clean_env: the ``clean_env`` fixture (a monkeypatch).
        tmp_path: the test's temporary folder.
    """
    from core.reports import report_store

    if kind == "local":
        address = str(tmp_path / "reports")
        clean_env.setenv("RAGTUNE_REPORTS", address)
        return report_store(address)
    azurite = request.getfixturevalue("azurite")
    address = f"{request.getfixturevalue('blob_endpoint')}/{request.getfixturevalue('new_container')()}/r"
    clean_env.setenv("RAGTUNE_REPORTS", address)
    clean_env.setenv("RAGTUNE_STORAGE_CONNECTION", azurite)
    return report_store(address, connection_string=azurite)
