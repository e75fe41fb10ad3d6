"""Golden checks as the Functions app answers and stores them.

:func:`check_upload` checks the bytes of an uploaded golden file and always returns a result:
a file over the size limit, or one whose check fails unexpectedly, gets a failed check saying
why (never an exception, and never a previous ``"ok": true`` check left in place).
:func:`check_key` names the stored check of a blob: one key per blob name, however the name
is spelled.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any

from core.golden.problems import DEFAULT_LIMITS, CheckLimits
from core.golden.types import GoldenCheck, Problem
from core.reports.keys import GOLDEN_CHECKS_PREFIX

logger = logging.getLogger(__name__)

__all__ = ["CHECKS_PREFIX", "check_key", "check_upload", "failed_check"]

#: Report store prefix of the stored golden checks.
CHECKS_PREFIX = GOLDEN_CHECKS_PREFIX

#: Longest blob name, in UTF-8 bytes, stored under its own name; longer ones are stored by hash.
_PLAIN_NAME_BYTES = 200
#: Longest folder or file name in a plain key, in UTF-8 bytes (file systems allow 255).
_PLAIN_SEGMENT_BYTES = 100


def check_key(name: str) -> str:
    """Return the report store key of the check of blob ``name``.

    A plain name (segments that are not empty, ``.`` or ``..``; no ``~``, backslash or control
    character; at most 200 UTF-8 bytes, 100 per segment) is kept as it is:
    ``golden_checks/hr/golden.jsonl.json``. Any other name, which a store would normalise
    (``a//y``, ``a/./y`` and ``a/y`` are one path in a folder) or could not hold (names up to
    1,024 characters), is stored by the sha256 of its UTF-8 bytes as
    ``golden_checks/~/<hex>.json``; a plain name never holds ``~``, so the two never meet.

    Args:
        name: the blob's name inside its container.

    Returns:
        A key relative to the report store's root; distinct names give distinct keys.
    """
    raw = name.encode("utf-8", "surrogatepass")
    plain = (
        0 < len(raw) <= _PLAIN_NAME_BYTES
        and not any(c in "~\\" or ord(c) < 32 or ord(c) == 127 for c in name)
        and all(part not in ("", ".", "..") and len(part.encode("utf-8", "surrogatepass")) <= _PLAIN_SEGMENT_BYTES
                for part in name.split("/"))
    )
    if plain:
        return f"{CHECKS_PREFIX}/{name}.json"
    return f"{CHECKS_PREFIX}/~/{hashlib.sha256(raw).hexdigest()}.json"


def failed_check(name: str, message: str, sha256: str | None = None) -> dict[str, Any]:
    """A failed check of file ``name`` with one file-level error, as ``GoldenCheck.to_dict()``.

    Args:
        name: the file's name, as results name it.
        message: why the file cannot be run.
        sha256: hex sha256 of the file's bytes, when they were read.
    """
    check = GoldenCheck(path=name, sha256=sha256, problems=[Problem("error", message)])
    return check.to_dict()


def check_upload(
    data: bytes, name: str, *, max_bytes: int, limits: CheckLimits = DEFAULT_LIMITS, size: int | None = None
) -> dict[str, Any]:
    """Check an uploaded golden file; returns ``GoldenCheck.to_dict()`` with ``path`` = ``name``.

    Args:
        data: the file's bytes (at most ``max_bytes + 1`` of them need be read).
        name: the file's name, as results name it.
        max_bytes: largest file checked; a larger one (by ``size`` or by ``len(data)``) gets a
            failed check naming the limit.
        limits: how many problems are kept (bounded by default).
        size: the file's size in bytes when known without reading it (a blob's length).

    Returns:
        The check as a dict: never raises for the file's content. An unexpected failure of the
        check itself is logged with its traceback and returned as a failed check naming it.
    """
    from core.golden.reader import check_golden

    total = size if size is not None else len(data)
    if total > max_bytes or len(data) > max_bytes:
        shown = max(total, len(data))
        return failed_check(name, f"the file is {shown:,} bytes, more than the {max_bytes:,} bytes checked here "
                                  "(RAGTUNE_GOLDEN_MAX_BYTES): split it, or check it with `ragtune check`")
    sha256 = hashlib.sha256(data).hexdigest()
    try:
        result = check_golden(name, data=data, limits=limits).to_dict()
    except Exception as exc:  # the check must never leave an old result in place
        logger.exception("checking golden file %s failed", name)
        return failed_check(name, f"the file could not be checked ({type(exc).__name__}); nothing in it is "
                                  "ready to run", sha256)
    result["path"] = name
    return result
