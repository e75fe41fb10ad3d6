"""OpenAI-compatible embedding client against a local test server; the embedding cache."""

from __future__ import annotations

import numpy as np
import pytest

from core.errors import ConfigError, EmbeddingError
from core.models import CachedEmbeddingModel, EmbeddingCache, OpenAIEmbeddingModel, text_sha256
from tests.support.openai_server import OpenAITestServer, expected_vector


@pytest.fixture()
def server():
    with OpenAITestServer(dim=8) as srv:
        yield srv


def test_vectors_come_back_in_input_order(server):
    model = OpenAIEmbeddingModel("test-embed", base_url=server.base_url, api_key="k", max_attempts=1)
    texts = ["alpha", "beta", "gamma"]
    vectors = model.embed_documents(texts)
    assert vectors.shape == (3, 8) and vectors.dtype == np.float32
    for text, vec in zip(texts, vectors):  # the server answers in reverse order; index decides
        np.testing.assert_allclose(vec, expected_vector(text, 8), rtol=1e-6)


def test_batches_hold_at_most_batch_size_texts(server):
    model = OpenAIEmbeddingModel("m", base_url=server.base_url, batch_size=2, embedding_dimension=8)
    model.embed_documents([f"t{i}" for i in range(5)])
    assert [len(r["input"]) for r in server.requests] == [2, 2, 1]


def test_dimension_detected_with_one_call(server):
    model = OpenAIEmbeddingModel("m", base_url=server.base_url)
    assert model.embedding_dimension == 8
    assert len(server.requests) == 1
    assert model.embedding_dimension == 8
    assert len(server.requests) == 1


def test_retries_429_and_5xx_then_succeeds(server):
    server.fail_next = [429, 500, 503]
    model = OpenAIEmbeddingModel("m", base_url=server.base_url, embedding_dimension=8, max_attempts=4, retry_wait_s=0.01)
    vectors = model.embed_documents(["x"])
    np.testing.assert_allclose(vectors[0], expected_vector("x", 8), rtol=1e-6)
    assert len(server.requests) == 4


def test_client_errors_are_not_retried(server):
    server.fail_next = [400]
    model = OpenAIEmbeddingModel("m", base_url=server.base_url, embedding_dimension=8, max_attempts=4, retry_wait_s=0.01)
    with pytest.raises(EmbeddingError, match="BadRequestError"):
        model.embed_documents(["x"])
    assert len(server.requests) == 1


def test_gives_up_after_max_attempts(server):
    server.fail_next = [500, 500, 500]
    model = OpenAIEmbeddingModel("m", base_url=server.base_url, embedding_dimension=8, max_attempts=2, retry_wait_s=0.01)
    with pytest.raises(EmbeddingError):
        model.embed_documents(["x"])
    assert len(server.requests) == 2


def test_wrong_dimension_is_an_error(server):
    model = OpenAIEmbeddingModel("m", base_url=server.base_url, embedding_dimension=16)
    with pytest.raises(EmbeddingError, match="8-dimensional vectors; expected 16"):
        model.embed_documents(["x"])


def test_batch_size_out_of_range():
    with pytest.raises(ConfigError):
        OpenAIEmbeddingModel("m", batch_size=2000)


def test_model_id_names_host_model_and_dimensions():
    model = OpenAIEmbeddingModel("text-embedding-3-small", base_url="http://localhost:11434/v1", dimensions=256)
    assert model.model_id == "openai:localhost:11434/text-embedding-3-small@256"


def test_cache_embeds_each_distinct_text_once_across_instances(server, tmp_path):
    path = tmp_path / "cache.sqlite"
    inner = OpenAIEmbeddingModel("m", base_url=server.base_url, embedding_dimension=8)
    cached = CachedEmbeddingModel(inner, EmbeddingCache(path))
    first = cached.embed_documents(["a", "b", "a", "c"])
    assert [len(r["input"]) for r in server.requests] == [3]  # "a" sent once
    stats = cached.stats()  # the repeated "a" is neither embedded again nor a cache hit
    assert (stats["n_texts"], stats["n_embedded"], stats["n_cache_hits"]) == (4, 3, 0)
    np.testing.assert_allclose(first[0], first[2])

    again = CachedEmbeddingModel(inner, EmbeddingCache(path))  # a new run, same file
    second = again.embed_documents(["c", "a", "b"])
    assert len(server.requests) == 1  # nothing new sent
    assert again.n_embedded == 0 and again.n_cache_hits == 3
    np.testing.assert_allclose(second[0], expected_vector("c", 8), rtol=1e-6)


def test_cache_keys_by_model(tmp_path):
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    key = text_sha256("x")
    cache.put_many("model-a", [(key, np.ones(3, dtype=np.float32))])
    assert cache.get_many("model-b", [key]) == {}
    np.testing.assert_array_equal(cache.get_many("model-a", [key])[key], np.ones(3, dtype=np.float32))
    assert cache.count() == 1 and cache.count("model-b") == 0


def test_text_sha256_is_utf8_sha256():
    # reference: sha256 of b"abc" (FIPS 180-2 test vector)
    assert text_sha256("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


def test_azure_openai_embeddings_without_a_key_send_an_entra_id_token(server):
    """Azure route of the OpenAI test app, its vectors from the sha256 test server behind it."""
    import time

    from azure.core.credentials import AccessToken

    from core.models.azure import token_provider
    from tests.support.openai_app import OpenAITestApp

    class Credential:  # an azure.core TokenCredential, as a managed identity would be
        def get_token(self, *scopes, **kwargs):
            return AccessToken("embed-token", int(time.time()) + 3600)

    upstream = OpenAIEmbeddingModel("m", base_url=server.base_url, embedding_dimension=8)
    with OpenAITestApp(embedding_model=upstream) as app:
        model = OpenAIEmbeddingModel("emb-deployment", base_url=app.endpoint, azure_api_version="2024-10-21",
                                     embedding_dimension=8, azure_ad_token_provider=token_provider(Credential()))
        vectors = model.embed_documents(["alpha"])
        request = app.requests[0]
    assert request["path"] == "/openai/deployments/emb-deployment/embeddings"
    assert (request["authorization"], request["api_key"]) == ("Bearer embed-token", None)
    np.testing.assert_allclose(vectors[0], expected_vector("alpha", 8), rtol=1e-5)
