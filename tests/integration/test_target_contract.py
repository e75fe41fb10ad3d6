"""Every target kind passes one contract, on squad-mini's Normans passages written into each
engine with a user-style schema unlike ragtune's own (other field names, a page column, a
document kept as a path, a blob URL or a JSON key, another vector metric):

- a PostgreSQL + pgvector table (``chunk_id`` bigserial, ``body``, ``doc_path`` as
  ``./corpus/<name>``, ``page_no``, ``embedding`` with an HNSW cosine index, ``body_tsv``
  generated in ``english``) and a LangChain-style one (``cmetadata.source``, no tsvector);
- a Qdrant collection in the client's local mode (a named vector ``text-dense``, LangChain
  payload ``page_content`` / ``metadata.source`` as a blob URL);
- a Milvus collection on the test server and in a Milvus Lite database (``pk`` auto id,
  ``passage`` with a BM25 function into ``bm25``, ``source``, ``page_no``, ``emb`` with an IP
  index);
- an Azure AI Search index on the local service (``tests.support.azure_search``);
- the collection ragtune builds from the passages (``core.evaluation.collection_target``).

References for expected values: the dense top hit is the exact cosine nearest chunk computed
with numpy from the same vectors; counts and documents by hand from the ten passages.
"""

from __future__ import annotations

import json
import uuid

import numpy as np
import pytest

from core.errors import ConfigError, TargetError
from core.targets.base import QueryVectors, Target
from core.targets.mapping import FieldMapping
from tests.support.services import service
from tests.support.target_corpus import shared_target_corpus

pytestmark = [pytest.mark.integration, pytest.mark.slow]

KINDS = ("pgvector", "pgvector-langchain", "qdrant", "milvus-server", "milvus-lite", "azure-search", "ragtune")
QUESTION = "Who was the duke in the battle of Hastings?"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return shared_target_corpus(tmp_path_factory)


@pytest.fixture(scope="module")
def pg_tables(corpus):
    import psycopg

    dsn = service("RAGTUNE_TEST_PG_DSN", "postgres.sh")
    suffix = uuid.uuid4().hex[:8]
    team, lc = f"team_chunks_{suffix}", f"lc_embedding_{suffix}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {team} (chunk_id bigserial PRIMARY KEY, body text NOT NULL, doc_path text, "
                     "page_no int, embedding vector(384), body_tsv tsvector GENERATED ALWAYS AS "
                     "(to_tsvector('english', body)) STORED)")
        conn.execute(f"CREATE INDEX ON {team} USING hnsw (embedding vector_cosine_ops)")
        conn.execute(f"CREATE TABLE {lc} (id uuid PRIMARY KEY, document text, cmetadata jsonb, embedding vector)")
        for chunk, vector in zip(corpus.chunks, corpus.vectors):
            literal = "[" + ",".join(repr(float(x)) for x in vector) + "]"
            conn.execute(f"INSERT INTO {team} (body, doc_path, page_no, embedding) VALUES (%s, %s, NULL, %s::vector)",
                         (chunk.text, f"./corpus/{chunk.document_id}", literal))
            conn.execute(f"INSERT INTO {lc} VALUES (%s, %s, %s, %s::vector)",
                         (str(uuid.uuid4()), chunk.text, json.dumps({"source": chunk.document_id, "page": None}),
                          literal))
    yield dsn, team, lc
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"DROP TABLE IF EXISTS {team}")
        conn.execute(f"DROP TABLE IF EXISTS {lc}")


@pytest.fixture(scope="module")
def qdrant_folder(corpus, tmp_path_factory):
    from qdrant_client import QdrantClient, models

    folder = tmp_path_factory.mktemp("qdrant")
    client = QdrantClient(path=str(folder))
    client.create_collection("team_docs", vectors_config={
        "text-dense": models.VectorParams(size=384, distance=models.Distance.COSINE)})
    client.upsert("team_docs", [models.PointStruct(
        id=i, vector={"text-dense": [float(x) for x in v]},
        payload={"page_content": c.text,
                 "metadata": {"source": f"https://contoso.blob.core.windows.net/docs/{c.document_id}"}})
        for i, (c, v) in enumerate(zip(corpus.chunks, corpus.vectors))])
    client.close()
    return str(folder)


def _milvus_collection(client, name, corpus):
    from pymilvus import DataType, Function, FunctionType

    if client.has_collection(name):
        client.drop_collection(name)
    schema = client.create_schema(auto_id=True, enable_dynamic_field=False)
    schema.add_field("pk", DataType.INT64, is_primary=True)
    schema.add_field("passage", DataType.VARCHAR, max_length=8000, enable_analyzer=True)
    schema.add_field("source", DataType.VARCHAR, max_length=500)
    schema.add_field("page_no", DataType.INT64)
    schema.add_field("emb", DataType.FLOAT_VECTOR, dim=384)
    schema.add_field("bm25", DataType.SPARSE_FLOAT_VECTOR)
    schema.add_function(Function(name="passage_bm25", function_type=FunctionType.BM25,
                                 input_field_names=["passage"], output_field_names=["bm25"]))
    index = client.prepare_index_params()
    index.add_index(field_name="emb", index_type="FLAT", metric_type="IP")
    index.add_index(field_name="bm25", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
    client.create_collection(name, schema=schema, index_params=index)
    client.insert(name, [{"passage": c.text, "source": c.document_id, "page_no": 0, "emb": [float(x) for x in v]}
                         for c, v in zip(corpus.chunks, corpus.vectors)])
    client.flush(name)


@pytest.fixture(scope="module")
def milvus_server(corpus):
    from pymilvus import MilvusClient

    uri = service("RAGTUNE_TEST_MILVUS_URI", "milvus.sh")
    name = f"team_docs_{uuid.uuid4().hex[:8]}"
    client = MilvusClient(uri=uri)
    _milvus_collection(client, name, corpus)
    yield uri, name
    client.drop_collection(name)
    client.close()


@pytest.fixture(scope="module")
def milvus_lite(corpus, tmp_path_factory):
    from core.vectorstores.milvus import MilvusLiteConfig, open_client

    path = str(tmp_path_factory.mktemp("lite") / "team.db")
    client = open_client(MilvusLiteConfig(path))
    _milvus_collection(client, "team_docs", corpus)
    client.close()
    return path


@pytest.fixture(scope="module")
def azure_service(corpus):
    from tests.support.azure_search import AzureSearchTestServer, LocalIndex, index_definition, index_documents

    documents = index_documents(corpus.chunks, corpus.vectors, prefix="https://contoso.blob.core.windows.net/c/")
    index = LocalIndex(index_definition("norman", dimensions=384, vectorizer=False, semantic=False), documents)
    with AzureSearchTestServer({"norman": index}) as server:
        yield server


@pytest.fixture(scope="module")
def ragtune_collection(corpus, tmp_path_factory):
    return tmp_path_factory.mktemp("built") / "milvus.db"


def open_kind(kind, corpus, pg_tables, qdrant_folder, milvus_server, milvus_lite, azure_service, built,
              fields=None) -> Target:
    vectors = QueryVectors(corpus.model.model)
    if kind == "pgvector":
        from core.targets.pgvector_table import PgvectorTableTarget
        from core.vectorstores import PGVectorConfig

        return PgvectorTableTarget("team-pg", PGVectorConfig(dsn=pg_tables[0]), pg_tables[1],
                                   fields=fields or FieldMapping(document="doc_path", document_prefix="corpus/"),
                                   vectors=vectors)
    if kind == "pgvector-langchain":
        from core.targets.pgvector_table import PgvectorTableTarget
        from core.vectorstores import PGVectorConfig

        return PgvectorTableTarget("lc-pg", PGVectorConfig(dsn=pg_tables[0]), f"public.{pg_tables[2]}",
                                   fields=fields, vectors=vectors)
    if kind == "qdrant":
        from core.targets.qdrant import QdrantTarget

        return QdrantTarget("team-qdrant", qdrant_folder, "team_docs", fields=fields, vectors=vectors)
    if kind in ("milvus-server", "milvus-lite"):
        from core.targets.milvus_collection import MilvusCollectionTarget

        location, collection = milvus_server if kind == "milvus-server" else (milvus_lite, "team_docs")
        return MilvusCollectionTarget(kind, location, collection, fields=fields, vectors=vectors)
    if kind == "azure-search":
        from azure.core.credentials import AzureKeyCredential

        from core.targets.azure_search import AzureSearchTarget

        return AzureSearchTarget("azure", azure_service.endpoint, "norman", AzureKeyCredential(azure_service.api_key),
                                 fields=fields or FieldMapping(document_prefix="https://contoso.blob.core.windows.net/c/"),
                                 vectors=vectors)
    from core.evaluation.collection_target import CollectionTarget

    return CollectionTarget.build(corpus.docs, model=corpus.model, out_dir=built.parent,
                                  store_config=_lite(built), vectors=vectors, show_progress=False)


def _lite(path):
    from core.vectorstores import MilvusLiteConfig

    return MilvusLiteConfig(str(path))


@pytest.fixture(params=KINDS)
def target(request, corpus, pg_tables, qdrant_folder, milvus_server, milvus_lite, azure_service, ragtune_collection):
    t = open_kind(request.param, corpus, pg_tables, qdrant_folder, milvus_server, milvus_lite, azure_service,
                  ragtune_collection)
    yield request.param, t
    t.close()


#: The setups each kind offers over these schemas (worked out from each module's docstring).
EXPECTED_SETUPS = {
    "pgvector": ["keyword", "dense", "hybrid-rrf-k60"],
    "pgvector-langchain": ["dense"],  # no tsvector column; its vector column declares no dimension
    "qdrant": ["dense"],
    "milvus-server": ["keyword", "dense", "hybrid-rrf-k60"],
    "milvus-lite": ["keyword", "dense", "hybrid-rrf-k60"],
    "azure-search": ["keyword", "keyword-full", "dense", "hybrid"],
    "ragtune": ["keyword", "dense", "hybrid-rrf-k60", "hybrid-weighted-a0.5"],
}


def test_the_contract(target, corpus):
    kind, t = target
    assert isinstance(t, Target)
    keys = [s.key for s in t.setups()]
    assert keys == EXPECTED_SETUPS[kind]
    names = {c.document_id for c in corpus.chunks}
    for setup in t.setups():
        hits = t.search(QUESTION, setup, 5)
        assert 0 < len(hits) <= 5, setup.key
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True), setup.key
        assert {h.document_id for h in hits} <= names, setup.key
        assert all(h.chunk_id and h.text for h in hits), setup.key
    d = t.describe()
    assert (d.n_chunks, d.n_documents) == (len(corpus.chunks), len(names))
    assert d.fingerprint == t.describe().fingerprint
    json.dumps(d.to_dict())
    assert "password" not in json.dumps(d.to_dict()).lower()
    assert t.missing(["Normans_p00.txt", "Normans_p99.txt"]) == ["Normans_p99.txt"]
    expected = sorted(c.text for c in corpus.chunks if c.document_id == "Normans_p01.txt")
    assert sorted(h.text for h in t.chunks_of(["Normans_p01.txt", "absent.txt"])["Normans_p01.txt"]) == expected


def test_dense_top_hit_is_the_exact_nearest_chunk(target, corpus):
    kind, t = target
    dense = next(s for s in t.setups() if s.method == "dense")
    query = corpus.model.model.embed_query(QUESTION)
    cosine = corpus.vectors @ query / np.linalg.norm(corpus.vectors, axis=1) / np.linalg.norm(query)
    order = np.argsort(-cosine)
    hits = t.search(QUESTION, dense, 3)
    assert [h.text for h in hits] == [corpus.chunks[i].text for i in order[:3]], kind


def test_a_mapping_that_names_a_missing_field_is_an_error(corpus, pg_tables, qdrant_folder, milvus_server,
                                                          milvus_lite, azure_service, ragtune_collection):
    for kind in ("pgvector", "qdrant", "milvus-lite", "azure-search"):
        with pytest.raises(ConfigError, match="fields.text names 'nope', which the index lacks"):
            open_kind(kind, corpus, pg_tables, qdrant_folder, milvus_server, milvus_lite, azure_service,
                      ragtune_collection, fields=FieldMapping(text="nope"))


def test_pgvector_sessions_are_read_only(corpus, pg_tables):
    import psycopg

    from core.targets.pgvector_table import PgvectorTableTarget
    from core.vectorstores import PGVectorConfig

    t = PgvectorTableTarget("team-pg", PGVectorConfig(dsn=pg_tables[0]), pg_tables[1],
                            fields=FieldMapping(document="doc_path", document_prefix="corpus/"))
    with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
        t._conn.execute(f"DELETE FROM {pg_tables[1]}")
    assert dict(t.describe().fields)["keyword"] == "body_tsv"
    assert "inferred" not in t.describe().notes
    t.close()


def test_missing_tables_and_collections_are_target_errors(corpus, pg_tables, qdrant_folder, milvus_lite):
    from core.targets.milvus_collection import MilvusCollectionTarget
    from core.targets.pgvector_table import PgvectorTableTarget
    from core.targets.qdrant import QdrantTarget
    from core.vectorstores import PGVectorConfig

    with pytest.raises(TargetError, match="table public.nope does not exist"):
        PgvectorTableTarget("x", PGVectorConfig(dsn=pg_tables[0]), "nope")
    with pytest.raises(TargetError, match="cannot connect to PostgreSQL at 127.0.0.1:1/x as u"):
        PgvectorTableTarget("x", PGVectorConfig(dsn="postgresql://u:s3cret@127.0.0.1:1/x"), "nope")
    with pytest.raises(TargetError, match="collection nope"):
        QdrantTarget("x", qdrant_folder, "nope")
    with pytest.raises(TargetError, match="collection nope does not exist"):
        MilvusCollectionTarget("x", milvus_lite, "nope")


@pytest.mark.parametrize("kind", ["qdrant", "milvus-lite", "azure-search"])
def test_missing_documents_past_the_listing_limit_are_looked_up(kind, monkeypatch, corpus, pg_tables, qdrant_folder,
                                                              milvus_server, milvus_lite, azure_service,
                                                              ragtune_collection):
    import core.targets.azure_search as azure_module
    import core.targets.milvus_collection as milvus_module
    import core.targets.qdrant as qdrant_module

    # three chunks listed, then the listing stops: the rest must be looked up, not called missing
    for module in (qdrant_module, milvus_module):
        monkeypatch.setattr(module, "FINGERPRINT_MAX_CHUNKS", 3)
    monkeypatch.setattr(azure_module, "LIST_MAX", 3)
    monkeypatch.setattr(azure_module, "LIST_PAGE", 2)
    # a lookup finds the id as written, or after the mapping's prefix (the blob URL of Qdrant's payload)
    fields = FieldMapping(document_prefix="https://contoso.blob.core.windows.net/docs/") if kind == "qdrant" else None
    t = open_kind(kind, corpus, pg_tables, qdrant_folder, milvus_server, milvus_lite, azure_service,
                  ragtune_collection, fields=fields)
    try:
        names = sorted({c.document_id for c in corpus.chunks})
        assert t.missing([*names, "Normans_p99.txt"]) == ["Normans_p99.txt"]
    finally:
        t.close()


def test_a_milvus_target_releases_only_what_it_loaded(corpus, milvus_server):
    # Milvus searches loaded collections only: the target loads one that is not loaded and
    # releases it when closed; one the team's app had loaded stays loaded
    from pymilvus import MilvusClient

    from core.targets.milvus_collection import MilvusCollectionTarget

    uri, name = milvus_server
    admin = MilvusClient(uri=uri)
    try:
        admin.release_collection(name)
        assert admin.get_load_state(name)["state"].name == "NotLoad"
        target = MilvusCollectionTarget("t", uri, name, vectors=QueryVectors(corpus.model.model))
        assert admin.get_load_state(name)["state"].name == "Loaded"
        assert all(target.search(QUESTION, setup, 3) for setup in target.setups())
        target.close()
        assert admin.get_load_state(name)["state"].name == "NotLoad"

        admin.load_collection(name)  # the team's app searches it
        target = MilvusCollectionTarget("t", uri, name)
        target.close()
        assert admin.get_load_state(name)["state"].name == "Loaded"
    finally:
        admin.load_collection(name)
        admin.close()


# ---------------------------------------------------------------------------------------------- dotted paths
# A document kept below a JSON field (a Milvus JSON field ``meta``, PostgreSQL's ``cmetadata``,
# Qdrant's payload ``metadata``, an Azure complex field ``meta``): a path none of the first
# records holds is a mapping error before any search; one they hold is searched.


def _milvus_json_collection(client, name, corpus, rows=True):
    from pymilvus import DataType

    if client.has_collection(name):
        client.drop_collection(name)
    schema = client.create_schema(auto_id=True, enable_dynamic_field=False)
    schema.add_field("pk", DataType.INT64, is_primary=True)
    schema.add_field("passage", DataType.VARCHAR, max_length=8000)
    schema.add_field("meta", DataType.JSON)
    schema.add_field("emb", DataType.FLOAT_VECTOR, dim=384)
    index = client.prepare_index_params()
    index.add_index(field_name="emb", index_type="FLAT", metric_type="COSINE")
    client.create_collection(name, schema=schema, index_params=index)
    if rows:
        client.insert(name, [{"passage": c.text, "meta": {"file": c.document_id, "page": 1},
                              "emb": [float(x) for x in v]} for c, v in zip(corpus.chunks, corpus.vectors)])
    client.flush(name)


@pytest.fixture(scope="module")
def json_stores(corpus, pg_tables, tmp_path_factory):
    """Milvus collections with a JSON field ``meta`` (one with the passages, one empty) on the
    test server and in a Milvus Lite database, an empty LangChain-style PostgreSQL table, and an
    Azure AI Search index with a complex field ``meta`` (sub-fields ``file``, ``page``)."""
    import psycopg
    from pymilvus import MilvusClient

    from core.vectorstores.milvus import MilvusLiteConfig, open_client
    from tests.support.azure_search import AzureSearchTestServer, LocalIndex

    suffix = uuid.uuid4().hex[:8]
    uri = service("RAGTUNE_TEST_MILVUS_URI", "milvus.sh")
    server = MilvusClient(uri=uri)
    names = {"docs": f"json_docs_{suffix}", "empty": f"json_empty_{suffix}"}
    _milvus_json_collection(server, names["docs"], corpus)
    _milvus_json_collection(server, names["empty"], corpus, rows=False)
    lite_path = str(tmp_path_factory.mktemp("lite-json") / "json.db")
    lite = open_client(MilvusLiteConfig(lite_path))
    _milvus_json_collection(lite, "json_docs", corpus)
    _milvus_json_collection(lite, "json_empty", corpus, rows=False)
    lite.close()
    empty_table = f"lc_empty_{suffix}"
    with psycopg.connect(pg_tables[0], autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {empty_table} (id uuid PRIMARY KEY, document text, cmetadata jsonb, "
                     "embedding vector)")
    definition = {"name": "meta", "fields": [
        {"name": "id", "type": "Edm.String", "key": True, "filterable": True, "retrievable": True},
        {"name": "content", "type": "Edm.String", "searchable": True, "retrievable": True},
        {"name": "meta", "type": "Edm.ComplexType", "fields": [
            {"name": "file", "type": "Edm.String", "filterable": True, "retrievable": True},
            {"name": "page", "type": "Edm.Int32", "filterable": True, "retrievable": True}]}]}
    documents = [{"id": f"doc{i:05d}", "content": c.text, "meta": {"file": c.document_id, "page": 1}}
                 for i, c in enumerate(corpus.chunks)]
    with AzureSearchTestServer({"meta": LocalIndex(definition, documents)}) as azure:
        yield {"milvus-server": (uri, names["docs"], names["empty"]), "milvus-lite": (lite_path, "json_docs",
                                                                                     "json_empty"),
               "pg-empty": empty_table, "azure": azure}
    for name in names.values():
        server.drop_collection(name)
    server.close()
    with psycopg.connect(pg_tables[0], autocommit=True) as conn:
        conn.execute(f"DROP TABLE IF EXISTS {empty_table}")


def _open_json(kind, fields, corpus, pg_tables, qdrant_folder, json_stores, empty=False) -> Target:
    """The target of ``kind`` whose document is kept below a JSON field, opened with ``fields``."""
    vectors = QueryVectors(corpus.model.model)
    if kind == "pgvector-langchain":
        from core.targets.pgvector_table import PgvectorTableTarget
        from core.vectorstores import PGVectorConfig

        table = json_stores["pg-empty"] if empty else pg_tables[2]
        return PgvectorTableTarget("lc-pg", PGVectorConfig(dsn=pg_tables[0]), f"public.{table}", fields=fields,
                                   vectors=vectors)
    if kind == "qdrant":
        from core.targets.qdrant import QdrantTarget

        return QdrantTarget("team-qdrant", qdrant_folder, "team_docs", fields=fields, vectors=vectors)
    if kind == "azure-search":
        from azure.core.credentials import AzureKeyCredential

        from core.targets.azure_search import AzureSearchTarget

        azure = json_stores["azure"]
        return AzureSearchTarget("azure", azure.endpoint, "meta", AzureKeyCredential(azure.api_key), fields=fields,
                                 vectors=vectors)
    from core.targets.milvus_collection import MilvusCollectionTarget

    location, docs, nothing = json_stores[kind]
    return MilvusCollectionTarget(kind, location, nothing if empty else docs, fields=fields, vectors=vectors)


def _wrong_paths(corpus, pg_tables, json_stores):
    """Per kind: the mapping naming a path the records lack, and the whole error it gives (the
    records read: 20 rows of a table or Milvus collection, 50 Qdrant points, at most all of
    them; the keys are those the passages' records hold, written by the fixtures)."""
    n = len(corpus.chunks)
    return {
        "pgvector-langchain": (FieldMapping(document="cmetadata.nofile"),
                               f"target lc-pg (table public.{pg_tables[2]}): fields.document names 'cmetadata.nofile':"
                               f" no record of the first {min(n, 20)} has it; 'cmetadata' holds: page, source"),
        "qdrant": (FieldMapping(text="metadata.nothing"),
                   f"target team-qdrant (collection team_docs): fields.text names 'metadata.nothing': no record of "
                   f"the first {min(n, 50)} has it; 'metadata' holds: source"),
        "milvus-server": (FieldMapping(document="meta.nofile"),
                          f"target milvus-server (collection {json_stores['milvus-server'][1]}): fields.document names "
                          f"'meta.nofile': no record of the first {min(n, 20)} has it; 'meta' holds: file, page"),
        "milvus-lite": (FieldMapping(document="meta.file", page="meta.nopage"),
                        f"target milvus-lite (collection json_docs): fields.page names 'meta.nopage': no record of "
                        f"the first {min(n, 20)} has it; 'meta' holds: file, page"),
        "azure-search": (FieldMapping(document="meta.nofile"),
                         "target azure (index meta): fields.document names 'meta.nofile', which the index lacks "
                         "('meta' holds: file, page)"),
    }


JSON_KINDS = ("pgvector-langchain", "qdrant", "milvus-server", "milvus-lite", "azure-search")


@pytest.mark.parametrize("kind", JSON_KINDS)
def test_a_dotted_path_no_record_holds_is_a_mapping_error(kind, corpus, pg_tables, qdrant_folder, json_stores):
    assert corpus.chunks and len(corpus.chunks) <= 50  # the expected counts below read all of them up to 20 or 50
    fields, message = _wrong_paths(corpus, pg_tables, json_stores)[kind]
    with pytest.raises(ConfigError) as raised:
        _open_json(kind, fields, corpus, pg_tables, qdrant_folder, json_stores)
    assert str(raised.value) == message


def test_a_path_below_a_leaf_is_a_mapping_error(corpus, pg_tables, qdrant_folder, json_stores):
    # the deepest level some record reaches as a mapping (or the definition lists) is shown
    with pytest.raises(ConfigError) as raised:
        _open_json("milvus-lite", FieldMapping(document="meta.file.name"), corpus, pg_tables, qdrant_folder,
                   json_stores)
    assert str(raised.value).endswith("fields.document names 'meta.file.name': no record of the first "
                                      f"{min(len(corpus.chunks), 20)} has it; 'meta' holds: file, page")
    with pytest.raises(ConfigError) as raised:
        _open_json("azure-search", FieldMapping(document="meta.file.name"), corpus, pg_tables, qdrant_folder,
                   json_stores)
    assert str(raised.value) == ("target azure (index meta): fields.document names 'meta.file.name', which the "
                                 "index lacks ('meta.file' has no sub-fields)")


@pytest.mark.parametrize("kind", JSON_KINDS)
def test_a_dotted_path_the_records_hold_is_searched(kind, corpus, pg_tables, qdrant_folder, json_stores):
    document = {"pgvector-langchain": "cmetadata.source", "qdrant": "metadata.source"}.get(kind, "meta.file")
    prefix = "https://contoso.blob.core.windows.net/docs/" if kind == "qdrant" else ""
    t = _open_json(kind, FieldMapping(document=document, document_prefix=prefix), corpus, pg_tables, qdrant_folder,
                   json_stores)
    try:
        names = sorted({c.document_id for c in corpus.chunks})
        assert dict(t.describe().fields)["document"] == document
        assert (t.describe().n_chunks, t.describe().n_documents) == (len(corpus.chunks), len(names))
        assert t.missing([*names, "Normans_p99.txt"]) == ["Normans_p99.txt"]
        for setup in t.setups():
            hits = t.search(QUESTION, setup, 3)
            assert hits and {h.document_id for h in hits} <= set(names), setup.key
    finally:
        t.close()


@pytest.mark.parametrize("kind", ["pgvector-langchain", "milvus-server", "milvus-lite"])
def test_an_empty_index_is_not_checked_for_dotted_paths(kind, corpus, pg_tables, qdrant_folder, json_stores):
    column = "cmetadata" if kind == "pgvector-langchain" else "meta"
    t = _open_json(kind, FieldMapping(document=f"{column}.nofile"), corpus, pg_tables, qdrant_folder, json_stores,
                   empty=True)
    try:
        assert t.describe().n_chunks == 0
    finally:
        t.close()
