"""One way to build an index: a collection built or reused for (documents, chunking, embedding
model, vector store), in a :class:`core.workspace.Workspace`.

Every workflow that indexes documents (``evaluate`` and its ``--docs`` target, the optimizer's
evaluations, ``compare-chunking``, ``sweep``, ``cutoff``, ``suggest``) opens its embedding model
through the workspace's cache (:func:`cached_model`), names its collection from its indexing
parameters (:func:`collection_for`), takes its store from the workspace unless one is configured
(:func:`store_config`), and fills or reuses the collection with :func:`build_index`, the only
place that writes chunks into a store (a scratch collection, built afresh and dropped after its
searches, through :func:`scratch_index`).
"""

from __future__ import annotations

import logging
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Sequence

from core.errors import IndexingError
from core.models import CachedEmbeddingModel, EmbeddingCache
from core.vectorstores import MilvusLiteConfig, collection_name_for, get_vector_store

if TYPE_CHECKING:
    from core.models.embeddings import EmbeddingModel
    from core.vectorstores.base import VectorStore
    from core.vectorstores.milvus import MilvusConfig
    from core.vectorstores.pgvector import PGVectorConfig
    from core.workspace import Workspace

logger = logging.getLogger(__name__)

#: Chunks embedded per call, so progress can be shown.
EMBED_BATCH = 256
#: Chunks embedded per call when a new collection's chunks are embedded before its database is
#: open (``core.evaluation.single``; no progress to show): the most inputs one OpenAI embeddings
#: request takes, so an endpoint gets whole requests, while a failure loses at most one batch
#: and the vectors held at once stay bounded.
EARLY_EMBED_BATCH = 1024


@dataclass(frozen=True)
class IndexBuild:
    """What :func:`build_index` did.

    Attributes:
        reused: the collection already held the chunks (nothing was embedded or written).
        n_chunks: chunks asked to be indexed.
        n_left_out: chunks of documents the store refused (reported in ``failures``).
        embed_s: seconds spent embedding (through the cache); 0 when reused.
        index_s: seconds spent writing, flushing and counting; 0 when reused.
    """

    reused: bool
    n_chunks: int
    n_left_out: int = 0
    embed_s: float = 0.0
    index_s: float = 0.0

    @property
    def n_indexed(self) -> int:
        """Chunks the collection holds afterwards."""
        return self.n_chunks - self.n_left_out


def open_cache(workspace: "Workspace") -> EmbeddingCache:
    """The workspace's embedding cache (``<root>/cache/embeddings.sqlite``), opened."""
    return EmbeddingCache(workspace.embedding_cache)


def cached_model(model: EmbeddingModel, workspace: "Workspace",
                 cache: EmbeddingCache | None = None) -> CachedEmbeddingModel:
    """``model`` embedding through the workspace's cache (``cache`` when one is open already).

    Args:
        model: an ``EmbeddingModel``.
        workspace: the working folder.
        cache: an open ``EmbeddingCache`` to share, or None to open the workspace's.
    """
    return CachedEmbeddingModel(model, cache if cache is not None else open_cache(workspace))


def store_config(config: MilvusLiteConfig | MilvusConfig | PGVectorConfig | None,
                 workspace: "Workspace") -> MilvusLiteConfig | MilvusConfig | PGVectorConfig:
    """``config`` (a vector store configuration), or Milvus Lite in the workspace
    (``<root>/milvus.db``) when it is None."""
    return config if config is not None else MilvusLiteConfig(workspace.milvus_lite)


def collection_for(corpus: str, chunking: Mapping[str, Any], embedding_model: str, *,
                   prefix: str = "ragtune", **extra: Any) -> str:
    """The collection name of an index: a digest of its indexing parameters
    (``core.vectorstores.collection_name_for``), so one built before is found again.

    Args:
        corpus: the corpus fingerprint (``core.documents.corpus_fingerprint``).
        chunking: the chunker's name and parameters (``{"method": ..., **params}``).
        embedding_model: the embedding model's id.
        prefix: the name's prefix (``ragtune_scratch`` for collections deleted after use).
        extra: more parameters the name depends on (a scratch build's ``purpose``, ``build``).
    """
    return collection_name_for({**extra, "corpus": corpus, "chunking": dict(chunking),
                                "embedding_model": embedding_model}, prefix=prefix)


def build_index(store: VectorStore, chunks: Sequence[Any], model: EmbeddingModel, *, reuse: bool = True,
                keyword_index: bool = False,
                build_key: str = "", failures: list[dict[str, Any]] | None = None,
                on_batch: Callable[[int], Any] | None = None) -> IndexBuild:
    """Fill ``store``'s collection with ``chunks``, or reuse it when it holds them already.

    Reused when ``reuse`` and the collection exists holding exactly ``len(chunks)`` chunks (and
    a keyword index when ``keyword_index``: a vector-only collection is built again, its vectors
    from the embedding cache). Otherwise the collection is dropped and the chunks are embedded
    in batches of :data:`EMBED_BATCH` (through ``model``, usually cached) and written. A batch
    the store refuses (an :class:`IndexingError`, such as a chunk text longer than the store
    holds) is written again document by document: a document that still fails is left out and
    reported in ``failures`` (``{"build", "document_id", "reason"}``); without ``failures`` the
    first such error is raised. A store with a leg memo drops the memo's entries of its
    collection before it is deleted and after every write (``MilvusVectorStore``).

    Args:
        store: the vector store, opened on the collection.
        chunks: the chunks to index.
        model: the embedding model.
        reuse: reuse a collection that holds the chunks (False: always build, as scratch
            collections are).
        keyword_index: a reused collection must have a keyword index.
        build_key: names the build in failures and logs.
        failures: where documents left out are reported; None raises instead.
        on_batch: called with the size of each batch written (for progress bars).

    Returns:
        An :class:`IndexBuild` with whether it was reused, the counts and the timings.

    Raises:
        IndexingError: the collection does not hold every chunk written afterwards, or (without
            ``failures``) a batch and its document could not be written.
    """
    if reuse and store.exists() and store.count() == len(chunks) and (not keyword_index or store.has_keyword_index()):
        return IndexBuild(reused=True, n_chunks=len(chunks))
    embed_s = index_s = 0.0
    store.delete_collection()
    left_out = 0
    for i in range(0, len(chunks), EMBED_BATCH):
        batch = chunks[i : i + EMBED_BATCH]
        t0 = time.perf_counter()
        vectors = model.embed_documents([c.text for c in batch])
        t1 = time.perf_counter()
        try:
            store.add_documents(batch, vectors=vectors)
        except IndexingError:
            if failures is None:
                raise
            left_out += _by_document(store, batch, vectors, build_key, failures)
        index_s += time.perf_counter() - t1
        embed_s += t1 - t0
        if on_batch is not None:
            on_batch(len(batch))
    t1 = time.perf_counter()
    store.flush()
    held = store.count()
    index_s += time.perf_counter() - t1
    if held != len(chunks) - left_out:
        raise IndexingError(f"collection {store.collection_name} holds {held} chunks; "
                            f"{len(chunks) - left_out} were written")
    return IndexBuild(reused=False, n_chunks=len(chunks), n_left_out=left_out, embed_s=embed_s, index_s=index_s)


@contextmanager
def scratch_index(model: EmbeddingModel, config: MilvusLiteConfig | MilvusConfig | PGVectorConfig, name: str,
                  chunks: Sequence[Any], *, build_key: str = "",
                  failures: list[dict[str, Any]] | None = None) -> Iterator[tuple[Any, IndexBuild]]:
    """A scratch collection ``name`` holding ``chunks``, built afresh (:func:`build_index`),
    searched inside the ``with`` block and dropped after it (``compare-chunking``, ``sweep``).

    Args:
        model: the embedding model (usually cached).
        config: the vector store configuration.
        name: the collection's name (:func:`collection_for` with ``prefix="ragtune_scratch"``).
        chunks: the chunks to index.
        build_key: names the build in failures and logs.
        failures: where documents the store refuses are reported (see :func:`build_index`).

    Yields:
        ``(store, build)``: the open store and what :func:`build_index` did.
    """
    store = get_vector_store(model, config, name)
    try:
        yield store, build_index(store, chunks, model, reuse=False, build_key=build_key, failures=failures)
    finally:
        try:
            store.delete_collection()
        finally:
            store.close()


def _by_document(store: VectorStore, batch: Sequence[Any], vectors: Any, build_key: str,
                 failures: list[dict[str, Any]]) -> int:
    """Write ``batch`` document by document; returns the chunks left out (their documents are
    reported in ``failures``)."""
    by_doc: dict[str, list[int]] = {}
    for j, c in enumerate(batch):
        by_doc.setdefault(c.document_id, []).append(j)
    left_out = 0
    for document_id, rows in by_doc.items():
        try:
            store.add_documents([batch[j] for j in rows], vectors=vectors[rows])
        except IndexingError as exc:
            left_out += len(rows)
            logger.warning("%s could not index %s: %s", build_key, document_id, exc)
            failures.append({"build": build_key, "document_id": document_id,
                             "reason": f"not indexed: {str(exc)[:480]}"})
    return left_out
