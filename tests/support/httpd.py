"""The HTTP server the tests' local stand-ins run on."""

from __future__ import annotations

from http.server import ThreadingHTTPServer


class LocalHTTPServer(ThreadingHTTPServer):
    """A threading HTTP server whose listen backlog holds a burst of concurrent clients.

    ``socketserver``'s default backlog of 5 overflows when 16 client threads connect at once on a
    loaded machine, and the kernel then resets connections the client already counted as open.
    """

    request_queue_size = 128
    daemon_threads = True
