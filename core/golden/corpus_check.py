"""``check --docs``: the problems of golden labels that the loaded documents do not support.

- Expected documents that are in the folder but do not load (binary bytes in a ``.txt``, an
  encrypted PDF, a file over a size limit, a link out of the folder): an error on each line
  that expects one, with the loader's reason; and a file-level error when no question has an
  expected document that loads (every score would be 0), as for an empty folder;
- expected pages past a document's page count, pages of documents without pages, and questions
  none of whose documents loaded: :func:`core.evaluation.retrieval.corpus_warnings` (what
  ``evaluate`` warns about too);
- stale evidence against the documents' pages: :mod:`core.golden.stale`.
"""

from __future__ import annotations

import os
import tempfile
from typing import TYPE_CHECKING, Callable, Iterable, Sequence

from core.documents import load_documents
from core.documents.loader import NoDocumentLoaded
from core.evaluation.gate import missing_documents_reason
from core.evaluation.retrieval import corpus_warnings
from core.golden.reader import _check
from core.golden.stale import pieces_from_documents, stale_evidence_warnings
from core.golden.types import Problem
from core.inputs import shown_address
from core.text import plural

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


def skipped_expected_problems(questions: Sequence[GoldenQuestion], skipped: Sequence[SkippedFile],
                              docs: str) -> list[Problem]:
    """An error for each expected document that is in the folder but was skipped by the loader.

    Args:
        questions: the golden questions.
        skipped: the ``SkippedFile`` objects of the files that did not load.
        docs: the folder as messages show it.

    Returns:
        ``Problem`` errors on each question's line, field ``expected``, one per skipped expected
        document, quoting the loader's reason.
    """
    reasons = {s.document_id: s.reason for s in skipped}
    return [Problem("error", f"expected document {d!r} is in {docs} but does not load: {reasons[d]}",
                    line=q.line, field="expected")
            for q in questions for d in q.document_ids if d in reasons]


def nothing_loads_reason(questions: Sequence[GoldenQuestion], loaded_ids: set[str], docs: str) -> str | None:
    """Why a run would score nothing although the expected documents are in the folder: no
    question that expects documents has one that loaded (None otherwise, or when no question
    expects a document, as in Bedrock prompt datasets)."""
    expecting = [q for q in questions if q.document_ids]
    if not expecting or any(d in loaded_ids for q in expecting for d in q.document_ids):
        return None
    wanted = sorted({d for q in expecting for d in q.document_ids})
    return (f"no question has an expected document that loads from {docs} ({plural(len(wanted), 'document')} "
            "expected; the lines above say why each does not load): every score would be 0")


def needs_documents(questions: Iterable[GoldenQuestion]) -> bool:
    """True when any question has usable evidence or a page label (so loading the documents can
    find stale evidence or pages past the end)."""
    return any(q.usable_evidence or q.pages for q in questions)


def add_corpus_problems(check: GoldenCheck, golden_path: str | os.PathLike[str], docs: str | os.PathLike[str], *,
                        cache_dir: str | os.PathLike[str] | None = None,
                        document_ids: Sequence[str] | None = None) -> int:
    """Add the problems of the documents the golden file expects to a ``GoldenCheck`` of a file
    that has no errors.

    With ``document_ids``, a file none of whose expected documents is among them gets an error
    instead (:func:`core.evaluation.gate.missing_documents_reason`: ``evaluate`` refuses it).
    Otherwise the expected documents are loaded (the whole folder when a question has evidence
    or page labels, to find stale evidence and pages past the end): an expected document that is
    in the folder but does not load is an error on each line that expects it
    (:func:`skipped_expected_problems`), and when no question has an expected document that
    loads the file gets an error (:func:`nothing_loads_reason`); then the warnings of
    :func:`corpus_problems`.

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
    shown = shown_address(docs)
    expected = {t.document_id for q in found.questions for t in q.expected}
    if document_ids is not None:
        reason = missing_documents_reason(expected, document_ids, shown)
        if reason:
            check.problems.append(Problem("error", reason, field="expected"))
            return 1
    everything = needs_documents(found.questions)
    if not expected and not everything:
        return 0
    documents, skipped = _load(docs, cache_dir, None if everything else expected.__contains__)
    errors = skipped_expected_problems(found.questions, skipped, shown)
    reason = nothing_loads_reason(found.questions, {d.document_id for d in documents}, shown)
    if reason:
        errors.append(Problem("error", reason, field="expected"))
    erred = {p.line for p in errors}
    warnings = [p for p in corpus_problems(found.questions, documents, skipped)
                if not (p.line in erred and p.field == "expected" and "can only score 0" in p.message)]
    problems = errors + warnings
    check.problems.extend(problems)
    check.problems.sort(key=lambda p: (p.line is None, p.line or 0))
    return len(problems)


def _load(docs: str | os.PathLike[str], cache_dir: str | os.PathLike[str] | None,
          only: Callable[[str], bool] | None) -> tuple[list[LoadedDocument], list[SkippedFile]]:
    """The documents of ``docs`` that load (those ``only`` keeps) and the files skipped; a
    folder where none loads gives no documents and its skipped files."""
    with tempfile.TemporaryDirectory(prefix="ragtune-check-") as tmp:
        try:
            loaded = load_documents(docs, cache_dir=cache_dir or tmp, only=only)
        except NoDocumentLoaded as exc:
            return [], list(exc.skipped)
    return loaded.documents, loaded.skipped


__all__ = ["add_corpus_problems", "corpus_problems", "needs_documents", "nothing_loads_reason",
           "skipped_expected_problems"]
