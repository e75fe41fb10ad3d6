"""Reading one line of a JSON Lines golden file, shared by the native and the Bedrock readers.

Hostile but parseable lines are reported, never raised: free text longer than its field's
limit (:func:`too_long`; the limits and why are in :mod:`core.limits`), invalid JSON (with its column), JSON
nested deeper than Python's recursion limit, integers longer than Python converts
(``sys.get_int_max_str_digits()``, 4,300 digits by default), the non-JSON constants ``NaN`` and
``Infinity``, lone surrogate escapes (``"\\ud800"``, which no UTF-8 text can hold), a value that
is not an object, and a key given twice.

References:
    JSON (RFC 8259), section 6 (numbers; no NaN or Infinity) and section 8.2 (Unicode
    characters; unpaired surrogates): https://www.rfc-editor.org/rfc/rfc8259
"""

from __future__ import annotations

import difflib
import json
import re
import sys
from collections.abc import Iterable
from functools import lru_cache
from typing import Any, Callable

from core import limits

__all__ = ["FIELDS", "TEXT_LIMITS", "json_type", "nearest", "parse_line_object", "too_long"]

#: The fields a golden line may hold, in schema order.
FIELDS: tuple[str, ...] = ("id", "question", "expected", "reference", "evidence", "hint", "draft", "grades", "metadata")

#: The longest text of each kind a golden line carries: kind -> (most characters, what it is,
#: the constant's name in :mod:`core.limits`).
TEXT_LIMITS: dict[str, tuple[int, str, str]] = {
    "id": (limits.GOLDEN_MAX_ID_CHARS, "an id", "GOLDEN_MAX_ID_CHARS"),
    "question": (limits.GOLDEN_MAX_QUESTION_CHARS, "a question", "GOLDEN_MAX_QUESTION_CHARS"),
    "source": (limits.GOLDEN_MAX_SOURCE_CHARS, "a document id or name", "GOLDEN_MAX_SOURCE_CHARS"),
    "reference": (limits.GOLDEN_MAX_REFERENCE_CHARS, "an answer or passage", "GOLDEN_MAX_REFERENCE_CHARS"),
    "evidence": (limits.GOLDEN_MAX_EVIDENCE_CHARS, "an evidence quote", "GOLDEN_MAX_EVIDENCE_CHARS"),
    "hint": (limits.GOLDEN_MAX_HINT_CHARS, "a hint", "GOLDEN_MAX_HINT_CHARS"),
}


def too_long(text: str, kind: str) -> str | None:
    """The error message of a text longer than its kind's limit (:data:`TEXT_LIMITS`), or None.

    Args:
        text: the field's text.
        kind: a key of :data:`TEXT_LIMITS` (``"question"``, ``"evidence"``, ...).

    Returns:
        ``"is 48,000,000 characters long, more than the 4,000 a question may hold
        (GOLDEN_MAX_QUESTION_CHARS): shorten it"``, or None when the text is within the limit.
    """
    most, what, name = TEXT_LIMITS[kind]
    if len(text) <= most:
        return None
    return f"is {len(text):,} characters long, more than the {most:,} {what} may hold ({name}): shorten it"


_JSON_TYPES = {
    type(None): "null",
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    list: "array",
    dict: "object",
}
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def json_type(value: Any) -> str:
    """The JSON name of a parsed value's type (``"string"``, ``"array"``, ...)."""
    return _JSON_TYPES.get(type(value), type(value).__name__)


#: Words longer than this get no "did you mean" suggestion (comparing them costs too much).
_NEAREST_MAX_CHARS = 256


def nearest(word: str, candidates: Iterable[str]) -> str | None:
    """The candidate closest to ``word`` (difflib ratio at least 0.6), or None.

    Words and candidates over 256 characters are not compared (no suggestion for them).
    """
    if len(word) > _NEAREST_MAX_CHARS:
        return None
    return _nearest_in(word, candidates if isinstance(candidates, tuple) else tuple(candidates))


@lru_cache(maxsize=4096)
def _nearest_in(word: str, candidates: tuple[str, ...]) -> str | None:
    pool = [c for c in candidates if len(c) <= _NEAREST_MAX_CHARS]
    match = difflib.get_close_matches(word, pool, n=1, cutoff=0.6)
    return match[0] if match else None


class _Unreadable(ValueError):
    """A value the line holds that JSON or Python cannot represent."""


def _parse_int(text: str) -> int:
    limit = sys.get_int_max_str_digits()
    digits = len(text.lstrip("-"))
    if limit and digits > limit:
        raise _Unreadable(f"not readable: an integer of {digits:,} digits (at most {limit:,} are read); "
                          "write it as a string")
    return int(text)


def _parse_constant(name: str) -> Any:
    raise _Unreadable(f"not valid JSON: {name} is not a JSON value (write null, a number or a string)")


def _has_lone_surrogate(text: str) -> bool:
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _surrogate_field(obj: dict[str, Any]) -> str | None:
    """The first top-level key whose name or value holds a lone surrogate, or None."""
    for key, value in obj.items():
        stack = [key, value]
        while stack:
            item = stack.pop()
            if isinstance(item, str):
                if _has_lone_surrogate(item):
                    return key
            elif isinstance(item, dict):
                stack.extend(item.keys())
                stack.extend(item.values())
            elif isinstance(item, list):
                stack.extend(item)
    return None


def parse_line_object(
    line: str, error: Callable[..., None], holds: str
) -> dict[str, Any] | None:
    """Parse one JSON Lines line that must hold a JSON object.

    Every problem in the module's list is reported through ``error(message, field=None)``
    (keys given twice name the key as the field, and JSON would silently keep the last);
    ``holds`` says what a line holds ("one object").

    Returns:
        The object, or None when the line is not valid JSON, holds a value that cannot be
        represented (a huge integer, ``NaN``, a lone surrogate) or is not an object.
    """
    repeated: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out:
                repeated.append(key)
            out[key] = value
        return out

    try:
        obj = json.loads(line, object_pairs_hook=pairs, parse_int=_parse_int, parse_constant=_parse_constant)
    except json.JSONDecodeError as exc:
        error(f"not valid JSON: {exc.msg} at column {exc.colno}")
        return None
    except _Unreadable as exc:
        error(str(exc))
        return None
    except RecursionError:
        error("not readable: JSON nested too deeply (more than Python's recursion limit)")
        return None
    except ValueError as exc:  # any other value the decoder refuses
        error(f"not readable: {exc}")
        return None
    if not isinstance(obj, dict):
        error(f"not a JSON object (got {json_type(obj)}); each line holds {holds}")
        return None
    if "\\u" in line and _SURROGATE_ESCAPE.search(line):
        where = _surrogate_field(obj)
        if where is not None:
            error("holds a lone surrogate escape (such as \"\\ud800\"): not Unicode text, so it cannot be "
                  "stored or printed; remove it or give the full surrogate pair", where)
            return None
    for key in dict.fromkeys(repeated):
        error("given more than once on this line (the last value would win)", key)
    return obj
