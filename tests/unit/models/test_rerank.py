"""The ``Reranker`` contract, run on the local cross-encoder and on a rerank endpoint (a
scripted server over real HTTP); then what only the endpoint client does (retries, shapes,
bad answers)."""

from __future__ import annotations

import socket

import pytest

from core.errors import ConfigError, RerankError
from core.models.rerank import HttpReranker, Reranker, rerank_order
from tests.support.rerank_server import RerankTestServer, overlap_score

pytest.importorskip("onnxruntime")

QUERY = "How many people live in Berlin?"
BERLIN = "Berlin has a population of 3,520,031 registered inhabitants in an area of 891.82 square kilometers."
NEW_YORK = "New York City is famous for the Metropolitan Museum of Art."
TOKYO = "Tokyo is the capital of Japan and the seat of its government."


@pytest.fixture(scope="module")
def server():
    with RerankTestServer() as srv:
        yield srv


@pytest.fixture(params=["local", "endpoint"])
def reranker(request, server):
    if request.param == "local":
        from core.models.onnx import OnnxCrossEncoder

        try:
            model = OnnxCrossEncoder()
            model.verify()
        except ConfigError as exc:
            pytest.skip(str(exc))
        return model
    return HttpReranker("test-rerank", base_url=server.base_url, provider="cohere", max_attempts=1)


# --------------------------------------------------------------------------- the contract


def test_is_a_reranker(reranker):
    assert isinstance(reranker, Reranker)
    assert reranker.model_id


def test_one_score_per_passage_in_input_order(reranker):
    scores = reranker.rerank(QUERY, [NEW_YORK, BERLIN, TOKYO])
    assert len(scores) == 3 and all(isinstance(s, float) for s in scores)
    # the Berlin passage answers the question (the cross-encoder's model card example; for the
    # scripted server, by word overlap: "in" and "berlin")
    assert rerank_order(scores)[0] == 1


def test_scores_follow_their_passages_when_reordered(reranker):
    forward = reranker.rerank(QUERY, [NEW_YORK, BERLIN, TOKYO])
    backward = reranker.rerank(QUERY, [TOKYO, BERLIN, NEW_YORK])
    assert backward == pytest.approx(forward[::-1], abs=1e-3)


def test_no_passages_no_scores(reranker):
    assert reranker.rerank(QUERY, []) == []


def test_verify_passes(reranker):
    reranker.verify()


# --------------------------------------------------------------------------- the endpoint


def test_endpoint_request_shape_and_scores(server):
    server.requests.clear()
    model = HttpReranker("m", base_url=server.base_url, api_key="secret", max_attempts=1)
    scores = model.rerank(QUERY, [NEW_YORK, BERLIN])
    assert scores == pytest.approx([overlap_score(QUERY, NEW_YORK), overlap_score(QUERY, BERLIN)])  # hand: 0 of 6 words; "in" and "berlin" of 6
    assert scores[1] == pytest.approx(2 / 6)
    assert server.requests[-1] == {"model": "m", "query": QUERY, "documents": [NEW_YORK, BERLIN], "top_n": 2}
    assert server.headers[-1]["Authorization"] == "Bearer secret"
    assert "secret" not in repr(model) and model.model_id == f"cohere:{server.base_url.split('/')[2]}/m"


def test_tei_shape(server):
    model = HttpReranker("m", base_url=server.base_url, provider="tei", max_attempts=1)
    assert model.rerank(QUERY, [BERLIN, NEW_YORK]) == pytest.approx([2 / 6, 0.0])
    assert server.requests[-1]["texts"] == [BERLIN, NEW_YORK]


def test_retries_429_and_5xx_then_succeeds(server):
    server.fail_next = [429, 503]
    before = len(server.requests)
    model = HttpReranker("m", base_url=server.base_url, max_attempts=3, retry_wait_s=0.01)
    assert model.rerank(QUERY, [BERLIN]) == pytest.approx([2 / 6])
    assert len(server.requests) - before == 3


def test_gives_up_after_max_attempts(server):
    server.fail_next = [500, 500]
    model = HttpReranker("m", base_url=server.base_url, max_attempts=2, retry_wait_s=0.01)
    with pytest.raises(RerankError, match="failed after 2 attempts"):
        model.rerank(QUERY, [BERLIN])


def test_client_errors_are_not_retried(server):
    server.fail_next = [400]
    before = len(server.requests)
    model = HttpReranker("m", base_url=server.base_url, max_attempts=4, retry_wait_s=0.01)
    with pytest.raises(RerankError, match="HTTP 400"):
        model.rerank(QUERY, [BERLIN])
    assert len(server.requests) - before == 1


@pytest.mark.parametrize("raw, message", [
    (b"<html>not json", "malformed JSON"),
    (b'{"results": [{"index": 0, "relevance_score": 0.5}]}', "scored 1 of 2"),
    (b'{"results": [{"index": 7, "relevance_score": 0.5}]}', "index 7"),
    (b'{"results": [{"index": 0, "relevance_score": "high"}]}', "score 'high'"),
    (b'{"error": "nope"}', "without a list"),
])
def test_malformed_answers_are_rerank_errors(server, raw, message):
    server.raw_next = [raw]
    model = HttpReranker("m", base_url=server.base_url, max_attempts=1)
    with pytest.raises(RerankError, match=message):
        model.rerank(QUERY, [BERLIN, NEW_YORK])


def test_endpoint_down_is_a_rerank_error():
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    model = HttpReranker("m", base_url=f"http://127.0.0.1:{port}/v1", max_attempts=2, retry_wait_s=0.01)
    with pytest.raises(RerankError, match="unreachable|failed after"):
        model.rerank(QUERY, [BERLIN])


def test_bad_settings():
    with pytest.raises(ConfigError, match="provider"):
        HttpReranker("m", base_url="http://x", provider="nope")
    with pytest.raises(ConfigError, match="BASE_URL"):
        HttpReranker("m", base_url="")


def test_rerank_order_breaks_ties_by_input_order():
    assert rerank_order([0.5, 2.0, 0.5, -1.0]) == [1, 0, 2, 3]
