"""A total deadline for one HTTP request over ``urllib3``, however slowly its reply arrives.

A socket timeout bounds each read, not the request: a server that sends one byte every few
seconds never lets a read time out and holds the caller for ever. Here every request runs
inside a :class:`RequestDeadline`; the connections it uses register themselves with it (the
connection classes of :func:`watched_pool_classes`, set on a ``PoolManager``), and one watchdog
thread shuts their sockets down when the deadline passes, which ends any read or write in
progress at once, in the middle of the headers, the body or a TLS handshake alike. The caller
then sees the deadline's :attr:`RequestDeadline.expired` and reports a timeout.

References:
    ``socket.shutdown(SHUT_RDWR)`` ends a blocked ``recv`` in another thread (POSIX
    ``shutdown(2)``); urllib3's ``PoolManager.pool_classes_by_scheme`` and
    ``HTTPConnectionPool.ConnectionCls`` choose the classes a pool makes connections with.
"""

from __future__ import annotations

import heapq
import itertools
import socket
import threading
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from urllib3.connection import HTTPConnection

#: Seconds between further attempts to shut a connection down once its deadline has passed
#: (a socket being wrapped in TLS at that moment is caught by the next attempt).
RETRY_SHUTDOWN_S = 0.05

_current = threading.local()


class RequestDeadline:
    """The deadline of the requests made in a ``with`` block by this thread.

    Args:
        seconds: the total time allowed, from entering the block.

    Attributes:
        expired: True once the deadline passed before the block ended (the connections in
            use were then shut down: they must not be reused).
    """

    def __init__(self, seconds: float) -> None:
        self.seconds = float(seconds)
        self.expired = False
        self.done = False
        self._connections: list[Any] = []
        self._lock = threading.Lock()
        self._outer: RequestDeadline | None = None

    def remaining_s(self) -> float:
        """Seconds left (0 once passed)."""
        return max(0.0, self._at - time.monotonic())

    def __enter__(self) -> "RequestDeadline":
        self._at = time.monotonic() + self.seconds
        self._outer = getattr(_current, "deadline", None)
        _current.deadline = self
        _watchdog().add(self._at, self)
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self.done = True
            self._connections.clear()
        _current.deadline = self._outer
        _watchdog().finished()

    def watch(self, connection: HTTPConnection) -> None:
        """Shut ``connection`` (its current ``sock``) down when the deadline passes; at once
        when it has passed already."""
        with self._lock:
            if self.done:
                return
            if connection not in self._connections:
                self._connections.append(connection)
            expired = self.expired
        if expired:
            _shut(connection)

    def expire(self) -> bool:
        """Mark the deadline passed and shut down every connection watched; returns whether
        the block is still running (the watchdog then tries again shortly)."""
        with self._lock:
            if self.done:
                return False
            self.expired = True
            connections = list(self._connections)
        for connection in connections:
            _shut(connection)
        return True


def _shut(connection: HTTPConnection) -> None:
    sock = getattr(connection, "sock", None)
    if sock is None:
        return
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except (OSError, ValueError):  # closed already, or detached while being wrapped in TLS
        pass


def current_deadline() -> RequestDeadline | None:
    """The deadline of the innermost ``with RequestDeadline(...)`` block of this thread, if any."""
    return getattr(_current, "deadline", None)


class _Watchdog:
    """One daemon thread that expires deadlines in the order they fall due."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, RequestDeadline]] = []
        self._live = 0  # deadlines added and not finished
        self._counter = itertools.count()
        self._wake = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="ragtune-request-deadlines", daemon=True)
        self._thread.start()

    def add(self, at: float, deadline: RequestDeadline, *, again: bool = False) -> None:
        with self._wake:
            self._live += 0 if again else 1
            if len(self._heap) > 1024 and len(self._heap) > 4 * self._live:  # mostly finished ones: drop them
                self._heap = [entry for entry in self._heap if not entry[2].done]
                heapq.heapify(self._heap)
            heapq.heappush(self._heap, (at, next(self._counter), deadline))
            if self._heap[0][2] is deadline:
                self._wake.notify()

    def finished(self) -> None:
        with self._wake:
            self._live -= 1

    def _run(self) -> None:
        while True:
            with self._wake:
                while self._heap and self._heap[0][2].done:
                    heapq.heappop(self._heap)  # finished in time: forgotten
                if not self._heap:
                    self._wake.wait()
                    continue
                at, _, deadline = self._heap[0]
                wait = at - time.monotonic()
                if wait > 0:
                    self._wake.wait(wait)
                    continue
                heapq.heappop(self._heap)
            if deadline.expire():
                self.add(time.monotonic() + RETRY_SHUTDOWN_S, deadline, again=True)


_watchdog_lock = threading.Lock()
_watchdog_instance: _Watchdog | None = None


def _watchdog() -> _Watchdog:
    global _watchdog_instance
    with _watchdog_lock:
        if _watchdog_instance is None:
            _watchdog_instance = _Watchdog()
        return _watchdog_instance


def watched_pool_classes() -> dict[str, type]:
    """``urllib3`` connection pool classes for ``PoolManager.pool_classes_by_scheme`` whose
    connections register with the current :class:`RequestDeadline` when they connect and
    when they send a request (a connection taken again from the pool too)."""
    from urllib3.connection import HTTPConnection, HTTPSConnection
    from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

    class _Watched:
        def connect(self) -> None:
            deadline = current_deadline()
            if deadline is not None:
                deadline.watch(self)
            super().connect()  # type: ignore[misc]

        def request(self, *args: Any, **kwargs: Any) -> None:
            deadline = current_deadline()
            if deadline is not None:
                deadline.watch(self)
            super().request(*args, **kwargs)  # type: ignore[misc]

    class WatchedHTTPConnection(_Watched, HTTPConnection):
        pass

    class WatchedHTTPSConnection(_Watched, HTTPSConnection):
        pass

    class WatchedHTTPConnectionPool(HTTPConnectionPool):
        ConnectionCls = WatchedHTTPConnection

    class WatchedHTTPSConnectionPool(HTTPSConnectionPool):
        ConnectionCls = WatchedHTTPSConnection

    return {"http": WatchedHTTPConnectionPool, "https": WatchedHTTPSConnectionPool}


__all__ = ["RETRY_SHUTDOWN_S", "RequestDeadline", "current_deadline", "watched_pool_classes"]
