"""The collection ragtune builds from a folder of documents, as a target.

It is built as ``ragtune evaluate`` builds its collections (load, chunk, embed through the
embedding cache, index in the configured vector store, reused when the corpus, chunking and
embedding model match), and searched with ragtune's own setups: ``keyword``, ``dense``,
``hybrid-rrf-k60`` and ``hybrid-weighted-a0.5``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

import numpy as np

from core.chunking import get_chunker
from core.documents import corpus_fingerprint, load_documents
from core.errors import IndexingError
from core.evaluation.indexing import build_index, collection_for
from core.evaluation.retrieval import _progress, default_search_setups, method_key
from core.targets.base import (
    Fingerprint,
    Hit,
    QueryVectors,
    TargetDescription,
    TargetSetup,
    missing_documents,
)
from core.targets.spec import BUILT_TARGET
from core.vectorstores import backend_name, describe_store, get_vector_store
from core.workspace import Workspace

if TYPE_CHECKING:
    from core.models.embeddings import EmbeddingModel
    from core.vectorstores.base import VectorStore
    from core.vectorstores.milvus import MilvusConfig, MilvusLiteConfig
    from core.vectorstores.pgvector import PGVectorConfig


class _QueryModel:
    """An embedding model whose queries come from :class:`QueryVectors` (embedded once per
    run and timed there) and whose documents come from the model itself."""

    def __init__(self, model: EmbeddingModel, vectors: QueryVectors) -> None:
        self.model = model
        self.vectors = vectors
        self.model_id = model.model_id

    @property
    def embedding_dimension(self) -> int:
        """The model's vector length."""
        return int(self.model.embedding_dimension)

    @property
    def max_input_tokens(self) -> int | None:
        """The model's context length in tokens."""
        return self.model.max_input_tokens

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """The model's vectors of ``texts``."""
        return self.model.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        """The run's query vector of ``text``."""
        return self.vectors.vector(text)


class CollectionTarget:
    """A collection ragtune built (see :meth:`build`).

    Args:
        store: the ``VectorStore`` holding the chunks.
        chunks: the chunks it holds.
        documents: the ``LoadedDocument`` objects they come from.
        skipped: the files that did not load.
        description: what :meth:`describe` returns.
        name: the target's name (default :data:`core.targets.spec.BUILT_TARGET`).
        reused: whether the collection was there already (built by an earlier run).
    """

    engine = "ragtune"

    def __init__(self, store: VectorStore, chunks: Sequence[Any], documents: Sequence[Any], skipped: Sequence[Any],
                 description: TargetDescription, name: str = BUILT_TARGET, reused: bool = False) -> None:
        self.name = name
        self.reused = reused
        self.store = store
        self.chunks = list(chunks)
        self.documents = list(documents)
        self.skipped = list(skipped)
        self._description = description

    @classmethod
    def build(cls, docs: str | Path, *, model: EmbeddingModel, out_dir: str | Path,
              store_config: MilvusLiteConfig | MilvusConfig | PGVectorConfig,
              vectors: QueryVectors,
              chunking: tuple[str, int, int] = ("recursive", 256, 32), embed_title: bool = True,
              show_progress: bool = True, on_status: Callable[[str], None] | None = None,
              name: str = BUILT_TARGET) -> "CollectionTarget":
        """Load, chunk, embed and index ``docs`` (or reuse the collection built from them).

        Args:
            docs: the documents folder (a path or a remote address, see ``core.inputs``).
            model: the (cached) embedding model that embeds the chunks.
            out_dir: the working folder (downloaded inputs).
            store_config: the vector store's configuration.
            vectors: the run's query vectors of ``model``.
            chunking: ``(method, chunk size, overlap)`` in tokens.
            embed_title: put each document's title before its chunks' text.
            show_progress: show a progress bar while embedding.
            on_status: called with a short line when a step starts.
            name: the target's name.

        Raises:
            DocumentError, IndexingError, StoreError, ConfigError: as ``ragtune evaluate``.
        """
        status = on_status or (lambda message: None)
        chunker = get_chunker(*chunking, embed_title=embed_title)
        workspace = Workspace.at(out_dir).create()  # marked before the documents load, so they never hold it
        loaded = load_documents(docs, cache_dir=workspace.inputs)
        chunks = chunker.chunk(loaded.documents)
        if not chunks:
            raise IndexingError(f"the documents in {docs} gave no chunks")
        corpus = corpus_fingerprint(loaded.documents)
        params = {"method": chunker.name, **chunker.params()}
        params.setdefault("embed_title", False)  # as evaluate names the collection
        collection = collection_for(corpus, params, model.model_id)
        store = get_vector_store(_QueryModel(model, vectors), store_config, collection)
        reused = store.exists() and store.count() == len(chunks)
        if not reused:
            status(f"embedding and indexing {len(chunks)} chunks into {collection} ({model.model_id})")
            with _progress(len(chunks), f"embedding ({model.model_id})", show_progress) as bar:
                build_index(store, chunks, model, reuse=False, on_batch=bar.update)
        fingerprint = Fingerprint({"corpus": corpus, "chunking": params, "embedding_model": model.model_id})
        for c in chunks:
            fingerprint.add(c.chunk_id, c.document_id, c.text)
        value, basis = fingerprint.result({"chunks": len(chunks)})
        description = TargetDescription(
            engine=backend_name(store_config), location=describe_store(store_config), index=collection,
            n_chunks=len(chunks), n_documents=len(loaded.documents), fingerprint=value, fingerprint_basis=basis,
            fields=(("embedding_model", model.model_id),),
            notes=(f"built by ragtune from {docs}: {', '.join(f'{k} {v}' for k, v in params.items())}"
                   + ("; the collection was reused" if reused else ""),))
        return cls(store, chunks, loaded.documents, loaded.skipped, description, name, reused)

    def setups(self) -> list[TargetSetup]:
        """ragtune's search methods (``core.evaluation.retrieval.default_search_setups``)."""
        model = self.store.embedding_model.model_id
        out = []
        for search in default_search_setups():
            key = method_key(search)
            method = "dense" if search.search_mode == "vector" else search.search_mode
            out.append(TargetSetup(key, method, f"ragtune's {search.name} search", None if method == "keyword" else model,
                                   tuple(search.to_dict().items())))
        return out

    def search(self, question: str, setup: TargetSetup, top_k: int) -> list[Hit]:
        """Search the collection with the store's own search."""
        results = self.store.search(question, k=top_k, **dict(setup.options))
        return [Hit(r.chunk.document_id, tuple(r.chunk.pages), r.chunk.chunk_id, r.chunk.text, float(r.score))
                for r in results]

    def describe(self) -> TargetDescription:
        """The collection's description (its fingerprint covers the corpus, the chunking, the
        embedding model and every chunk)."""
        return self._description

    def missing(self, expected: Iterable[str]) -> list[str]:
        """The expected documents that did not load from the folder."""
        return missing_documents(expected, [d.document_id for d in self.documents])

    def chunks_of(self, document_ids: Iterable[str]) -> dict[str, list[Hit]]:
        """The chunks of each document, as they were indexed."""
        wanted = set(document_ids)
        out: dict[str, list[Hit]] = {}
        for c in self.chunks:
            if c.document_id in wanted:
                out.setdefault(c.document_id, []).append(Hit(c.document_id, tuple(c.pages), c.chunk_id, c.text, 0.0))
        return out

    def close(self) -> None:
        """Close the store."""
        self.store.close()


__all__ = ["CollectionTarget"]
