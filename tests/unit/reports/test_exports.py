"""CSV and DataFrame exports, on small reports whose numbers are computed by hand
(tests/support/reports.py)."""

import csv
import io

import pytest

from core.errors import ConfigError
from core.reports import to_csv, to_dataframe
from core.reports.tables import question_rows, setup_rows
from tests.support.reports import experiment_report, retrieval_report, with_answers


def test_setup_rows_one_per_setup_and_grain():
    rows = setup_rows(retrieval_report())
    assert [(r["setup"], r["grain"]) for r in rows] == [("A", "doc"), ("A", "page"), ("B", "doc"), ("B", "page")]
    a_doc = rows[0]
    assert a_doc["found@1"] == 0.25 and a_doc["found@3"] == 0.75  # by hand: q1 at 1; q1, q2, q4 within 3
    assert a_doc["mrr"] == pytest.approx((1 + 1 / 3 + 1 / 2) / 4)
    assert a_doc["ranked_by"] is True and a_doc["picks"] == "finds_the_most"
    assert rows[2]["picks"] == "best_for_balance best_for_time"
    assert rows[1]["n_scored"] == 0 and rows[1]["found@1"] is None


def test_intervals_and_ties_when_the_report_has_them():
    report = retrieval_report()
    block = report["setups"][0]["metrics"]["doc"]
    block["ci_low"], block["ci_high"] = {"mrr": 0.2}, {"mrr": 0.7}
    report["setups"][0]["tied_with_best"] = True
    row = setup_rows(report)[0]
    assert (row["mrr_ci_low"], row["mrr_ci_high"], row["tied_with_best"]) == (0.2, 0.7, True)
    assert "mrr_ci_low" not in setup_rows(retrieval_report())[0]  # an older report: no interval columns


def test_csv_round_trips_through_the_csv_reader():
    text = to_csv(retrieval_report())
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == 4
    assert rows[0]["setup"] == "A" and float(rows[0]["found@3"]) == 0.75
    assert rows[1]["found@1"] == ""  # None is an empty field


def test_per_question_rows_carry_answers_on_the_answering_setup():
    rows = question_rows(with_answers(retrieval_report()))
    assert len(rows) == 8  # 4 questions x 2 setups
    q1a, q1b = rows[0], rows[1]
    assert (q1a["setup"], q1a["first_relevant_rank"], q1a["found"]) == ("A", 1, True)
    assert q1a["answer"] == "one" and q1a["unitxt.faithfulness"] == 1.0
    assert "answer" not in q1b
    q3 = [r for r in rows if r["question_id"] == "q3"]
    assert [r["found"] for r in q3] == [False, False]


def test_top_is_written_when_the_report_keeps_it():
    report = retrieval_report()
    report["questions"][2]["top"] = {"A": [{"document": "b.pdf", "page": 2, "chunk_id": "c1", "score": 0.91,
                                            "relevant": False}], "B": []}
    row = [r for r in question_rows(report) if r["question_id"] == "q3" and r["setup"] == "A"][0]
    assert row["top"] == "b.pdf#page=2 (0.910)"
    # a chunk across a page break names its first and last page
    report["questions"][2]["top"]["A"].append({"document": "b.pdf", "page": 7, "pages": [7, 8], "chunk_id": "c2",
                                               "score": 0.5, "relevant": True})
    row = [r for r in question_rows(report) if r["question_id"] == "q3" and r["setup"] == "A"][0]
    assert row["top"] == "b.pdf#page=2 (0.910); b.pdf#page=7-8 (0.500, relevant)"


def test_dataframe_has_the_same_values():
    df = to_dataframe(retrieval_report())
    assert list(df["setup"]) == ["A", "A", "B", "B"]
    assert df.loc[2, "mrr"] == pytest.approx((1 / 2 + 1) / 4)  # B: q1 at 2, q4 at 1
    per_q = to_dataframe(retrieval_report(), per_question=True)
    assert per_q.shape[0] == 8 and int(per_q["found"].sum()) == 5  # A finds 3, B finds 2


def test_experiment_rows_per_configuration():
    df = to_dataframe(experiment_report())
    assert list(df["trial"]) == [1, 0, 2] and list(df["chunk_size"]) == [256, 128, 512]
    assert df.loc[2, "status"] == "failed"
    assert df["round"].isna().all() and df["tokens"].isna().all()  # an older report: not recorded
    report = experiment_report()
    report["leaderboard"][0].update(round=2, cost={"texts_embedded": 40, "texts_from_cache": 3, "tokens": None})
    first = to_dataframe(report).iloc[0]
    assert (first["round"], first["texts_embedded"], first["texts_from_cache"]) == (2, 40, 3)
    assert first["tokens"] is None or first["tokens"] != first["tokens"]  # unknown: None (NaN in pandas)
    with pytest.raises(ConfigError, match="per-question"):
        to_csv(experiment_report(), per_question=True)


def test_experiment_rows_say_which_scores_are_over_a_subset_of_the_questions():
    """With rungs a CSV reader sorting by score must see that a score is over 16 questions."""
    report = experiment_report()
    report["leaderboard"][0].update(n_questions=4, fully_evaluated=True, fidelity={"verdict": "complete"})
    report["leaderboard"][1].update(n_questions=2, fully_evaluated=False, fidelity={"verdict": "stop"})
    table = list(csv.DictReader(io.StringIO(to_csv(report))))
    assert [(r["trial"], r["n_questions"], r["fully_evaluated"], r["verdict"]) for r in table] == [
        ("1", "4", "True", "complete"), ("0", "2", "False", "stop"), ("2", "", "", "")]


def test_unknown_report_is_a_clear_error():
    with pytest.raises(ConfigError, match="not a ragtune report"):
        to_csv({"hello": 1})


def test_reports_written_before_found_at_k_read_as_found(tmp_path):
    """A stored report whose means say ``success@k`` (the name before found@k) loads with
    ``found@k`` keys, at any depth, and its other keys unchanged."""
    import json

    from core.reports import LocalFiles
    from core.reports.store import ReportStore

    report = retrieval_report()
    old = json.loads(json.dumps(report).replace('"found@', '"success@'))
    (tmp_path / "retrieval" / "runs" / "r1").mkdir(parents=True)
    (tmp_path / "retrieval" / "runs" / "r1" / "report.json").write_text(json.dumps(old))
    assert ReportStore(LocalFiles(tmp_path)).load_run("r1") == report
