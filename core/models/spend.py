"""What one piece of work spent on models: texts embedded, chat requests, tokens.

Evaluations run side by side in threads and share their models (and the models' running
counters), so what *one* evaluation cost is tallied here instead: :func:`spending` opens a
:class:`Spend` for the code it wraps (a ``contextvars`` variable, so every thread has its own),
the cached embedding model and the chat models add to the open one, and :func:`carry_spend`
hands it to the threads of a pool the work starts.

Tokens are known only when the endpoint sends them: an OpenAI-compatible reply's ``usage``
field (``prompt_tokens``, ``completion_tokens``). A request whose reply has no ``usage`` makes
the tokens unknown (None), never zero.

Example:
    >>> with spending() as spend:
    ...     run_single_evaluation(...)
    >>> spend.to_dict()["texts_embedded"]

References:
    OpenAI Chat Completions, the ``usage`` object:
    https://platform.openai.com/docs/api-reference/chat/object#chat/object-usage
"""

from __future__ import annotations

import contextlib
import threading
from contextvars import ContextVar
from typing import Any, Callable, Iterable, Iterator, TypeVar

_T = TypeVar("_T")


class Spend:
    """A thread-safe tally of what one piece of work spent.

    Attributes:
        texts_embedded: distinct texts this work sent to an embedding model.
        chat_requests: chat (and judge) requests sent to an endpoint (cached replies not
            counted).
        replies_from_cache: chat replies read from the reply cache.
        prompt_tokens / completion_tokens: sums of the replies' ``usage`` fields.
        requests_without_usage: requests whose reply had no ``usage`` (their tokens are
            unknown).
    """

    def __init__(self) -> None:
        self.texts_embedded = 0
        self.chat_requests = 0
        self.replies_from_cache = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.requests_without_usage = 0
        self._asked: set[bytes] = set()
        self._lock = threading.Lock()

    def add_embedding(self, asked_keys: Iterable[str], n_sent: int) -> None:
        """Record one embedding call: the hex sha256 of every text asked for and how many
        distinct texts went to the model (the rest came from the cache)."""
        keys = [bytes.fromhex(k) for k in asked_keys]
        with self._lock:
            self._asked.update(keys)
            self.texts_embedded += int(n_sent)

    def add_request(self, prompt_tokens: int | None, completion_tokens: int | None) -> None:
        """Record one chat request; None tokens mean the reply said nothing of its usage."""
        with self._lock:
            self.chat_requests += 1
            if prompt_tokens is None and completion_tokens is None:
                self.requests_without_usage += 1
            else:
                self.prompt_tokens += int(prompt_tokens or 0)
                self.completion_tokens += int(completion_tokens or 0)

    def add_cached_reply(self) -> None:
        """Record one chat reply read from the cache (no tokens spent)."""
        with self._lock:
            self.replies_from_cache += 1

    def to_dict(self) -> dict[str, Any]:
        """``{texts_embedded, texts_from_cache, chat_requests, replies_from_cache,
        prompt_tokens, completion_tokens, tokens}``: ``texts_from_cache`` are the distinct
        texts asked for and not sent by this work (cached, or embedded by other work at the
        same time); the three token counts are None when any request's reply had no
        ``usage``; ``tokens`` is their sum (0 when no request was sent)."""
        with self._lock:
            known = self.requests_without_usage == 0
            return {
                "texts_embedded": self.texts_embedded,
                "texts_from_cache": max(0, len(self._asked) - self.texts_embedded),
                "chat_requests": self.chat_requests,
                "replies_from_cache": self.replies_from_cache,
                "prompt_tokens": self.prompt_tokens if known else None,
                "completion_tokens": self.completion_tokens if known else None,
                "tokens": self.prompt_tokens + self.completion_tokens if known else None,
            }


_current: ContextVar[Spend | None] = ContextVar("ragtune_spend", default=None)


@contextlib.contextmanager
def spending() -> Iterator[Spend]:
    """Tally what the wrapped code spends (in this thread and the pools it hands the tally to
    with :func:`carry_spend`); an enclosing tally does not see it."""
    spend = Spend()
    token = _current.set(spend)
    try:
        yield spend
    finally:
        _current.reset(token)


def current_spend() -> Spend | None:
    """The tally open in this thread, or None."""
    return _current.get()


def carry_spend(fn: Callable[..., _T]) -> Callable[..., _T]:
    """``fn`` made to add to the tally open now, on whichever thread it runs (wrap what a
    ``ThreadPoolExecutor`` runs); ``fn`` itself when no tally is open."""
    spend = _current.get()
    if spend is None:
        return fn

    def run(*args: Any, **kwargs: Any) -> _T:
        token = _current.set(spend)
        try:
            return fn(*args, **kwargs)
        finally:
            _current.reset(token)

    return run


__all__ = ["Spend", "carry_spend", "current_spend", "spending"]
