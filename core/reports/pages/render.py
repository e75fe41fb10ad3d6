"""Rendering pages: one Jinja2 environment (autoescape on), the plotly.js bundle (inlined in a
standalone page, or one shared asset that served pages reference), and the
Content-Security-Policy every page is served with.

jinja2 is imported when the first page is rendered; plotly.js is read from the ``plotly``
package's files (the Python package is never imported) once per process.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import os
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from core.errors import ConfigError

if TYPE_CHECKING:
    from core.reports.pages.site import Links

#: What a page may load: what it holds inline (scripts, styles, data: images) and scripts of
#: its own origin (the shared plotly.js a served page references, checked by its integrity
#: hash); nothing from any other origin, no plugins, no frames. Served as a header and
#: repeated in a ``<meta>`` element so a page saved to disk keeps it.
PAGE_CSP = ("default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'unsafe-inline'; img-src data: blob:; "
            "font-src data:; connect-src 'none'; base-uri 'none'; form-action 'self'")
#: The headers every page is served with (``frame-ancestors`` only works as a header).
PAGE_HEADERS = {"Content-Security-Policy": PAGE_CSP + "; frame-ancestors 'none'", "X-Content-Type-Options": "nosniff",
                "Referrer-Policy": "no-referrer"}
PAGE_MEDIA_TYPE = "text/html; charset=utf-8"


#: How long a browser keeps the shared plotly.js: a year, never revalidated (its name holds
#: its content's hash, so a new bundle has a new name).
ASSET_CACHE_CONTROL = "public, max-age=31536000, immutable"
ASSET_MEDIA_TYPE = "text/javascript; charset=utf-8"


@dataclass(frozen=True)
class PageAsset:
    """The shared plotly.js as a served file.

    Attributes:
        name: ``plotly-<first 16 hex digits of its sha256>.min.js``.
        body: the bundle's bytes, as the ``plotly`` package ships them.
        integrity: its Subresource Integrity value (``sha384-<base64>``), which the pages
            give in their ``<script integrity>`` so a browser runs only these bytes.
        etag: the HTTP entity tag (its sha256, quoted).

    References:
        W3C Subresource Integrity, https://www.w3.org/TR/SRI/
    """

    name: str
    body: bytes
    integrity: str
    etag: str

    @property
    def headers(self) -> dict[str, str]:
        """The headers it is served with: media type, cache for a year, its ETag, nosniff."""
        return {"Content-Type": ASSET_MEDIA_TYPE, "Cache-Control": ASSET_CACHE_CONTROL, "ETag": self.etag,
                "X-Content-Type-Options": "nosniff"}


def _bundle_path() -> str:
    spec = importlib.util.find_spec("plotly")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError("pages need the 'plotly' package (pip install plotly): it ships the plotting library")
    return os.path.join(list(spec.submodule_search_locations)[0], "package_data", "plotly.min.js")


@lru_cache(maxsize=1)
def plotly_asset() -> PageAsset:
    """The plotly.js bundle the ``plotly`` package ships (``package_data/plotly.min.js``), as
    the one file every served page shares, read once per process.

    Raises:
        ConfigError: the ``plotly`` package is not installed or lacks its bundle.
    """
    path = _bundle_path()
    try:
        with open(path, "rb") as fh:
            body = fh.read()
    except OSError as exc:
        raise ConfigError(f"the plotly package has no plotly.js bundle at {path}: {exc}") from exc
    sha256 = hashlib.sha256(body).hexdigest()
    integrity = "sha384-" + base64.b64encode(hashlib.sha384(body).digest()).decode("ascii")
    return PageAsset(name=f"plotly-{sha256[:16]}.min.js", body=body, integrity=integrity, etag=f'"{sha256}"')


def page_asset(name: str | None) -> PageAsset | None:
    """The shared asset called ``name``, or None for any other name (nothing else is served)."""
    asset = plotly_asset()
    return asset if name == asset.name else None


@lru_cache(maxsize=1)
def plotly_js() -> str:
    """The plotly.js bundle as text to inline in a standalone page (``</script`` escaped).

    Raises:
        ConfigError: the ``plotly`` package is not installed or lacks its bundle.
    """
    return plotly_asset().body.decode("utf-8").replace("</script", "<\\/script")


@lru_cache(maxsize=1)
def environment() -> Any:
    """The Jinja2 environment of the page templates (autoescape on for every template)."""
    from jinja2 import ChainableUndefined, Environment, PackageLoader

    env = Environment(loader=PackageLoader("core.reports.pages", "templates"), autoescape=True,
                      undefined=ChainableUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["num"] = fmt_number
    env.filters["ms"] = fmt_ms
    env.filters["breakable"] = breakable
    env.policies["json.dumps_function"] = _dumps
    env.policies["json.dumps_kwargs"] = {}
    return env


def _dumps(value: Any, **_: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"), default=str)


def fmt_number(value: Any, digits: int = 3) -> str:
    """A number for a table cell: ``-`` for None, integers as they are, floats to ``digits``."""
    if value is None or isinstance(value, bool):
        return "-" if value is None else str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def fmt_ms(value: Any) -> str:
    """Milliseconds for a table cell, to about three significant digits: ``4,565``, ``35.1``,
    ``2.18``; ``-`` for None."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "-" if value is None else str(value)
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.1f}" if abs(value) >= 10 else f"{value:.2f}"


def breakable(value: Any) -> Any:
    """``value`` escaped, with a line-break opportunity (``<wbr>``) after each ``-``, ``+``,
    ``_``, ``/`` and ``:`` (not ``.``: ``a0.5`` stays whole), so a long setup or build name
    wraps in a narrow column instead of widening it."""
    from markupsafe import Markup, escape

    text = str(escape("" if value is None else value))
    for mark in "-+_/:":
        text = text.replace(mark, mark + "<wbr>")
    return Markup(text)


def render(template: str, *, plots: bool = True, plotly_src: str = "", **context: Any) -> str:
    """Render ``template`` (a file under ``templates/``) with ``context`` plus the page's
    CSP and, when ``plots``, plotly.js: referenced at ``plotly_src`` (the URL of the shared
    :func:`plotly_asset`, with its integrity hash) when given, else inlined so the page works
    alone from a file. A page that draws no plot (an error page, the index) goes without it.
    Returns the whole HTML document."""
    env = environment()
    inline = plotly_js() if plots and not plotly_src else ""
    integrity = plotly_asset().integrity if plots and plotly_src else ""
    return env.get_template(template).render(csp=PAGE_CSP, plotly_js=inline, plotly_src=plotly_src if plots else "",
                                             plotly_integrity=integrity, **context)


def plotly_src(links: Links | None) -> str:
    """Where a page finds the shared plotly.js: the ``asset`` link of ``links`` (a
    ``core.reports.pages.site.Links``), or ``""`` when there is none (a standalone page
    inlines it)."""
    if links is None or not links.asset:
        return ""
    return links.url("asset", file=plotly_asset().name)
