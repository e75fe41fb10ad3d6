"""The CI gate: thresholds, the baseline's exact paired test, and a golden file whose
expected documents are all missing. Expected values are computed by hand on the reports of
tests/support/reports.py, and the p-values by scipy.stats.binomtest."""

import pytest
from scipy.stats import binomtest

from core.errors import ConfigError
from core.evaluation.gate import (
    check_baseline,
    compare_with_baseline,
    check_thresholds,
    judge_gate,
    chosen_setup,
    missing_documents_reason,
    parse_thresholds,
    run_gate,
)
from tests.support.reports import retrieval_report


def test_parse_thresholds_reads_success_as_found():
    got = parse_thresholds(["found@5=0.8", "MRR=0.6", "recall@10 = 1", "success@3=0.5"])
    assert [(t.metric, t.value, t.label) for t in got] == [("found@5", 0.8, "found@5"), ("mrr", 0.6, "mrr"),
                                                          ("recall@10", 1.0, "recall@10"), ("found@3", 0.5, "found@3")]


@pytest.mark.parametrize("item,message", [("found@5", "METRIC=VALUE"), ("hits=0.5", "METRIC=VALUE"),
                                          ("mrr=high", "not a number"), ("mrr=1.5", "from 0 to 1"),
                                          ("found@2=0.5", "k = 1, 3, 5, 10 only")])
def test_parse_thresholds_names_the_bad_item(item, message):
    with pytest.raises(ConfigError, match=message) as exc:
        parse_thresholds([item])
    assert repr(item) in str(exc.value)


def test_chosen_setup_by_pick_or_name():
    report = retrieval_report()
    assert chosen_setup(report) == "A" and chosen_setup(report, "best_for_time") == "B"
    assert chosen_setup(report, "B") == "B"
    with pytest.raises(ConfigError, match="neither a pick"):
        chosen_setup(report, "C")
    report["picks"]["finds_the_most"] = None
    report["picks"]["reason"] = "no setup found anything"
    with pytest.raises(ConfigError, match="no setup found anything"):
        chosen_setup(report)


def test_thresholds_at_the_rank_grain():
    report = retrieval_report()
    # A: found@5 = 3/4 = 0.75 (by hand), MRR 0.4583
    assert check_thresholds(report, "A", parse_thresholds(["found@5=0.75", "mrr=0.45"])) == []
    failures = check_thresholds(report, "A", parse_thresholds(["found@5=0.8", "mrr=0.5"]))
    assert failures == ["A has found@5 0.750 at grain doc, under 0.8", "A has mrr 0.458 at grain doc, under 0.5"]
    with pytest.raises(ConfigError, match="no ndcg@10"):
        check_thresholds(report, "A", parse_thresholds(["ndcg@10=0.5"]))


def _ten(found_a: int) -> dict:
    ranks = {f"q{i}": {"A": 1 if i < found_a else None, "B": 1} for i in range(10)}
    return retrieval_report(ranks=ranks)


def test_baseline_significantly_worse():
    baseline, now = _ten(10), _ten(4)  # 6 questions lost, none gained
    finding = compare_with_baseline(now, baseline, "A")
    p = binomtest(6, 6, 0.5).pvalue  # 2 * 0.5**6 = 0.03125
    assert finding.worse
    assert f"p = {p:.4f}" in finding.message and "finds 6 fewer of 10 questions" in finding.message
    lines, failed = run_gate(now, baseline=baseline)
    assert failed and lines[0].startswith("failed: A finds 6 fewer")


def test_baseline_fewer_but_not_significantly():
    finding = compare_with_baseline(_ten(5), _ten(10), "A")  # 5 lost: p = 2 / 32 = 0.0625
    assert not finding.worse and "p = 0.0625" in finding.message and "not significantly worse" in finding.message


def test_baseline_on_another_golden_file_is_refused():
    other = retrieval_report(sha256="cd" * 32)
    with pytest.raises(ConfigError, match="another golden file"):
        compare_with_baseline(retrieval_report(), other, "A")
    with pytest.raises(ConfigError, match="another golden file"):
        check_baseline(other, "ab" * 32)
    check_baseline(retrieval_report(), "ab" * 32)  # the same file passes


def test_baseline_ranked_at_another_grain_is_refused():
    # 6 lost at the doc grain would be "significantly worse"; at two grains there is no pair
    baseline, now = _ten(10), _ten(4)
    baseline["evaluation"]["rank_grain"] = "page"
    with pytest.raises(ConfigError, match="ranked at the page grain and this run at the doc grain"):
        compare_with_baseline(now, baseline, "A")


def test_run_gate_passes_and_fails_on_thresholds():
    lines, failed = run_gate(retrieval_report(), thresholds=parse_thresholds(["found@3=0.7"]))
    assert not failed and lines == ["passed: A meets found@3 >= 0.7"]
    lines, failed = run_gate(retrieval_report(), setup="B", thresholds=parse_thresholds(["found@3=0.7"]))
    assert failed and lines == ["failed: B has found@3 0.500 at grain doc, under 0.7"]


def test_missing_documents_reason():
    assert missing_documents_reason(["a.txt", "b.txt"], ["b.txt", "c.txt"], "docs") is None
    assert missing_documents_reason([], ["c.txt"], "docs") is None  # Bedrock datasets expect no document
    reason = missing_documents_reason(["a.txt"], ["x.txt", "y.txt", "z.txt", "w.txt"], "docs")
    assert "the golden file expects 1 document and none is in docs" in reason
    assert "'a.txt'" in reason and "(and 1 more)" in reason


def _paged(found: int) -> dict:
    """Six questions ranked at the page grain: q0..q4 have a page label, q5 a document label
    only (not scorable at the page grain, so its rank is None in every run); A finds the first
    ``found`` of q0..q4 at rank 1."""
    ranks = {f"q{i}": {"A": 1 if i < found and i < 5 else None, "B": 1 if i < 5 else None} for i in range(6)}
    report = retrieval_report(ranks=ranks)
    report["evaluation"]["rank_grain"] = "page"
    for i, q in enumerate(report["questions"]):
        q["expected"] = [f"x.pdf#page={i + 1}"] if i < 5 else ["x.pdf"]
    return report


def test_the_baseline_comparison_counts_only_the_questions_scorable_at_the_grain():
    # by hand: 5 questions have a page label; q5 has none and is in neither side of the pairs
    same = compare_with_baseline(_paged(5), _paged(5), "A")
    assert same.n == 5 and same.lost == () and same.gained == ()
    assert same.message == ("A finds as many of 5 questions as in 20260101T000000Z-aaaaaa (found only in the "
                            "baseline: 0, only now: 0; exact McNemar p = 1.0000, alpha 0.05): not significantly worse")
    fewer = compare_with_baseline(_paged(4), _paged(5), "A")  # q4 lost: p = binomtest(1, 1) = 1
    assert (fewer.n, fewer.lost, fewer.gained, fewer.p_value) == (5, ("q4",), (), 1.0)
    assert fewer.message.startswith("A finds 1 fewer of 5 questions than in 20260101T000000Z-aaaaaa")
    assert fewer.to_dict()["n"] == 5


def test_a_gated_setup_that_failed_is_the_reason_not_its_missing_metric():
    report = retrieval_report()
    report["setups"][1].update(status="failed", error="the store refused the query", metrics={})
    with pytest.raises(ConfigError) as failed:
        run_gate(report, setup="B", thresholds=parse_thresholds(["found@3=0.7"]))
    assert str(failed.value) == "the gated setup B failed: the store refused the query"
    verdict = judge_gate(report, setup="B", thresholds=parse_thresholds(["found@3=0.7"]))
    assert (verdict.setup, verdict.exit_code, verdict.thresholds) == ("B", 1, ())
