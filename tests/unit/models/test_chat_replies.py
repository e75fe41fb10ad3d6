"""How ``OpenAIChatModel`` reads a chat completion's body: well-formed, odd and hostile replies
from a real HTTP server that sends exactly the bytes and content type a test gives."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from core.errors import GenerationError
from core.models import EmptyReplyError, OpenAIChatModel
from core.models.chat import _usage_tokens

USER = [{"role": "user", "content": "What is RAG?"}]


class RawServer:
    """Answers every POST with ``(status, content_type, body)`` and keeps each request body."""

    def __init__(self, status: int, content_type: str, body: bytes) -> None:
        self.bodies: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                outer.bodies.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def serve():
    servers = []

    def start(body, *, status=200, content_type="application/json"):
        raw = body if isinstance(body, bytes) else json.dumps(body).encode("utf-8")
        servers.append(RawServer(status, content_type, raw))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


def chat_model(server) -> OpenAIChatModel:
    return OpenAIChatModel("m", base_url=server.base_url, api_key="k", max_attempts=1, retry_wait_s=0.0)


def completion(content="Paris.", *, finish_reason="stop", usage=None):
    out = {"id": "c1", "object": "chat.completion", "model": "m",
           "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish_reason}]}
    if usage is not None:
        out["usage"] = usage
    return out


def test_the_body_sent_is_the_checked_messages_and_settings(serve):
    server = serve(completion(usage={"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11}))
    model = chat_model(server)
    assert model.chat(USER, temperature=0.0) == "Paris."
    assert server.bodies == [{"model": "m", "messages": USER, "max_completion_tokens": 1024, "temperature": 0.0}]
    assert model.usage == {"requests": 1, "prompt_tokens": 9, "completion_tokens": 2}


def test_extra_fields_and_a_json_body_with_another_content_type_are_read(serve):
    body = completion("Lyon.", usage={"prompt_tokens": 4, "completion_tokens": 1})
    body["system_fingerprint"] = "fp"
    body["choices"][0]["logprobs"] = None
    model = chat_model(serve(json.dumps(body).encode(), content_type="text/plain"))
    assert model.chat(USER) == "Lyon."
    assert model.usage["prompt_tokens"] == 4


def test_a_reply_without_usage_counts_the_request_only(serve):
    model = chat_model(serve(completion()))
    assert model.chat(USER) == "Paris."
    assert model.usage == {"requests": 1, "prompt_tokens": 0, "completion_tokens": 0}


@pytest.mark.parametrize("body, says", [
    (b"<html>gateway</html>", "not JSON"),
    (b'{"choices": [', "not JSON"),
    ([1, 2], "list, not a chat completion object"),
    ({"object": "chat.completion"}, "no choices"),
    ({"choices": []}, "no choices"),
    ({"choices": "many"}, "no choices"),
])
def test_bodies_that_are_not_a_completion_are_generation_errors(serve, body, says):
    ctype = "text/html" if body == b"<html>gateway</html>" else "application/json"
    with pytest.raises(GenerationError, match=says):
        chat_model(serve(body, content_type=ctype)).chat(USER)


@pytest.mark.parametrize("choice", [
    {"message": {"role": "assistant", "content": None}, "finish_reason": "stop"},
    {"message": "text", "finish_reason": "stop"},
    {"finish_reason": "stop"},
    "not an object",
    {"message": {"role": "assistant", "content": 42}, "finish_reason": "stop"},
])
def test_a_choice_without_text_is_an_empty_reply(serve, choice):
    with pytest.raises(EmptyReplyError, match="empty reply"):
        chat_model(serve({"choices": [choice]})).chat(USER)


def test_an_empty_reply_at_the_token_limit_says_so(serve):
    with pytest.raises(EmptyReplyError, match="token limit"):
        chat_model(serve(completion("", finish_reason="length"))).chat(USER)


def test_usage_counts_are_whole_non_negative_numbers_or_none():
    assert _usage_tokens({"prompt_tokens": 3, "completion_tokens": 4.0}) == (3, 4)
    assert _usage_tokens({"prompt_tokens": -1, "completion_tokens": "7"}) == (None, None)
    assert _usage_tokens({"prompt_tokens": float("inf"), "completion_tokens": float("nan")}) == (None, None)
    assert _usage_tokens({"prompt_tokens": True, "completion_tokens": 2.5}) == (None, None)
    assert _usage_tokens(None) == (None, None) and _usage_tokens([1, 2]) == (None, None)
