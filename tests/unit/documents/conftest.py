"""Fixtures for the document loader tests: a tiny PDF writer and a mixed corpus folder."""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"  # nothing in these tests may download anything
os.environ["TRANSFORMERS_OFFLINE"] = "1"

from pathlib import Path  # noqa: E402
from typing import Callable  # noqa: E402

import pytest  # noqa: E402

from tests.support.pdf import Line, write_pdf  # noqa: E402


@pytest.fixture(scope="session")
def make_pdf() -> Callable[[list[list[Line]]], bytes]:
    """The :func:`write_pdf` helper."""
    return write_pdf


@pytest.fixture(scope="session")
def perks_pdf(northwind_dir: Path) -> Path:
    """The bundled 4-page PerksPlus.pdf."""
    return northwind_dir / "docs" / "PerksPlus.pdf"
