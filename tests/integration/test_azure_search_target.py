"""The Azure AI Search target through the real ``azure-search-documents`` client, over real
HTTP, against the local service of ``tests.support.azure_search`` holding squad-mini's Normans
passages in user-style indexes. The requests the client sends are checked against the Search
REST API's documented shapes (Search Documents POST: ``search``, ``queryType``, ``select`` as a
comma-separated list, ``top``, ``vectorQueries`` with ``kind`` ``text`` / ``vector``, ``k``,
``fields``, ``semanticConfiguration``, ``semanticQuery``; the ``api-version`` query parameter).

Expected values: document ids by hand from how the index documents were written (a blob URL
prefix before each passage's name); the vector a ``VectorizedQuery`` carries is the local
model's own ``embed_query`` of the question (reference: the model); semantic scores are on the
service's documented 0 to 4 scale.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from core.errors import ConfigError, TargetError
from core.settings import Settings
from core.targets.azure_search import RETRIES, AzureSearchTarget, escape_lucene
from core.targets.base import QueryVectors
from core.targets.mapping import FieldMapping
from tests.support.azure_search import (
    API_VERSIONS,
    AzureSearchTestServer,
    LocalIndex,
    index_definition,
    index_documents,
)
from tests.support.search_ranking import parse_simple
from tests.support.target_corpus import shared_target_corpus

pytestmark = [pytest.mark.integration, pytest.mark.slow]

KEY = "test-search-key"
PREFIX = "https://contoso.blob.core.windows.net/content/"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return shared_target_corpus(tmp_path_factory)


@pytest.fixture(scope="module")
def service(corpus):
    from core.models.local import local_reranker

    documents = index_documents(corpus.chunks, corpus.vectors, prefix=PREFIX)
    raw = corpus.model.model
    indexes = {
        "norman": LocalIndex(index_definition("norman", dimensions=384), documents, vectorize=raw.embed_query),
        "norman-raw": LocalIndex(index_definition("norman-raw", dimensions=384, vectorizer=False), documents),
        "norman-novec": LocalIndex(index_definition("norman-novec", dimensions=None, semantic=False),
                                   [{k: v for k, v in d.items() if k != "contentVector"} for d in documents]),
        "norman-small": LocalIndex(index_definition("norman-small", dimensions=3, vectorizer=False),
                                   [{**d, "contentVector": [1.0, 0.0, 0.0]} for d in documents]),
    }
    with AzureSearchTestServer(indexes, api_key=KEY, reranker=local_reranker()) as server:
        yield server


@pytest.fixture()
def server(service):
    service.requests.clear()
    service.fail_next.clear()
    return service


def _target(server, index, corpus=None, **kw):
    from azure.core.credentials import AzureKeyCredential

    vectors = QueryVectors(corpus.model.model) if corpus is not None else None
    return AzureSearchTarget(f"azure-search:{index}", server.endpoint, index, AzureKeyCredential(KEY),
                             vectors=vectors, fields=FieldMapping(document_prefix=PREFIX), **kw)


def test_setups_description_and_inferred_mapping(server, corpus):
    target = _target(server, "norman", corpus)
    keys = [s.key for s in target.setups()]
    assert keys == ["keyword", "keyword-full", "dense", "hybrid", "keyword+semantic", "keyword-full+semantic",
                    "dense+semantic", "hybrid+semantic"]
    d = target.describe()
    assert (d.engine, d.index, d.n_chunks, d.n_documents) == ("azure-ai-search", "norman", len(corpus.chunks), 10)
    assert dict(d.fields) == {"key": "id", "text": "content", "document": "sourcefile", "page": "sourcepage",
                              "vector": "contentVector", "semantic_configuration": "default"}
    assert d.pages_unknown == "no chunk read holds a page in field 'sourcepage'"  # the passages have no pages
    assert "text: 'content' (by its name)" in d.inferred
    assert "vector: 'contentVector' (the only vector field)" in d.inferred
    assert d.fingerprint == target.describe().fingerprint  # stable
    assert KEY not in repr(d.to_dict())
    assert target.missing(["Normans_p00.txt", "Normans_p42.txt"]) == ["Normans_p42.txt"]
    # only reads: the definition, its statistics, and searches
    assert {(r.method, r.path) for r in server.requests} <= {
        ("GET", "/indexes('norman')"), ("GET", "/indexes('norman')/search.stats"),
        ("POST", "/indexes('norman')/docs/search.post.search")}
    target.close()


def test_every_request_names_a_known_api_version_and_the_key(server, corpus):
    target = _target(server, "norman", corpus)
    target.search("Who ruled Normandy?", target.setups()[0], 10)
    assert server.requests
    for r in server.requests:
        assert r.query["api-version"] in API_VERSIONS
        assert r.query["api-version"] == "2026-04-01"  # azure-search-documents 12.0.0's default
        assert {k.lower(): v for k, v in r.headers.items()}["api-key"] == KEY
    target.close()


def test_keyword_requests_and_hits(server, corpus):
    target = _target(server, "norman", corpus)
    setups = {s.key: s for s in target.setups()}
    question = "In what country is Normandy located?"
    hits = target.search(question, setups["keyword"], 10)
    body = server.searches()[-1]
    assert body == {"search": question, "queryType": "simple", "select": "id,content,sourcefile,sourcepage", "top": 10}
    assert hits and len(hits) <= 10
    # the order is the service's: BM25 over the searchable fields (reference: the service's ranking module)
    bm25 = server.indexes["norman"].bm25().scores(parse_simple(question))
    best = max(bm25, key=lambda i: (bm25[i], -i))
    assert hits[0].document_id == corpus.chunks[best].document_id
    assert len(hits) == min(10, len(bm25))
    assert all(h.document_id.startswith("Normans_p0") and h.chunk_id.startswith("doc") for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    target.search(question, setups["keyword-full"], 5)
    body = server.searches()[-1]
    assert body["queryType"] == "full" and body["search"] == "In what country is Normandy located\\?"
    assert escape_lucene("a:b (c) -d") == "a\\:b \\(c\\) \\-d"
    target.close()


def test_dense_with_the_index_vectorizer_and_with_ragtunes_model(server, corpus):
    question = "When were the Normans in Normandy?"
    target = _target(server, "norman", corpus)
    dense = {s.key: s for s in target.setups()}["dense"]
    assert dense.embedding_model is None and dense.option("vectorizer") == "openai"
    target.search(question, dense, 10)
    assert server.searches()[-1] == {"queryType": "simple", "select": "id,content,sourcefile,sourcepage", "top": 10,
                                     "vectorQueries": [{"text": question, "k": 10, "fields": "contentVector",
                                                        "kind": "text"}]}
    target.close()
    raw = _target(server, "norman-raw", corpus)
    dense = {s.key: s for s in raw.setups()}["dense"]
    assert dense.embedding_model == corpus.model.model_id
    hits = raw.search(question, dense, 10)
    vq = server.searches()[-1]["vectorQueries"][0]
    assert vq["kind"] == "vector" and vq["fields"] == "contentVector" and vq["k"] == 10
    reference = corpus.model.model.embed_query(question)
    assert np.allclose(vq["vector"], reference, atol=1e-6)
    # the service's cosine score, 1 / (2 - cos), of the best hit, recomputed from the vectors
    best = next(i for i, c in enumerate(corpus.chunks) if c.document_id == hits[0].document_id)
    cosine = float(np.dot(reference, corpus.vectors[best]) / np.linalg.norm(reference) / np.linalg.norm(corpus.vectors[best]))
    assert hits[0].score == pytest.approx(1.0 / (2.0 - cosine), abs=1e-5)
    raw.close()


def test_hybrid_and_semantic_requests(server, corpus):
    question = "From which countries did the Norse originate?"
    target = _target(server, "norman", corpus)
    setups = {s.key: s for s in target.setups()}
    target.search(question, setups["hybrid"], 10)
    body = server.searches()[-1]
    assert body["search"] == question and body["vectorQueries"][0]["k"] == 50
    hits = target.search(question, setups["keyword+semantic"], 10)
    body = server.searches()[-1]
    assert body["queryType"] == "semantic" and body["semanticConfiguration"] == "default"
    assert all(0.0 <= h.score <= 4.0 for h in hits)  # @search.rerankerScore's documented range
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    target.search(question, setups["dense+semantic"], 10)
    body = server.searches()[-1]
    assert body["semanticQuery"] == question and "search" not in body
    target.close()


def test_keyword_full_semantic_keeps_the_full_syntax_and_asks_the_ranker(server, corpus):
    # the service documents two ways to ask for the semantic ranker: queryType semantic (simple
    # syntax only) or semanticQuery, plain text, with any query type; full syntax needs the second
    question = "In what country is Normandy located?"
    target = _target(server, "norman", corpus)
    setups = {s.key: s for s in target.setups()}
    hits = target.search(question, setups["keyword-full+semantic"], 10)
    body = server.searches()[-1]
    assert body == {"search": "In what country is Normandy located\\?", "queryType": "full",
                    "semanticQuery": question, "semanticConfiguration": "default",
                    "select": "id,content,sourcefile,sourcepage", "top": 10}
    assert hits and all(0.0 <= h.score <= 4.0 for h in hits)  # @search.rerankerScore's documented range
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    # the ranker reranked the full-syntax results: the same hits as keyword-full's first 50, reordered
    plain = target.search(question, setups["keyword-full"], 50)
    assert {h.chunk_id for h in hits} <= {h.chunk_id for h in plain}
    # keyword+semantic still asks with queryType semantic (simple syntax), its text unescaped
    target.search(question, setups["keyword+semantic"], 10)
    body = server.searches()[-1]
    assert (body["queryType"], body["search"], "semanticQuery" in body) == ("semantic", question, False)
    target.close()


def paged_documents(corpus):
    """Index documents as Azure's RAG samples write them: chunk n of a passage is its page n, in
    ``sourcepage`` as ``<passage>#page=<n>`` beside ``sourcefile``."""
    documents, seen = index_documents(corpus.chunks, None), {}
    for d, c in zip(documents, corpus.chunks):
        seen[c.document_id] = seen.get(c.document_id, 0) + 1
        d["sourcepage"] = f"{c.document_id}#page={seen[c.document_id]}"
    return documents


def test_pages_come_from_the_sourcepage_beside_sourcefile_or_are_said_unknown(corpus):
    from azure.core.credentials import AzureKeyCredential

    paged = paged_documents(corpus)
    indexes = {"paged": LocalIndex(index_definition("paged", dimensions=None, semantic=False), paged),
               "unpaged": LocalIndex(index_definition("unpaged", dimensions=None, semantic=False),
                                     [{**d, "sourcepage": d["sourcefile"]} for d in paged])}
    with AzureSearchTestServer(indexes, api_key=KEY) as server:
        target = AzureSearchTarget("paged", server.endpoint, "paged", AzureKeyCredential(KEY))
        d = target.describe()
        assert (dict(d.fields)["document"], dict(d.fields)["page"], d.pages_unknown) == (
            "sourcefile", "sourcepage", None)
        assert ("page: 'sourcepage' (by its name: a page reference such as X.pdf#page=3 beside the document field "
                "'sourcefile')") in d.inferred
        hits = target.search("Who was Rollo?", target.setups()[0], 10)
        assert server.searches()[-1]["select"] == "id,content,sourcefile,sourcepage"
        # each hit's page is its chunk's position in its passage, as written above
        by_id = {d["id"]: d for d in paged}
        assert hits and [h.pages for h in hits] == [(int(by_id[h.chunk_id]["sourcepage"].rsplit("=", 1)[1]),)
                                                    for h in hits]
        assert all(h.document_id == by_id[h.chunk_id]["sourcefile"] for h in hits)
        target.close()
        target = AzureSearchTarget("unpaged", server.endpoint, "unpaged", AzureKeyCredential(KEY))
        assert target.describe().pages_unknown == "no chunk read holds a page in field 'sourcepage'"
        assert all(h.pages == () for h in target.search("Who was Rollo?", target.setups()[0], 10))
        target.close()


def test_an_index_without_vectors_offers_keyword_setups_and_says_why(server):
    target = _target(server, "norman-novec")
    assert [s.key for s in target.setups()] == ["keyword", "keyword-full"]
    reasons = {u.key: u.reason for u in target.describe().unavailable}
    assert reasons == {"dense*, hybrid*": "the index has no vector field: keyword setups only",
                       "*+semantic": "the index has no semantic configuration"}
    target.close()


def test_dimensions_that_differ_leave_dense_out_with_a_clear_reason(server, corpus):
    target = _target(server, "norman-small", corpus)
    assert "dense" not in [s.key for s in target.setups()]
    reason = {u.key: u.reason for u in target.describe().unavailable}["dense*, hybrid*"]
    assert reason == (f"azure-search:norman-small: vector field 'contentVector' holds 3-dimensional vectors but "
                      f"{corpus.model.model_id} gives 384: configure the embedding model that built the index "
                      "(RAGTUNE_EMBEDDING_PROVIDER / RAGTUNE_EMBEDDING_MODEL, or --embedding-model)")
    target.close()


def test_a_bad_mapping_fails_before_any_search(server, corpus):
    from azure.core.credentials import AzureKeyCredential

    with pytest.raises(ConfigError, match="fields.text names 'body', which the index lacks"):
        AzureSearchTarget("prod", server.endpoint, "norman", AzureKeyCredential(KEY), fields=FieldMapping(text="body"))
    assert server.searches() == []


def test_429_and_503_are_retried_after_retry_after(server, corpus):
    target = _target(server, "norman", corpus)
    server.fail_next[:] = [(429, {"Retry-After": "0.4"}), (503, {"Retry-After": "0.3"})]
    start = len(server.requests)
    hits = target.search("Who was Rollo?", target.setups()[0], 5)
    tries = server.requests[start:]
    assert len(tries) == 3 and hits
    assert tries[1].received - tries[0].received >= 0.4 - 0.02
    assert tries[2].received - tries[1].received >= 0.3 - 0.02
    server.fail_next[:] = [(503, {"Retry-After": "0"})] * (RETRIES + 1)
    with pytest.raises(TargetError, match=r"target azure-search:norman: searching index norman .* \(HTTP 503\)"):
        target.search("Who was Rollo?", target.setups()[0], 5)
    target.close()


def test_refusals_and_unreachable_services_are_target_errors(server, corpus):
    from azure.core.credentials import AzureKeyCredential

    with pytest.raises(TargetError, match=r"\(HTTP 401\)") as err:
        AzureSearchTarget("prod", server.endpoint, "norman", AzureKeyCredential("wrong-key"))
    assert "wrong-key" not in str(err.value)
    with pytest.raises(TargetError, match=r"\(HTTP 404\): No index with the name 'nope'"):
        AzureSearchTarget("prod", server.endpoint, "nope", AzureKeyCredential(KEY))
    import socket

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    started = time.monotonic()
    with pytest.raises(TargetError, match="ServiceRequestError"):
        AzureSearchTarget("prod", f"http://127.0.0.1:{port}", "norman", AzureKeyCredential(KEY),
                          client_kwargs={"retry_total": 0})
    assert time.monotonic() - started < 30


def test_chunks_of_a_document(server, corpus):
    target = _target(server, "norman", corpus)
    found = target.chunks_of(["Normans_p01.txt", "absent.txt"])
    assert list(found) == ["Normans_p01.txt"]
    expected = [c.text for c in corpus.chunks if c.document_id == "Normans_p01.txt"]
    assert [h.text for h in found["Normans_p01.txt"]] == expected
    assert "search.in(sourcefile" in server.searches()[-1]["filter"]
    target.close()


def test_settings_choose_the_credential_and_hide_the_key():
    from azure.core.credentials import AzureKeyCredential
    from azure.identity import DefaultAzureCredential

    keyless = Settings.from_env({})
    assert isinstance(keyless.search_credential(), DefaultAzureCredential)
    with pytest.raises(ConfigError, match="needs RAGTUNE_SEARCH_API_KEY"):
        keyless.search_credential("key")
    keyed = Settings.from_env({"RAGTUNE_SEARCH_API_KEY": "s3cret-key", "RAGTUNE_SEARCH_ENDPOINT": "https://x"})
    assert isinstance(keyed.search_credential(), AzureKeyCredential)
    assert isinstance(keyed.search_credential("entra"), DefaultAzureCredential)
    assert "s3cret-key" not in repr(keyed)


def test_the_service_refuses_an_api_version_it_does_not_know(server):
    from azure.core.credentials import AzureKeyCredential

    with pytest.raises(TargetError, match=r"\(HTTP 400\): Invalid or missing api-version"):
        AzureSearchTarget("prod", server.endpoint, "norman", AzureKeyCredential(KEY),
                          client_kwargs={"api_version": "2019-05-06"})
    assert server.requests[-1].query["api-version"] == "2019-05-06"


def test_chunks_of_a_document_past_one_answer_are_read_in_pages():
    # 2,345 chunks of one document: one answer of the service holds at most 1,000, so they are
    # read in three pages (skip 0, 1,000, 2,000), every chunk once
    from azure.core.credentials import AzureKeyCredential

    documents = [{"id": f"c{i:05d}", "content": f"part {i} of the long report", "sourcefile": "long.pdf",
                  "sourcepage": f"long.pdf#page={i // 3 + 1}"} for i in range(2345)]
    documents.append({"id": "other", "content": "a short note", "sourcefile": "short.txt", "sourcepage": "short.txt"})
    indexes = {"long": LocalIndex(index_definition("long", dimensions=None, semantic=False), documents)}
    with AzureSearchTestServer(indexes, api_key=KEY) as server:
        target = AzureSearchTarget("long", server.endpoint, "long", AzureKeyCredential(KEY))
        before = len(server.searches())
        found = target.chunks_of(["long.pdf"])
        reads = [(s.get("skip"), s.get("top")) for s in server.searches()[before:] if s.get("filter")]
        target.close()
    assert sorted(h.chunk_id for h in found["long.pdf"]) == [f"c{i:05d}" for i in range(2345)]
    assert reads == [(0, 1000), (1000, 1000), (2000, 1000)]
