"""How ``OpenAIChatModel`` reads a chat completion's body: well-formed, odd, hostile and cut
replies from a real HTTP server that sends exactly the bytes, content type and connection
behaviour a test scripts."""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from core.errors import GenerationError
from core.models import EmptyReplyError, OpenAIChatModel
from core.models.chat import _usage_tokens

USER = [{"role": "user", "content": "What is RAG?"}]


def completion(content="Paris.", usage=None, *, finish_reason="stop"):
    out = {"id": "c1", "object": "chat.completion", "model": "m",
           "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish_reason}]}
    if usage is not None:
        out["usage"] = usage
    return out


class Server:
    """Answers each POST with the next step of ``script`` (the last one repeats): a callable of the
    request handler, or ``(status, content type, body)``; keeps each request's path and body."""

    def __init__(self, script):
        self.script = list(script)
        self.paths: list[str] = []
        self.bodies: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):  # noqa: N802
                outer.paths.append(self.path)
                outer.bodies.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                step = outer.script.pop(0) if len(outer.script) > 1 else outer.script[0]
                if callable(step):
                    step(self)
                    return
                status, ctype, body = step
                raw = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *a):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.root = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.base_url = self.root + "/v1"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def serve():
    made = []

    def start(*script):
        made.append(Server(script))
        return made[-1]

    yield start
    for s in made:
        s.close()


def model(server, attempts=1, **kw):
    return OpenAIChatModel("m", base_url=server.base_url, api_key="k", max_attempts=attempts,
                           retry_wait_s=0.0, timeout_s=5, **kw)


OK = (200, "application/json", completion("Paris.", {"prompt_tokens": 3, "completion_tokens": 1}))


def cut_mid_body(handler):
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", "500")
    handler.end_headers()
    handler.wfile.write(b'{"choices": [{"message": {"content": "Par')
    handler.wfile.flush()
    handler.connection.shutdown(socket.SHUT_RDWR)
    handler.close_connection = True


def test_the_body_sent_is_the_checked_messages_and_settings(serve):
    usage = {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11}
    server = serve((200, "application/json", completion(usage=usage)))
    chat = model(server)
    assert chat.chat(USER, temperature=0.0) == "Paris."
    assert server.bodies == [{"model": "m", "messages": USER, "max_completion_tokens": 1024, "temperature": 0.0}]
    assert chat.usage == {"requests": 1, "prompt_tokens": 9, "completion_tokens": 2}


def test_extra_fields_and_a_json_body_with_another_content_type_are_read(serve):
    body = completion("Lyon.", usage={"prompt_tokens": 4, "completion_tokens": 1})
    body["system_fingerprint"] = "fp"
    body["choices"][0]["logprobs"] = None
    chat = model(serve((200, "text/plain", json.dumps(body).encode())))
    assert chat.chat(USER) == "Lyon."
    assert chat.usage["prompt_tokens"] == 4


def test_a_reply_without_usage_counts_the_request_only(serve):
    chat = model(serve((200, "application/json", completion())))
    assert chat.chat(USER) == "Paris."
    assert chat.usage == {"requests": 1, "prompt_tokens": 0, "completion_tokens": 0}


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
        model(serve((200, ctype, body))).chat(USER)


@pytest.mark.parametrize("choice", [
    {"message": {"role": "assistant", "content": None}, "finish_reason": "stop"},
    {"message": "text", "finish_reason": "stop"},
    {"finish_reason": "stop"},
    "not an object",
    {"message": {"role": "assistant", "content": 42}, "finish_reason": "stop"},
])
def test_a_choice_without_text_is_an_empty_reply(serve, choice):
    with pytest.raises(EmptyReplyError, match="empty reply"):
        model(serve((200, "application/json", {"choices": [choice]}))).chat(USER)


def test_an_empty_reply_at_the_token_limit_says_so(serve):
    with pytest.raises(EmptyReplyError, match="token limit"):
        model(serve((200, "application/json", completion("", finish_reason="length")))).chat(USER)


def test_usage_counts_are_whole_non_negative_numbers_or_none():
    assert _usage_tokens({"prompt_tokens": 3, "completion_tokens": 4.0}) == (3, 4)
    assert _usage_tokens({"prompt_tokens": -1, "completion_tokens": "7"}) == (None, None)
    assert _usage_tokens({"prompt_tokens": float("inf"), "completion_tokens": float("nan")}) == (None, None)
    assert _usage_tokens({"prompt_tokens": True, "completion_tokens": 2.5}) == (None, None)
    assert _usage_tokens(None) == (None, None) and _usage_tokens([1, 2]) == (None, None)


def test_a_connection_cut_mid_body_is_retried(serve):
    server = serve(cut_mid_body, OK)
    m = model(server, attempts=2)
    assert m.chat(USER) == "Paris."
    assert m.usage == {"requests": 1, "prompt_tokens": 3, "completion_tokens": 1}


def test_a_connection_cut_mid_body_on_the_last_attempt_is_a_generation_error(serve):
    with pytest.raises(GenerationError):
        model(serve(cut_mid_body)).chat(USER)


@pytest.mark.parametrize("body, ctype", [
    (b'{"choices": [{"message": {"content": "caf\xe9"}}]}', "application/json"),   # latin-1, not UTF-8
    (b'{"choices": [{"message": {"content": "caf\xe9"}}]}', "application/json; charset=utf-8"),
    (b"\xff\xfe\x00garbage", "application/json"),
    (b"[" * 100_000 + b"]" * 100_000, "application/json"),            # deeply nested
    (b"[" * 100_000 + b"]" * 100_000, "text/plain"),
    (b'{"choices": [{"message": {"content": "x"}}], "usage": {"prompt_tokens": 1' + b"0" * 5000 + b"}}",
     "application/json"),                                               # int beyond str-digit limit
    (b"", "application/json"),
    (b"null", "application/json"),
])
def test_malformed_bodies_are_generation_errors(serve, body, ctype):
    with pytest.raises(GenerationError):
        model(serve((200, ctype, body))).chat(USER)


@pytest.mark.parametrize("reply", [
    {"choices": [None]},
    {"choices": [{"message": None}]},
    {"choices": [{"message": {"content": None, "tool_calls": None}}], "usage": None},
    {"choices": [{"message": {"content": {"nested": None}}}]},
])
def test_odd_nulls_are_empty_replies_not_crashes(serve, reply):
    with pytest.raises(EmptyReplyError):
        model(serve((200, "application/json", reply))).chat(USER)


def test_usage_with_nulls_counts_the_request(serve):
    m = model(serve((200, "application/json", completion("ok", {"prompt_tokens": None, "completion_tokens": None}))))
    assert m.chat(USER) == "ok"
    assert m.usage == {"requests": 1, "prompt_tokens": 0, "completion_tokens": 0}


def test_a_huge_body_is_read(serve):
    text = "word " * 2_000_000  # 10 MB
    assert model(serve((200, "application/json", completion(text)))).chat(USER) == text


def test_content_as_a_list_of_text_parts(serve):
    # some OpenAI-compatible servers answer content as parts; the old typed create() did
    # the same (a list is not a str), so this documents behaviour rather than a regression
    parts = [{"type": "text", "text": "Paris."}]
    with pytest.raises(EmptyReplyError):
        model(serve((200, "application/json", completion(parts)))).chat(USER)


def test_azure_retries_keep_the_deployment_route(serve):
    server = serve((503, "application/json", {"error": {"message": "busy"}}), OK)
    m = OpenAIChatModel("dep1", base_url=server.root, api_key="k", azure_api_version="2024-10-21",
                        max_attempts=2, retry_wait_s=0.0, timeout_s=5)
    assert m.chat(USER) == "Paris."
    assert server.paths == ["/openai/deployments/dep1/chat/completions?api-version=2024-10-21"] * 2


def test_concurrent_chats_count_usage(serve):
    from concurrent.futures import ThreadPoolExecutor

    m = model(serve(OK))
    with ThreadPoolExecutor(16) as pool:
        assert set(pool.map(lambda _: m.chat(USER), range(200))) == {"Paris."}
    assert m.usage == {"requests": 200, "prompt_tokens": 600, "completion_tokens": 200}
