"""Milvus vector store: embedded Milvus Lite (a local ``.db``) or a Milvus server.

Schema per collection: ``id`` (VARCHAR primary key = chunk id), ``text`` (VARCHAR with an
analyzer), ``dense`` (FLOAT_VECTOR, cosine), ``sparse`` (SPARSE_FLOAT_VECTOR filled by
pymilvus's BM25 function from ``text``), ``document_id``, ``sequence_number`` and ``meta``
(JSON: pages, headings). Hybrid search runs the dense and the BM25 search and fuses them with
:mod:`core.vectorstores.fusion` (Milvus's ``RRFRanker`` and ``WeightedRanker`` formulas), not
with Milvus's ``hybrid_search``: see ``MilvusVectorStore._search_batch``.

References:
    Milvus full-text search (BM25 function) and hybrid search with ``RRFRanker`` /
    ``WeightedRanker``: https://milvus.io/docs/full-text-search.md,
    https://milvus.io/docs/multi-vector-search.md
"""

from __future__ import annotations

import json
import logging
import re
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence

import numpy as np

from core.chunking.base import Chunk
from core.errors import ConfigError, IndexingError, StoreError
from core.limits import MAX_SEARCH_LIMIT
from core.models.embeddings import EmbeddingModel, query_text
from core.redaction import shown_url, url_secrets, without_credentials
from core.vectorstores.base import RetrievedChunk, SearchSetup, validate_collection_name
from core.vectorstores.fusion import fuse, hybrid_window

from core.vectorstores.legs import Binding, LegMemo, leg_answers
from core.workspace import Workspace

if TYPE_CHECKING:
    from pymilvus import MilvusClient

    from core.vectorstores.legs import Generation

#: gRPC channel options: no keepalive pings on an idle channel (servers with default limits,
#: milvus-lite among them, answer those with GOAWAY "too_many_pings").
IDLE_PINGS_OFF = {"grpc.keepalive_permit_without_calls": False}

logger = logging.getLogger(__name__)

#: Rows per upsert request.
UPSERT_BATCH = 2048
#: Queries per search request of ``MilvusVectorStore.search_many`` (and chunk ids per request
#: for the fields of the chunks a hybrid search keeps).
SEARCH_BATCH = 256
#: The deepest a leg memo widens a search to (its ``fetch_depth``, cut to this): a space with
#: one very deep configuration must not make every other search fetch and parse thousands of
#: candidates per question; a leg deeper than this is fetched at the depth asked.
MAX_WIDENED_DEPTH = 1024
#: Longest wait, in seconds, for a new collection's indexes to be built.
INDEX_WAIT_S = 120
#: Attempts to open a client on a Milvus server before giving up.
MAX_CONNECT_ATTEMPTS = 3
#: Longest text Milvus's VARCHAR field holds, in bytes.
MAX_TEXT_BYTES = 65535
#: The fields of a chunk a search returns (besides its id).
CHUNK_FIELDS = ("text", "document_id", "sequence_number", "meta")


@dataclass(frozen=True)
class MilvusLiteConfig:
    """Embedded Milvus Lite in a local ``.db`` (a file for Milvus Lite 2, a folder for 3; one
    process at a time, see :func:`lite_engine`).

    Attributes:
        path: the ``.db`` path; its parent folder is created.
    """

    path: str

    @classmethod
    def from_env(cls, env: Mapping[str, str], out_dir: str = "ragtune-out") -> "MilvusLiteConfig":
        """``RAGTUNE_MILVUS_LITE_PATH``, else ``<out_dir>/milvus.db`` (``core.settings`` passes
        ``os.environ``)."""
        return cls((env.get("RAGTUNE_MILVUS_LITE_PATH") or "").strip() or Workspace.at(out_dir).milvus_lite)

    @property
    def uri(self) -> str:
        """The URI pymilvus opens."""
        return str(Path(self.path).resolve())


@dataclass(frozen=True)
class MilvusConfig:
    """A Milvus server (or Milvus Lite's binary listening on TCP, as
    ``scripts/services/milvus.sh`` starts it).

    Attributes:
        uri: ``http://host:port``.
        token: ``user:password`` or an API key; never logged.
        db_name: the database ("" for the default one).
    """

    uri: str
    token: str = ""
    db_name: str = ""

    def __repr__(self) -> str:
        return (f"MilvusConfig(uri={shown_url(self.uri)!r}, token={'***' if self.token else ''!r}, "
                f"db_name={self.db_name!r})")

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> "MilvusConfig":
        """``RAGTUNE_MILVUS_URI`` (required), ``RAGTUNE_MILVUS_TOKEN``, ``RAGTUNE_MILVUS_DB``.

        Raises:
            ConfigError: ``RAGTUNE_MILVUS_URI`` is unset.
        """
        uri = (env.get("RAGTUNE_MILVUS_URI") or "").strip()
        if not uri:
            raise ConfigError("RAGTUNE_MILVUS_URI is not set (for example http://127.0.0.1:19530)")
        return cls(uri, env.get("RAGTUNE_MILVUS_TOKEN") or "", env.get("RAGTUNE_MILVUS_DB") or "")


class MilvusVectorStore:
    """A Milvus collection holding chunks, searched by vector, BM25 keyword or both.

    Args:
        embedding_model: embeds chunks and queries.
        config: :class:`MilvusLiteConfig` or :class:`MilvusConfig`.
        collection_name: the collection (see ``collection_name_for``).
        client: an open ``pymilvus.MilvusClient`` to share (optional).
        keyword_index: give a collection this store creates the ``sparse`` field and its BM25
            function (needed by keyword and hybrid search); False creates a vector-only
            collection, on which keyword and hybrid searches raise ``StoreError``.
        legs: a :class:`~core.vectorstores.legs.LegMemo` shared by the stores of one run
            (optional): searches then answer each leg (dense, BM25) of a query from it when it
            holds it, and read only the fields of chunks it lacks; deleting the collection or
            writing to it drops the memo's entries of this collection. Only for a collection
            no other process writes to meanwhile (a Milvus Lite database). Without it every
            search asks Milvus.

    Raises:
        ConfigError: invalid collection name.
        StoreError: the database cannot be opened or reached (says which and what to check).
    """

    def __init__(
        self,
        embedding_model: EmbeddingModel,
        config: MilvusLiteConfig | MilvusConfig,
        collection_name: str,
        *,
        client: MilvusClient | None = None,
        keyword_index: bool = True,
        legs: LegMemo | None = None,
    ) -> None:
        self.embedding_model = embedding_model
        self.config = config
        self.collection_name = validate_collection_name(collection_name)
        self.keyword_index = bool(keyword_index)
        self.legs = legs
        self._binding: Binding | None = None
        self._client = client
        self._shared_client = client is not None
        self._loaded = False
        self._has_keyword: bool | None = None
        self._present = False  # the collection was seen to exist (searches skip the check)

    @property
    def client(self) -> Any:
        """The ``pymilvus.MilvusClient`` (opened on first use)."""
        if self._client is None:
            self._client = open_client(self.config)
        return self._client

    @property
    def binding(self) -> Binding:
        """``(database location, collection name)``: what the leg memo knows this collection by
        (the Milvus Lite path, or the server's URI and database); worked out once."""
        if self._binding is None:
            location = self.config.uri if isinstance(self.config, MilvusLiteConfig) else \
                f"{self.config.uri}/{self.config.db_name}"
            self._binding = (location, self.collection_name)
        return self._binding

    @contextmanager
    def _changing(self) -> Iterator[None]:
        """Wrap a write to the collection: the leg memo's entries of it are dropped before and
        after (see :meth:`core.vectorstores.legs.LegMemo.changing`)."""
        if self.legs is None:
            yield
            return
        with self.legs.changing(self.binding):
            yield

    def close(self) -> None:
        """Close the client (a client passed in by the caller is left open)."""
        if self._client is not None and not self._shared_client:
            self._client.close()
            self._client = None

    def exists(self) -> bool:
        """True when the collection exists."""
        return bool(self.client.has_collection(self.collection_name))

    def _create(self, dim: int) -> None:
        from pymilvus import DataType, Function, FunctionType

        client = self.client
        schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=64)
        schema.add_field("text", DataType.VARCHAR, max_length=MAX_TEXT_BYTES, enable_analyzer=self.keyword_index)
        schema.add_field("dense", DataType.FLOAT_VECTOR, dim=dim)
        if self.keyword_index:
            schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
        schema.add_field("document_id", DataType.VARCHAR, max_length=4096)
        schema.add_field("sequence_number", DataType.INT64)
        schema.add_field("meta", DataType.JSON)
        index = client.prepare_index_params()
        index.add_index(field_name="dense", index_type="FLAT", metric_type="COSINE")
        if self.keyword_index:
            schema.add_function(Function(name="text_bm25", function_type=FunctionType.BM25,
                                         input_field_names=["text"], output_field_names=["sparse"]))
            index.add_index(field_name="sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
        # The indexes are created apart and waited for here: create_collection(index_params=...)
        # waits for each index with pymilvus's fixed half-second sleeps, even on an empty
        # collection whose index is ready at once.
        client.create_collection(self.collection_name, schema=schema)
        client.create_index(self.collection_name, index, sync=False)
        self._wait_for_indexes()
        client.load_collection(self.collection_name)
        self._loaded = self._present = True
        self._has_keyword = self.keyword_index

    def _wait_for_indexes(self) -> None:
        """Wait until every index of the collection is built (``describe_index`` state
        ``Finished``), polling after 10 ms, then twice as long each time up to half a second.

        Raises:
            StoreError: an index failed, or was not built within :data:`INDEX_WAIT_S` seconds.
        """
        deadline = time.monotonic() + INDEX_WAIT_S
        wait = 0.01
        for name in self.client.list_indexes(self.collection_name):
            while True:
                info = self.client.describe_index(self.collection_name, name) or {}
                state = str(info.get("state", "Finished"))  # a server that gives no state has built it
                if state == "Finished":
                    break
                if state == "Failed":
                    raise StoreError(f"index {name} of collection {self.collection_name} failed: "
                                     f"{info.get('index_state_fail_reason') or 'no reason given'}")
                if time.monotonic() > deadline:
                    raise StoreError(f"index {name} of collection {self.collection_name} was not built within "
                                     f"{INDEX_WAIT_S} s (state {state})")
                time.sleep(wait)
                wait = min(2 * wait, 0.5)

    def has_keyword_index(self) -> bool:
        """True when the collection exists and has its BM25 ``sparse`` field (keyword and
        hybrid search work on it)."""
        if not self.exists():
            return False
        fields = self.client.describe_collection(self.collection_name)["fields"]
        self._has_keyword = any(f["name"] == "sparse" for f in fields)
        return self._has_keyword

    def _dimension(self) -> int | None:
        if not self.exists():
            return None
        for field in self.client.describe_collection(self.collection_name)["fields"]:
            if field["name"] == "dense":
                return int(field["params"]["dim"])
        return None

    def add_documents(self, chunks: Sequence[Chunk], *, vectors: np.ndarray | None = None) -> int:
        """Embed ``chunks`` (unless ``vectors`` float32 ``(len(chunks), dim)`` are given) and
        upsert them in batches of :data:`UPSERT_BATCH`; creates the collection when missing.

        Returns:
            The number of chunks written.

        Raises:
            IndexingError: a chunk's text is too long, or the vectors' dimension differs
                from the collection's.
        """
        if not chunks:
            return 0
        with self._changing():
            return self._add_documents(chunks, vectors)

    def _add_documents(self, chunks: Sequence[Chunk], vectors: np.ndarray | None) -> int:
        """:meth:`add_documents` for a non-empty ``chunks``."""
        for chunk in chunks:
            if len(chunk.text.encode("utf-8")) > MAX_TEXT_BYTES:
                raise IndexingError(
                    f"chunk {chunk.sequence_number} of {chunk.document_id} has more than {MAX_TEXT_BYTES} bytes: "
                    "use a smaller chunk size"
                )
        if vectors is None:
            vectors = self.embedding_model.embed_documents([c.text for c in chunks])
        if vectors.shape[0] != len(chunks):
            raise IndexingError(f"{vectors.shape[0]} vectors for {len(chunks)} chunks")
        dim = int(vectors.shape[1])
        existing = self._dimension()
        if existing is None:
            self._create(dim)
        elif existing != dim:
            raise IndexingError(
                f"collection {self.collection_name} holds {existing}-dimensional vectors; "
                f"model {self.embedding_model.model_id} returned {dim}"
            )
        rows = [
            {
                "id": c.chunk_id, "text": c.text, "dense": v.tolist(), "document_id": c.document_id,
                "sequence_number": c.sequence_number, "meta": {"pages": c.pages, "headings": c.headings},
            }
            for c, v in zip(chunks, vectors)
        ]
        for i in range(0, len(rows), UPSERT_BATCH):
            self.client.upsert(self.collection_name, rows[i : i + UPSERT_BATCH])
        return len(rows)

    def flush(self) -> None:
        """Seal what was inserted so searches use built indexes (searching freshly inserted,
        unsealed rows is several times slower). Call it once after the last insert."""
        if self.exists():
            with self._changing():  # rows written before become visible to every search
                self.client.flush(self.collection_name)

    def count(self) -> int:
        """Number of chunks in the collection (0 when it does not exist)."""
        if not self.exists():
            return 0
        self._ensure_loaded()
        result = self.client.query(self.collection_name, filter="", output_fields=["count(*)"])
        return int(result[0]["count(*)"])

    def _ensure_loaded(self) -> None:
        if not self._loaded:
            self.client.load_collection(self.collection_name)
            self._loaded = True

    def delete_collection(self) -> None:
        """Drop the collection (nothing happens when it does not exist)."""
        with self._changing():
            if self.exists():
                self.client.drop_collection(self.collection_name)
        self._loaded = self._present = False
        self._has_keyword = None

    def search(
        self,
        query: str,
        k: int = 10,
        search_mode: str = "vector",
        ranker_strategy: str = "rrf",
        ranker_k: int = 60,
        ranker_alpha: float = 0.5,
    ) -> list[RetrievedChunk]:
        """Search the collection; returns at most ``k`` chunks, best first.

        Args:
            query: the question text; embedded with the store's model for dense search.
            k: results to return (>= 1).
            search_mode: ``"vector"``, ``"keyword"`` (BM25) or ``"hybrid"`` (both, fused).
            ranker_strategy: ``"rrf"`` (:func:`~core.vectorstores.fusion.rrf_fuse` with
                ``ranker_k``, Milvus's ``RRFRanker``) or ``"weighted"``
                (:func:`~core.vectorstores.fusion.weighted_fuse`, dense weight ``ranker_alpha``,
                Milvus's ``WeightedRanker(ranker_alpha, 1 - ranker_alpha)``) for hybrid.
            ranker_k: RRF constant.
            ranker_alpha: dense weight for weighted fusion.

        Each hybrid leg fetches :func:`~core.vectorstores.fusion.fusion_window` candidates
        (``ranker_k + 2 * k``) before fusing to ``k``. Scores follow one convention whatever the
        backend: higher is better (Milvus Lite's negated BM25 scores are turned back).

        Raises:
            ConfigError: bad ``k`` or search settings.
            StoreError: the collection does not exist, or has no keyword index for a keyword
                or hybrid search.
        """
        return self.search_many([query], k, search_mode, ranker_strategy, ranker_k, ranker_alpha)[0]

    def search_many(
        self,
        queries: Sequence[str],
        k: int = 10,
        search_mode: str = "vector",
        ranker_strategy: str = "rrf",
        ranker_k: int = 60,
        ranker_alpha: float = 0.5,
    ) -> list[list[RetrievedChunk]]:
        """:meth:`search` for every query of ``queries`` with the same setup, in one request
        per :data:`SEARCH_BATCH` queries (two for hybrid search: one per leg; the queries
        embedded in one batch): the results are those of one :meth:`search` per query, without
        a round trip per query. With a leg memo (``legs``), a leg it answers for a query is not
        searched (nor the query embedded for it), and chunks whose fields it holds are not read.

        Returns:
            One list of at most ``k`` chunks (best first) per query, in the order of ``queries``.

        Raises:
            ConfigError: bad ``k`` or search settings.
            StoreError: see :meth:`search`.
        """
        setup = SearchSetup(search_mode, ranker_strategy, ranker_k, ranker_alpha)  # validates
        if k < 1:
            raise ConfigError(f"k must be at least 1, got {k}")
        queries = list(queries)
        if not queries:
            return []
        if not self._present:  # checked once: a search is one round trip, not two
            if not self.exists():
                raise StoreError(f"collection {self.collection_name} does not exist: index the documents first")
            self._present = True
        if setup.search_mode != "vector" and not (self._has_keyword or self.has_keyword_index()):
            raise StoreError(f"collection {self.collection_name} has no keyword index (it was built for vector "
                             f"search only): {setup.search_mode} search needs it; index the documents again with it")
        self._ensure_loaded()
        out: list[list[RetrievedChunk]] = []
        for start in range(0, len(queries), SEARCH_BATCH):
            out.extend(self._search_batch(queries[start:start + SEARCH_BATCH], k, setup))
        return out

    def _search_batch(self, queries: list[str], k: int, setup: SearchSetup) -> list[list[RetrievedChunk]]:
        """Search ``queries`` (at most :data:`SEARCH_BATCH`): one request per leg the search
        needs and the memo (``legs``) cannot answer, then one for the fields of the chunks kept
        that it lacks."""
        fields = list(CHUNK_FIELDS)
        if setup.search_mode != "hybrid" and self.legs is None:
            # no memo: one request brings the ranking and the fields together
            if setup.search_mode == "vector":
                found = self.client.search(
                    self.collection_name, data=self._query_vectors(queries), anns_field="dense", limit=k,
                    output_fields=fields, search_params={"metric_type": "COSINE"},
                )
                return [self._to_chunks(hits, negate=False) for hits in found]
            found = self.client.search(
                self.collection_name, data=list(queries), anns_field="sparse", limit=k,
                output_fields=fields, search_params={"metric_type": "BM25"},
            )
            return [self._to_chunks(hits, negate=_negated(hits)) for hits in found]
        # read before any search: what is fetched is kept only if nothing was written meanwhile
        generation = self.legs.generation(self.binding) if self.legs is not None else None
        if setup.search_mode == "vector":
            ranked = self._leg("dense", queries, k, generation)
        elif setup.search_mode == "keyword":
            ranked = self._leg("sparse", queries, k, generation)
        else:
            # Hybrid: both legs searched here (ids and scores only) and fused with
            # core.vectorstores.fusion (Milvus's RRFRanker and WeightedRanker formulas, as for
            # pgvector). Milvus Lite 2.5.1's own hybrid_search scores the keyword leg with other
            # BM25 statistics than its keyword search does, and fuses the second and later
            # queries of one request by wrongly counted ranks.
            window = hybrid_window(k, setup)
            dense = self._leg("dense", queries, window, generation)
            sparse = self._leg("sparse", queries, window, generation)
            ranked = [fuse(d, s, setup, k) for d, s in zip(dense, sparse)]
        # the fields of the chunks kept (k per query), not of every candidate of both legs
        entities = self._entities({item_id for pairs in ranked for item_id, _ in pairs}, fields, generation)
        return [self._to_chunks([{"id": item_id, "distance": score, "entity": entities[item_id]}
                                 for item_id, score in pairs], negate=False) for pairs in ranked]

    def _leg(self, leg: str, queries: list[str], depth: int, generation: Generation | None,
             fetch: int | None = None) -> list[list[tuple[Any, float]]]:
        """The ``depth`` best ``(id, score)`` pairs of one leg (``"dense"``: cosine on the
        query vectors; ``"sparse"``: BM25 on the query texts, scores turned back to >= 0) for
        each of ``queries``, best first: from the memo where it answers, else in one request
        for the distinct queries it does not (only those are embedded), whose lists it then
        keeps (unless the collection was written to since ``generation``). A miss is fetched
        at ``fetch`` (default: the memo's ``fetch_depth``, at most :data:`MAX_WIDENED_DEPTH`,
        when deeper than ``depth``) and
        answered by its prefix when that is exact, else searched again at ``depth``.

        Returns:
            One list per query, in the order of ``queries``.
        """
        distinct = list(dict.fromkeys(queries))
        known: dict[str, list[tuple[Any, float]] | None] = {}
        if self.legs is not None:
            known = {q: self.legs.leg(self.binding, leg, q, depth) for q in distinct}
        todo = [q for q in distinct if known.get(q) is None]
        if not todo:
            return [list(known[q] or []) for q in queries]
        if self.legs is None:
            return self._fetch_leg(leg, queries, todo, known, depth, generation, fetch)
        with self.legs.fetching(self.binding, leg) as waited:
            if waited:  # another search fetched this leg (the same questions, as a rule): take what it kept
                known.update({q: self.legs.leg(self.binding, leg, q, depth, count=False) for q in todo})
                todo = [q for q in todo if known.get(q) is None]
            return self._fetch_leg(leg, queries, todo, known, depth, generation, fetch)

    def _fetch_leg(self, leg: str, queries: list[str], todo: list[str], known: dict[str, Any], depth: int,
                   generation: Generation | None, fetch: int | None) -> list[list[tuple[Any, float]]]:
        """:meth:`_leg`'s search of the queries ``todo`` the memo missed, into ``known``
        (query -> pairs); returns one list per query of ``queries``."""
        # a miss is fetched at the run's widest leg (LegMemo.fetch_depth), so that the other
        # configurations' shallower searches of the same leg are answered by its prefix; a
        # query already remembered that deep (its list has tied scores at this cut) is fetched
        # at the depth asked
        if fetch is None:
            fetch = depth if self.legs is None else \
                max(depth, min(self.legs.fetch_depth, MAX_WIDENED_DEPTH, MAX_SEARCH_LIMIT))
        if fetch > depth:
            exact = [q for q in todo if self.legs.deepest(self.binding, leg, q) >= fetch]
            if exact:
                known.update(zip(exact, self._leg(leg, exact, depth, generation, fetch=depth)))
                todo = [q for q in todo if known.get(q) is None]
        while todo:
            if leg == "dense":
                data, metric = self._query_vectors(todo), "COSINE"
            else:
                data, metric = list(todo), "BM25"
            found = self.client.search(self.collection_name, data=data, anns_field=leg, limit=fetch,
                                       output_fields=[], search_params={"metric_type": metric})
            again = []
            for query, hits in zip(todo, found):
                sign = -1.0 if leg == "sparse" and _negated(hits) else 1.0
                pairs = [(h["id"], sign * float(h["distance"])) for h in hits]
                if self.legs is not None:
                    self.legs.remember_leg(self.binding, generation, leg, query, fetch, pairs)
                if fetch == depth or leg_answers(fetch, pairs, depth):
                    known[query] = pairs[:depth]
                else:  # tied scores at the cut: only a search at this very depth says which come first
                    again.append(query)
            todo, fetch = again, depth
        return [list(known[q] or []) for q in queries]

    def _entities(self, ids: set[Any], fields: list[str],
                  generation: Generation | None = None) -> dict[Any, dict[str, Any]]:
        """``fields`` of the chunks ``ids``, by id: from the memo (``legs``) where it holds them,
        the others read in requests of :data:`SEARCH_BATCH` ids (and kept in the memo, unless
        the collection was written to since ``generation``).

        Raises:
            StoreError: a chunk a search returned is gone (the collection changed meanwhile).
        """
        wanted = sorted(ids, key=str)
        out: dict[Any, dict[str, Any]] = {}
        if self.legs is not None:
            out.update(self.legs.fields(self.binding, wanted))
        unseen = [item_id for item_id in wanted if item_id not in out]
        if not unseen or self.legs is None:
            return self._read_entities(unseen, fields, generation, out)
        with self.legs.fetching(self.binding, "fields") as waited:
            if waited:  # another search read chunks meanwhile: take what it kept
                out.update(self.legs.fields(self.binding, unseen, count=False))
                unseen = [item_id for item_id in unseen if item_id not in out]
            return self._read_entities(unseen, fields, generation, out)

    def _read_entities(self, unseen: list[Any], fields: list[str], generation: Generation | None,
                       out: dict[Any, dict[str, Any]]) -> dict[Any, dict[str, Any]]:
        """:meth:`_entities`'s read of the chunks ``unseen`` the memo lacks, added to ``out``."""
        read: dict[Any, dict[str, Any]] = {}
        for start in range(0, len(unseen), SEARCH_BATCH):
            for row in self.client.get(self.collection_name, ids=unseen[start:start + SEARCH_BATCH],
                                       output_fields=fields):
                read[row["id"]] = {name: row.get(name) for name in fields}
        missing = [item_id for item_id in unseen if item_id not in read]
        if missing:
            raise StoreError(f"collection {self.collection_name} no longer holds {len(missing)} chunk(s) its "
                             f"search returned (for example {missing[0]}): was it rebuilt meanwhile?")
        if self.legs is not None and read:
            self.legs.remember_fields(self.binding, generation, read)
        out.update(read)
        return out

    def _query_vectors(self, queries: list[str]) -> list[list[float]]:
        """The queries' vectors as lists: one query through ``embed_query``; several in one
        ``embed_documents`` batch of the texts ``embed_query`` embeds (``query_text``: the
        model's query instruction, then the query)."""
        if len(queries) == 1:
            return [self.embedding_model.embed_query(queries[0]).tolist()]
        texts = [query_text(self.embedding_model, q) for q in queries]
        return [row.tolist() for row in self.embedding_model.embed_documents(texts)]

    @staticmethod
    def _to_chunks(hits: Sequence[Mapping[str, Any]], *, negate: bool) -> list[RetrievedChunk]:
        out = []
        for rank, hit in enumerate(hits, start=1):
            entity = hit["entity"]
            meta = entity.get("meta") or {}
            if isinstance(meta, str):
                meta = json.loads(meta)
            chunk = Chunk(
                text=entity["text"], chunk_id=str(hit["id"]),
                metadata={
                    "document_id": entity["document_id"], "sequence_number": int(entity["sequence_number"]),
                    "pages": list(meta.get("pages") or []), "headings": list(meta.get("headings") or []),
                },
            )
            score = float(hit["distance"])
            out.append(RetrievedChunk(chunk=chunk, score=-score if negate else score, rank=rank))
        return out


def _negated(bm25_hits: Sequence[Mapping[str, Any]]) -> bool:
    """Whether a BM25 search's hits carry negated scores. BM25 scores are >= 0 by definition;
    Milvus Lite 3 (embedded or as a server) returns them negated, Milvus Lite 2 and a Milvus
    server do not. A negative score can only mean negation."""
    return any(float(h["distance"]) < 0 for h in bm25_hits)


class _LiteNoiseFilter(logging.Filter):
    """Drops the "Method not implemented" errors Milvus Lite's in-process gRPC server logs when
    pymilvus asks it for a timestamp while waiting for an index (the call falls back and works)."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Return False for that one known message, True for every other record."""
        text = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            text += str(record.exc_info[1])
        return "Method not implemented" not in text


_LITE_FILTER = _LiteNoiseFilter()


class _Capture(logging.Handler):
    """Collects the records of a logger while Milvus Lite starts, so its failure can be told
    in one message instead of a logged traceback."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.reasons: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info and record.exc_info[1] is not None:
            self.reasons.append(f"{type(record.exc_info[1]).__name__}: {record.exc_info[1]}")
        elif record.levelno >= logging.ERROR:
            self.reasons.append(record.getMessage())


def lite_engine() -> int:
    """The major version of the installed Milvus Lite: 2 runs the Milvus engine as a native
    binary in a child process, on a ``.db`` file; 3 is a pure-Python engine in this process,
    on a ``.db`` folder.

    Raises:
        StoreError: Milvus Lite is not installed.
    """
    from importlib import metadata

    try:
        return int(metadata.version("milvus-lite").split(".")[0])
    except metadata.PackageNotFoundError as exc:
        raise StoreError("Milvus Lite is not installed: pip install milvus-lite") from exc


class _RootCapture(logging.Filter):
    """Keeps, and drops, what Milvus Lite 2 logs on the root logger while it starts (its
    "the file has been opened by another program"), so its failure is told in one message."""

    def __init__(self) -> None:
        super().__init__()
        self.reasons: list[str] = []

    def filter(self, record: logging.LogRecord) -> bool:
        if "milvus_lite" in (record.pathname or ""):
            self.reasons.append(record.getMessage())
            return False
        return True


_STOP_AT_EXIT: list[bool] = []


def _stop_lite_servers_at_exit() -> None:
    """Make sure the Milvus Lite servers this process starts are stopped when it exits (once
    per process). Milvus Lite stops them (waits for each, removes its database's lock file)
    only from its server manager's finaliser, which a process that skips the collection at
    exit (``gc.freeze``, as the ``ragtune`` command does) never runs; an ``atexit`` handler
    always does. Stopping twice is harmless: a stopped server is forgotten."""
    import atexit

    if _STOP_AT_EXIT:
        return
    _STOP_AT_EXIT.append(True)

    def stop() -> None:
        import sys

        manager = getattr(sys.modules.get("milvus_lite.server_manager"), "server_manager_instance", None)
        if manager is None or not callable(getattr(manager, "release_all", None)):
            return
        try:
            manager.release_all()
        except Exception as exc:  # noqa: BLE001 - the process is ending; nothing to hand it to
            logger.debug("stopping Milvus Lite failed: %s: %s", type(exc).__name__, exc)

    atexit.register(stop)


def _open_lite(path: str) -> Any:
    from pymilvus import MilvusClient

    target = Path(path)
    engine = lite_engine()
    if engine < 3 and not (re.fullmatch(r"[A-Za-z0-9.\-_]+", target.name) and len(target.name) <= 36):
        # Milvus Lite 2's own rule, checked here: its server object, built and refused, then
        # prints an ignored exception from its finaliser
        raise StoreError(
            f"{target}: a Milvus Lite database name may only hold letters, digits, '.', '-' and '_', "
            "and at most 36 of them: choose another RAGTUNE_MILVUS_LITE_PATH or output folder name"
        )
    if engine < 3 and target.is_dir():
        raise StoreError(
            f"{target} is a folder (a database of Milvus Lite 3, whose engine runs in Python), not a "
            "Milvus Lite 2 database file: remove it or choose another output folder"
        )
    if engine >= 3 and target.exists() and not target.is_dir():
        raise StoreError(
            f"{target} is a file, not a Milvus Lite database folder: remove it or choose another output folder"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    if engine < 3 and _locked_elsewhere(target):
        raise StoreError(_in_use(target))
    _stop_lite_servers_at_exit()
    grpc_log = logging.getLogger("grpc._server")
    if _LITE_FILTER not in grpc_log.filters:
        grpc_log.addFilter(_LITE_FILTER)
    lite_log = logging.getLogger("milvus_lite")
    capture = _Capture()
    root = _RootCapture()
    propagate = lite_log.propagate
    lite_log.addHandler(capture)
    lite_log.propagate = False
    logging.getLogger().addFilter(root)
    try:
        with _no_pkg_resources_warning():
            # Milvus Lite runs a local gRPC server too: no keepalive pings while idle, or it answers
            # with GOAWAY "too_many_pings" (logged on stderr) after about a minute without calls.
            return MilvusClient(str(target), grpc_options=dict(IDLE_PINGS_OFF))
    except Exception as exc:  # pymilvus wraps the server's failure in its own types
        if engine < 3:
            _forget_dead_lite_server(target)
        reasons = " ".join(capture.reasons + root.reasons) or str(exc)
        if "DataDirLockedError" in reasons or "lock" in reasons.lower() or "opened by another program" in reasons:
            raise StoreError(_in_use(target)) from exc
        raise StoreError(f"cannot open Milvus Lite database {target}: {reasons}") from exc
    finally:
        logging.getLogger().removeFilter(root)
        lite_log.removeHandler(capture)
        lite_log.propagate = propagate


def _in_use(target: Path) -> str:
    return (f"Milvus Lite database {target} is in use by another process (only one process can open it): "
            "wait for it to finish, use another output folder, or run a Milvus server "
            "(scripts/services/milvus.sh starts one) and connect with RAGTUNE_MILVUS_URI")


@contextmanager
def _no_pkg_resources_warning() -> Iterator[None]:
    """Silence the one warning Milvus Lite 2's import gives (it imports pkg_resources, which
    warns that it is deprecated)."""
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="pkg_resources is deprecated", category=UserWarning)
        yield


def _lite_server_manager() -> Any:
    """Milvus Lite 2's server manager (``milvus_lite.server_manager.server_manager_instance``),
    which keeps this process's servers by resolved database path."""
    with _no_pkg_resources_warning():
        from milvus_lite.server_manager import server_manager_instance

    return server_manager_instance


def _lite_server_of(target: Path) -> Any:
    """This process's Milvus Lite 2 server of database ``target``, or None."""
    return _lite_server_manager()._servers.get(str(target.absolute().resolve()))


def _locked_elsewhere(target: Path) -> bool:
    """Whether another process holds Milvus Lite 2's lock on database ``target`` (an exclusive
    ``lockf`` on ``.<name>.lock`` beside it, as ``milvus_lite.server.Server.start`` takes it).

    Asked before Milvus Lite tries: when its own try fails, its server's finaliser deletes the
    lock file it never held, and the next open, in any process, then starts a second server on
    the same database. A database this process already serves is not probed (``lockf`` locks
    belong to the process: closing the probe's file would release the server's lock)."""
    import fcntl

    if _lite_server_of(target) is not None:
        return False
    lock = target.parent / f".{target.name}.lock"
    if not lock.exists():
        return False
    with open(lock, "a") as probe:
        try:
            fcntl.lockf(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
        fcntl.lockf(probe, fcntl.LOCK_UN)
    return False


def _forget_dead_lite_server(target: Path) -> None:
    """Drop this process's Milvus Lite 2 server of ``target`` when its process has exited (it
    can die after the half second Milvus Lite waits for it to start, for example on a disk
    error): the next open then starts a new one instead of connecting to a dead socket."""
    process = getattr(_lite_server_of(target), "_p", None)
    if process is not None and process.poll() is not None:
        _lite_server_manager().release_server(str(target))


def open_client(config: MilvusLiteConfig | MilvusConfig) -> Any:
    """Open a ``pymilvus.MilvusClient`` for ``config``.

    Raises:
        StoreError: the Lite database is locked by another process or is not a database
            folder, or the server cannot be reached; the message says which path or URI and
            what to check (the token, and the user info and credentials of the URI, are never
            shown).
    """
    if isinstance(config, MilvusLiteConfig):
        return _open_lite(config.uri)
    from pymilvus import MilvusClient

    # No keepalive pings while idle: gRPC servers with default limits (Milvus Lite's
    # among them) answer pings on an idle channel with GOAWAY "too_many_pings", and the
    # next client on that URI then fails. A dropped channel is reopened on the next call.
    kwargs: dict[str, Any] = {"uri": config.uri, "timeout": 30, "grpc_options": dict(IDLE_PINGS_OFF)}
    if config.token:
        kwargs["token"] = config.token
    if config.db_name:
        kwargs["db_name"] = config.db_name
    last: Exception | None = None
    for attempt in range(MAX_CONNECT_ATTEMPTS):
        try:
            return MilvusClient(**kwargs)
        except Exception as exc:  # pymilvus raises several unrelated types here
            # A pooled gRPC channel the server has closed (for example a GOAWAY after idle
            # keepalive pings) fails once; a new attempt opens a fresh channel.
            last = exc
            if attempt + 1 < MAX_CONNECT_ATTEMPTS:
                time.sleep(0.5 * 2**attempt)
    message = without_credentials(str(last), [config.token, *url_secrets(config.uri)])
    raise StoreError(
        f"cannot reach Milvus at {shown_url(config.uri)}: {message}. Check that the server runs, the host and port, "
        "and the token"
    ) from last
