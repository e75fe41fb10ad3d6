"""The test services' addresses, as ``scripts/test.sh`` exports them."""

from __future__ import annotations

import os

import pytest


def service(var: str, script: str) -> str:
    """Return the value of ``var``; fail the test (never skip) with how to start ``script``."""
    value = os.environ.get(var)
    if not value:
        pytest.fail(f"{var} is not set: start the service with 'bash scripts/services/{script} start' "
                    f"and 'eval \"$(bash scripts/services/{script} env)\"' (scripts/test.sh does both)")
    return value
