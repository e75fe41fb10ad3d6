"""``check --docs``: the warnings about golden labels that the loaded documents do not support.

- Expected pages past a document's page count, pages of documents without pages, and questions
  none of whose documents loaded: :func:`core.evaluation.retrieval.corpus_warnings` (what
  ``evaluate`` warns about too);
- stale evidence against the documents' pages: :mod:`core.golden.stale`.
"""

from __future__ import annotations

import os
import tempfile
from typing import TYPE_CHECKING, Iterable, Sequence

from core.documents import load_documents
from core.evaluation.gate import missing_documents_reason
from core.evaluation.retrieval import corpus_warnings
from core.golden.reader import _check
from core.golden.stale import pieces_from_documents, stale_evidence_warnings
from core.golden.types import Problem
from core.inputs import shown_address

if TYPE_CHECKING:
    from core.documents.base import LoadedDocument
    from core.documents.loader import SkippedFile
    from core.golden.types import GoldenCheck, GoldenQuestion


def corpus_problems(questions: Sequence[GoldenQuestion], documents: Sequence[LoadedDocument],
                    skipped: Sequence[SkippedFile] = ()) -> list[Problem]:
    """Every warning about labels the loaded documents do not support (``check --docs``).

    Args:
        questions: the golden questions.
        documents: the ``LoadedDocument`` objects that loaded.
        skipped: the ``SkippedFile`` objects of files that did not load.

    Returns:
        ``Problem`` warnings: :func:`core.evaluation.retrieval.corpus_warnings` (pages past the
        end, pages of documents without pages, documents that did not load), then stale
        evidence against the documents' pages.
    """
    return corpus_warnings(questions, documents, skipped) + stale_evidence_warnings(
        questions, pieces_from_documents(documents))


def needs_documents(questions: Iterable[GoldenQuestion]) -> bool:
    """True when any question has usable evidence or a page label (so loading the documents can
    find stale evidence or pages past the end)."""
    return any(q.usable_evidence or q.pages for q in questions)


def add_corpus_problems(check: GoldenCheck, golden_path: str | os.PathLike[str], docs: str | os.PathLike[str], *,
                        cache_dir: str | os.PathLike[str] | None = None,
                        document_ids: Sequence[str] | None = None) -> int:
    """Add the warnings of :func:`corpus_problems` to a ``GoldenCheck`` of a file that has no
    errors, loading the documents only when a question has evidence or page labels.

    With ``document_ids``, a file none of whose expected documents is among them gets an error
    instead (:func:`core.evaluation.gate.missing_documents_reason`: ``evaluate`` refuses it).

    Args:
        check: the ``GoldenCheck`` of ``golden_path`` (changed in place: problems appended and
            sorted by line).
        golden_path: the golden file (read again; a local path or an address).
        docs: the corpus folder (a local path or an address).
        cache_dir: where a remote corpus is downloaded (default a temporary folder, removed).
        document_ids: the ids of the documents ``docs`` holds, or None to skip that check.

    Returns:
        The number of problems added.

    Raises:
        DocumentError: the folder cannot be read.
    """
    if not check.ok:
        return 0
    _, found = _check(golden_path, None)
    if document_ids is not None:
        expected = {t.document_id for q in found.questions for t in q.expected}
        reason = missing_documents_reason(expected, document_ids, shown_address(docs))
        if reason:
            check.problems.append(Problem("error", reason, field="expected"))
            return 1
    if not needs_documents(found.questions):
        return 0
    with tempfile.TemporaryDirectory(prefix="ragtune-check-") as tmp:
        loaded = load_documents(docs, cache_dir=cache_dir or tmp)
    problems = corpus_problems(found.questions, loaded.documents, loaded.skipped)
    check.problems.extend(problems)
    check.problems.sort(key=lambda p: (p.line is None, p.line or 0))
    return len(problems)


__all__ = ["add_corpus_problems", "corpus_problems", "needs_documents"]
