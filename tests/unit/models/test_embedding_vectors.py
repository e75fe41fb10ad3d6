"""Vectors that cannot be searched by cosine similarity (NaN, infinite values, zeros, the wrong
size) are refused as an ``EmbeddingError`` before they reach the embedding cache or an index,
and cached ones written before are embedded again: against the OpenAI-compatible test server
(real HTTP) answering NaN, then recovering.

Expected vectors come from the test server's reference, :func:`expected_vector` (a unit
vector drawn from the text's sha256), computed here for each text."""

from __future__ import annotations

import numpy as np
import pytest

from core.errors import EmbeddingError, is_transient
from core.models import CachedEmbeddingModel, EmbeddingCache, OpenAIEmbeddingModel, text_sha256
from core.models.embeddings import check_vectors, usable_rows
from tests.support.openai_app import EmbeddingReply, OpenAITestApp
from tests.support.openai_server import expected_vector

DIM = 16
TEXTS = ["alpha", "beta", "gamma"]


class HashModel:
    """The embedding model behind the test server: :func:`expected_vector` of each text."""

    model_id = "hash-16"
    embedding_dimension = DIM
    max_input_tokens = None

    def embed_documents(self, texts):
        return np.stack([expected_vector(t, DIM) for t in texts])

    def embed_query(self, text):
        return expected_vector(text, DIM)


@pytest.fixture(scope="module")
def app():
    with OpenAITestApp(embedding_model=HashModel()) as server:
        yield server


def _model(app, **kw):
    return OpenAIEmbeddingModel("emb", base_url=app.base_url, api_key="k", max_attempts=1, **kw)


def _nan_in_rows(*rows):
    def transform(vectors):
        vectors = vectors.copy()
        vectors[list(rows), 3] = np.nan
        return vectors
    return transform


def test_nan_vectors_are_refused_and_not_cached_then_the_endpoint_recovers(app, tmp_path):
    cache = EmbeddingCache(tmp_path / "cache.sqlite")
    model = CachedEmbeddingModel(_model(app), cache)
    app.reply_embeddings(EmbeddingReply(transform=_nan_in_rows(1, 2)))
    with pytest.raises(EmbeddingError) as caught:
        model.embed_documents(TEXTS)
    message = str(caught.value)
    assert message == (f"model {model.model_id} returned 2 vectors with NaN or infinite values for 3 texts "
                       "(the first for text 1): none of them is used or cached")
    assert is_transient(caught.value)  # the endpoint's state: the queue tries the evaluation again
    assert cache.count() == 0 and model.stats()["texts_embedded"] == 0
    # the endpoint recovers: the same texts are embedded (not read from a cache) and are right
    vectors = model.embed_documents(TEXTS)
    np.testing.assert_allclose(vectors, np.stack([expected_vector(t, DIM) for t in TEXTS]), rtol=1e-6)
    assert cache.count() == 3 and model.n_embedded == 3


@pytest.mark.parametrize("encoding", ["base64", "float"])  # float: JSON's Infinity, as Python's json writes it
def test_infinite_values_are_refused_in_either_encoding(app, encoding):
    def transform(vectors):
        vectors = vectors.copy()
        vectors[0, 0] = np.inf
        return vectors

    app.reply_embeddings(EmbeddingReply(transform=transform, encoding_format=encoding))
    model = _model(app)
    with pytest.raises(EmbeddingError, match=r"1 vector with NaN or infinite values for 1 text \(the first for text 0\)"):
        model.embed_documents(["alpha"])


def test_zero_vectors_are_refused_and_not_transient(app):
    app.reply_embeddings(EmbeddingReply(transform=lambda v: v * 0))
    with pytest.raises(EmbeddingError, match=r"returned 3 zero vectors for 3 texts \(the first for text 0\): "
                                             r"cosine similarity is undefined") as caught:
        _model(app).embed_documents(TEXTS)
    assert not is_transient(caught.value)


def test_the_wrong_number_of_dimensions_is_refused(app):
    app.reply_embeddings(EmbeddingReply(transform=lambda v: v[:, :8]))
    with pytest.raises(EmbeddingError, match="returned 8-dimensional vectors; expected 16"):
        _model(app, embedding_dimension=DIM).embed_documents(TEXTS)


def test_a_cached_vector_of_nan_written_before_is_embedded_again(app, tmp_path):
    cache = EmbeddingCache(tmp_path / "cache.sqlite")
    inner = _model(app)
    poisoned = np.full(DIM, np.nan, dtype=np.float32)
    good = expected_vector("beta", DIM)
    cache.put_many(inner.model_id, [(text_sha256("alpha"), poisoned), (text_sha256("beta"), good),
                                    (text_sha256("gamma"), np.zeros(DIM, dtype=np.float32))])
    assert cache.get_many(inner.model_id, [text_sha256(t) for t in TEXTS]).keys() == {text_sha256("beta")}
    model = CachedEmbeddingModel(inner, cache)
    app.requests.clear()
    vectors = model.embed_documents(TEXTS)
    np.testing.assert_allclose(vectors, np.stack([expected_vector(t, DIM) for t in TEXTS]), rtol=1e-6)
    assert app.embedding_requests[-1]["input"] == ["alpha", "gamma"]  # the two unusable entries only
    assert model.stats()["texts_embedded"] == 2 and model.stats()["texts_from_cache"] == 1
    # replaced in the file: a new process finds all three
    fresh = EmbeddingCache(tmp_path / "cache.sqlite", memory_bytes=0)
    assert len(fresh.get_many(inner.model_id, [text_sha256(t) for t in TEXTS])) == 3


def test_any_model_behind_the_cache_is_checked_before_caching(tmp_path):
    class Broken(HashModel):
        model_id = "broken"

        def embed_documents(self, texts):
            out = super().embed_documents(texts)
            out[-1] = np.nan
            return out

    cache = EmbeddingCache(tmp_path / "c.sqlite")
    with pytest.raises(EmbeddingError, match=r"model broken returned 1 vector with NaN .* for 2 texts \(the first for text 1\)") as caught:
        CachedEmbeddingModel(Broken(), cache).embed_documents(["a", "b"])
    assert cache.count() == 0 and not is_transient(caught.value)  # a local model's NaN is not a passing state


def test_check_vectors_and_usable_rows_by_hand():
    vectors = np.array([[1, 0], [np.nan, 1], [0, 0], [np.inf, 0], [0, -2]], dtype=np.float32)
    assert usable_rows(vectors).tolist() == [True, False, False, False, True]
    ok = np.array([[0.6, 0.8]], dtype=np.float32)
    assert check_vectors(ok, 1, "m", 2) is ok
    with pytest.raises(EmbeddingError, match="returned 1 vector for 2 texts"):
        check_vectors(ok, 2, "m")
