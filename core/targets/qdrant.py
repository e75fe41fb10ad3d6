"""A team's own Qdrant collection, searched in place and read-only through ``qdrant-client``:
a server (``http(s)://...``) or the client's embedded local mode (a folder, or ``:memory:``).

The payload's fields are learnt from the first points (nested keys as dotted paths, as
LangChain's ``metadata.source`` and ``metadata.page``), and a mapped dotted path none of them
holds is a mapping error; the collection's vectors are its unnamed vector (the field
``(vector)``) or its named ones. Setups: ``dense`` (``query_points`` with ragtune's query
vector on the mapped vector, scored by the collection's distance). Qdrant has no keyword ranking
of its own: a sparse vector needs the encoder that made it, which ragtune does not have, so no
keyword or hybrid setup is offered and the description says so.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, TypeVar

from core.errors import TargetError
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
    read_path,
    resolve_mapping,
)

if TYPE_CHECKING:
    from qdrant_client import QdrantClient
    from qdrant_client.models import CollectionInfo, Filter, Record, ScoredPoint

_T = TypeVar("_T")

#: The name of a collection's unnamed vector, and of the point id, in field mappings.
UNNAMED_VECTOR = "(vector)"
POINT_ID = "(point id)"
#: Points read to learn the payload's fields, and per page when the collection is listed.
PAYLOAD_SAMPLE = 50
SCROLL_PAGE = 1000
#: Seconds a request to a Qdrant server may take.
TIMEOUT_S = 30
#: The local mode locks its folder to one client per process: the targets of one folder share
#: one client, by resolved path -> ``[client, targets using it]``.
_FOLDER_CLIENTS: dict[str, list[Any]] = {}
_FOLDERS_LOCK = threading.Lock()
#: Qdrant distances (``Distance`` values, lower-cased) whose score is a distance, smaller is
#: closer; a hit's score is its negation, so higher is better for every distance.
DISTANCES_LOWER_IS_CLOSER = ("euclid", "manhattan")


def _flatten(payload: Any, prefix: str = "") -> dict[str, str]:
    """Dotted field name -> kind of every key of a payload (nested mappings: ``json`` and their
    keys below them)."""
    out: dict[str, str] = {}
    for key, value in (payload or {}).items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out[name] = "json"
            out.update(_flatten(value, name + "."))
        elif isinstance(value, str):
            out[name] = "text"
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out[name] = "number"
        else:
            out[name] = "other"
    return out


class QdrantTarget:
    """A Qdrant collection (see the module docstring).

    Args:
        name: the target's name in reports.
        location: a folder of the local mode, ``:memory:``, or a server URL.
        collection: the collection.
        fields: the field mapping named (the rest is inferred from the payload).
        vectors: ragtune's query vectors for dense search.
        client: an open ``QdrantClient`` to use (not closed by :meth:`close`), for a local
            mode folder the caller has open already (one client per folder and process).
            Without one, the targets of one local mode folder share the client the first of
            them opened, so several collections of a folder are searched in one run.

    Raises:
        TargetError: the folder or server cannot be opened, or lacks the collection.
        ConfigError: a bad field mapping (a payload key or dotted path none of the first points
            holds).
    """

    engine = "qdrant"

    def __init__(self, name: str, location: str, collection: str, *, fields: FieldMapping | None = None,
                 vectors: QueryVectors | None = None, client: QdrantClient | None = None) -> None:
        self.name = name
        self.location = location
        self.collection = collection
        self.vectors = vectors
        self._secrets = url_secrets(location)
        self._owns = client is None
        self._client = client if client is not None else self._open()
        try:
            info = self._call("reading", lambda: self._client.get_collection(collection))
            self._vector_params = self._vector_fields(info)
            sample = self._call("reading", lambda: self._client.scroll(collection, limit=PAYLOAD_SAMPLE,
                                                                       with_payload=True, with_vectors=False)[0])
            kinds: dict[str, str] = {}
            for point in sample:
                for key, kind in _flatten(point.payload).items():
                    kinds.setdefault(key, kind)
            schema = [SchemaField(POINT_ID, "other", key=True)]
            schema += [SchemaField(k, v) for k, v in kinds.items()]
            schema += [SchemaField(n, "vector", dimensions=size) for n, (size, _) in self._vector_params.items()]
            where = f"target {name} (collection {collection})"
            self.resolved: ResolvedMapping = resolve_mapping(fields or FieldMapping(), schema, where)
            check_nested_paths(self.resolved, [point.payload or {} for point in sample], where)
            self._schema = {"vectors": {n: list(v) for n, v in self._vector_params.items()}, "payload": kinds}
        except BaseException:
            self.close()
            raise
        self._documents: dict[str, set[str]] | None = None

    def _open(self) -> Any:
        from qdrant_client import QdrantClient

        try:
            if self.location.lower().startswith(("http://", "https://")):
                # no version probe: against a server that is down it only adds a UserWarning to the
                # error the first request reports anyway
                return QdrantClient(url=self.location, timeout=TIMEOUT_S, check_compatibility=False)
            if self.location == ":memory:":
                return QdrantClient(location=":memory:")
            if not Path(self.location).is_dir():
                raise TargetError(f"target {self.name}: {self.location} is not a Qdrant folder")
            self._folder = str(Path(self.location).resolve())
            with _FOLDERS_LOCK:
                shared = _FOLDER_CLIENTS.get(self._folder)
                if shared is None:
                    shared = _FOLDER_CLIENTS[self._folder] = [QdrantClient(path=self._folder), 0]
                shared[1] += 1
                return shared[0]
        except TargetError:
            raise
        except Exception as exc:  # qdrant-client raises RuntimeError for a folder another client holds
            reason = without_credentials(' '.join(str(exc).split()), self._secrets)[:300]
            raise TargetError(f"target {self.name}: cannot open Qdrant at {self._shown()}: {reason}") from None

    def _shown(self) -> str:
        return shown_url(self.location)

    def _call(self, action: str, call: Callable[[], _T]) -> _T:
        """Run ``call``, turning the client's errors into :class:`TargetError`."""
        try:
            return call()
        except TargetError:
            raise
        except Exception as exc:  # qdrant-client raises ValueError, UnexpectedResponse, gRPC and HTTP errors
            reason = without_credentials(' '.join(str(exc).split()), self._secrets)[:300]
            raise TargetError(f"target {self.name}: {action} collection {self.collection} at {self._shown()} failed: "
                              f"{type(exc).__name__}: {reason}") from None

    @staticmethod
    def _vector_fields(info: CollectionInfo) -> dict[str, tuple[int, str]]:
        """Vector name -> ``(size, distance)``; the unnamed vector as :data:`UNNAMED_VECTOR`."""
        params = info.config.params.vectors
        if params is None:
            return {}
        if hasattr(params, "size"):
            return {UNNAMED_VECTOR: (int(params.size), str(getattr(params.distance, "value", params.distance)))}
        return {str(n): (int(p.size), str(getattr(p.distance, "value", p.distance))) for n, p in params.items()}

    def setups(self) -> list[TargetSetup]:
        """``dense`` when the collection has a vector whose size ragtune's model gives."""
        m = self.resolved.mapping
        if m.vector is None or check_dimension(m.vector, self._vector_params[m.vector][0], self.vectors, self.name):
            return []
        distance = self._vector_params[m.vector][1]
        return [TargetSetup("dense", "dense", f"{distance} on {m.vector}", self.vectors.model_id,
                            (("vector", m.vector), ("distance", distance)))]

    def _unavailable(self) -> list[UnavailableSetup]:
        m = self.resolved.mapping
        out = [UnavailableSetup("keyword, hybrid*", "Qdrant ranks by vectors only: a sparse vector needs the encoder "
                                                    "that made it, which ragtune does not have")]
        if m.vector is None:
            out.append(UnavailableSetup("dense", "the collection has no dense vector"))
        else:
            why = check_dimension(m.vector, self._vector_params[m.vector][0], self.vectors, self.name)
            if why:
                out.append(UnavailableSetup("dense", why))
        return out

    def _hit(self, point: ScoredPoint | Record, score: float) -> Hit:
        m = self.resolved.mapping
        payload = point.payload or {}
        key = point.id if m.key in (None, POINT_ID) else read_path(payload, m.key)
        document, page = index_document_id(read_path(payload, m.document), strip_prefix=m.document_prefix)
        pages = page_numbers(read_path(payload, m.page)) if m.page else ()
        return Hit(document, pages or ((page,) if page is not None else ()), str(key),
                   str(read_path(payload, m.text) or ""), float(score))

    def search(self, question: str, setup: TargetSetup, top_k: int) -> list[Hit]:
        """Dense search with ``query_points``; higher scores are better: the similarity Qdrant
        gives for a ``Cosine`` or ``Dot`` collection, the negated distance for ``Euclid`` and
        ``Manhattan`` (:data:`DISTANCES_LOWER_IS_CLOSER`), so at most ``top_k`` hits come closest
        first.

        Raises:
            TargetError: the client failed.
        """
        vector = [float(x) for x in self.vectors.vector(question)]
        using = setup.option("vector")
        result = self._call("searching", lambda: self._client.query_points(
            self.collection, query=vector, using=None if using == UNNAMED_VECTOR else using, limit=top_k,
            with_payload=True, with_vectors=False))
        distance = self._vector_params.get(using, (0, ""))[1]
        sign = -1.0 if distance.lower() in DISTANCES_LOWER_IS_CLOSER else 1.0
        return hits_in_order([self._hit(p, sign * float(p.score)) for p in result.points], top_k)

    def _scroll(self, scroll_filter: Filter | None = None, most: int | None = None) -> Iterable[Record]:
        """Points (payload only), page by page, at most ``most`` (default one past
        :data:`FINGERPRINT_MAX_CHUNKS`)."""
        most = FINGERPRINT_MAX_CHUNKS + 1 if most is None else most
        offset, seen = None, 0
        while seen < most:
            page, offset = self._call("reading", lambda o=offset: self._client.scroll(
                self.collection, scroll_filter=scroll_filter, limit=min(SCROLL_PAGE, most - seen), offset=o,
                with_payload=True, with_vectors=False))
            yield from page
            seen += len(page)
            if offset is None or not page:
                return

    def describe(self) -> TargetDescription:
        """The collection's description: point count, distinct documents, and a fingerprint of
        the vector configuration, the payload fields and every point's id, document and text."""
        m = self.resolved.mapping
        count = int(self._call("counting", lambda: self._client.count(self.collection, exact=True)).count)
        fingerprint = Fingerprint({**self._schema, "mapping": m.named()})
        documents: dict[str, set[str]] = {}
        seen_page = False
        for point in self._scroll():
            hit = self._hit(point, 0.0)
            seen_page = seen_page or bool(hit.pages)
            raw = read_path(point.payload or {}, m.document)
            if not fingerprint.add(hit.chunk_id, raw, hit.text):
                break
            documents.setdefault(hit.document_id, set()).add(str(raw))
        if fingerprint.complete:
            self._documents, self._complete = documents, True
        value, basis = fingerprint.result({"points": count})
        notes = [f"dense search by {self._vector_params[m.vector][1]} distance"] if m.vector else []
        return TargetDescription(
            engine=self.engine, location=self._shown(), index=self.collection, n_chunks=count,
            n_documents=len(documents) if fingerprint.complete else None, fingerprint=value, fingerprint_basis=basis,
            fields=tuple(m.named().items()), inferred=self.resolved.inferred, notes=tuple(notes),
            unavailable=tuple(self._unavailable()), pages_unknown=pages_unknown(m, seen_page))

    def _listed(self) -> dict[str, set[str]]:
        if self._documents is None:
            m = self.resolved.mapping
            self._documents, self._complete = group_documents(
                (read_path(point.payload or {}, m.document) for point in self._scroll()), m.document_prefix,
                FINGERPRINT_MAX_CHUNKS)
        return self._documents

    def missing(self, expected: Iterable[str]) -> list[str]:
        """The expected documents no point names (past :data:`FINGERPRINT_MAX_CHUNKS` points, a
        document the listing did not see is looked up by its id, with and without the
        mapping's prefix)."""
        from qdrant_client import models

        absent = missing_documents(expected, self._listed())
        if getattr(self, "_complete", True):
            return absent
        key, prefix = self.resolved.mapping.document, self.resolved.mapping.document_prefix

        def held(document: str) -> bool:
            flt = models.Filter(must=[models.FieldCondition(
                key=key, match=models.MatchAny(any=raw_candidates(document, prefix)))])
            return self._call("counting", lambda: self._client.count(self.collection, count_filter=flt,
                                                                     exact=True)).count > 0

        return [d for d in absent if not held(d)]

    def chunks_of(self, document_ids: Iterable[str]) -> dict[str, list[Hit]]:
        """The points of each document (a ``MatchAny`` filter on the mapped payload key)."""
        from qdrant_client import models

        documents = self._listed()
        out: dict[str, list[Hit]] = {}
        for document in dict.fromkeys(document_ids):
            raw = sorted(documents.get(document, ()))
            if raw:
                flt = models.Filter(must=[models.FieldCondition(key=self.resolved.mapping.document,
                                                                match=models.MatchAny(any=raw))])
                out[document] = [self._hit(p, 0.0) for p in self._scroll(flt, MAX_CHUNKS_PER_DOCUMENT)]
        return out

    def close(self) -> None:
        """Close the client when the target opened it; a local mode folder's shared client is
        closed (and the folder released) when the last target of the folder closes."""
        if not self._owns or getattr(self, "_client", None) is None:
            return
        client, self._client = self._client, None
        folder = getattr(self, "_folder", None)
        if folder is not None:
            with _FOLDERS_LOCK:
                shared = _FOLDER_CLIENTS.get(folder)
                if shared is None or shared[0] is not client:
                    return
                shared[1] -= 1
                if shared[1] > 0:
                    return
                del _FOLDER_CLIENTS[folder]
        client.close()


__all__ = ["DISTANCES_LOWER_IS_CLOSER", "POINT_ID", "QdrantTarget", "UNNAMED_VECTOR"]
