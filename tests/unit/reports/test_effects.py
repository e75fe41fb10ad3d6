"""The experiment page's parameter effects: a GAM's partial dependence when enough
evaluations succeeded, per-value means otherwise."""

import itertools

import pytest

from core.reports.pages.effects import gam_effects
from core.reports.pages.views import _value_order, experiment_view


def _trials(n_repeats=2):
    # additive by construction: +0.2 for chunk_size 256, +0.1 for 5 chunks, on a balanced design
    rows = []
    for _, (size, k) in itertools.product(range(n_repeats), itertools.product((128, 256), (3, 5))):
        rows.append({"score": 0.5 + 0.2 * (size == 256) + 0.1 * (k == 5),
                     "parameters": {"chunk_size": size, "number_of_chunks": k}})
    return rows


def test_partial_dependence_recovers_the_additive_effects():
    effects = gam_effects(_trials(), ["chunk_size", "number_of_chunks"], _value_order)
    size = {p["value"]: p for p in effects["chunk_size"]}
    k = {p["value"]: p for p in effects["number_of_chunks"]}
    size_span = size["256"]["effect"] - size["128"]["effect"]
    k_span = k["5"]["effect"] - k["3"]["effect"]
    # the penalty shrinks both factors alike on a balanced design: the spans keep the true 2:1
    # ratio (0.2 against 0.1, by construction) and stay below the true values
    assert size_span / k_span == pytest.approx(2.0, rel=1e-3)
    assert 0.15 < size_span <= 0.2
    for p in effects["chunk_size"] + effects["number_of_chunks"]:
        assert p["low"] < p["effect"] < p["high"]
    assert [p["value"] for p in effects["chunk_size"]] == ["128", "256"]


def test_too_few_evaluations_fall_back_to_means():
    assert gam_effects(_trials()[:4], ["chunk_size", "number_of_chunks"], _value_order) is None
    board = [dict(t, trial=i, rank=i + 1, status="complete", key=str(i)) for i, t in enumerate(_trials()[:4])]
    view = experiment_view({"objective": "mrr", "leaderboard": board})
    assert view["effects_model"] == "means"
    board = [dict(t, trial=i, rank=i + 1, status="complete", key=str(i)) for i, t in enumerate(_trials())]
    assert experiment_view({"objective": "mrr", "leaderboard": board})["effects_model"] == "gam"
