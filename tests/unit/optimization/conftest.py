"""Small search spaces shared by the optimization tests."""

from __future__ import annotations

import pytest

from core.optimization import SearchSpace, default_space


def tiny_space() -> SearchSpace:
    """8 valid configurations (counted by hand in test_space.py)."""
    return default_space({"m": 200}, ["f"]).with_overrides({
        "chunk_size": [128, 256],
        "chunk_overlap": [0, 64],
        "number_of_chunks": [3],
    })


def small_space() -> SearchSpace:
    """The default space of the offline embedding model (256 tokens) and two chat models: 168."""
    return default_space({"all-MiniLM-L6-v2": 256}, ["fm-a", "fm-b"])


@pytest.fixture
def tiny() -> SearchSpace:
    return tiny_space()


@pytest.fixture
def small() -> SearchSpace:
    return small_space()
