"""A local Azure AI Search service for tests, on a real HTTP stack (starlette + uvicorn).

It implements the part of the Search REST API that ``azure-search-documents`` calls to read an
index and query it, for the API versions that client knows, over indexes held in memory:

- ``GET /indexes('{name}')``: the index definition (fields, ``vectorSearch`` with profiles and
  vectorizers, ``semantic`` configurations, ``@odata.etag``);
- ``GET /indexes('{name}')/search.stats``: ``documentCount``, ``storageSize``,
  ``vectorIndexSize``;
- ``GET /indexes('{name}')/docs/$count``: the document count as plain text;
- ``POST /indexes('{name}')/docs/search.post.search``: ``search`` with ``queryType`` ``simple``,
  ``full`` or ``semantic`` (BM25 over the searchable fields, see
  :mod:`tests.support.search_ranking`), ``searchFields``, ``searchMode``, ``vectorQueries`` of
  kind ``vector`` and ``text`` (cosine scores; ``text`` needs a vectorizer on the field's
  profile, played by a local embedding model), hybrid queries fused with RRF (k = 60) as the
  service documents, ``semanticConfiguration`` / ``semanticQuery`` (the semantic ranker's
  stand-in, the local cross-encoder, runs for ``queryType`` ``semantic`` or, with any query
  type, for a ``semanticQuery``, as the service documents; it reranks the first 50 results and gives
  ``@search.rerankerScore`` on the service's 0 to 4 scale and ``@search.captions``), ``top``
  (default 50; at most 1,000 results an answer, a larger ``top`` answered with
  ``@search.nextPageParameters`` for the rest, as the service pages), ``skip``, ``select``, ``filter`` (``eq``, ``ne``, ``search.in``, ``and`` /
  ``or``), ``count``.

Every request is recorded (method, path, query, headers, JSON body); a request without an
``api-version`` the service knows is refused with 400, one without the ``api-key`` or a bearer
token with 401, as the service does. ``fail_next`` scripts failures (429 or 503 with a
``Retry-After``). Anything else (writes included) is answered 404 and recorded, so tests can
hold that a client wrote nothing.

References:
    Search Documents (POST): https://learn.microsoft.com/rest/api/searchservice/documents/search-post
    Get Index: https://learn.microsoft.com/rest/api/searchservice/indexes/get
    Get Index Statistics: https://learn.microsoft.com/rest/api/searchservice/indexes/get-statistics
    Semantic ranking (rerankerScore 0.00-4.00, captions):
    https://learn.microsoft.com/azure/search/semantic-search-overview
    Semantic ranking's two parameters (``queryType`` ``semantic``, ``semanticQuery`` with any
    query type): https://learn.microsoft.com/azure/search/semantic-how-to-query-request
"""

from __future__ import annotations

import json
import math
import re
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from tests.support.search_ranking import BM25Index, parse_filter, parse_full, parse_simple, rrf, tokens, vector_score

#: The API versions ``azure-search-documents`` 12 knows (``azure.search.documents._patch.ApiVersion``).
API_VERSIONS = ("2024-07-01", "2025-09-01", "2026-04-01")
#: Results the semantic ranker reranks, and the default ``top``.
SEMANTIC_WINDOW = 50
DEFAULT_TOP = 50
#: The most results one answer holds; a larger ``top`` gets ``@search.nextPageParameters``.
MAX_PAGE = 1000
_PATH = re.compile(r"^/indexes\('(?P<name>[^']+)'\)(?P<rest>/.*)?$")


@dataclass
class LocalIndex:
    """One index: its definition (as the REST API gives it) and its documents.

    Attributes:
        definition: ``{"name", "fields": [...], "vectorSearch"?, "semantic"?}``.
        documents: the documents, field name -> value.
        vectorize: the vectorizer's stand-in for ``text`` vector queries (a text -> vector
            function), or None (the index has no vectorizer).
    """

    definition: dict[str, Any]
    documents: list[dict[str, Any]]
    vectorize: Callable[[str], np.ndarray] | None = None
    _bm25: BM25Index | None = field(default=None, repr=False)

    @property
    def fields(self) -> dict[str, dict[str, Any]]:
        """Field name -> its definition."""
        return {f["name"]: f for f in self.definition["fields"]}

    def searchable(self) -> list[str]:
        """The searchable string fields."""
        return [f["name"] for f in self.definition["fields"]
                if f.get("searchable") and f["type"] in ("Edm.String", "Collection(Edm.String)")]

    def bm25(self) -> BM25Index:
        """The BM25 index over the searchable fields (built once)."""
        if self._bm25 is None:
            self._bm25 = BM25Index(self.documents, self.searchable())
        return self._bm25

    def vectorizer_of(self, field_name: str) -> str | None:
        """The name of the vectorizer on ``field_name``'s profile, or None."""
        profile = self.fields.get(field_name, {}).get("vectorSearchProfile")
        for p in (self.definition.get("vectorSearch") or {}).get("profiles") or []:
            if p.get("name") == profile:
                return p.get("vectorizer")
        return None


@dataclass(frozen=True)
class RecordedRequest:
    """One request the server received (``received``: ``time.monotonic()`` on arrival)."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any
    received: float = 0.0


class SearchError(Exception):
    """A request the service refuses: status and message (answered as the service's error body)."""

    def __init__(self, status: int, message: str, code: str = "") -> None:
        super().__init__(message)
        self.status, self.message, self.code = status, message, code


class AzureSearchTestServer:
    """The local service in a background thread (use it as a context manager).

    Args:
        indexes: index name -> :class:`LocalIndex`.
        api_key: the key requests must carry in ``api-key`` (a bearer token is accepted too).
        reranker: the semantic ranker's stand-in: ``rerank(query, passages) -> logits`` (the
            local cross-encoder), or None (semantic queries are then refused with 400).

    Attributes:
        endpoint: ``http://127.0.0.1:<port>`` once started.
        requests: every request received, in order.
        fail_next: ``(status, headers)`` to answer the next requests with, consumed in order.
    """

    def __init__(self, indexes: dict[str, LocalIndex], *, api_key: str = "test-search-key",
                 reranker: Any = None) -> None:
        self.indexes = indexes
        self.api_key = api_key
        self.reranker = reranker
        self.requests: list[RecordedRequest] = []
        self.fail_next: list[tuple[int, dict[str, str]]] = []
        self.endpoint = ""
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._scores: dict[tuple[str, str], float] = {}

    # --- the API -------------------------------------------------------------------------------

    def handle(self, method: str, path: str, query: dict[str, str], headers: dict[str, str],
               body: Any) -> tuple[int, Any, dict[str, str]]:
        """Answer one request: ``(status, JSON body or text, headers)``."""
        with self._lock:
            self.requests.append(RecordedRequest(method, path, dict(query), dict(headers), body, time.monotonic()))
            if self.fail_next:
                status, extra = self.fail_next.pop(0)
                return status, {"error": {"code": "", "message": f"scripted {status}"}}, extra
        try:
            self._check(query, headers)
            match = _PATH.match(path)
            if match is None or match.group("name") not in self.indexes:
                name = match.group("name") if match else path
                raise SearchError(404, f"No index with the name '{name}' was found in the service 'local'.")
            index, rest = self.indexes[match.group("name")], match.group("rest") or ""
            if method == "GET" and rest == "":
                return 200, {**index.definition, "@odata.etag": _etag(index)}, {}
            if method == "GET" and rest == "/search.stats":
                size = len(json.dumps(index.documents))
                return 200, {"documentCount": len(index.documents), "storageSize": size, "vectorIndexSize": 0}, {}
            if method == "GET" and rest == "/docs/$count":
                return 200, str(len(index.documents)), {}
            if method == "POST" and rest == "/docs/search.post.search":
                return 200, self.search(index, body or {}), {}
            raise SearchError(404, f"The local service does not serve {method} {path}")
        except SearchError as exc:
            return exc.status, {"error": {"code": exc.code, "message": exc.message}}, {}

    def _check(self, query: dict[str, str], headers: dict[str, str]) -> None:
        version = query.get("api-version")
        if version not in API_VERSIONS:
            raise SearchError(400, f"Invalid or missing api-version query string parameter: {version!r}",
                              "InvalidApiVersionParameter")
        lower = {k.lower(): v for k, v in headers.items()}
        if lower.get("api-key") != self.api_key and not lower.get("authorization", "").startswith("Bearer "):
            raise SearchError(401, "Authentication failed: no valid api-key or bearer token")

    def search(self, index: LocalIndex, body: dict[str, Any]) -> dict[str, Any]:
        """Answer ``docs/search.post.search`` (see the module docstring)."""
        query_type = body.get("queryType") or "simple"
        if query_type not in ("simple", "full", "semantic"):
            raise SearchError(400, f"Invalid queryType {query_type!r}")
        keep = self._filtered(index, body.get("filter"))
        legs: list[list[int]] = []
        scores: dict[int, float] = {}
        text = (body.get("search") or "").strip()
        if text and text != "*":
            legs.append(self._keyword(index, text, query_type, body, keep, scores))
        for vq in body.get("vectorQueries") or []:
            legs.append(self._vector(index, vq, keep, scores if len(legs) == 0 else {}))
        if not legs:
            ranked = sorted(keep)
            scores = {i: 1.0 for i in ranked}
        elif len(legs) == 1:
            ranked = legs[0]
        else:
            fused = rrf(legs)
            ranked = sorted(fused, key=lambda i: (-fused[i], i))
            scores = fused
        reranked: dict[int, float] = {}
        captions: dict[int, list[dict[str, str]]] = {}
        # the semantic ranker runs for queryType semantic, or for any query type given a semanticQuery
        semantic = query_type == "semantic" or bool((body.get("semanticQuery") or "").strip())
        if semantic:
            ranked, reranked, captions = self._semantic(index, body, ranked)
        skip, top = int(body.get("skip") or 0), int(body.get("top") or DEFAULT_TOP)
        page = ranked[skip : skip + min(top, MAX_PAGE)]
        select = [s.strip() for s in (body.get("select") or "").split(",") if s.strip()]
        unknown = [s for s in select if s not in index.fields and s != "*"]
        if unknown:
            raise SearchError(400, f"Invalid expression: Could not find a property named '{unknown[0]}'.")
        out = []
        for i in page:
            doc = index.documents[i]
            shown = {k: v for k, v in doc.items() if (not select or "*" in select or k in select)
                     and index.fields.get(k, {}).get("retrievable", True)}
            row = {"@search.score": scores.get(i, 0.0), **shown}
            if semantic:
                row["@search.rerankerScore"] = reranked.get(i)
                if body.get("captions"):
                    row["@search.captions"] = captions.get(i, [])
            out.append(row)
        result: dict[str, Any] = {"value": out}
        if body.get("count"):
            result["@odata.count"] = len(ranked)
        if top > MAX_PAGE and len(ranked) > skip + MAX_PAGE:  # the rest, for the client to ask next
            result["@search.nextPageParameters"] = {**body, "skip": skip + MAX_PAGE, "top": top - MAX_PAGE}
        return result

    def _filtered(self, index: LocalIndex, expression: str | None) -> set[int]:
        if not expression:
            return set(range(len(index.documents)))
        try:
            test = parse_filter(expression)
        except ValueError as exc:
            raise SearchError(400, str(exc)) from None
        return {i for i, d in enumerate(index.documents) if test(d)}

    def _keyword(self, index: LocalIndex, text: str, query_type: str, body: dict[str, Any], keep: set[int],
                 scores: dict[int, float]) -> list[int]:
        fields = [f.strip() for f in (body.get("searchFields") or "").split(",") if f.strip()] or None
        searchable = index.searchable()
        for f in fields or ():
            if f not in searchable:
                raise SearchError(400, f"Invalid searchFields: '{f}' is not a searchable field")
        try:
            parsed = parse_full(text, searchable) if query_type == "full" else parse_simple(text)
        except ValueError as exc:
            raise SearchError(400, str(exc)) from None
        if body.get("searchMode") == "all":
            parsed.must, parsed.should = parsed.must + parsed.should, []
        found = {i: s for i, s in index.bm25().scores(parsed, fields).items() if i in keep}
        scores.update(found)
        return sorted(found, key=lambda i: (-found[i], i))

    def _vector(self, index: LocalIndex, vq: dict[str, Any], keep: set[int], scores: dict[int, float]) -> list[int]:
        kind = vq.get("kind")
        names = [f.strip() for f in str(vq.get("fields") or "").split(",") if f.strip()]
        if not names:
            raise SearchError(400, "A vector query needs 'fields'")
        for name in names:
            spec = index.fields.get(name)
            if spec is None or "dimensions" not in spec:
                raise SearchError(400, f"The field '{name}' in the vector field list is not a vector field.")
        if kind == "vector":
            vector = np.asarray(vq.get("vector") or [], dtype=np.float64)
        elif kind == "text":
            if index.vectorize is None or any(index.vectorizer_of(n) is None for n in names):
                raise SearchError(400, f"The field '{names[0]}' does not have a vectorizer defined; a text vector "
                                       "query needs one.")
            vector = np.asarray(index.vectorize(str(vq.get("text") or "")), dtype=np.float64)
        else:
            raise SearchError(400, f"Unknown vector query kind {kind!r}")
        for name in names:
            dims = int(index.fields[name]["dimensions"])
            if vector.shape != (dims,):
                raise SearchError(400, f"The vector field '{name}', with dimension of '{dims}', expects a length of "
                                       f"'{dims}'. However, the provided vector has a length of '{vector.shape[0]}'.")
        found: dict[int, float] = {}
        for i in keep:
            doc = index.documents[i]
            found[i] = max(vector_score(vector, doc[n]) for n in names if doc.get(n) is not None)
        k = int(vq.get("k") or vq.get("kNearestNeighborsCount") or DEFAULT_TOP)
        ranked = sorted(found, key=lambda i: (-found[i], i))[:k]
        scores.update({i: found[i] for i in ranked})
        return ranked

    def _semantic(self, index: LocalIndex, body: dict[str, Any],
                  ranked: list[int]) -> tuple[list[int], dict[int, float], dict[int, list[dict[str, str]]]]:
        configs = {c["name"]: c for c in (index.definition.get("semantic") or {}).get("configurations") or []}
        name = body.get("semanticConfiguration") or (index.definition.get("semantic") or {}).get("defaultConfiguration")
        if name not in configs:
            raise SearchError(400, f"Unknown semantic configuration {name!r}; the index has {sorted(configs)}")
        query = (body.get("semanticQuery") or body.get("search") or "").strip()
        if not query or query == "*":
            raise SearchError(400, "A semantic query needs 'search' or 'semanticQuery' text.")
        if self.reranker is None:
            raise SearchError(400, "Semantic ranking is not enabled on this service.")
        fields = _semantic_fields(configs[name])
        window = ranked[:SEMANTIC_WINDOW]
        passages = [" ".join(str(index.documents[i].get(f) or "") for f in fields) for i in window]
        logits = self._logits(query, passages)
        reranked = {i: round(4.0 / (1.0 + math.exp(-float(x))), 6) for i, x in zip(window, logits)}
        order = sorted(window, key=lambda i: (-reranked[i], window.index(i)))
        captions = {i: [_caption(query, passages[window.index(i)])] for i in window}
        return order + ranked[SEMANTIC_WINDOW:], reranked, captions

    def _logits(self, query: str, passages: list[str]) -> list[float]:
        """The cross-encoder's logit of each passage, each (query, passage) pair scored once per
        server (the same question is ranked by several semantic setups)."""
        with self._lock:
            need = list(dict.fromkeys(p for p in passages if (query, p) not in self._scores))
        if need:
            scored = self.reranker.rerank(query, need)
            with self._lock:
                self._scores.update({(query, p): float(x) for p, x in zip(need, scored)})
        with self._lock:
            return [self._scores[(query, p)] for p in passages]

    # --- lifecycle -----------------------------------------------------------------------------

    def _app(self) -> Any:
        from starlette.applications import Starlette
        from starlette.requests import Request
        from starlette.responses import JSONResponse, PlainTextResponse
        from starlette.routing import Route

        async def endpoint(request: Request) -> Any:
            raw = await request.body()
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            status, payload, headers = self.handle(request.method, request.url.path, dict(request.query_params),
                                                   dict(request.headers), body)
            if isinstance(payload, str):
                return PlainTextResponse(payload, status_code=status, headers=headers)
            return JSONResponse(payload, status_code=status, headers=headers)

        return Starlette(routes=[Route("/{path:path}", endpoint, methods=["GET", "POST", "PUT", "DELETE", "PATCH"])])

    def start(self, timeout_s: float = 10.0) -> "AzureSearchTestServer":
        """Start serving on 127.0.0.1 at a free port; returns when it accepts connections.

        Raises:
            RuntimeError: the server did not start within ``timeout_s``.
        """
        import uvicorn

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        config = uvicorn.Config(self._app(), log_level="warning", access_log=False, lifespan="off",
                                timeout_graceful_shutdown=1)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, daemon=True,
                                        name=f"azure-search-test-{port}")
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the Azure AI Search test server did not start")
            time.sleep(0.01)
        self.endpoint = f"http://127.0.0.1:{port}"
        return self

    def stop(self) -> None:
        """Stop serving and wait for the thread."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._server = self._thread = None

    def __enter__(self) -> "AzureSearchTestServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def searches(self) -> list[dict[str, Any]]:
        """The bodies of the search requests received, in order."""
        return [r.body for r in self.requests if r.path.endswith("/docs/search.post.search")]


def _etag(index: LocalIndex) -> str:
    import hashlib

    return '"0x' + hashlib.sha256(json.dumps(index.definition, sort_keys=True).encode()).hexdigest()[:16].upper() + '"'


def _semantic_fields(config: dict[str, Any]) -> list[str]:
    prioritized = config.get("prioritizedFields") or {}
    out = [(prioritized.get("titleField") or {}).get("fieldName")]
    out += [f.get("fieldName") for f in prioritized.get("prioritizedContentFields") or []]
    out += [f.get("fieldName") for f in prioritized.get("prioritizedKeywordsFields") or []]
    return [f for f in out if f]


def _caption(query: str, passage: str) -> dict[str, str]:
    """An extractive caption: the passage's sentence sharing most words with the query, with
    those words in ``<em>``."""
    words = set(tokens(query))
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+", passage) if s.strip()] or [passage]
    best = max(sentences, key=lambda s: (len(words & set(tokens(s))), -sentences.index(s)))
    highlighted = re.sub(r"\w+", lambda m: f"<em>{m.group(0)}</em>" if m.group(0).lower() in words else m.group(0), best)
    return {"text": best, "highlights": highlighted}


def index_definition(name: str, *, dimensions: int | None, vectorizer: bool = True, semantic: bool = True,
                     text_field: str = "content") -> dict[str, Any]:
    """A user-style index definition, as a team's RAG app builds it: ``id`` (key), ``content``,
    ``title``, ``sourcefile``, ``sourcepage``, ``category`` and, with ``dimensions``, a
    ``contentVector`` on an HNSW cosine profile (with an Azure OpenAI vectorizer when
    ``vectorizer``); a semantic configuration ``default`` over title and content."""
    fields: list[dict[str, Any]] = [
        {"name": "id", "type": "Edm.String", "key": True, "filterable": True, "retrievable": True},
        {"name": text_field, "type": "Edm.String", "searchable": True, "retrievable": True},
        {"name": "title", "type": "Edm.String", "searchable": True, "retrievable": True},
        {"name": "sourcefile", "type": "Edm.String", "filterable": True, "facetable": True, "retrievable": True},
        {"name": "sourcepage", "type": "Edm.String", "filterable": True, "retrievable": True},
        {"name": "category", "type": "Edm.String", "filterable": True, "retrievable": True},
    ]
    definition: dict[str, Any] = {"name": name, "fields": fields}
    if dimensions:
        fields.append({"name": "contentVector", "type": "Collection(Edm.Single)", "searchable": True,
                       "retrievable": False, "dimensions": dimensions, "vectorSearchProfile": "hnsw-profile"})
        profile: dict[str, Any] = {"name": "hnsw-profile", "algorithm": "hnsw"}
        vector_search: dict[str, Any] = {
            "algorithms": [{"name": "hnsw", "kind": "hnsw", "hnswParameters": {"metric": "cosine", "m": 4}}],
            "profiles": [profile],
        }
        if vectorizer:
            profile["vectorizer"] = "openai"
            vector_search["vectorizers"] = [{"name": "openai", "kind": "azureOpenAI", "azureOpenAIParameters": {
                "resourceUri": "https://example.openai.azure.com", "deploymentId": "embedding",
                "modelName": "text-embedding-3-small"}}]
        definition["vectorSearch"] = vector_search
    if semantic:
        definition["semantic"] = {"defaultConfiguration": "default", "configurations": [{
            "name": "default", "prioritizedFields": {"titleField": {"fieldName": "title"},
                                                     "prioritizedContentFields": [{"fieldName": text_field}]}}]}
    return definition


def index_documents(chunks: Sequence[Any], vectors: np.ndarray | None, *, prefix: str = "",
                    text_field: str = "content") -> list[dict[str, Any]]:
    """Index documents from ragtune chunks, as a team's indexer writes them: ``sourcefile`` the
    document id after ``prefix`` (a blob container URL, say), ``sourcepage`` with ``#page=N``
    for paged documents, ``contentVector`` from ``vectors`` (row per chunk)."""
    out = []
    for i, c in enumerate(chunks):
        page = f"{c.document_id}#page={c.pages[0]}" if c.pages else c.document_id
        doc = {"id": f"doc{i:05d}", text_field: c.text, "title": c.document_id.rsplit(".", 1)[0],
               "sourcefile": prefix + c.document_id, "sourcepage": page, "category": c.document_id.split("_")[0]}
        if vectors is not None:
            doc["contentVector"] = [float(x) for x in vectors[i]]
        out.append(doc)
    return out


__all__ = ["API_VERSIONS", "AzureSearchTestServer", "LocalIndex", "RecordedRequest", "index_definition",
           "index_documents"]
