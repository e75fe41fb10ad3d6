"""A local OpenAI-compatible server for tests, on a real HTTP stack (starlette + uvicorn).

It runs in a background thread on 127.0.0.1 at a free port and serves:

- ``POST /v1/embeddings``: vectors from a real embedding model (by default the local
  all-MiniLM-L6-v2, :class:`core.models.LocalEmbeddingModel`, loaded on the first request),
  as float lists or base64 float32 (``encoding_format``), in OpenAI's response shape. Scripted
  :class:`EmbeddingReply` objects (:meth:`OpenAITestApp.reply_embeddings`) answer first: the
  model's vectors changed (NaN, zeros), or a raw body (malformed JSON, an HTML page), sent at
  once or a byte at a time.
- ``POST /v1/chat/completions`` (and Azure OpenAI's
  ``/openai/deployments/{deployment}/chat/completions``): scripted replies. A script is a queue
  of replies (consumed in order) and/or a function of the request body; a reply is a string or
  a :class:`ChatReply` (status code, delay, empty content, finish reason).

Every request is recorded in :attr:`OpenAITestApp.requests`. Example::

    with OpenAITestApp(chat=["0.8", ChatReply(status=429), "Score: 1"]) as app:
        model = OpenAIChatModel("judge", base_url=app.base_url)

References:
    OpenAI API reference (chat completions, embeddings):
    https://platform.openai.com/docs/api-reference
"""

from __future__ import annotations

import asyncio
import base64
import collections
import json
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable

import numpy as np


@dataclass(frozen=True)
class ChatReply:
    """One scripted chat completion.

    Attributes:
        content: the assistant text; None or ``""`` sends an empty reply.
        status: HTTP status; anything but 200 sends an OpenAI-style error body.
        delay_s: seconds to wait before answering (longer than the client timeout to make it
            time out).
        finish_reason: the choice's ``finish_reason``.
        usage: whether the reply has a ``usage`` field (word counts stand in for tokens);
            some OpenAI-compatible servers send none.
    """

    content: str | None = "ok"
    status: int = 200
    delay_s: float = 0.0
    finish_reason: str = "stop"
    usage: bool = True


@dataclass(frozen=True)
class EmbeddingReply:
    """One scripted answer to an embeddings request.

    Attributes:
        transform: a function of the model's float32 vectors ``(n, dim)`` giving the vectors
            sent instead (``lambda v: v * np.nan``); JSON floats are written as Python's
            ``json`` writes them (``NaN``, ``Infinity``), base64 as float32 bytes.
        body: raw bytes sent instead of a reply (with ``status`` and ``content_type``).
        status: the HTTP status of ``body``.
        content_type: the content type of ``body``.
        trickle_s: seconds between the bytes of the reply, sent one at a time (0: at once).
        encoding_format: ``"float"`` or ``"base64"`` whatever the request asked (as servers
            that ignore the field do), or None: as asked.
    """

    transform: Callable[[np.ndarray], np.ndarray] | None = None
    body: bytes | None = None
    status: int = 200
    content_type: str = "application/json"
    trickle_s: float = 0.0
    encoding_format: str | None = None


Reply = str | ChatReply
Responder = Callable[[dict[str, Any]], Reply]


def last_user_text(body: dict[str, Any]) -> str:
    """The content of the last user message of a chat request body ("" when none)."""
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) else ""
    return ""


class OpenAITestApp:
    """An OpenAI-compatible server in a background thread (use it as a context manager).

    Args:
        chat: scripted chat replies: a list (a queue, consumed in order), a function of the
            request body, or None. When both a queue and ``responder`` are set the queue
            answers first. With nothing left to answer, the server replies 400 (not retried).
        responder: a function ``body -> reply`` answering when the queue is empty.
        embedding_model: the model behind ``/v1/embeddings``; None loads
            :class:`core.models.LocalEmbeddingModel` on the first embeddings request.

    Attributes:
        base_url: ``http://127.0.0.1:<port>/v1`` once started.
        endpoint: ``http://127.0.0.1:<port>`` (the Azure OpenAI ``azure_endpoint``).
        requests: every request as ``{"path", "query", "body", "received_at"}``, in order.
    """

    def __init__(
        self,
        chat: Iterable[Reply] | Responder | None = None,
        *,
        responder: Responder | None = None,
        embedding_model: Any = None,
    ) -> None:
        self._queue: collections.deque[Reply] = collections.deque()
        self.responder = responder
        if callable(chat):
            self.responder = chat
        elif chat is not None:
            self._queue.extend(chat)
        self._embedding_model = embedding_model
        self._embedding_queue: collections.deque[EmbeddingReply] = collections.deque()
        self._model_lock = threading.Lock()
        self._lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self.base_url = ""
        self.endpoint = ""
        self._server: Any = None
        self._thread: threading.Thread | None = None

    # --- scripting ---------------------------------------------------------------------------

    def reset(self) -> None:
        """Forget the scripted replies, the responder and the request log."""
        with self._lock:
            self._queue.clear()
        self.requests.clear()
        self.responder = None

    def reply(self, *replies: Reply) -> None:
        """Append replies to the queue."""
        with self._lock:
            self._queue.extend(replies)

    def reply_embeddings(self, *replies: EmbeddingReply) -> None:
        """Append scripted answers to embeddings requests (each answers one request, in order)."""
        with self._lock:
            self._embedding_queue.extend(replies)

    def _next_embedding_reply(self) -> EmbeddingReply | None:
        with self._lock:
            return self._embedding_queue.popleft() if self._embedding_queue else None

    @property
    def pending(self) -> int:
        """Replies left in the queue."""
        with self._lock:
            return len(self._queue)

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        """The bodies of the chat completion requests received, in order."""
        return [r["body"] for r in self.requests if r["path"].endswith("/chat/completions")]

    @property
    def embedding_requests(self) -> list[dict[str, Any]]:
        """The bodies of the embeddings requests received, in order."""
        return [r["body"] for r in self.requests if r["path"].endswith("/embeddings")]

    def _next_reply(self, body: dict[str, Any]) -> Reply | None:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        if self.responder is not None:
            return self.responder(body)
        return None

    def _model(self) -> Any:
        with self._model_lock:
            if self._embedding_model is None:
                from core.models import LocalEmbeddingModel

                self._embedding_model = LocalEmbeddingModel()
            return self._embedding_model

    # --- the ASGI app ------------------------------------------------------------------------

    def _app(self) -> Any:
        from starlette.applications import Starlette
        from starlette.concurrency import run_in_threadpool
        from starlette.requests import Request
        from starlette.responses import JSONResponse, Response, StreamingResponse
        from starlette.routing import Route

        def error(status: int, message: str) -> JSONResponse:
            kind = "rate_limit_error" if status == 429 else ("server_error" if status >= 500 else "invalid_request_error")
            return JSONResponse({"error": {"message": message, "type": kind, "code": status}}, status_code=status)

        async def read(request: Request) -> dict[str, Any]:
            try:
                body = await request.json()
            except ValueError:
                body = None
            entry = {"path": request.url.path, "query": dict(request.query_params), "body": body,
                     "received_at": time.monotonic(), "authorization": request.headers.get("authorization"),
                     "api_key": request.headers.get("api-key")}
            with self._lock:
                self.requests.append(entry)
            return body if isinstance(body, dict) else {}

        async def chat(request: Request) -> JSONResponse:
            body = await read(request)
            if not isinstance(body.get("messages"), list) or not body["messages"]:
                return error(400, "'messages' must be a non-empty array")
            reply = await run_in_threadpool(self._next_reply, body)
            if reply is None:
                return error(400, "the test server has no scripted reply left")
            if isinstance(reply, str):
                reply = ChatReply(content=reply)
            if reply.delay_s > 0:
                await asyncio.sleep(reply.delay_s)
            if reply.status != 200:
                return error(reply.status, f"scripted failure {reply.status}")
            prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in body["messages"])
            completion_tokens = len((reply.content or "").split())
            completion = {
                "id": f"chatcmpl-test-{len(self.requests)}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model") or request.path_params.get("deployment", "test"),
                "choices": [{
                    "index": 0,
                    "message": {"role": "assistant", "content": reply.content},
                    "finish_reason": reply.finish_reason,
                }],
            }
            if reply.usage:
                completion["usage"] = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                                       "total_tokens": prompt_tokens + completion_tokens}
            return JSONResponse(completion)

        def send(raw: bytes, status: int, content_type: str, trickle_s: float) -> Response:
            if trickle_s <= 0:
                return Response(raw, status_code=status, media_type=content_type)

            async def one_byte_at_a_time():
                for i in range(len(raw)):
                    yield raw[i:i + 1]
                    await asyncio.sleep(trickle_s)

            return StreamingResponse(one_byte_at_a_time(), status_code=status, media_type=content_type)

        async def embeddings(request: Request) -> Response:
            body = await read(request)
            scripted = self._next_embedding_reply()
            if scripted is not None and scripted.body is not None:
                return send(scripted.body, scripted.status, scripted.content_type, scripted.trickle_s)
            inputs = body.get("input")
            if isinstance(inputs, str):
                inputs = [inputs]
            if not isinstance(inputs, list) or not inputs or not all(isinstance(t, str) for t in inputs):
                return error(400, "'input' must be a string or a non-empty array of strings")
            vectors = await run_in_threadpool(lambda: self._model().embed_documents(inputs))
            vectors = np.asarray(vectors, dtype=np.float32)
            if scripted is not None and scripted.transform is not None:
                vectors = np.asarray(scripted.transform(vectors), dtype=np.float32)
            asked = scripted.encoding_format if scripted is not None and scripted.encoding_format else None
            as_base64 = (asked or body.get("encoding_format")) == "base64"
            data = []
            for i, vec in enumerate(vectors):
                value: Any = base64.b64encode(vec.astype("<f4").tobytes()).decode("ascii") if as_base64 else vec.tolist()
                data.append({"object": "embedding", "index": i, "embedding": value})
            n_tokens = sum(len(t.split()) for t in inputs)
            reply = {"object": "list", "data": data, "model": body.get("model"),
                     "usage": {"prompt_tokens": n_tokens, "total_tokens": n_tokens}}
            return send(json.dumps(reply).encode("utf-8"), 200, "application/json",  # NaN written as NaN
                        scripted.trickle_s if scripted is not None else 0.0)

        return Starlette(routes=[
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/openai/deployments/{deployment}/chat/completions", chat, methods=["POST"]),
            Route("/v1/embeddings", embeddings, methods=["POST"]),
            Route("/openai/deployments/{deployment}/embeddings", embeddings, methods=["POST"]),
        ])

    # --- lifecycle -----------------------------------------------------------------------------

    def start(self, timeout_s: float = 10.0) -> "OpenAITestApp":
        """Start serving; returns when the server accepts connections.

        Raises:
            RuntimeError: the server did not start within ``timeout_s``.
        """
        import uvicorn

        # IPPROTO_TCP named: asyncio sets TCP_NODELAY only on sockets whose proto says TCP, and
        # without it every answer on a kept-alive connection waits some 40 ms for the client's
        # delayed ACK (the headers and the body are written separately)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        config = uvicorn.Config(
            self._app(), log_level="warning", access_log=False, lifespan="off", timeout_graceful_shutdown=1,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, daemon=True,
                                        name=f"openai-test-app-{port}")
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the OpenAI test server did not start")
            time.sleep(0.01)
        self.endpoint = f"http://127.0.0.1:{port}"
        self.base_url = f"{self.endpoint}/v1"
        return self

    def stop(self) -> None:
        """Stop serving and wait for the thread (at most a few seconds)."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._server = None
        self._thread = None

    def __enter__(self) -> "OpenAITestApp":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
