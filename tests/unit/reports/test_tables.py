

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
