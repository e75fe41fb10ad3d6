"""Suggested labels: ``expected`` ids proposed for questions that have a reference answer.

``ragtune suggest --docs DIR --golden FILE -o FILE [--top 1] [--by doc|page]`` reads a golden
file and, for each question with a reference answer and no ``expected`` (or only a draft one),
searches the corpus with the reference answer, which finds the passage that says it far more
reliably than the question does, and proposes the ``top`` ids it comes from, marked
``"draft": true`` with a hint naming the score. Rows with a label a person made (an
``expected`` list on a row that is not a draft) are written back unchanged, as is every other
row.

Search: the documents are cut with the recursive chunker at the evaluation's default size; the
chunks and the query are embedded (through the embedding cache) and ranked by cosine
similarity, except that chunks holding the whole reference verbatim (a reference of at least
:data:`~core.golden.types.MIN_EVIDENCE_WORDS` words, after ``normalize_text``) rank first. The
query is the reference, with the question before it when the reference is under
``MIN_EVIDENCE_WORDS`` words (``"France"`` alone says little). Ids are taken from the best
chunks down, each once: ``name.pdf#page=N`` (the chunk's first page) at the page grain for paged
documents, the document id otherwise.

An Amazon Bedrock prompt dataset is converted: its output is a golden file in ragtune's schema,
one row per turn (id ``line-N`` or ``line-N-turn-T``) with the prompt as ``question``, the first
reference response as ``reference``, and the Bedrock turn kept under ``metadata.bedrock``
(``line``, ``turn`` and the earlier turns as chat ``history``), so the file can be scored for
retrieval once a person has checked the drafts.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from core.errors import ConfigError, GoldenError
from core.text import plural

logger = logging.getLogger(__name__)

#: Ids proposed per question by default.
DEFAULT_TOP = 1

#: Check errors that only say a row has no label yet: the rows ``suggest`` fills in.
_UNLABELLED_FIELDS = ("expected",)


@dataclass
class SuggestResult:
    """What :func:`suggest_labels` wrote.

    Attributes:
        rows: the output rows, in input order (JSON-serialisable dicts in ragtune's schema).
        format: the input's format (``ragtune``, ``bedrock`` or ``bedrock-byoi``).
        n_suggested: rows given suggested ids (drafts).
        n_kept: rows with a label a person made, written back unchanged.
        n_without_reference: unlabelled rows with no reference answer (left as they were).
        n_other: other rows (templates, rows without a question) written back unchanged.
        scores: row index -> cosine similarity of the best chunk behind the first id.
    """

    rows: list[dict[str, Any]]
    format: str = "ragtune"
    n_suggested: int = 0
    n_kept: int = 0
    n_without_reference: int = 0
    n_other: int = 0
    scores: dict[int, float] = field(default_factory=dict)

    def summary(self) -> str:
        """One line a person reads: what was suggested and what was left alone."""
        parts = [f"{plural(self.n_suggested, 'question')} given suggested labels (drafts: check them)"]
        if self.n_kept:
            parts.append(f"{plural(self.n_kept, 'label')} a person made kept")
        if self.n_without_reference:
            parts.append(f"{plural(self.n_without_reference, 'question')} without a reference answer left unlabelled")
        if self.n_other:
            parts.append(f"{plural(self.n_other, 'other row')} kept as they were")
        return "; ".join(parts)


class ChunkIndex:
    """Chunks of a corpus with their embeddings, searched by cosine similarity.

    Args:
        chunks: the chunks (``core.chunking.Chunk``).
        embedding_model: an ``EmbeddingModel`` (usually cached).
        paged: ids of the documents that have pages.
    """

    def __init__(self, chunks: Sequence[Any], embedding_model: Any, paged: set[str]) -> None:
        from core.metrics.retrieval import normalize_text

        self.chunks = list(chunks)
        self.model = embedding_model
        self.paged = paged
        vectors = np.asarray(embedding_model.embed_documents([c.text for c in self.chunks]), dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        self.vectors = vectors / np.where(norms > 0, norms, 1.0)
        self.normalized = [normalize_text(c.text) for c in self.chunks]

    def target(self, chunk: Any, by: str) -> str:
        """The id a chunk stands for at grain ``by``: ``doc#page=N`` or ``doc``."""
        if by == "page" and chunk.document_id in self.paged and chunk.pages:
            return f"{chunk.document_id}#page={chunk.pages[0]}"
        return chunk.document_id

    def search(self, query: str, *, verbatim: str | None, top: int, by: str) -> list[tuple[str, float]]:
        """The ``top`` distinct ids of the best chunks for ``query``.

        Args:
            query: the text embedded and compared.
            verbatim: a normalised text; chunks holding it rank first (None: none do).
            top: ids wanted (>= 1).
            by: ``"page"`` or ``"doc"``.

        Returns:
            ``(id, cosine)`` pairs, best first (cosine of the id's best chunk, in [-1, 1]).
        """
        if not self.chunks:
            return []
        q = np.asarray(self.model.embed_query(query), dtype=np.float32)
        q = q / (np.linalg.norm(q) or 1.0)
        cosines = self.vectors @ q
        holds = np.array([bool(verbatim) and verbatim in t for t in self.normalized])
        order = np.lexsort((-cosines, ~holds))  # verbatim holders first, then by cosine
        out: dict[str, float] = {}
        for i in order:
            target = self.target(self.chunks[int(i)], by)
            if target not in out:
                out[target] = float(cosines[int(i)])
                if len(out) == top:
                    break
        return list(out.items())


def build_index(documents: Sequence[Any], embedding_model: Any) -> ChunkIndex:
    """Chunk ``documents`` with the recursive chunker at the evaluation's default sizes and embed
    the chunks.

    Args:
        documents: ``LoadedDocument`` objects.
        embedding_model: an ``EmbeddingModel``.

    Returns:
        A :class:`ChunkIndex`.
    """
    from core.chunking import get_chunker
    from core.evaluation.retrieval import EvaluateOptions

    chunker = get_chunker("recursive", EvaluateOptions.chunk_size, EvaluateOptions.chunk_overlap)
    chunks = [c for d in sorted(documents, key=lambda d: d.document_id) for c in chunker.chunk([d])]
    return ChunkIndex(chunks, embedding_model, {d.document_id for d in documents if d.n_pages > 0})


def _query(question: str, reference: str) -> str:
    from core.golden.types import MIN_EVIDENCE_WORDS

    return reference if len(reference.split()) >= MIN_EVIDENCE_WORDS else f"{question} {reference}"


def _verbatim(reference: str) -> str | None:
    from core.golden.types import MIN_EVIDENCE_WORDS
    from core.metrics.retrieval import normalize_text

    return normalize_text(reference) if len(reference.split()) >= MIN_EVIDENCE_WORDS else None


def _raise_errors(path: str, problems: list[Any]) -> None:
    head = f"{path}: {plural(len(problems), 'error')} — fix them before suggesting labels"
    raise GoldenError("\n".join([head, *(p.format(path) for p in problems)]), problems)


def _native_rows(path: str, data: bytes) -> list[tuple[int, dict[str, Any]]]:
    """``(line, row)`` for every row of a native golden file; raises on errors other than a
    missing or empty ``expected`` (and the file-level "nothing ready")."""
    from core.golden.reader import check_golden

    check = check_golden(path, data=data)
    blocking = [p for p in check.errors
                if p.line is not None and p.field not in _UNLABELLED_FIELDS]
    if any(p.line is None and "nothing ready" not in p.message for p in check.errors):
        blocking += [p for p in check.errors if p.line is None and "nothing ready" not in p.message]
    if blocking:
        _raise_errors(check.path, blocking)
    text = data.removeprefix(b"\xef\xbb\xbf").decode("utf-8")
    rows = []
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            rows.append((number, json.loads(line)))
    return rows


def _bedrock_rows(path: str, data: bytes) -> tuple[list[tuple[int, dict[str, Any]]], str]:
    """Rows in ragtune's schema for every turn of a Bedrock prompt dataset, and its format."""
    from core.golden.reader import _check

    check, found = _check(path, None, data=data)
    if check.errors:
        _raise_errors(check.path, check.errors)
    rows = []
    turn_of: dict[int, int] = {}
    for q in found.questions:
        turn_of[q.line] = turn_of.get(q.line, 0) + 1
        row: dict[str, Any] = {"id": q.id, "question": q.question}
        if q.reference is not None:
            row["reference"] = q.reference
        row["metadata"] = {"bedrock": {"line": q.line, "turn": turn_of[q.line], "history": q.history_messages}}
        rows.append((q.line, row))
    return rows, check.format


def _with_expected(row: dict[str, Any], targets: list[str], hint: str) -> dict[str, Any]:
    """``row`` with ``expected`` set after ``question``, ``draft`` true and the hint set."""
    out: dict[str, Any] = {}
    for key, value in row.items():
        if key in ("expected", "draft", "hint"):
            continue
        out[key] = value
        if key == "question":
            out["expected"] = targets
    out.setdefault("expected", targets)
    out["hint"] = hint
    out["draft"] = True
    return out


def suggest_labels(golden_path: str, documents: Sequence[Any], *, embedding_model: Any, top: int = DEFAULT_TOP,
                   by: str = "page", data: bytes | None = None, index: ChunkIndex | None = None) -> SuggestResult:
    """Propose ``expected`` ids for the questions of a golden file that have a reference answer.

    Args:
        golden_path: the golden file (a local path or an address); only named in messages when
            ``data`` is given.
        documents: the corpus, as ``LoadedDocument`` objects.
        embedding_model: the ``EmbeddingModel`` searching the corpus.
        top: ids proposed per question (>= 1).
        by: ``"page"`` or ``"doc"``.
        data: the golden file's bytes when already read.
        index: a :class:`ChunkIndex` of ``documents`` already built (else one is built).

    Returns:
        A :class:`SuggestResult` whose rows are the output golden file.

    Raises:
        GoldenError: the file cannot be read or has errors other than rows without ``expected``.
        ConfigError: ``top`` below 1, a bad ``by``, or no document.
    """
    from core.golden import bedrock
    from core.golden.passages import GRAINS
    from core.golden.reader import read_bytes
    from core.inputs import shown_address

    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise ConfigError(f"top must be an integer of at least 1, got {top!r}")
    if by not in GRAINS:
        raise ConfigError(f"by must be one of {', '.join(GRAINS)}, got {by!r}")
    if not documents:
        raise ConfigError("no documents to search: suggestions need the corpus")
    shown = shown_address(golden_path)
    if data is None:
        data = read_bytes(golden_path)
    text = data.removeprefix(b"\xef\xbb\xbf").decode("utf-8", errors="replace")
    fmt = "ragtune"
    if bedrock.looks_like_bedrock(text):
        rows, fmt = _bedrock_rows(shown, data)
    else:
        rows = _native_rows(shown, data)
    index = index or build_index(documents, embedding_model)
    result = SuggestResult(rows=[], format=fmt)
    for position, (_, row) in enumerate(rows):
        question, reference = row.get("question"), row.get("reference")
        expected = row.get("expected")
        labelled = isinstance(expected, list) and bool(expected) and row.get("draft") is not True
        if labelled:
            result.n_kept += 1
            result.rows.append(row)
            continue
        if not isinstance(question, str) or not question.strip():
            result.n_other += 1
            result.rows.append(row)
            continue
        if not isinstance(reference, str) or not reference.strip():
            result.n_without_reference += 1
            result.rows.append(row)
            continue
        found = index.search(_query(question, reference), verbatim=_verbatim(reference), top=top, by=by)
        if not found:
            result.n_other += 1
            result.rows.append(row)
            continue
        scores = ", ".join(f"{t} {s:.2f}" for t, s in found)
        hint = (f"suggested from the reference answer (cosine: {scores}); check that the answer is there, "
                "then remove 'draft'")
        result.rows.append(_with_expected(row, [t for t, _ in found], hint))
        result.scores[position] = found[0][1]
        result.n_suggested += 1
    logger.info("suggested labels for %s: %s", shown, result.summary())
    return result
