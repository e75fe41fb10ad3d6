"""An HTTP server for tests that answers every request one byte at a time, a pause between
bytes: the endpoint that holds a client for ever when only each read has a timeout.

It runs on 127.0.0.1 at a free port in a background thread, on plain sockets, so it sends
exactly what it is told to: the status line and headers at once and then the body a byte at
a time (``phase="body"``), or the headers too (``phase="headers"``).
"""

from __future__ import annotations

import socket
import socketserver
import threading
import time


class TrickleServer:
    """Answers each request with ``body`` (a ``200`` with its ``Content-Length``), one byte every
    ``interval_s`` seconds.

    Attributes:
        base_url: ``http://127.0.0.1:<port>/v1``.
        requests: the request lines received (``"POST /v1/embeddings HTTP/1.1"``).
        gone_after_s: for each answer, the seconds from the request until the client closed the
            connection (or the whole reply was sent).
    """

    def __init__(self, body: bytes = b'{"data": []}' * 50, *, interval_s: float = 0.2, phase: str = "body") -> None:
        self.body = body
        self.interval_s = interval_s
        self.phase = phase
        self.requests: list[str] = []
        self.gone_after_s: list[float] = []
        outer = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                conn: socket.socket = self.request
                received = b""
                while b"\r\n\r\n" not in received:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    received += chunk
                head, _, rest = received.partition(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                length = next((int(v) for k, _, v in (ln.partition(":") for ln in lines[1:])
                               if k.strip().lower() == "content-length"), 0)
                while len(rest) < length:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    rest += chunk
                outer.requests.append(lines[0])
                started = time.monotonic()
                headers = (f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                           f"Content-Length: {len(outer.body)}\r\n\r\n").encode()
                trickled = headers + outer.body if outer.phase == "headers" else outer.body
                try:
                    if outer.phase != "headers":
                        conn.sendall(headers)
                    for i in range(len(trickled)):
                        conn.sendall(trickled[i:i + 1])
                        time.sleep(outer.interval_s)
                except OSError:  # the client gave up and closed the connection
                    pass
                outer.gone_after_s.append(time.monotonic() - started)

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self._server = Server(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True, name="trickle-server")

    def __enter__(self) -> "TrickleServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
