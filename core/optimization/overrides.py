"""``--set name=value[,value...]`` command-line overrides of the search space.

The text of each value is parsed to its parameter's kind; the resulting mapping goes to
:meth:`core.optimization.space.SearchSpace.with_overrides`.
"""

from __future__ import annotations

import math
from typing import Iterable

from core.errors import ConfigError
from core.optimization.configuration import Value
from core.optimization.parameters import PARAMETER_KINDS, TEXT_PARAMETERS, check_name

def parse_value(kind: str, text: str, name: str) -> Value:
    """Return ``text`` (one command-line value) as the Python type of ``kind``.

    ``integer``: ``int(text)``; ``real``: ``float(text)``; ``boolean``: true/false, yes/no,
    1/0 (any case); ``categorical``: the text (stripped, except the prompt templates).

    Raises:
        ConfigError: naming the parameter when the text does not parse.
    """
    where = f"--set {name}"
    if kind == "integer":
        try:
            return int(text.strip())
        except ValueError:
            raise ConfigError(f"{where}: {text!r} is not an integer") from None
    if kind == "real":
        try:
            number = float(text.strip())
        except ValueError:
            raise ConfigError(f"{where}: {text!r} is not a number") from None
        if not math.isfinite(number):
            raise ConfigError(f"{where}: {text!r} is not a finite number")
        return number
    if kind == "boolean":
        word = text.strip().lower()
        if word in ("true", "yes", "1"):
            return True
        if word in ("false", "no", "0"):
            return False
        raise ConfigError(f"{where}: {text!r} is not true or false")
    return text if name in TEXT_PARAMETERS else text.strip()


def _split_unescaped(text: str) -> list[str]:
    """Split on commas not preceded by a backslash; ``\\,`` is a comma, ``\\\\`` a backslash."""
    parts: list[str] = []
    cur: list[str] = []
    chars = iter(text)
    for ch in chars:
        if ch == "\\":
            nxt = next(chars, None)
            if nxt in (",", "\\"):
                cur.append(nxt)
            else:
                cur.append(ch)
                if nxt is not None:
                    cur.append(nxt)
        elif ch == ",":
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


def parse_override(text: str) -> tuple[str, tuple[Value, ...]]:
    """Parse one ``--set name=value[,value...]`` command-line override.

    Values are split on commas (write ``\\,`` for a comma inside a value, ``\\\\`` for a
    backslash) and coerced to the parameter's kind (see :func:`parse_value`). Prompt
    templates with newlines are easier to give in a space file.

    Args:
        text: for example ``"chunk_size=256,512"``.

    Returns:
        ``(name, values)``, for example ``("chunk_size", (256, 512))``; pass
        ``{name: values}`` to :meth:`SearchSpace.with_overrides`.

    Raises:
        ConfigError: no ``=``, an unknown parameter, no value, or a value that does not parse.
    """
    if not isinstance(text, str) or "=" not in text:
        raise ConfigError(f"--set expects name=value[,value...], got {text!r}")
    name, _, rest = text.partition("=")
    name = name.strip()
    check_name(name, "--set")
    pieces = _split_unescaped(rest)
    if name not in TEXT_PARAMETERS:
        pieces = [p for p in (x.strip() for x in pieces) if p]
    if not pieces or pieces == [""]:
        raise ConfigError(f"--set {name}: needs at least one value")
    kind = PARAMETER_KINDS[name]
    values: list[Value] = []
    for piece in pieces:
        v = parse_value(kind, piece, name)
        if v not in values:
            values.append(v)
    return name, tuple(values)


def parse_overrides(items: Iterable[str]) -> dict[str, tuple[Value, ...]]:
    """Parse several ``--set`` overrides into a mapping for :meth:`SearchSpace.with_overrides`.

    Raises:
        ConfigError: any item that :func:`parse_override` rejects, or a parameter set twice.
    """
    out: dict[str, tuple[Value, ...]] = {}
    for item in items:
        name, values = parse_override(item)
        if name in out:
            raise ConfigError(f"--set {name}: given twice; list every value in one --set {name}=a,b")
        out[name] = values
    return out


__all__ = ["parse_override", "parse_overrides", "parse_value"]
