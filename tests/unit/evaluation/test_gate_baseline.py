"""Which stored run the gate compares with, which setup it gates, and the verdict it keeps.

Real reports (tests/support/reports.py) are stored in a real report store in a tmp folder
(``ReportStore`` over ``LocalFiles``), judged, saved with their verdict and read back, as
``ragtune evaluate`` does. Counts are by hand from the ranks given; p-values from
scipy.stats.binomtest (the exact McNemar test is a two-sided binomial test on the
discordant questions).
"""

from __future__ import annotations

import json

import pytest
from scipy.stats import binomtest

from core.errors import ConfigError, NotStoredError
from core.evaluation.gate import (EXIT_GATE, BaselineRule, find_baseline, judge_gate, named_baseline,
                                  parse_thresholds)
from core.reports import LocalFiles, ReportStore
from core.settings import branch_name, ci_branch
from tests.support.reports import retrieval_report

SHA = "ab" * 32


def _run(run_id: str, found_a: int, *, found_b: int = 10, pick: str = "A") -> dict:
    """Ten questions; A finds the first ``found_a``, B the first ``found_b``; ``pick`` finds the most."""
    ranks = {f"q{i}": {"A": 1 if i < found_a else None, "B": 1 if i < found_b else None} for i in range(10)}
    report = retrieval_report(run_id=run_id, ranks=ranks, sha256=SHA)
    report["picks"]["finds_the_most"] = pick
    return report


def _ci(store: ReportStore, report: dict, *, branch: str | None = "main", corpus: str = "docs", **gate) -> dict:
    """What ``evaluate --baseline latest`` does with a finished run: find the baseline, judge,
    keep the verdict in the report and store it."""
    baseline, note = find_baseline(store, BaselineRule(SHA, corpus, branch))
    report["branch"] = branch
    report["corpus"]["path"] = corpus
    verdict = judge_gate(report, baseline=baseline, branch=branch, note=note, **gate)
    report["gate"] = verdict.to_dict()
    store.save_run(report["run_id"], report)
    return report


@pytest.fixture
def store(tmp_path):
    return ReportStore(LocalFiles(tmp_path))


def test_a_regression_pushed_twice_fails_twice(store):
    good = _ci(store, _run("20260101T000000Z-000001", 10))
    assert good["gate"]["passed"] and good["gate"]["exit_code"] == 0 and good["gate"]["baseline"] is None
    assert "no earlier run passed its gate on this golden file, corpus docs and branch main" in good["gate"]["note"]

    first = _ci(store, _run("20260102T000000Z-000002", 4))  # A loses 6 questions, gains none
    p = binomtest(6, 6, 0.5).pvalue  # 0.03125
    assert first["gate"]["exit_code"] == EXIT_GATE and not first["gate"]["passed"]
    assert first["gate"]["baseline"]["run_id"] == good["run_id"]
    comparison = first["gate"]["comparison"]
    assert comparison["lost"] == ["q4", "q5", "q6", "q7", "q8", "q9"] and comparison["gained"] == []
    assert comparison["p_value"] == pytest.approx(p) and comparison["worse"]

    # pushed again: the failed run is passed over, so the comparison is with the good run again
    second = _ci(store, _run("20260103T000000Z-000003", 4))
    assert second["gate"]["exit_code"] == EXIT_GATE
    assert second["gate"]["baseline"]["run_id"] == good["run_id"]
    assert "passed over 1 newer run on this golden file: 20260102T000000Z-000002: failed its gate" in \
        second["gate"]["note"]
    # the verdicts are stored with the runs, and their summaries say passed or not
    assert store.load_run(second["run_id"])["gate"] == second["gate"]
    assert store.load_summary(first["run_id"])["gate"]["passed"] is False
    assert store.load_summary(good["run_id"])["gate"] == {"passed": True, "setup": "A", "setup_key": "finds_the_most",
                                                          "exit_code": 0}


def test_baselines_come_from_the_same_branch_and_corpus_unless_told_otherwise(store):
    _ci(store, _run("20260101T000000Z-000001", 10), branch="main")
    _ci(store, _run("20260102T000000Z-000002", 10), branch="feature-x")
    _ci(store, _run("20260103T000000Z-000003", 10), branch="main", corpus="other-docs")
    old = _run("20260104T000000Z-000004", 10)  # stored before verdicts were kept: no gate, no branch
    old["corpus"]["path"] = "docs"
    store.save_run(old["run_id"], old)
    on_main, note = find_baseline(store, BaselineRule(SHA, "./docs/", "main"))
    assert on_main.run_id == "20260101T000000Z-000001"
    assert on_main.n_passed_over == 3 and on_main.passed_over == (
        "20260104T000000Z-000004: no branch recorded", "20260103T000000Z-000003: corpus other-docs",
        "20260102T000000Z-000002: branch feature-x")
    assert note.startswith("passed over 3 newer runs on this golden file")
    assert find_baseline(store, BaselineRule(SHA, "docs", "feature-x"))[0].run_id == "20260102T000000Z-000002"
    anywhere, _ = find_baseline(store, BaselineRule(SHA, "docs", "main", any_branch=True))
    assert anywhere.run_id == "20260102T000000Z-000002"  # the old run has no gate
    assert find_baseline(store, BaselineRule("cd" * 32, "docs", "main")) == (
        None, "no earlier run passed its gate on this golden file, corpus docs and branch main: nothing to compare with")
    assert find_baseline(store, BaselineRule(SHA, "docs", None))[0] is None  # runs without a branch: only the old one


def test_a_run_over_targets_takes_a_baseline_that_searched_the_same_targets(store):
    def over(run_id: str, names: list[str]) -> dict:
        report = _run(run_id, 10)
        report["targets"] = [{"name": n, "status": "ok", "description": {"fingerprint": n}} for n in names]
        report["branch"] = "main"
        report["gate"] = judge_gate(report, branch="main").to_dict()
        store.save_run(run_id, report)
        return report

    over("20260101T000000Z-000001", ["prod", "ragtune"])
    over("20260102T000000Z-000002", ["candidate", "prod"])
    _ci(store, _run("20260103T000000Z-000003", 10))  # a run over --docs alone: no targets
    found, note = find_baseline(store, BaselineRule(SHA, None, "main", targets=("prod", "ragtune")))
    assert found.run_id == "20260101T000000Z-000001"
    assert found.passed_over == ("20260103T000000Z-000003: no targets", "20260102T000000Z-000002: targets candidate, prod")
    assert "on this golden file, targets prod, ragtune and branch main" in BaselineRule(
        SHA, None, "main", targets=("prod", "ragtune")).describe()
    # a run over --docs alone never takes a run over targets as its baseline
    assert find_baseline(store, BaselineRule(SHA, "docs", "main"))[0].run_id == "20260103T000000Z-000003"


def test_the_gated_setup_is_the_one_the_baseline_gated(store):
    _ci(store, _run("20260101T000000Z-000001", 10, found_b=10, pick="A"))
    # the regressed run picks B (A lost 6 questions): the gate still checks A
    regressed = _ci(store, _run("20260102T000000Z-000002", 4, found_b=10, pick="B"))
    gate = regressed["gate"]
    assert gate["setup"] == "A" and gate["setup_from"] == "the setup baseline 20260101T000000Z-000001 gated"
    assert gate["exit_code"] == EXIT_GATE
    # a setup named with --setup is gated whatever the baseline gated
    named = judge_gate(_run("20260103T000000Z-000003", 4, pick="B"), setup="B",
                       baseline=find_baseline(store, BaselineRule(SHA, "docs", "main"))[0])
    assert named.setup == "B" and named.setup_from == "named with --setup" and named.passed


def test_thresholds_are_kept_with_their_values(store):
    report = _ci(store, _run("20260101T000000Z-000001", 7), thresholds=parse_thresholds(["found@1=0.8", "mrr=0.5"]))
    # A finds 7 of 10 at rank 1: found@1 = 0.7, MRR = 0.7 (by hand)
    assert report["gate"]["thresholds"] == [
        {"metric": "found@1", "threshold": 0.8, "value": pytest.approx(0.7), "grain": "doc", "passed": False},
        {"metric": "mrr", "threshold": 0.5, "value": pytest.approx(0.7), "grain": "doc", "passed": True}]
    assert report["gate"]["exit_code"] == EXIT_GATE
    assert "failed: A has found@1 0.700 at grain doc, under 0.8" in report["gate"]["lines"]
    # a run that failed on its thresholds is no baseline either
    assert find_baseline(store, BaselineRule(SHA, "docs", "main"))[0] is None


def test_a_run_the_gate_cannot_judge_fails_with_exit_1_and_keeps_why(store):
    base = _ci(store, _run("20260101T000000Z-000001", 10))
    later = _run("20260102T000000Z-000002", 10)
    later["evaluation"]["rank_grain"] = "page"
    verdict = judge_gate(later, baseline=find_baseline(store, BaselineRule(SHA, "docs", "main"))[0])
    assert not verdict.passed and verdict.exit_code == 1
    assert "ranked at the doc grain and this run at the page grain" in verdict.error
    assert verdict.to_dict()["baseline"]["run_id"] == base["run_id"]
    missing = _run("20260103T000000Z-000003", 10)
    missing["setups"] = [s for s in missing["setups"] if s["name"] != "A"]
    for q in missing["questions"]:
        q["first_relevant_rank"].pop("A")
    verdict = judge_gate(missing, baseline=find_baseline(store, BaselineRule(SHA, "docs", "main"))[0])
    assert verdict.exit_code == 1 and "this run has no setup 'A'" in verdict.error


def test_a_baseline_named_by_id_or_file(store, tmp_path):
    base = _run("20260101T000000Z-000001", 10)
    store.save_run(base["run_id"], base)
    assert named_baseline(store, base["run_id"], SHA).report["run_id"] == base["run_id"]
    path = tmp_path / "exported" / "report.json"
    path.parent.mkdir()
    path.write_text(json.dumps(base), encoding="utf-8")
    from_file = named_baseline(store, str(path), SHA)
    assert from_file.run_id == base["run_id"] and "the file" in from_file.how
    with pytest.raises(ConfigError, match="another golden file"):
        named_baseline(store, str(path), "cd" * 32)
    with pytest.raises(NotStoredError, match="no run '20990101T000000Z-000000'"):
        named_baseline(store, "20990101T000000Z-000000", SHA)
    (tmp_path / "bad.json").write_text('{"kind": "experiment"}', encoding="utf-8")
    with pytest.raises(ConfigError, match="is not an evaluate run's report.json"):
        named_baseline(store, str(tmp_path / "bad.json"), SHA)


def test_branch_from_the_ci_environment():
    assert ci_branch({"GITHUB_REF_NAME": "7/merge", "GITHUB_HEAD_REF": "fix-search"}) == "fix-search"
    assert ci_branch({"GITHUB_REF_NAME": "main", "GITHUB_HEAD_REF": ""}) == "main"
    assert ci_branch({"RAGTUNE_BRANCH": "release", "GITHUB_REF_NAME": "main"}) == "release"
    assert ci_branch({"CI_COMMIT_REF_NAME": "dev"}) == "dev" and ci_branch({}) is None
    with pytest.raises(ConfigError, match="GITHUB_REF_NAME is not a branch name"):
        ci_branch({"GITHUB_REF_NAME": "a\nb"})
    with pytest.raises(ConfigError, match="--branch is not a branch name"):
        branch_name("x" * 256, "--branch")


def test_the_run_page_shows_the_verdict_escaped(store):
    from core.reports.pages import render_run

    base, regressed = _run("20260101T000000Z-000001", 10), _run("20260102T000000Z-000002", 4)
    for run in (base, regressed):  # a hostile question id, in both runs
        run["questions"][9]["id"] = "<script>alert(1)</script>"
    _ci(store, base)
    report = _ci(store, regressed, branch="main", thresholds=parse_thresholds(["found@10=0.5"]))
    html = render_run(report)
    block = html.split('<section id="gate"', 1)[1].split("</section>", 1)[0]
    assert "failed</span>" in block and "exit code 4" in block
    assert "A <span class=\"note\">(the setup baseline 20260101T000000Z-000001 gated)</span>" in block
    assert "found@10</td><td class=\"n\">0.400</td><td class=\"n\">0.5</td>" in block  # A finds 4 of 10
    assert "6 only in the baseline, 0 only now" in block
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in block and "<script>alert(1)" not in html
    assert '<section id="gate"' not in render_run(_run("20260103T000000Z-000003", 10))  # no gate, no block


def _failed(report: dict, name: str, error: str) -> dict:
    """``report`` (a run over targets) with target ``name`` failed as a run records it: its
    error, no setups, no picks, and none of its setups in the report."""
    gone = {s["name"] for s in report["setups"] if s.get("target") == name}
    report["setups"] = [s for s in report["setups"] if s["name"] not in gone]
    for q in report["questions"]:
        q["first_relevant_rank"] = {k: v for k, v in q["first_relevant_rank"].items() if k not in gone}
    for t in report["targets"]:
        if t["name"] == name:
            t.update(status="failed", error=error, setups=[], picks=None, description=None)
    return report


def test_a_gated_target_that_failed_is_the_reason_the_gate_gives():
    from tests.support.target_reports import targets_report

    thresholds = parse_thresholds(["found@1=0.9"])
    # TARGET/PICK and TARGET/SETUP of the failed target (tests/support/target_reports.py: down failed)
    for key in ("down/finds_the_most", "down/keyword"):
        verdict = judge_gate(targets_report(), setup=key, thresholds=thresholds)
        assert (verdict.passed, verdict.exit_code, verdict.setup, verdict.setup_key) == (False, 1, None, key)
        assert verdict.error == "the gated target down failed: cannot open Qdrant"
        assert verdict.lines == ("failed: the gate cannot judge this run: the gated target down failed: cannot open "
                                 "Qdrant",)
    # a pick of a target that was searched is resolved in this run
    ok = judge_gate(targets_report(), setup="team/finds_the_most", thresholds=parse_thresholds(["found@3=0.5"]))
    assert (ok.setup, ok.setup_from, ok.setup_key, ok.passed) == (
        "team/keyword", "this run's pick finds_the_most of target team", "team/finds_the_most", True)
    # every target failed: each one's reason, for the pick across targets
    report = _failed(targets_report(), "prod", "target prod: 401 Unauthorized")
    report = _failed(report, "team", "every setup failed: x")
    assert judge_gate(report, thresholds=thresholds).error == (
        "every target of this run failed (prod: 401 Unauthorized; team: every setup failed: x; down: cannot open "
        "Qdrant)")


def test_a_failed_target_is_blamed_before_the_grain_of_the_baseline(store):
    from tests.support.target_reports import targets_report

    base = targets_report("20260101T000000Z-000001")
    base["evaluation"]["rank_grain"] = "evidence"
    base["gate"] = judge_gate(base, setup="finds_the_most").to_dict()
    assert base["gate"]["setup"] == "prod/keyword" and base["gate"]["passed"]
    baseline = named_baseline(store, str(_saved(store, base)), base["golden"]["sha256"])
    # this run: prod could not be reached, so it found nothing at any grain (ranked by documents)
    now = _failed(targets_report("20260102T000000Z-000002"), "prod",
                  "target prod: /tmp/gone is not a Qdrant folder")
    verdict = judge_gate(now, setup="finds_the_most", baseline=baseline)
    assert (verdict.exit_code, verdict.setup) == (1, "prod/keyword")
    assert verdict.error == "the gated target prod failed: /tmp/gone is not a Qdrant folder"
    assert verdict.lines[-1] == ("failed: the gate cannot judge this run: the gated target prod failed: /tmp/gone "
                                 "is not a Qdrant folder")
    assert not any("grain" in line for line in verdict.lines)
    # a run of one target that failed: that target, whether or not a baseline names a setup
    alone = _failed(_failed(targets_report("20260103T000000Z-000003"), "prod", "target prod: refused"), "team", "")
    alone["targets"] = [t for t in alone["targets"] if t["name"] == "prod"]
    assert alone["setups"] == []
    assert judge_gate(alone).error == "the gated target prod failed: refused"


def _saved(store: ReportStore, report: dict) -> str:
    store.save_run(report["run_id"], report)
    return report["run_id"]
