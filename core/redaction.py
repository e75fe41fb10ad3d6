"""What an error may show to someone who called over HTTP: what failed, never where.

Store errors name their blob URL or local path (``cannot read
http://127.0.0.1:10000/devstoreaccount1/reports/experiments/x/study.json: AuthorizationFailure:
...``), which is right for a log and the command line but not for an answer of the Functions
app: it tells a caller the app's storage layout and accounts. :func:`shown_reason` turns an
exception into one short line with every location replaced, for the body; the detail goes to
the log through :func:`without_secrets`.

Messages for the command line and reports may name an address, but never its credentials:
:func:`shown_url` gives an address without them, :func:`without_credentials` takes them out of
an engine's error text.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

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
#: The user info of a URL: ``scheme://`` then ``user[:password]@`` before the host.
_USERINFO = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://)[^\s/?#@'\"<>`]+@")
#: Characters a location may end with that belong to the sentence instead.
_TRAILING = ".,:;)]}!?"


def without_secrets(text: str) -> str:
    """``text`` with the values of credential pairs (``AccountKey=``, ``sig=``, ``password=``,
    ``token=``, ``api_key=``) replaced by ``***``: what may go to a log."""
    return _SECRET.sub(r"\1***", text)


def shown_url(text: str) -> str:
    """An address as a message, a report or a description may show it: a URL
    (``scheme://host...``) without its user, password, query string and fragment
    (``http://user:pw@host:19530/db?token=t`` -> ``http://host:19530/db``); anything else
    (a path, a folder, ``:memory:``) as it is.

    Args:
        text: a URL or a path.

    Returns:
        The address without credentials.
    """
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(text)
    if not parts.scheme or not parts.netloc:
        return text
    host = parts.netloc.rpartition("@")[2]  # host[:port], as written
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def url_secrets(text: str) -> list[str]:
    """The credentials a URL holds, each as written and percent-decoded: the user info's
    password (or a user info without one: a token), and the values of credential pairs in
    its query string (``token=``, ``password=``, ``api_key=``, ``sig=``); for
    :func:`without_credentials`.

    Args:
        text: a URL (anything else holds none).

    Returns:
        The secrets, without repeats; empty when there are none.
    """
    from urllib.parse import parse_qsl, unquote, urlsplit

    parts = urlsplit(text)
    if not parts.scheme or not parts.netloc:
        return []
    found: list[str] = []
    userinfo = parts.netloc.rpartition("@")[0]
    if userinfo:
        user, colon, password = userinfo.partition(":")
        found.append(password if colon else user)
    for name, value in parse_qsl(parts.query, keep_blank_values=False):
        if _SECRET.match("&" + name + "="):
            found.append(value)
    found += [unquote(f) for f in found]
    return list(dict.fromkeys(f for f in found if f))


def without_credentials(text: str, secrets: Sequence[str] = ()) -> str:
    """``text`` (a message, say an engine's error) with every credential it may hold replaced
    by ``***``: the user info of each URL (``http://user:pw@host`` -> ``http://***@host``), the
    values of credential pairs (:func:`without_secrets`, which covers ``?token=`` and
    ``password=``) and each of ``secrets`` wherever it appears (longest first).

    Args:
        text: the text.
        secrets: values never to show (a token, a password), as given.

    Returns:
        The text with the credentials replaced; the rest of each URL is kept.
    """
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        text = text.replace(secret, "***")
    text = _USERINFO.sub(r"\1***@", text)
    return without_secrets(text)


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


__all__ = ["LOCATION", "MAX_REASON_CHARS", "json_without_locations", "shown_reason", "shown_url",
           "url_secrets", "without_credentials", "without_locations", "without_secrets"]
