"""The parameters of the search space: their names, kinds and domains, and typed values.

Every parameter has a kind (``categorical``, ``integer``, ``real``, ``boolean``) and a domain
(the chunking methods, search modes, ranker strategies and vector stores ragtune knows, sizes
of at least 1, ``ranker_alpha`` in [0, 1], well-formed prompt templates). This module checks
names, kinds and domains and coerces typed values (from files, mappings and HTTP bodies);
command-line text is parsed by :mod:`core.optimization.overrides`.

References:
    IBM ai4rag search space parameters: https://github.com/IBM/ai4rag
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass
from typing import Any, Iterable, Literal, Mapping, Sequence

from core.chunking import CHUNKING_METHODS
from core.errors import ConfigError
from core.limits import MAX_SEARCH_LIMIT
from core.optimization.configuration import Value
from core.rag.template import check_template

ParameterKind = Literal["categorical", "integer", "real", "boolean"]
KINDS: tuple[str, ...] = ("categorical", "integer", "real", "boolean")

#: The value held by a parameter that does not apply to a configuration.
PLACEHOLDER: None = None

#: Every parameter of the space, in enumeration order, with its kind.
PARAMETER_KINDS: dict[str, ParameterKind] = {
    "chunking_method": "categorical",
    "chunk_size": "integer",
    "chunk_overlap": "integer",
    "embedding_model": "categorical",
    "number_of_chunks": "integer",
    "search_mode": "categorical",
    "ranker_strategy": "categorical",
    "ranker_k": "integer",
    "ranker_alpha": "real",
    "foundation_model": "categorical",
    "vector_store": "categorical",
    "system_message_text": "categorical",
    "context_template_text": "categorical",
    "user_message_text": "categorical",
    "reranker": "categorical",
    "retrieval_depth": "integer",
}
PARAMETER_NAMES: tuple[str, ...] = tuple(PARAMETER_KINDS)
#: Parameters whose values are free text (not stripped when parsed from the command line).
TEXT_PARAMETERS: tuple[str, ...] = ("system_message_text", "context_template_text", "user_message_text")

SEARCH_MODES: tuple[str, ...] = ("vector", "hybrid", "keyword")
RANKER_STRATEGIES: tuple[str, ...] = ("rrf", "weighted")
#: Vector store backends (as ``core.vectorstores.BACKENDS`` names them).
VECTOR_STORES: tuple[str, ...] = ("milvus-lite", "milvus", "pgvector")
#: The ``reranker`` value that means no reranking.
NO_RERANKER = "none"


def qualified(source: str | None, name: str) -> str:
    """Return ``"source: name"`` (or ``name`` alone without a source), for messages."""
    return f"{source}: {name}" if source else name


def coerce_value(kind: str, value: Any, name: str, source: str | None = None) -> Value:
    """Return ``value`` as the Python type of ``kind`` (typed input: files, mappings).

    ``integer`` takes ints (and integral floats such as ``256.0``); ``real`` takes ints and
    finite floats (returned as float); ``boolean`` takes bools; ``categorical`` takes strings.

    Raises:
        ConfigError: naming the parameter (and ``source``) when the type is wrong.
    """
    where = qualified(source, name)
    item = getattr(value, "item", None)
    if callable(item) and getattr(value, "shape", None) == ():
        value = item()  # numpy scalar
    if kind == "integer":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{where}: {value!r} is not an integer")
        if isinstance(value, float):
            if not (math.isfinite(value) and value.is_integer()):
                raise ConfigError(f"{where}: {value!r} is not an integer")
            value = int(value)
        return int(value)
    if kind == "real":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ConfigError(f"{where}: {value!r} is not a finite number")
        return float(value)
    if kind == "boolean":
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: {value!r} is not true or false")
        return value
    if kind == "categorical":
        if not isinstance(value, str):
            raise ConfigError(f"{where}: {value!r} is not a string")
        return value
    raise ConfigError(f"{where}: unknown parameter kind {kind!r}; kinds: {', '.join(KINDS)}")



def suggest(name: str) -> str:
    """Return a ``did you mean`` hint with the closest parameter name, else the known names."""
    close = difflib.get_close_matches(name, PARAMETER_NAMES, n=1)
    return f"; did you mean {close[0]!r}?" if close else f"; known parameters: {', '.join(PARAMETER_NAMES)}"


def check_name(name: Any, source: str | None) -> str:
    """Return ``name`` when it is a parameter of the space.

    Raises:
        ConfigError: an unknown name (with the closest known one), prefixed by ``source``.
    """
    if not isinstance(name, str) or name not in PARAMETER_KINDS:
        prefix = f"{source}: " if source else ""
        raise ConfigError(f"{prefix}unknown parameter {name!r}{suggest(str(name))}")
    return name


@dataclass(frozen=True)
class Parameter:
    """One parameter of the grid: its name, kind and finite tuple of values.

    Args:
        name: the parameter's name.
        kind: ``categorical`` (strings), ``integer``, ``real`` or ``boolean``.
        values: the values to try, in order (duplicates are dropped; reals become floats).

    Raises:
        ConfigError: an unknown kind, no values, or a value of the wrong type.
    """

    name: str
    kind: ParameterKind
    values: tuple[Value, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ConfigError(f"a parameter name must be a non-empty string, got {self.name!r}")
        if self.kind not in KINDS:
            raise ConfigError(f"{self.name}: unknown parameter kind {self.kind!r}; kinds: {', '.join(KINDS)}")
        if isinstance(self.values, (str, bytes)) or not isinstance(self.values, Iterable):
            raise ConfigError(f"{self.name}: values must be a list of values, got {self.values!r}")
        coerced: list[Value] = []
        for value in self.values:
            v = coerce_value(self.kind, value, self.name)
            if v not in coerced:
                coerced.append(v)
        if not coerced:
            raise ConfigError(f"{self.name}: needs at least one value")
        object.__setattr__(self, "values", tuple(coerced))

    def to_dict(self) -> dict[str, Any]:
        """Return ``{"name", "kind", "values"}`` (JSON-serialisable)."""
        return {"name": self.name, "kind": self.kind, "values": list(self.values)}


def check_domain(p: Parameter, source: str | None) -> None:
    """Check the values of a known parameter against what the rest of ragtune accepts.

    Raises:
        ConfigError: the wrong kind for the name, or a value outside its domain (an unknown
            method, mode, strategy or store, a size below 1, a ``number_of_chunks`` or
            ``retrieval_depth`` over ``core.limits.MAX_SEARCH_LIMIT``, an overlap below 0, an alpha
            outside [0, 1], an empty model id, a prompt template missing its fields).
    """
    where = qualified(source, p.name)

    def allowed(choices: tuple[str, ...]) -> None:
        for v in p.values:
            if v not in choices:
                raise ConfigError(f"{where}: unknown value {v!r}; choose from {', '.join(choices)}")

    if p.kind != PARAMETER_KINDS[p.name]:
        raise ConfigError(f"{where}: must be {PARAMETER_KINDS[p.name]}, not {p.kind}")
    if p.name == "chunking_method":
        allowed(CHUNKING_METHODS)
    elif p.name == "search_mode":
        allowed(SEARCH_MODES)
    elif p.name == "ranker_strategy":
        allowed(RANKER_STRATEGIES)
    elif p.name == "vector_store":
        allowed(VECTOR_STORES)
    elif p.name in ("chunk_size", "number_of_chunks", "ranker_k", "retrieval_depth"):
        for v in p.values:
            if v < 1:  # type: ignore[operator]
                raise ConfigError(f"{where}: {v} must be at least 1")
            if p.name in ("number_of_chunks", "retrieval_depth") and v > MAX_SEARCH_LIMIT:  # type: ignore[operator]
                raise ConfigError(f"{where}: {v} is more than the {MAX_SEARCH_LIMIT:,} results one search returns")
    elif p.name == "chunk_overlap":
        for v in p.values:
            if v < 0:  # type: ignore[operator]
                raise ConfigError(f"{where}: {v} must be at least 0")
    elif p.name == "ranker_alpha":
        for v in p.values:
            if not 0.0 <= v <= 1.0:  # type: ignore[operator]
                raise ConfigError(f"{where}: {v} must be between 0 and 1")
    elif p.name in ("embedding_model", "foundation_model", "reranker"):
        for v in p.values:
            if not v.strip():  # type: ignore[union-attr]
                raise ConfigError(f"{where}: model ids must be non-empty")
    elif p.name in ("context_template_text", "user_message_text"):
        fields = (
            {"document": (1, 1), "doc_number": (0, 1)}
            if p.name == "context_template_text"
            else {"reference_documents": (1, 1), "question": (1, 1)}
        )
        for v in p.values:
            try:
                check_template(v, p.name, fields)  # type: ignore[arg-type]
            except ConfigError as exc:
                raise ConfigError(f"{source}: {exc}" if source else str(exc)) from None


def check_lengths(lengths: Mapping[str, Any], source: str | None) -> dict[str, int | None]:
    """Return ``model id -> context length in tokens`` (None: unknown), checked.

    Raises:
        ConfigError: an empty model id, or a length that is not a positive integer or None.
    """
    out: dict[str, int | None] = {}
    for model, length in lengths.items():
        if not isinstance(model, str) or not model.strip():
            raise ConfigError(f"{qualified(source, 'embedding_model')}: model ids must be non-empty strings, got {model!r}")
        if length is not None and (isinstance(length, bool) or not isinstance(length, int) or length < 1):
            raise ConfigError(
                f"{qualified(source, 'embedding_model')}: context length of {model!r} must be a positive "
                f"integer (tokens) or null, got {length!r}"
            )
        out[model] = length
    return out




def as_values(raw: Any, name: str, source: str | None) -> list[Any]:
    """Return a value or a list of values as a non-empty list.

    Raises:
        ConfigError: a mapping, set or None, or an empty list, naming ``source: name``.
    """
    if isinstance(raw, (list, tuple)):
        values = list(raw)
    elif isinstance(raw, (Mapping, set, frozenset)) or raw is None:
        raise ConfigError(f"{qualified(source, name)}: expected a value or a list of values, got {raw!r}")
    else:
        values = [raw]
    if not values:
        raise ConfigError(f"{qualified(source, name)}: needs at least one value")
    return values


def as_model_lengths(models: Mapping[str, int | None] | Sequence[str], source: str | None) -> dict[str, int | None]:
    """Return ``model id -> context length`` from a mapping, one id or a list of ids (lengths unknown).

    Raises:
        ConfigError: see :func:`check_lengths`.
    """
    if isinstance(models, Mapping):
        return check_lengths(models, source)
    if isinstance(models, str):
        return check_lengths({models: None}, source)
    return check_lengths({m: None for m in models}, source)



def unconfigured_values(values: Mapping[str, Iterable[Any]], available: Mapping[str, Sequence[Any]],
                        source: str) -> list[str]:
    """Return a problem per value of ``values[name]`` that ``available[name]`` does not hold.

    Used for the parameters whose values name things that must exist where the evaluations
    run (``embedding_model``, ``foundation_model``, ``vector_store``).

    Args:
        values: parameter name -> the values asked for (a space's or a request's).
        available: parameter name -> the values that exist here; names it lacks are not checked.
        source: where the values come from, for the messages (``"--space space.yaml"``).

    Returns:
        ``"<source>: <name> <value!r> is not configured here (configured: a, b)"`` per value.
    """
    return [f"{source}: {name} {value!r} is not configured here (configured: {', '.join(map(str, known))})"
            for name, known in available.items() for value in values.get(name, ()) if value not in known]



__all__ = [
    "KINDS",
    "NO_RERANKER",
    "PARAMETER_KINDS",
    "PARAMETER_NAMES",
    "PLACEHOLDER",
    "Parameter",
    "ParameterKind",
    "RANKER_STRATEGIES",
    "SEARCH_MODES",
    "TEXT_PARAMETERS",
    "VECTOR_STORES",
    "as_model_lengths",
    "as_values",
    "check_domain",
    "check_lengths",
    "check_name",
    "coerce_value",
    "unconfigured_values",
    "qualified",
]
