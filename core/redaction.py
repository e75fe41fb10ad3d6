"""What an error may show to someone who called over HTTP: what failed, never where.

Store errors name their blob URL or local path (``cannot read
http://127.0.0.1:10000/devstoreaccount1/reports/experiments/x/study.json: AuthorizationFailure:
...``), which is right for a log and the command line but not for an answer of the Functions
app: it tells a caller the app's storage layout and accounts. :func:`shown_reason` turns an
exception into one short line with every location replaced, for the body; the detail goes to
the log through :func:`without_secrets`.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

#: What a location becomes in a shown text.
LOCATION = "<location>"
#: Most characters of a shown reason.
MAX_REASON_CHARS = 300

_TAIL = r"[^\s'\"<>`]*"
#: ``scheme://...`` up to a blank or quote (http, https, s3, file, abfss, ...).
_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://" + _TAIL)
#: An absolute POSIX path (``/tmp/x``, not ``and/or``) or a Windows one (``C:\\x``, ``\\\\host\\x``).
_PATH = re.compile(r"(?<![\w.~/\\-])(?:/|[A-Za-z]:[\\/]|\\\\)[\w.~%+@=-][^\s'\"<>`,;]*")
#: ``name=value`` pairs that carry a credential (connection strings, SAS query strings).
_SECRET = re.compile(r"((?:^|[?&;\s\"'])(?:sig|AccountKey|SharedAccessSignature|password|pwd|token|api[-_]?key)=)"
                     r"[^&;\s\"']*", re.IGNORECASE)
#: Characters a location may end with that belong to the sentence instead.
_TRAILING = ".,:;)]}!?"


def without_secrets(text: str) -> str:
    """``text`` with the values of credential pairs (``AccountKey=``, ``sig=``, ``password=``,
    ``token=``, ``api_key=``) replaced by ``***``: what may go to a log."""
    return _SECRET.sub(r"\1***", text)


def _replace(match: re.Match, name: str) -> str:
    found = match.group(0)
    kept = len(found.rstrip(_TRAILING))
    return name + found[kept:]


def without_locations(text: str, named: Mapping[str, str] | None = None) -> str:
    """``text`` with every storage location replaced.

    Args:
        text: a message.
        named: locations to replace by a name (``{"/data/reports": "the report store"}``),
            each with the rest of its path (``/data/reports/runs/x.json`` is the report store
            too); the longest first. Relative paths are found only this way.

    Returns:
        The text with the named locations named, then every other URL (``scheme://...``)
        and absolute path replaced by :data:`LOCATION`, and secrets by ``***``. Punctuation that
        ends a sentence after a location is kept.
    """
    for location, name in sorted((named or {}).items(), key=lambda item: -len(item[0])):
        location = str(location).strip().rstrip("/\\")
        if location:
            pattern = re.compile(r"(?<![\w.~/\\-])" + re.escape(location) + r"(?:[/\\]" + _TAIL + r")?")
            text = pattern.sub(lambda m, n=name: _replace(m, n), text)
    text = _URL.sub(lambda m: _replace(m, LOCATION), text)
    text = _PATH.sub(lambda m: _replace(m, LOCATION), text)
    return without_secrets(text)


def shown_reason(exc: BaseException, named: Mapping[str, str] | None = None, *,
                 limit: int = MAX_REASON_CHARS) -> str:
    """One line saying why ``exc`` happened, without locations: ``"<its type>: <its first
    line>"`` through :func:`without_locations`, cut to ``limit`` characters (``...`` at the
    end when cut).

    Args:
        exc: the exception.
        named: as for :func:`without_locations`.
        limit: most characters.
    """
    lines = str(exc).strip().splitlines()
    first = lines[0].strip() if lines else ""
    text = without_locations(f"{type(exc).__name__}: {first}" if first else type(exc).__name__, named)
    return text if len(text) <= limit else text[: max(0, limit - 3)].rstrip() + "..."


def json_without_locations(value: Any, *, max_depth: int = 8) -> Any:
    """``value`` (a JSON value: dicts, lists, strings, numbers) with every string through
    :func:`without_locations`: what an HTTP answer may show of a stored status or output.

    Args:
        value: the JSON value.
        max_depth: nesting below which values are returned as they are (a bound on the walk).

    Returns:
        A new value of the same shape; keys are kept as they are.
    """
    def walk(item: Any, depth: int) -> Any:
        if isinstance(item, str):
            return without_locations(item)
        if depth > max_depth:
            return item
        if isinstance(item, dict):
            return {k: walk(v, depth + 1) for k, v in item.items()}
        if isinstance(item, list):
            return [walk(v, depth + 1) for v in item]
        return item

    return walk(value, 0)


__all__ = ["LOCATION", "MAX_REASON_CHARS", "json_without_locations", "shown_reason", "without_locations",
           "without_secrets"]
