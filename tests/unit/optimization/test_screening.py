"""Screening with rungs: a promotion handed out only while it is at least as good as the next
rung's best on the questions both saw, a search started from the product's default
configuration, and that default's choice in a space.

Schedules are worked by hand from the rule in ``core.optimization.halving`` (rung sizes
``(2, 6)`` for 6 questions with ``min_questions=2, eta=3``); the sign test's p-value for one
side winning both of 2 discordant questions is 2 / 4 = 0.5 (promoted, a tie).
"""

from __future__ import annotations

import pytest

from core.errors import ConfigError
from core.optimization import RandomSampler, Study
from core.optimization.defaults import default_configuration, product_defaults
from core.optimization.fidelity import Rungs
from core.optimization.halving import Halving

IDS = [f"q{i}" for i in range(6)]


def _tell(halving, study, item, value):
    scores = {q: value(q) if callable(value) else value for q in item.questions}
    return halving.tell(study, item.configuration, item.rung, scores, {"score": sum(scores.values()) / len(scores)})


def test_a_promotion_below_the_incumbent_waits_while_new_ones_are_screened(tiny):
    study = Study(tiny, RandomSampler(), objective_metric="score", seed=1, max_evals=3)
    halving = Halving(Rungs(IDS, 0, min_questions=2, eta=3), promotion="incumbent")
    first = halving.ask(study, 1)[0]
    assert _tell(halving, study, first, 0.5).verdict == "promote"
    top = halving.ask(study, 1)[0]  # nothing has reached rung 1: the promotion goes at once
    assert (top.configuration.key, top.rung) == (first.configuration.key, 1)
    assert _tell(halving, study, top, 0.5).verdict == "complete"
    weak = halving.ask(study, 1)[0]
    assert weak.rung == 0
    # 0.0 on both rung-0 questions, the incumbent 0.5: promoted by the sign test (p = 0.5), but
    # below the incumbent's 0.5 on those questions, so it waits and a new configuration is screened
    assert _tell(halving, study, weak, 0.0).verdict == "promote"
    assert halving.promotions() == [weak.configuration.key] and halving.ready([weak.configuration.key]) == []
    from core.experiment.report import leaderboard

    rows = {r["key"]: r for r in leaderboard(study, {}, halving, len(IDS))}
    assert rows[weak.configuration.key]["fidelity"]["waiting"] is True
    assert rows[first.configuration.key]["fidelity"]["waiting"] is False
    assert not rows[weak.configuration.key]["fully_evaluated"]
    strong = halving.ask(study, 1)[0]
    assert strong.rung == 0 and strong.configuration.key != weak.configuration.key
    _tell(halving, study, strong, 0.5)  # equal to the incumbent on the rung's questions: handed out
    nxt = halving.ask(study, 1)[0]
    assert (nxt.configuration.key, nxt.rung) == (strong.configuration.key, 1)
    _tell(halving, study, nxt, 0.25)
    # the budget (3) is spent: the waiting one is handed out last, it is pending, never stopped
    assert halving.stop_reason(study) is None
    last = halving.ask(study, 1)[0]
    assert (last.configuration.key, last.rung) == (weak.configuration.key, 1)
    _tell(halving, study, last, 0.0)
    assert halving.stop_reason(study) in ("budget", "separated")


def test_the_tied_rule_promotes_at_once(tiny):
    study = Study(tiny, RandomSampler(), objective_metric="score", seed=1)
    halving = Halving(Rungs(IDS, 0, min_questions=2, eta=3))
    a, b = halving.ask(study, 2)
    _tell(halving, study, a, 1.0)
    _tell(halving, study, b, 0.0)
    assert halving.ready(halving.promotions()) == halving.promotions()
    assert halving.ask(study, 1)[0].rung == 1


def test_the_rule_is_stored_and_checked(tiny):
    rungs = Rungs(IDS, 0, min_questions=2, eta=3)
    halving = Halving(rungs, promotion="incumbent")
    assert Halving.from_dict(rungs, halving.to_dict()).promotion == "incumbent"
    assert Halving.from_dict(rungs, {"rungs": {"sizes": [2, 6]}}).promotion == "tied"  # stored before the rule
    with pytest.raises(ConfigError, match="promotion must be one of"):
        Halving(rungs, promotion="eager")


def test_an_enqueued_configuration_is_evaluated_first(tiny):
    study = Study(tiny, RandomSampler(), objective_metric="score", seed=1, max_evals=2)
    first = tiny.valid_configurations()[5]
    study.enqueue(first)
    assert [t.configuration.key for t in study.pending_trials] == [first.key] and study.n_remaining == 1
    halving = Halving(Rungs(IDS, 0, min_questions=2, eta=3))
    item = halving.ask(study, 1)[0]
    assert item.configuration.key == first.key and item.rung == 0
    with pytest.raises(ConfigError, match="already a trial"):
        study.enqueue(first)


def test_the_default_configuration_is_the_product_default_where_the_space_allows(tiny, small):
    wanted = product_defaults()
    assert (wanted["chunking_method"], wanted["chunk_size"], wanted["chunk_overlap"]) == ("recursive", 256, 32)
    assert (wanted["number_of_chunks"], wanted["search_mode"], wanted["reranker"]) == (5, "vector", "none")
    # small: 256 tokens, overlap 32 and 5 chunks are all in the space, and valid
    config = default_configuration(small)
    assert (config["chunking_method"], config["chunk_size"], config["chunk_overlap"]) == ("recursive", 256, 32)
    assert (config["number_of_chunks"], config["search_mode"], config["ranker_strategy"]) == (5, "vector", None)
    # tiny: overlap 32 is not in the space (the nearer of 0 and 64: 0), 5 chunks neither (its
    # only value, 3); 256 tokens break the context rule of its 200-token model, so the valid
    # configuration agreeing on the most parameters is taken: the same at 128 tokens
    config = default_configuration(tiny)
    assert tiny.contains(config)
    assert (config["chunking_method"], config["chunk_size"], config["chunk_overlap"]) == ("recursive", 128, 0)
    assert (config["number_of_chunks"], config["search_mode"]) == (3, "vector")


def test_the_reranked_start_is_the_default_with_the_first_reranker_at_the_deepest_depth(tiny):
    """``reranked_configuration``: the first reranker other than none (of two), the largest
    retrieval depth (40 of 10, 20 and 40), everything else as ``default_configuration`` (tiny:
    128 tokens, overlap 0, 3 chunks); None without a reranker; ``start_configuration`` maps the
    names of STARTS and refuses others."""
    from core.optimization.defaults import STARTS, reranked_configuration, start_configuration

    assert reranked_configuration(tiny) is None and start_configuration(tiny, "reranked") is None
    assert start_configuration(tiny, None) is None
    assert start_configuration(tiny, "default") == default_configuration(tiny)
    space = tiny.with_overrides({"reranker": ["none", "local:ms-marco-MiniLM-L-12-v2", "cohere:rerank-v3.5"],
                                 "retrieval_depth": [10, 40, 20]})
    config = reranked_configuration(space)
    assert space.contains(config)
    assert (config["reranker"], config["retrieval_depth"]) == ("local:ms-marco-MiniLM-L-12-v2", 40)
    plain = default_configuration(space)
    assert plain["reranker"] == "none"
    assert {k: v for k, v in config.items() if k not in ("reranker", "retrieval_depth")} == {
        k: v for k, v in plain.items() if k not in ("reranker", "retrieval_depth")}
    assert (config["chunk_size"], config["chunk_overlap"], config["number_of_chunks"]) == (128, 0, 3)
    assert start_configuration(space, "reranked") == config and STARTS == ("default", "reranked")
    with pytest.raises(ConfigError, match="start must be one of default, reranked or none, got 'best'"):
        start_configuration(space, "best")
