"""compare-chunking end to end on a small corpus: real documents, the real local embedding
model, real Milvus Lite. Expected counts are worked out by hand from the corpus below."""

from __future__ import annotations

import json

import pytest

from core.cli import main
from core.evaluation.chunking import CompareOptions, compare_chunking, save_comparison
from core.models import LocalEmbeddingModel
from tests.support.corpora import write_topic_corpus

pytestmark = [pytest.mark.integration, pytest.mark.slow]

@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write_topic_corpus(tmp_path_factory.mktemp("corpus"))


@pytest.fixture(scope="module")
def model():
    return LocalEmbeddingModel()


def test_every_question_found_when_the_budget_holds_the_corpus(corpus, model, tmp_path):
    docs, golden = corpus
    # every document is under 100 characters, so a 400-character budget hands over the whole
    # corpus to every question: each technique finds all 6, and all tie
    report, questions = compare_chunking(docs, golden, out_dir=tmp_path, embedding_model=model, options=CompareOptions(
        methods=["recursive", "sentence", "fixed"], sizes=[16], budget_chars=400, current="fixed-16-2-plain"))
    assert {t["method"]: t["counted"] for t in report["techniques"]} == {"recursive": 6, "sentence": 6, "fixed": 6}
    assert sorted(report["ties"]) == ["fixed", "recursive", "sentence"]
    # so no technique wins: the best is kept, flagged, and the report says so (at the evidence grain)
    assert report["best"]["tied_with_all"] is True
    assert report["undecided"]["message"].startswith("these questions cannot tell the chunking techniques apart: "
                                                     "add more questions")
    assert report["current"]["decision"] == "stay"
    assert set(questions["builds"]) == {b["key"] for b in report["builds"]}
    assert all(v is True for per_q in questions["builds"].values() for v in per_q.values())
    # txt files have no headings: the headings build is the plain one's twin, not built again
    twins = [b for b in report["builds"] if b.get("same_as")]
    assert len(twins) == 3 and all(b["embed_s"] == 0.0 for b in twins)
    key = save_comparison(tmp_path, report, questions, run_id="r1")
    assert key == "chunking/runs/r1/report.json"
    stored = json.loads((tmp_path / key).read_text())
    per_question = json.loads((tmp_path / "chunking/runs/r1/questions.json").read_text())
    assert per_question["builds"]["fixed-16-2-plain"] == {f"q{i}": True for i in range(1, 7)}
    assert stored["techniques"] == report["techniques"] and "builds" not in stored["techniques"][0]


def test_a_sentence_sized_budget_hands_over_one_sentence(corpus, model, tmp_path):
    docs, golden = corpus
    # sentence chunks of at most 64 characters: each sentence of the corpus on its own (the
    # shortest is 38 characters); a 60-character budget hands over only the one best
    # sentence, so a question is found only when its own sentence ranks first. The lexical
    # overlap of each question with its sentence makes that so for every question here.
    report, questions = compare_chunking(docs, golden, out_dir=tmp_path, embedding_model=model, options=CompareOptions(
        methods=["sentence"], sizes=[16], budget_chars=60, embed_headings=(False,)))
    build = report["builds"][0]
    assert build["n_chunks"] == 6 and build["mean_handed_chars"] <= 60
    assert build["counted"] == 6
    assert report["best"]["tied_with_all"] is False and report["undecided"] is None  # one technique: no contest


def test_cli_reports_a_document_a_technique_cannot_cut_and_goes_on(corpus, tmp_path, capsys):
    docs, golden = corpus
    code = main(["compare-chunking", "--docs", str(docs), "--golden", str(golden), "--out", str(tmp_path),
                 "--techniques", "recursive,nonsense"])
    assert code == 1
    assert "unknown chunking technique 'nonsense'; known: recursive" in capsys.readouterr().err
    code = main(["compare-chunking", "--docs", str(docs), "--golden", str(golden), "--out", str(tmp_path),
                 "--techniques", "sentence", "--sizes", "16", "--budget", "3"])
    assert code == 1
    assert "budget of 3 characters is below the smallest chunk of sentence-16-headings" in capsys.readouterr().err
    code = main(["compare-chunking", "--docs", str(docs), "--golden", str(golden), "--out", str(tmp_path),
                 "--techniques", "sentence", "--sizes", "16", "--current", "sentence-99-plain"])
    assert code == 1
    assert ("--current 'sentence-99-plain' is not one of the builds compared: sentence-16-headings, sentence-16-plain"
            in capsys.readouterr().err)


def test_a_document_that_cannot_be_cut_is_reported_and_the_others_go_on(corpus, model, tmp_path):
    docs, golden = corpus

    class Picky:
        """Names topic starts for every document but the travel one."""
        model_id = "picky"

        def chat(self, messages, **kw):
            return "I cannot tell" if "portal" in messages[-1]["content"] else "1"

    report, _ = compare_chunking(docs, golden, out_dir=tmp_path, embedding_model=model, options=CompareOptions(
        methods=["llm"], sizes=[64], budget_chars=400, embed_headings=(False,), chunking_chat_model=Picky()))
    assert [(f["build"], f["document_id"]) for f in report["failures"]] == [("llm-64-plain", "travel.txt")]
    assert "names no sentence" in report["failures"][0]["reason"]
    t = report["techniques"][0]
    assert t["counted"] == 4 and t["n_scored"] == 6  # the travel questions cannot be found


def test_answered_is_counted_with_a_chat_model_and_a_judge(corpus, model, tmp_path):
    from core.models.chat import OpenAIChatModel
    from tests.support.openai_app import OpenAITestApp, last_user_text

    def respond(body):
        text = last_user_text(body)
        if text.startswith("Judge whether the ANSWER"):
            answer = text.split("[ANSWER]")[-1]
            return "1" if "eighty percent" in answer else "0"
        # the answerer: right for the check-up question (q1) only
        return "eighty percent" if "check-ups" in text.split("Question:")[-1] else "I do not know."

    with OpenAITestApp(respond) as app:
        chat = OpenAIChatModel("answerer", base_url=app.base_url, api_key="test")
        judge = OpenAIChatModel("judge", base_url=app.base_url, api_key="test")
        report, questions = compare_chunking(corpus[0], corpus[1], out_dir=tmp_path, embedding_model=model,
                                             options=CompareOptions(methods=["sentence"], sizes=[16], budget_chars=400,
                                                                    embed_headings=(False,), chat_model=chat, judge=judge))
        n_chat = len(app.chat_requests)
    assert report["settings"]["counting"] == "answered"
    assert questions["builds"]["sentence-16-plain"] == {"q1": True, "q2": False, "q3": False, "q4": False,
                                                         "q5": False, "q6": False}
    assert report["techniques"][0]["counted"] == 1
    assert n_chat == 12  # one answer and one judgement per question


def test_a_document_that_cannot_be_indexed_is_reported_and_the_others_go_on(corpus, model, tmp_path):
    from core.vectorstores.milvus import MAX_TEXT_BYTES

    docs, golden = corpus
    mixed = tmp_path / "docs"
    mixed.mkdir()
    for f in docs.iterdir():
        (mixed / f.name).write_bytes(f.read_bytes())
    # 80,000 characters without a space at 20,000 tokens (80,000 characters) a chunk: one
    # chunk of 80,000 bytes, more than Milvus's text field holds
    (mixed / "wall.txt").write_text("w" * 80_000)
    assert 80_000 > MAX_TEXT_BYTES
    report, _ = compare_chunking(mixed, golden, out_dir=tmp_path / "out", embedding_model=model,
                                 options=CompareOptions(methods=["sentence"], sizes=[20_000], budget_chars=100_000,
                                                        embed_headings=(False,)))
    assert [(f["build"], f["document_id"]) for f in report["failures"]] == [("sentence-20000-plain", "wall.txt")]
    assert report["failures"][0]["reason"].startswith("not indexed: chunk 0 of wall.txt has more than 65535 bytes")
    assert report["builds"][0]["counted"] == 6  # the corpus's six questions are still found
