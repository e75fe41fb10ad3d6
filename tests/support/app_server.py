"""A scripted deployed RAG chat app for tests, on a real HTTP stack (starlette + uvicorn).

It answers ``POST /chat`` (and any other path posted to) in a background thread on 127.0.0.1
at a free port. What it answers is a function of the request: ``responder(body, request) ->
AppResponse`` (or a dict, sent as JSON with status 200). Every request is recorded in
:attr:`DeployedApp.requests` with its path, query, headers and body, so tests check what the
client sent. :func:`demo_reply` builds a reply in the shape azure-search-openai-demo sends
(``message.content``, ``context.data_points.text``, ``session_state``).

Example::

    with DeployedApp(lambda body, request: demo_reply("It is 42 [a.pdf#page=2]")) as app:
        client = AppClient(AppConfig(url=app.url), AppSettings())
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass(frozen=True)
class AppResponse:
    """One scripted reply.

    Attributes:
        body: a JSON value (sent as JSON), or a ``str`` sent as it is (malformed JSON).
        status: the HTTP status.
        delay_s: seconds to wait before answering.
        headers: more headers (``Retry-After``).
        trickle_s: when above 0, the body is sent one byte at a time, this many seconds apart
            (an app that answers but never finishes).
    """

    body: Any = None
    status: int = 200
    delay_s: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    trickle_s: float = 0.0


def demo_reply(answer: str, data_points: list[str] | None = None, session: Any = None,
               citations: list[Any] | None = None) -> dict[str, Any]:
    """A reply in azure-search-openai-demo's ``/chat`` shape (plus ``context.citations`` when given)."""
    context: dict[str, Any] = {"data_points": {"text": list(data_points or [])}, "thoughts": []}
    if citations is not None:
        context["citations"] = citations
    return {"message": {"role": "assistant", "content": answer}, "context": context, "session_state": session}


Responder = Callable[[Any, dict[str, Any]], "AppResponse | dict[str, Any]"]


class DeployedApp:
    """The scripted app in a background thread (use it as a context manager).

    Args:
        responder: ``(parsed JSON body or None, request record) -> AppResponse | dict``; it
            runs in a worker thread, may keep state, and is called once per request.

    Attributes:
        url: ``http://127.0.0.1:<port>/chat`` once started.
        root: ``http://127.0.0.1:<port>``.
        requests: every request as ``{"path", "query", "headers", "body", "received_at"}``.
    """

    def __init__(self, responder: Responder) -> None:
        self.responder = responder
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self.url = ""
        self.root = ""
        self._server: Any = None
        self._thread: threading.Thread | None = None

    @property
    def bodies(self) -> list[Any]:
        """The request bodies, in the order received."""
        return [r["body"] for r in self.requests]

    def _app(self) -> Any:
        from starlette.applications import Starlette
        from starlette.concurrency import run_in_threadpool
        from starlette.requests import Request
        from starlette.responses import JSONResponse, Response
        from starlette.routing import Route

        async def handle(request: Request) -> Response:
            raw = await request.body()
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = None
            entry = {"path": request.url.path, "query": dict(request.query_params),
                     "headers": {k.lower(): v for k, v in request.headers.items()}, "body": body,
                     "received_at": time.monotonic()}
            with self._lock:
                self.requests.append(entry)
            reply = await run_in_threadpool(self.responder, body, entry)
            if not isinstance(reply, AppResponse):
                reply = AppResponse(reply)
            if reply.delay_s > 0:
                await asyncio.sleep(reply.delay_s)
            if reply.trickle_s > 0:
                from starlette.responses import StreamingResponse

                data = reply.body.encode() if isinstance(reply.body, str) else json.dumps(reply.body).encode()

                async def trickle():
                    for i in range(len(data)):
                        yield data[i:i + 1]
                        await asyncio.sleep(reply.trickle_s)

                return StreamingResponse(trickle(), status_code=reply.status, headers=reply.headers,
                                         media_type="application/json")
            if isinstance(reply.body, str):
                return Response(reply.body, status_code=reply.status, headers=reply.headers,
                                media_type="application/json")
            return JSONResponse(reply.body, status_code=reply.status, headers=reply.headers)

        return Starlette(routes=[Route("/{path:path}", handle, methods=["POST"])])

    def start(self, timeout_s: float = 10.0) -> "DeployedApp":
        """Start serving; returns when the server accepts connections.

        Raises:
            RuntimeError: the server did not start within ``timeout_s``.
        """
        import uvicorn

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        config = uvicorn.Config(self._app(), log_level="warning", access_log=False, lifespan="off",
                                timeout_graceful_shutdown=1)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, daemon=True,
                                        name=f"deployed-app-{port}")
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the scripted app did not start")
            time.sleep(0.01)
        self.root = f"http://127.0.0.1:{port}"
        self.url = f"{self.root}/chat"
        return self

    def stop(self) -> None:
        """Stop serving and wait for the thread."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._server = None
        self._thread = None

    def __enter__(self) -> "DeployedApp":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
