"""The ``Target`` protocol and the types that travel with it: setups, hits, descriptions.

A *target* is anything searched with the golden questions: a collection ragtune builds from a
folder of documents, or an index in place (Azure AI Search, a team's own Milvus, pgvector or
Qdrant collection). Each offers its setups as plain data, searches a question with one of them,
describes itself (engine, index, counts, a fingerprint of schema and contents) and says which
expected documents it does not hold. Reports keep the setups and descriptions as JSON.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Protocol, Sequence, runtime_checkable

import numpy as np

from core.chunking.base import Chunk
from core.errors import ConfigError
from core.vectorstores.base import RetrievedChunk
from core.vectorstores.fusion import fusion_window, rrf_fuse

if TYPE_CHECKING:
    from core.models.embeddings import EmbeddingModel

#: Methods a setup's first stage can use.
METHODS: tuple[str, ...] = ("keyword", "dense", "hybrid")
#: Most chunks a target reads to fingerprint its contents; past it, the fingerprint covers the
#: schema and the counts only (and the description says so).
FINGERPRINT_MAX_CHUNKS = 200_000
#: Most distinct document ids a target lists (for counts and missing documents).
MAX_DOCUMENT_IDS = 1_000_000
#: Most chunks :meth:`Target.chunks_of` returns per document.
MAX_CHUNKS_PER_DOCUMENT = 10_000


@dataclass(frozen=True)
class TargetSetup:
    """One way a target searches: a first stage and its options.

    Attributes:
        key: the setup's name within its target (``keyword``, ``keyword-full+semantic``,
            ``dense``, ``hybrid``); reports name it ``<target>/<key>``.
        method: ``keyword``, ``dense`` or ``hybrid``.
        description: what the engine does, in a few words (``BM25, simple query syntax``).
        embedding_model: the ragtune embedding model whose query vectors the setup sends, or
            None (keyword search, or an engine that embeds the query with its own vectorizer).
        options: engine-specific options as ``(name, value)`` pairs (``query_type``,
            ``semantic_configuration``, ``vectorizer``), JSON scalars only.

    Raises:
        ConfigError: an unknown method or an empty key.
    """

    key: str
    method: str
    description: str = ""
    embedding_model: str | None = None
    options: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ConfigError(f"setup method must be one of {', '.join(METHODS)}, got {self.method!r}")
        if not self.key or "/" in self.key:
            raise ConfigError(f"setup key must be non-empty and hold no '/', got {self.key!r}")

    def option(self, name: str, default: Any = None) -> Any:
        """The value of option ``name``, or ``default``."""
        return dict(self.options).get(name, default)

    def to_dict(self) -> dict[str, Any]:
        """The setup as JSON: ``{key, method, description, embedding_model, options}``."""
        return {"key": self.key, "method": self.method, "description": self.description,
                "embedding_model": self.embedding_model, "options": dict(self.options)}


@dataclass(frozen=True)
class UnavailableSetup:
    """A setup a target does not offer, and why (``no vector field: keyword setups only``).

    Attributes:
        key: the setup's key (or a pattern such as ``dense*``).
        reason: why it is not offered.
    """

    key: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        """``{key, reason}``."""
        return {"key": self.key, "reason": self.reason}


@dataclass(frozen=True)
class Hit:
    """One search result of a target, as ragtune scores it.

    Attributes:
        document_id: the document's id in the golden file's form (see ``core.targets.ids``).
        pages: 1-based pages the chunk covers (empty when unknown or the document has none).
        chunk_id: the chunk's id in the target (its key), as text.
        text: the chunk's text.
        score: the engine's score, higher is better (its scale is the engine's).
    """

    document_id: str
    pages: tuple[int, ...]
    chunk_id: str
    text: str
    score: float

    def retrieved(self, rank: int) -> Any:
        """This hit as a :class:`core.vectorstores.base.RetrievedChunk` at 1-based ``rank``."""
        chunk = Chunk(text=self.text, chunk_id=self.chunk_id,
                      metadata={"document_id": self.document_id, "sequence_number": 0, "pages": list(self.pages)})
        return RetrievedChunk(chunk=chunk, score=float(self.score), rank=rank)


@dataclass(frozen=True)
class TargetDescription:
    """What a target is, as a report keeps it; two runs compare ``fingerprint`` to tell whether
    the target changed between them.

    Attributes:
        engine: ``azure-ai-search``, ``pgvector``, ``qdrant``, ``milvus``, ``milvus-lite`` or
            ``ragtune`` (a collection built here).
        location: where it is, without credentials (a service host, ``host:port/db as user``, a
            folder).
        index: the index, table or collection.
        n_chunks: chunks (index documents, rows, points) it holds, or None when unknown.
        n_documents: distinct documents, or None when it could not list them.
        fingerprint: 16 hex digits of the sha256 of the schema and the contents (see
            ``fingerprint_basis``).
        fingerprint_basis: what the fingerprint covers (``schema and every chunk's id, document
            and text``, or ``schema and counts`` when the contents could not be read).
        fields: the field mapping used, ``{role: field}``.
        inferred: which roles were inferred from the schema, one sentence each.
        notes: anything else a reader should know (a setup left out and why).
        unavailable: setups not offered, with the reason.
        pages_unknown: why the target's chunks carry no page (no page field, and no chunk read
            names one), or None when they do or the target cannot tell; page-grain results of
            its setups then say ``pages unknown`` instead of scoring every page label 0.
    """

    engine: str
    location: str
    index: str
    n_chunks: int | None
    n_documents: int | None
    fingerprint: str
    fingerprint_basis: str
    fields: tuple[tuple[str, str], ...] = ()
    inferred: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    unavailable: tuple[UnavailableSetup, ...] = ()
    pages_unknown: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The description as JSON."""
        return {"engine": self.engine, "location": self.location, "index": self.index,
                "n_chunks": self.n_chunks, "n_documents": self.n_documents, "fingerprint": self.fingerprint,
                "fingerprint_basis": self.fingerprint_basis, "fields": dict(self.fields),
                "inferred": list(self.inferred), "notes": list(self.notes),
                "unavailable": [u.to_dict() for u in self.unavailable], "pages_unknown": self.pages_unknown}


def pages_unknown(mapping: Any, seen_page: bool) -> str | None:
    """Why a target's chunks carry no page, for :attr:`TargetDescription.pages_unknown`.

    Args:
        mapping: the target's :class:`~core.targets.mapping.FieldMapping`.
        seen_page: some chunk the target read has a page (from its page field, or a
            ``#page=N`` in its document field).

    Returns:
        None when a page was seen, else one sentence naming the fields looked at.
    """
    if seen_page:
        return None
    if mapping.page:
        return f"no chunk read holds a page in field {mapping.page!r}"
    return (f"no page field is mapped and the document field {mapping.document!r} names no page (#page=N); "
            "name one with fields.page in the targets file")


@runtime_checkable
class Target(Protocol):
    """Something searched with the golden questions, read-only.

    Attributes:
        name: the target's name in reports (``prod``, ``azure-search:docs``); setups are
            reported as ``<name>/<setup key>``.

    Every implementation passes the contract suite ``tests/integration/test_target_contract.py``.
    Errors of the engine's client are raised as :class:`core.errors.TargetError` naming the
    target, never with a credential in the message.
    """

    name: str

    def setups(self) -> list[TargetSetup]:
        """The setups this target offers (none of them reranked by ragtune: the evaluation adds
        those)."""
        ...

    def search(self, question: str, setup: TargetSetup, top_k: int) -> list[Hit]:
        """At most ``top_k`` hits for ``question`` with ``setup``, best first.

        Raises:
            TargetError: the engine refused or failed.
        """
        ...

    def describe(self) -> TargetDescription:
        """The target's description (counts and fingerprint read now).

        Raises:
            TargetError: the engine cannot be reached.
        """
        ...

    def missing(self, expected: Iterable[str]) -> list[str]:
        """The ids of ``expected`` (golden-file document ids) the target holds no chunk of,
        sorted."""
        ...

    def chunks_of(self, document_ids: Iterable[str]) -> dict[str, list[Hit]]:
        """The target's own chunks of each document (at most :data:`MAX_CHUNKS_PER_DOCUMENT`
        each), for checking evidence quotes against them; a document it lacks is left out.

        Raises:
            TargetError: the engine cannot select chunks by document (the reason says why).
        """
        ...

    def close(self) -> None:
        """Release connections and clients the target opened."""
        ...


class QueryVectors:
    """Query vectors of one embedding model, each text embedded once per run, and how long each
    first embedding took (a user's query is embedded once before the search).

    Args:
        model: an ``EmbeddingModel``.

    Attributes:
        model_id: the model's id.
        embed_ms: text -> milliseconds its embedding took.
    """

    def __init__(self, model: EmbeddingModel) -> None:
        self.model = model
        self.model_id = str(model.model_id)
        self._memo: dict[str, np.ndarray] = {}
        self.embed_ms: dict[str, float] = {}

    @property
    def dimension(self) -> int:
        """Length of each vector."""
        return int(self.model.embedding_dimension)

    def vector(self, text: str) -> np.ndarray:
        """The float32 query vector of ``text``, shape ``(dimension,)``.

        Raises:
            EmbeddingError: the model failed.
        """
        found = self._memo.get(text)
        if found is None:
            start = time.perf_counter()
            found = np.asarray(self.model.embed_query(text), dtype=np.float32).reshape(-1)
            self.embed_ms[text] = (time.perf_counter() - start) * 1000.0
            self._memo[text] = found
        return found


def check_dimension(field_name: str, field_dims: int | None, vectors: QueryVectors | None, target: str) -> str | None:
    """Why ragtune cannot send query vectors to a vector field, or None when it can.

    Args:
        field_name: the vector field.
        field_dims: its number of dimensions (None when the engine does not say).
        vectors: the query vectors ragtune would send, or None when no embedding model is set.
        target: the target's name, for the message.
    """
    if vectors is None:
        return f"{target}: no embedding model to embed the questions for vector field {field_name!r}"
    if field_dims is not None and int(field_dims) != vectors.dimension:
        return (f"{target}: vector field {field_name!r} holds {field_dims}-dimensional vectors but "
                f"{vectors.model_id} gives {vectors.dimension}: configure the embedding model that built the index "
                "(RAGTUNE_EMBEDDING_PROVIDER / RAGTUNE_EMBEDDING_MODEL, or --embedding-model)")
    return None


class Fingerprint:
    """Builds a target's fingerprint from its schema and, while there are at most
    :data:`FINGERPRINT_MAX_CHUNKS` of them, its chunks (id, document, text), in any order.

    Chunk digests are combined order-free (sorted), so two reads of the same contents in
    different orders give the same fingerprint.
    """

    def __init__(self, schema: Any) -> None:
        self._schema = json.dumps(schema, sort_keys=True, default=str, ensure_ascii=False)
        self._digests: list[bytes] = []
        self.complete = True

    def add(self, chunk_id: Any, document: Any, text: Any) -> bool:
        """Add one chunk; False once the limit is passed (stop reading then)."""
        if len(self._digests) >= FINGERPRINT_MAX_CHUNKS:
            self.complete = False
            return False
        raw = json.dumps([str(chunk_id), str(document), str(text)], ensure_ascii=False).encode("utf-8")
        self._digests.append(hashlib.sha256(raw).digest())
        return True

    def result(self, counts: Mapping[str, Any]) -> tuple[str, str]:
        """``(fingerprint, basis)``: 16 hex digits, and what they cover."""
        digest = hashlib.sha256(self._schema.encode("utf-8"))
        digest.update(json.dumps(dict(counts), sort_keys=True, default=str).encode("utf-8"))
        if self.complete:
            for d in sorted(self._digests):
                digest.update(d)
            return digest.hexdigest()[:16], "schema and every chunk's id, document and text"
        return digest.hexdigest()[:16], (f"schema and counts (more than {FINGERPRINT_MAX_CHUNKS:,} chunks: "
                                         "the contents are not read)")


def missing_documents(expected: Iterable[str], held: Iterable[str]) -> list[str]:
    """The ids of ``expected`` not in ``held``, sorted (both in the golden file's form)."""
    have = set(held)
    return sorted({e for e in expected if e not in have})


def raw_candidates(document_id: str, prefix: str = "") -> list[str]:
    """The values an index may hold for a golden-file document id when its listing was cut
    short: the id, and the id after the mapping's ``document_prefix``."""
    return list(dict.fromkeys([document_id, prefix + document_id] if prefix else [document_id]))


def hits_in_order(rows: Sequence[Hit], top_k: int) -> list[Hit]:
    """The first ``top_k`` rows, best first by score, ties kept in the engine's order."""
    order = sorted(range(len(rows)), key=lambda i: (-float(rows[i].score), i))
    return [rows[i] for i in order[:top_k]]


def fuse_rrf(dense: Callable[[str, int], list[Hit]], keyword: Callable[[str, int, TargetSetup], list[Hit]],
             question: str, top_k: int, setup: TargetSetup) -> list[Hit]:
    """Hybrid search as ragtune's stores do it: each leg fetches
    :func:`core.vectorstores.fusion.fusion_window` hits, :func:`core.vectorstores.fusion.rrf_fuse`
    fuses them (k from the setup's ``ranker_k``, default 60) and keeps ``top_k``.

    Args:
        dense: ``(question, k) -> hits`` of the dense leg.
        keyword: ``(question, k, setup) -> hits`` of the keyword leg.
        question: the question.
        top_k: hits kept.
        setup: the hybrid setup.
    """
    k = int(setup.option("ranker_k", 60))
    window = fusion_window(top_k, k)
    dense_hits = dense(question, window)
    keyword_hits = keyword(question, window, setup)
    by_id = {h.chunk_id: h for h in dense_hits + keyword_hits}
    fused = rrf_fuse([(h.chunk_id, h.score) for h in dense_hits], [(h.chunk_id, h.score) for h in keyword_hits],
                     k=k, limit=top_k)
    return [Hit(by_id[i].document_id, by_id[i].pages, i, by_id[i].text, float(s)) for i, s in fused]


__all__ = [
    "FINGERPRINT_MAX_CHUNKS", "Fingerprint", "Hit", "METHODS", "QueryVectors", "Target", "TargetDescription",
    "TargetSetup", "UnavailableSetup", "check_dimension", "fuse_rrf", "hits_in_order", "missing_documents",
    "pages_unknown", "raw_candidates",
]
