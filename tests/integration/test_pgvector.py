"""PostgreSQL + pgvector (real server), what only this backend has: quoted names, the HNSW
index against exact search, wide vectors (halfvec index), OR keyword matching, and the
connection failure message. The shared contract is in ``test_vectorstore_contract.py``.

The server comes from ``RAGTUNE_TEST_PG_DSN``: ``bash scripts/services/postgres.sh start`` starts one
and ``eval "$(bash scripts/services/postgres.sh env)"`` sets the variable (``scripts/test.sh``
does both). Without it the tests fail (they are never skipped).
"""

from __future__ import annotations

import os
import socket
import uuid

import numpy as np
import pytest

from core.chunking.base import Chunk
from core.errors import StoreError
from core.vectorstores.pgvector import PGVectorConfig, PGVectorStore, open_connection
from tests.support.vectors import TableModel, chunks, docs, table_model

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def config():
    if not os.environ.get("RAGTUNE_TEST_PG_DSN"):
        pytest.fail(
            "RAGTUNE_TEST_PG_DSN is not set: start PostgreSQL with `bash scripts/services/postgres.sh start` "
            "and run `eval \"$(bash scripts/services/postgres.sh env)\"`"
        )
    cfg = PGVectorConfig(dsn=os.environ["RAGTUNE_TEST_PG_DSN"])
    try:
        open_connection(cfg).close()
    except StoreError as exc:
        pytest.fail(f"RAGTUNE_TEST_PG_DSN is set but the server does not answer ({exc})")
    return cfg


def unique_name(prefix: str = "ragtune_test") -> str:
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


@pytest.fixture()
def make_store(config):
    made = []

    def make(model=None, name=None, **kwargs):
        s = PGVectorStore(model or table_model(), config, name or unique_name(), **kwargs)
        made.append(s)
        return s

    yield make
    for s in made:
        s.delete_collection()
        s.close()


def test_keyword_matches_any_word(make_store):
    store = make_store()
    store.add_documents(chunks())
    # "zebra" in c1 and c3, "mat" in c1 only; "the" is a stop word. With AND semantics only c1
    # would match; with OR both do (ts_rank_cd puts c3, with two covers of "zebra", first).
    hits = store.search("the zebra mat", k=4, search_mode="keyword")
    assert sorted(docs(hits)) == ["c1.txt", "c3.txt"]
    assert docs(store.search("mat", k=4, search_mode="keyword")) == ["c1.txt"]
    assert store.search("the and", k=4, search_mode="keyword") == []  # stop words only


def test_names_keep_their_case(make_store):
    suffix = uuid.uuid4().hex[:8]
    upper = make_store(name=f"RagTune_Case_{suffix}")
    lower = make_store(name=f"ragtune_case_{suffix}")
    upper.add_documents(chunks())
    assert upper.count() == 4 and not lower.exists()  # quoted identifiers are not folded
    assert docs(upper.search("markets", k=1)) == ["c4.txt"]


def test_hnsw_matches_exact_search(config, make_store):
    rng = np.random.default_rng(1)
    n, dim = 600, 16
    vectors = rng.normal(size=(n, dim)).astype(np.float32)
    texts = [f"doc {i}" for i in range(n)]
    table = dict(zip(texts, vectors.tolist()))
    table["q"] = rng.normal(size=dim).tolist()
    name = unique_name()
    approx = make_store(TableModel(table), name)
    many = [Chunk(t, f"id{i:04d}", {"document_id": f"{i}.txt", "sequence_number": 0}) for i, t in enumerate(texts)]
    approx.add_documents(many)
    approx.flush()
    approx.connection.execute("SET enable_seqscan = off")  # make the planner use the HNSW index
    plan = "\n".join(r[0] for r in approx.connection.execute(
        f'EXPLAIN SELECT id FROM "{config.schema}"."{name}" ORDER BY embedding <=> %s::vector LIMIT 10',
        (np.asarray(table["q"], dtype=np.float32),),
    ).fetchall())
    assert "hnsw" in plan.lower() or "Index Scan" in plan
    exact = PGVectorStore(approx.embedding_model, config, name, exact_search=True)
    try:
        got = [h.chunk.chunk_id for h in approx.search("q", k=10)]
        want = [h.chunk.chunk_id for h in exact.search("q", k=10)]
    finally:
        exact.close()
    # exact ranking by hand: numpy cosine similarities
    sims = vectors @ np.asarray(table["q"], dtype=np.float32)
    sims /= np.linalg.norm(vectors, axis=1) * np.linalg.norm(table["q"])
    assert want == [f"id{i:04d}" for i in np.argsort(-sims)[:10]]
    assert len(set(got) & set(want)) >= 9  # HNSW is approximate; ef_search = 40 finds nearly all


@pytest.mark.parametrize("dim", [2048, 4096])
def test_wide_vectors_index_and_search(config, make_store, dim):
    def unit(i):
        v = np.zeros(dim, dtype=np.float32)
        v[i] = 1.0
        return v

    table = {
        "a": unit(0).tolist(),
        "b": (0.8 * unit(0) + 0.6 * unit(1)).tolist(),
        "c": (0.6 * unit(0) + 0.8 * unit(2)).tolist(),
        "q": unit(0).tolist(),
    }
    name = unique_name()
    s = make_store(TableModel(table), name)
    wide = [Chunk(t, f"id-{t}", {"document_id": f"{t}.txt", "sequence_number": 0}) for t in "abc"]
    assert s.add_documents(wide) == 3
    s.flush()
    hits = s.search("q", k=3)
    assert docs(hits) == ["a.txt", "b.txt", "c.txt"]
    # halfvec keeps about 3 significant digits
    assert [h.score for h in hits] == [pytest.approx(x, abs=2e-3) for x in (1.0, 0.8, 0.6)]
    indexes = [r[0] for r in s.connection.execute(
        "SELECT indexdef FROM pg_indexes WHERE schemaname = %s AND tablename = %s", (config.schema, name)
    ).fetchall()]
    hnsw = [d for d in indexes if "hnsw" in d]
    if dim <= 4000:
        assert len(hnsw) == 1 and "halfvec_cosine_ops" in hnsw[0] and f"halfvec({dim})" in hnsw[0]
        s.connection.execute("SET enable_seqscan = off")
        plan = "\n".join(r[0] for r in s.connection.execute(
            f'EXPLAIN SELECT id FROM "{config.schema}"."{name}" '
            f"ORDER BY (embedding::halfvec({dim})) <=> (%s::vector)::halfvec({dim}) LIMIT 3",
            (np.asarray(table["q"], dtype=np.float32),),
        ).fetchall())
        assert "Index Scan" in plan  # the search's expression matches the index
        assert docs(s.search("q", k=3)) == ["a.txt", "b.txt", "c.txt"]
    else:
        assert hnsw == []  # no HNSW beyond 4,000 dimensions: exact scans, never a failed CREATE INDEX


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_connection_failure_names_host_and_port_not_password():
    port = closed_port()
    cfg = PGVectorConfig(host="127.0.0.1", port=port, password="s3cret-pw", dbname="ragtune")
    s = PGVectorStore(TableModel({"x": [1.0]}), cfg, "ragtune_unreachable")
    with pytest.raises(StoreError) as info:
        s.count()
    message = str(info.value)
    assert f"127.0.0.1:{port}" in message and "Check that the server runs" in message
    assert "s3cret-pw" not in message
    dsn_cfg = PGVectorConfig(dsn=f"postgresql://postgres:s3cret-pw@127.0.0.1:{port}/ragtune")
    with pytest.raises(StoreError) as info:
        open_connection(dsn_cfg)
    assert f"127.0.0.1:{port}" in str(info.value) and "s3cret-pw" not in str(info.value)
    assert "s3cret-pw" not in repr(dsn_cfg) and "s3cret-pw" not in repr(cfg)
