"""``ragtune serve``: the pages of every report in a store, over HTTP (Starlette on uvicorn).

| route | page |
| --- | --- |
| ``GET /`` | the index: evaluate runs newest first, golden files, experiments, chunking reports |
| ``GET /runs/{run_id}`` | an evaluate run (``latest``: the newest) |
| ``GET /runs/{run_id}/report.json`` | its report, as stored |
| ``GET /experiments/{experiment_id}`` | an experiment, finished or running |
| ``GET /chunking/{runs or sweeps}/{id}`` | a chunking run or sweep |
| ``GET /history?golden=SHA256_OR_PATH`` | every run on one golden file over time |
| ``GET /compare?a=RUN&b=RUN`` | two runs compared, with the exact paired test |
| ``GET /assets/plotly-<hash>.min.js`` | the one plotly.js every page references (cached a year) |

Pages are ``text/html; charset=utf-8`` with :data:`core.reports.pages.PAGE_CSP`; they share
one copy of plotly.js (:func:`core.reports.pages.render.plotly_asset`), which a browser fetches
once and keeps (``Cache-Control: immutable``; a matching ``If-None-Match`` is answered 304). An id that is
not stored is 404, a malformed one 400, a store that cannot be read 502, each with a short
page saying so (the trace goes to the log). starlette and uvicorn are imported when the app
is built.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any, Callable

from core.errors import ConfigError, NotStoredError, RagtuneError, StoreError
from core.experiment.engine import report_so_far
from core.reports.app_runs import load_app_run
from core.reports.files import is_safe_id
from core.reports.pages import (
    PAGE_HEADERS,
    Links,
    chunking_page,
    compare_page,
    experiment_page,
    history_page,
    index_page,
    run_page,
)
from core.reports.pages.app_page import render_app
from core.reports.pages.render import page_asset
from core.reports.pages.site import error_page

if TYPE_CHECKING:
    import socket

    from core.reports.store import ReportStore

logger = logging.getLogger(__name__)

#: The address ``ragtune serve`` listens on unless told otherwise: this machine only.
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8321
#: Seconds a request in flight may take to finish once ``ragtune serve`` is told to stop.
SHUTDOWN_GRACE_S = 5


def _page(html: str, status: int = 200) -> Any:
    from starlette.responses import HTMLResponse

    return HTMLResponse(html, status_code=status, headers=PAGE_HEADERS)


def _error(status: int, message: str, links: Links) -> Any:
    return _page(error_page(status, message, links), status)


def create_app(store: ReportStore, where: str = "") -> Any:
    """The ASGI app serving ``store``'s pages.

    Args:
        store: a :class:`~core.reports.store.ReportStore` (any ``Files``: local, S3, Blob).
        where: the store's address as the index shows it (no credentials).

    Returns:
        A ``starlette.applications.Starlette`` app.
    """
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    links = Links()

    def guarded(build: Callable[[Request], Response]) -> Callable[[Request], Response]:
        def endpoint(request: Request) -> Response:
            try:
                return build(request)
            except NotStoredError as exc:
                return _error(404, str(exc), links)
            except StoreError as exc:
                logger.exception("report store read failed")
                return _error(502, str(exc), links)
            except ConfigError as exc:
                return _error(400, str(exc), links)
            except RagtuneError as exc:
                logger.exception("page failed")
                return _error(500, str(exc), links)
        return endpoint

    def need_id(value: str | None, what: str) -> str:
        if not is_safe_id(value):
            raise ConfigError(f"{what} may only hold letters, digits, '_', '.' and '-'")
        return str(value)

    def index(request: Request) -> Response:
        return _page(index_page(store, links, where))

    def run(request: Request) -> Response:
        return _page(run_page(store, need_id(request.path_params["run_id"], "run id"), links))

    def run_json(request: Request) -> Response:
        report = store.load_run(need_id(request.path_params["run_id"], "run id"))
        return Response(json.dumps(report, ensure_ascii=False, allow_nan=False), media_type="application/json")

    def experiment(request: Request) -> Response:
        return _page(experiment_page(store.files, need_id(request.path_params["experiment_id"], "experiment id"), links,
                                     report_so_far))

    def chunking(request: Request) -> Response:
        return _page(chunking_page(store.files, request.path_params["kind"],
                                   need_id(request.path_params["report_id"], "report id"), links))

    def app_run(request: Request) -> Response:
        return _page(render_app(load_app_run(store, need_id(request.path_params["run_id"], "run id")), links))

    def history(request: Request) -> Response:
        golden = (request.query_params.get("golden") or "").strip()
        if not golden:
            raise ConfigError("give the golden file: /history?golden=<sha256 or path>")
        return _page(history_page(store, golden, links))

    def compare(request: Request) -> Response:
        a = need_id(request.query_params.get("a"), "run a")
        b = need_id(request.query_params.get("b"), "run b")
        return _page(compare_page(store, a, b, links))

    def asset(request: Request) -> Response:
        found = page_asset(request.path_params["name"])
        if found is None:
            return Response("no such asset", status_code=404, media_type="text/plain; charset=utf-8")
        if request.headers.get("if-none-match") == found.etag:
            return Response(status_code=304, headers={k: v for k, v in found.headers.items() if k != "Content-Type"})
        return Response(found.body, headers=found.headers)

    routes = [
        Route("/", guarded(index)),
        Route("/assets/{name}", guarded(asset)),
        Route("/runs/{run_id}", guarded(run)),
        Route("/runs/{run_id}/report.json", guarded(run_json)),
        Route("/experiments/{experiment_id}", guarded(experiment)),
        Route("/chunking/{kind}/{report_id}", guarded(chunking)),
        Route("/apps/{run_id}", guarded(app_run)),
        Route("/history", guarded(history)),
        Route("/compare", guarded(compare)),
    ]
    return Starlette(routes=routes)


def listen(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``(host, port)`` and listening (``SO_REUSEADDR`` set, as uvicorn
    sets it), for :func:`serve`.

    Args:
        host: a name or address (IPv4 or IPv6).
        port: 0-65535 (0: a free port the system chooses).

    Raises:
        ConfigError: the port is out of range, the host unknown, or the address cannot be bound
            (taken, not this machine's, not allowed); the message names ``host:port``.
    """
    import socket

    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ConfigError(f"port must be 0-65535, got {port!r}")
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                             flags=socket.AI_PASSIVE)[0]
    except socket.gaierror as exc:
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)  # uvicorn's default backlog
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


def serve(store: ReportStore, *, where: str = "", host: str = DEFAULT_HOST, port: int = DEFAULT_PORT,
          on_listening: Callable[[str], None] | None = None) -> None:
    """Serve ``store``'s pages until interrupted (uvicorn, one process).

    Args:
        store: a :class:`~core.reports.store.ReportStore`.
        where: the store's address, shown on the index.
        host: the address to listen on (default this machine only).
        port: the TCP port (0: a free one).
        on_listening: called with the server's URL (``http://host:port/``, the port bound)
            once the socket listens, before the first request is served.

    On SIGINT or SIGTERM, requests in flight get :data:`SHUTDOWN_GRACE_S` seconds to finish;
    then the connections still open (a browser's keep-alive ones) are closed and it exits.

    Raises:
        ConfigError: the address cannot be listened on (:func:`listen`); nothing is served.
    """
    import uvicorn

    sock = listen(host, port)
    try:
        bound = sock.getsockname()[1]
        shown = f"[{host}]" if ":" in host else host
        config = uvicorn.Config(create_app(store, where), host=host, port=bound, log_level="warning",
                                access_log=False, timeout_graceful_shutdown=SHUTDOWN_GRACE_S)
        if on_listening is not None:
            on_listening(f"http://{shown}:{bound}/")
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
