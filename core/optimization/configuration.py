"""One point of the search space: a frozen, JSON-serialisable mapping of parameter values.

A :class:`Configuration` is what travels between the study, the runner and the evaluations
(queue payloads, reports, caches). Its :attr:`Configuration.key` is stable across processes,
machines and Python versions, so it can name a stored result.

References:
    IBM ai4rag, where a configuration ("RAG pattern") is a dict of parameter values:
    https://github.com/IBM/ai4rag
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any, Iterator, Mapping

from core.errors import ConfigError

#: The types a parameter value may have. ``None`` (JSON ``null``) is the placeholder of a
#: parameter that does not apply to a configuration (see ``core.optimization.rules``).
Value = str | int | float | bool | None


def _check_value(name: str, value: Any) -> Value:
    """Return ``value`` as a plain JSON value, or raise ConfigError naming ``name``."""
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ConfigError(f"configuration value {name}={value!r} is not a finite number")
        return float(value)
    # numpy scalars and similar: accept by their Python equivalent
    item = getattr(value, "item", None)
    if callable(item) and getattr(value, "shape", None) == ():
        return _check_value(name, item())
    raise ConfigError(
        f"configuration value {name}={value!r} has type {type(value).__name__}; "
        "values must be str, int, float, bool or None"
    )


class Configuration(Mapping[str, Value]):
    """A frozen mapping ``parameter name -> value`` with a stable key.

    Values are ``str``, ``int``, ``float`` (finite), ``bool`` or ``None``; ``None`` marks a
    parameter that does not apply (for example ``chunk_overlap`` of the ``hybrid`` chunker).
    The mapping keeps its insertion order for display; equality, hashing and :attr:`key`
    ignore order.

    Args:
        values: the parameter values. Keys must be non-empty strings.

    Raises:
        ConfigError: a key that is not a non-empty string, or a value of another type
            (NaN and infinities included).

    Example:
        >>> c = Configuration({"chunk_size": 256, "search_mode": "vector"})
        >>> c["chunk_size"], len(c.key)
        (256, 16)
        >>> Configuration.from_dict(c.to_dict()) == c
        True
    """

    __slots__ = ("_data", "_key")

    def __init__(self, values: Mapping[str, Any]) -> None:
        if not isinstance(values, Mapping):
            raise ConfigError(f"a configuration must be a mapping, got {type(values).__name__}")
        data: dict[str, Value] = {}
        for name, value in values.items():
            if not isinstance(name, str) or not name:
                raise ConfigError(f"configuration keys must be non-empty strings, got {name!r}")
            data[name] = _check_value(name, value)
        object.__setattr__(self, "_data", data)
        object.__setattr__(self, "_key", None)

    @classmethod
    def _trusted(cls, data: dict[str, Value]) -> "Configuration":
        """Build from values already checked (the search space's own enumeration)."""
        obj = cls.__new__(cls)
        object.__setattr__(obj, "_data", data)
        object.__setattr__(obj, "_key", None)
        return obj

    # Mapping protocol -----------------------------------------------------------------
    def __getitem__(self, name: str) -> Value:
        return self._data[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Configuration is frozen")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("Configuration is frozen")

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Configuration):
            return self.key == other.key
        if isinstance(other, Mapping):
            try:
                return self.key == Configuration(other).key
            except ConfigError:
                return False
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.key)

    def __repr__(self) -> str:
        return f"Configuration({self._data!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Configuration, (dict(self._data),))

    # Serialisation --------------------------------------------------------------------
    def canonical_json(self) -> str:
        """Return the canonical JSON text: keys sorted, no spaces, UTF-8 kept, no NaN.

        Integers and floats stay distinct (``1`` vs ``1.0``); the search space coerces each
        parameter to its kind, so the same configuration always serialises the same way.
        """
        return json.dumps(self._data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)

    @property
    def key(self) -> str:
        """The first 16 hex digits of the sha256 of :meth:`canonical_json` (stable id)."""
        if self._key is None:  # computed once, on first use
            object.__setattr__(self, "_key", hashlib.sha256(self.canonical_json().encode("utf-8")).hexdigest()[:16])
        return self._key

    def to_dict(self) -> dict[str, Value]:
        """Return a new plain ``dict`` (JSON-serialisable with ``json.dumps``)."""
        return dict(self._data)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Configuration":
        """Build a configuration from :meth:`to_dict` output (or any mapping).

        Raises:
            ConfigError: see the class.
        """
        return cls(data)


__all__ = ["Configuration", "Value"]
