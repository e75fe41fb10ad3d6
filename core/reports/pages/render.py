"""Rendering pages: one Jinja2 environment (autoescape on), the inlined plotly.js bundle, and
the Content-Security-Policy every page is served with.

jinja2 is imported when the first page is rendered; plotly.js is read from the ``plotly``
package's files (the Python package is never imported) once per process.
"""

from __future__ import annotations

import importlib.util
import json
import os
from functools import lru_cache
from typing import Any

from core.errors import ConfigError

#: What a page may load: only what it holds inline (scripts, styles, data: images); nothing
#: from any other origin, no plugins, no frames. Served as a header and repeated in a
#: ``<meta>`` element so a page saved to disk keeps it.
PAGE_CSP = ("default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data: blob:; "
            "font-src data:; connect-src 'none'; base-uri 'none'; form-action 'self'")
#: The headers every page is served with (``frame-ancestors`` only works as a header).
PAGE_HEADERS = {"Content-Security-Policy": PAGE_CSP + "; frame-ancestors 'none'", "X-Content-Type-Options": "nosniff",
                "Referrer-Policy": "no-referrer"}
PAGE_MEDIA_TYPE = "text/html; charset=utf-8"


@lru_cache(maxsize=1)
def plotly_js() -> str:
    """The plotly.js bundle the ``plotly`` package ships (``package_data/plotly.min.js``).

    Raises:
        ConfigError: the ``plotly`` package is not installed or lacks its bundle.
    """
    spec = importlib.util.find_spec("plotly")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError("pages need the 'plotly' package (pip install plotly): it ships the plotting library")
    path = os.path.join(list(spec.submodule_search_locations)[0], "package_data", "plotly.min.js")
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as exc:
        raise ConfigError(f"the plotly package has no plotly.js bundle at {path}: {exc}") from exc
    return text.replace("</script", "<\\/script")


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
    ``_``, ``/``, ``.`` and ``:``, so a long setup or build name wraps in a narrow column
    instead of widening it."""
    from markupsafe import Markup, escape

    text = str(escape("" if value is None else value))
    for mark in "-+_/.:":
        text = text.replace(mark, mark + "<wbr>")
    return Markup(text)


def render(template: str, *, plots: bool = True, **context: Any) -> str:
    """Render ``template`` (a file under ``templates/``) with ``context`` plus the page's
    CSP and, when ``plots``, the plotly.js bundle (a page that draws no plot, such as an error
    page or the index, goes without it and stays small); returns the whole HTML document."""
    env = environment()
    return env.get_template(template).render(csp=PAGE_CSP, plotly_js=plotly_js() if plots else "", **context)
