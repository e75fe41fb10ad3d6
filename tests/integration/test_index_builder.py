"""The one index builder (``core.evaluation.indexing.build_index``) on a real Milvus Lite store:
built once, reused when the collection holds the chunks, rebuilt when asked, and a document the
store refuses left out and reported while the others are indexed.

Chunks and vectors come from ``tests/support/vectors.py`` (a lookup-table embedding model), so
every count below is known by hand: four chunks of four documents, one of them made longer than
Milvus's text field holds (``MAX_TEXT_BYTES``).
"""

from __future__ import annotations

import uuid

import pytest

from core.chunking.base import Chunk, make_chunk_id
from core.errors import IndexingError
from core.evaluation.indexing import build_index, cached_model, collection_for, store_config
from core.vectorstores import MilvusLiteConfig, get_vector_store
from core.vectorstores.milvus import MAX_TEXT_BYTES
from core.workspace import Workspace
from tests.support.vectors import TableModel, chunks, table_model

pytestmark = pytest.mark.integration


@pytest.fixture()
def store(tmp_path):
    s = get_vector_store(table_model(), MilvusLiteConfig(str(tmp_path / "m.db")), f"ragtune_test_{uuid.uuid4().hex[:12]}")
    yield s
    s.delete_collection()
    s.close()


def test_built_once_then_reused_then_rebuilt_when_asked(store):
    four = chunks()
    batches = []
    first = build_index(store, four, table_model(), on_batch=batches.append)
    assert (first.reused, first.n_chunks, first.n_left_out, first.n_indexed) == (False, 4, 0, 4)
    assert batches == [4] and store.count() == 4  # one batch: 4 chunks < EMBED_BATCH
    again = build_index(store, four, table_model())
    assert (again.reused, again.embed_s, again.index_s) == (True, 0.0, 0.0) and store.count() == 4
    rebuilt = build_index(store, four, table_model(), reuse=False)
    assert rebuilt.reused is False and store.count() == 4
    # a collection holding another number of chunks is built again
    assert build_index(store, four[:3], table_model()).reused is False and store.count() == 3


def test_a_document_the_store_refuses_is_left_out_and_reported(store):
    long_text = "zebra " * (MAX_TEXT_BYTES // 6 + 1)  # 6 bytes a word: one word more than the field holds
    four = chunks()
    four[1] = Chunk(long_text, make_chunk_id("c2.txt", 0, long_text),
                    {"document_id": "c2.txt", "sequence_number": 0, "pages": [2]})
    model = TableModel({**{c.text: [1.0, 0.0, 0.0] for c in four}})
    failures: list[dict] = []
    built = build_index(store, four, model, build_key="b1", failures=failures)
    assert (built.n_chunks, built.n_left_out, built.n_indexed) == (4, 1, 3) and store.count() == 3
    assert [(f["build"], f["document_id"]) for f in failures] == [("b1", "c2.txt")]
    assert failures[0]["reason"].startswith("not indexed: ")
    # without a list to report in, the store's refusal is raised
    with pytest.raises(IndexingError):
        build_index(store, four, model, reuse=False)


def test_the_workspace_names_the_cache_and_the_default_store(tmp_path):
    workspace = Workspace.at(tmp_path)
    model = cached_model(table_model(), workspace)
    model.embed_documents(["the zebra sat on the mat"])
    assert workspace.embedding_cache == tmp_path / "cache" / "embeddings.sqlite" and workspace.embedding_cache.is_file()
    assert store_config(None, workspace) == MilvusLiteConfig(str(tmp_path / "milvus.db"))
    given = MilvusLiteConfig(str(tmp_path / "other.db"))
    assert store_config(given, workspace) is given
    # the name evaluate gives a collection: sha256 of its parameters' canonical JSON, whatever their order
    assert collection_for("fp", {"method": "recursive", "chunk_size": 256}, "m") == \
        collection_for("fp", {"chunk_size": 256, "method": "recursive"}, "m")
    assert collection_for("fp", {"method": "recursive"}, "m", prefix="ragtune_scratch", purpose="sweep").startswith(
        "ragtune_scratch_")
