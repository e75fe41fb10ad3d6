"""A scripted rerank endpoint for tests (Cohere / Jina / vLLM shape, and TEI's), over real HTTP.

Scores are computed so tests can compute them too (:func:`overlap_score`): the share of the
query's words that the passage holds. Results come back in reverse order, so a client must
place them by ``index``. The server can be told to fail the next requests with status codes
(429, 503, ...) or to answer a given raw body (malformed JSON, missing indices).
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler
from tests.support.httpd import LocalHTTPServer

_WORD = re.compile(r"\w+")


def overlap_score(query: str, passage: str) -> float:
    """The score the server gives: |query words in the passage| / |query words| (lower-cased)."""
    q = set(_WORD.findall(query.lower()))
    p = set(_WORD.findall(passage.lower()))
    return len(q & p) / len(q) if q else 0.0


class RerankTestServer:
    """Serves ``POST /v1/rerank`` on 127.0.0.1 at a free port, in a background thread.

    Attributes:
        base_url: ``http://127.0.0.1:<port>/v1``.
        requests: every request body received (parsed JSON), in order.
        headers: every request's headers, in order.
        fail_next: status codes to answer the next requests with, consumed in order.
        raw_next: raw bodies (bytes) to answer the next requests with, status 200.
    """

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.fail_next: list[int] = []
        self.raw_next: list[bytes] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                return

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                server.requests.append(body)
                server.headers.append(dict(self.headers))
                if server.fail_next:
                    self._send(server.fail_next.pop(0), b'{"message": "scripted failure"}')
                    return
                if server.raw_next:
                    self._send(200, server.raw_next.pop(0))
                    return
                if not self.path.rstrip("/").endswith("/rerank"):
                    self._send(404, b'{"message": "not found"}')
                    return
                if "texts" in body:  # TEI
                    items = [{"index": i, "score": overlap_score(body["query"], t)} for i, t in enumerate(body["texts"])]
                    items.reverse()
                    self._send(200, json.dumps(items).encode())
                    return
                docs = body["documents"]
                items = [{"index": i, "relevance_score": overlap_score(body["query"], d)} for i, d in enumerate(docs)]
                items.reverse()
                self._send(200, json.dumps({"id": "test", "results": items[: body.get("top_n", len(docs))]}).encode())

            def _send(self, code: int, payload: bytes) -> None:
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self._httpd = LocalHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self) -> "RerankTestServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
