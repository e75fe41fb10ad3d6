"""Storage addresses: the one reading of an address's scheme and of a ``file://`` URL's path.

An address is a local path (``data/docs``, ``C:\\data\\docs``), a ``file://`` URL, an
``s3://<bucket>/<key>`` address or a Blob Storage URL (``https://<account>.blob...`` or the
path-style ``http://127.0.0.1:10000/<account>/...`` of Azurite). What each store then reads from
the rest of the address (bucket, account, container, prefix) is its own:
:func:`core.reports.open_files`; :mod:`core.inputs` reads golden files and documents through it.

References:
    RFC 3986 section 3.1 (scheme syntax): https://www.rfc-editor.org/rfc/rfc3986#section-3.1
"""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

from core.errors import ConfigError

#: ``scheme://`` at the start of an address (RFC 3986 scheme characters).
SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
#: Schemes of addresses that are read over the network.
REMOTE_SCHEMES: tuple[str, ...] = ("s3", "http", "https")


def scheme_of(address: str) -> str | None:
    """The lower-case scheme of ``address`` (``"s3"``, ``"https"``, ``"file"``), or None for a
    plain path; a one-letter scheme is a Windows drive (``C://x`` is a path).

    The address is read as given: callers strip surrounding blanks when they accept them.
    """
    match = SCHEME.match(address)
    if not match or len(match.group(1)) == 1:
        return None
    return match.group(1).lower()


def file_url_path(url: str, what: str = "address") -> str:
    """The local path of a ``file://`` URL, decoded (``file:///data/my%20docs`` -> ``/data/my docs``;
    ``file:///C:/data`` -> ``C:/data``).

    Args:
        url: a ``file://`` URL.
        what: what the URL is, for the message (``"store address"``).

    Raises:
        ConfigError: the URL names another host.
    """
    parts = urlsplit(url)
    if parts.netloc not in ("", "localhost"):
        raise ConfigError(f"file:// {what} on another host is not supported: {url!r}")
    path = unquote(parts.path)
    if re.match(r"^/[A-Za-z]:", path):  # file:///C:/data on Windows
        path = path[1:]
    return path


__all__ = ["REMOTE_SCHEMES", "SCHEME", "file_url_path", "scheme_of"]
