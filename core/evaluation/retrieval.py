"""Evaluate every search setup on one corpus and golden file: the main job.

Steps: check the golden file (stop on errors) -> load documents -> chunk -> embed with each
embedding model (through the persistent embedding cache) -> index in a vector store, one
collection per model (reused when the indexing parameters match) -> search every question with
every setup (keyword, dense, hybrid RRF, hybrid weighted; each also reranked), timing the
query embedding, the search and the reranker apart -> retrieval metrics at the doc, page and
evidence grains, with bootstrap intervals -> rank the setups, test ties, pick three -> report.

Reranking is the slow step: every (question, chunk) pair the reranked setups need is scored
once, all together after the first-stage searches (with an estimate of the time said first),
through a cache of scores kept across runs beside the embeddings; a reranked setup whose
search already finds every question first is not run (:data:`SETTLED_RULE`).
"""

from __future__ import annotations

import logging
import platform
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from core.chunking import get_chunker
from core.documents import corpus_fingerprint, load_documents
from core.errors import ConfigError, IndexingError, RagtuneError
from core.evaluation.answers import evaluate_answers
from core.evaluation.envelope import corpus_block, envelope, golden_block, labelled_counts
from core.evaluation.handing import ParentHandingStore
from core.evaluation.indexing import build_index, cached_model, collection_for, open_cache, store_config
from core.evaluation.slices import check_slice_key, setup_slices, slice_warnings
from core.evaluation.undecided import tied_with_all, undecided
from core.evaluation.unjudged import LABEL_DEPTH, grade_top_results
from core.evaluation.waits import stats_ms, time_query_embeddings
from core.golden import Problem, check_golden, read_golden
from core.golden.stale import pieces_from_chunks, stale_evidence_warnings
from core.inputs import shown_address
from core.metrics.retrieval import DEFAULT_KS as KS  # the one home of the rank cut-offs
from core.metrics.retrieval import GRAINS, TOP_K, evaluate_rankings, mcnemar_exact
from core.models.cache import CachedReranker
from core.models.embeddings import query_text, text_sha256
from core.models.local import DEFAULT_LOCAL_EMBEDDING, local_embedding_model, local_reranker
from core.models.rerank import rerank_order, score_pairs
from core.reports.store import REPORT_SCHEMA_VERSION  # noqa: F401 (re-exported by core.evaluation)
from core.text import plural
from core.vectorstores import backend_name, describe_store, get_vector_store
from core.vectorstores.base import RetrievedChunk, SearchSetup
from core.vectorstores.rerank import RERANK_DEPTH, RerankingStore
from core.workspace import Workspace

if TYPE_CHECKING:
    from core.golden.types import GoldenSet
    from core.metrics.retrieval import Judgement
    from core.models.embeddings import EmbeddingModel
    from core.models.rerank import Reranker
    from core.vectorstores.base import VectorStore
    from core.vectorstores.milvus import MilvusConfig, MilvusLiteConfig
    from core.vectorstores.pgvector import PGVectorConfig

logger = logging.getLogger(__name__)

#: ``best_for_balance``: the fastest setup within this many percentage points of the most found.
BALANCE_POINTS = 4.0
#: ``best_for_time``: the fastest setup within this many percentage points of the most found.
TIME_POINTS = 8.0
#: Latencies closer than this many milliseconds count as equal when picking by speed...
NOISE_FLOOR_MS = 2.0
#: ... or closer than this fraction of the faster one, whichever is larger.
NOISE_FRACTION = 0.20
#: The significance level of the paired test behind ``tied_with_best``.
TIE_ALPHA = 0.05
#: Report names of the search methods, by ``SearchSetup.search_mode`` (the store's word).
METHOD_NAMES = {"vector": "dense", "keyword": "keyword", "hybrid": "hybrid"}


def default_search_setups() -> list[Any]:
    """The search methods evaluated by default: keyword (BM25) only; dense; hybrid with RRF
    (k=60); hybrid weighted (alpha=0.5)."""
    return [
        SearchSetup("keyword"),
        SearchSetup("vector"),
        SearchSetup("hybrid", "rrf", ranker_k=60),
        SearchSetup("hybrid", "weighted", ranker_alpha=0.5),
    ]


@dataclass(frozen=True)
class EvalSetup:
    """One setup of an evaluation: a search method, the vectors it searches, an optional reranker.

    Attributes:
        search: the store's ``SearchSetup``.
        embedding_model: the embedding model id whose vectors are searched (None for keyword
            search, which needs none).
        reranker: the reranker's model id, or None.
        depth: results the first stage fetches (``TOP_K``, or :data:`RERANK_DEPTH` before a
            reranker keeps the top ``TOP_K``).
        key: the setup's name in reports, ``--only`` and ``--skip``: the method (``keyword``,
            ``dense``, ``hybrid-rrf-k60``, ``hybrid-weighted-a0.5``), then ``@<model>`` when
            several embedding models are evaluated, then ``+rerank`` when reranked.
    """

    search: Any
    embedding_model: str | None
    reranker: str | None
    depth: int
    key: str

    def to_dict(self) -> dict[str, Any]:
        """The setup as JSON: the search parameters, ``embedding_model``, ``reranker``,
        ``retrieval_depth``."""
        return {**self.search.to_dict(), "embedding_model": self.embedding_model, "reranker": self.reranker,
                "retrieval_depth": self.depth}


def method_key(search: Any) -> str:
    """A search method's name in reports: ``keyword``, ``dense``, ``hybrid-rrf-k60``,
    ``hybrid-weighted-a0.5``."""
    return search.name if search.search_mode == "hybrid" else METHOD_NAMES[search.search_mode]


def build_setups(methods: Sequence[Any], embedding_models: Sequence[str], reranker: str | None) -> list[EvalSetup]:
    """Every setup the methods, embedding models and reranker make.

    Keyword search is one setup whatever the models; dense and hybrid search are one per
    embedding model ("every set of vectors"); with a reranker, each of those also once
    reranked (first stage :data:`RERANK_DEPTH`, kept ``TOP_K``).

    Args:
        methods: ``SearchSetup`` objects (distinct).
        embedding_models: embedding model ids, at least one.
        reranker: the reranker's id, or None.

    Raises:
        ConfigError: no embedding model.
    """
    if not embedding_models:
        raise ConfigError("give at least one embedding model")
    several = len(embedding_models) > 1
    out: list[EvalSetup] = []
    for search in methods:
        models = [None] if search.search_mode == "keyword" else list(embedding_models)
        for model in models:
            key = method_key(search)
            if several and model is not None:
                key += "@" + model.removeprefix("local:")
            out.append(EvalSetup(search, model, None, TOP_K, key))
            if reranker:
                out.append(EvalSetup(search, model, reranker, RERANK_DEPTH, key + "+rerank"))
    return out


def select_setups(setups: Sequence[EvalSetup], only: Sequence[str] = (), skip: Sequence[str] = ()) -> list[EvalSetup]:
    """Keep the setups whose key matches an ``only`` pattern (all when none is given) and no
    ``skip`` pattern. Patterns are shell-style (``fnmatch``): ``dense*``, ``*+rerank``.

    Raises:
        ConfigError: a pattern matches no setup (the message lists the keys), or nothing is left.
    """
    from fnmatch import fnmatchcase

    keys = [s.key for s in setups]
    for pattern in [*only, *skip]:
        if not any(fnmatchcase(k, pattern) for k in keys):
            raise ConfigError(f"setup pattern {pattern!r} matches no setup; the setups are: {', '.join(keys)}")
    kept = [s for s in setups if (not only or any(fnmatchcase(s.key, p) for p in only))
            and not any(fnmatchcase(s.key, p) for p in skip)]
    if not kept:
        raise ConfigError(f"--only/--skip leave no setup of: {', '.join(keys)}")
    return kept


@dataclass
class EvaluateOptions:
    """Settings of one retrieval evaluation.

    Attributes:
        chunking_method: ``recursive``, ``hierarchical`` or ``hybrid`` (see ``core.chunking``).
        chunk_size: chunk size in tokens (recursive: 4 characters per token).
        chunk_overlap: overlap in tokens; must be smaller than ``chunk_size``.
        embed_title: put each document's title in front of its chunks' text
            (:class:`core.chunking.TitleInText`).
        setups: the search methods to compare (default :func:`default_search_setups`); each
            runs on every embedding model's vectors, and again reranked when there is a
            reranker.
        only: shell-style patterns of setup keys to keep (empty: all).
        skip: shell-style patterns of setup keys to leave out.
        rank_grain: grain the setups are ranked by (``doc``, ``page``, ``evidence``), or None
            to choose the finest grain with questions that can be found (see
            :func:`choose_rank_grain`).
        show_progress: show progress bars on stderr (when it is a terminal).
        generate: also answer every question with the setup that finds the most, and score the
            answers (see ``core.evaluation.answers``).
        chat_model: the ``ChatModel`` generating answers; None uses the extractive baseline.
        judge: a ``ChatModel`` judging answers, or None (unitxt metrics only).
        by: ``metadata.KEY`` keys to report every setup's metrics per slice of (see
            ``core.evaluation.slices``); empty for none.
        judge_repeat: judge calls per answer and metric (``--judge-repeat``).
        label_unjudged: with a judge, grade the setups' top results the golden file does not
            name (``core.evaluation.unjudged``) and report the measures with those labels.
        label_depth: results per setup and question graded then.
    """

    chunking_method: str = "recursive"
    chunk_size: int = 256
    chunk_overlap: int = 32
    embed_title: bool = True
    setups: list[Any] = field(default_factory=default_search_setups)
    only: Sequence[str] = ()
    skip: Sequence[str] = ()
    rank_grain: str | None = None
    show_progress: bool = True
    generate: bool = False
    chat_model: Any = None
    judge: Any = None
    by: tuple[str, ...] = ()
    judge_repeat: int = 1
    label_unjudged: bool = False
    label_depth: int = LABEL_DEPTH


def _progress(total: int, desc: str, enabled: bool) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="", disable=None if enabled else True, leave=False, dynamic_ncols=True)


def choose_rank_grain(questions: Sequence[Any], loaded: Sequence[str] | None = None,
                      stale: Iterable[str] = ()) -> str:
    """Return the finest grain with a question that can be found.

    ``evidence`` when a question has usable evidence (others fall back to documents), else
    ``page`` when a question has page labels, else ``doc``; with ``loaded``, a label only
    counts when its document loaded, so one page label on a document that failed to load does
    not rank every setup by a grain nothing can be found at. Likewise a question in ``stale``
    (every usable quote of it held by no chunk of its documents) does not count for evidence.

    Args:
        questions: the golden questions.
        loaded: ids of the documents that loaded, or None to count every label.
        stale: ids of the questions whose evidence no chunk holds (:func:`stale_question_ids`).
    """
    have = None if loaded is None else set(loaded)
    gone = set(stale)

    def present(docs: Sequence[str]) -> bool:
        return have is None or any(d in have for d in docs)

    if any(q.usable_evidence and q.id not in gone and present(q.document_ids or ()) for q in questions):
        return "evidence"
    if any(any(present([doc]) for doc, _ in q.pages) for q in questions):
        return "page"
    return "doc"


def stale_question_ids(questions: Sequence[Any], stale_warnings: Iterable[Any]) -> set[str]:
    """Ids of the questions every usable evidence quote of which is stale.

    Args:
        questions: the golden questions.
        stale_warnings: ``Problem`` warnings of
            :func:`core.golden.stale.stale_evidence_warnings` (line and field ``evidence[i]``).
    """
    by_line: dict[int, set[int]] = {}
    for w in stale_warnings:
        field = str(w.field or "")
        if w.line is not None and field.startswith("evidence[") and field.endswith("]"):
            by_line.setdefault(w.line, set()).add(int(field[len("evidence["):-1]))
    out = set()
    for q in questions:
        held = by_line.get(q.line)
        if held is None or not q.usable_evidence:
            continue
        gone = {q.evidence[i] for i in held if i < len(q.evidence)}
        if set(q.usable_evidence) <= gone:
            out.add(q.id)
    return out


def same_speed(a_ms: float, b_ms: float) -> bool:
    """True when two latencies differ by less than the noise floor: :data:`NOISE_FLOOR_MS`, or
    :data:`NOISE_FRACTION` of the faster, whichever is larger."""
    return abs(a_ms - b_ms) <= max(NOISE_FLOOR_MS, NOISE_FRACTION * min(a_ms, b_ms))


def pick_setups(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Rank setups, choose ``finds_the_most``, ``best_for_balance`` and ``best_for_time``, and
    tell which setups are tied with the best.

    Args:
        rows: one dict per setup with ``name``, ``found_top10`` (questions with a right result
            in the top 10), ``found_first`` (right result at rank 1), ``n_scored`` (questions
            scored at the ranking grain), ``median_ms`` (median time a user waits per
            question: query embedding + search + rerank) and optionally ``found`` (per scored
            question, in one order for every row, whether the top 10 held a right result).

    Ranking: most ``found_top10``, then most ``found_first``, then lowest ``median_ms``.
    ``finds_the_most`` is the first, except that among the setups with the most
    ``found_top10`` and ``found_first`` the one chosen is, of those as fast as the fastest
    within the noise floor (:func:`same_speed`), the first in the order of ``rows``. Every other setup is ``tied_with_best`` when McNemar's
    exact test on the questions only one of the two found does not tell them apart
    (two-sided, p >= :data:`TIE_ALPHA`; rows without ``found`` are compared on counts only:
    tied when equal). ``best_for_balance`` is chosen among the setups whose share of questions
    found is within :data:`BALANCE_POINTS` percentage points of the best share,
    ``best_for_time`` within :data:`TIME_POINTS`: of those, the ones as fast as the fastest
    within the noise floor (:func:`same_speed`), and of these the one that finds the most
    (then most found first, then the same steady choice as above). Latency differences below
    the floor never decide, so identical reruns give identical picks.

    Returns:
        ``{"ranking": [names best first], "finds_the_most", "best_for_balance",
        "best_for_time", "tied_with_best": {name: bool}, "tied_with_all", "mcnemar": {name:
        {only_a, only_b, p_value}}, "reason", "rules": {...}}``; ``tied_with_all`` is True when
        two setups or more were ranked and every one is tied with ``finds_the_most``
        (:func:`core.evaluation.undecided.tied_with_all`: the pick is no winner); the three
        names are None, and ``reason``
        says why, when there are no rows, no question could be scored, or no setup found
        anything in the top 10.
    """
    floor = f"latencies within {NOISE_FLOOR_MS:g} ms or {NOISE_FRACTION:.0%} count as equal, then most found"
    rules = {
        "ranking": "most questions found in the top 10, then most found first, then fastest median time a user waits",
        "finds_the_most": "first in the ranking",
        "tied_with_best": f"McNemar's exact test against finds_the_most on the questions only one found, two-sided, "
                          f"not significant at alpha {TIE_ALPHA:g}",
        "best_for_balance": f"fastest median wait within {BALANCE_POINTS:g} percentage points of the most found in the "
                            f"top 10 ({floor})",
        "best_for_time": f"fastest median wait within {TIME_POINTS:g} percentage points of the most found in the "
                         f"top 10 ({floor})",
        "latency": "median over questions of query embedding + search + rerank, in ms",
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
                "best_for_time": None, "tied_with_best": {r["name"]: False for r in rows}, "tied_with_all": False,
                "mcnemar": {}, "reason": reason, "rules": rules}
    order = {r["name"]: i for i, r in enumerate(rows)}

    def steady_fastest(group: list[dict[str, Any]]) -> dict[str, Any]:
        # the fastest within the noise floor; among those, the first in the rows' order, so that
        # a latency difference below the floor never decides between equally good setups
        fastest = min(r["median_ms"] for r in group)
        return min((r for r in group if same_speed(r["median_ms"], fastest)), key=lambda r: order[r["name"]])

    by_quality = sorted(rows, key=lambda r: (-r["found_top10"], -r["found_first"], r["median_ms"], r["name"]))
    top = [r for r in by_quality if (r["found_top10"], r["found_first"])
           == (by_quality[0]["found_top10"], by_quality[0]["found_first"])]
    best = steady_fastest(top)
    ranked = [best] + [r for r in by_quality if r is not best]
    tied: dict[str, bool] = {best["name"]: True}
    tests: dict[str, Any] = {}
    for r in ranked[1:]:
        if best.get("found") is not None and r.get("found") is not None:
            test = mcnemar_exact(best["found"], r["found"])
            tests[r["name"]] = test
            tied[r["name"]] = test["p_value"] >= TIE_ALPHA
        else:
            tied[r["name"]] = r["found_top10"] == best["found_top10"]

    def share(r: dict[str, Any]) -> float:
        return 100.0 * r["found_top10"] / r["n_scored"] if r["n_scored"] else 0.0

    best_share = max(share(r) for r in rows)

    def fastest_within(points: float) -> str:
        near = [r for r in rows if share(r) >= best_share - points - 1e-9]
        fastest = min(r["median_ms"] for r in near)
        fast = [r for r in near if same_speed(r["median_ms"], fastest)]
        most = max((r["found_top10"], r["found_first"]) for r in fast)
        return steady_fastest([r for r in fast if (r["found_top10"], r["found_first"]) == most])["name"]

    return {
        "ranking": [r["name"] for r in ranked],
        "reason": None,
        "finds_the_most": best["name"],
        "best_for_balance": fastest_within(BALANCE_POINTS),
        "best_for_time": fastest_within(TIME_POINTS),
        "tied_with_best": tied,
        "tied_with_all": tied_with_all(tied.values()),
        "mcnemar": tests,
        "rules": rules,
    }


def _stop_when_no_expected_document_loaded(questions: Sequence[Any], documents: Sequence[Any],
                                           skipped: Sequence[Any], docs: str) -> None:
    """Stop a run whose golden file expects documents none of which loaded: every score would
    be 0 (the files are in the folder, so the check before loading passed, but each was skipped:
    over a limit, unreadable, a link out of the folder).

    Raises:
        ConfigError: naming the expected documents and why each was skipped (or that it is
            not in the folder).
    """
    wanted = sorted({d for q in questions for d in q.document_ids})
    loaded = {d.document_id for d in documents}
    if not wanted or loaded.intersection(wanted):
        return
    reasons = {s.document_id: s.reason for s in skipped}
    why = "; ".join(f"{d}: {reasons.get(d, 'not in the folder')}" for d in wanted[:5])
    more = f"; and {len(wanted) - 5} more" if len(wanted) > 5 else ""
    raise ConfigError(f"the golden file expects {plural(len(wanted), 'document')} and none loaded from {docs} "
                      f"({why}{more}): every score would be 0; fix or replace those files (check --docs lists "
                      "every file skipped and why)")


def unloaded_questions(questions: Sequence[Any], documents: Sequence[Any], skipped: Sequence[Any]) -> dict[str, str]:
    """The questions ragtune itself cannot score: every expected document of each is in the
    folder but did not load (over a limit, unreadable), so no setup could find it.

    Args:
        questions: the golden questions.
        documents: the ``LoadedDocument`` objects that loaded.
        skipped: the ``SkippedFile`` objects of files that did not load.

    Returns:
        ``{question id: why}`` (each expected document and its reason); a question expecting a
        document that is simply not in the folder is not here: that is the golden file's to fix.
    """
    loaded = {d.document_id for d in documents}
    reasons = {s.document_id: s.reason for s in skipped}
    out = {}
    for q in questions:
        docs = q.document_ids
        if docs and not any(d in loaded for d in docs) and all(d in reasons for d in docs):
            out[q.id] = "; ".join(f"{d}: {reasons[d]}" for d in docs)
    return out


def corpus_warnings(questions: Sequence[Any], documents: Sequence[Any], skipped: Sequence[Any] = (),
                    left_out: Mapping[str, str] | None = None) -> list[Any]:
    """Warnings about labels the loaded corpus cannot satisfy.

    Args:
        questions: the golden questions to be scored.
        documents: the ``LoadedDocument`` objects that loaded (with ``n_pages``).
        skipped: the ``SkippedFile`` objects of files that did not load.
        left_out: the questions the run leaves out of its scores (:func:`unloaded_questions`),
            said as left out instead of scoring 0.

    Returns:
        ``Problem`` warnings, with the question's line: a question whose expected documents
        all failed to load or are missing (it can only score 0, or is left out); a page label
        on a document without pages (not a PDF); a page past the document's last page.
    """
    pages = {d.document_id: d.n_pages for d in documents}
    reasons = {s.document_id: s.reason for s in skipped}
    left_out = left_out or {}
    out = []
    for q in questions:
        docs = q.document_ids
        if q.id in left_out:
            out.append(Problem("warning", f"question {q.id!r} is left out of the scores: none of its expected "
                                          f"documents loaded ({left_out[q.id]})", line=q.line, field="expected"))
            continue
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
    for name in ("ragtune", "pymilvus", "milvus-lite", "sentence-transformers", "torch", "transformers", "onnxruntime", "tokenizers",
                 "docling-core", "docling-slim", "langchain-text-splitters", "pypdfium2", "openai", "numpy"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def _top(hits: Sequence[Any], judgement: Judgement | None) -> list[dict[str, Any]]:
    """The results kept per question and setup: ids and scores, not texts. ``page`` is the
    chunk's first page and ``pages`` every page it spans (a chunk crossing a page break hits
    an expected page it ends on)."""
    out = []
    for i, h in enumerate(hits):
        pages = h.chunk.pages
        out.append({"document": h.chunk.document_id, "page": pages[0] if pages else None, "pages": list(pages),
                    "chunk_id": h.chunk.chunk_id, "score": round(float(h.score), 6),
                    "relevant": bool(judgement is not None and i < len(judgement.hits) and judgement.hits[i])})
    return out


class _RerankMemo:
    """A reranker's scores within one run, each (question, chunk) pair scored once.

    Reranked setups share most of their first-stage chunks, so each pair is sent to the
    reranker once (:meth:`prescore` sends every pair of every reranked setup in one go, so
    pairs of many questions go to the model together); its measured cost (the time of the
    call, or chunk of a call, that scored it, shared evenly among its pairs) is charged to
    every setup that reranks it, so each setup's rerank time is what scoring its own
    passages costs, as a user would wait for it. A pair read from the reranker's cache
    (:class:`~core.models.cache.CachedReranker`) carries the cost measured when it was scored.
    """

    def __init__(self, reranker: Reranker) -> None:
        self.reranker = reranker
        self._memo: dict[tuple[str, str], tuple[float, float]] = {}

    def need(self, pairs: Iterable[tuple[str, Any]]) -> list[tuple[str, Any]]:
        """The distinct ``(query, chunk)`` pairs among ``pairs`` this run has not scored yet."""
        out: dict[tuple[str, str], tuple[str, Any]] = {}
        for query, chunk in pairs:
            key = (query, chunk.chunk_id)
            if key not in self._memo and key not in out:
                out[key] = (query, chunk)
        return list(out.values())

    def prescore(self, pairs: Sequence[tuple[str, Any]], on_scored: Callable[[int], Any] | None = None) -> None:
        """Score ``(query, chunk)`` pairs not scored yet in this run, all in one go.

        Raises:
            RerankError: the reranker failed.
            StoreError: its cache cannot be written.
        """
        todo = self.need(pairs)
        if not todo:
            return
        texts = [(query, chunk.text) for query, chunk in todo]
        scores = getattr(self.reranker, "scores", None)
        if scores is not None:
            found = [(s.score, s.cost_ms) for s in scores(texts, on_scored=on_scored)]
        else:
            started = time.perf_counter()
            values = score_pairs(self.reranker, texts)
            cost = (time.perf_counter() - started) * 1000.0 / len(texts)
            found = [(float(v), cost) for v in values]
            if on_scored is not None:
                on_scored(len(texts))
        for (query, chunk), pair in zip(todo, found):
            self._memo[(query, chunk.chunk_id)] = pair

    def rerank(self, query: str, hits: Sequence[Any], k: int) -> tuple[list[Any], float]:
        """Return the best ``k`` of ``hits`` by the reranker's score, and the milliseconds
        scoring them costs.

        Raises:
            RerankError: the reranker failed.
        """
        self.prescore([(query, h.chunk) for h in hits])
        pairs = [self._memo[(query, h.chunk.chunk_id)] for h in hits]
        order = rerank_order([score for score, _ in pairs])[:k]
        kept = [RetrievedChunk(chunk=hits[i].chunk, score=pairs[i][0], rank=r) for r, i in enumerate(order, start=1)]
        return kept, sum(cost for _, cost in pairs)


@dataclass
class _FirstStage:
    """One setup's first-stage results: per question id the hits (``depth`` of them, best
    first), the milliseconds each search took (in question order), or the error that stopped
    it (reranked setups only; an unreranked setup's failure stops the run)."""

    hits: dict[str, list[Any]]
    search_ms: list[float]
    error: str | None = None


def _first_stage(setup: EvalSetup, store: VectorStore, questions: Sequence[Any], bar: Any) -> _FirstStage:
    """Search every question with ``setup``'s search at its depth, timing each search.

    Raises:
        RagtuneError: the search of an unreranked setup failed.
    """
    search = setup.search.to_dict()
    out = _FirstStage({}, [])
    try:
        if questions:  # one untimed search first, so no setup pays for a cold start
            store.search(questions[0].question, k=setup.depth, **search)
        for q in questions:
            s = time.perf_counter()
            out.hits[q.id] = store.search(q.question, k=setup.depth, **search)
            out.search_ms.append((time.perf_counter() - s) * 1000.0)
            bar.update(1)
    except RagtuneError as exc:
        if not setup.reranker:
            raise
        logger.warning("setup %s failed: %s", setup.key, exc)
        out.error = str(exc)[:2000]
        bar.update(len(questions) - len(out.hits))
    return out


#: When a reranked setup is not run (see :func:`settled_reranked_setups`).
SETTLED_RULE = (
    "a reranked setup is not run when the same search without the reranker, in the same run, finds a right "
    "result at rank 1 for every question scored at the ranking grain: no setup can find more questions in the "
    "top k or find any earlier there (found@k, MRR), so the reranked one could only tie or lose, and it waits "
    "longer; its other numbers are not computed"
)


def settled_reranked_setups(setups: Sequence[EvalSetup], first_hits: dict[str, dict[str, list[Any]]],
                            questions: Sequence[Any], grain: str) -> dict[str, str]:
    """The reranked setups :data:`SETTLED_RULE` leaves out, each with the reason said to the user.

    A reranked setup is left out when its twin (the same search on the same vectors, without
    the reranker, depth ``TOP_K``) is evaluated in this run and its top ``TOP_K`` puts a right
    result first for every question scored at ``grain`` (at least one question). The twin
    then has found@k = 1 for every k and MRR = 1 at that grain, the most any setup can have:
    the reranked setup could only tie it or lose questions there, and its time a user waits
    adds the reranker's, so it could neither rank above the twin nor be picked over it. Its
    other numbers (other grains, recall@k, nDCG) are not computed; nothing is made up for them.

    Args:
        setups: the setups of the run.
        first_hits: setup key -> question id -> first-stage hits, for the setups whose first
            stage ran.
        questions: the golden questions.
        grain: the ranking grain.

    Returns:
        ``{reranked setup key: reason}``.
    """
    out: dict[str, str] = {}
    for setup in setups:
        if not setup.reranker:
            continue
        twin = next((s for s in setups if not s.reranker and s.search == setup.search
                     and s.embedding_model == setup.embedding_model), None)
        if twin is None or twin.key not in first_hits:
            continue
        rankings = {q.id: [h.chunk for h in first_hits[twin.key][q.id][:TOP_K]] for q in questions}
        result = evaluate_rankings(questions, rankings, grains=[grain], ks=(1,))[grain]
        scored = [r for r in result.per_question.values() if r.scores is not None]
        if scored and all(r.first_relevant_rank == 1 for r in scored):
            out[setup.key] = settled_reason(twin.key, len(scored), grain)
    return out


def settled_reason(twin: str, n_scored: int, grain: str) -> str:
    """What a user is told when :data:`SETTLED_RULE` leaves a reranked setup out: ``twin``
    (the same search without the reranker) found a right result first for all ``n_scored``
    questions scored at ``grain``; ``--rank-by`` is suggested only below the finest grain."""
    finer = "rank by a finer grain with --rank-by, or " if grain in GRAINS[:-1] else ""  # evidence is the finest
    return (f"{twin} already finds a right result at rank 1 for all {n_scored} questions scored "
            f"at the {grain} grain, so reranking could not find more or find any earlier there, only add time "
            f"(to run it, {finer}--skip {twin})")


def undecided_setups(picks: dict[str, Any], n_ranked: int, grain: str) -> dict[str, Any] | None:
    """The report's ``undecided`` (:func:`core.evaluation.undecided.undecided`) when every ranked
    setup is tied with ``finds_the_most``, else None."""
    if not picks.get("tied_with_all"):
        return None
    return undecided("setups", picks["finds_the_most"], n_ranked, grain, TIE_ALPHA)


#: Pairs scored, and timed, before the estimate of a run's reranking is shown.
RERANK_CALIBRATION = 16


def _about(seconds: float) -> str:
    """A rough duration for people: ``about 40 s``, ``about 3 minutes``."""
    if seconds < 90:
        return f"about {max(1, round(seconds))} s"
    return f"about {round(seconds / 60)} minutes"


#: Without a progress bar (a log, not a terminal), a line is said every this many seconds of reranking.
RERANK_LOG_EVERY_S = 30.0


def _rerank_progress(bar: Any, done: int, total: int, status: Callable[[str], Any],
                     started: float) -> Callable[[int], None]:
    """The progress callback of the reranking, ``done`` of ``total`` pairs scored so far: the
    bar, or, when the bar is off (output that is not a terminal), a line every
    :data:`RERANK_LOG_EVERY_S` seconds with the time left."""
    bar.update(done)
    state = {"done": done, "said": time.perf_counter()}

    def scored(n: int) -> None:
        bar.update(n)
        state["done"] += n
        now = time.perf_counter()
        if bar.disable and now - state["said"] >= RERANK_LOG_EVERY_S and state["done"] < total:
            state["said"] = now
            left = (now - started) / state["done"] * (total - state["done"])
            status(f"reranking: {state['done']} of {total} pairs scored, {_about(left)} left")

    return scored


def _score_reranked(memo: _RerankMemo, reranked: Sequence[EvalSetup], first: dict[str, _FirstStage],
                    questions: Sequence[Any], status: Callable[[str], Any], show_progress: bool) -> str | None:
    """Score every (question, chunk) pair the ``reranked`` setups need, once each, saying
    before the work how much there is and about how long it takes (timed on its first
    :data:`RERANK_CALIBRATION` pairs), with a progress bar.

    Returns:
        None, or the reranker's error, which fails every reranked setup.
    """
    pairs = memo.need((q.question, h.chunk) for s in reranked for q in questions for h in first[s.key].hits[q.id])
    if not pairs:
        return None
    missing = getattr(memo.reranker, "missing", None)
    new = missing([(query, chunk.text) for query, chunk in pairs]) if missing is not None else [True] * len(pairs)
    todo = [pair for pair, m in zip(pairs, new) if m]
    keys = ", ".join(s.key for s in reranked[:4]) + (", ..." if len(reranked) > 4 else "")
    what = (f"{plural(len(reranked), 'reranked setup')} ({keys}) on {plural(len(questions), 'question')}: "
            f"{len(pairs)} passage pairs to score")
    try:
        if not todo:
            status(f"{what}, every one from the cache")
        else:
            started = time.perf_counter()
            memo.prescore(todo[:RERANK_CALIBRATION])
            each = (time.perf_counter() - started) / min(len(todo), RERANK_CALIBRATION)
            cached = f", {len(pairs) - len(todo)} of them from the cache" if len(todo) < len(pairs) else ""
            status(f"{what}{cached}, {_about(each * len(todo))}; --skip '*+rerank' to leave them out")
            with _progress(len(todo), "reranking", show_progress) as bar:
                done = min(len(todo), RERANK_CALIBRATION)
                memo.prescore(todo, on_scored=_rerank_progress(bar, done, len(todo), status, started))
        memo.prescore(pairs)  # the pairs the cache holds
    except RagtuneError as exc:
        logger.warning("reranker %s failed: %s", memo.reranker.model_id, exc)
        return str(exc)[:2000]
    return None


def _time_query_embeddings(model: EmbeddingModel, questions: Sequence[Any]) -> list[float]:
    """Each question's query embedding, timed alone with the model itself (not the cache;
    :func:`core.evaluation.waits.time_query_embeddings`); the vectors go into the cache so the
    timed searches find them there."""
    raw = model.model

    def keep(text: str, vector: Any) -> None:
        key = text_sha256(query_text(raw, text))  # the key the cached model looks the query up by
        model.cache.put_many(model.model_id, [(key, np.asarray(vector, dtype=np.float32))])

    return time_query_embeddings(model, [q.question for q in questions], keep)


@dataclass
class _RetrievalRun:
    """The state of one :func:`evaluate_retrieval` run, filled step by step (internal)."""

    options: EvaluateOptions
    status: Callable[[str], Any]
    workspace: Any
    golden_path: str | Path
    docs_dir: str | Path
    raw_models: list[Any]
    ids: list[str]
    reranker: Any
    setups: list[Any]
    skipped_setups: list[dict[str, Any]]
    chunker: Any
    started: datetime = field(default_factory=lambda: datetime.now(timezone.utc))
    t_start: float = field(default_factory=time.perf_counter)
    timings: dict[str, float] = field(default_factory=dict)
    golden: Any = None
    cache: Any = None
    models: dict[str, Any] = field(default_factory=dict)
    store_config: Any = None
    loaded: Any = None
    documents: list[Any] = field(default_factory=list)
    chunks: list[Any] = field(default_factory=list)
    warnings: list[Any] = field(default_factory=list)
    stale_ids: set[str] = field(default_factory=set)
    left_out: list[dict[str, Any]] = field(default_factory=list)
    corpus_id: str = ""
    chunking: dict[str, Any] = field(default_factory=dict)
    stores: dict[str, Any] = field(default_factory=dict)
    indexing_models: list[dict[str, Any]] = field(default_factory=list)
    rank_grain: str = "doc"
    setup_results: list[dict[str, Any]] = field(default_factory=list)
    per_setup: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    found_vectors: dict[str, list[bool]] = field(default_factory=dict)
    ranked_by_setup: dict[str, dict[str, list[Any]]] = field(default_factory=dict)
    rerank_truncated_before: int = 0


def evaluate_retrieval(
    docs_dir: str | Path,
    golden_path: str | Path,
    *,
    out_dir: str | Path,
    embedding_model: EmbeddingModel | None = None,
    vector_store_config: MilvusLiteConfig | MilvusConfig | PGVectorConfig | None = None,
    options: EvaluateOptions | None = None,
    on_status: Callable[[str], None] | None = None,
    golden: GoldenSet | None = None,
    embedding_models: Sequence[Any] | None = None,
    reranker: Reranker | str = "default",
) -> dict[str, Any]:
    """Run the retrieval evaluation end to end and return the report (not yet stored).

    Args:
        docs_dir: folder of source documents (ids = paths relative to it): a local folder or
            the address of a remote one (``s3://...``, a Blob URL; see ``core.inputs``),
            downloaded to ``<out_dir>/inputs``.
        golden_path: the golden JSONL file: a local path or an address (read into memory).
        out_dir: working folder (``core.workspace.Workspace``): the embedding cache
            (``cache/embeddings.sqlite``) and the Milvus Lite database (``milvus.db``) live here.
        embedding_model: an ``EmbeddingModel``; default the local default model
            (``core.models.local.DEFAULT_LOCAL_EMBEDDING``). Ignored when
            ``embedding_models`` is given.
        vector_store_config: ``MilvusLiteConfig``, ``MilvusConfig`` or ``PGVectorConfig``;
            default Milvus Lite in ``<out_dir>/milvus.db``.
        options: chunking, setups and ranking settings.
        on_status: called with a short line when a step starts (for logs).
        golden: the ``GoldenSet`` of ``golden_path`` when the caller has read it already (its
            bytes, ``raw``, are what the report describes); None reads ``golden_path``.
        embedding_models: several ``EmbeddingModel`` objects: dense and hybrid search run on
            each one's vectors (one collection per model).
        reranker: a ``Reranker``, None for no reranked setups, or ``"default"`` for the
            local cross-encoder (skipped, with the reason in the report, when it cannot run).
            Its scores are kept in ``<out_dir>/cache/embeddings.sqlite`` (see
            ``core.models.cache.CachedReranker``).

    Returns:
        The report dict (see the README): ``schema_version``, ``golden``, ``corpus``,
        ``indexing`` (one entry per model in ``indexing.models``), ``setups`` (metrics per
        grain with ``ci_low`` / ``ci_high``, ``tied_with_best``, timings; a failed setup has
        ``status: failed`` and its ``error``), ``skipped_setups``, ``picks``, ``questions``
        (per setup the first right rank and the ``top`` results), ``versions``, times, and
        ``models`` (each embedding model's and the reranker's description by model id:
        source, revision, weight files' sha256; see ``core.models.describe``).
        A reranked setup left out by :data:`SETTLED_RULE` is in ``skipped_setups`` with its
        reason and the rule, and nowhere else.

    Raises:
        GoldenError: the golden file has errors (every problem is in ``.problems``).
        DocumentError: the folder is missing or holds no loadable document.
        ConfigError: invalid chunking or search settings, ``--only``/``--skip`` patterns that
            match nothing, or model files whose sha256 differs (raised before any work).
        IndexingError / EmbeddingError / StoreError: indexing or searching failed.
    """
    run = _checked_run(docs_dir, golden_path, out_dir, options or EvaluateOptions(),
                       on_status or (lambda msg: logger.info(msg)), embedding_model, embedding_models, reranker)
    run.status(f"checking {shown_address(golden_path)}")
    run.golden = golden if golden is not None else read_golden(golden_path)
    _open_stores(run, vector_store_config)
    _load_and_chunk(run)
    picks, unjudged, answers = None, None, None
    try:
        _index_every_model(run)
        picks, unjudged, answers = _search_and_score(run)
    finally:
        for store in run.stores.values():
            store.close()
    run.timings["total_s"] = time.perf_counter() - run.t_start
    return _retrieval_report(run, picks, unjudged, answers)


def _checked_run(docs_dir: str | Path, golden_path: str | Path, out_dir: str | Path, options: EvaluateOptions,
                 status: Callable[[str], Any], embedding_model: EmbeddingModel | None,
                 embedding_models: Sequence[Any] | None, reranker: Reranker | str | None) -> _RetrievalRun:
    """Check every setting and model before any work, and choose the setups.

    Raises:
        ConfigError: bad chunking, slice, setup or folder settings, a model listed twice, model
            files whose sha256 differs, ``--only``/``--skip`` leaving nothing.
    """
    started, t_start = datetime.now(timezone.utc), time.perf_counter()
    workspace = Workspace.at(out_dir)
    chunker = get_chunker(options.chunking_method, options.chunk_size, options.chunk_overlap,  # validates first
                          embed_title=options.embed_title)
    for key in options.by:
        check_slice_key(key)
    for setup in options.setups:
        setup.to_dict()
    if workspace.root.exists() and not workspace.root.is_dir():
        raise ConfigError(f"output folder {workspace.root} is a file: choose a folder")
    raw_models = list(embedding_models) if embedding_models else [embedding_model or local_embedding_model(DEFAULT_LOCAL_EMBEDDING)]
    ids = [m.model_id for m in raw_models]
    if len(set(ids)) != len(ids):
        raise ConfigError(f"an embedding model is listed twice: {', '.join(ids)}")
    for m in raw_models:  # model files whose checksum differs stop the run here, before any work
        verify = getattr(m, "verify", None)
        if verify is not None:
            verify()
    skipped_setups: list[dict[str, Any]] = []
    reranker = _usable_reranker(reranker, skipped_setups)
    setups = build_setups(options.setups, ids, reranker.model_id if reranker is not None else None)
    setups = select_setups(setups, options.only, options.skip)
    return _RetrievalRun(options=options, status=status, workspace=workspace, golden_path=golden_path,
                         docs_dir=docs_dir, raw_models=raw_models, ids=ids, reranker=reranker, setups=setups,
                         skipped_setups=skipped_setups, chunker=chunker, started=started, t_start=t_start)


def _usable_reranker(reranker: Reranker | str | None, skipped_setups: list[dict[str, Any]]) -> Any:
    """``reranker`` (the local one for ``"default"``) when it can run, else None with the reason
    in ``skipped_setups``."""
    if reranker == "default":
        try:
            reranker = local_reranker()
        except ConfigError as exc:
            skipped_setups.append({"key": "*+rerank", "reason": f"no reranker: {exc}"})
            return None
    if reranker is not None:
        try:
            reranker.verify()
        except ConfigError as exc:
            skipped_setups.append({"key": "*+rerank", "reason": f"reranker {reranker.model_id} cannot run: {exc}"})
            return None
    return reranker


def _open_stores(run: _RetrievalRun, vector_store_config: MilvusLiteConfig | MilvusConfig | PGVectorConfig) -> None:
    """Open the cache and the vector store before the slow steps, so a locked, broken or
    unreachable store fails at once. The output folder is created first, with its marker, so
    the documents loaded next never hold it (``--docs .`` with the default ``--out``)."""
    run.workspace.create()
    run.cache = open_cache(run.workspace)
    run.models = {m.model_id: cached_model(m, run.workspace, run.cache) for m in run.raw_models}
    if run.reranker is not None and any(s.reranker for s in run.setups):
        run.reranker = CachedReranker(run.reranker, run.cache)  # scores kept by model, query and passage, across runs
    run.store_config = store_config(vector_store_config, run.workspace)
    probe = get_vector_store(next(iter(run.models.values())), run.store_config, "ragtune_probe")
    try:
        probe.exists()
    finally:
        probe.close()


def _load_and_chunk(run: _RetrievalRun) -> None:
    """Load the documents, check the golden file against them, chunk them and find the
    evidence no chunk holds.

    Raises:
        DocumentError: no loadable document. IndexingError: no chunk.
    """
    options, golden = run.options, run.golden
    docs_shown = shown_address(run.docs_dir)
    run.status(f"loading documents from {docs_shown}")
    t0 = time.perf_counter()
    with _progress(0, "loading", options.show_progress) as bar:
        def loading(done: int, total: int) -> None:
            bar.total = total
            bar.n = done
            bar.refresh()

        run.loaded = load_documents(run.docs_dir, progress=loading, cache_dir=run.workspace.inputs)
    run.timings["load_s"] = time.perf_counter() - t0
    documents = run.documents = run.loaded.documents
    _stop_when_no_expected_document_loaded(golden.questions, documents, run.loaded.skipped, docs_shown)
    # The bytes already read, checked again against the corpus for missing-document warnings
    # (a file that is there but did not load is said by corpus_warnings, with its reason).
    corpus_check = check_golden(run.golden_path, documents=[d.document_id for d in documents]
                                + [s.document_id for s in run.loaded.skipped], data=golden.raw)
    # a question none of whose expected documents loaded could only score 0 through no fault of
    # any setup: it is left out of the scores and counted
    left_out = unloaded_questions(golden.questions, documents, run.loaded.skipped)
    run.warnings = corpus_check.warnings + corpus_warnings(golden.questions, documents, run.loaded.skipped, left_out)
    if left_out:
        run.left_out = [{"id": q.id, "line": q.line, "reason": left_out[q.id]} for q in golden.questions
                        if q.id in left_out]
        golden = run.golden = replace(golden, questions=[q for q in golden.questions if q.id not in left_out])

    run.status(f"chunking {len(documents)} documents ({run.chunker.name})")
    t0 = time.perf_counter()
    with _progress(len(documents), "chunking", options.show_progress) as bar:
        for doc in documents:
            run.chunks.extend(run.chunker.chunk([doc]))
            bar.update(1)
    run.timings["chunk_s"] = time.perf_counter() - t0
    if not run.chunks:
        raise IndexingError(f"the documents in {docs_shown} gave no chunks")
    stale_warnings = stale_evidence_warnings(golden.questions, pieces_from_chunks(run.chunks), documents)
    run.stale_ids = stale_question_ids(golden.questions, stale_warnings)
    run.warnings += stale_warnings
    run.warnings += slice_warnings(golden.questions, options.by)
    run.corpus_id = corpus_fingerprint(documents)
    run.chunking = {"method": run.chunker.name, **run.chunker.params()}
    run.chunking.setdefault("embed_title", False)  # said either way (TitleInText adds it when on)


def _index_every_model(run: _RetrievalRun) -> None:
    """Build or reuse one collection per embedding model (:func:`core.evaluation.indexing.build_index`)."""
    options, chunks = run.options, run.chunks
    t0 = time.perf_counter()
    for model_id, model in run.models.items():
        collection = collection_for(run.corpus_id, run.chunking, model_id)
        store = run.stores[model_id] = get_vector_store(model, run.store_config, collection)
        truncated_before = getattr(model.model, "n_truncated", 0)
        reused = store.exists() and store.count() == len(chunks)
        if reused:
            run.status(f"reusing collection {collection} ({len(chunks)} chunks, {model_id})")
        else:
            run.status(f"embedding and indexing {len(chunks)} chunks into {collection} ({model_id})")
            limit = model.max_input_tokens
            if limit and options.chunking_method != "hierarchical" and options.chunk_size > limit:
                run.warnings.append(Problem(
                    "warning",
                    f"chunk size {options.chunk_size} tokens exceeds {model_id}'s input of {limit} tokens: "
                    "text past the limit is not embedded",
                ))
            with _progress(len(chunks), f"embedding ({model_id})", options.show_progress) as bar:
                build_index(store, chunks, model, reuse=False, on_batch=bar.update)
        run.indexing_models.append({
            "embedding_model": model_id, "collection": collection, "reused": reused, "embedding": model.stats(),
            "n_truncated": getattr(model.model, "n_truncated", 0) - truncated_before,
        })
    run.timings["index_s"] = time.perf_counter() - t0


def _search_and_score(run: _RetrievalRun) -> tuple[dict[str, Any], Any, Any]:
    """Time the question embeddings, search every question with every setup, rerank, score
    and pick; then label unjudged results and answer, as asked. Returns ``(picks, unjudged,
    answers)``."""
    options, questions, setups, reranker = run.options, run.golden.questions, run.setups, run.reranker
    t0 = time.perf_counter()
    query_ms: dict[str, list[float]] = {}
    for model_id, model in run.models.items():
        if any(s.embedding_model == model_id for s in setups):
            run.status(f"embedding {len(questions)} questions one by one with {model_id} (timed)")
            query_ms[model_id] = _time_query_embeddings(model, questions)
    run.timings["embed_questions_s"] = time.perf_counter() - t0

    run.rank_grain = options.rank_grain or choose_rank_grain(questions, [d.document_id for d in run.documents],
                                                             run.stale_ids)
    run.per_setup = {q.id: {} for q in questions}
    memo = _RerankMemo(reranker) if reranker is not None else None
    if memo is not None and any(s.reranker for s in setups) and questions:
        try:  # untimed, and not cached: loads the model or opens the connection
            getattr(reranker, "reranker", reranker).rerank(questions[0].question, [c.text for c in run.chunks[:2]])
        except RagtuneError as exc:  # each reranked setup then fails with the reason
            logger.warning("reranker %s failed: %s", reranker.model_id, exc)
    run.rerank_truncated_before = getattr(reranker, "n_truncated", 0) if reranker is not None else 0
    t0 = time.perf_counter()
    with _progress(len(questions) * len(setups), "searching", options.show_progress) as bar:
        first = {setup.key: _first_stage(setup, run.stores[setup.embedding_model or run.ids[0]], questions, bar)
                 for setup in setups}
    settled = settled_reranked_setups(setups, {k: f.hits for k, f in first.items() if f.error is None},
                                      questions, run.rank_grain)
    for key, reason in settled.items():
        run.status(f"{key} not run: {reason}")
        run.skipped_setups.append({"key": key, "reason": reason, "rule": SETTLED_RULE})
    rerank_error = None
    if memo is not None:
        reranked = [s for s in setups if s.reranker and s.key not in settled and first[s.key].error is None]
        t1 = time.perf_counter()
        rerank_error = _score_reranked(memo, reranked, first, questions, run.status, options.show_progress)
        run.timings["rerank_s"] = time.perf_counter() - t1
    for setup in setups:
        if setup.key in settled:
            continue
        error = first[setup.key].error or (rerank_error if setup.reranker else None)
        if error is not None:
            run.setup_results.append({"name": setup.key, "key": setup.key, "setup": setup.to_dict(),
                                      "status": "failed", "error": error})
            continue
        run.setup_results.append(_scored_setup(run, setup, first[setup.key], memo, query_ms))
    run.timings["search_s"] = time.perf_counter() - t0
    picks = _picked(run)
    return picks, _unjudged(run), _answers(run, picks)


def _scored_setup(run: _RetrievalRun, setup: EvalSetup, stage: _FirstStage, memo: "_RerankMemo | None",
                  query_ms: dict[str, list[float]]) -> dict[str, Any]:
    """One setup's report entry: its hits kept (reranked when it reranks), its metrics at every
    grain and slice, its counts found and its latencies; fills the run's per-question rows."""
    questions = run.golden.questions
    rankings: dict[str, list[Any]] = {}
    hits_by_q = run.ranked_by_setup[setup.key] = {}
    rerank_ms: list[float] = []
    for q in questions:
        hits = stage.hits[q.id]
        if setup.reranker:
            hits, cost_ms = memo.rerank(q.question, hits, TOP_K)
            rerank_ms.append(cost_ms)
        hits_by_q[q.id] = hits[:TOP_K]
        rankings[q.id] = [h.chunk for h in hits[:TOP_K]]
    search_ms = stage.search_ms
    grains = evaluate_rankings(questions, rankings, grains=GRAINS, ks=KS)
    rank_result = grains[run.rank_grain]
    for q in questions:
        r = rank_result.per_question[q.id]
        run.per_setup[q.id][setup.key] = {"first_relevant_rank": r.first_relevant_rank,
                                          "top": _top(hits_by_q[q.id], r.judgement)}
    scored = [r for r in rank_result.per_question.values() if r.scores is not None]
    run.found_vectors[setup.key] = [r.scores[f"found@{TOP_K}"] > 0 for r in scored]
    embed = query_ms.get(setup.embedding_model, []) if setup.embedding_model else []
    total = [s + (embed[i] if embed else 0.0) + (rerank_ms[i] if rerank_ms else 0.0)
             for i, s in enumerate(search_ms)]
    search_stats = stats_ms(search_ms)
    return {
        "name": setup.key,
        "key": setup.key,
        "setup": setup.to_dict(),
        "status": "ok",
        "metrics": {g: res.aggregate.to_dict() for g, res in grains.items()},
        "slices": setup_slices(questions, grains, run.options.by),
        "found_top10": sum(run.found_vectors[setup.key]),
        "found_first": sum(1 for r in scored if r.scores["found@1"] > 0),
        "n_scored": len(scored),
        "timings_ms": {
            **search_stats,  # the search alone, as reports before the split gave it
            "n": len(search_ms),
            "search": search_stats,
            "query_embedding": stats_ms(embed) if embed else None,
            "rerank": stats_ms(rerank_ms) if rerank_ms else None,
            "total": stats_ms(total),
        },
    }


def _picked(run: _RetrievalRun) -> dict[str, Any]:
    """The picks over the setups that ran; marks each with ``tied_with_best`` and its McNemar
    test against the best."""
    ok = [r for r in run.setup_results if r["status"] == "ok"]
    picks = pick_setups([
        {"name": r["name"], "found_top10": r["found_top10"], "found_first": r["found_first"],
         "n_scored": r["n_scored"], "median_ms": r["timings_ms"]["total"]["median"],
         "found": run.found_vectors[r["name"]]}
        for r in ok
    ])
    for r in ok:
        r["tied_with_best"] = bool(picks["tied_with_best"].get(r["name"], False))
        r["mcnemar_vs_best"] = picks["mcnemar"].get(r["name"])
    return picks


def _unjudged(run: _RetrievalRun) -> Any:
    """With ``--label-unjudged`` and a judge: the judge's grades of the top results the golden
    file does not name (``core.evaluation.unjudged``); else None."""
    options = run.options
    if not (options.label_unjudged and options.judge is not None):
        return None

    run.status("grading the top results the golden file does not name, with the judge (UMBRELA)")
    t0 = time.perf_counter()
    unjudged = grade_top_results(run.golden.questions, run.per_setup, run.chunks, options.judge, run.cache,
                                 depth=options.label_depth)
    run.timings["labels_s"] = time.perf_counter() - t0
    return unjudged


def _answers(run: _RetrievalRun, picks: dict[str, Any]) -> Any:
    """With ``--generate``: answer every question with the setup that finds the most and score
    the answers (``core.evaluation.answers``); else None."""
    if not run.options.generate:
        return None

    options, setups, questions = run.options, run.setups, run.golden.questions
    ok_keys = {r["key"] for r in run.setup_results if r["status"] == "ok"}
    by_key = {s.key: s for s in setups}
    answer_setup = by_key.get(picks["finds_the_most"] or "") or next(
        (s for s in setups if s.key in ok_keys), setups[0])
    if getattr(run.golden, "format", "ragtune") == "bedrock-byoi":
        run.status(f"scoring the {len(questions)} answers and passages the file holds (nothing is generated)")
    else:
        why = "" if picks["finds_the_most"] else " (no setup could be ranked, so the first)"
        run.status(f"answering {len(questions)} questions with {answer_setup.key}{why}")
    model_id = answer_setup.embedding_model or run.ids[0]
    answer_store = run.stores[model_id]
    if answer_setup.reranker:
        # the setup's reranked results, already computed, answer the same questions again
        ranked = {q.question: hits for q in questions
                  if (hits := run.ranked_by_setup.get(answer_setup.key, {}).get(q.id)) is not None}
        answer_store = RerankingStore(answer_store, run.reranker, answer_setup.depth, ranked=ranked,
                                      ranked_setup=answer_setup.search.to_dict(), keep=TOP_K)
    t0 = time.perf_counter()
    with _progress(len(questions), "answering", options.show_progress) as bar:
        # parent-child: the small chunks were searched and scored; the generator reads their parents
        handing = ParentHandingStore(answer_store, run.chunks) if run.chunker.name == "parent-child" else answer_store
        answers = evaluate_answers(
            handing, run.models[model_id], run.golden, answer_setup.search, chat_model=options.chat_model,
            judge=options.judge, on_answer=lambda done, total: bar.update(1),
            judge_repeat=options.judge_repeat,
        )
    if answers is not None and (answers.get("generator") or {}).get("setup") is not None:
        answers["generator"]["setup"] = answer_setup.key
    run.timings["answers_s"] = time.perf_counter() - t0
    return answers


def _retrieval_report(run: _RetrievalRun, picks: dict[str, Any], unjudged: Any, answers: Any) -> dict[str, Any]:
    """The ``retrieval`` report of a finished run (see :func:`evaluate_retrieval`)."""
    questions, golden, reranker, documents = run.golden.questions, run.golden, run.reranker, run.documents
    per_question = [{
        "id": q.id, "line": q.line, "question": q.question, "expected": [str(t) for t in q.expected],
        "first_relevant_rank": {k: v["first_relevant_rank"] for k, v in run.per_setup[q.id].items()},
        "top": {k: v["top"] for k, v in run.per_setup[q.id].items()},
    } for q in questions]
    first = run.indexing_models[0]
    golden_part = golden_block(run.golden_path, golden, **labelled_counts(golden),
                               **({"n_left_out": len(run.left_out), "left_out": run.left_out} if run.left_out else {}),
                               warnings=[p.to_dict() for p in run.warnings])
    corpus_part = corpus_block(run.docs_dir, run.loaded, run.corpus_id,
                               n_pages=sum(d.n_pages for d in documents), n_chunks=len(run.chunks))
    rank_grain_reason = ("chosen with --rank-by" if run.options.rank_grain else
                         "the finest grain with a question whose labels name a document that loaded"
                         " (and, for evidence, a quote some chunk holds)")
    return envelope("retrieval", {
        "indexing": {
            # the first model's collection, as reports with one model gave it
            "collection": first["collection"], "reused": first["reused"], "embedding_model": first["embedding_model"],
            "embedding": first["embedding"],
            "vector_store": backend_name(run.store_config), "vector_store_location": describe_store(run.store_config),
            "chunking": run.chunking,
            "models": run.indexing_models,
        },
        "reranker": None if reranker is None else {
            "model_id": reranker.model_id, "retrieval_depth": RERANK_DEPTH, "keep": TOP_K,
            "n_truncated": getattr(reranker, "n_truncated", 0) - run.rerank_truncated_before,
            "cache": reranker.stats() if isinstance(reranker, CachedReranker) else None,
        },
        "evaluation": {"top_k": TOP_K, "ks": list(KS), "grains": list(GRAINS), "rank_grain": run.rank_grain,
                       "rank_grain_reason": rank_grain_reason},
        "setups": run.setup_results,
        "skipped_setups": run.skipped_setups,
        "picks": picks,
        "undecided": undecided_setups(picks, sum(1 for r in run.setup_results if r["status"] == "ok"), run.rank_grain),
        "answers": answers,
        **({"unjudged": unjudged} if unjudged is not None else {}),
        "questions": per_question,
    }, started=run.started, golden=golden_part, corpus=corpus_part, timings_s=run.timings,
        versions=package_versions(), models=[*run.raw_models, reranker])  # models: source, revision, sha256
