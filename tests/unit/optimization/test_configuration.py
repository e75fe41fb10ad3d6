"""Configuration: frozen, JSON-clean, stable key."""

from __future__ import annotations

import hashlib
import json
import pickle

import numpy as np
import pytest

from core.errors import ConfigError
from core.optimization import Configuration


def test_key_is_sha256_of_canonical_json():
    c = Configuration({"search_mode": "vector", "chunk_size": 256, "ranker_k": None, "alpha": 0.5})
    # reference: the canonical form written out by hand (keys sorted, no spaces)
    canonical = '{"alpha":0.5,"chunk_size":256,"ranker_k":null,"search_mode":"vector"}'
    assert c.canonical_json() == canonical
    assert c.key == hashlib.sha256(canonical.encode()).hexdigest()[:16]


def test_key_ignores_order_and_equality_follows_key():
    a = Configuration({"a": 1, "b": "x"})
    b = Configuration({"b": "x", "a": 1})
    assert a == b and hash(a) == hash(b) and a.key == b.key
    assert a == {"a": 1, "b": "x"}
    assert a != Configuration({"a": 2, "b": "x"})
    assert list(a) == ["a", "b"] and list(b) == ["b", "a"]  # display order kept


def test_json_round_trip_and_pickle():
    c = Configuration({"chunk_size": 128, "alpha": 1.0, "on": True, "none": None, "text": "{document}\n"})
    again = Configuration.from_dict(json.loads(json.dumps(c.to_dict())))
    assert again == c and again.key == c.key
    assert pickle.loads(pickle.dumps(c)) == c
    d = c.to_dict()
    d["chunk_size"] = 1
    assert c["chunk_size"] == 128  # to_dict is a copy


def test_frozen():
    c = Configuration({"a": 1})
    with pytest.raises(AttributeError):
        c.x = 1  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        c["a"] = 2  # type: ignore[index]


def test_numpy_scalars_become_python_values():
    c = Configuration({"a": np.int64(3), "b": np.float64(0.5), "c": np.bool_(True)})
    assert type(c["a"]) is int and type(c["b"]) is float and type(c["c"]) is bool
    assert c == Configuration({"a": 3, "b": 0.5, "c": True})


@pytest.mark.parametrize("bad", [{"a": float("nan")}, {"a": float("inf")}, {"a": [1]}, {"a": object()}, {"": 1}, {1: 2}])
def test_rejects_values_json_cannot_hold(bad):
    with pytest.raises(ConfigError):
        Configuration(bad)
