"""The ``Files`` protocol reports are stored through, and its local-folder implementation.

Paths are ``/``-separated keys relative to the store's root (for example
``retrieval/runs/<run id>/report.json``). Writes are atomic: a reader sees the old content
or the new, never a half-written file.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Protocol, runtime_checkable

from core.errors import StoreError


@runtime_checkable
class Files(Protocol):
    """A small key -> bytes store (local folder; S3 and Blob follow the same contract)."""

    def read_bytes(self, key: str) -> bytes:
        """Return the bytes at ``key``. Raises StoreError when it does not exist."""
        ...

    def write_bytes(self, key: str, data: bytes) -> None:
        """Write ``data`` at ``key`` atomically (replacing what was there)."""
        ...

    def exists(self, key: str) -> bool:
        """True when ``key`` holds a file."""
        ...

    def list(self, prefix: str = "") -> list[str]:
        """Return the keys under ``prefix`` (recursive), sorted."""
        ...


def _clean_key(key: str) -> str:
    parts = [p for p in key.replace("\\", "/").split("/") if p not in ("", ".")]
    if not parts or any(p == ".." for p in parts):
        raise StoreError(f"invalid key {key!r}: use a relative path without '..'")
    return "/".join(parts)


class LocalFiles:
    """:class:`Files` in a local folder.

    Args:
        root: the folder (created on first write).

    Writes go to a temporary file in the same folder, are flushed and fsynced, then renamed
    over the target with ``os.replace`` (atomic on POSIX and Windows).
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        return self.root / _clean_key(key)

    def read_bytes(self, key: str) -> bytes:
        """Return the file's bytes. Raises StoreError naming the path when it is missing."""
        path = self._path(key)
        try:
            return path.read_bytes()
        except FileNotFoundError as exc:
            raise StoreError(f"{path} does not exist") from exc
        except OSError as exc:
            raise StoreError(f"cannot read {path}: {exc}") from exc

    def write_bytes(self, key: str, data: bytes) -> None:
        """Write atomically (temporary file + fsync + rename)."""
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                    fh.flush()
                    os.fsync(fh.fileno())
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError as exc:
            raise StoreError(f"cannot write {path}: {exc}") from exc

    def exists(self, key: str) -> bool:
        """True when the file exists."""
        return self._path(key).is_file()

    def list(self, prefix: str = "") -> list[str]:
        """Keys under ``prefix``, sorted; temporary files of unfinished writes are not listed."""
        base = self.root / _clean_key(prefix) if prefix.strip("/") else self.root
        if not base.is_dir():
            return []
        keys = []
        for path in base.rglob("*"):
            if path.is_file() and not (path.name.startswith(".") and path.name.endswith(".tmp")):
                keys.append(path.relative_to(self.root).as_posix())
        return sorted(keys)
