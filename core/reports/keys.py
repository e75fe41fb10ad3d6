"""Store keys: the ``/``-separated relative paths every :class:`~core.reports.files.Files`
store (local folder, S3, Blob) names its files by.

Kept apart from the stores so each of them imports these rules without importing another.
"""

from __future__ import annotations

from core.errors import ConfigError, StoreError


def clean_key(key: str) -> str:
    """Return ``key`` normalised: ``\\`` read as ``/``, empty and ``.`` segments dropped.

    Raises:
        StoreError: the key is empty after that, or has a ``..`` segment.
    """
    parts = [p for p in key.replace("\\", "/").split("/") if p not in ("", ".")]
    if not parts or any(p == ".." for p in parts):
        raise StoreError(f"invalid key {key!r}: use a relative path without '..'")
    return "/".join(parts)


def clean_prefix(prefix: str) -> str:
    """``prefix`` as a clean key (``""`` for the root).

    Raises:
        ConfigError: the prefix has a ``..`` segment.
    """
    if not prefix.strip("/").strip():
        return ""
    try:
        return clean_key(prefix)
    except StoreError as exc:
        raise ConfigError(f"invalid store prefix {prefix!r}: use a relative path without '..'") from exc
