"""A golden file that cannot tell the setups apart: every setup tied with the pick (McNemar
ties computed by hand, as in test_picks.py), said in the report, the printed report and the
run's page, with the pick kept and flagged."""

from __future__ import annotations

import copy

from core.cli import format_report
from core.evaluation import pick_setups
from core.evaluation.chunking import format_comparison
from core.evaluation.undecided import tied_with_all, undecided
from core.reports.pages import render_run
from core.reports.pages.site import render_chunking
from tests.support.reports import retrieval_report


def row(name, found, first, ms):
    return {"name": name, "found_top10": sum(found), "found_first": first, "n_scored": len(found),
            "median_ms": ms, "found": found}


def test_every_setup_tied_with_the_pick_is_tied_with_all():
    # 10 questions. a finds all 10; b misses q9 (a alone 1, b alone 0: p = 1.0); c misses q8 and
    # q9 (a alone 2: p = 2 * 1/4 = 0.5): every setup is tied with a
    a, b, c = [True] * 10, [True] * 9 + [False], [True] * 8 + [False, False]
    picks = pick_setups([row("a", a, 6, 5.0), row("b", b, 6, 5.0), row("c", c, 6, 5.0)])
    assert picks["finds_the_most"] == "a" and picks["tied_with_best"] == {"a": True, "b": True, "c": True}
    assert picks["tied_with_all"] is True
    # d finds 3 of 10: a alone 7, d alone 0 -> p = 2 / 2**7 = 0.0156 < 0.05: not tied, so a is a winner
    d = [True] * 3 + [False] * 7
    picks = pick_setups([row("a", a, 6, 5.0), row("b", b, 6, 5.0), row("d", d, 1, 5.0)])
    assert picks["tied_with_best"]["d"] is False and picks["tied_with_all"] is False
    assert pick_setups([row("a", a, 6, 5.0)])["tied_with_all"] is False  # one setup: nothing compared
    assert tied_with_all([True, True]) and not tied_with_all([True]) and not tied_with_all([True, False])


def test_the_message_says_what_to_add_at_each_grain():
    doc = undecided("setups", "dense", 8, "doc", 0.05)
    assert doc["message"].startswith("these questions cannot tell the setups apart: add page or evidence labels, "
                                     "for example with `template --by page` or `draft`")
    assert "all 8 setups are tied with dense at the doc grain" in doc["message"]
    assert "not a winner" in doc["message"] and (doc["pick"], doc["n_tied"], doc["grain"]) == ("dense", 8, "doc")
    assert "add evidence quotes or more questions" in undecided("setups", "x", 2, "page", 0.05)["message"]
    assert "add more questions" in undecided("chunking techniques", "x", 2, "evidence", 0.05)["message"]


def _printable(report: dict) -> dict:
    """``report`` with the few fields ``format_report`` reads that the small report lacks."""
    report["indexing"]["embedding"] = {"n_embedded": 6, "n_cache_hits": 0}
    for s in report["setups"]:
        s["timings_ms"]["total"] = {"median": s["timings_ms"]["median"]}
    return report


def _undecided_report() -> dict:
    report = _printable(retrieval_report())
    report["picks"]["tied_with_all"] = True
    report["undecided"] = undecided("setups", "A", 2, "doc", 0.05)
    for s in report["setups"]:
        s["tied_with_best"] = True
    return report


def test_printed_report_and_page_say_there_is_no_winner():
    report = _undecided_report()
    text = format_report(report)
    assert "no winner: these questions cannot tell the setups apart: add page or evidence labels" in text
    assert "finds_the_most    A                        (tied with every other setup: not a winner)" in text
    html = render_run(report)
    assert 'id="undecided"' in html and "these questions cannot tell the setups apart" in html
    assert "<code>" not in html.split('id="undecided"')[1].split("</section>")[0]  # text, escaped
    decided = retrieval_report()
    assert "no winner" not in format_report(_printable(copy.deepcopy(decided)))
    assert 'id="undecided"' not in render_run(decided)  # older reports have no such field


def test_chunking_comparison_without_a_winner():
    report = {
        "settings": {"budget_chars": 400, "search_name": "vector", "counting": "found", "grain": "doc", "alpha": 0.05},
        "golden": {"n_questions": 6}, "corpus": {"n_documents": 3},
        "builds": [{"key": "recursive-16-2-plain"}, {"key": "fixed-16-2-plain"}],
        "ranking": ["recursive", "fixed"],
        "techniques": [
            {"method": "recursive", "best_build": "recursive-16-2-plain", "counted": 6, "n_scored": 6, "tie": True,
             "vs_best": None, "tied_with_all": True},
            {"method": "fixed", "best_build": "fixed-16-2-plain", "counted": 6, "n_scored": 6, "tie": True,
             "vs_best": {"only_best": 0, "only_this": 0, "p_value": 1.0}}],
        "ties": ["recursive", "fixed"], "current": None, "failures": [], "left_out": [],
        "timings_s": {"total_s": 1.0, "embed_s": 0.5},
    }
    report["best"] = report["techniques"][0]
    report["undecided"] = undecided("chunking techniques", "recursive-16-2-plain", 2, "doc", 0.05)
    text = format_comparison(report)
    assert "no winner: these questions cannot tell the chunking techniques apart" in text
    assert "first in the ranking: recursive-16-2-plain (found 6 of 6; tied with every other technique: not a winner)" \
        in text and "\nbest: " not in text
    html = render_chunking(copy.deepcopy(report))
    assert 'id="undecided"' in html and "cannot tell the chunking techniques apart" in html
