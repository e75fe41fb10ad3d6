"""The ``EmbeddingModel`` contract, passed by every implementation.

Implementations: the local all-MiniLM-L6-v2 (real weights), the OpenAI-compatible client
against a local test server (vectors derived from each text's sha256, see
``tests.support.openai_server``), and the embedding cache wrapping each of them. Expected shapes and dtypes come from the protocol's docstring.
"""

from __future__ import annotations

import numpy as np
import pytest

from core.errors import EmbeddingError
from core.models import CachedEmbeddingModel, EmbeddingCache, EmbeddingModel, LocalEmbeddingModel, OpenAIEmbeddingModel
from tests.support.openai_server import OpenAITestServer, expected_vector

TEXTS = ["The deductible is 500 euros per year.", "Dental care is covered after six months.",
         "Résumé: naïve café ☕", ""]


@pytest.fixture(scope="module")
def server():
    with OpenAITestServer(dim=16) as srv:
        yield srv


@pytest.fixture(scope="module")
def local():
    return LocalEmbeddingModel()


@pytest.fixture(scope="module")
def onnx():
    from core.errors import ConfigError
    from core.models.onnx import OnnxEmbeddingModel

    model = OnnxEmbeddingModel()
    try:
        model.verify()
    except ConfigError as exc:
        pytest.skip(str(exc))
    return model


@pytest.fixture(params=["local", "onnx", "openai", "cached-local", "cached-openai"])
def model(request, server, local, tmp_path) -> EmbeddingModel:
    kind = request.param
    if kind == "onnx":
        return request.getfixturevalue("onnx")
    inner = local if kind.endswith("local") else OpenAIEmbeddingModel("emb", base_url=server.base_url, api_key="k",
                                                                      max_attempts=1)
    if kind.startswith("cached"):
        cache = EmbeddingCache(tmp_path / "cache.sqlite")
        request.addfinalizer(cache.close)
        return CachedEmbeddingModel(inner, cache)
    return inner


def test_is_an_embedding_model_with_a_stable_id(model):
    assert isinstance(model, EmbeddingModel)
    assert isinstance(model.model_id, str) and model.model_id and model.model_id == model.model_id
    assert isinstance(model.embedding_dimension, int) and model.embedding_dimension > 0
    assert model.max_input_tokens is None or (isinstance(model.max_input_tokens, int) and model.max_input_tokens > 0)


def test_embed_documents_shape_dtype_and_order(model):
    vectors = model.embed_documents(TEXTS)
    assert vectors.shape == (len(TEXTS), model.embedding_dimension) and vectors.dtype == np.float32
    assert np.isfinite(vectors).all()
    # each row is the text's own vector, whatever else is in the batch
    for i, text in enumerate(TEXTS):
        np.testing.assert_allclose(model.embed_documents([text])[0], vectors[i], atol=1e-4)
    assert model.embed_documents([]).shape == (0, model.embedding_dimension)


def test_embed_query_is_one_vector(model):
    query = model.embed_query("What is the deductible?")
    assert query.shape == (model.embedding_dimension,) and query.dtype == np.float32
    np.testing.assert_allclose(model.embed_query("What is the deductible?"), query, atol=1e-6)  # deterministic


def test_a_query_is_its_instruction_and_words_embedded_as_a_passage(model):
    # the contract caches rely on: embed_query(t) == embed_documents([query_text(model, t)])[0]
    from core.models.embeddings import query_text

    text = "What is the deductible?"
    np.testing.assert_allclose(model.embed_query(text), model.embed_documents([query_text(model, text)])[0], atol=1e-6)


def test_the_openai_client_returns_the_servers_vectors(server):
    # Reference: the vector the test server derives from the text's sha256.
    model = OpenAIEmbeddingModel("emb", base_url=server.base_url, api_key="k")
    np.testing.assert_allclose(model.embed_documents(["alpha"])[0], expected_vector("alpha", 16), rtol=1e-6)


def test_an_unreachable_endpoint_raises_embedding_error():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    model = OpenAIEmbeddingModel("emb", base_url=f"http://127.0.0.1:{port}/v1", embedding_dimension=4,
                                 max_attempts=1, timeout_s=2)
    with pytest.raises(EmbeddingError):
        model.embed_documents(["x"])
