"""Suggested labels: ``expected`` ids proposed for questions that have a reference answer.

``ragtune suggest --docs DIR --golden FILE -o FILE [--top 1] [--by doc|page]`` reads a golden
file and, for each question with a reference answer and no ``expected`` (or only a draft one),
searches the corpus with the reference answer, which finds the passage that says it far more
reliably than the question does, and proposes the ``top`` ids it comes from, marked
``"draft": true`` with a hint naming the score. Rows with a label a person made (an
``expected`` list on a row that is not a draft) are written back unchanged, as is every other
row.

Search: the documents are chunked and indexed as ``evaluate`` does by default (recursive chunker
at its default sizes, the configured embedding model and vector store; the collection is the one
``evaluate`` reuses), and searched with hybrid search (dense + BM25, reciprocal rank fusion),
except that chunks holding the whole reference verbatim (a reference of at least
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
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Sequence

from core.chunking import get_chunker
from core.chunking.base import Chunk
from core.documents import corpus_fingerprint
from core.errors import ConfigError, GoldenError
from core.evaluation import indexing
from core.evaluation.retrieval import EvaluateOptions
from core.golden import bedrock
from core.golden.passages import GRAINS
from core.golden.reader import _check, check_golden, read_bytes
from core.golden.types import MIN_EVIDENCE_WORDS, Problem
from core.inputs import shown_address
from core.metrics.retrieval import normalize_text
from core.text import plural
from core.vectorstores import get_vector_store
from core.vectorstores.base import SearchSetup

if TYPE_CHECKING:
    from core.documents.base import LoadedDocument
    from core.models.embeddings import EmbeddingModel
    from core.vectorstores.base import VectorStore
    from core.vectorstores.factory import StoreConfig

logger = logging.getLogger(__name__)

#: Ids proposed per question by default.
DEFAULT_TOP = 1
#: Chunks fetched per id wanted.
SEARCH_K = 10


def _search_setup() -> SearchSetup:
    return SearchSetup("hybrid", "rrf")

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
    """

    rows: list[dict[str, Any]]
    format: str = "ragtune"
    n_suggested: int = 0
    n_kept: int = 0
    n_without_reference: int = 0
    n_other: int = 0

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
    """The chunks of a corpus in a vector store, searched with hybrid search (dense + BM25, RRF).

    Use it as a context manager (the store is closed on exit).

    Args:
        store: a ``VectorStore`` holding ``chunks``.
        chunks: the chunks, in corpus order.
        paged: ids of the documents that have pages.
    """

    def __init__(self, store: VectorStore, chunks: Sequence[Chunk], paged: set[str]) -> None:
        self.store = store
        self.chunks = list(chunks)
        self.paged = paged
        self.normalized = [normalize_text(c.text) for c in self.chunks]

    def __enter__(self) -> "ChunkIndex":
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Close the vector store."""
        self.store.close()

    def target(self, chunk: Chunk, by: str) -> str:
        """The id a chunk stands for at grain ``by``: ``doc#page=N`` or ``doc``."""
        if by == "page" and chunk.document_id in self.paged and chunk.pages:
            return f"{chunk.document_id}#page={chunk.pages[0]}"
        return chunk.document_id

    def search(self, query: str, *, verbatim: str | None, top: int, by: str) -> list[str]:
        """The ``top`` distinct ids of the best chunks for ``query``.

        Chunks holding ``verbatim`` come first (those the search returned in its order, then
        the others in corpus order), then the search's other results.

        Args:
            query: the search text.
            verbatim: a normalised text (see ``normalize_text``), or None.
            top: ids wanted (>= 1).
            by: ``"page"`` or ``"doc"``.

        Returns:
            Up to ``top`` ids, best first.
        """
        hits = [h.chunk for h in self.store.search(query, k=max(SEARCH_K, SEARCH_K * top), **_search_setup().to_dict())]
        holders: list[Chunk] = []
        if verbatim:
            found = {c.chunk_id for c, t in zip(self.chunks, self.normalized) if verbatim in t}
            holders = [c for c in hits if c.chunk_id in found]
            seen = {c.chunk_id for c in holders}
            holders += [c for c in self.chunks if c.chunk_id in found and c.chunk_id not in seen]
        out: list[str] = []
        for chunk in holders + hits:
            target = self.target(chunk, by)
            if target not in out:
                out.append(target)
                if len(out) == top:
                    break
        return out


def build_index(documents: Sequence[LoadedDocument], embedding_model: EmbeddingModel,
                store_config: StoreConfig) -> ChunkIndex:
    """Chunk ``documents`` as ``evaluate`` does by default (recursive chunker, its default
    sizes) and index them in the collection ``evaluate`` would use, reusing it when it holds
    them already.

    Args:
        documents: ``LoadedDocument`` objects, in the loader's order.
        embedding_model: an ``EmbeddingModel`` (usually cached).
        store_config: a vector store configuration (``MilvusLiteConfig``, ...).

    Returns:
        A :class:`ChunkIndex` (close it when done).

    Raises:
        IndexingError / EmbeddingError / StoreError: indexing failed.
    """
    chunker = get_chunker("recursive", EvaluateOptions.chunk_size, EvaluateOptions.chunk_overlap)
    chunks = [c for d in documents for c in chunker.chunk([d])]
    collection = indexing.collection_for(corpus_fingerprint(list(documents)),
                                         {"method": chunker.name, **chunker.params()}, embedding_model.model_id)
    store = get_vector_store(embedding_model, store_config, collection)
    try:
        indexing.build_index(store, chunks, embedding_model)
    except BaseException:
        store.close()
        raise
    return ChunkIndex(store, chunks, {d.document_id for d in documents if d.n_pages > 0})


def _query(question: str, reference: str) -> str:
    return reference if len(reference.split()) >= MIN_EVIDENCE_WORDS else f"{question} {reference}"


def _verbatim(reference: str) -> str | None:
    return normalize_text(reference) if len(reference.split()) >= MIN_EVIDENCE_WORDS else None


def _raise_errors(path: str, problems: list[Problem]) -> None:
    head = f"{path}: {plural(len(problems), 'error')} — fix them before suggesting labels"
    raise GoldenError("\n".join([head, *(p.format(path) for p in problems)]), problems)


def _native_rows(path: str, data: bytes) -> list[tuple[int, dict[str, Any]]]:
    """``(line, row)`` for every row of a native golden file; raises on errors other than a
    missing or empty ``expected`` (and the file-level "nothing ready")."""
    check = check_golden(path, data=data)
    nothing_ready = [p for p in check.errors if p.line is None and p.message.startswith("nothing ready")]
    blocking = [p for p in check.errors if p not in nothing_ready and not (p.line is not None and p.field in
                                                                             _UNLABELLED_FIELDS)]
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


def suggest_rows(path: str, data: bytes) -> tuple[list[tuple[int, dict[str, Any]]], str]:
    """The rows :func:`suggest_labels` works on, checked as it checks them: ``([(line, row),
    ...], format)``, ``format`` ``"ragtune"`` for a native golden file (rows without
    ``expected`` are what it fills in) or the Bedrock dataset's format (each turn a row).

    Args:
        path: the file as messages name it.
        data: its bytes (a UTF-8 byte order mark is allowed).

    Raises:
        GoldenError: the file has errors other than rows without ``expected``.
    """
    text = data.removeprefix(b"\xef\xbb\xbf").decode("utf-8", errors="replace")
    if bedrock.looks_like_bedrock(text):
        return _bedrock_rows(path, data)
    return _native_rows(path, data), "ragtune"


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


def suggest_labels(golden_path: str, documents: Sequence[LoadedDocument], *, index: ChunkIndex, top: int = DEFAULT_TOP,
                   by: str = "page", data: bytes | None = None) -> SuggestResult:
    """Propose ``expected`` ids for the questions of a golden file that have a reference answer.

    Args:
        golden_path: the golden file (a local path or an address); only named in messages when
            ``data`` is given.
        documents: the corpus, as ``LoadedDocument`` objects.
        index: the corpus indexed by :func:`build_index` (not closed here).
        top: ids proposed per question (>= 1).
        by: ``"page"`` or ``"doc"``.
        data: the golden file's bytes when already read.

    Returns:
        A :class:`SuggestResult` whose rows are the output golden file.

    Raises:
        GoldenError: the file cannot be read or has errors other than rows without ``expected``.
        ConfigError: ``top`` below 1, a bad ``by``, or no document.
    """
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise ConfigError(f"top must be an integer of at least 1, got {top!r}")
    if by not in GRAINS:
        raise ConfigError(f"by must be one of {', '.join(GRAINS)}, got {by!r}")
    if not documents:
        raise ConfigError("no documents to search: suggestions need the corpus")
    shown = shown_address(golden_path)
    if data is None:
        data = read_bytes(golden_path)
    rows, fmt = suggest_rows(shown, data)
    result = SuggestResult(rows=[], format=fmt)
    for _, row in rows:
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
        verbatim = _verbatim(reference)
        how = " (it is there verbatim)" if verbatim and any(verbatim in t for t in index.normalized) else ""
        hint = (f"suggested by searching the documents with the reference answer{how}: check that the answer is "
                "there, then remove 'draft'")
        result.rows.append(_with_expected(row, found, hint))
        result.n_suggested += 1
    logger.info("suggested labels for %s: %s", shown, result.summary())
    return result
