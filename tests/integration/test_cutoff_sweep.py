"""cutoff and sweep end to end on a small hand-made corpus: real local embedding model, real
Milvus Lite."""

from __future__ import annotations

import json

import pytest

from core.cli import main
from core.evaluation.cutoff import answer_cutoff
from core.evaluation.sweep import format_sweep, run_sweep
from core.models import LocalEmbeddingModel
from tests.support.corpora import write_topic_corpus

pytestmark = [pytest.mark.integration, pytest.mark.slow]

UNANSWERABLE = ["Who won the football cup in 1954?", "What is the boiling point of mercury?",
                "Which planet has the most moons?", "How tall is the Eiffel tower?",
                "Who wrote the Odyssey?", "What is the capital of Mongolia?"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpus")
    docs, golden = write_topic_corpus(root)
    unanswerable = root / "unanswerable.jsonl"
    unanswerable.write_text("".join(json.dumps({"id": f"u{i}", "question": q}) + "\n"
                                    for i, q in enumerate(UNANSWERABLE)), encoding="utf-8")
    return docs, golden, unanswerable


@pytest.fixture(scope="module")
def model():
    return LocalEmbeddingModel()


def test_cutoff_separates_answers_from_off_topic_questions(corpus, model, tmp_path):
    docs, golden, unanswerable = corpus
    report = answer_cutoff(docs, golden, unanswerable, out_dir=tmp_path, embedding_model=model)
    # each labelled question's top result is its own document (one document per topic), and
    # the off-topic questions share no words with the corpus: 6 answers, 6 near misses, and
    # every answer outscores every near miss
    assert report["counts"] == {"answers": 6, "near_misses": 6, "near_misses_labelled": 0, "no_result": 0}
    assert report["separation"] == 1.0
    cut = report["cutoff"]
    assert cut["answers_kept"] == 6 and cut["near_misses_declined"] == 6
    answer_scores = [q["score"] for q in report["questions"] if q["outcome"] == "answer"]
    assert cut["value"] == min(answer_scores)
    assert report["setup"]["search"] == "vector" and report["setup"]["measure"] == "similarity"


def test_cutoff_with_too_few_says_why(corpus, model, tmp_path):
    docs, golden, _ = corpus
    few = tmp_path / "few.jsonl"
    few.write_text(json.dumps({"question": UNANSWERABLE[0]}) + "\n", encoding="utf-8")
    report = answer_cutoff(docs, golden, few, out_dir=tmp_path, embedding_model=model)
    assert report["cutoff"] is None
    assert report["reason"] == "only 1 near misses (fewer than 5): no cut-off can be trusted"


def test_cutoff_cli_refuses_a_labelled_unanswerable_file(corpus, tmp_path, capsys):
    docs, golden, _ = corpus
    code = main(["cutoff", "--docs", str(docs), "--golden", str(golden), "--unanswerable", str(golden),
                 "--out", str(tmp_path)])
    assert code == 1
    assert "is not a file of unanswerable questions: 6 labelled questions" in capsys.readouterr().err


def test_sweep_ranks_by_ndcg_and_lists_left_out_overlaps(corpus, model, tmp_path):
    from core.vectorstores import SearchSetup

    docs, golden, _ = corpus
    report = run_sweep(docs, golden, out_dir=tmp_path, methods=["recursive", "sentence"], sizes=[16, 32],
                       overlaps=[0, 16], embed_headings=[False, True], setups=[SearchSetup("vector")],
                       embedding_model=model)
    keys = [(r["build"], r["search"]) for r in report["rows"]]
    # recursive: 16/0, 32/0, 32/16 (16/16 left out); sentence: 16, 32; each x headings yes/no
    assert len(report["builds"]) == 10 and len(keys) == 10
    assert report["left_out"] == [{"method": "recursive", "chunk_size": 16, "chunk_overlap": 16,
                                   "reason": "overlap 16 is not smaller than the size 16"}]
    # txt documents have no headings: the headings builds are twins of the plain ones (5);
    # every document is under 128 characters, so at size 32 (128 characters) recursive 32/0,
    # 32/16 and sentence 32 all make one chunk per document: two more twins
    assert sum(1 for b in report["builds"] if b.get("same_as")) == 7
    ranked = [(-(r["ndcg@10"]), -(r["mrr"]), r["median_ms"]) for r in report["rows"]]
    assert ranked == sorted(ranked) and [r["rank"] for r in report["rows"]] == list(range(1, 11))
    md = format_sweep(report, markdown=True)
    assert "| rank | chunking | size | overlap | headings | search | ndcg@10 |" in md
    assert md.count("\n| ") == 11  # header and ten rows


def test_cli_sweep_compare_and_cutoff_write_their_reports(corpus, tmp_path, capsys):
    docs, golden, unanswerable = corpus
    base = ["--docs", str(docs), "--golden", str(golden), "--out", str(tmp_path), "--json"]
    assert main(["sweep", *base, "--chunking", "sentence", "--chunk-size", "16", "--search", "vector,hybrid-rrf"]) == 0
    sweep = json.loads(capsys.readouterr().out)
    assert [r["search"] for r in sweep["rows"]] and {r["search"] for r in sweep["rows"]} == {"vector", "hybrid-rrf-k60"}
    assert (tmp_path / "sweep" / "runs" / sweep["run_id"] / "report.json").is_file()
    assert main(["compare-chunking", *base, "--techniques", "sentence", "--sizes", "16", "--budget", "400"]) == 0
    cmp = json.loads(capsys.readouterr().out)
    run = tmp_path / "chunking" / "runs" / cmp["run_id"]
    assert (run / "report.json").is_file() and (run / "questions.json").is_file()
    assert cmp["techniques"][0]["counted"] == 6
    assert main(["cutoff", *base, "--unanswerable", str(unanswerable)]) == 0
    cut = json.loads(capsys.readouterr().out)
    assert cut["separation"] == 1.0 and (tmp_path / "cutoff" / "runs" / cut["run_id"] / "report.json").is_file()
    assert main(["sweep", *base[:-1], "--search", "nearest"]) == 1
    assert "unknown search setup 'nearest'" in capsys.readouterr().err


def test_cutoff_on_relevance_scores_the_top_result_with_the_reranker(corpus, model, tmp_path):
    """``--measure relevance``: each question's top result is scored by a rerank endpoint (the
    scripted server over HTTP, whose word-overlap score the test computes too)."""
    from core.models.rerank import HttpReranker
    from tests.support.rerank_server import RerankTestServer, overlap_score

    docs, golden, unanswerable = corpus
    with RerankTestServer() as server:
        reranker = HttpReranker("overlap", base_url=server.base_url, max_attempts=1)
        report = answer_cutoff(docs, golden, unanswerable, out_dir=tmp_path, embedding_model=model,
                               measure="relevance", reranker=reranker)
        # one request per question, for its top result alone
        assert len(server.requests) == len(report["questions"]) and {len(r["documents"]) for r in server.requests} == {1}
        expected = [overlap_score(r["query"], r["documents"][0]) for r in server.requests]
    assert report["setup"]["measure"] == "relevance" and report["setup"]["reranker"] == reranker.model_id
    assert [q["score"] for q in report["questions"]] == pytest.approx(expected)  # in the order asked


def test_cutoff_on_relevance_without_a_reranker_is_refused(corpus, model, tmp_path):
    from core.errors import ConfigError

    docs, golden, unanswerable = corpus
    with pytest.raises(ConfigError, match="needs a reranker"):
        answer_cutoff(docs, golden, unanswerable, out_dir=tmp_path, embedding_model=model, measure="relevance")
