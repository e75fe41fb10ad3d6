"""The optimizer benchmark's pure parts: the goal, question subsets and table files."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from core.evaluation.single import Corpus

ROOT = Path(__file__).resolve().parents[3]
SQUAD_GOLDEN = ROOT / "examples" / "data" / "squad-mini" / "golden.jsonl"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_optimizer", ROOT / "bench" / "optimizer.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    "medians, expected",
    [
        # hand computed: 7 / 14 = 0.5 and 7 / 14 = 0.5, both within the limits
        ((7, 14, 14), (0.5, 0.5, True)),
        # 13 / 14 > 0.5
        ((13, 14, 14), (13 / 14, 13 / 14, False)),
        # 6 / 14 <= 0.5 but 6 / 5 > 1
        ((6, 14, 5), (6 / 14, 1.2, False)),
        # GAM never reached the target: infinite ratios, not met
        ((None, 14, 14), (None, None, False)),
        # random never reached it: GAM / random counts as 0, GAM / TPE = 0.5
        ((5, None, 10), (None, 0.5, True)),
    ],
)
def test_goal(bench, medians, expected):
    gam_random, gam_tpe, met = bench.goal(*medians)
    assert (gam_random, gam_tpe, met) == pytest.approx(expected)


def test_a_question_subset_has_its_own_sha256(bench):
    whole = bench.load_golden(SQUAD_GOLDEN, None)
    five = bench.load_golden(SQUAD_GOLDEN, 5)
    six = bench.load_golden(SQUAD_GOLDEN, 6)
    assert [q.id for q in five.questions] == [q.id for q in whole.questions[:5]]
    assert len({whole.sha256, five.sha256, six.sha256}) == 3
    assert bench.load_golden(SQUAD_GOLDEN, 10_000).sha256 == whole.sha256


def test_table_file_depends_on_metric_and_questions(bench, tmp_path):
    corpus = Corpus(str(tmp_path), [], fingerprint="f" * 64)
    space = bench.bench_space()
    assert space.n_valid == 84  # the count in the benchmark's docstring (and SearchSpace's example)
    five = bench.load_golden(SQUAD_GOLDEN, 5)
    whole = bench.load_golden(SQUAD_GOLDEN, None)
    paths = {
        bench.table_path(tmp_path, corpus, whole, space, "mrr"),
        bench.table_path(tmp_path, corpus, whole, space, "recall@5"),
        bench.table_path(tmp_path, corpus, five, space, "mrr"),
    }
    assert len(paths) == 3
    assert bench.table_path(tmp_path, corpus, whole, space, "mrr") == bench.table_path(
        tmp_path, corpus, whole, space, "mrr")


def test_held_space_keeps_the_longest_ranking_for_a_retrieval_metric_only(bench):
    """The 144-configuration space of the benchmark has top_k 3, 5, 8 and 10: held for mrr and
    found@5 it keeps 10 only, a quarter of the configurations (36); an answer metric keeps all."""
    from bench.grid import wide_space

    space = wide_space()
    assert space.n_valid == 144
    for metric in ("mrr", "found@5", "ndcg@10"):
        held = bench.held_space(space, metric)
        assert held["number_of_chunks"].values == (10,)
        assert held.n_valid == 36
        assert {c.key for c in held.valid_configurations()} <= {c.key for c in space.valid_configurations()}
    assert bench.held_space(space, "unitxt.answer_correctness") is space


def test_every_strategy_is_named_and_the_held_ones_say_so(bench):
    """``screen`` is what ragtune optimize runs (on the held space); ``screen-all-chunks`` the
    same loop on the whole space; ``screen-no-start`` ``screen`` without its first configuration."""
    from core.optimizers import SCREEN

    names = bench.strategies({"min_questions": 16, "eta": 3})
    assert {"random", "screen", "screen-all-chunks", "screen-no-start", "random-held", "gam-held"} <= set(names)
    assert [n for n, how in names.items() if how.get("held")] == ["random-held", "gam-held", "screen-no-start",
                                                                   "screen"]
    assert names["screen"]["promotion"] == names["screen-all-chunks"]["promotion"] == SCREEN["promotion"]
    assert names["screen"]["sampler"] is names["screen-all-chunks"]["sampler"]
    assert names["screen"]["start"] == names["screen-all-chunks"]["start"] == SCREEN["start"] == "reranked"
    assert names["screen-no-start"]["start"] is None and names["default+random"]["start"] == "default"
