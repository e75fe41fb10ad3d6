"""Score every setup of several targets with one golden file, in one run and one report.

Steps: open every target (a bad field mapping stops the run here, before any search; a target
that cannot be reached or refuses is recorded as failed with the reason and the others go on)
-> describe each and list the expected documents it lacks -> embed each question once, timed
(for the setups whose queries ragtune embeds) -> search every question with every setup of
every target, and again reranked by ragtune's reranker -> retrieval metrics with intervals at
every grain (``core.metrics.retrieval.evaluate_rankings``), McNemar ties and the three picks
across all targets (``core.evaluation.retrieval.pick_setups``) and within each -> with
``label_unjudged`` and a judge, the judge's grades of the top results the golden file does not
name (``core.evaluation.unjudged``, as ``evaluate`` over documents grades them) -> the report.

A setup is reported as ``<target>/<setup key>``; the report keeps each target's description
(engine, index, counts, fingerprint), its setups, the ones it does not offer and why, and the
expected documents it lacks. It reads like an ``evaluate`` report (same ``setups``, ``picks``,
``questions`` blocks), so pages, exports and the gate read it too.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Callable, Sequence

from core.documents import corpus_fingerprint
from core.errors import ConfigError, RagtuneError, StoreError
from core.evaluation.collection_target import CollectionTarget
from core.evaluation.envelope import envelope, golden_block, labelled_counts
from core.evaluation.indexing import cached_model, store_config as store_or_default
from core.evaluation.retrieval import (SETTLED_RULE, _progress, _top, choose_rank_grain, package_versions,
                                       pick_setups, select_setups, settled_reason, undecided_setups)
from core.evaluation.unjudged import LABEL_DEPTH, grade_top_results
from core.evaluation.waits import stats_ms
from core.golden import check_golden, read_golden
from core.inputs import shown_address
from core.metrics.retrieval import DEFAULT_KS as KS, evaluate_rankings
from core.metrics.retrieval import GRAINS, TOP_K
from core.models import CachedEmbeddingModel
from core.models.local import local_reranker
from core.models.rerank import rerank_order
from core.targets.base import QueryVectors
from core.targets.open import open_target
from core.vectorstores.rerank import RERANK_DEPTH
from core.workspace import Workspace

if TYPE_CHECKING:
    from core.golden.types import GoldenSet
    from core.models.embeddings import EmbeddingModel
    from core.models.rerank import Reranker
    from core.settings import Settings
    from core.vectorstores.milvus import MilvusConfig, MilvusLiteConfig
    from core.vectorstores.pgvector import PGVectorConfig

logger = logging.getLogger(__name__)

#: The suffix of a setup ragtune's reranker reorders.
RERANKED = "+rerank"


@dataclass(frozen=True)
class RunSetup:
    """One setup of one target in a run.

    Attributes:
        target: the target's name.
        setup: the target's ``TargetSetup``.
        reranker: the reranker's model id when ragtune reranks the first stage, else None.
    """

    target: str
    setup: Any
    reranker: str | None = None

    @property
    def key(self) -> str:
        """The setup's name in reports, ``--only`` and ``--skip``: ``<target>/<key>[+rerank]``."""
        return f"{self.target}/{self.setup.key}{RERANKED if self.reranker else ''}"

    @property
    def depth(self) -> int:
        """Results the first stage fetches: ``TOP_K``, or ``RERANK_DEPTH`` before a reranker."""
        return RERANK_DEPTH if self.reranker else TOP_K

    def to_dict(self) -> dict[str, Any]:
        """The setup as JSON: the target's setup, ``reranker``, ``retrieval_depth``."""
        return {**self.setup.to_dict(), "target": self.target, "reranker": self.reranker,
                "retrieval_depth": self.depth}


@dataclass
class TargetsOptions:
    """Settings of a run over targets.

    Attributes:
        rank_grain: grain the setups are ranked by, or None for the finest labelled one.
        only: shell-style patterns of setup names to keep (``prod/*``, ``*/dense*``).
        skip: shell-style patterns of setup names to leave out.
        show_progress: show a progress bar on stderr.
        chunking: ``(method, size, overlap)`` of the collection built from ``docs``.
        embed_title: put each document's title before its chunks' text (built collection).
        label_unjudged: with ``judge``, grade every setup's top results the golden file does
            not name (``core.evaluation.unjudged``) and report the measures with those labels.
        judge: the judge ``ChatModel`` that grades them, or None.
        label_depth: results per setup and question graded then.
    """

    rank_grain: str | None = None
    only: Sequence[str] = ()
    skip: Sequence[str] = ()
    show_progress: bool = True
    chunking: tuple[str, int, int] = ("recursive", 256, 32)
    embed_title: bool = True
    label_unjudged: bool = False
    judge: Any = None
    label_depth: int = LABEL_DEPTH


@dataclass
class _Opened:
    """A target of the run and what was learnt of it."""

    name: str
    kind: str
    target: Any = None
    error: str | None = None
    description: Any = None
    missing: list[str] = field(default_factory=list)


class _TextRerankMemo:
    """A reranker's score of each (question, text) pair within one run, each pair scored once;
    its measured cost (the call's time shared evenly among the pairs it scored) is charged to
    every setup that reranks the pair. Keyed by text, not chunk id: targets share no ids."""

    def __init__(self, reranker: Reranker) -> None:
        self.reranker = reranker
        self._memo: dict[tuple[str, str], tuple[float, float]] = {}

    def rerank(self, question: str, hits: Sequence[Any], k: int) -> tuple[list[Any], float]:
        """The best ``k`` hits by the reranker's score (the hit's score becomes it), and the
        milliseconds scoring them cost.

        Raises:
            RerankError: the reranker failed.
        """
        from dataclasses import replace

        need = list(dict.fromkeys(h.text for h in hits if (question, h.text) not in self._memo))
        if need:
            start = time.perf_counter()
            scores = self.reranker.rerank(question, need)
            cost = (time.perf_counter() - start) * 1000.0 / len(need)
            for text, score in zip(need, scores):
                self._memo[(question, text)] = (float(score), cost)
        pairs = [self._memo[(question, h.text)] for h in hits]
        order = rerank_order([score for score, _ in pairs])[:k]
        return [replace(hits[i], score=pairs[i][0]) for i in order], sum(cost for _, cost in pairs)


def _open(specs: Sequence[Any], settings: Settings, vectors: QueryVectors,
          status: Callable[[str], None]) -> list[_Opened]:
    """Open every target; unreachable or refusing ones are kept with their error.

    Raises:
        ConfigError: a bad mapping or location (before any search).
    """
    out = []
    for spec in specs:
        status(f"opening target {spec.name} ({spec.kind} {spec.index} at {spec.shown_location()})")
        try:
            out.append(_Opened(spec.name, spec.kind, target=open_target(spec, settings, vectors)))
        except (StoreError, OSError) as exc:  # TargetError is a StoreError
            logger.info("target %s failed: %s", spec.name, exc)  # the report says why, once
            out.append(_Opened(spec.name, spec.kind, error=str(exc)[:2000]))
        except ConfigError:
            for opened in out:
                if opened.target is not None:
                    opened.target.close()
            raise
    return out


def _describe(opened: Sequence[_Opened], expected: set[str], status: Callable[[str], None]) -> None:
    """Describe each open target and list the expected documents it lacks; a failure marks it
    failed."""
    for o in opened:
        if o.target is None:
            continue
        status(f"describing target {o.name}")
        try:
            o.description = o.target.describe()
            o.missing = o.target.missing(expected)
        except RagtuneError as exc:
            o.error = str(exc)[:2000]
            o.target.close()
            o.target = None


def _plan(opened: Sequence[_Opened], reranker: Reranker | None, options: TargetsOptions) -> list[RunSetup]:
    """Every setup of every open target, each also reranked (except those the engine's own
    semantic ranker reorders), filtered by ``only`` / ``skip``.

    Raises:
        ConfigError: a pattern that matches no setup, or none left.
    """
    setups: list[RunSetup] = []
    for o in opened:
        if o.target is None:
            continue
        for s in o.target.setups():
            setups.append(RunSetup(o.name, s))
            if reranker is not None and not s.option("semantic_configuration"):  # not over the engine's reranker
                setups.append(RunSetup(o.name, s, reranker.model_id))
    if not setups:
        return []
    return select_setups(setups, options.only, options.skip)


def _search_setup(run: RunSetup, target: Any, questions: Sequence[Any], memo: _TextRerankMemo | None,
                  bar: Any) -> tuple[dict[str, list[Any]], list[float], list[float]]:
    """Every question's hits with one setup (one untimed search first), and the search and
    rerank milliseconds per question.

    Raises:
        RagtuneError: the target or the reranker failed.
    """
    hits_by_q: dict[str, list[Any]] = {}
    search_ms: list[float] = []
    rerank_ms: list[float] = []
    if questions:
        target.search(questions[0].question, run.setup, run.depth)
    for q in questions:
        start = time.perf_counter()
        hits = target.search(q.question, run.setup, run.depth)
        search_ms.append((time.perf_counter() - start) * 1000.0)
        if run.reranker:
            hits, cost = memo.rerank(q.question, hits, TOP_K)
            rerank_ms.append(cost)
        hits_by_q[q.id] = list(hits[:TOP_K])
        bar.update(1)
    return hits_by_q, search_ms, rerank_ms


def _score(run: RunSetup, hits_by_q: dict[str, list[Any]], search_ms: list[float], rerank_ms: list[float],
           questions: Sequence[Any], rank_grain: str, embed_ms: dict[str, float],
           per_setup: dict[str, dict[str, Any]]) -> tuple[dict[str, Any], list[bool]]:
    """One setup's report entry (as ``evaluate`` writes it, with its ``target``) and its
    found-in-top-10 vector at the rank grain."""
    retrieved = {qid: [h.retrieved(r) for r, h in enumerate(hits, start=1)] for qid, hits in hits_by_q.items()}
    grains = evaluate_rankings(questions, {qid: [r.chunk for r in rs] for qid, rs in retrieved.items()},
                               grains=GRAINS, ks=KS)
    rank_result = grains[rank_grain]
    for q in questions:
        r = rank_result.per_question[q.id]
        per_setup[q.id][run.key] = {"first_relevant_rank": r.first_relevant_rank,
                                    "top": _top(retrieved[q.id], r.judgement)}
    scored = [r for r in rank_result.per_question.values() if r.scores is not None]
    found = [r.scores[f"found@{TOP_K}"] > 0 for r in scored]
    embed = [embed_ms.get(q.question, 0.0) for q in questions] if run.setup.embedding_model else []
    total = [s + (embed[i] if embed else 0.0) + (rerank_ms[i] if rerank_ms else 0.0) for i, s in enumerate(search_ms)]
    search_stats = stats_ms(search_ms)
    entry = {
        "name": run.key, "key": run.key, "target": run.target, "setup": run.to_dict(), "status": "ok",
        "metrics": {g: res.aggregate.to_dict() for g, res in grains.items()},
        "found_top10": sum(found), "found_first": sum(1 for r in scored if r.scores["found@1"] > 0),
        "n_scored": len(scored),
        "timings_ms": {**search_stats, "n": len(search_ms), "search": search_stats,
                       "query_embedding": stats_ms(embed) if embed else None,
                       "rerank": stats_ms(rerank_ms) if rerank_ms else None, "total": stats_ms(total)},
    }
    return entry, found


def _pick(entries: Sequence[dict[str, Any]], found: dict[str, list[bool]]) -> dict[str, Any]:
    return pick_setups([{"name": e["name"], "found_top10": e["found_top10"], "found_first": e["found_first"],
                         "n_scored": e["n_scored"], "median_ms": e["timings_ms"]["total"]["median"],
                         "found": found[e["name"]]} for e in entries if e["status"] == "ok"])


def _reranker(reranker: Reranker | str | None, skipped: list[dict[str, str]]) -> Any:
    """The reranker to use (``"default"``: the local cross-encoder), or None with the reason in
    ``skipped``."""
    if reranker == "default":
        try:
            reranker = local_reranker()
        except ConfigError as exc:
            skipped.append({"key": f"*{RERANKED}", "reason": f"no reranker: {exc}"})
            return None
    if reranker is not None:
        try:
            reranker.verify()
        except ConfigError as exc:
            skipped.append({"key": f"*{RERANKED}", "reason": f"reranker {reranker.model_id} cannot run: {exc}"})
            return None
    return reranker


def _target_entry(o: _Opened, entries: Sequence[dict[str, Any]], found: dict[str, list[bool]],
                  n_expected: int) -> dict[str, Any]:
    """A target's block of the report."""
    mine = [e for e in entries if e.get("target") == o.name]
    error = o.error
    if error is None and mine and all(e["status"] != "ok" for e in mine):
        error = f"every setup failed: {mine[0].get('error')}"
    return {"name": o.name, "kind": o.kind, "status": "failed" if error else "ok", "error": error,
            "description": o.description.to_dict() if o.description is not None else None,
            "setups": [e["name"] for e in mine],
            "missing_documents": list(o.missing), "n_expected_documents": n_expected,
            "picks": _pick(mine, found) if not error and mine else None}


def evaluate_targets(
    golden_path: str,
    specs: Sequence[Any],
    *,
    settings: Settings,
    out_dir: Any,
    docs: str | None = None,
    golden: GoldenSet | None = None,
    embedding_model: EmbeddingModel | None = None,
    reranker: Reranker | str = "default",
    store_config: MilvusLiteConfig | MilvusConfig | PGVectorConfig | None = None,
    options: TargetsOptions | None = None,
    on_status: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Evaluate every setup of every target and return the report (not yet stored).

    Args:
        golden_path: the golden file (a path or an address).
        specs: the targets (``core.targets.spec.TargetSpec``), opened with ``settings``.
        settings: ``core.settings.Settings`` (endpoints, keys, the PostgreSQL connection).
        out_dir: the working folder (embedding cache, the built collection's inputs).
        docs: a documents folder to build ragtune's own collection from, as one more target
            (named :data:`core.targets.spec.BUILT_TARGET`), or None.
        golden: the ``GoldenSet`` when read already.
        embedding_model: the model ragtune embeds questions (and ``docs``) with; default the
            configured one. A ``CachedEmbeddingModel`` brings its own cache; any other model is
            cached in ``out_dir``.
        reranker: a ``Reranker``, None, or ``"default"`` (the local cross-encoder).
        store_config: the vector store of the built collection (default Milvus Lite in
            ``out_dir``).
        options: ranking, filtering and chunking settings.
        on_status: called with a short line when a step starts.

    Returns:
        The report: ``evaluate``'s blocks (``golden``, ``evaluation``, ``setups`` each with its
        ``target``, ``picks`` across every target, ``questions``, ``timings_s``) plus
        ``targets`` (one block per target: status and error, description, setups, missing
        documents, its own picks) and ``corpus`` / ``indexing`` of the built collection (None
        without ``docs``).

    Raises:
        ConfigError: a bad mapping or target, patterns that match nothing, or no target at all.
        GoldenError: the golden file has errors.
    """
    from pathlib import Path

    options = options or TargetsOptions()
    status = on_status or (lambda message: logger.info(message))
    started, t_start = datetime.now(timezone.utc), time.perf_counter()
    out_dir = Path(out_dir)
    if not specs and not docs:
        raise ConfigError("give at least one target (--target, --targets) or --docs")
    golden = golden if golden is not None else read_golden(golden_path)
    questions = golden.questions
    model = embedding_model or settings.embedding_model()
    if isinstance(model, CachedEmbeddingModel):  # the caller's cache: its chunks are embedded once
        cached, model = model, model.model
    else:
        cached = cached_model(model, Workspace.at(out_dir))
    vectors = QueryVectors(model)
    skipped: list[dict[str, str]] = []
    reranker = _reranker(reranker, skipped)
    timings: dict[str, float] = {}
    opened = _open(specs, settings, vectors, status)
    built = None
    try:
        if docs:
            built = _build(docs, cached, vectors, out_dir, store_config, options, status)
            opened.append(_Opened(built.name, "ragtune", target=built))
        expected = {t.document_id for q in questions for t in q.expected}
        _describe(opened, expected, status)
        setups = _plan(opened, reranker, options)
        timings["open_s"] = time.perf_counter() - t_start
        texts: dict[str, str] = {}
        entries, found, per_setup, rank_grain, reason = _run(opened, setups, questions, vectors, reranker, options,
                                                             expected, status, timings, texts, skipped)
    finally:
        for o in opened:
            if o.target is not None:
                o.target.close()
    picks = _pick(entries, found)
    for e in entries:
        if e["status"] == "ok":
            e["tied_with_best"] = bool(picks["tied_with_best"].get(e["name"], False))
            e["mcnemar_vs_best"] = picks["mcnemar"].get(e["name"])
    unjudged = _labels(questions, setups, per_setup, texts, cached.cache, options, status, timings)
    warnings = check_golden(golden_path, data=golden.raw).warnings
    timings["total_s"] = time.perf_counter() - t_start
    return envelope("retrieval", {
        "corpus": _corpus(built, docs), "indexing": _indexing(built, model),
        "targets": [_target_entry(o, entries, found, len(expected)) for o in opened],
        "reranker": None if reranker is None else {"model_id": reranker.model_id, "retrieval_depth": RERANK_DEPTH,
                                                   "keep": TOP_K},
        "evaluation": {"top_k": TOP_K, "ks": list(KS), "grains": list(GRAINS), "rank_grain": rank_grain,
                       "rank_grain_reason": reason, "embedding_model": vectors.model_id},
        "setups": entries, "skipped_setups": skipped, "picks": picks, "answers": None,
        "undecided": undecided_setups(picks, sum(1 for e in entries if e["status"] == "ok"), rank_grain),
        "questions": [{"id": q.id, "line": q.line, "question": q.question, "expected": [str(t) for t in q.expected],
                       "first_relevant_rank": {k: v["first_relevant_rank"] for k, v in per_setup[q.id].items()},
                       "top": {k: v["top"] for k, v in per_setup[q.id].items()}} for q in questions],
        **({"unjudged": unjudged} if unjudged is not None else {}),
    }, started=started, timings_s=timings, versions=_versions(),
        golden=golden_block(golden_path, golden, **labelled_counts(golden), warnings=[p.to_dict() for p in warnings]))


def _run(opened: Sequence[_Opened], setups: Sequence[RunSetup], questions: Sequence[Any], vectors: QueryVectors,
         reranker: Reranker | None, options: TargetsOptions, expected: set[str], status: Callable[[str], None],
         timings: dict[str, float], texts: dict[str, str] | None, skipped: list[dict[str, str]]
         ) -> tuple[list[dict[str, Any]], dict[str, list[bool]], dict[str, dict[str, Any]], str, str]:
    """Embed the questions, search with every setup, score each; ``texts`` (when given)
    gets each kept hit's text by ``<target>/<chunk id>``. The page grain of a target whose
    pages are unknown (``TargetDescription.pages_unknown``) scores no question and says why,
    and setups are then ranked by documents unless ``--rank-by`` chose the grain. A reranked
    setup whose plain twin found a right result first for every question scored is not run
    (``core.evaluation.retrieval.SETTLED_RULE``, as ``evaluate`` over documents): it goes to
    ``skipped`` with the reason."""
    held = {d for d in expected if any(o.target is not None and d not in o.missing for o in opened)}
    rank_grain = options.rank_grain or choose_rank_grain(questions, sorted(held))
    reason = ("chosen with --rank-by" if options.rank_grain else
              "the finest grain with a question whose labels name a document some target holds")
    no_pages = {o.name: o.description.pages_unknown for o in opened
                if o.target is not None and o.description is not None and o.description.pages_unknown}
    if rank_grain == "page" and no_pages and not options.rank_grain:
        rank_grain = "doc"
        reason = f"documents, not pages: the pages of target {', '.join(sorted(no_pages))} are unknown"
    start = time.perf_counter()
    if questions and any(s.setup.embedding_model == vectors.model_id for s in setups):
        status(f"embedding {len(questions)} questions one by one with {vectors.model_id} (timed)")
        vectors.model.embed_query(questions[0].question)  # untimed: loads the model
        for q in questions:
            vectors.vector(q.question)
    timings["embed_questions_s"] = time.perf_counter() - start
    targets = {o.name: o.target for o in opened if o.target is not None}
    memo = _TextRerankMemo(reranker) if reranker is not None else None
    entries: list[dict[str, Any]] = []
    found: dict[str, list[bool]] = {}
    per_setup: dict[str, dict[str, Any]] = {q.id: {} for q in questions}
    start = time.perf_counter()
    with _progress(len(questions) * len(setups), "searching", options.show_progress) as bar:
        settled: dict[str, dict[str, Any]] = {}  # plain setup key -> its entry, while it settles its twin
        for run in setups:
            twin = settled.get(f"{run.target}/{run.setup.key}") if run.reranker else None
            if twin is not None:
                skipped.append({"key": run.key, "reason": settled_reason(twin["key"], twin["n_scored"], rank_grain),
                                "rule": SETTLED_RULE})
                bar.update(len(questions))
                continue
            try:
                hits_by_q, search_ms, rerank_ms = _search_setup(run, targets[run.target], questions, memo, bar)
            except RagtuneError as exc:
                logger.info("setup %s failed: %s", run.key, exc)  # the report says why, once
                entries.append({"name": run.key, "key": run.key, "target": run.target, "setup": run.to_dict(),
                                "status": "failed", "error": str(exc)[:2000]})
                continue
            if texts is not None:
                for hits in hits_by_q.values():
                    texts.update((f"{run.target}/{h.chunk_id}", h.text) for h in hits)
            entry, found[run.key] = _score(run, hits_by_q, search_ms, rerank_ms, questions, rank_grain,
                                           vectors.embed_ms, per_setup)
            if run.target in no_pages and entry["metrics"]["page"]["n_scored"]:
                entry["metrics"]["page"] = {**entry["metrics"]["page"], "means": {}, "ci_low": {}, "ci_high": {},
                                            "n_scored": 0, "n_unscorable": len(questions),
                                            "reason": f"pages unknown: {no_pages[run.target]}"}
            entries.append(entry)
            if not run.reranker and entry["n_scored"] and entry["found_first"] == entry["n_scored"]:
                settled[run.key] = entry
    timings["search_s"] = time.perf_counter() - start
    return entries, found, per_setup, rank_grain, reason


@dataclass(frozen=True)
class _Text:
    """A kept hit's text, by its id within the run (``<target>/<chunk id>``), for the labels."""

    chunk_id: str
    text: str


def _labels(questions: Sequence[Any], setups: Sequence[RunSetup], per_setup: dict[str, dict[str, Any]],
            texts: dict[str, str], cache: Any, options: TargetsOptions, status: Callable[[str], None],
            timings: dict[str, float]) -> dict[str, Any] | None:
    """With ``label_unjudged`` and a judge: the judge's grades of every setup's top results the
    golden file does not name (:func:`core.evaluation.unjudged.grade_top_results`, as
    ``evaluate`` over documents grades them), else None. Targets share no chunk ids, so each
    result is named ``<target>/<chunk id>`` here; its text is what the judge reads."""
    if not (options.label_unjudged and options.judge is not None):
        return None
    status("grading the top results the golden file does not name, with the judge (UMBRELA)")
    start = time.perf_counter()
    target_of = {s.key: s.target for s in setups}
    named = {qid: {key: {"top": [{**hit, "chunk_id": f"{target_of[key]}/{hit['chunk_id']}"} for hit in entry["top"]]}
                   for key, entry in by_setup.items() if key in target_of}
             for qid, by_setup in per_setup.items()}
    unjudged = grade_top_results(questions, named, [_Text(k, t) for k, t in texts.items()], options.judge, cache,
                                 depth=options.label_depth)
    timings["labels_s"] = time.perf_counter() - start
    return unjudged


def _build(docs: str, model: EmbeddingModel, vectors: QueryVectors, out_dir: Any,
           store_config: MilvusLiteConfig | MilvusConfig | PGVectorConfig | None, options: TargetsOptions,
           status: Callable[[str], None]) -> Any:
    status(f"building ragtune's collection from {docs}")
    return CollectionTarget.build(docs, model=model, out_dir=out_dir,
                                  store_config=store_or_default(store_config or None, Workspace.at(out_dir)),
                                  vectors=vectors, chunking=options.chunking, embed_title=options.embed_title,
                                  show_progress=options.show_progress, on_status=status)


def _corpus(built: CollectionTarget | None, docs: str | None) -> dict[str, Any] | None:
    if built is None:
        return None
    return {"path": shown_address(docs), "n_documents": len(built.documents),
            "n_pages": sum(d.n_pages for d in built.documents), "n_chunks": len(built.chunks),
            "fingerprint": corpus_fingerprint(built.documents),
            "skipped": [{"document_id": s.document_id, "reason": s.reason} for s in built.skipped]}


def _indexing(built: CollectionTarget | None, model: EmbeddingModel) -> dict[str, Any] | None:
    if built is None:
        return None
    d = built.describe()
    return {"collection": d.index, "reused": built.reused, "embedding_model": model.model_id,
            "vector_store": d.engine, "vector_store_location": d.location}


def _versions() -> dict[str, str]:
    from importlib import metadata

    out = package_versions()
    for name in ("azure-search-documents", "qdrant-client", "psycopg"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def format_targets(report: dict[str, Any], most_missing: int = 5) -> list[str]:
    """The head of a run over targets as text lines: the golden file, then one line per target
    (engine, index, where, counts, fingerprint; or why it failed), the setups it does not offer
    and why, and the expected documents it lacks (the first ``most_missing``)."""
    g = report["golden"]
    lines = [f"golden {g['path']}: {g['n_questions']} questions (sha256 {g['sha256'][:12]}); "
             f"{len(report.get('targets') or [])} targets"]
    for t in report.get("targets") or []:
        d = t.get("description") or {}
        if t.get("status") == "failed" and not d:
            lines.append(f"target {t['name']} ({t.get('kind')}): failed: {t.get('error')}")
            continue
        docs = "?" if d.get("n_documents") is None else d["n_documents"]
        lines.append(f"target {t['name']}: {d.get('engine')} {d.get('index')} at {d.get('location')}: "
                     f"{d.get('n_chunks')} chunks, {docs} documents, fingerprint {d.get('fingerprint')}"
                     + (f"; failed: {t.get('error')}" if t.get("status") == "failed" else ""))
        for u in d.get("unavailable") or []:
            lines.append(f"  not offered: {u['key']}: {u['reason']}")
        if d.get("inferred"):
            lines.append(f"  inferred: {'; '.join(d['inferred'])}")
        missing = t.get("missing_documents") or []
        if missing:
            shown = ", ".join(missing[:most_missing]) + (f" (and {len(missing) - most_missing} more)"
                                                         if len(missing) > most_missing else "")
            lines.append(f"  lacks {len(missing)} of the {t.get('n_expected_documents')} expected documents: {shown}")
    return lines


__all__ = ["RERANKED", "RunSetup", "TargetsOptions", "evaluate_targets", "format_targets"]
