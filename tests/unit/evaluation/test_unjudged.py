"""``evaluate --label-unjudged``: the judge (the scripted OpenAI-compatible server over real HTTP)
grades the top results the golden file does not name; judged@k, the holes and the measures with
the labels are computed by hand in the comments."""

from __future__ import annotations

import math
import re

import pytest

from core.chunking.base import Chunk
from core.evaluation.unjudged import format_unjudged, label_unjudged, parse_grade, umbrela_messages
from core.golden import GoldenQuestion, Target
from core.models import CachedChatModel, EmbeddingCache, OpenAIChatModel
from tests.support.openai_app import OpenAITestApp, last_user_text

CHUNKS = [Chunk("the deductible is 500 dollars per year", "c1", {"document_id": "a.pdf", "pages": [2]}),
          Chunk("deductible: see page two", "c2", {"document_id": "a.pdf", "pages": [1]}),
          Chunk("dental plans cover cleanings", "c3", {"document_id": "b.pdf", "pages": [1]}),
          Chunk("vision plans cover glasses", "c4", {"document_id": "b.pdf", "pages": [2]})]


def hit(chunk):
    return {"document": chunk.metadata["document_id"], "page": chunk.pages[0], "pages": chunk.pages,
            "chunk_id": chunk.chunk_id}


def grader(body):
    passage = re.search(r"Passage: (.*)\n", last_user_text(body)).group(1)
    return {"the deductible is 500 dollars per year": "M: 3\nT: 3\n##final score: 3",
            "dental plans cover cleanings": "##final score: 1",
            "vision plans cover glasses": "I am not sure"}[passage]


def test_labels_judged_at_k_holes_and_measures_with_labels(tmp_path):
    q = GoldenQuestion("q", "What is the deductible?", (Target("a.pdf", 1),))
    tops = {"q": {"S1": [hit(CHUNKS[0]), hit(CHUNKS[1]), hit(CHUNKS[2])], "S2": [hit(CHUNKS[2]), hit(CHUNKS[3])]}}
    with OpenAITestApp(grader) as app:
        judge = CachedChatModel(OpenAIChatModel("judge", base_url=app.base_url, max_attempts=1),
                                EmbeddingCache(tmp_path / "c.sqlite"))
        out = label_unjudged([q], tops, CHUNKS, judge)
        assert len(app.chat_requests) == 3  # c1, c3 (in both setups: once), c4; c2 is golden-relevant
        again = label_unjudged([q], tops, CHUNKS, judge)
        assert len(app.chat_requests) == 3  # every label from the cache
    assert again["setups"] == out["setups"]
    assert (out["n_labels"], out["n_relevant"], out["lost"]) == (3, 1, {"unparseable": 1})
    s1, s2 = out["setups"]["S1"], out["setups"]["S2"]
    # S1 with labels: c1 judged relevant at rank 1, the expected page at rank 2; relevant items 2
    assert s1["with_labels"]["means"]["found@1"] == 1.0 and s1["with_labels"]["means"]["mrr"] == 1.0
    assert s1["with_labels"]["means"]["ndcg@10"] == pytest.approx(1.0)  # (1 + 1/log2 3) / (1 + 1/log2 3)
    # golden only: the expected page at rank 2 of one relevant item
    assert s1["golden_only"]["means"]["found@1"] == 0.0 and s1["golden_only"]["means"]["mrr"] == 0.5
    assert s1["golden_only"]["means"]["ndcg@10"] == pytest.approx(1 / math.log2(3))
    # judged@10: three of the top ten labelled with the judge's grades (c1, c2 golden, c3), one golden only
    assert s1["judged@k"]["judged@10"] == pytest.approx(0.3) and s1["golden_judged@k"]["judged@10"] == pytest.approx(0.1)
    assert s1["judged@k"]["judged@1"] == 1.0 and s1["golden_judged@k"]["judged@1"] == 0.0
    assert s1["holes"] == 0
    # S2: c3 graded 1 (not relevant), c4's reply had no grade: a hole; nothing relevant found
    assert s2["holes"] == 1 and s2["judged@k"]["judged@10"] == pytest.approx(0.1)
    assert s2["with_labels"]["means"]["found@10"] == 0.0
    text = format_unjudged(out)
    assert "3 results graded, 1 relevant; 1 lost (1 unparseable)" in text
    assert re.search(r"S1\s+0\.100->0\.300\s+0\s+0\.000->1\.000", text)


def test_grades_are_read_strictly():
    assert parse_grade("M: 2, T: 1\n##final score: 2") == 2
    assert parse_grade("##final score: 3") == 3 and parse_grade("1") == 1
    assert parse_grade("##final score: 4") is None and parse_grade("relevant") is None and parse_grade("") is None
    assert "Query: q?\nPassage: p" in umbrela_messages("q?", "p")[0]["content"]


def test_the_run_page_shows_the_labels_beside_the_golden_only_numbers():
    from core.reports.pages.site import render_run

    unjudged = {"judge": "openai:h/judge", "prompt": "UMBRELA (0-3)", "depth": 10, "relevant_grade": 2, "n_labels": 3,
                "n_relevant": 1, "lost": {"unparseable": 1}, "labels": [], "setups": {"dense": {
                    "judged@k": {"judged@10": 0.3}, "golden_judged@k": {"judged@10": 0.1}, "holes": 1,
                    "golden_only": {"means": {"found@1": 0.0, "found@10": 1.0, "ndcg@10": 0.5, "mrr": 0.5}},
                    "with_labels": {"means": {"found@1": 1.0, "found@10": 1.0, "ndcg@10": 1.0, "mrr": 1.0}}}}}
    report = {"kind": "retrieval", "setups": [], "picks": {}, "evaluation": {"grains": ["doc"], "rank_grain": "doc"},
              "golden": {"path": "g.jsonl", "sha256": "x" * 64, "n_questions": 0}, "questions": [],
              "unjudged": unjudged}
    html = render_run(report)
    assert 'id="unjudged-table"' in html and "0.100 → 0.300" in html and "1 unparseable" in html
