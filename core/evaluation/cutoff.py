"""The answer cut-off: the score below which a program should decline to answer.

Every labelled question's top result is either an *answer* (it comes from one of the
question's expected documents) or a *near miss*; every question of the unanswerable file
(questions no document answers) has a near miss as its top result by definition. With the top
result's score (``similarity``: the search score; ``relevance``: a reranker's score of the
question and the result), the report gives:

- the separation: the probability that an answer outscores a near miss (ties count half),
  the area under the ROC curve, where 0.5 is a coin and 1 separates perfectly;
- the cut-off that best separates them: the score ``t`` ("answer when the score is at least
  t") that maximises the share of answers kept plus the share of near misses declined
  (Youden's J plus one; ties: the lower ``t``, which keeps more answers);
- the trade at candidate values (at most :data:`TRADE_ROWS`: score quantiles and the cut-off);
- the setup (chunking, embedding model, search setup, measure) it belongs to: a cut-off means
  nothing for another setup.

With fewer than :data:`MIN_PER_CLASS` answers or near misses there is no cut-off, and the
report says why.

References:
    J. A. Hanley and B. J. McNeil (1982), "The meaning and use of the area under a receiver
    operating characteristic (ROC) curve" (AUC = Mann-Whitney U / (n1 n0)); W. J. Youden
    (1950), "Index for rating diagnostic tests".
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from core.chunking import get_chunker
from core.documents import corpus_fingerprint, load_documents
from core.errors import ConfigError, GoldenError
from core.evaluation.envelope import envelope, golden_block
from core.evaluation.indexing import build_index, cached_model, collection_for, store_config
from core.golden import read_golden
from core.golden.reader import check_unanswerable
from core.inputs import read_input_bytes, shown_address
from core.models import LocalEmbeddingModel
from core.text import plural
from core.vectorstores import SearchSetup, get_vector_store
from core.workspace import Workspace

if TYPE_CHECKING:
    from core.models.embeddings import EmbeddingModel
    from core.models.rerank import Reranker
    from core.vectorstores.base import VectorStore
    from core.vectorstores.milvus import MilvusConfig, MilvusLiteConfig
    from core.vectorstores.pgvector import PGVectorConfig

logger = logging.getLogger(__name__)

#: Fewest answers and fewest near misses for a cut-off.
MIN_PER_CLASS = 5
#: Most rows of the trade table.
TRADE_ROWS = 21
#: Most problems listed for a bad unanswerable file.
MAX_PROBLEMS = 100
MEASURES: tuple[str, ...] = ("similarity", "relevance")


@dataclass(frozen=True)
class UnanswerableQuestions:
    """The questions of an unanswerable file, ready to ask.

    Attributes:
        questions: ``(id, question, line)`` per question ready (id ``line-N`` when absent).
        n_drafts: rows marked ``"draft": true``, left out until a person has checked that no
            document answers them and removed ``draft`` (as ``ragtune draft`` writes them).
    """

    questions: tuple[tuple[str, str, int], ...]
    n_drafts: int = 0


def read_unanswerable(path: str | Path, golden_ids: dict[str, int] | None = None) -> list[tuple[str, str, int]]:
    """The questions of :func:`read_unanswerable_file`, as a list."""
    return list(read_unanswerable_file(path, golden_ids).questions)


def read_unanswerable_file(path: str | Path, golden_ids: dict[str, int] | None = None) -> UnanswerableQuestions:
    """Read a file of unanswerable questions: JSON Lines, each ``{"question": ...}`` with an
    optional ``id``; an ``expected`` list, if present, must be empty. ``reference``,
    ``hint``, ``metadata`` and ``draft`` are read as in a golden file: a draft (such as the
    unanswerable questions ``ragtune draft`` writes to ``<output>.unanswerable.jsonl``) is
    checked and counted but not asked until ``draft`` is removed.

    Each line gets the golden file's line checks (:func:`core.golden.reader.check_unanswerable`:
    JSON, lone surrogates, NaN, unknown fields, types, duplicate ids and questions), and an id
    that is also in the golden file is an error.

    Args:
        path: the file (local path or storage address).
        golden_ids: the golden file's ids -> their line there, or None.

    Returns:
        The :class:`UnanswerableQuestions`.

    Raises:
        GoldenError: any error on any line, or a labelled question (a non-empty ``expected``):
            every problem as ``file:line: error: field 'x': ...`` (the first
            :data:`MAX_PROBLEMS`); or no question ready (every row a draft, or none at all).
    """
    raw = read_input_bytes(path)
    shown = shown_address(path)
    questions, check = check_unanswerable(raw, shown, golden_ids)
    problems = [p for p in check.problems if p.severity == "error"]
    if problems:
        labelled = [p for p in problems if p.field == "expected" and p.message.startswith("holds a labelled")]
        listed = "; ".join(p.format(shown) for p in problems[:5])
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        what = f"{len(labelled)} labelled questions, " if labelled else ""
        raise GoldenError(f"{shown} is not a file of unanswerable questions: {what}{len(problems)} problems: "
                          f"{listed}{more}", problems[:MAX_PROBLEMS])
    ready = tuple((q.id, q.question, q.line) for q in questions if not q.draft)
    n_drafts = sum(1 for q in questions if q.draft)
    if not ready:
        if n_drafts:
            raise GoldenError(f"{shown} holds no question ready: {plural(n_drafts, 'unchecked draft')}; check that no "
                              "document answers each, then remove its 'draft' (drafts are not asked)")
        raise GoldenError(f"{shown} holds no question")
    return UnanswerableQuestions(ready, n_drafts)


def separation(answers: Sequence[float], near_misses: Sequence[float]) -> float:
    """P(an answer's score > a near miss's score) + P(equal) / 2: the ROC AUC.

    Args:
        answers: scores of the answers (non-empty).
        near_misses: scores of the near misses (non-empty).

    Returns:
        In [0, 1]; 0.5 is no better than a coin.

    Raises:
        ConfigError: an empty list.
    """
    if not len(answers) or not len(near_misses):
        raise ConfigError("the separation needs at least one answer and one near miss")
    pos = np.asarray(answers, dtype=np.float64)
    neg = np.sort(np.asarray(near_misses, dtype=np.float64))
    below = np.searchsorted(neg, pos, side="left")
    equal = np.searchsorted(neg, pos, side="right") - below
    return float((below.sum() + 0.5 * equal.sum()) / (len(pos) * len(neg)))


def trade_at(t: float, answers: np.ndarray, near_misses: np.ndarray) -> dict[str, Any]:
    """What the cut-off ``t`` keeps and declines: answers with score >= t are kept, near
    misses with score < t are declined."""
    kept = int(np.sum(answers >= t))
    declined = int(np.sum(near_misses < t))
    return {"value": float(t), "answers_kept": kept, "answers_kept_share": kept / len(answers),
            "near_misses_declined": declined, "near_misses_declined_share": declined / len(near_misses),
            "sum_of_shares": kept / len(answers) + declined / len(near_misses)}


def best_cutoff(answers: Sequence[float], near_misses: Sequence[float]) -> dict[str, Any]:
    """The cut-off that maximises answers kept plus near misses declined (module docstring),
    with the trade table.

    Returns:
        ``{"cutoff": {trade of the best value}, "trade": [rows by value], "separation"}``.

    Raises:
        ConfigError: an empty list.
    """
    pos = np.asarray(answers, dtype=np.float64)
    neg = np.asarray(near_misses, dtype=np.float64)
    auc = separation(pos, neg)
    candidates = np.unique(np.concatenate([pos, neg]))
    best = None
    for t in candidates:  # ascending: a tie keeps the lower value
        row = trade_at(float(t), pos, neg)
        if best is None or row["sum_of_shares"] > best["sum_of_shares"] + 1e-12:
            best = row
    values = set(np.quantile(candidates, np.linspace(0, 1, TRADE_ROWS - 1), method="nearest").tolist())
    values.add(best["value"])  # type: ignore[index]
    trade = [trade_at(v, pos, neg) for v in sorted(values)]
    return {"cutoff": best, "trade": trade, "separation": auc}


def answer_cutoff(
    docs_dir: str | Path,
    golden_path: str | Path,
    unanswerable_path: str | Path,
    *,
    out_dir: str | Path,
    chunking_method: str = "recursive",
    chunk_size: int = 256,
    chunk_overlap: int = 32,
    setup: SearchSetup | None = None,
    measure: str = "similarity",
    reranker: Reranker | None = None,
    embedding_model: EmbeddingModel | None = None,
    vector_store_config: MilvusLiteConfig | MilvusConfig | PGVectorConfig | None = None,
) -> dict[str, Any]:
    """Find the answer cut-off of one setup (module docstring).

    Args:
        docs_dir: the documents folder (or address).
        golden_path: the golden file (labelled questions).
        unanswerable_path: questions no document answers (see :func:`read_unanswerable_file`;
            drafts are left out and counted).
        out_dir: working folder (embedding cache, Milvus Lite database; the collection is the
            one ``evaluate`` builds for the same corpus, chunking and model, reused when it is
            there).
        chunking_method, chunk_size, chunk_overlap: the chunking of the setup.
        setup: the ``SearchSetup`` (default vector search).
        measure: ``similarity`` (the search score) or ``relevance`` (``reranker``'s score).
        reranker: a ``core.models.rerank.Reranker`` (for ``relevance``): the top result's
            score is ``reranker.rerank(question, [its text])[0]``.
        embedding_model: an ``EmbeddingModel``; default the local all-MiniLM-L6-v2.
        vector_store_config: the vector store (default Milvus Lite in ``out_dir``).

    Returns:
        The report: ``setup``, ``counts``, ``separation``, ``cutoff`` (None with ``reason``
        when fewer than :data:`MIN_PER_CLASS` of either), ``trade``, per question outcomes.

    Raises:
        ConfigError: an unknown measure, ``relevance`` without a reranker, bad chunking.
        GoldenError: a bad golden or unanswerable file (an unanswerable file holding labelled
            questions included).
    """
    if measure not in MEASURES:
        raise ConfigError(f"unknown measure {measure!r}; choose from {', '.join(MEASURES)}")
    if measure == "relevance" and reranker is None:
        raise ConfigError("the relevance measure needs a reranker, and none is configured; use --measure similarity")
    setup = setup or SearchSetup("vector")
    chunker = get_chunker(chunking_method, chunk_size, chunk_overlap)
    workspace = Workspace.at(out_dir)
    golden = read_golden(golden_path)
    unanswerable_file = read_unanswerable_file(unanswerable_path, {q.id: q.line for q in golden.questions})
    unanswerable = unanswerable_file.questions
    labelled = [q for q in golden.questions if q.document_ids]
    workspace.create()  # marked before the documents load, so they never hold it
    loaded = load_documents(docs_dir, cache_dir=workspace.inputs)
    documents = loaded.documents
    chunks = [c for d in documents for c in chunker.chunk([d])]
    model = cached_model(embedding_model or LocalEmbeddingModel(), workspace)
    chunking = {"method": chunker.name, **chunker.params()}
    store = get_vector_store(model, store_config(vector_store_config, workspace),
                             collection_for(corpus_fingerprint(documents), chunking, model.model_id))
    try:
        build_index(store, chunks, model)
        asked = [(q.id, q.question, "labelled", set(q.document_ids)) for q in labelled]
        asked += [(qid, text, "unanswerable", set()) for qid, text, _ in unanswerable]
        rows = _top_scores(store, asked, setup, measure, reranker)
    finally:
        store.close()
    answers = [r["score"] for r in rows if r["outcome"] == "answer"]
    misses = [r["score"] for r in rows if r["outcome"] == "near miss"]
    report = envelope("answer-cutoff", {
        "unanswerable": {"path": shown_address(unanswerable_path), "n_questions": len(unanswerable),
                         "n_drafts": unanswerable_file.n_drafts},
        "setup": {"chunking": chunking, "embedding_model": model.model_id, "search": setup.name,
                  "search_setup": setup.to_dict(), "measure": measure,
                  "reranker": str(getattr(reranker, "model_id", "")) or None},
        "counts": {"answers": len(answers), "near_misses": len(misses),
                   "near_misses_labelled": sum(1 for r in rows if r["outcome"] == "near miss" and r["kind"] == "labelled"),
                   "no_result": sum(1 for r in rows if r["outcome"] is None)},
        "rule": "answer when the top result's score is at least the cut-off; the cut-off maximises the share of answers "
                "kept plus the share of near misses declined",
        "separation": None, "cutoff": None, "trade": [], "reason": None,
        "questions": rows,
    }, golden=golden_block(golden_path, golden, n_labelled=len(labelled)),
        models=[model, reranker])  # beside setup's model ids: source, revision, sha256
    if len(answers) < MIN_PER_CLASS or len(misses) < MIN_PER_CLASS:
        few = [f"{n} {what}" for n, what in ((len(answers), "answers"), (len(misses), "near misses")) if n < MIN_PER_CLASS]
        report["reason"] = f"only {' and '.join(few)} (fewer than {MIN_PER_CLASS}): no cut-off can be trusted"
        if answers and misses:
            report["separation"] = separation(answers, misses)
        return report
    found = best_cutoff(answers, misses)
    report.update(separation=found["separation"], cutoff=found["cutoff"], trade=found["trade"])
    return report


def _top_scores(store: VectorStore, asked: Sequence[tuple[str, str, str, set[str]]], setup: SearchSetup, measure: str,
                reranker: Reranker | None) -> list[dict[str, Any]]:
    """Each question's top result, its score by ``measure`` and its outcome: ``answer`` when it
    is of an expected document, ``near miss`` otherwise, None without a result.

    Args:
        store: the vector store.
        asked: ``(id, question, kind, expected document ids)`` per question.
        setup: the ``SearchSetup``.
        measure: ``similarity`` or ``relevance``.
        reranker: the reranker for ``relevance``.
    """
    rows: list[dict[str, Any]] = []
    for qid, text, kind, expected in asked:
        hits = store.search(text, k=1, **setup.to_dict())
        if not hits:
            rows.append({"id": qid, "kind": kind, "outcome": None, "score": None})
            continue
        top = hits[0]
        score = float(top.score) if measure == "similarity" else float(reranker.rerank(text, [top.chunk.text])[0])
        outcome = "answer" if top.chunk.document_id in expected else "near miss"
        rows.append({"id": qid, "kind": kind, "outcome": outcome, "score": score,
                     "top_document": top.chunk.document_id})
    return rows


def format_cutoff(report: dict[str, Any]) -> str:
    """The cut-off report as text: the setup, the counts, the separation, the cut-off and the trade."""
    s, c = report["setup"], report["counts"]
    lines = [f"setup: {s['chunking']['method']} chunking, {s['embedding_model']}, search {s['search']}, "
             f"measure {s['measure']}",
             f"{c['answers']} answers and {c['near_misses']} near misses ({c['near_misses_labelled']} labelled questions "
             f"whose top result is not an expected document)"]
    drafts = (report.get("unanswerable") or {}).get("n_drafts")
    if drafts:
        lines.append(f"left out {drafts} unanswerable questions still marked 'draft' (check that no document answers "
                     "each, then remove 'draft')")
    if report["separation"] is not None:
        lines.append(f"separation (probability an answer outscores a near miss; 0.5 is a coin): {report['separation']:.3f}")
    if report["cutoff"] is None:
        lines.append(f"no cut-off: {report['reason']}")
        return "\n".join(lines)
    cut = report["cutoff"]
    lines.append(f"cut-off {cut['value']:.4f}: keeps {cut['answers_kept']} of {c['answers']} answers "
                 f"({100 * cut['answers_kept_share']:.0f} %), declines {cut['near_misses_declined']} of "
                 f"{c['near_misses']} near misses ({100 * cut['near_misses_declined_share']:.0f} %)")
    header = f"{'value':>9} {'answers kept':>14} {'near misses declined':>22}"
    lines += ["", header, "-" * len(header)]
    for row in report["trade"]:
        mark = "  <- cut-off" if row["value"] == cut["value"] else ""
        lines.append(f"{row['value']:>9.4f} {row['answers_kept']:>6} ({100 * row['answers_kept_share']:>3.0f} %) "
                     f"{row['near_misses_declined']:>12} ({100 * row['near_misses_declined_share']:>3.0f} %){mark}")
    if report.get("location"):
        lines.append(f"\nreport: {report['location']}")
    return "\n".join(lines)
