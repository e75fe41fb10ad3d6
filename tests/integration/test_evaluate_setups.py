"""Every setup of ``evaluate`` on a small real corpus: the local bge model, the local
cross-encoder, a rerank endpoint that fails, Milvus Lite; picks that hold across reruns."""

from __future__ import annotations

import json
import shutil
import socket

import pytest

from core.evaluation import EvaluateOptions, evaluate_retrieval
from core.models.rerank import HttpReranker

pytestmark = [pytest.mark.integration, pytest.mark.slow]

N_DOCS = 6


@pytest.fixture(scope="module")
def corpus(squad_dir, tmp_path_factory):
    """The first N_DOCS squad-mini paragraphs and the questions about them."""
    root = tmp_path_factory.mktemp("corpus")
    docs = root / "docs"
    docs.mkdir()
    names = sorted(p.name for p in (squad_dir / "docs").iterdir())[:N_DOCS]
    for name in names:
        shutil.copy(squad_dir / "docs" / name, docs / name)
    rows = [json.loads(line) for line in (squad_dir / "golden.jsonl").read_text(encoding="utf-8").splitlines()]
    rows = [r for r in rows if set(r["expected"]) <= set(names)][:12]
    golden = root / "golden.jsonl"
    golden.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return docs, golden, len(rows)


def _down_endpoint() -> HttpReranker:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return HttpReranker("m", base_url=f"http://127.0.0.1:{port}/v1", max_attempts=1)


def test_a_reranker_endpoint_that_is_down_fails_its_setups_only(corpus, tmp_path):
    docs, golden, n = corpus
    options = EvaluateOptions(show_progress=False, only=["keyword*", "dense*"])
    report = evaluate_retrieval(docs, golden, out_dir=tmp_path, options=options, reranker=_down_endpoint())
    by = {s["key"]: s for s in report["setups"]}
    assert list(by) == ["keyword", "keyword+rerank", "dense", "dense+rerank"]
    for key in ("keyword+rerank", "dense+rerank"):
        assert by[key]["status"] == "failed" and "unreachable" in by[key]["error"]
    for key in ("keyword", "dense"):
        assert by[key]["status"] == "ok" and by[key]["metrics"]["doc"]["n_scored"] == n
    assert report["picks"]["finds_the_most"] in ("keyword", "dense")
    json.dumps(report, allow_nan=False)


def test_local_reranker_setups_timings_and_top(corpus, tmp_path):
    docs, golden, n = corpus
    options = EvaluateOptions(show_progress=False, only=["dense", "dense+rerank", "keyword"])
    report = evaluate_retrieval(docs, golden, out_dir=tmp_path, options=options)  # the default: local reranker
    by = {s["key"]: s for s in report["setups"]}
    assert list(by) == ["keyword", "dense", "dense+rerank"]
    assert report["indexing"]["embedding_model"] == "local:bge-small-en-v1.5"
    assert by["dense+rerank"]["setup"] == {"search_mode": "vector", "embedding_model": "local:bge-small-en-v1.5",
                                           "reranker": "local:ms-marco-MiniLM-L-12-v2", "retrieval_depth": 20}
    t = by["dense+rerank"]["timings_ms"]
    assert t["n"] == n and t["rerank"]["median"] > 0 and t["query_embedding"]["median"] > 0
    # the time a user waits holds every part (medians of sums >= sum of no part's median alone)
    assert t["total"]["median"] >= max(t["search"]["median"], t["rerank"]["median"])
    assert by["keyword"]["timings_ms"]["query_embedding"] is None  # keyword search embeds nothing
    for q in report["questions"]:
        for key in by:
            top = q["top"][key]
            assert 1 <= len(top) <= 10
            assert set(top[0]) == {"document", "page", "pages", "chunk_id", "score", "relevant"}
            assert all(isinstance(t["relevant"], bool) for t in top)
            scores = [t["score"] for t in top]
            assert scores == sorted(scores, reverse=True)
            if key == "dense":  # a relevant flag is exactly a chunk of an expected document (doc grain)
                assert [t["relevant"] for t in top] == [t["document"] in q["expected"] for t in top]
    for key, s in by.items():
        agg = s["metrics"]["doc"]
        for name, mean in agg["means"].items():
            assert agg["ci_low"][name] <= mean <= agg["ci_high"][name]
        assert isinstance(s["tied_with_best"], bool)


def test_three_identical_reruns_give_the_same_picks(corpus, tmp_path):
    docs, golden, _ = corpus
    options = EvaluateOptions(show_progress=False)
    picks = []
    for _ in range(3):
        report = evaluate_retrieval(docs, golden, out_dir=tmp_path, options=options, reranker=None)
        p = report["picks"]
        picks.append((p["finds_the_most"], p["best_for_balance"], p["best_for_time"]))
        intervals = [(s["key"], s["metrics"]["doc"]["ci_low"], s["metrics"]["doc"]["ci_high"]) for s in report["setups"]]
        if len(picks) > 1:
            assert intervals == last  # noqa: F821 (a fixed seed: the same intervals)
        last = intervals  # noqa: F841
    assert picks[0] == picks[1] == picks[2], picks
    assert None not in picks[0]


def test_a_page_label_on_a_document_that_did_not_load_ranks_by_documents(corpus, tmp_path):
    docs, golden, _ = corpus
    rows = [json.loads(line) for line in golden.read_text(encoding="utf-8").splitlines()]
    broken = tmp_path / "docs"
    shutil.copytree(docs, broken)
    (broken / "broken.pdf").write_bytes(b"%PDF-1.4 this is not a PDF")
    rows.append({"id": "paged", "question": "What is on page 2?", "expected": ["broken.pdf#page=2"]})
    paged = tmp_path / "golden.jsonl"
    paged.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    options = EvaluateOptions(show_progress=False, only=["keyword", "dense"])
    report = evaluate_retrieval(broken, paged, out_dir=tmp_path / "out", options=options, reranker=None)
    assert report["corpus"]["skipped"][0]["document_id"] == "broken.pdf"
    assert report["evaluation"]["rank_grain"] in ("doc", "evidence")
    assert "loaded" in report["evaluation"]["rank_grain_reason"]
    assert report["picks"]["finds_the_most"] is not None


def test_rerank_scores_are_cached_and_the_answers_reuse_the_reranked_results(corpus, tmp_path):
    docs, golden, n = corpus
    options = EvaluateOptions(show_progress=False, only=["dense+rerank", "keyword+rerank"], generate=True)
    said: list[str] = []
    first = evaluate_retrieval(docs, golden, out_dir=tmp_path, options=options, on_status=said.append)
    cache = first["reranker"]["cache"]
    # every distinct (question, chunk) pair of both setups scored once, nothing asked again
    # afterwards (the answers did not rerank): with both setups reranking every chunk there is,
    # scoring per setup would have asked twice as many
    assert cache["pairs"] == cache["pairs_scored"] and cache["pairs_from_cache"] == 0
    assert 0 < cache["pairs"] <= n * first["corpus"]["n_chunks"]
    estimate = [line for line in said if "passage pairs to score" in line]
    assert len(estimate) == 1 and "2 reranked setups (keyword+rerank, dense+rerank) on 12 questions" in estimate[0]
    assert estimate[0].endswith("; --skip '*+rerank' to leave them out")
    # the answers come from the answer setup's reranked top 5, as ranked in the evaluation
    key = first["answers"]["generator"]["setup"]
    assert key == first["picks"]["finds_the_most"] and key.endswith("+rerank")
    top = {q["id"]: q["top"][key] for q in first["questions"]}
    for record in first["answers"]["questions"]:
        assert [c["document_id"] for c in record["contexts"]] == [t["document"] for t in top[record["question_id"]][:5]]

    # a second run over the same output folder scores nothing and reports the same numbers
    # (the rerank times are those measured when the pairs were scored, so the picks hold)
    said.clear()
    again = evaluate_retrieval(docs, golden, out_dir=tmp_path, options=options, on_status=said.append)
    assert again["reranker"]["cache"] == {**cache, "pairs_scored": 0, "pairs_from_cache": cache["pairs"],
                                          "score_seconds": 0.0}
    assert any("every one from the cache" in line for line in said)
    for a, b in zip(first["setups"], again["setups"]):
        assert (a["key"], a["metrics"], a["timings_ms"]["rerank"]) == (b["key"], b["metrics"], b["timings_ms"]["rerank"])
    assert [q["top"] for q in first["questions"]] == [q["top"] for q in again["questions"]]
    assert first["picks"]["ranking"] == again["picks"]["ranking"]
    assert first["answers"]["questions"] == again["answers"]["questions"]


def test_a_reranked_setup_whose_search_finds_every_question_first_is_not_run(corpus, tmp_path):
    from core.evaluation.retrieval import SETTLED_RULE

    docs, golden, _ = corpus
    options = EvaluateOptions(show_progress=False, only=["dense"], rank_grain="doc")
    plain = evaluate_retrieval(docs, golden, out_dir=tmp_path, options=options, reranker=None)
    # the questions dense finds first at the doc grain, as a golden file of their own
    first = {q["id"] for q in plain["questions"] if q["first_relevant_rank"]["dense"] == 1}
    assert first, "dense finds no question first on this corpus"
    rows = [json.loads(line) for line in golden.read_text(encoding="utf-8").splitlines()]
    settled = tmp_path / "settled.jsonl"
    settled.write_text("".join(json.dumps(r) + "\n" for r in rows if r["id"] in first), encoding="utf-8")

    said: list[str] = []
    options = EvaluateOptions(show_progress=False, only=["dense*"], rank_grain="doc")
    report = evaluate_retrieval(docs, settled, out_dir=tmp_path, options=options, on_status=said.append)
    skipped = {s["key"]: s for s in report["skipped_setups"]}
    assert skipped["dense+rerank"]["rule"] == SETTLED_RULE
    assert skipped["dense+rerank"]["reason"].startswith(
        f"dense already finds a right result at rank 1 for all {len(first)} questions scored at the doc grain")
    assert any(line.startswith("dense+rerank not run: ") for line in said)
    # marked skipped, never scored: no numbers, no place in the ranking, no pairs scored
    assert [s["key"] for s in report["setups"]] == ["dense"]
    assert report["picks"]["ranking"] == ["dense"] and report["picks"]["finds_the_most"] == "dense"
    assert all(set(q["top"]) == {"dense"} for q in report["questions"])
    assert report["reranker"]["cache"]["pairs"] == 0
    # without its twin in the run, the reranked setup runs
    options = EvaluateOptions(show_progress=False, only=["dense+rerank"], rank_grain="doc")
    alone = evaluate_retrieval(docs, settled, out_dir=tmp_path, options=options)
    assert [(s["key"], s["status"]) for s in alone["setups"]] == [("dense+rerank", "ok")]
    assert alone["skipped_setups"] == []
