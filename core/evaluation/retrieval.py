"""Evaluate every search setup on one corpus and golden file: the main job.

Steps: check the golden file (stop on errors) -> load documents -> chunk -> embed (through the
persistent embedding cache) -> index in a vector store (reused when the indexing parameters
match) -> search every question with every search setup, timing each search -> retrieval
metrics at the doc, page and evidence grains -> rank the setups and pick three -> report.
"""

from __future__ import annotations

import logging
import platform
import statistics
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from core.errors import ConfigError, IndexingError
from core.reports.store import REPORT_SCHEMA_VERSION

logger = logging.getLogger(__name__)

#: The rank cut-offs reported.
KS = (1, 3, 5, 10)
#: Results fetched per search (the largest cut-off).
TOP_K = 10
#: ``best_for_balance``: the fastest setup within this many percentage points of the most found.
BALANCE_POINTS = 4.0
#: ``best_for_time``: the fastest setup within this many percentage points of the most found.
TIME_POINTS = 8.0
#: Chunks embedded per call, so progress can be shown.
EMBED_BATCH = 256


def default_search_setups() -> list[Any]:
    """The setups evaluated by default: vector; hybrid with RRF (k=60); hybrid weighted (alpha=0.5)."""
    from core.vectorstores.base import SearchSetup

    return [
        SearchSetup("vector"),
        SearchSetup("hybrid", "rrf", ranker_k=60),
        SearchSetup("hybrid", "weighted", ranker_alpha=0.5),
    ]


@dataclass
class EvaluateOptions:
    """Settings of one retrieval evaluation.

    Attributes:
        chunking_method: ``recursive``, ``hierarchical`` or ``hybrid`` (see ``core.chunking``).
        chunk_size: chunk size in tokens (recursive: 4 characters per token).
        chunk_overlap: overlap in tokens; must be smaller than ``chunk_size``.
        setups: the search setups to compare (default :func:`default_search_setups`).
        rank_grain: grain the setups are ranked by (``doc``, ``page``, ``evidence``), or None
            to choose the finest grain the golden file labels (evidence, else page, else doc).
        show_progress: show progress bars on stderr (when it is a terminal).
        generate: also answer every question with the setup that finds the most, and score the
            answers (see ``core.evaluation.answers``).
        chat_model: the ``ChatModel`` generating answers; None uses the extractive baseline.
        judge: a ``ChatModel`` judging answers, or None (unitxt metrics only).
    """

    chunking_method: str = "recursive"
    chunk_size: int = 256
    chunk_overlap: int = 32
    setups: list[Any] = field(default_factory=default_search_setups)
    rank_grain: str | None = None
    show_progress: bool = True
    generate: bool = False
    chat_model: Any = None
    judge: Any = None


def _progress(total: int, desc: str, enabled: bool) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="", disable=None if enabled else True, leave=False, dynamic_ncols=True)


def fill_collection(store: Any, chunks: Sequence[Any], model: Any, *,
                    on_batch: Callable[[int], Any] | None = None) -> None:
    """(Re)build ``store``'s collection from ``chunks``: drop it, embed the texts in batches of
    :data:`EMBED_BATCH` (through ``model``, usually cached), insert, flush, and check the count.

    Args:
        store: the vector store (its collection is replaced).
        chunks: the chunks to index.
        model: the embedding model.
        on_batch: called with the size of each batch written (for progress bars).

    Raises:
        IndexingError: the collection does not hold exactly ``len(chunks)`` chunks afterwards.
    """
    store.delete_collection()
    for i in range(0, len(chunks), EMBED_BATCH):
        batch = chunks[i : i + EMBED_BATCH]
        store.add_documents(batch, vectors=model.embed_documents([c.text for c in batch]))
        if on_batch is not None:
            on_batch(len(batch))
    store.flush()
    held = store.count()
    if held != len(chunks):
        raise IndexingError(f"collection {store.collection_name} holds {held} chunks; {len(chunks)} were written")


def choose_rank_grain(questions: Sequence[Any]) -> str:
    """Return the finest grain the golden questions label: ``evidence`` when any question has
    usable evidence (others fall back to documents), else ``page`` when any has page labels,
    else ``doc``."""
    if any(q.usable_evidence for q in questions):
        return "evidence"
    if any(q.pages for q in questions):
        return "page"
    return "doc"


def _percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=np.float64), q)) if values else 0.0


def pick_setups(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Rank setups and choose ``finds_the_most``, ``best_for_balance`` and ``best_for_time``.

    Args:
        rows: one dict per setup with ``name``, ``found_top10`` (questions with a right result
            in the top 10), ``found_first`` (right result at rank 1), ``n_scored`` (questions
            scored at the ranking grain) and ``median_ms`` (median search time).

    Ranking: most ``found_top10``, then most ``found_first``, then lowest ``median_ms``.
    ``finds_the_most`` is the first; ``best_for_balance`` is the fastest setup whose share of
    questions found in the top 10 is within :data:`BALANCE_POINTS` percentage points of the
    best share (ties: more found); ``best_for_time`` the same within :data:`TIME_POINTS`.

    Returns:
        ``{"ranking": [names best first], "finds_the_most", "best_for_balance",
        "best_for_time", "reason", "rules": {...}}``; the three names are None, and
        ``reason`` says why, when there are no rows, no question could be scored, or no setup
        found anything in the top 10.
    """
    rules = {
        "ranking": "most questions found in the top 10, then most found first, then fastest median search",
        "finds_the_most": "first in the ranking",
        "best_for_balance": f"fastest median search within {BALANCE_POINTS:g} percentage points of the most found in the top 10",
        "best_for_time": f"fastest median search within {TIME_POINTS:g} percentage points of the most found in the top 10",
    }
    reason = None
    if not rows:
        reason = "no search setup was evaluated"
    elif not any(r["n_scored"] for r in rows):
        reason = "no question is labelled at the ranking grain"
    elif not any(r["found_top10"] for r in rows):
        reason = "no setup found a right result in the top 10 for any question"
    if reason:
        return {"ranking": [r["name"] for r in rows], "finds_the_most": None, "best_for_balance": None,
                "best_for_time": None, "reason": reason, "rules": rules}
    ranked = sorted(rows, key=lambda r: (-r["found_top10"], -r["found_first"], r["median_ms"]))

    def share(r: dict[str, Any]) -> float:
        return 100.0 * r["found_top10"] / r["n_scored"] if r["n_scored"] else 0.0

    best = max(share(r) for r in rows)

    def fastest_within(points: float) -> str:
        near = [r for r in rows if share(r) >= best - points - 1e-9]
        return min(near, key=lambda r: (r["median_ms"], -r["found_top10"], -r["found_first"]))["name"]

    return {
        "ranking": [r["name"] for r in ranked],
        "reason": None,
        "finds_the_most": ranked[0]["name"],
        "best_for_balance": fastest_within(BALANCE_POINTS),
        "best_for_time": fastest_within(TIME_POINTS),
        "rules": rules,
    }


def corpus_warnings(questions: Sequence[Any], documents: Sequence[Any], skipped: Sequence[Any] = ()) -> list[Any]:
    """Warnings about labels the loaded corpus cannot satisfy.

    Args:
        questions: the golden questions to be scored.
        documents: the ``LoadedDocument`` objects that loaded (with ``n_pages``).
        skipped: the ``SkippedFile`` objects of files that did not load.

    Returns:
        ``Problem`` warnings, with the question's line: a question whose expected documents
        all failed to load or are missing (it can only score 0); a page label on a document
        without pages (not a PDF); a page past the document's last page.
    """
    from core.golden import Problem

    pages = {d.document_id: d.n_pages for d in documents}
    reasons = {s.document_id: s.reason for s in skipped}
    out = []
    for q in questions:
        docs = q.document_ids
        if docs and not any(d in pages for d in docs):
            why = "; ".join(f"{d}: {reasons.get(d, 'not in the corpus')}" for d in docs)
            out.append(Problem("warning", f"question {q.id!r} can only score 0: none of its expected documents "
                                          f"loaded ({why})", line=q.line, field="expected"))
        for target in q.expected:
            if target.page is None or target.document_id not in pages:
                continue
            n = pages[target.document_id]
            if n == 0:
                out.append(Problem("warning", f"{target} names a page, but {target.document_id} has no pages "
                                              "(only PDFs do): the page grain cannot find it",
                                   line=q.line, field="expected"))
            elif target.page > n:
                out.append(Problem("warning", f"{target} is past the last page of {target.document_id} "
                                              f"({n} pages)", line=q.line, field="expected"))
    return out


def package_versions() -> dict[str, str]:
    """Versions of Python and the packages that shape results (missing ones are left out)."""
    from importlib import metadata

    out = {"python": platform.python_version()}
    for name in ("ragtune", "pymilvus", "milvus-lite", "sentence-transformers", "torch", "transformers",
                 "docling-core", "docling-slim", "langchain-text-splitters", "pypdfium2", "openai", "numpy"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def evaluate_retrieval(
    docs_dir: str | Path,
    golden_path: str | Path,
    *,
    out_dir: str | Path,
    embedding_model: Any = None,
    vector_store_config: Any = None,
    options: EvaluateOptions | None = None,
    on_status: Callable[[str], None] | None = None,
    golden: Any = None,
) -> dict[str, Any]:
    """Run the retrieval evaluation end to end and return the report (not yet stored).

    Args:
        docs_dir: folder of source documents (ids = paths relative to it): a local folder or
            the address of a remote one (``s3://...``, a Blob URL; see ``core.inputs``),
            downloaded to ``<out_dir>/inputs``.
        golden_path: the golden JSONL file: a local path or an address (read into memory).
        out_dir: working folder: the embedding cache (``cache/embeddings.sqlite``) and the
            Milvus Lite database (``milvus.db``) live here.
        embedding_model: an ``EmbeddingModel``; default the local all-MiniLM-L6-v2.
        vector_store_config: ``MilvusLiteConfig``, ``MilvusConfig`` or ``PGVectorConfig``;
            default Milvus Lite in ``<out_dir>/milvus.db``.
        options: chunking, setups and ranking settings.
        on_status: called with a short line when a step starts (for logs).
        golden: the ``GoldenSet`` of ``golden_path`` when the caller has read it already (its
            bytes, ``raw``, are what the report describes); None reads ``golden_path``.

    Returns:
        The report dict (see ``docs`` in the README): ``schema_version``, ``golden``,
        ``corpus``, ``indexing``, ``setups`` (metrics per grain, timings), ``picks``,
        ``questions`` (rank of the first right result per setup), ``versions``, times.

    Raises:
        GoldenError: the golden file has errors (every problem is in ``.problems``).
        DocumentError: the folder is missing or holds no loadable document.
        ConfigError: invalid chunking or search settings (raised before any work).
        IndexingError / EmbeddingError / StoreError: indexing or searching failed.
    """
    from core.chunking import get_chunker
    from core.documents import corpus_fingerprint, load_documents
    from core.golden import Problem, check_golden, read_golden
    from core.inputs import shown_address
    from core.metrics.retrieval import GRAINS, evaluate_rankings
    from core.models import CachedEmbeddingModel, EmbeddingCache, LocalEmbeddingModel
    from core.vectorstores import MilvusLiteConfig, backend_name, collection_name_for, describe_store, get_vector_store

    options = options or EvaluateOptions()
    status = on_status or (lambda msg: logger.info(msg))
    started = datetime.now(timezone.utc)
    t_start = time.perf_counter()
    out_dir = Path(out_dir)
    timings: dict[str, float] = {}

    chunker = get_chunker(options.chunking_method, options.chunk_size, options.chunk_overlap)  # validates first
    for setup in options.setups:
        setup.to_dict()
    if out_dir.exists() and not out_dir.is_dir():
        raise ConfigError(f"output folder {out_dir} is a file: choose a folder")

    golden_shown, docs_shown = shown_address(golden_path), shown_address(docs_dir)
    status(f"checking {golden_shown}")
    if golden is None:
        golden = read_golden(golden_path)

    # Open the cache and the vector store before the slow steps, so a locked, broken or
    # unreachable store fails at once.
    cache = EmbeddingCache(out_dir / "cache" / "embeddings.sqlite")
    model = CachedEmbeddingModel(embedding_model or LocalEmbeddingModel(), cache)
    store_config = vector_store_config or MilvusLiteConfig(str(out_dir / "milvus.db"))
    probe = get_vector_store(model, store_config, "ragtune_probe")
    try:
        probe.exists()
    finally:
        probe.close()

    status(f"loading documents from {docs_shown}")
    t0 = time.perf_counter()
    with _progress(0, "loading", options.show_progress) as bar:
        def loading(done: int, total: int) -> None:
            bar.total = total
            bar.n = done
            bar.refresh()

        loaded = load_documents(docs_dir, progress=loading, cache_dir=out_dir / "inputs")
    timings["load_s"] = time.perf_counter() - t0
    documents = loaded.documents
    # The bytes already read, checked again against the corpus for missing-document warnings.
    corpus_check = check_golden(golden_path, documents=[d.document_id for d in documents], data=golden.raw)
    warnings = corpus_check.warnings + corpus_warnings(golden.questions, documents, loaded.skipped)

    status(f"chunking {len(documents)} documents ({chunker.name})")
    t0 = time.perf_counter()
    chunks = []
    with _progress(len(documents), "chunking", options.show_progress) as bar:
        for doc in documents:
            chunks.extend(chunker.chunk([doc]))
            bar.update(1)
    timings["chunk_s"] = time.perf_counter() - t0
    if not chunks:
        raise IndexingError(f"the documents in {docs_shown} gave no chunks")

    indexing_params = {
        "corpus": corpus_fingerprint(documents),
        "chunking": {"method": chunker.name, **chunker.params()},
        "embedding_model": model.model_id,
    }
    collection = collection_name_for(indexing_params)
    store = get_vector_store(model, store_config, collection)

    try:
        t0 = time.perf_counter()
        reused = store.exists() and store.count() == len(chunks)
        if not reused:
            status(f"embedding and indexing {len(chunks)} chunks into {collection}")
            limit = model.max_input_tokens
            if limit and options.chunking_method != "hierarchical" and options.chunk_size > limit:
                warnings.append(Problem(
                    "warning",
                    f"chunk size {options.chunk_size} tokens exceeds the embedding model's input of {limit} tokens: "
                    "text past the limit is not embedded",
                ))
            with _progress(len(chunks), "embedding", options.show_progress) as bar:
                fill_collection(store, chunks, model, on_batch=bar.update)
        else:
            status(f"reusing collection {collection} ({len(chunks)} chunks)")
        timings["index_s"] = time.perf_counter() - t0

        indexing_embedding = model.stats()
        questions = golden.questions
        t0 = time.perf_counter()
        model.embed_documents([q.question for q in questions])  # embedded once, outside the timed searches
        timings["embed_questions_s"] = time.perf_counter() - t0

        rank_grain = options.rank_grain or choose_rank_grain(questions)
        setup_results = []
        first_ranks: dict[str, dict[str, int | None]] = {q.id: {} for q in questions}
        t0 = time.perf_counter()
        with _progress(len(questions) * len(options.setups), "searching", options.show_progress) as bar:
            for setup in options.setups:
                rankings: dict[str, list[Any]] = {}
                latencies_ms: list[float] = []
                if questions:  # one untimed search first, so no setup pays for a cold start
                    store.search(questions[0].question, k=TOP_K, **setup.to_dict())
                for q in questions:
                    s = time.perf_counter()
                    hits = store.search(q.question, k=TOP_K, **setup.to_dict())
                    latencies_ms.append((time.perf_counter() - s) * 1000.0)
                    rankings[q.id] = [h.chunk for h in hits]
                    bar.update(1)
                grains = evaluate_rankings(questions, rankings, grains=GRAINS, ks=KS)
                for q in questions:
                    first_ranks[q.id][setup.name] = grains[rank_grain].per_question[q.id].first_relevant_rank
                rank_result = grains[rank_grain]
                scored = [r for r in rank_result.per_question.values() if r.scores is not None]
                setup_results.append({
                    "name": setup.name,
                    "setup": setup.to_dict(),
                    "metrics": {g: res.aggregate.to_dict() for g, res in grains.items()},
                    "found_top10": sum(1 for r in scored if r.scores[f"success@{TOP_K}"] > 0),
                    "found_first": sum(1 for r in scored if r.scores["success@1"] > 0),
                    "n_scored": len(scored),
                    "timings_ms": {
                        "median": round(statistics.median(latencies_ms), 3) if latencies_ms else 0.0,
                        "p95": round(_percentile(latencies_ms, 95), 3),
                        "mean": round(statistics.fmean(latencies_ms), 3) if latencies_ms else 0.0,
                        "n": len(latencies_ms),
                    },
                    "_rank_grain_results": rank_result,
                })
        timings["search_s"] = time.perf_counter() - t0

        picks = pick_setups([
            {"name": r["name"], "found_top10": r["found_top10"], "found_first": r["found_first"],
             "n_scored": r["n_scored"], "median_ms": r["timings_ms"]["median"]}
            for r in setup_results
        ])
        answers = None
        if options.generate:
            from core.evaluation.answers import evaluate_answers

            by_name = {s.name: s for s in options.setups}
            answer_setup = by_name.get(picks["finds_the_most"] or "", options.setups[0])
            if getattr(golden, "format", "ragtune") == "bedrock-byoi":
                status(f"scoring the {len(questions)} answers and passages the file holds (nothing is generated)")
            else:
                why = "" if picks["finds_the_most"] else " (no setup could be ranked, so the first)"
                status(f"answering {len(questions)} questions with {answer_setup.name}{why}")
            t0 = time.perf_counter()
            with _progress(len(questions), "answering", options.show_progress) as bar:
                from core.evaluation.chunking import ParentHandingStore

                # parent-child: the small chunks were searched and scored; the generator reads their parents
                handing = ParentHandingStore(store, chunks) if chunker.name == "parent-child" else store
                answers = evaluate_answers(
                    handing, model, golden, answer_setup, chat_model=options.chat_model, judge=options.judge,
                    on_answer=lambda done, total: bar.update(1),
                )
            timings["answers_s"] = time.perf_counter() - t0
    finally:
        store.close()
    per_question = []
    for q in questions:
        per_question.append({
            "id": q.id, "line": q.line, "question": q.question, "expected": [str(t) for t in q.expected],
            "first_relevant_rank": first_ranks[q.id],
        })
    for r in setup_results:
        r.pop("_rank_grain_results")
    timings["total_s"] = time.perf_counter() - t_start
    finished = datetime.now(timezone.utc)
    pages_total = sum(d.n_pages for d in documents)
    return {
        "schema_version": REPORT_SCHEMA_VERSION,
        "kind": "retrieval",
        "started_at": started.isoformat(timespec="seconds"),
        "finished_at": finished.isoformat(timespec="seconds"),
        "golden": {
            "path": golden_shown, "sha256": golden.sha256, "n_questions": len(questions),
            "n_templates": golden.n_templates, "n_drafts": golden.n_drafts,
            "n_with_pages": sum(1 for q in questions if q.pages),
            "n_with_evidence": sum(1 for q in questions if q.usable_evidence),
            "warnings": [p.to_dict() for p in warnings],
        },
        "corpus": {
            "path": docs_shown, "n_documents": len(documents), "n_pages": pages_total, "n_chunks": len(chunks),
            "fingerprint": indexing_params["corpus"],
            "skipped": [{"document_id": s.document_id, "reason": s.reason} for s in loaded.skipped],
        },
        "indexing": {
            "collection": collection, "reused": reused, "vector_store": backend_name(store_config),
            "vector_store_location": describe_store(store_config),
            "chunking": indexing_params["chunking"], "embedding_model": model.model_id,
            "embedding": indexing_embedding,
        },
        "evaluation": {"top_k": TOP_K, "ks": list(KS), "grains": list(GRAINS), "rank_grain": rank_grain},
        "setups": setup_results,
        "picks": picks,
        "answers": answers,
        "questions": per_question,
        "timings_s": {k: round(v, 3) for k, v in timings.items()},
        "versions": package_versions(),
    }
