"""The main job end to end on squad-mini: real documents, the real local embedding model,
real Milvus Lite. Metrics are checked against ir_measures computed on the same retrievals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.evaluation import EvaluateOptions, evaluate_retrieval
from core.models import LocalEmbeddingModel
from tests.support.corpora import first_questions

pytestmark = [pytest.mark.integration, pytest.mark.slow]

N_QUESTIONS = 60


@pytest.fixture(scope="module")
def model():
    return LocalEmbeddingModel()


@pytest.fixture(scope="module")
def squad_subset(squad_dir, tmp_path_factory) -> Path:
    """The first N_QUESTIONS golden lines of squad-mini (every search setup runs on each)."""
    path = first_questions(squad_dir / "golden.jsonl", N_QUESTIONS, tmp_path_factory.mktemp("golden"))
    return path


@pytest.fixture(scope="module")
def run(squad_dir, squad_subset, model, tmp_path_factory):
    out = tmp_path_factory.mktemp("out")
    options = EvaluateOptions(show_progress=False)
    first = evaluate_retrieval(squad_dir / "docs", squad_subset, out_dir=out, embedding_model=model, options=options,
                               reranker=None)
    second = evaluate_retrieval(squad_dir / "docs", squad_subset, out_dir=out, embedding_model=model, options=options,
                                reranker=None)
    return first, second, out


def test_report_counts(run, squad_dir):
    report, _, _ = run
    json.dumps(report, allow_nan=False)  # valid JSON, no NaN
    assert report["corpus"]["n_documents"] == 87
    assert report["corpus"]["skipped"] == []
    assert report["golden"]["n_questions"] == N_QUESTIONS
    from core.chunking import get_chunker
    from core.documents import load_documents

    docs = load_documents(squad_dir / "docs").documents
    assert report["corpus"]["n_chunks"] == len(get_chunker("recursive", 256, 32).chunk(docs))
    assert [s["name"] for s in report["setups"]] == ["keyword", "dense", "hybrid-rrf-k60", "hybrid-weighted-a0.5"]
    assert report["evaluation"]["rank_grain"] == "evidence"  # some squad quotes have 3+ words
    for setup in report["setups"]:
        assert setup["timings_ms"]["n"] == N_QUESTIONS
        assert 0 < setup["timings_ms"]["median"] <= setup["timings_ms"]["p95"]
        page = setup["metrics"]["page"]
        assert page["n_scored"] == 0 and page["n_unscorable"] == N_QUESTIONS and page["means"] == {}


def test_doc_metrics_match_ir_measures(run, squad_dir, squad_subset, model):
    """Reference: ir_measures R@5, RR and nDCG@10 on the chunk ranking each setup returns."""
    import ir_measures
    from ir_measures import RR, R, nDCG

    from core.golden import read_golden
    from core.models import CachedEmbeddingModel, EmbeddingCache
    from core.vectorstores import MilvusLiteConfig, MilvusVectorStore

    report, _, out = run
    golden = read_golden(squad_subset)
    cached = CachedEmbeddingModel(model, EmbeddingCache(out / "cache" / "embeddings.sqlite"))
    store = MilvusVectorStore(cached, MilvusLiteConfig(str(out / "milvus.db")), report["indexing"]["collection"])
    qrels = [ir_measures.Qrel(q.id, d, 1) for q in golden.questions for d in q.document_ids]
    try:
        by_id = {q["id"]: q for q in report["questions"]}
        for setup in report["setups"]:
            run_rows = []
            params = {k: v for k, v in setup["setup"].items() if k in ("search_mode", "ranker_strategy", "ranker_k",
                                                                       "ranker_alpha")}
            for q in golden.questions:
                hits = store.search(q.question, k=10, **params)
                # the report keeps what came back: the same chunks, in the same order
                top = by_id[q.id]["top"][setup["name"]]
                assert [t["chunk_id"] for t in top] == [h.chunk.chunk_id for h in hits]
                assert [t["document"] for t in top] == [h.chunk.document_id for h in hits]
                seen = set()
                for h in hits:
                    # ranks count chunks (what a generator is given); a document is found at the
                    # rank of its first chunk, and later chunks of it find nothing new
                    doc = h.chunk.document_id
                    docno = doc if doc not in seen else f"{doc}#chunk-{h.rank}"
                    seen.add(doc)
                    run_rows.append(ir_measures.ScoredDoc(q.id, docno, 100.0 - h.rank))
            ref = ir_measures.calc_aggregate([R @ 5, RR, nDCG @ 10], qrels, run_rows)
            ours = setup["metrics"]["doc"]["means"]
            assert ours["recall@5"] == pytest.approx(ref[R @ 5], abs=1e-9)
            assert ours["mrr"] == pytest.approx(ref[RR], abs=1e-9)
            assert ours["ndcg@10"] == pytest.approx(ref[nDCG @ 10], abs=1e-9)
            # precision counts chunks, not documents; with one expected document per question
            # it is at most found@5 / 1 and at least found@5 / 5
            assert ours["found@5"] / 5 - 1e-9 <= ours["precision@5"] <= ours["found@5"] + 1e-9
    finally:
        store.client.close()
    vector = report["setups"][0]["metrics"]["doc"]["means"]
    assert vector["recall@5"] >= 0.8  # all-MiniLM-L6-v2 finds most SQuAD paragraphs


def test_first_ranks_agree_with_success(run):
    report, _, _ = run
    grain = report["evaluation"]["rank_grain"]
    for setup in report["setups"]:
        ranks = [q["first_relevant_rank"][setup["name"]] for q in report["questions"]]
        n = setup["metrics"][grain]["n_scored"]
        assert setup["found_top10"] == sum(1 for r in ranks if r is not None and r <= 10)
        assert setup["found_first"] == sum(1 for r in ranks if r == 1)
        assert setup["metrics"][grain]["means"]["found@10"] == pytest.approx(setup["found_top10"] / n)
        # the top 10 marks as right exactly the ranks from the first right one on that hit
        for q, r in zip(report["questions"], ranks):
            flags = [t["relevant"] for t in q["top"][setup["name"]]]
            assert len(flags) <= 10
            assert (flags.index(True) + 1 if True in flags else None) == r


def test_second_run_reuses_the_collection_and_embeds_nothing(run):
    first, second, _ = run
    assert first["indexing"]["reused"] is False
    assert first["indexing"]["embedding"]["n_embedded"] == first["corpus"]["n_chunks"]
    assert second["indexing"]["reused"] is True
    assert second["indexing"]["embedding"]["n_embedded"] == 0
    assert second["indexing"]["collection"] == first["indexing"]["collection"]
    for a, b in zip(first["setups"], second["setups"]):
        assert a["metrics"] == b["metrics"]
