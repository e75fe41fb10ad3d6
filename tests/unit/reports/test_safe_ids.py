"""``is_safe_id``: what may name a run or an experiment in a key, a route and an instance id."""

from __future__ import annotations

import pytest

from core.reports.files import is_safe_id


@pytest.mark.parametrize("value", ["run-1", "20260101T000000Z-aaaaaa", "a.b_c", "x" * 200])
def test_safe(value):
    assert is_safe_id(value)


@pytest.mark.parametrize("value", ["run-1\n", "\nrun-1", "run 1", "a/b", "..", ".", "", "x" * 201, "é", None, 3,
                                   "run-1\r\n"])
def test_unsafe(value):
    assert not is_safe_id(value)
