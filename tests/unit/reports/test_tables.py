

def test_found_by_question_counts_a_right_item_within_k_only():
    from core.reports.tables import found_by_question

    report = {"questions": [
        {"id": "q1", "first_relevant_rank": {"dense": 1, "citations": 12}},
        {"id": "q2", "first_relevant_rank": {"dense": None, "citations": 10}},
        {"id": 3, "first_relevant_rank": {"citations": 11}},
        {"id": "q4", "first_relevant_rank": {}},
    ]}
    # by hand: rank 12 and 11 are beyond the first 10, rank 10 is within them
    assert found_by_question(report, "citations", 10) == {"q1": False, "q2": True, "3": False}
    assert found_by_question(report, "dense", 10) == {"q1": True, "q2": False}
    assert found_by_question(report, "citations", 12) == {"q1": True, "q2": True, "3": True}


def _page_report(run_id: str, found: set[str]) -> dict:
    """Three questions at the page grain: p1 and p2 with a page label, d3 with a document label
    only (not scorable there: its rank is None in every run); setup dense finds ``found``."""
    expected = {"p1": ["x.pdf#page=1"], "p2": ["x.pdf#page=2", "y.pdf"], "d3": ["x.pdf"]}
    return {"run_id": run_id, "evaluation": {"rank_grain": "page"}, "golden": {"sha256": "ab" * 32},
            "setups": [{"name": "dense", "metrics": {}}],
            "questions": [{"id": q, "question": f"{q}?", "expected": e,
                           "first_relevant_rank": {"dense": 1 if q in found else None}} for q, e in expected.items()]}


def test_found_by_question_leaves_out_questions_not_scorable_at_the_rank_grain():
    from core.reports.tables import found_by_question, scorable_at

    report = _page_report("r1", {"p1"})
    # by hand: d3 names no page, so at the page grain it is neither found nor missed
    assert found_by_question(report, "dense", 10) == {"p1": True, "p2": False}
    report["evaluation"]["rank_grain"] = "doc"  # at the doc grain every question names a document
    assert found_by_question(report, "dense", 10) == {"p1": True, "p2": False, "d3": False}
    assert [scorable_at({"expected": e}, g) for e, g in (([], "doc"), ([], "evidence"), (["x.pdf"], "evidence"),
                                                          (["x.pdf"], "page"), (["x.pdf#page=3"], "page"))] == [
        False, False, True, False, True]
    assert scorable_at({}, "page") and scorable_at({"expected": []}, None)  # unknown: taken as scorable


def test_the_compare_page_pairs_only_questions_scorable_at_the_grain():
    from core.reports.pages.site import compare_view

    view = compare_view(_page_report("r1", {"p1", "p2"}), _page_report("r2", {"p1"}))
    (dense,) = view["setups"]
    # by hand: p2 found only by r1; d3 is not a pair
    assert (dense["n"], dense["only_first"], dense["only_second"]) == (2, [("p2", "p2?")], [])
