"""The answer cut-off's statistics, against scikit-learn's roc_auc_score and by hand, and the
unanswerable file's checks."""

from __future__ import annotations

import json

import numpy as np
import pytest

from core.errors import ConfigError, GoldenError
from core.evaluation.cutoff import best_cutoff, read_unanswerable, separation


def test_separation_by_hand():
    # answers 0.9, 0.5; near misses 0.4, 0.5: pairs (0.9>0.4, 0.9>0.5, 0.5>0.4, 0.5=0.5 half) = 3.5 / 4
    assert separation([0.9, 0.5], [0.4, 0.5]) == pytest.approx(0.875)
    assert separation([1.0], [2.0]) == 0.0
    with pytest.raises(ConfigError):
        separation([], [1.0])


def test_separation_matches_sklearn_roc_auc():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(7)
    pos = np.round(rng.normal(0.6, 0.1, 80), 2)  # rounded, so there are ties
    neg = np.round(rng.normal(0.5, 0.1, 120), 2)
    expected = roc_auc_score(np.r_[np.ones(80), np.zeros(120)], np.r_[pos, neg])
    assert separation(pos, neg) == pytest.approx(expected, abs=1e-12)


def test_best_cutoff_by_hand():
    answers = [0.9, 0.8, 0.7, 0.6, 0.3]
    misses = [0.65, 0.5, 0.4, 0.2, 0.1]
    # t = 0.6 keeps 4/5 answers and declines 4/5 near misses (0.5, 0.4, 0.2, 0.1): sum 1.6;
    # t = 0.7 keeps 3/5 and declines 5/5: sum 1.6 as well; the lower value wins the tie;
    # no value reaches more (t = 0.3: 5/5 + 2/5 = 1.4; t = 0.8: 2/5 + 5/5 = 1.4)
    found = best_cutoff(answers, misses)
    cut = found["cutoff"]
    assert cut["value"] == 0.6 and cut["answers_kept"] == 4 and cut["near_misses_declined"] == 4
    assert cut["sum_of_shares"] == pytest.approx(1.6)
    values = [r["value"] for r in found["trade"]]
    assert values == sorted(values) and 0.6 in values and len(values) <= 21
    assert found["separation"] == pytest.approx(separation(answers, misses))


def test_unanswerable_file_with_labelled_questions_is_refused(tmp_path):
    path = tmp_path / "u.jsonl"
    path.write_text("\n".join([
        json.dumps({"id": "u1", "question": "Who won in 2090?"}),
        json.dumps({"id": "g1", "question": "What is covered?", "expected": ["plan.pdf"]}),
        "",
        json.dumps({"question": "And this?", "expected": []}),
        json.dumps({"id": "g2", "question": "Another?", "expected": ["a.txt"]}),
    ]) + "\n", encoding="utf-8")
    with pytest.raises(GoldenError, match=r"2 labelled questions, 2 problems: .*u.jsonl:2: error: field 'expected': holds a labelled question") as exc:
        read_unanswerable(path)
    assert [p.line for p in exc.value.problems] == [2, 5]
    path.write_text(json.dumps({"id": "u1", "question": "Who won in 2090?"}) + "\n" +
                    json.dumps({"question": "And this?", "expected": []}) + "\n", encoding="utf-8")
    assert read_unanswerable(path) == [("u1", "Who won in 2090?", 1), ("line-2", "And this?", 2)]


def test_bundled_unanswerable_file_reads(squad_dir):
    rows = read_unanswerable(squad_dir / "unanswerable.jsonl")
    assert len(rows) == 333


def test_unanswerable_file_gets_the_golden_line_checks(tmp_path):
    # each line below breaks one rule the golden reader checks; line 8 is the only good one
    lines = [
        r'{"id": "s\ud800", "question": "Who won the 1998 world cup?"}',
        r'{"id": "s2", "question": "What is \udfff the capital of Australia?"}',
        '{"id": "s3", "question": "How many moons does Jupiter have?", "expeted": ["coffee.md"]}',
        '{"id": "s4", "question": "NaN?", "reference": NaN}',
        '{"id": "s5", "question": "Who wrote War and Peace?"}',
        '{"id": "s5", "question": "When was the printing press invented?"}',
        '{"id": "g1", "question": "Also in the golden file?"}',
        '{"id": "s8", "question": "Is this one fine?", "expected": []}',
    ]
    path = tmp_path / "u.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(GoldenError) as exc:
        read_unanswerable(path, {"g1": 3})
    where = [(p.line, p.field) for p in exc.value.problems]
    assert where == [(1, "id"), (2, "question"), (3, "expeted"), (4, None), (6, "id"), (7, "id")]
    by_line = {p.line: p.message for p in exc.value.problems}
    assert "did you mean 'expected'?" in by_line[3] and "NaN" in by_line[4]
    assert by_line[6] == "duplicate id 's5': lines 5 and 6"
    assert by_line[7] == "duplicate id 'g1': also on line 3 of the golden file"
    assert f"{path}:3: error: field 'expeted': unknown field" in str(exc.value)
    path.write_text(lines[4] + "\n" + lines[7] + "\n", encoding="utf-8")
    assert read_unanswerable(path, {"g1": 3}) == [("s5", "Who wrote War and Peace?", 1), ("s8", "Is this one fine?", 2)]


def test_drafted_unanswerable_questions_are_read_and_wait_for_a_person(tmp_path):
    """The rows ``ragtune draft`` writes to ``<output>.unanswerable.jsonl``: no 'expected', a
    reference, a hint and metadata; asked once 'draft' is removed."""
    from core.evaluation.cutoff import read_unanswerable_file

    drafted = {"id": "draft-004", "question": "Who funded the Normans' ships in 2030?",
               "reference": "The documents do not answer this question.",
               "hint": "written near Normans_p00.txt; check that no document answers it, then remove 'draft'",
               "draft": True, "metadata": {"kind": "unanswerable", "written_near": ["Normans_p00.txt"]}}
    path = tmp_path / "d.unanswerable.jsonl"
    path.write_text(json.dumps(drafted) + "\n", encoding="utf-8")
    with pytest.raises(GoldenError, match="holds no question ready: 1 unchecked draft; check that no document "
                                          "answers each, then remove its 'draft'"):
        read_unanswerable_file(path)
    checked = {k: v for k, v in drafted.items() if k != "draft"}
    path.write_text(json.dumps(checked) + "\n" + json.dumps(dict(drafted, id="draft-005", question="And?")) + "\n",
                    encoding="utf-8")
    read = read_unanswerable_file(path)
    assert read.questions == (("draft-004", drafted["question"], 1),) and read.n_drafts == 1
