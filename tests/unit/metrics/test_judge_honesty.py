"""The judge's honesty: calls lost to rate limits, timeouts and unparseable replies counted per
metric and kept out of the mean; ``--judge-repeat``; agreement with people's grades (weighted
kappa, Spearman) and the prediction-powered interval. The judge is the scripted
OpenAI-compatible server over real HTTP (``tests/support/openai_app.py``); expected values are
computed by hand in the comments (kappa also against scikit-learn, Spearman against scipy)."""

from __future__ import annotations

import math
import re

import pytest

from core.golden import GoldenQuestion
from core.metrics.agreement import ppi_mean_interval, weighted_kappa
from core.metrics.answers import answer_report
from core.models import CachedChatModel, EmbeddingCache, OpenAIChatModel
from core.rag import AnswerRecord
from tests.support.openai_app import ChatReply, OpenAITestApp, last_user_text


def question_of(body):
    return re.search(r"\[QUESTION\]\n(.*)\n", last_user_text(body)).group(1)


def judge_model(app, **kw):
    return OpenAIChatModel("judge", base_url=app.base_url, max_attempts=kw.pop("max_attempts", 1),
                           retry_wait_s=0.01, **kw)


def records(questions):
    return [AnswerRecord(q.id, q.question, f"answer to {q.question}") for q in questions]


def test_lost_judge_calls_are_counted_by_why_and_left_out_of_the_mean():
    qs = [GoldenQuestion(f"q{i}", f"question {i}?", (), reference="r") for i in range(5)]
    script = {"question 0?": ChatReply(status=429), "question 1?": ChatReply("1", delay_s=1.0),
              "question 2?": "maybe good", "question 3?": "0.4", "question 4?": "0.8"}
    with OpenAITestApp(lambda body: script[question_of(body)]) as app:
        report = answer_report(qs, records(qs), judge=judge_model(app, timeout_s=0.3),
                               metrics=["judge.correctness"]).to_dict()
    m = report["metrics"][0]
    assert m["lost"] == {"rate_limited": 1, "timed_out": 1, "unparseable": 1}
    assert m["n_scored"] == 2 and m["n_failed"] == 2 and m["n_invalid"] == 1
    assert m["scores"]["mean"] == pytest.approx((0.4 + 0.8) / 2)  # never averaged in as 0
    lost = {q["question_id"]: q["metrics"][0].get("lost") for q in report["questions"]}
    assert lost == {"q0": "rate_limited", "q1": "timed_out", "q2": "unparseable", "q3": None, "q4": None}


def test_judge_repeat_reports_the_spread_and_changed_verdicts(tmp_path):
    qs = [GoldenQuestion("a", "first?", (), reference="r"), GoldenQuestion("b", "second?", (), reference="r")]
    seen: dict[str, int] = {}

    def judge(body):
        q = question_of(body)
        seen[q] = seen.get(q, 0) + 1
        return {"first?": ["0.4", "0.6"], "second?": ["1", "1"]}[q][(seen[q] - 1) % 2]

    cache = EmbeddingCache(tmp_path / "c.sqlite")
    with OpenAITestApp(judge) as app:
        model = CachedChatModel(judge_model(app), cache)
        report = answer_report(qs, records(qs), judge=model, metrics=["judge.correctness"], judge_repeat=2,
                               judge_workers=1).to_dict()
        n_calls = len(app.chat_requests)
        again = answer_report(qs, records(qs), judge=model, metrics=["judge.correctness"], judge_repeat=2,
                               judge_workers=1).to_dict()
        assert len(app.chat_requests) == n_calls == 4  # two calls per answer, none on the rerun
    m = report["metrics"][0]
    rep = m["repeats"]
    # sd of (0.4, 0.6) is 0.1414..., of (1, 1) is 0: their mean 0.0707...
    assert rep["mean_sd"] == pytest.approx(math.sqrt(0.02) / 2)
    assert rep["max_range"] == pytest.approx(0.2)
    assert (rep["n_items"], rep["n_changed"], rep["n_verdict_changed"]) == (2, 1, 1)
    assert rep["mean_by_repeat"] == pytest.approx([0.7, 0.8])
    scores = {q["question_id"]: q["metrics"][0] for q in report["questions"]}
    assert scores["a"]["score"] == pytest.approx(0.5) and scores["a"]["samples"] == pytest.approx([0.4, 0.6])
    assert m["scores"]["mean"] == pytest.approx(0.75)
    assert again["metrics"][0]["repeats"] == rep
    assert report["evaluators"]["judge"]["repeats"] == 2


#: (person's grade, judge's score) on six graded answers, and the judge alone on four more: the
#: judge grades two answers half a point above the people (a known disagreement).
GRADED = [(0, 0), (0, 0.5), (0.5, 0.5), (0.5, 1), (1, 1), (1, 1)]
UNGRADED = [1, 0.5, 0, 1]


def test_weighted_kappa_and_ppi_by_hand():
    human, judge = [h for h, _ in GRADED], [j for _, j in GRADED]
    # weights (ci - cj)^2 over categories 0, .5, 1: observed disagreement sum(w*O) = 2 * .25 / 6 = 1/12;
    # marginals people 1/3 each, judge 1/6, 2/6, 3/6: sum(w*E) = 1/3; kappa = 1 - (1/12) / (1/3) = 0.75
    assert weighted_kappa(human, judge) == pytest.approx(0.75)
    sklearn = pytest.importorskip("sklearn.metrics")
    assert weighted_kappa(human, judge) == pytest.approx(
        sklearn.cohen_kappa_score([int(2 * h) for h in human], [int(2 * j) for j in judge], weights="quadratic"))
    # PPI: mean(Yhat_u) = 0.625, rectifier mean(Y - Yhat) = -1/6 -> 0.458333;
    # var(Yhat_u) = 0.6875 / 3, var(rect) = (1/3) / 5; se = sqrt(0.229167 / 4 + 0.0666667 / 6) = 0.261539
    interval = ppi_mean_interval(human, judge, UNGRADED)
    se = math.sqrt((0.6875 / 3) / 4 + ((1 / 3) / 5) / 6)
    assert interval.mean == pytest.approx(0.625 - 1 / 6)
    assert interval.rectifier == pytest.approx(-1 / 6)
    assert interval.ci_high == pytest.approx(0.625 - 1 / 6 + 1.959963985 * se)
    assert interval.ci_low == 0.0  # 0.4583 - 0.5126 < 0, clipped to the scale
    assert (interval.n_labeled, interval.n_unlabeled, interval.method) == (6, 4, "PPI")
    # every row graded: the classical interval of the people's mean; sample variance of
    # 0, 0, .5, .5, 1, 1 is (4 * 0.25) / 5 = 0.2
    classical = ppi_mean_interval(human, judge, [])
    assert classical.method == "classical" and classical.mean == pytest.approx(0.5)
    assert classical.ci_high == pytest.approx(0.5 + 1.959963985 * math.sqrt(0.2 / 6))


def test_agreement_with_people_through_the_judge():
    scipy_stats = pytest.importorskip("scipy.stats")
    qs, script = [], {}
    for i, (grade, judged) in enumerate(GRADED):
        qs.append(GoldenQuestion(f"g{i}", f"graded {i}?", (), reference="r", grades={"judge.correctness": grade}))
        script[f"graded {i}?"] = str(judged)
    for i, judged in enumerate(UNGRADED):
        qs.append(GoldenQuestion(f"u{i}", f"ungraded {i}?", (), reference="r"))
        script[f"ungraded {i}?"] = str(judged)
    with OpenAITestApp(lambda body: script[question_of(body)]) as app:
        report = answer_report(qs, records(qs), judge=judge_model(app), metrics=["judge.correctness"]).to_dict()
    ag = report["metrics"][0]["agreement"]
    assert ag["n"] == 6
    assert ag["kappa"] == pytest.approx(0.75)
    assert ag["spearman"] == pytest.approx(scipy_stats.spearmanr([h for h, _ in GRADED], [j for _, j in GRADED]).statistic)
    assert ag["mean_difference"] == pytest.approx(1 / 6)  # the judge is a sixth of the scale above people
    assert ag["ppi"]["mean"] == pytest.approx(0.625 - 1 / 6)
    assert ag["ppi"]["n_unlabeled"] == 4


def test_grades_on_a_whole_number_scale_use_its_categories():
    # answer relevance, 1 to 5: categories 1..5 even when some are unused; people 1,2,3 vs judge 2,2,3
    # weights (i-j)^2/16; O = diag-ish: (1,2),(2,2),(3,3): sum(w*O) = (1/16)/3 = 1/48;
    # marginals people (1/3,1/3,1/3,0,0), judge (0,2/3,1/3,0,0): sum(w*E) = sum_ij w_ij p_i q_j
    p, q = [1 / 3, 1 / 3, 1 / 3, 0, 0], [0, 2 / 3, 1 / 3, 0, 0]
    expected_chance = sum((i - j) ** 2 / 16 * p[i] * q[j] for i in range(5) for j in range(5))
    assert weighted_kappa([1, 2, 3], [2, 2, 3], categories=[1, 2, 3, 4, 5]) == pytest.approx(
        1 - (1 / 48) / expected_chance)
