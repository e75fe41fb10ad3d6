"""What the embedding client makes of replies that are not a list of embeddings: an
``EmbeddingError`` quoting the reply's first bytes (escaped, at most 200), transient (retried
by the model, and by the queue: ``core.errors.is_transient``) when the body was cut short or
is a proxy's HTML page, not when it is well-formed JSON of the wrong shape.

Replies come from the OpenAI-compatible test app over real HTTP (scripted raw bodies); the
quoted heads are written out by hand from the bodies sent."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest

from core.errors import EmbeddingError, is_transient
from core.models import OpenAIEmbeddingModel
from core.models.endpoint import MAX_REPLY_BYTES, REPLY_HEAD_BYTES, parse_reply, reply_head
from tests.support.openai_app import EmbeddingReply, OpenAITestApp

UNIT = np.full(4, 0.5, dtype=np.float32)


class Unit:
    """Every text's vector is (0.5, 0.5, 0.5, 0.5)."""

    model_id = "unit"

    def embed_documents(self, texts):
        return np.tile(UNIT, (len(texts), 1))


@pytest.fixture(scope="module")
def app():
    with OpenAITestApp(embedding_model=Unit()) as server:
        yield server


def _model(app, attempts=1):
    return OpenAIEmbeddingModel("emb", base_url=app.base_url, api_key="k", max_attempts=attempts, retry_wait_s=0)


def _fails(app, body: bytes, content_type="application/json", n_texts=1) -> EmbeddingError:
    app.reply_embeddings(EmbeddingReply(body=body, content_type=content_type))
    with pytest.raises(EmbeddingError) as caught:
        _model(app).embed_documents(["alpha"] * n_texts)
    return caught.value


TRUNCATED = b'{"object": "list", "data": [{"object": "embedding", "index": 0, "embedding": "AAAAPw'
PROXY_PAGE = b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>nginx</body>\r\n</html>\r\n"


@pytest.mark.parametrize("body, content_type, reason", [
    (TRUNCATED, "application/json", "cut short"),
    (b'{"object": "list", "data": [', "application/json", "cut short"),
    (b"", "application/json", "cut short"),
    (PROXY_PAGE, "text/html", "an HTML page"),
])
def test_a_cut_or_html_reply_is_a_transient_embedding_error_quoting_its_first_bytes(app, body, content_type, reason):
    exc = _fails(app, body, content_type)
    assert is_transient(exc)
    assert str(exc) == (f"embedding endpoint openai:{app.base_url.split('/')[2]}/emb failed: MalformedReplyError: "
                        f"the reply is not JSON ({reason}); it begins {reply_head(body)!r}")


def test_the_quoted_head_is_escaped_and_at_most_200_bytes(app):
    body = b"<html>\n\xff\xfe caf\xc3\xa9 " + b"x" * 1000
    exc = _fails(app, body, "text/html")
    # hand: Python's bytes repr of the first 200 bytes (16 before the x's), then "..."
    head = "<html>\\n\\xff\\xfe caf\\xc3\\xa9 " + "x" * (200 - 16) + "..."
    assert reply_head(body) == head and f"it begins {head!r}" in str(exc)
    assert "\n" not in str(exc) and REPLY_HEAD_BYTES == 200


def test_a_transient_malformed_reply_is_retried_and_the_next_answer_used(app):
    app.reply_embeddings(EmbeddingReply(body=TRUNCATED))
    before = len(app.embedding_requests)
    vectors = _model(app, attempts=2).embed_documents(["alpha", "beta"])
    np.testing.assert_array_equal(vectors, np.tile(UNIT, (2, 1)))
    assert len(app.embedding_requests) - before == 2


@pytest.mark.parametrize("reply, says", [
    ({"error": {"message": "quota"}}, "JSON without a 'data' list of embeddings"),
    ({"data": "none"}, "JSON without a 'data' list of embeddings"),
    ([1, 2, 3], "JSON without a 'data' list of embeddings"),
    ({"data": []}, "0 embeddings for 1 texts"),
    ({"data": [{"index": 3, "embedding": [0.5] * 4}]}, "an embedding with index 3 for 1 texts"),
    ({"data": [{"index": 0, "embedding": ["a", "b"]}]}, "an embedding for text 0 that cannot be read (neither a list "
                                                        "of numbers nor base64)"),
    ({"data": [{"index": 0, "embedding": "not base64!"}]},
     "an embedding for text 0 that cannot be read (Only base64 data is allowed)"),  # binascii's words
    ({"data": [{"index": 0, "embedding": base64.b64encode(b"\x00" * 6).decode()}]},
     "an embedding for text 0 that cannot be read (6 bytes, not whole float32s)"),
    ({"data": [{"index": 0, "embedding": []}]}, "vectors of 0 dimensions"),
])
def test_well_formed_json_of_the_wrong_shape_is_not_transient(app, reply, says):
    body = json.dumps(reply).encode()
    exc = _fails(app, body)
    assert not is_transient(exc)
    assert str(exc) == (f"embedding endpoint openai:{app.base_url.split('/')[2]}/emb answered {says}; the reply "
                        f"begins {reply_head(body)!r}")


def test_vectors_of_different_lengths_are_not_transient(app):
    body = json.dumps({"data": [{"index": 0, "embedding": [0.5] * 4}, {"index": 1, "embedding": [0.5] * 3}]}).encode()
    exc = _fails(app, body, n_texts=2)
    assert "answered vectors of 3, 4 dimensions" in str(exc) and not is_transient(exc)


@pytest.mark.parametrize("body, transient", [
    (b"hello, world", False),  # text, not JSON, nor cut, nor a page
    (b'{"data": [\xff]}', False),  # not UTF-8
    (b"[" * 100_000 + b"]" * 100_000, False),  # nested past parsing
    (b'{"data": [1' + b"0" * 5000 + b"]}", False),  # an integer past Python's digit limit
])
def test_other_bodies_that_are_not_json_are_errors_not_tracebacks(app, body, transient):
    exc = _fails(app, body)
    assert "MalformedReplyError: the reply is not JSON" in str(exc) and is_transient(exc) is transient


def test_a_reply_over_the_size_limit_is_refused(monkeypatch):
    import core.models.endpoint as endpoint

    monkeypatch.setattr(endpoint, "MAX_REPLY_BYTES", 10)
    with pytest.raises(endpoint.MalformedReplyError, match="longer than 10 bytes") as caught:
        parse_reply(b'{"data": [1, 2, 3]}')
    assert caught.value.transient is False and MAX_REPLY_BYTES == 16 * 1024 * 1024


def test_base64_and_float_replies_give_the_same_vectors(app):
    vector = np.array([0.25, -0.5, 1.0, 3.5], dtype=np.float32)
    as_base64 = base64.b64encode(vector.astype("<f4").tobytes()).decode()
    for embedding in (as_base64, vector.tolist()):
        app.reply_embeddings(EmbeddingReply(body=json.dumps({"data": [{"index": 0, "embedding": embedding}]}).encode()))
        np.testing.assert_array_equal(_model(app).embed_documents(["x"])[0], vector)
    assert app.embedding_requests[-1] == {"model": "emb", "input": ["x"], "encoding_format": "base64"}
