"""How ``OpenAIChatModel`` reads a chat completion's body: well-formed, odd, hostile and cut
replies from a real HTTP server that sends exactly the bytes, content type and connection
behaviour a test scripts."""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler

import pytest

from core.errors import GenerationError
from core.models import EmptyReplyError, OpenAIChatModel
from core.models.chat import _usage_tokens
from tests.support.httpd import LocalHTTPServer

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

        self.httpd = LocalHTTPServer(("127.0.0.1", 0), Handler)
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


# The transport (core.models.endpoint) -----------------------------------------------------------
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy",
                   "no_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR", "OPENAI_BASE_URL")


@pytest.fixture
def clean_env(monkeypatch):
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_requests_go_through_the_proxy_of_the_environment_unless_no_proxy_names_the_host(serve, clean_env):
    proxy = serve(OK)
    clean_env.setenv("HTTP_PROXY", proxy.root)
    m = OpenAIChatModel("m", base_url="http://chat.invalid/v1", api_key="k", max_attempts=1, timeout_s=5)
    assert m.chat(USER) == "Paris."
    assert proxy.paths == ["http://chat.invalid/v1/chat/completions"]  # the absolute form a proxy is sent
    clean_env.setenv("NO_PROXY", "chat.invalid")
    with pytest.raises(GenerationError, match="APIConnectionError"):  # straight to a host that does not exist
        OpenAIChatModel("m", base_url="http://chat.invalid/v1", api_key="k", max_attempts=1, timeout_s=5).chat(USER)
    assert len(proxy.paths) == 1


def test_a_reply_over_the_size_limit_is_an_error_and_its_connection_is_not_reused(serve, monkeypatch):
    import core.models.endpoint as endpoint

    monkeypatch.setattr(endpoint, "MAX_REPLY_BYTES", 1000)
    m = model(serve((200, "application/json", completion("x" * 5000)), OK))
    with pytest.raises(GenerationError, match="longer than 1000 bytes"):
        m.chat(USER)
    assert m.chat(USER) == "Paris."  # the next request reads its own reply, not the rest of the last


def test_status_errors_name_the_status_and_the_body_and_say_whether_a_retry_may_help(serve):
    from core.errors import is_transient

    with pytest.raises(GenerationError) as refused:
        model(serve((400, "application/json", {"error": {"message": "bad temperature"}}))).chat(USER)
    assert "BadRequestError: Error code: 400 - " in str(refused.value) and "bad temperature" in str(refused.value)
    assert not is_transient(refused.value)
    with pytest.raises(GenerationError) as limited:
        model(serve((429, "text/plain", b"slow down"))).chat(USER)
    assert "RateLimitError: Error code: 429 - slow down" in str(limited.value) and is_transient(limited.value)


def _self_signed(tmp_path):
    """A certificate for 127.0.0.1 and its key, as PEM files."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
            .sign(key, hashes.SHA256()))
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_file, key_file


def test_https_trusts_the_certificates_of_ssl_cert_file_and_refuses_an_unknown_one(serve, clean_env, tmp_path):
    import ssl

    server = serve(OK)
    cert_file, key_file = _self_signed(tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    server.httpd.socket = context.wrap_socket(server.httpd.socket, server_side=True)
    url = f"https://127.0.0.1:{server.httpd.server_address[1]}/v1"
    with pytest.raises(GenerationError, match="(?i)certificate"):  # not in certifi's bundle
        OpenAIChatModel("m", base_url=url, api_key="k", max_attempts=1, timeout_s=5).chat(USER)
    clean_env.setenv("SSL_CERT_FILE", str(cert_file))
    assert OpenAIChatModel("m", base_url=url, api_key="k", max_attempts=1, timeout_s=5).chat(USER) == "Paris."


def test_a_lone_surrogate_in_a_message_is_sent_escaped(serve):
    server = serve(OK)
    assert model(server).chat([{"role": "user", "content": "broken \ud800 text, café"}]) == "Paris."
    assert server.bodies[0]["messages"][0]["content"] == "broken \ud800 text, café"


def test_an_unusable_proxy_fails_at_once_with_a_clear_error(clean_env):
    from core.errors import ConfigError, is_transient

    clean_env.setenv("HTTP_PROXY", "socks5://127.0.0.1:1")  # a proxy urllib3 cannot use
    m = OpenAIChatModel("m", base_url="http://chat.invalid/v1", api_key="k", max_attempts=3, retry_wait_s=5.0,
                        timeout_s=5)
    with pytest.raises(GenerationError, match="cannot send to http://chat.invalid/v1/chat/completions") as failed:
        m.chat(USER)  # not retried: three attempts 5 s apart would take over 10 s
    assert not is_transient(failed.value)
    with pytest.raises(ConfigError, match="is not a URL"):
        OpenAIChatModel("m", base_url="http://[::1/v1")


def test_a_compressed_reply_that_expands_past_the_limit_is_refused_without_expanding_it(serve, monkeypatch):
    import gzip
    import tracemalloc

    import core.models.endpoint as endpoint

    monkeypatch.setattr(endpoint, "MAX_REPLY_BYTES", 1024 * 1024)
    bomb = gzip.compress(b"[" + b" " * (200 * 1024 * 1024) + b"]", compresslevel=9)  # 200 MiB of JSON

    def send_bomb(handler):
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Encoding", "gzip")
        handler.send_header("Content-Length", str(len(bomb)))
        handler.end_headers()
        handler.wfile.write(bomb)

    m = model(serve(send_bomb, OK))
    tracemalloc.start()
    try:
        with pytest.raises(GenerationError, match="longer than 1048576 bytes"):
            m.chat(USER)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 32 * 1024 * 1024  # a few times the limit, not the 200 MiB it expands to
    assert m.chat(USER) == "Paris."


@pytest.mark.parametrize("key", ["sk-abc\n", "sk-abc…"])  # a pasted line break, a pasted ellipsis
def test_an_api_key_http_cannot_carry_fails_at_once_without_showing_the_key(serve, key):
    from core.errors import is_transient

    server = serve(OK)
    m = OpenAIChatModel("m", base_url=server.base_url, api_key=key, max_attempts=3, retry_wait_s=5.0, timeout_s=5)
    with pytest.raises(GenerationError, match="API key") as failed:
        m.chat(USER)
    assert "sk-abc" not in str(failed.value) and not is_transient(failed.value) and server.paths == []


def test_a_proxy_given_as_host_and_port_is_an_http_proxy(serve, clean_env):
    proxy = serve(OK)
    clean_env.setenv("HTTP_PROXY", proxy.root.removeprefix("http://"))
    assert OpenAIChatModel("m", base_url="http://chat.invalid/v1", api_key="k", max_attempts=1).chat(USER) == "Paris."
    assert proxy.paths == ["http://chat.invalid/v1/chat/completions"]


def _redirect(status, location, seen):
    def step(handler):
        seen.append(handler.headers.get("Authorization"))
        handler.send_response(status)
        handler.send_header("Location", location)
        handler.send_header("Content-Length", "0")
        handler.end_headers()
    return step


def _answer(seen):
    def step(handler):
        seen.append(handler.headers.get("Authorization"))
        raw = json.dumps(completion("moved")).encode()
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(raw)))
        handler.end_headers()
        handler.wfile.write(raw)
    return step


def test_307_and_308_are_followed_and_the_key_stays_with_its_origin(serve):
    seen_there: list = []
    there = serve(_answer(seen_there))
    seen: list = []
    here = serve(_redirect(307, "/v2/chat/completions", seen), _redirect(308, f"{there.base_url}/chat/completions", seen))
    assert model(here).chat(USER) == "moved"
    assert here.paths == ["/v1/chat/completions", "/v2/chat/completions"]
    assert seen == ["Bearer k", "Bearer k"]  # the same origin gets the key
    assert there.paths == ["/v1/chat/completions"] and seen_there == [None]  # another origin does not
    assert there.bodies[0]["messages"] == USER  # the POST and its body are kept


def test_a_redirect_loop_and_a_303_are_errors(serve):
    seen: list = []
    with pytest.raises(GenerationError, match="APIStatusError: Error code: 307"):
        model(serve(_redirect(307, "/v1/chat/completions", seen))).chat(USER)
    assert len(seen) == 6  # the request and five redirects
    with pytest.raises(GenerationError, match="APIStatusError: Error code: 303"):
        model(serve(_redirect(303, "/elsewhere", []))).chat(USER)


def test_an_error_reply_is_read_only_as_far_as_its_message_needs(serve):
    import time

    huge = b"x" * (50 * 1024 * 1024)
    m = model(serve((500, "text/plain", huge), OK), attempts=1)
    started = time.perf_counter()
    with pytest.raises(GenerationError, match="InternalServerError: Error code: 500 - xxx"):
        m.chat(USER)
    assert time.perf_counter() - started < 5
    assert m.chat(USER) == "Paris."  # on a new connection: the rest of that body is never read


def test_an_entra_id_token_that_cannot_be_had_is_a_generation_error():
    from core.errors import is_transient

    def no_token():
        raise RuntimeError("ManagedIdentityCredential: no identity endpoint")

    m = OpenAIChatModel("dep", base_url="http://127.0.0.1:9", azure_api_version="2024-10-21",
                        azure_ad_token_provider=no_token, max_attempts=3, retry_wait_s=5.0)
    with pytest.raises(GenerationError, match="AuthenticationError: no Microsoft Entra ID token.*no identity") as e:
        m.chat(USER)
    assert not is_transient(e.value)
