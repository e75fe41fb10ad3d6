"""A team's own Milvus collection (a server, or a Milvus Lite ``.db`` folder), searched in place
and read-only.

Any schema: the field mapping names (or infers) the primary key, text, document, page, dense
vector and BM25 sparse fields; a document kept in a JSON field is a dotted path (``meta.source``),
which one of the collection's first rows must hold.
Setups: ``dense`` (the vector field's index metric: COSINE, IP or L2), ``keyword`` where a
sparse field is the output of a BM25 function (Milvus embeds the question's text itself), and
``hybrid-rrf-k60`` (both legs fused with RRF as ragtune's stores fuse them) where it has both.
Searching loads the collection (Milvus serves searches from loaded collections only) and
closing releases it again, unless it was loaded before; nothing is written.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, TypeVar

from core.errors import StoreError, TargetError
from core.redaction import shown_url, url_secrets, without_credentials
from core.targets.base import (
    FINGERPRINT_MAX_CHUNKS,
    MAX_CHUNKS_PER_DOCUMENT,
    Fingerprint,
    Hit,
    QueryVectors,
    TargetDescription,
    TargetSetup,
    UnavailableSetup,
    check_dimension,
    fuse_rrf,
    hits_in_order,
    missing_documents,
    pages_unknown,
    raw_candidates,
)
from core.targets.ids import group_documents, index_document_id, page_numbers
from core.targets.mapping import (
    FieldMapping,
    ResolvedMapping,
    SchemaField,
    check_nested_paths,
    nested_heads,
    read_path,
    resolve_mapping,
)
from core.vectorstores.milvus import MilvusConfig, MilvusLiteConfig, open_client

if TYPE_CHECKING:
    from pymilvus import MilvusClient

_T = TypeVar("_T")
logger = logging.getLogger(__name__)

#: Rows per batch when the collection is listed.
ITERATOR_BATCH = 1000
#: Rows read to check the mapping's dotted paths into JSON fields.
PATH_SAMPLE = 20
_VECTOR_TYPES = ("FLOAT_VECTOR", "FLOAT16_VECTOR", "BFLOAT16_VECTOR")
_NUMBER_TYPES = ("INT8", "INT16", "INT32", "INT64", "FLOAT", "DOUBLE")


def _type_name(value: Any) -> str:
    return str(getattr(value, "name", value)).upper()


class MilvusCollectionTarget:
    """A Milvus collection (see the module docstring).

    Args:
        name: the target's name in reports.
        location: a server URI (``http://host:19530``) or a Milvus Lite database folder.
        collection: the collection.
        fields: the field mapping named (the rest is inferred from the schema).
        vectors: ragtune's query vectors for dense search.
        token: a server token (never shown).
        client: an open ``MilvusClient`` to use (not closed by :meth:`close`).

    Raises:
        TargetError: the server or database cannot be opened, or lacks the collection.
        ConfigError: a bad field mapping (a field the schema lacks, a JSON path none of the
            first rows holds).
    """

    engine = "milvus"

    def __init__(self, name: str, location: str, collection: str, *, fields: FieldMapping | None = None,
                 vectors: QueryVectors | None = None, token: str = "", client: MilvusClient | None = None) -> None:
        self.name = name
        self.location = location
        self.collection = collection
        self.vectors = vectors
        self.lite = not location.lower().startswith(("http://", "https://", "tcp://", "grpc://"))
        if self.lite:
            self.engine = "milvus-lite"
        self._secrets = [token, *url_secrets(location)]
        self._owns = client is None
        self._client = client if client is not None else self._open(token)
        try:
            if not self._call("reading", lambda: self._client.has_collection(collection)):
                raise TargetError(f"target {name}: collection {collection} does not exist at {self._shown()}")
            described = self._call("reading", lambda: self._client.describe_collection(collection))
            self._metrics = self._index_metrics()
            schema = self._schema(described)
            where = f"target {name} (collection {collection})"
            self.resolved: ResolvedMapping = resolve_mapping(fields or FieldMapping(), schema, where,
                                                             needs_keyword_field=True)
            self._fields = [f.to_dict() for f in schema]
            self._loaded_here = not self._is_loaded()
            if self._loaded_here:
                self._call("loading", lambda: self._client.load_collection(collection))
            check_nested_paths(self.resolved, self._sample(), where)
        except BaseException:
            self.close()
            raise
        self._documents: dict[str, set[str]] | None = None

    def _open(self, token: str) -> Any:
        if self.lite and not Path(self.location).exists():
            raise TargetError(f"target {self.name}: no Milvus Lite database at {self._shown()}")
        config = MilvusLiteConfig(self.location) if self.lite else MilvusConfig(uri=self.location, token=token)
        try:
            return open_client(config)
        except StoreError as exc:
            raise TargetError(f"target {self.name}: {without_credentials(str(exc), self._secrets)}") from None

    def _shown(self) -> str:
        return shown_url(self.location)

    def _call(self, action: str, call: Callable[[], _T]) -> _T:
        """Run ``call``, turning pymilvus errors into :class:`TargetError`."""
        try:
            return call()
        except TargetError:
            raise
        except Exception as exc:  # pymilvus raises MilvusException and gRPC errors
            reason = without_credentials(' '.join(str(exc).split()), self._secrets)[:300]
            raise TargetError(f"target {self.name}: {action} collection {self.collection} at {self._shown()} failed: "
                              f"{reason}") from None

    def _sample(self) -> list[dict[str, Any]]:
        """The first :data:`PATH_SAMPLE` rows of the JSON fields the mapping's dotted paths go
        through (parsed), to check those paths; none when the mapping names no such path."""
        heads = nested_heads(self.resolved)
        if not heads:
            return []
        rows = self._call("reading", lambda: self._client.query(self.collection, filter="", output_fields=heads,
                                                                limit=PATH_SAMPLE))
        return [self._hit_entity({k: v for k, v in dict(row).items() if k in heads}) for row in rows]

    def _index_metrics(self) -> dict[str, str]:
        """Field name -> its index's metric type (COSINE, IP, L2, BM25)."""
        out = {}
        for index in self._call("reading", lambda: self._client.list_indexes(self.collection)):
            info = self._call("reading", lambda i=index: self._client.describe_index(self.collection, i)) or {}
            if info.get("field_name"):
                out[str(info["field_name"])] = str(info.get("metric_type") or "").upper()
        return out

    def _schema(self, described: dict[str, Any]) -> list[SchemaField]:
        outputs = {n for f in described.get("functions") or [] if "BM25" in _type_name(f.get("type"))
                   for n in f.get("output_field_names") or []}
        out = []
        for f in described.get("fields") or []:
            kind, name = _type_name(f.get("type")), str(f.get("name"))
            primary = bool(f.get("is_primary"))
            if kind in _VECTOR_TYPES:
                out.append(SchemaField(name, "vector", dimensions=int((f.get("params") or {}).get("dim") or 0) or None))
            elif kind == "SPARSE_FLOAT_VECTOR":
                bm25 = name in outputs or f.get("is_function_output") and self._metrics.get(name) == "BM25"
                out.append(SchemaField(name, "sparse" if bm25 else "other", searchable=bool(bm25)))
            elif kind == "VARCHAR":
                out.append(SchemaField(name, "text", key=primary))
            elif kind in _NUMBER_TYPES:
                out.append(SchemaField(name, "number", key=primary))
            elif kind == "JSON":
                out.append(SchemaField(name, "json"))
            else:
                out.append(SchemaField(name, "other", key=primary))
        return out

    def _plan(self) -> tuple[list[TargetSetup], list[UnavailableSetup]]:
        m = self.resolved.mapping
        setups: list[TargetSetup] = []
        unavailable: list[UnavailableSetup] = []
        keyword = m.keyword if m.keyword and self.resolved.fields[m.keyword].kind == "sparse" else None
        if keyword:
            setups.append(TargetSetup("keyword", "keyword", f"BM25 on {keyword}", options=(("sparse", keyword),)))
        else:
            unavailable.append(UnavailableSetup("keyword, hybrid*", "the collection has no sparse field made by a "
                                                                    "BM25 function"))
        dense = False
        if m.vector is None:
            unavailable.append(UnavailableSetup("dense, hybrid*", "the collection has no dense vector field"))
        else:
            why = check_dimension(m.vector, self.resolved.fields[m.vector].dimensions, self.vectors, self.name)
            if why:
                unavailable.append(UnavailableSetup("dense, hybrid*", why))
            else:
                metric = self._metrics.get(m.vector) or "COSINE"
                setups.append(TargetSetup("dense", "dense", f"{metric} on {m.vector}", self.vectors.model_id,
                                          (("vector", m.vector), ("metric", metric))))
                dense = True
        if keyword and dense:
            setups.append(TargetSetup("hybrid-rrf-k60", "hybrid", "dense + BM25, RRF (k = 60) in ragtune",
                                      self.vectors.model_id, (("ranker_k", 60),)))
        return setups, unavailable

    def setups(self) -> list[TargetSetup]:
        """The setups the collection offers (see the module docstring)."""
        return self._plan()[0]

    def _output(self) -> list[str]:
        m = self.resolved.mapping
        return list(dict.fromkeys(n.split(".", 1)[0] for n in (m.key, m.text, m.document, m.page) if n))

    def _hit(self, entity: dict[str, Any], key: int | str, score: float) -> Hit:
        m = self.resolved.mapping
        entity = self._hit_entity(entity)
        document, page = index_document_id(read_path(entity, m.document), strip_prefix=m.document_prefix)
        pages = page_numbers(read_path(entity, m.page)) if m.page else ()
        chunk_id = read_path(entity, m.key) if m.key else None
        return Hit(document, pages or ((page,) if page is not None else ()), str(key if chunk_id is None else chunk_id),
                   str(read_path(entity, m.text) or ""), float(score))

    def _dense(self, question: str, k: int) -> list[Hit]:
        m = self.resolved.mapping
        metric = self._metrics.get(m.vector) or "COSINE"
        vector = [float(x) for x in self.vectors.vector(question)]
        rows = self._call("searching", lambda: self._client.search(
            self.collection, data=[vector], anns_field=m.vector, limit=k, output_fields=self._output(),
            search_params={"metric_type": metric}))[0]
        sign = -1.0 if metric == "L2" else 1.0  # L2: smaller is closer
        return [self._hit(r.get("entity") or {}, r.get("id"), sign * float(r["distance"])) for r in rows]

    def _keyword(self, question: str, k: int, setup: TargetSetup | None = None) -> list[Hit]:
        field = self.resolved.mapping.keyword
        rows = self._call("searching", lambda: self._client.search(
            self.collection, data=[question], anns_field=field, limit=k, output_fields=self._output(),
            search_params={"metric_type": "BM25"}))[0]
        # BM25 scores are >= 0; Milvus Lite 3 returns them negated (see core.vectorstores.milvus)
        negate = any(float(r["distance"]) < 0 for r in rows)
        return [self._hit(r.get("entity") or {}, r.get("id"), -float(r["distance"]) if negate else float(r["distance"]))
                for r in rows]

    def search(self, question: str, setup: TargetSetup, top_k: int) -> list[Hit]:
        """Search the collection (hybrid: :func:`core.targets.base.fuse_rrf`).

        Raises:
            TargetError: Milvus failed.
        """
        if setup.method == "dense":
            return hits_in_order(self._dense(question, top_k), top_k)
        if setup.method == "keyword":
            return hits_in_order(self._keyword(question, top_k), top_k)
        return fuse_rrf(self._dense, self._keyword, question, top_k, setup)

    def _rows(self, expression: str = "", most: int | None = None) -> Iterable[dict[str, Any]]:
        """Rows of the output fields, batch by batch, at most ``most`` (default one past
        :data:`FINGERPRINT_MAX_CHUNKS`)."""
        most = FINGERPRINT_MAX_CHUNKS + 1 if most is None else most
        iterator = self._call("reading", lambda: self._client.query_iterator(
            self.collection, batch_size=ITERATOR_BATCH, output_fields=self._output(), filter=expression))
        seen = 0
        try:
            while seen < most:
                batch = self._call("reading", iterator.next)
                if not batch:
                    return
                yield from batch[: most - seen]
                seen += len(batch)
        finally:
            iterator.close()

    def describe(self) -> TargetDescription:
        """The collection's description: row count, distinct documents, and a fingerprint of
        the schema, the index metrics and every row's key, document and text."""
        m = self.resolved.mapping
        stats = self._call("counting", lambda: self._client.get_collection_stats(self.collection))
        count = int(stats.get("row_count") or 0)
        fingerprint = Fingerprint({"fields": self._fields, "metrics": self._metrics, "mapping": m.named()})
        documents: dict[str, set[str]] = {}
        seen_page = False
        for row in self._rows():
            hit = self._hit(row, None, 0.0)
            seen_page = seen_page or bool(hit.pages)
            raw = read_path(self._hit_entity(row), m.document)
            if not fingerprint.add(hit.chunk_id, raw, hit.text):
                break
            documents.setdefault(hit.document_id, set()).add(str(raw))
        if fingerprint.complete:
            self._documents, self._complete = documents, True
        value, basis = fingerprint.result({"rows": count})
        return TargetDescription(
            engine=self.engine, location=self._shown(), index=self.collection, n_chunks=count,
            n_documents=len(documents) if fingerprint.complete else None, fingerprint=value, fingerprint_basis=basis,
            fields=tuple(m.named().items()), inferred=self.resolved.inferred,
            notes=tuple(f"index metric of {f}: {v}" for f, v in sorted(self._metrics.items())),
            unavailable=tuple(self._plan()[1]), pages_unknown=pages_unknown(m, seen_page))

    def _hit_entity(self, row: dict[str, Any]) -> dict[str, Any]:
        """The row with its JSON fields parsed (some servers give them as text)."""
        return {k: (json.loads(v) if isinstance(v, str) and self.resolved.fields.get(k, SchemaField(k, "")).kind
                    == "json" else v) for k, v in row.items()}

    def _listed(self) -> dict[str, set[str]]:
        if self._documents is None:
            m = self.resolved.mapping
            self._documents, self._complete = group_documents(
                (read_path(self._hit_entity(row), m.document) for row in self._rows()), m.document_prefix,
                FINGERPRINT_MAX_CHUNKS)
        return self._documents

    def missing(self, expected: Iterable[str]) -> list[str]:
        """The expected documents no row names (past :data:`FINGERPRINT_MAX_CHUNKS` rows, a
        document the listing did not see is looked up by its id, with and without the
        mapping's prefix)."""
        absent = missing_documents(expected, self._listed())
        if getattr(self, "_complete", True):
            return absent
        prefix = self.resolved.mapping.document_prefix

        def held(document: str) -> bool:
            expression = f"{self._field_expression()} in {json.dumps(raw_candidates(document, prefix))}"
            return bool(self._call("reading", lambda: self._client.query(
                self.collection, filter=expression, output_fields=self._output()[:1], limit=1)))

        return [d for d in absent if not held(d)]

    def _field_expression(self) -> str:
        """The mapped document field as a filter expression (``meta["source"]`` for a JSON path)."""
        name = self.resolved.mapping.document
        if "." in name and name not in self.resolved.fields:
            head, *rest = name.split(".")
            return head + "".join(f"[{json.dumps(p)}]" for p in rest)
        return name

    def chunks_of(self, document_ids: Iterable[str]) -> dict[str, list[Hit]]:
        """The rows of each document (an ``in`` filter on the mapped document field)."""
        documents = self._listed()
        out: dict[str, list[Hit]] = {}
        for document in dict.fromkeys(document_ids):
            raw = sorted(documents.get(document, ()))
            if raw:
                expression = f"{self._field_expression()} in {json.dumps(raw, ensure_ascii=False)}"
                out[document] = [self._hit(r, None, 0.0) for r in self._rows(expression, MAX_CHUNKS_PER_DOCUMENT)]
        return out

    def _is_loaded(self) -> bool:
        """Whether the collection is loaded (or loading) already, by the team's own app say."""
        state = self._call("reading", lambda: self._client.get_load_state(self.collection)).get("state")
        return getattr(state, "name", str(state)) in ("Loaded", "Loading")  # pymilvus' LoadState

    def close(self) -> None:
        """Release the collection when this target loaded it (one that was loaded before stays
        loaded: the team's app may be searching it), and close the client when the target
        opened it. A failed release is logged, never raised."""
        if getattr(self, "_loaded_here", False) and getattr(self, "_client", None) is not None:
            self._loaded_here = False
            try:
                self._client.release_collection(self.collection)
            except Exception as exc:  # noqa: BLE001 - pymilvus and gRPC errors; the run's results stand
                logger.warning("target %s: releasing collection %s failed: %s", self.name, self.collection,
                               without_credentials(" ".join(str(exc).split()), self._secrets)[:300])
        if self._owns and getattr(self, "_client", None) is not None:
            self._client.close()
            self._client = None


__all__ = ["MilvusCollectionTarget"]
