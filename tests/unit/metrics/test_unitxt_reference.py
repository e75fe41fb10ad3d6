"""UnitxtEvaluator against unitxt's own reference path.

The evaluator fetches each metric from unitxt's catalog once per process and runs it on a list
of rows; the reference is what unitxt's documented call gives for the same rows:
``unitxt.eval_utils.evaluate(pd.DataFrame(rows), metric_names=[catalog name])``, a new
pipeline from the catalog each time. Per-question scores must be equal, however often and
from however many threads the evaluator runs.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from core.metrics.answer_scores import AnswerItem
from core.metrics.unitxt_metrics import UNITXT_METRICS, UnitxtEvaluator, _unitxt_row
from core.rag import Context

SQUAD = Path(__file__).resolve().parents[3] / "examples" / "data" / "squad-mini"


def _items() -> list[AnswerItem]:
    """Twelve squad-mini questions with answers of every kind: the reference itself, part of
    it, words of the passage, nothing in common; passages in different orders."""
    rows = [json.loads(line) for line in (SQUAD / "golden.jsonl").read_text(encoding="utf-8").splitlines()[:12]]
    docs = sorted(p.name for p in (SQUAD / "docs").iterdir())
    items = []
    for i, row in enumerate(rows):
        reference, expected = row["reference"], row["expected"]
        contexts = (Context(f"{reference} was noted in the text.", expected[0]), Context("An unrelated passage.", docs[(i + 1) % len(docs)]))
        if i % 3 == 1:
            contexts = contexts[::-1]
        answer = [reference, f"Perhaps {reference}", "I do not know.", " ".join(str(reference).split()[:1])][i % 4]
        items.append(AnswerItem(question_id=str(row.get("id", i)), question=row["question"], reference=reference,
                                expected_documents=tuple(expected), answer=answer, contexts=contexts))
    return items


def _reference(items: list[AnswerItem], metric: str) -> list[float]:
    import pandas as pd
    from unitxt.eval_utils import evaluate

    rows = [_unitxt_row(item, metric)[0] for item in items]
    assert all(r is not None for r in rows)
    results, _ = evaluate(pd.DataFrame(rows), metric_names=[UNITXT_METRICS[metric]], compute_conf_intervals=False)
    return [float(v) for v in results[UNITXT_METRICS[metric]]]


@pytest.fixture(scope="module")
def items():
    return _items()


@pytest.fixture(scope="module")
def reference(items):
    return {metric: _reference(items, metric) for metric in UNITXT_METRICS}


def test_reference_scores_are_not_all_alike(reference):
    # the case tells metrics apart: each has different scores across questions
    for metric, scores in reference.items():
        assert len(set(scores)) > 1, metric


def test_per_question_scores_equal_unitxt_reference_path(items, reference):
    evaluator = UnitxtEvaluator(compute_conf_intervals=False)
    for _ in range(3):  # the cached metric gives the same scores on every call
        out = evaluator.evaluate(items, list(UNITXT_METRICS))
        for metric, scores in out.items():
            assert [s.score for s in scores.per_question] == reference[metric], metric
            assert all(s.status == "scored" for s in scores.per_question)


def test_per_question_scores_from_threads_equal_the_reference(items, reference):
    evaluator = UnitxtEvaluator(compute_conf_intervals=False)
    # each thread scores a different slice, so shared state would mix questions up
    slices = [items[i:] for i in range(6)]
    with ThreadPoolExecutor(max_workers=6) as pool:
        outs = list(pool.map(lambda part: evaluator.evaluate(part, list(UNITXT_METRICS)), slices))
    for start, out in enumerate(outs):
        for metric, scores in out.items():
            assert [s.score for s in scores.per_question] == reference[metric][start:], (metric, start)


def test_rows_met_again_are_not_scored_again_and_keep_their_scores(items, reference, monkeypatch):
    import core.metrics.unitxt_metrics as um

    monkeypatch.setattr(um, "_ROW_SCORES", {})
    real = um._direct_scorer
    sent: list[int] = []

    def counting(pipeline):
        score = real(pipeline)
        sent.append(0)

        def counted(row):
            sent[-1] += 1
            return score(row)
        return counted

    monkeypatch.setattr(um, "_direct_scorer", counting)
    evaluator = UnitxtEvaluator(compute_conf_intervals=False)
    evaluator.evaluate(items[:5], ["answer_correctness"])
    assert sent == [5]
    # 3 rows already scored, 7 new ones (one of them twice): unitxt scores only the 7 new ones
    mixed = items[2:] + [items[7]]
    out = evaluator.evaluate(mixed, ["answer_correctness"])
    assert sent == [5, 7]
    assert [s.score for s in out["answer_correctness"].per_question] == \
        reference["answer_correctness"][2:] + [reference["answer_correctness"][7]]
    evaluator.evaluate(items, ["answer_correctness"])
    assert sent == [5, 7]  # every row known: unitxt is not run


def test_the_three_metrics_are_scored_by_their_own_compute_and_others_by_evaluate(items, reference, monkeypatch):
    import core.metrics.unitxt_metrics as um
    from unitxt.artifact import fetch_artifact

    um._unitxt_evaluate()
    for catalog in UNITXT_METRICS.values():
        assert um._direct_scorer(um._unitxt_metric(catalog)[0]) is not None, catalog
    # a bare metric (no pipeline around it) is not of the shape: its rows would go through evaluate
    bare, _ = fetch_artifact("metrics.token_overlap")
    assert um._direct_scorer(bare) is None
    # with the direct path turned off, evaluate gives the same scores
    monkeypatch.setattr(um, "_ROW_SCORES", {})
    monkeypatch.setattr(um, "_direct_scorer", lambda pipeline: None)
    out = UnitxtEvaluator(compute_conf_intervals=False).evaluate(items, list(UNITXT_METRICS))
    for metric, scores in out.items():
        assert [s.score for s in scores.per_question] == reference[metric], metric


def test_the_normalised_text_memo_changes_no_text_and_is_bounded():
    import unitxt.metrics as unitxt_metrics

    import core.metrics.unitxt_metrics as um

    um._unitxt_evaluate()
    wrapped = unitxt_metrics.normalize_answer
    original = wrapped.__wrapped__
    um._remember_normalized_texts()  # a second call does not wrap the wrapper
    assert unitxt_metrics.normalize_answer is wrapped
    texts = ["The Cat, sat on a mat!", "an  apple\tand THE pear", "", "Théâtre — l'été, 1,234.5",
             "x" * (um.NORMALIZED_MEMO_MAX_CHARS + 1) + " The end."]
    for text in texts * 2:
        assert wrapped(text) == original(text)
    assert wrapped("The Cat, sat on a mat!") == "cat sat on mat"
    assert wrapped.cache_info().maxsize == um.NORMALIZED_MEMO_TEXTS


def test_the_row_memo_is_bounded(items, reference, monkeypatch):
    import core.metrics.unitxt_metrics as um

    monkeypatch.setattr(um, "_ROW_SCORES", {})
    monkeypatch.setattr(um, "ROW_MEMO_SIZE", 4)
    evaluator = UnitxtEvaluator(compute_conf_intervals=False)
    out = evaluator.evaluate(items, ["faithfulness"])
    assert [s.score for s in out["faithfulness"].per_question] == reference["faithfulness"]
    assert len(um._ROW_SCORES[UNITXT_METRICS["faithfulness"]]) == 4
