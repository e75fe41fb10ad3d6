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
