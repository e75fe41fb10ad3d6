"""``evaluate --label-unjudged``: relevance labels, from the judge, for results the golden file never named.

A golden file names the documents (or pages) that answer each question; every other result
counts as wrong, though many of them answer the question too (a second copy of a policy, a
summary page). With a judge configured, each setup's top ``depth`` results that are not from
an expected document (or, for a question with page labels, an expected page) are graded by the
judge from 0 to 3 with the UMBRELA prompt, once per (question, chunk text): the judge's
replies are kept in the reply cache (``core.models.cache.CachedChatModel``), whose key holds
the question and the chunk's text, so a rerun asks nothing again. A grade of 2 or more
(:data:`RELEVANT_GRADE`) counts as relevant, as TREC's deep-learning tracks binarise their
0-3 grades.

Reported per setup: ``judged@k`` (the share of the top k results with a label: golden-relevant,
or graded by the judge) golden-only and with the judge's labels; the holes (top results left
without a label because the judge's call was lost); and found@k, nDCG@k and MRR with the
judge's labels beside the golden-only numbers. With the labels, a question's relevant items
are its golden items and every chunk the judge graded relevant in any setup's results (the
pool), so nDCG's ideal ranking counts them too.

References:
    Upadhyay, Pradeep, Thakur, Craswell & Lin (2024), "UMBRELA: UMbrela is the (Open-Source
    Reproduction of the) Bing RELevance Assessor", arXiv:2406.06519 (the prompt); Thomas,
    Spielman, Craswell & Mitra (2024), "Large language models can accurately predict searcher
    preferences", SIGIR; Buckley & Voorhees (2004), "Retrieval evaluation with incomplete
    information", SIGIR (judged@k and holes).
"""

from __future__ import annotations

import hashlib
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from core.metrics.llm_judge import lost_kind, parse_score
from core.metrics.retrieval import DEFAULT_KS, Judgement, TOP_K, aggregate, retrieval_scores
from core.models.spend import carry_spend

if TYPE_CHECKING:
    from core.golden.types import GoldenQuestion
    from core.models.chat import ChatModel

__all__ = ["LABEL_DEPTH", "RELEVANT_GRADE", "UMBRELA_PROMPT", "format_unjudged", "grade_top_results", "label_unjudged",
           "parse_grade", "umbrela_messages"]

#: Results per setup and question looked at (the report's top k).
LABEL_DEPTH = TOP_K
#: The grade from which a labelled result counts as relevant.
RELEVANT_GRADE = 2
#: Most labels listed in the report (the counts cover them all).
MOST_LABELS_LISTED = 2000

#: The UMBRELA prompt (Upadhyay et al. 2024), with ``{query}`` and ``{passage}``.
UMBRELA_PROMPT = (
    "Given a query and a passage, you must provide a score on an integer scale of 0 to 3 with the following "
    "meanings:\n"
    "0 = represent that the passage has nothing to do with the query,\n"
    "1 = represents that the passage seems related to the query but does not answer it,\n"
    "2 = represents that the passage has some answer for the query, but the answer may be a bit unclear, or hidden "
    "amongst extraneous information and\n"
    "3 = represents that the passage is dedicated to the query and contains the exact answer.\n\n"
    "Important Instruction: Assign category 1 if the passage is somewhat related to the topic but not completely, "
    "category 2 if passage presents something very important related to the entire topic but also has some extra "
    "information and category 3 if the passage only and entirely refers to the topic. If none of the above "
    "satisfies give it category 0.\n\n"
    "Query: {query}\n"
    "Passage: {passage}\n\n"
    "Split this problem into steps:\n"
    "Consider the underlying intent of the search.\n"
    "Measure how well the content matches a likely intent of the query (M).\n"
    "Measure how trustworthy the passage is (T).\n"
    "Consider the aspects above and the relative importance of each, and decide on a final score (O). Final score "
    "must be an integer value only.\n"
    "Do not provide any code in result. Provide each score in the format of: ##final score: score without providing "
    "any reasoning."
)
_FINAL = re.compile(r"final\s+score\s*[:=]\s*\**\s*([0-3])(?![\d.])", re.IGNORECASE)


def umbrela_messages(query: str, passage: str) -> list[dict[str, str]]:
    """The chat request grading one passage for one query (one user message)."""
    return [{"role": "user", "content": UMBRELA_PROMPT.format(query=query, passage=passage)}]


def parse_grade(reply: str | None) -> int | None:
    """The grade in a reply: the last ``##final score: N`` (N from 0 to 3), else a reply that
    is a whole number from 0 to 3 alone (``core.metrics.llm_judge.parse_score``); None when
    there is neither."""
    if not reply:
        return None
    found = _FINAL.findall(reply)
    if found:
        return int(found[-1])
    parsed = parse_score(reply, 0, 3, integer=True)
    return None if parsed.value is None else int(parsed.value)


def _golden_relevant(question: GoldenQuestion, hit: Mapping[str, Any]) -> bool:
    """A result from an expected page (for a question with page labels) or document."""
    if question.pages:
        pages = set(hit.get("pages") or ([hit["page"]] if hit.get("page") else []))
        return any(hit.get("document") == d and p in pages for d, p in question.pages)
    return hit.get("document") in set(question.document_ids)


def _text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def label_unjudged(questions: Sequence[Any], tops: Mapping[str, Mapping[str, list[dict[str, Any]]]],
                   chunks: Sequence[Any], judge: ChatModel, *, depth: int = LABEL_DEPTH,
                   workers: int = 4) -> dict[str, Any]:
    """Grade every setup's top ``depth`` results the golden file does not name, and score the
    setups with those labels (see the module docstring).

    Args:
        questions: the golden questions; those without an expected document are skipped.
        tops: question id -> setup key -> its results as the report keeps them
            (``{document, page, pages, chunk_id}``, best first).
        chunks: the corpus's chunks (their text is what the judge reads).
        judge: the judge ``ChatModel`` (best wrapped in ``CachedChatModel``, so labels are kept).
        depth: results per setup and question looked at.
        workers: judge calls at once.

    Returns:
        ``{judge, prompt, depth, relevant_grade, n_labels, lost, setups: {key: {judged@k,
        golden_judged@k, holes, golden_only, with_labels}}, labels: [...]}``; ``with_labels``
        is a :class:`core.metrics.retrieval.RetrievalAggregate` dict.
    """
    text_of = {c.chunk_id: c.text for c in chunks}
    wanted: dict[tuple[str, str], tuple[str, str]] = {}  # (question id, text key) -> (question, text)
    for q in questions:
        if not q.expected:
            continue
        for results in (tops.get(q.id) or {}).values():
            for hit in results[:depth]:
                text = text_of.get(hit.get("chunk_id"))
                if text is not None and not _golden_relevant(q, hit):
                    wanted.setdefault((q.id, _text_key(text)), (q.question, text))
    grades: dict[tuple[str, str], int | None] = {}
    lost: dict[str, int] = {}
    lock = threading.Lock()

    def ask(key: tuple[str, str]) -> None:
        query, text = wanted[key]
        try:
            grade, why = parse_grade(judge.chat(umbrela_messages(query, text), temperature=0.0)), "unparseable"
        except Exception as exc:  # noqa: BLE001 - a lost call is a hole, counted by why
            grade, why = None, lost_kind(exc)
        with lock:
            grades[key] = grade
            if grade is None:
                lost[why] = lost.get(why, 0) + 1

    if wanted:
        with ThreadPoolExecutor(max_workers=max(1, min(workers, len(wanted))), thread_name_prefix="ragtune-label") as pool:
            list(pool.map(carry_spend(ask), list(wanted)))

    setups: dict[str, dict[str, Any]] = {}
    keys = list(dict.fromkeys(k for q in questions for k in (tops.get(q.id) or {})))
    pooled: dict[str, set[str]] = {}
    for (qid, text_key), grade in grades.items():
        if grade is not None and grade >= RELEVANT_GRADE:
            pooled.setdefault(qid, set()).add(f"judged:{text_key}")
    for key in keys:
        per_q_labels, per_q_golden, judged_at, golden_at, holes = [], [], {k: [] for k in DEFAULT_KS}, \
            {k: [] for k in DEFAULT_KS}, 0
        for q in questions:
            results = (tops.get(q.id) or {}).get(key)
            if results is None or not q.expected:
                continue
            golden_items = [f"{d}#page={p}" for d, p in q.pages] if q.pages else list(q.document_ids)
            items = tuple(golden_items) + tuple(sorted(pooled.get(q.id, ())))
            hits, golden_hits = [], []
            labelled = []
            for hit in results[:depth]:
                text = text_of.get(hit.get("chunk_id"))
                if _golden_relevant(q, hit):
                    if q.pages:
                        pages = set(hit.get("pages") or [])
                        keys_hit = frozenset(f"{d}#page={p}" for d, p in q.pages if d == hit.get("document") and p in pages)
                    else:
                        keys_hit = frozenset({hit["document"]})
                    hits.append(keys_hit)
                    golden_hits.append(keys_hit)
                    labelled.append(True)
                    continue
                golden_hits.append(frozenset())
                grade = grades.get((q.id, _text_key(text))) if text is not None else None
                labelled.append(grade is not None)
                holes += int(grade is None)
                hits.append(frozenset({f"judged:{_text_key(text)}"}) if grade is not None and grade >= RELEVANT_GRADE
                            else frozenset())
            per_q_labels.append(retrieval_scores(Judgement(len(items), hits, items=items), DEFAULT_KS))
            per_q_golden.append(retrieval_scores(Judgement(len(golden_items), golden_hits, items=tuple(golden_items)),
                                                 DEFAULT_KS))
            for k in DEFAULT_KS:
                judged_at[k].append(sum(labelled[:k]) / k)
                golden_at[k].append(sum(1 for h in golden_hits[:k] if h) / k)
        if not per_q_labels:
            continue
        setups[key] = {
            "judged@k": {f"judged@{k}": sum(v) / len(v) for k, v in judged_at.items()},
            "golden_judged@k": {f"judged@{k}": sum(v) / len(v) for k, v in golden_at.items()},
            "holes": holes,
            "golden_only": aggregate(per_q_golden).to_dict(),
            "with_labels": aggregate(per_q_labels).to_dict(),
        }
    listed = [{"question_id": qid, "text_sha256": tk, "grade": g} for (qid, tk), g in list(grades.items())[:MOST_LABELS_LISTED]]
    return {"judge": str(getattr(judge, "model_id", type(judge).__name__)), "prompt": "UMBRELA (0-3)", "depth": depth,
            "relevant_grade": RELEVANT_GRADE, "n_labels": len(grades),
            "n_relevant": sum(1 for g in grades.values() if g is not None and g >= RELEVANT_GRADE),
            "lost": lost, "setups": setups, "labels": listed}


def grade_top_results(questions: Sequence[Any], per_setup: Mapping[str, Mapping[str, Mapping[str, Any]]],
                      chunks: Sequence[Any], judge: ChatModel, cache: Any, *,
                      depth: int = LABEL_DEPTH) -> dict[str, Any]:
    """``--label-unjudged`` of a run: :func:`label_unjudged` on the results a run keeps, with
    the judge's replies kept in the run's reply cache (``CachedChatModel`` over ``cache``),
    as both ``evaluate`` over documents and ``evaluate`` over targets call it.

    Args:
        questions: the golden questions.
        per_setup: question id -> setup key -> ``{"top": [...], ...}`` (the run's record of
            each question's results, best first).
        chunks: objects with ``chunk_id`` and ``text`` for every chunk id in those results.
        judge: the judge ``ChatModel``.
        cache: the ``EmbeddingCache`` whose file keeps the judge's replies (None: none kept).
        depth: results per setup and question graded.

    Returns:
        :func:`label_unjudged`'s block.
    """
    from core.models.cache import CachedChatModel

    tops = {qid: {key: entry["top"] for key, entry in setups.items()} for qid, setups in per_setup.items()}
    model = CachedChatModel(judge, cache) if cache is not None and not isinstance(judge, CachedChatModel) else judge
    return label_unjudged(questions, tops, chunks, model, depth=depth)


def format_unjudged(unjudged: Mapping[str, Any] | None) -> str:
    """The labels' table as text: per setup judged@10 golden-only and with labels, holes, and
    found@1, found@10, nDCG@10 golden-only and with labels ("" without labels)."""
    if not unjudged:
        return ""
    lost = unjudged.get("lost") or {}
    lines = [f"\nrelevance labels by {unjudged['judge']} ({unjudged['prompt']}, relevant from "
             f"{unjudged['relevant_grade']}): {unjudged['n_labels']} results graded, {unjudged['n_relevant']} relevant"
             + (f"; {sum(lost.values())} lost ({', '.join(f'{n} {k}' for k, n in sorted(lost.items()))})" if lost else "")]
    header = (f"{'setup':<30} {'judged@10':>15} {'holes':>6} {'found@1':>15} {'found@10':>15} {'ndcg@10':>15}")
    lines += [header + "   (golden only -> with labels)", "-" * len(header)]
    for key, s in unjudged["setups"].items():
        g, w = s["golden_only"]["means"], s["with_labels"]["means"]

        def pair(name: str, a: Mapping[str, Any] = g, b: Mapping[str, Any] = w) -> str:
            return f"{a.get(name, 0):.3f}->{b.get(name, 0):.3f}"

        lines.append(f"{key:<30} {pair('judged@10', s['golden_judged@k'], s['judged@k']):>15} {s['holes']:>6} "
                     f"{pair('found@1'):>15} {pair('found@10'):>15} {pair('ndcg@10'):>15}")
    return "\n".join(lines)
