"""Answer metrics: unitxt's lexical RAG metrics against hand-computed values, the judge's
strict reply parsing, and judge metrics through the real ``openai`` client against the local
test server."""

from __future__ import annotations

import json

import pytest

from core.errors import ConfigError
from core.golden import GoldenQuestion, Target
from core.metrics.answers import (
    JUDGE_METRICS,
    AnswerItem,
    MetricScores,
    QuestionScore,
    answer_report,
    bootstrap_interval,
    judge_messages,
    parse_score,
    summarize,
)
from core.models import OpenAIChatModel
from core.rag import AnswerRecord, Context
from tests.support.openai_app import ChatReply, OpenAITestApp, last_user_text

# ----------------------------------------------------------------------------- reply parsing


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("0.8", 0.8), (".5", 0.5), ("Score: 1.0", 1.0), ("1", 1.0), ("0", 0.0), ("1.", 1.0),
        ("score = 0.25", 0.25), ("**Score:** 0.7", 0.7), ("0.6.", 0.6), ("  0.3\n", 0.3),
        ("The answer matches.\n\nScore: 0.9", 0.9), ("1/1", 1.0), ("Final score is 0.4", 0.4),
    ],
)
def test_valid_zero_to_one_replies(reply, expected):
    parsed = parse_score(reply, 0, 1)
    assert parsed.valid and parsed.value == pytest.approx(expected) and parsed.reason is None


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("", "empty reply"), (None, "empty reply"), ("  \n ", "empty reply"),
        ("The answer is good.", "no score"), ("0.8 or 0.9", "no score"), ("80%", "no score"),
        ("Score: 0.8 because it is right", "no score"), ("Score: 0.8\nThat is my verdict.", "no score"),
        ("1.5", "outside the scale 0 to 1"), ("-0.1", "outside the scale"), ("3/5", "not on the scale"),
    ],
)
def test_invalid_zero_to_one_replies(reply, reason):
    parsed = parse_score(reply, 0, 1)
    assert not parsed.valid and parsed.value is None and reason in parsed.reason


@pytest.mark.parametrize(("reply", "expected"), [("4", 4), ("4.0", 4), ("Rating: 5", 5), ("3/5", 3), ("2 out of 5", 2), ("1", 1)])
def test_valid_one_to_five_replies(reply, expected):
    assert parse_score(reply, 1, 5, integer=True).value == expected


@pytest.mark.parametrize(
    ("reply", "reason"),
    [("6", "outside the scale 1 to 5"), ("0", "outside"), ("3.5", "not a whole number"), ("4/10", "not on the scale"),
     ("four", "no score")],
)
def test_invalid_one_to_five_replies(reply, reason):
    parsed = parse_score(reply, 1, 5, integer=True)
    assert not parsed.valid and reason in parsed.reason


def test_answer_relevance_is_normalised():
    metric = JUDGE_METRICS["answer_relevance"]
    assert [metric.normalise(s) for s in (1, 2, 3, 4, 5)] == [0.0, 0.25, 0.5, 0.75, 1.0]


# ----------------------------------------------------------------------------- fixtures

CTX = (Context("Hamlet is a tragedy by William Shakespeare.", "plays.txt"), Context("The play was written around 1600.", "dates.txt"))

QUESTIONS = [
    GoldenQuestion("q1", "Who wrote Hamlet?", (Target("plays.txt"),), reference="William Shakespeare wrote Hamlet"),
    GoldenQuestion("q2", "When was Hamlet written?", (Target("dates.txt"),), reference="around 1600"),
    GoldenQuestion("q3", "Who painted the Mona Lisa?", (Target("art.txt"),), reference="Leonardo da Vinci"),
    GoldenQuestion("q4", "What failed?", (Target("plays.txt"),), reference="nothing"),
    GoldenQuestion("q5", "Say hi", (), reference=None, history=(("user", "Hello?"), ("assistant", "Hello."))),
]
ANSWERS = [
    AnswerRecord("q1", "Who wrote Hamlet?", "Shakespeare wrote Hamlet in 1600.", CTX),
    AnswerRecord("q2", "When was Hamlet written?", "It was written around 1600.", CTX),
    AnswerRecord("q3", "Who painted the Mona Lisa?", "Leonardo da Vinci painted it.", ()),  # nothing retrieved
    AnswerRecord("q4", "What failed?", None, error="GenerationError: boom"),
    AnswerRecord("q5", "Say hi", "hi", (Context("hi there", None),)),
]


@pytest.fixture(scope="module")
def unitxt_report():
    return answer_report(QUESTIONS, ANSWERS)


def scores_of(report, name):
    return {r["question_id"]: next(m for m in r["metrics"] if m["name"] == name) for r in report.questions}


# ----------------------------------------------------------------------------- unitxt, by hand
#
# Tokens follow SQuAD's normalisation (lower-case, punctuation and a/an/the removed, split on
# spaces); overlap counts the multiset intersection.
#
# faithfulness = max over passages of |answer ∩ passage| / |answer|:
#   q1 answer [shakespeare wrote hamlet in 1600] (5);
#      passage 1 [hamlet is tragedy by william shakespeare]: {hamlet, shakespeare} -> 2/5 = 0.4
#      passage 2 [play was written around 1600]: {1600} -> 1/5 = 0.2           => 0.4
#   q2 answer [it was written around 1600] (5); passage 1: 0; passage 2: {was, written,
#      around, 1600} -> 4/5                                                     => 0.8
#   q3 no passage                                                               => 0.0
#   q4 failed (not scored); q5 answer [hi], passage [hi there]: 1/1             => 1.0
#   mean (0.4 + 0.8 + 0 + 1) / 4 = 0.55
# answer_correctness = |answer ∩ reference| / |reference|:
#   q1 reference [william shakespeare wrote hamlet] (4): {shakespeare, wrote, hamlet} -> 0.75
#   q2 reference [around 1600]: both -> 1.0 ; q3 [leonardo da vinci]: all three -> 1.0
#   q4 failed; q5 has no reference (unscorable)          mean (0.75 + 1 + 1) / 3 = 0.916667
# context_correctness = 1 / rank of the first passage from an expected document:
#   q1 plays.txt at rank 1 -> 1.0 ; q2 dates.txt at rank 2 -> 0.5 ; q3 nothing retrieved -> 0.0
#   q4 failed; q5 names no document (unscorable)          mean (1 + 0.5 + 0) / 3 = 0.5


def test_unitxt_per_question_scores_by_hand(unitxt_report):
    faith = scores_of(unitxt_report, "unitxt.faithfulness")
    assert {q: s["score"] for q, s in faith.items()} == pytest.approx(
        {"q1": 0.4, "q2": 0.8, "q3": 0.0, "q4": None, "q5": 1.0}
    )
    correct = scores_of(unitxt_report, "unitxt.answer_correctness")
    assert {q: s["score"] for q, s in correct.items()} == pytest.approx(
        {"q1": 0.75, "q2": 1.0, "q3": 1.0, "q4": None, "q5": None}
    )
    context = scores_of(unitxt_report, "unitxt.context_correctness")
    assert {q: s["score"] for q, s in context.items()} == pytest.approx(
        {"q1": 1.0, "q2": 0.5, "q3": 0.0, "q4": None, "q5": None}
    )


def test_unitxt_means_and_counts_by_hand(unitxt_report):
    faith = unitxt_report.metric("unitxt.faithfulness")
    assert faith.mean == pytest.approx(0.55)
    assert (faith.n_scored, faith.n_failed, faith.n_invalid, faith.n_unscorable) == (4, 1, 0, 0)
    correct = unitxt_report.metric("unitxt.answer_correctness")
    assert correct.mean == pytest.approx(2.75 / 3)
    assert (correct.n_scored, correct.n_failed, correct.n_unscorable) == (3, 1, 1)
    context = unitxt_report.metric("unitxt.context_correctness")
    assert context.mean == pytest.approx(0.5)
    assert (context.n_scored, context.n_failed, context.n_unscorable) == (3, 1, 1)
    # overall: the mean of the three means
    assert unitxt_report.overall_score == pytest.approx((0.55 + 2.75 / 3 + 0.5) / 3)
    assert unitxt_report.overall_metrics == ["unitxt.faithfulness", "unitxt.answer_correctness", "unitxt.context_correctness"]


def test_unitxt_intervals_bracket_the_mean(unitxt_report):
    for result in unitxt_report.metrics:
        assert result.ci_method == "BCa bootstrap (1000 resamples, seed 0)"
        assert 0.0 <= result.ci_low <= result.mean <= result.ci_high <= 1.0


def test_empty_context_is_not_perfect(unitxt_report):
    assert scores_of(unitxt_report, "unitxt.faithfulness")["q3"]["score"] == 0.0
    assert scores_of(unitxt_report, "unitxt.context_correctness")["q3"]["score"] == 0.0


def test_failed_and_unscorable_questions_say_why(unitxt_report):
    failed = scores_of(unitxt_report, "unitxt.faithfulness")["q4"]
    assert failed["status"] == "failed" and "GenerationError: boom" in failed["reason"]
    assert scores_of(unitxt_report, "unitxt.answer_correctness")["q5"]["reason"] == "no reference answer"
    assert scores_of(unitxt_report, "unitxt.context_correctness")["q5"]["reason"] == "no expected documents"
    assert unitxt_report.n_failed == 1 and unitxt_report.n_answered == 4


def test_per_question_records_and_json(unitxt_report):
    record = unitxt_report.questions[0]
    assert record["question_id"] == "q1" and record["answer"] == "Shakespeare wrote Hamlet in 1600."
    assert record["reference"] == "William Shakespeare wrote Hamlet"
    assert record["contexts"] == [{"text": c.text, "document_id": c.document_id} for c in CTX]
    assert record["metrics"][0] == {"name": "unitxt.faithfulness", "evaluator": "unitxt", "score": pytest.approx(0.4)}
    assert unitxt_report.questions[4]["history"] == [{"role": "user", "content": "Hello?"}, {"role": "assistant", "content": "Hello."}]
    data = json.loads(json.dumps(unitxt_report.to_dict(), allow_nan=False))
    assert data["metrics"][0]["scores"].keys() == {"mean", "ci_low", "ci_high"}
    assert data["evaluators"]["unitxt"]["metrics"]["faithfulness"] == "metrics.rag.external_rag.faithfulness"
    assert data["timings"]["unitxt_import_s"] > 0


def test_all_equal_scores_give_a_point_interval():
    # both answers are copies of a passage: faithfulness 1.0 each, and unitxt gives no interval
    questions = [GoldenQuestion(f"e{i}", f"q{i}", (Target("d"),)) for i in range(3)]
    answers = [AnswerRecord(f"e{i}", f"q{i}", "same words", (Context("same words", "d"),)) for i in range(3)]
    result = answer_report(questions, answers, metrics=["unitxt.faithfulness"]).metric("unitxt.faithfulness")
    assert (result.mean, result.ci_low, result.ci_high, result.ci_method) == (1.0, 1.0, 1.0, "all scores equal")


def test_one_question_has_no_interval_and_says_why():
    # reference [alpha beta], answer [alpha gamma]: recall 1/2 ("a" would be dropped as an article)
    questions = [GoldenQuestion("x", "q", (Target("d"),), reference="alpha beta")]
    answers = [AnswerRecord("x", "q", "alpha gamma", (Context("alpha", "d"),))]
    result = answer_report(questions, answers, metrics=["unitxt.answer_correctness"]).metric("unitxt.answer_correctness")
    assert result.mean == 0.5 and result.ci_low is None and result.ci_high is None
    assert "one scored question" in result.reason


def test_nothing_scorable_gives_no_mean_and_no_overall():
    questions = [GoldenQuestion("x", "q", ())]
    answers = [AnswerRecord("x", "q", "a", ())]
    report = answer_report(questions, answers, metrics=["unitxt.context_correctness"])
    result = report.metric("unitxt.context_correctness")
    assert result.mean is None and result.n_unscorable == 1 and result.reason == "no question scored (1 unscorable)"
    assert report.overall_score is None and report.overall_left_out == ["unitxt.context_correctness"]


# ----------------------------------------------------------------------------- aggregation


def test_summarize_without_evaluator_interval_bootstraps():
    # Two values: resample means are 0.75, 0.875 or 1.0 with probabilities 1/4, 1/2, 1/4, so
    # the 2.5 % and 97.5 % quantiles of 1000 resample means are 0.75 and 1.0.
    result = summarize("judge.x", "judge", MetricScores([QuestionScore(0.75), QuestionScore(1.0)]))
    assert (result.ci_low, result.ci_high) == (0.75, 1.0) and result.ci_method.startswith("percentile bootstrap")
    assert bootstrap_interval([0.2, 0.4, 0.9]) == bootstrap_interval([0.2, 0.4, 0.9])  # seeded


def test_metric_names_are_checked():
    with pytest.raises(ConfigError, match="did you mean 'unitxt.faithfulness'"):
        answer_report(QUESTIONS, ANSWERS, metrics=["unitxt.faithfulnes"])
    with pytest.raises(ConfigError, match="need a judge"):
        answer_report(QUESTIONS, ANSWERS, metrics=["judge.correctness"])
    with pytest.raises(ConfigError, match="not computed"):
        answer_report(QUESTIONS, ANSWERS, metrics=["unitxt.faithfulness"], overall=["unitxt.answer_correctness"])
    with pytest.raises(ConfigError, match="not in the golden set"):
        answer_report(QUESTIONS[:1], ANSWERS[:2])


# ----------------------------------------------------------------------------- judge prompts


def test_judge_prompts_show_what_each_metric_uses():
    item = AnswerItem("i", "Who?", (("user", "Earlier?"), ("assistant", "Yes.")), "Ref", (), "Ans", None, CTX)
    correctness = judge_messages(JUDGE_METRICS["correctness"], item)[1]["content"]
    assert "[REFERENCE ANSWER]\nRef" in correctness and "[PASSAGES]" not in correctness
    assert "[CONVERSATION SO FAR]\nuser: Earlier?\nassistant: Yes." in correctness
    assert correctness.rstrip().endswith("[ANSWER]\nAns\n\nScore:")
    no_reference = AnswerItem("i", "Who?", (), None, (), "Ans", None, CTX)
    assert "[1] Hamlet is a tragedy" in judge_messages(JUDGE_METRICS["correctness"], no_reference)[1]["content"]
    empty = AnswerItem("i", "Who?", (), None, (), "Ans", None, ())
    assert "(no passages were retrieved)" in judge_messages(JUDGE_METRICS["faithfulness"], empty)[1]["content"]
    relevance = judge_messages(JUDGE_METRICS["answer_relevance"], item)
    assert relevance[0]["role"] == "system" and "[PASSAGES]" not in relevance[1]["content"]


# ----------------------------------------------------------------------------- judge through HTTP

JUDGE_QUESTIONS = QUESTIONS[:4]  # q4 has no answer
JUDGE_ANSWERS = ANSWERS[:4]
SCRIPT = {  # metric -> question id -> reply
    "answer_relevance": {"q1": "4", "q2": "Score: 5", "q3": "a great answer"},
    "correctness": {"q1": "0.8", "q2": ".5", "q3": "1.5"},
    "completeness": {"q1": "1", "q2": "", "q3": "0"},
    "faithfulness": {"q1": "0.9", "q2": "0.9", "q3": "0.9"},
    "helpfulness": {"q1": ChatReply(status=400), "q2": "0.6", "q3": "0.4"},
}


def judge_responder(body):
    prompt = last_user_text(body)
    metric = next(m for m, spec in JUDGE_METRICS.items() if prompt.startswith(spec.instructions))
    qid = next(q.id for q in JUDGE_QUESTIONS if f"[QUESTION]\n{q.question}\n" in prompt)
    return SCRIPT[metric][qid]


@pytest.fixture(scope="module")
def judged():
    with OpenAITestApp(judge_responder) as app:
        judge = OpenAIChatModel("judge-model", base_url=app.base_url, max_attempts=1)
        report = answer_report(JUDGE_QUESTIONS, JUDGE_ANSWERS, judge, metrics=[f"judge.{m}" for m in JUDGE_METRICS])
        yield report, list(app.chat_requests)


def test_judge_means_leave_out_invalid_and_failed(judged):
    report, _ = judged
    relevance = report.metric("judge.answer_relevance")  # 4 -> 0.75, 5 -> 1.0, text -> invalid
    assert relevance.mean == pytest.approx(0.875)
    assert (relevance.n_scored, relevance.n_invalid, relevance.n_failed) == (2, 1, 1)
    assert (relevance.ci_low, relevance.ci_high) == (0.75, 1.0)  # see test_summarize_without_evaluator_interval_bootstraps
    correctness = report.metric("judge.correctness")  # 0.8, 0.5, 1.5 is off the scale
    assert correctness.mean == pytest.approx(0.65) and (correctness.n_scored, correctness.n_invalid) == (2, 1)
    completeness = report.metric("judge.completeness")  # 1, empty reply, 0
    assert completeness.mean == pytest.approx(0.5) and completeness.n_invalid == 1
    faithfulness = report.metric("judge.faithfulness")  # 0.9, 0.9, and 0 for q3: nothing was retrieved
    assert faithfulness.mean == pytest.approx(0.6) and faithfulness.n_scored == 3
    assert (faithfulness.ci_low, faithfulness.ci_high) == bootstrap_interval([0.9, 0.9, 0.0])
    helpfulness = report.metric("judge.helpfulness")  # the 400 is a failed judge call, q4 has no answer
    assert helpfulness.mean == pytest.approx(0.5) and (helpfulness.n_failed, helpfulness.n_invalid) == (2, 0)
    assert report.overall_score == pytest.approx((0.875 + 0.65 + 0.5 + 0.6 + 0.5) / 5)


def test_judge_per_question_reasons(judged):
    report, _ = judged
    relevance = scores_of(report, "judge.answer_relevance")
    assert relevance["q1"] == {"name": "judge.answer_relevance", "evaluator": "judge", "score": 0.75, "raw_score": 4.0}
    assert relevance["q3"]["status"] == "invalid" and "no score" in relevance["q3"]["reason"]
    assert "outside the scale 0 to 1" in scores_of(report, "judge.correctness")["q3"]["reason"]
    assert scores_of(report, "judge.completeness")["q2"]["reason"] == "empty reply"
    helpful = scores_of(report, "judge.helpfulness")["q1"]
    assert helpful["status"] == "failed" and "judge call failed: GenerationError" in helpful["reason"]
    assert scores_of(report, "judge.helpfulness")["q4"]["reason"].startswith("no answer: GenerationError: boom")


def test_judge_requests(judged):
    report, requests = judged
    # no call for the question without an answer, nor for q3's faithfulness (nothing retrieved)
    assert len(requests) == 3 * 5 - 1
    assert all(r["temperature"] == 0.0 and r["model"] == "judge-model" for r in requests)
    assert report.evaluators["judge"]["model_id"].endswith("/judge-model")
    assert report.timings["judge_s"] > 0


def test_a_dead_judge_stops_being_called_after_consecutive_failures():
    """Every judge call answers 503 (1 attempt each): with one worker, 4 calls fail, then every
    other item is failed as skipped without a call; nothing is dropped."""
    from core.metrics.answers import JudgeEvaluator, _items

    with OpenAITestApp(lambda body: ChatReply(status=503)) as app:
        judge = OpenAIChatModel("judge-model", base_url=app.base_url, max_attempts=1, retry_wait_s=0.0)
        evaluator = JudgeEvaluator(judge, max_workers=1, max_consecutive_failures=4)
        items = _items(JUDGE_QUESTIONS[:3], JUDGE_ANSWERS[:3])
        scores = evaluator.evaluate(items, ["correctness", "completeness"])
        assert len(app.chat_requests) == 4
    statuses = [s for m in ("correctness", "completeness") for s in scores[m].per_question]
    assert [s.status for s in statuses] == ["failed"] * 6
    assert all("judge call failed" in s.reason for s in statuses[:4])
    assert all(s.reason.startswith(f"skipped: judge {judge.model_id} failed 4 times in a row") for s in statuses[4:])
    with pytest.raises(ConfigError, match="max_consecutive_failures"):
        JudgeEvaluator(judge, max_consecutive_failures=0)


def test_faithfulness_without_passages_is_zero_and_the_judge_is_not_shown_empty_ones():
    """A judge that replies "1" to everything: only the answer with a real passage may get 1."""
    from core.metrics.answers import JudgeEvaluator

    items = [
        AnswerItem("none", "Who wrote Hamlet?", (), None, (), "Shakespeare.", None, ()),
        AnswerItem("blank", "Who wrote Macbeth?", (), None, (), "Shakespeare.", None,
                   (Context(text=""), Context(text="  \n"))),
        AnswerItem("real", "Who wrote Othello?", (), None, (), "Shakespeare.", None,
                   (Context(text="Othello is a tragedy by William Shakespeare."),)),
    ]
    with OpenAITestApp(lambda body: "1") as app:
        judge = JudgeEvaluator(OpenAIChatModel("judge-model", base_url=app.base_url, max_attempts=1))
        scores = judge.evaluate(items, ["faithfulness", "correctness"])
        prompts = [last_user_text(r) for r in app.chat_requests]
    assert [s.score for s in scores["faithfulness"].per_question] == [0.0, 0.0, 1.0]
    faithfulness_prompts = [p for p in prompts if p.startswith(JUDGE_METRICS["faithfulness"].instructions)]
    assert len(faithfulness_prompts) == 1 and "[1] Othello is a tragedy" in faithfulness_prompts[0]
    # correctness without a reference judges against the passages: the blank ones are not shown as "[1] "
    blank = next(p for p in prompts if "Who wrote Macbeth?" in p)
    assert "[PASSAGES]\n(no passages were retrieved)\n" in blank and "[1]" not in blank
