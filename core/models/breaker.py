"""A circuit breaker for calls to a model endpoint: stop calling one that keeps failing.

Each call already retries on its own (``OpenAIChatModel``: tenacity, exponential backoff). When
an endpoint is down, every question would still wait through all its retries, so a run with a
dead judge or chat endpoint could spend many minutes producing nothing. After ``threshold``
calls in a row have failed, the breaker opens and the remaining calls are skipped at once; each
skipped item is recorded as failed with the reason, never dropped. One success closes it again
(calls already running when it opened may still succeed).

This is the "circuit breaker" pattern (Nygard, *Release It!*, 2007), without the half-open
probe: a run is short, so an open breaker stays open for the rest of the run.
"""

from __future__ import annotations

import threading

from core.errors import ConfigError


class CircuitBreaker:
    """Counts consecutive failures across threads.

    Args:
        threshold: consecutive failures that open the breaker (>= 1), or None for never.
        what: the endpoint's name in messages (``"chat model gpt-4o-mini"``).

    Raises:
        ConfigError: ``threshold`` below 1.
    """

    def __init__(self, threshold: int | None, what: str) -> None:
        if threshold is not None and int(threshold) < 1:
            raise ConfigError(f"the consecutive-failure threshold must be at least 1, got {threshold}")
        self.threshold = None if threshold is None else int(threshold)
        self.what = what
        self._lock = threading.Lock()
        self._failures = 0
        self._last_error = ""
        self.skipped = 0
        #: The error of the fatal failure that opened the breaker, or None.
        self.fatal_error: str | None = None

    def blocked(self) -> str | None:
        """None when a call may go ahead; else the reason it is skipped (and it is counted)."""
        with self._lock:
            if self.threshold is None or self._failures < self.threshold:
                return None
            self.skipped += 1
            if self.fatal_error is not None:
                return f"skipped: {self.what} cannot be called (error: {self.fatal_error})"
            return (f"skipped: {self.what} failed {self._failures} times in a row "
                    f"(last error: {self._last_error})")

    def record(self, ok: bool, error: str = "", *, fatal: bool = False) -> None:
        """Record a call's outcome: a success resets the count, a failure adds one; a
        ``fatal`` failure (one no later call can avoid, as missing credentials) opens the
        breaker at once."""
        with self._lock:
            if ok:
                self._failures = 0
            else:
                self._failures += 1
                if fatal and self.threshold is not None:
                    self._failures = max(self._failures, self.threshold)
                    if self.fatal_error is None:
                        self.fatal_error = error[:300]
                self._last_error = error[:300]

    @property
    def is_open(self) -> bool:
        """Whether calls are being skipped."""
        with self._lock:
            return self.threshold is not None and self._failures >= self.threshold
