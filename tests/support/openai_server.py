"""A local OpenAI-compatible HTTP server for tests (embeddings endpoint).

Vectors are deterministic: each text maps to a unit vector derived from its sha256, so tests
can compute the expected vector themselves with :func:`expected_vector`. The server can be told
to fail the next requests with given status codes (429, 500, ...) to exercise retries.
"""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler

import numpy as np
from tests.support.httpd import LocalHTTPServer


def expected_vector(text: str, dim: int) -> np.ndarray:
    """The unit float32 vector the server returns for ``text``."""
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
    vec = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return vec / np.linalg.norm(vec)


class OpenAITestServer:
    """Serves ``POST /v1/embeddings`` on 127.0.0.1 at a free port, in a background thread.

    Attributes:
        base_url: ``http://127.0.0.1:<port>/v1``.
        requests: every request body received (parsed JSON), in order.
        fail_next: status codes to answer the next requests with, consumed in order.
        max_input_tokens: when set, an input of more words than this is refused with a 400, as
            an endpoint refuses an input longer than its context.
    """

    def __init__(self, dim: int = 8, max_input_tokens: int | None = None) -> None:
        self.dim = dim
        self.max_input_tokens = max_input_tokens
        self.requests: list[dict] = []
        self.fail_next: list[int] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # keep test output quiet
                return

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                server.requests.append(body)
                if server.fail_next:
                    code = server.fail_next.pop(0)
                    self._send(code, {"error": {"message": f"test failure {code}", "type": "test", "code": code}})
                    return
                if self.path.rstrip("/").endswith("/embeddings"):
                    inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
                    limit = server.max_input_tokens
                    if limit is not None and any(len(t.split()) > limit for t in inputs):  # a word per token
                        self._send(400, {"error": {"message": f"maximum context length is {limit} tokens",
                                                   "type": "invalid_request_error", "code": None}})
                        return
                    dim = int(body.get("dimensions") or server.dim)
                    data = [
                        {"object": "embedding", "index": i, "embedding": expected_vector(t, dim).tolist()}
                        for i, t in enumerate(inputs)
                    ]
                    data.reverse()  # the client must order by index
                    self._send(200, {"object": "list", "data": data, "model": body.get("model"),
                                     "usage": {"prompt_tokens": 0, "total_tokens": 0}})
                    return
                self._send(404, {"error": {"message": f"no route {self.path}"}})

            def _send(self, code: int, payload: dict) -> None:
                raw = json.dumps(payload).encode("utf-8")
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self._httpd = LocalHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self) -> "OpenAITestServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
