"""An Azure AI Search index, searched in place and read-only through ``azure-search-documents``.

Setups: ``keyword`` (BM25, simple query syntax) and ``keyword-full`` (full Lucene syntax, the
question's special characters escaped); ``dense`` (a vector query on the mapped vector field:
the index's own vectorizer when its profile has one, as a ``VectorizableTextQuery``, else
ragtune's embedding model as a ``VectorizedQuery``, offered only when the dimensions agree) and
``hybrid`` (keyword + vector in one request, fused by the service with RRF); each also with
``+semantic`` (the service's semantic ranker, when the index has a semantic configuration;
``keyword-full+semantic`` keeps the full Lucene syntax and gives the ranker the question as
``semanticQuery``).
An index without a vector field offers the keyword setups only, and its description says why.

Authentication: Microsoft Entra ID (``DefaultAzureCredential``) unless the target asks for a key
(``RAGTUNE_SEARCH_API_KEY``, see ``core.settings``). Requests time out
(:data:`CONNECT_TIMEOUT_S`, :data:`READ_TIMEOUT_S`) and transient answers (429, 503 and the
other statuses azure-core retries) are retried :data:`RETRIES` times, honouring
``Retry-After`` (azure-core's ``RetryPolicy``). Only the index definition, its statistics and
``docs/search`` are ever called: nothing is written.

References:
    Search Documents (POST), Get Index, Get Index Statistics:
    https://learn.microsoft.com/rest/api/searchservice/
    azure-core retry policy: https://learn.microsoft.com/python/api/azure-core/azure.core.pipeline.policies.retrypolicy
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any, Callable, Iterable, TypeVar

from core.errors import ConfigError, TargetError
from core.redaction import shown_url, url_secrets, without_credentials
from core.targets.base import (
    MAX_CHUNKS_PER_DOCUMENT,
    Fingerprint,
    Hit,
    QueryVectors,
    TargetDescription,
    TargetSetup,
    UnavailableSetup,
    check_dimension,
    missing_documents,
    pages_unknown,
    raw_candidates,
)
from core.targets.ids import index_document_id, page_numbers
from core.targets.mapping import (
    FieldMapping,
    ResolvedMapping,
    SchemaField,
    nested_paths,
    read_path,
    resolve_mapping,
)

if TYPE_CHECKING:
    from azure.core.credentials import AzureKeyCredential, TokenCredential

_T = TypeVar("_T")

logger = logging.getLogger(__name__)

#: Seconds to wait for a connection to the service, and for a reply.
CONNECT_TIMEOUT_S = 10
READ_TIMEOUT_S = 60
#: Retries of a transient answer (429, 503, ...), each after ``Retry-After`` when the service
#: sends one, else after an exponential back-off from :data:`RETRY_BACKOFF_S` up to
#: :data:`RETRY_BACKOFF_MAX_S`.
RETRIES = 3
RETRY_BACKOFF_S = 0.8
RETRY_BACKOFF_MAX_S = 30
#: Nearest neighbours a hybrid or semantic request asks the vector leg for (the service's
#: semantic ranker reranks the first 50 results).
HYBRID_K = 50
#: Results per request when the index's documents are listed (the service's largest ``top``),
#: and the most that are listed (the service refuses ``skip`` past 100,000).
LIST_PAGE = 1000
LIST_MAX = 100_000
#: Characters the full Lucene syntax treats as operators, escaped in ``keyword-full`` queries.
_LUCENE = re.compile(r'([+\-&|!(){}\[\]^"~*?:\\/])')
#: Azure field types, as schema kinds.
_VECTOR_TYPES = ("Collection(Edm.Single)", "Collection(Edm.Half)", "Collection(Edm.Int16)",
                 "Collection(Edm.SByte)", "Collection(Edm.Byte)")


def escape_lucene(text: str) -> str:
    """``text`` with every full-syntax operator character backslash-escaped, so the question
    is searched as its words."""
    return _LUCENE.sub(r"\\\1", text)


def client_options() -> dict[str, Any]:
    """Keyword arguments of the SDK clients: timeouts and the retry policy's settings."""
    return {"connection_timeout": CONNECT_TIMEOUT_S, "read_timeout": READ_TIMEOUT_S, "retry_total": RETRIES,
            "retry_backoff_factor": RETRY_BACKOFF_S, "retry_backoff_max": RETRY_BACKOFF_MAX_S}


def schema_of(definition: dict[str, Any]) -> list[SchemaField]:
    """The index's fields as :class:`SchemaField` (``Collection(Edm.Single)`` with dimensions is
    a vector, ``Edm.String`` text, numbers numbers, complex types JSON)."""
    out = []
    for f in definition.get("fields") or []:
        kind = str(f.get("type") or "")
        dims = f.get("dimensions")
        if kind in _VECTOR_TYPES and dims:
            mapped = "vector"
        elif kind in ("Edm.String", "Collection(Edm.String)"):
            mapped = "text"
        elif kind in ("Edm.Int32", "Edm.Int64", "Edm.Double", "Collection(Edm.Int32)", "Collection(Edm.Int64)"):
            mapped = "number"
        elif "ComplexType" in kind:
            mapped = "json"
        else:
            mapped = "other"
        out.append(SchemaField(str(f.get("name")), mapped, dimensions=int(dims) if dims else None,
                               key=bool(f.get("key")), searchable=bool(f.get("searchable")),
                               filterable=bool(f.get("filterable"))))
    return out


def check_sub_fields(definition: dict[str, Any], resolved: ResolvedMapping, where: str) -> None:
    """Check the mapping's dotted paths into complex fields (``meta.source``) against the
    sub-fields the index definition lists for them.

    Args:
        definition: the index definition (``fields``, a complex field's own ``fields``).
        resolved: the mapping checked against :func:`schema_of`.
        where: the target and index, for messages.

    Raises:
        ConfigError: a path through a sub-field the definition lacks; the message names the
            role, the path and the sub-fields at that level (``fields.document names
            'meta.nofile', which the index lacks ('meta' holds: file, page)``).
    """
    for role, path in nested_paths(resolved).items():
        parts = path.split(".")
        level: list[dict[str, Any]] = list(definition.get("fields") or [])
        for depth, part in enumerate(parts):
            found = next((f for f in level if f.get("name") == part), None)
            if found is None:
                holder = ".".join(parts[:depth])
                held = f"holds: {', '.join(str(f.get('name')) for f in level)}" if level else "has no sub-fields"
                raise ConfigError(f"{where}: fields.{role} names {path!r}, which the index lacks ({holder!r} {held})")
            level = list(found.get("fields") or [])


def _vectorizer(definition: dict[str, Any], field_name: str) -> str | None:
    """The vectorizer named by the profile of vector field ``field_name``, or None."""
    profile = next((f.get("vectorSearchProfile") for f in definition.get("fields") or []
                    if f.get("name") == field_name), None)
    for p in (definition.get("vectorSearch") or {}).get("profiles") or []:
        if p.get("name") == profile and p.get("vectorizer"):
            return str(p["vectorizer"])
    return None


class AzureSearchTarget:
    """An Azure AI Search index (see the module docstring).

    Args:
        name: the target's name in reports.
        endpoint: the service (``https://<service>.search.windows.net``).
        index: the index name.
        credential: an ``AzureKeyCredential`` or a token credential (``DefaultAzureCredential``).
        fields: the field mapping named (the rest is inferred from the index definition).
        vectors: ragtune's query vectors, for an index whose vector field has no vectorizer.
        client_kwargs: more keyword arguments of the SDK clients (a transport, in tests).

    Raises:
        TargetError: the service cannot be reached or refuses (401, 403, 404 for a missing index).
        ConfigError: the mapping names a field (or a complex field's sub-field) the index lacks,
            or the index has no text field.
    """

    engine = "azure-ai-search"

    def __init__(self, name: str, endpoint: str, index: str, credential: AzureKeyCredential | TokenCredential, *,
                 fields: FieldMapping | None = None, vectors: QueryVectors | None = None,
                 client_kwargs: dict[str, Any] | None = None) -> None:
        from azure.search.documents import SearchClient
        from azure.search.documents.indexes import SearchIndexClient

        self.name = name
        self.index = index
        self.location = shown_url(endpoint)
        self._secrets = url_secrets(endpoint)
        self.vectors = vectors
        options = {**client_options(), **(client_kwargs or {})}
        self._index_client = SearchIndexClient(endpoint, credential, **options)
        self._client = SearchClient(endpoint, index, credential, **options)
        try:
            definition = self._call("reading the index definition of", lambda: self._index_client.get_index(index))
            self.definition = definition.as_dict() if hasattr(definition, "as_dict") else dict(definition)
            semantic = self.definition.get("semantic") or {}
            where = f"target {name} (index {index})"
            self.resolved: ResolvedMapping = resolve_mapping(
                fields or FieldMapping(), schema_of(self.definition), where,
                semantic=[str(c.get("name")) for c in semantic.get("configurations") or []],
                default_semantic=semantic.get("defaultConfiguration"))
            check_sub_fields(self.definition, self.resolved, where)
        except BaseException:
            self.close()
            raise
        self._setups, self._unavailable = self._plan()
        self._documents: dict[str, set[str]] | None = None

    # ------------------------------------------------------------------------------ helpers

    def _call(self, action: str, call: Callable[[], _T]) -> _T:
        """Run ``call``, turning the SDK's errors into :class:`TargetError` naming the target."""
        from azure.core.exceptions import AzureError, HttpResponseError

        try:
            return call()
        except HttpResponseError as exc:
            status = getattr(exc, "status_code", None)
            detail = getattr(getattr(exc, "error", None), "message", None) or getattr(exc, "reason", None) or str(exc)
            message = without_credentials(" ".join(str(detail).split()), self._secrets)[:500]
            raise TargetError(f"target {self.name}: {action} index {self.index} at {self.location} failed"
                              f"{f' (HTTP {status})' if status else ''}: {message}") from None
        except AzureError as exc:  # connection refused, timeouts, credentials that give no token
            message = without_credentials(" ".join(str(exc).split()), self._secrets)[:500]
            raise TargetError(f"target {self.name}: {action} index {self.index} at {self.location} failed: "
                              f"{type(exc).__name__}: {message}") from None

    def _plan(self) -> tuple[list[TargetSetup], list[UnavailableSetup]]:
        m = self.resolved.mapping
        semantic = m.semantic_configuration
        base = [TargetSetup("keyword", "keyword", "BM25, simple query syntax", options=(("query_type", "simple"),)),
                TargetSetup("keyword-full", "keyword", "BM25, full Lucene syntax (the question's operators escaped)",
                            options=(("query_type", "full"),))]
        unavailable: list[UnavailableSetup] = []
        if m.vector is None:
            unavailable.append(UnavailableSetup("dense*, hybrid*", "the index has no vector field: keyword setups only"))
        else:
            vectorizer = _vectorizer(self.definition, m.vector)
            field = self.resolved.field("vector")
            why = None if vectorizer else check_dimension(m.vector, field.dimensions if field else None,
                                                          self.vectors, self.name)
            if why:
                unavailable.append(UnavailableSetup("dense*, hybrid*", why))
            else:
                how = f"the index's vectorizer {vectorizer!r}" if vectorizer else self.vectors.model_id
                model = None if vectorizer else self.vectors.model_id
                opts = (("vector_field", m.vector), ("vectorizer", vectorizer or ""))
                base.append(TargetSetup("dense", "dense", f"vector query on {m.vector}, embedded by {how}", model, opts))
                base.append(TargetSetup("hybrid", "hybrid", f"BM25 + vector query on {m.vector} ({how}), fused by the "
                                                            "service (RRF)", model, opts))
        out = list(base)
        if semantic:
            for s in base:
                out.append(TargetSetup(f"{s.key}+semantic", s.method, f"{s.description}; then the semantic ranker "
                                       f"({semantic!r})", s.embedding_model,
                                       s.options + (("semantic_configuration", semantic),)))
        else:
            unavailable.append(UnavailableSetup("*+semantic", "the index has no semantic configuration"))
        return out, unavailable

    def _select(self) -> list[str]:
        m = self.resolved.mapping
        names = [m.key, m.text, m.document, m.page]
        return list(dict.fromkeys(n.split(".", 1)[0] for n in names if n))

    def _hit(self, row: dict[str, Any], score: float) -> Hit:
        m = self.resolved.mapping
        document, page = index_document_id(read_path(row, m.document), strip_prefix=m.document_prefix)
        pages = page_numbers(read_path(row, m.page)) if m.page else ()
        if not pages and page is not None:
            pages = (page,)
        return Hit(document, pages, str(read_path(row, m.key) or ""), str(read_path(row, m.text) or ""), float(score))

    # ------------------------------------------------------------------------------ protocol

    def setups(self) -> list[TargetSetup]:
        """The setups the index offers (see the module docstring)."""
        return list(self._setups)

    def search(self, question: str, setup: TargetSetup, top_k: int) -> list[Hit]:
        """Search the index with one request; semantic setups are ordered by
        ``@search.rerankerScore`` (the hit's score), the others by ``@search.score``.

        The semantic ranker is asked for in one of the two ways the service documents:
        ``queryType: semantic`` (the search text then parsed as simple syntax), or, where the
        search text is full Lucene syntax (``keyword-full+semantic``) or there is none
        (``dense+semantic``), ``semanticQuery`` with the question as plain text, which works with
        every query type, so ``queryType`` stays ``full``.

        Raises:
            TargetError: the service refused or failed (after the retries).

        References:
            Add semantic ranking to queries in Azure AI Search, "Set up the query":
            https://learn.microsoft.com/azure/search/semantic-how-to-query-request
        """
        from azure.search.documents.models import VectorizableTextQuery, VectorizedQuery

        semantic = setup.option("semantic_configuration")
        syntax = setup.option("query_type", "simple")
        query_type = "semantic" if semantic and syntax != "full" else syntax
        kwargs: dict[str, Any] = {"top": top_k, "select": self._select(), "query_type": query_type}
        if setup.method in ("keyword", "hybrid"):
            text = escape_lucene(question) if syntax == "full" else question
            kwargs["search_text"] = text
        if setup.method in ("dense", "hybrid"):
            k = top_k if setup.method == "dense" and not semantic else max(top_k, HYBRID_K)
            fieldname = setup.option("vector_field")
            if setup.option("vectorizer"):
                query: Any = VectorizableTextQuery(text=question, k_nearest_neighbors=k, fields=fieldname)
            else:
                vector = [float(x) for x in self.vectors.vector(question)]
                query = VectorizedQuery(vector=vector, k_nearest_neighbors=k, fields=fieldname)
            kwargs["vector_queries"] = [query]
        if semantic:
            kwargs["semantic_configuration_name"] = semantic
            if setup.method == "dense" or query_type != "semantic":
                kwargs["semantic_query"] = question

        def run() -> list[dict[str, Any]]:
            return [dict(r) for _, r in zip(range(top_k), self._client.search(**kwargs))]

        rows = self._call("searching", run)
        score = "@search.reranker_score" if semantic else "@search.score"
        return [self._hit(r, r.get(score) if r.get(score) is not None else r.get("@search.score") or 0.0)
                for r in rows]

    def _list_documents(self) -> tuple[dict[str, set[str]], Fingerprint, int]:
        """Golden-form document id -> the raw values the index holds for it, the fingerprint of
        the ids and documents read, and how many index documents were read (whether any of them
        names a page is kept for :meth:`describe`)."""
        m = self.resolved.mapping
        fingerprint = Fingerprint({"definition": self.definition, "mapping": m.named()})
        documents: dict[str, set[str]] = {}
        read = 0
        self._seen_page = False
        while read < LIST_MAX:
            select = list(dict.fromkeys(n.split(".", 1)[0] for n in (m.key, m.document, m.page) if n))

            def page(skip: int = read) -> list[dict[str, Any]]:
                return [dict(r) for r in self._client.search(search_text="*", select=select, top=LIST_PAGE,
                                                             skip=skip)][:LIST_PAGE]

            rows = self._call("listing the documents of", page)
            for row in rows:
                raw = read_path(row, m.document)
                document, _ = index_document_id(raw, strip_prefix=m.document_prefix)
                documents.setdefault(document, set()).add(str(raw))
                fingerprint.add(read_path(row, m.key), raw, "")
                self._seen_page = self._seen_page or bool(self._hit(row, 0.0).pages)
            read += len(rows)
            if len(rows) < LIST_PAGE:
                break
        return documents, fingerprint, read

    def describe(self) -> TargetDescription:
        """The index's description: counts from its statistics, the number of distinct
        documents (from listing the key and document fields of up to :data:`LIST_MAX` index
        documents), and a fingerprint of the definition, the statistics and those fields (the
        texts are not read: a change of text shows in the storage size)."""
        stats = self._call("reading the statistics of", lambda: self._index_client.get_index_statistics(self.index))
        stats = stats.as_dict() if hasattr(stats, "as_dict") else dict(stats)
        documents, fingerprint, read = self._list_documents()
        self._documents, self._complete = documents, read < LIST_MAX
        count = int(stats.get("documentCount") or stats.get("document_count") or read)
        fingerprint.complete = fingerprint.complete and read >= count
        counts = {"documentCount": count, "storageSize": stats.get("storageSize") or stats.get("storage_size"),
                  "etag": self.definition.get("@odata.etag")}
        value, basis = fingerprint.result(counts)
        if fingerprint.complete:
            basis = "definition, statistics (document count, storage size) and every index document's key and document"
        configurations = [str(c.get("name")) for c in (self.definition.get("semantic") or {}).get("configurations") or []]
        notes = [f"semantic configurations: {', '.join(configurations)}"] if configurations else []
        return TargetDescription(
            engine=self.engine, location=self.location, index=self.index, n_chunks=count,
            n_documents=len(documents) if read >= count else None, fingerprint=value, fingerprint_basis=basis,
            fields=tuple(self.resolved.mapping.named().items()), inferred=self.resolved.inferred, notes=tuple(notes),
            unavailable=tuple(self._unavailable), pages_unknown=pages_unknown(self.resolved.mapping, self._seen_page))

    def missing(self, expected: Iterable[str]) -> list[str]:
        """The expected documents no index document names (by the mapped document field).
        Past :data:`LIST_MAX` index documents, a document the listing did not see is looked up
        with a filter on its id, with and without the mapping's prefix; when the field is not
        filterable it cannot be told missing and is not reported."""
        if self._documents is None:
            self._documents, _, read = self._list_documents()
            self._complete = read < LIST_MAX
        absent = missing_documents(expected, self._documents)
        if getattr(self, "_complete", True):
            return absent
        m, field = self.resolved.mapping, self.resolved.field("document")
        if field is None or not field.filterable:
            logger.warning("target %s: more than %d index documents and %s is not filterable: missing documents "
                           "are not reported", self.name, LIST_MAX, m.document)
            return []

        def held(document: str) -> bool:
            values = " or ".join(f"{m.document} eq '{v.replace(chr(39), chr(39) * 2)}'"
                                 for v in raw_candidates(document, m.document_prefix))
            return bool(self._call("looking up documents in", lambda: list(self._client.search(
                search_text="*", filter=values, select=self._select(), top=1))))

        return [d for d in absent if not held(d)]

    def chunks_of(self, document_ids: Iterable[str]) -> dict[str, list[Hit]]:
        """The index documents of each document (at most :data:`MAX_CHUNKS_PER_DOCUMENT`, read
        in pages of :data:`LIST_PAGE`), selected with a ``search.in`` filter on the mapped
        document field (which must be filterable).

        Raises:
            TargetError: the document field is not filterable, or the service failed.
        """
        m = self.resolved.mapping
        field = self.resolved.field("document")
        if field is None or not field.filterable:
            raise TargetError(f"target {self.name}: field {m.document!r} is not filterable, so the index's chunks of a "
                              "document cannot be selected")
        if self._documents is None:
            self._documents = self._list_documents()[0]
        out: dict[str, list[Hit]] = {}
        for document in dict.fromkeys(document_ids):
            raw = sorted(self._documents.get(document, ()))
            if not raw:
                continue
            values = ",".join(v.replace("'", "''") for v in raw)
            flt = f"search.in({m.document}, '{values}', ',')" if "," not in "".join(raw) else \
                " or ".join(f"{m.document} eq '{v.replace(chr(39), chr(39) * 2)}'" for v in raw)

            rows: list[dict[str, Any]] = []
            while len(rows) < MAX_CHUNKS_PER_DOCUMENT:  # pages of LIST_PAGE, the most one answer holds
                def page(flt: str = flt, skip: int = len(rows)) -> list[dict[str, Any]]:
                    top = min(LIST_PAGE, MAX_CHUNKS_PER_DOCUMENT - skip)
                    return [dict(r) for r in self._client.search(search_text="*", filter=flt, select=self._select(),
                                                                 top=top, skip=skip)][:top]

                got = self._call("reading chunks of", page)
                rows += got
                if len(got) < LIST_PAGE:
                    break
            out[document] = [self._hit(r, 0.0) for r in rows]
        return out

    def close(self) -> None:
        """Close the SDK clients."""
        self._client.close()
        self._index_client.close()


__all__ = ["AzureSearchTarget", "CONNECT_TIMEOUT_S", "READ_TIMEOUT_S", "RETRIES", "check_sub_fields", "client_options",
           "escape_lucene", "schema_of"]
