"""Golden labels the documents no longer support: stale evidence and pages past the end.

- Stale evidence: a usable evidence quote (at least
  :data:`~core.golden.types.MIN_EVIDENCE_WORDS` words) that no piece of its expected sources
  holds by :func:`core.metrics.retrieval.evidence_matches` (the evidence grain's own rule). The
  pieces are the chunks of the expected documents in ``evaluate``, the pages (whole documents
  without pages) in ``check --docs``. A question with page labels is checked against those
  pages of its documents, one without against its whole documents. Quotes of questions whose
  expected documents are all missing are not checked (that is reported already). In
  ``evaluate`` a quote that no chunk holds but its document does is said as such (the chunks
  are shorter than it or split it), not as stale.

The whole ``check --docs`` pass (these warnings with the corpus warnings of ``evaluate``) is
:mod:`core.golden.corpus_check`.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import TYPE_CHECKING, Iterable, Mapping, Sequence

from core.golden.passages import document_units
from core.golden.types import MIN_EVIDENCE_WORDS, Problem
from core.metrics.retrieval import evidence_matches

if TYPE_CHECKING:
    from core.chunking.base import Chunk
    from core.documents.base import LoadedDocument
    from core.golden.types import GoldenQuestion

#: Characters of a quote shown in a stale-evidence warning.
QUOTE_SHOWN_CHARS = 80

Pieces = Mapping[str, Sequence[tuple[str, Sequence[int]]]]


def pieces_from_chunks(chunks: Iterable[Chunk]) -> dict[str, list[tuple[str, list[int]]]]:
    """Document id -> ``(text, pages)`` of each of its chunks, in order."""
    out: dict[str, list[tuple[str, list[int]]]] = defaultdict(list)
    for chunk in chunks:
        out[chunk.document_id].append((chunk.text, chunk.pages))
    return dict(out)


def pieces_from_documents(documents: Iterable[LoadedDocument]) -> dict[str, list[tuple[str, list[int]]]]:
    """Document id -> ``(text, [page])`` of each page (``(text, [])`` for a document without pages)."""

    out: dict[str, list[tuple[str, list[int]]]] = {}
    for document in documents:
        out[document.document_id] = [(u.text, [] if u.page is None else [u.page]) for u in document_units(document)]
    return out


def _shown(quote: str) -> str:
    text = " ".join(quote.split())
    if len(text) > QUOTE_SHOWN_CHARS:
        text = text[:QUOTE_SHOWN_CHARS].rsplit(" ", 1)[0] + "..."
    return json.dumps(text, ensure_ascii=False)


def stale_evidence_warnings(questions: Iterable[GoldenQuestion], pieces: Pieces,
                            documents: Sequence[LoadedDocument] | None = None) -> list[Problem]:
    """Warnings for evidence quotes no piece of their expected sources holds.

    Args:
        questions: ``GoldenQuestion`` objects.
        pieces: document id -> ``(text, pages)`` pieces (see :func:`pieces_from_chunks` and
            :func:`pieces_from_documents`); documents not in it are missing from the corpus.
        documents: with chunks as ``pieces``, the documents they were cut from: a quote no chunk
            holds is then told apart from one the document does not hold.

    Returns:
        ``Problem`` warnings with the question's line and field ``evidence[i]``:
        ``stale evidence: quote "..." is not on report.pdf#page=4``, or, when ``documents``
        hold it, ``quote "..." is on report.pdf#page=4, but no chunk holds it whole (...)``.
    """
    whole: Pieces | None = None
    out = []
    for q in questions:
        docs = [d for d in q.document_ids if d in pieces]
        if not docs:
            continue
        where = (" or ".join(f"{d}#page={p}" for d, p in q.pages if d in pieces) if q.pages else " or ".join(docs))
        if not where:
            continue
        texts = _texts(q, pieces)
        for i, quote in enumerate(q.evidence):
            if len(quote.split()) < MIN_EVIDENCE_WORDS:
                continue
            if any(evidence_matches(quote, t) for t in texts):
                continue
            if documents is not None:
                if whole is None:
                    whole = pieces_from_documents(documents)
                if any(evidence_matches(quote, t) for t in _texts(q, whole)):
                    out.append(Problem("warning", f"quote {_shown(quote)} is on {where}, but no chunk holds it whole "
                                                  "(the chunks are shorter than it or split it): the evidence grain "
                                                  "cannot find it at this chunking", line=q.line, field=f"evidence[{i}]"))
                    continue
            out.append(Problem("warning", f"stale evidence: quote {_shown(quote)} is not on {where}",
                               line=q.line, field=f"evidence[{i}]"))
    return out


def _texts(q: GoldenQuestion, pieces: Pieces) -> list[str]:
    """The texts of ``pieces`` a quote of ``q`` is looked for in: its labelled pages, else its
    whole documents."""
    if q.pages:
        return [t for d, p in q.pages if d in pieces for t, ps in pieces[d] if p in ps]
    return [t for d in q.document_ids if d in pieces for t, _ in pieces[d]]
