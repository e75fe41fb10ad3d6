"""The search space of a RAG configuration search: parameters, validity rules, defaults, files.

The space is a finite grid, after IBM ai4rag: every parameter has a tuple of values, and a
configuration takes one value of each. Before anything runs, the grid is reduced to the
*valid* configurations:

Applicability (a parameter that does not apply is held at the placeholder :data:`PLACEHOLDER`,
``None``, JSON ``null``, so equivalent configurations are one configuration):

- ``chunk_size`` applies to every chunking method but ``hierarchical`` (which makes one chunk
  per document element): ``core.chunking.SIZED_METHODS``;
- ``chunk_overlap`` applies to ``recursive``, ``fixed`` and ``contextual`` only
  (``core.chunking.OVERLAP_METHODS``; the others take no overlap);
- ``ranker_strategy`` applies to ``search_mode="hybrid"`` only;
- ``ranker_k`` applies to hybrid search with ``ranker_strategy="rrf"`` only;
- ``ranker_alpha`` applies to hybrid search with ``ranker_strategy="weighted"`` only.

Rules (a configuration breaking one is removed):

- ``overlap_below_half_chunk``: ``chunk_size > 2 * chunk_overlap``;
- ``chunk_fits_embedding_model``: ``chunk_size <=`` the embedding model's context length in
  tokens, when that length is known.

Sizes are in tokens (the recursive chunker counts 4 characters per token; the hybrid chunker
counts tokenizer tokens).

The placeholder is ``None`` rather than a sentinel value (ai4rag uses ``""``, ``0`` and ``1``)
so it cannot be mistaken for a real setting and keeps each column's type (an integer or
``null``). Runners pass a neutral value where a callee needs one (for example
``chunk_overlap=0`` for the hybrid chunker).

References:
    IBM ai4rag search space, its defaults and rules (``AI4RAGSearchSpace``,
    ``default_search_space.py``): https://github.com/IBM/ai4rag
"""

from __future__ import annotations

import difflib
import json
import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Literal, Mapping, Sequence

import numpy as np

from core.errors import ConfigError
from core.optimization.configuration import Configuration, Value

logger = logging.getLogger(__name__)

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

from core.chunking import CHUNKING_METHODS, OVERLAP_METHODS, SIZED_METHODS  # noqa: E402  (one home)

SEARCH_MODES: tuple[str, ...] = ("vector", "hybrid", "keyword")
RANKER_STRATEGIES: tuple[str, ...] = ("rrf", "weighted")
#: Vector store backends (as ``core.vectorstores.BACKENDS`` names them).
VECTOR_STORES: tuple[str, ...] = ("milvus-lite", "milvus", "pgvector")

#: ai4rag's default chunk sizes and overlaps (tokens).
AI4RAG_CHUNK_SIZES: tuple[int, ...] = (512, 1024, 2048)
AI4RAG_CHUNK_OVERLAPS: tuple[int, ...] = (0, 128, 256)
#: The defaults when an embedding model's context is shorter than 512 tokens (all-MiniLM-L6-v2
#: reads 256): with ai4rag's sizes every configuration of that model would be removed.
SHORT_CONTEXT_CHUNK_SIZES: tuple[int, ...] = (128, 256)
SHORT_CONTEXT_CHUNK_OVERLAPS: tuple[int, ...] = (0, 32, 64)
DEFAULT_CHUNKING_METHODS: tuple[str, ...] = ("recursive", "hybrid")
DEFAULT_NUMBER_OF_CHUNKS: tuple[int, ...] = (3, 5, 10)
DEFAULT_SEARCH_MODES: tuple[str, ...] = ("vector", "hybrid")
DEFAULT_RANKER_STRATEGIES: tuple[str, ...] = ("rrf", "weighted")
DEFAULT_RANKER_K: tuple[int, ...] = (60,)
DEFAULT_RANKER_ALPHA: tuple[float, ...] = (0.5, 1.0)
#: No reranker unless a space names one (``--set reranker=none,local:ms-marco-MiniLM-L-12-v2``).
NO_RERANKER = "none"
DEFAULT_RERANKERS: tuple[str, ...] = (NO_RERANKER,)
#: Results the first stage fetches before the reranker keeps ``number_of_chunks``.
DEFAULT_RETRIEVAL_DEPTH: tuple[int, ...] = (20,)

_APPLIES_WHEN: dict[str, str] = {
    "chunk_size": f"chunking_method is one of {', '.join(SIZED_METHODS)}",
    "chunk_overlap": f"chunking_method is one of {', '.join(OVERLAP_METHODS)}",
    "ranker_strategy": "search_mode is hybrid",
    "ranker_k": "search_mode is hybrid and ranker_strategy is rrf",
    "ranker_alpha": "search_mode is hybrid and ranker_strategy is weighted",
    "retrieval_depth": "reranker is not none",
}

_UNITS: dict[str, str] = {"chunk_size": "tokens", "chunk_overlap": "tokens"}


def applies(name: str, values: Mapping[str, Any]) -> bool:
    """Return whether parameter ``name`` applies, given the values of the parameters before it.

    Args:
        name: a parameter name (see :data:`PARAMETER_NAMES`).
        values: values of (at least) the parameters ``name`` depends on.

    Returns:
        False when the parameter must be held at :data:`PLACEHOLDER`.
    """
    if name == "chunk_size":
        return values.get("chunking_method") in SIZED_METHODS
    if name == "chunk_overlap":
        return values.get("chunking_method") in OVERLAP_METHODS
    if name == "ranker_strategy":
        return values.get("search_mode") == "hybrid"
    if name == "ranker_k":
        return values.get("search_mode") == "hybrid" and values.get("ranker_strategy") == "rrf"
    if name == "ranker_alpha":
        return values.get("search_mode") == "hybrid" and values.get("ranker_strategy") == "weighted"
    if name == "retrieval_depth":
        return values.get("reranker", NO_RERANKER) != NO_RERANKER
    return True


@dataclass(frozen=True)
class Rule:
    """A validity rule over a few parameters.

    Attributes:
        name: short id (``overlap_below_half_chunk``).
        description: the rule in words, for messages.
        parameters: the parameters it reads; it is checked once all are set.
        check: ``check(values, context_lengths) -> bool``; True keeps the configuration.
            Placeholders (``None``) always pass.
    """

    name: str
    description: str
    parameters: tuple[str, ...]
    check: Callable[[Mapping[str, Any], Mapping[str, int | None]], bool]


def _overlap_below_half_chunk(values: Mapping[str, Any], _: Mapping[str, int | None]) -> bool:
    size, overlap = values.get("chunk_size"), values.get("chunk_overlap")
    return size is None or overlap is None or size > 2 * overlap


def _chunk_fits_embedding_model(values: Mapping[str, Any], lengths: Mapping[str, int | None]) -> bool:
    size = values.get("chunk_size")
    limit = lengths.get(values.get("embedding_model"))  # type: ignore[arg-type]
    return size is None or limit is None or size <= limit


RULES: tuple[Rule, ...] = (
    Rule(
        "overlap_below_half_chunk",
        "chunk_size > 2 * chunk_overlap",
        ("chunk_size", "chunk_overlap"),
        _overlap_below_half_chunk,
    ),
    Rule(
        "chunk_fits_embedding_model",
        "chunk_size <= the embedding model's context length (when known)",
        ("chunking_method", "chunk_size", "embedding_model"),
        _chunk_fits_embedding_model,
    ),
)


# Values ------------------------------------------------------------------------------------
def _where(source: str | None, name: str) -> str:
    return f"{source}: {name}" if source else name


def coerce_value(kind: str, value: Any, name: str, source: str | None = None) -> Value:
    """Return ``value`` as the Python type of ``kind`` (typed input: files, mappings).

    ``integer`` takes ints (and integral floats such as ``256.0``); ``real`` takes ints and
    finite floats (returned as float); ``boolean`` takes bools; ``categorical`` takes strings.

    Raises:
        ConfigError: naming the parameter (and ``source``) when the type is wrong.
    """
    where = _where(source, name)
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


def _suggest(name: str) -> str:
    close = difflib.get_close_matches(name, PARAMETER_NAMES, n=1)
    return f"; did you mean {close[0]!r}?" if close else f"; known parameters: {', '.join(PARAMETER_NAMES)}"


def _check_name(name: Any, source: str | None) -> str:
    if not isinstance(name, str) or name not in PARAMETER_KINDS:
        prefix = f"{source}: " if source else ""
        raise ConfigError(f"{prefix}unknown parameter {name!r}{_suggest(str(name))}")
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


def _check_domain(p: Parameter, source: str | None) -> None:
    """Check the values of a known parameter against what the rest of ragtune accepts."""
    where = _where(source, p.name)

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
        from core.rag.template import check_template  # lazy: keeps this module's import light

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


def _check_lengths(lengths: Mapping[str, Any], source: str | None) -> dict[str, int | None]:
    out: dict[str, int | None] = {}
    for model, length in lengths.items():
        if not isinstance(model, str) or not model.strip():
            raise ConfigError(f"{_where(source, 'embedding_model')}: model ids must be non-empty strings, got {model!r}")
        if length is not None and (isinstance(length, bool) or not isinstance(length, int) or length < 1):
            raise ConfigError(
                f"{_where(source, 'embedding_model')}: context length of {model!r} must be a positive "
                f"integer (tokens) or null, got {length!r}"
            )
        out[model] = length
    return out


# The space ----------------------------------------------------------------------------------
class SearchSpace:
    """A finite grid of RAG configurations and the rules that make one valid.

    Args:
        parameters: one :class:`Parameter` for every name in :data:`PARAMETER_NAMES` (any
            order; the space orders them).
        embedding_context_lengths: context length in tokens of each embedding model id
            (None or missing: unknown, the context rule is not applied to it).
        source: where the values came from (a file path), used in messages.

    Raises:
        ConfigError: an unknown, missing or repeated parameter, a value out of its domain,
            or no valid configuration at all (the message says which rule removed them).

    Example:
        >>> space = default_space({"all-MiniLM-L6-v2": 256}, ["gpt-4o-mini"])
        >>> space.n_valid
        84
        >>> space.valid_configurations()[0]["chunk_size"]
        128

    References:
        IBM ai4rag ``AI4RAGSearchSpace`` (rules, user values over defaults):
        https://github.com/IBM/ai4rag
    """

    def __init__(
        self,
        parameters: Iterable[Parameter],
        embedding_context_lengths: Mapping[str, int | None] | None = None,
        *,
        source: str | None = None,
    ) -> None:
        by_name: dict[str, Parameter] = {}
        for p in parameters:
            if not isinstance(p, Parameter):
                raise ConfigError(f"search space parameters must be Parameter objects, got {type(p).__name__}")
            _check_name(p.name, source)
            if p.name in by_name:
                raise ConfigError(f"{_where(source, p.name)}: given twice")
            _check_domain(p, source)
            by_name[p.name] = p
        missing = [n for n in PARAMETER_NAMES if n not in by_name]
        if missing:
            raise ConfigError(f"{source + ': ' if source else ''}search space is missing parameters: {', '.join(missing)}")
        self._parameters: tuple[Parameter, ...] = tuple(by_name[n] for n in PARAMETER_NAMES)
        self._by_name = {p.name: p for p in self._parameters}
        lengths = _check_lengths(dict(embedding_context_lengths or {}), source)
        self._lengths: dict[str, int | None] = {m: lengths.get(m) for m in self["embedding_model"].values}  # type: ignore[misc]
        self._source = source
        self._rows: list[tuple[Value, ...]] | None = None
        self._configs: tuple[Configuration, ...] | None = None
        self._index: dict[tuple[Value, ...], int] | None = None
        self._codes: tuple[tuple[tuple[Value, ...], ...], np.ndarray] | None = None
        self._check_not_empty()

    # Access --------------------------------------------------------------------------------
    @property
    def parameters(self) -> tuple[Parameter, ...]:
        """The parameters, in :data:`PARAMETER_NAMES` order."""
        return self._parameters

    def __getitem__(self, name: str) -> Parameter:
        """Return the parameter called ``name`` (ConfigError for an unknown name)."""
        return self._by_name[_check_name(name, None)]

    @property
    def embedding_context_lengths(self) -> dict[str, int | None]:
        """Context length in tokens of each embedding model (None: unknown)."""
        return dict(self._lengths)

    @property
    def full_size(self) -> int:
        """Number of points of the full grid (product of the value counts), before the rules."""
        return math.prod(len(p.values) for p in self._parameters)

    @property
    def n_valid(self) -> int:
        """Number of valid configurations (placeholders merged, rules applied)."""
        return len(self._enumerate())

    def applies(self, name: str, values: Mapping[str, Any]) -> bool:
        """Return whether ``name`` applies given earlier values (see :func:`applies`)."""
        return applies(_check_name(name, None), values)

    # Enumeration ---------------------------------------------------------------------------
    def _enumerate(self) -> list[tuple[Value, ...]]:
        if self._rows is None:
            self._rows = list(self._walk(PARAMETER_NAMES, use_rules=True))
        return self._rows

    def _walk(
        self, names: Sequence[str], use_rules: bool | Sequence[Rule] = True
    ) -> Iterable[tuple[Value, ...]]:
        """Depth-first over ``names`` in order, holding placeholders, pruning by rules.

        ``use_rules``: True for every rule, False for none, or the rules to apply.
        """
        if use_rules is True:
            active = set(r.name for r in RULES)
        elif use_rules is False:
            active = set()
        else:
            active = set(r.name for r in use_rules)
        rules_at: list[list[Rule]] = [[] for _ in names]
        for r in RULES:
            if r.name in active and all(n in names for n in r.parameters):
                rules_at[max(names.index(n) for n in r.parameters)].append(r)
        values: dict[str, Value] = {}
        out: list[Value] = []

        def rec(i: int) -> Iterable[tuple[Value, ...]]:
            if i == len(names):
                yield tuple(out)
                return
            name = names[i]
            options = self._by_name[name].values if applies(name, values) else (PLACEHOLDER,)
            for v in options:
                values[name] = v
                if all(rule.check(values, self._lengths) for rule in rules_at[i]):
                    out.append(v)
                    yield from rec(i + 1)
                    out.pop()
            values.pop(name, None)

        return rec(0)

    def valid_configurations(self) -> tuple[Configuration, ...]:
        """Every valid configuration, deduplicated, in a deterministic order.

        The order is the grid order: parameters in :data:`PARAMETER_NAMES` order, each
        parameter's values in the order given, the last parameter varying fastest.
        """
        if self._configs is None:
            self._configs = tuple(
                Configuration._trusted(dict(zip(PARAMETER_NAMES, row))) for row in self._enumerate()
            )
        return self._configs

    def index_of(self, configuration: Mapping[str, Any]) -> int | None:
        """Return the position of ``configuration`` in :meth:`valid_configurations`, or None.

        The configuration must already be normalised (see :meth:`configuration`).
        """
        if self._index is None:
            self._index = {row: i for i, row in enumerate(self._enumerate())}
        try:
            row = tuple(configuration[n] for n in PARAMETER_NAMES)
        except KeyError:
            return None
        return self._index.get(row)

    def contains(self, configuration: Mapping[str, Any]) -> bool:
        """Return whether ``configuration`` is one of the valid configurations."""
        return self.index_of(configuration) is not None

    def level_codes(self) -> tuple[tuple[tuple[Value, ...], ...], np.ndarray]:
        """Integer codes of every valid configuration, for models.

        Returns:
            ``(levels, codes)``: ``levels[j]`` is the tuple of values parameter ``j`` takes
            among the valid configurations (its values in order, then ``None`` when the
            placeholder occurs); ``codes`` is an ``int32`` array of shape
            ``(n_valid, n_parameters)`` with ``codes[i, j]`` the position of configuration
            ``i``'s value in ``levels[j]``.
        """
        if self._codes is None:
            rows = self._enumerate()
            levels: list[tuple[Value, ...]] = []
            codes = np.zeros((len(rows), len(PARAMETER_NAMES)), dtype=np.int32)
            for j, p in enumerate(self._parameters):
                present = {row[j] for row in rows} if rows else set()
                lv = tuple(v for v in p.values if v in present) + ((PLACEHOLDER,) if PLACEHOLDER in present else ())
                pos = {v: k for k, v in enumerate(lv)}
                codes[:, j] = [pos[row[j]] for row in rows]
                levels.append(lv)
            self._codes = (tuple(levels), codes)
        return self._codes

    # Single configurations -------------------------------------------------------------------
    def configuration(self, values: Mapping[str, Any], *, check: bool = True) -> Configuration:
        """Normalise ``values`` into a configuration of this space.

        Values are coerced to each parameter's kind, parameters that do not apply are set to
        the placeholder (whatever was given), and a parameter that applies but is missing is
        filled when the space has a single value for it.

        Args:
            values: parameter name -> value (a dict, or a :class:`Configuration`).
            check: also require the configuration to be valid in this space.

        Raises:
            ConfigError: an unknown parameter, a wrongly typed value, a missing parameter
                with several values, or (``check``) a value outside the space or a broken rule.
        """
        if not isinstance(values, Mapping):
            raise ConfigError(f"a configuration must be a mapping, got {type(values).__name__}")
        for name in values:
            _check_name(name, None)
        out: dict[str, Value] = {}
        for name in PARAMETER_NAMES:
            p = self._by_name[name]
            if not applies(name, out):
                out[name] = PLACEHOLDER
                continue
            if name not in values or values[name] is None:
                if len(p.values) == 1:
                    out[name] = p.values[0]
                    continue
                raise ConfigError(f"configuration has no value for {name} (the space has {len(p.values)})")
            out[name] = coerce_value(p.kind, values[name], name)
        config = Configuration._trusted(out)
        if check and not self.contains(config):
            raise ConfigError(f"configuration is not valid in this search space: {self.why_invalid(config)}")
        return config

    def why_invalid(self, configuration: Mapping[str, Any]) -> str | None:
        """Return why a normalised configuration is not valid here, or None when it is."""
        for name in PARAMETER_NAMES:
            v = configuration.get(name)
            if v is None:
                continue
            if v not in self._by_name[name].values:
                return f"{name}={v!r} is not one of the space's values {list(self._by_name[name].values)}"
        for rule in RULES:
            if not rule.check(configuration, self._lengths):
                detail = ""
                if rule.name == "chunk_fits_embedding_model":
                    m = configuration.get("embedding_model")
                    detail = f" ({m} reads {self._lengths.get(m)} tokens)"  # type: ignore[arg-type]
                return f"rule {rule.name} ({rule.description}) fails{detail}"
        if self.contains(configuration):
            return None
        return "a parameter that does not apply is not held at null"

    # Emptiness -------------------------------------------------------------------------------
    def _check_not_empty(self) -> None:
        names = ("chunking_method", "chunk_size", "chunk_overlap", "embedding_model")
        if next(iter(self._walk(names, use_rules=True)), None) is not None:
            return
        total = list(self._walk(names, use_rules=False))
        removed = {
            r.name: sum(1 for row in total if not r.check(dict(zip(names, row)), self._lengths)) for r in RULES
        }
        lengths = ", ".join(f"{m}: {n if n is not None else 'unknown'}" for m, n in self._lengths.items())
        sizes = list(self["chunk_size"].values)
        overlaps = list(self["chunk_overlap"].values)
        explain = {
            "overlap_below_half_chunk": f"chunk_size {sizes} vs chunk_overlap {overlaps}",
            "chunk_fits_embedding_model": f"chunk_size {sizes} vs context lengths in tokens {{{lengths}}}",
        }
        remedy = {
            "overlap_below_half_chunk": "add a larger chunk_size or a smaller chunk_overlap",
            "chunk_fits_embedding_model": "add a chunk_size that fits, or an embedding model with a longer context",
        }
        whole = [r for r in RULES if removed[r.name] == len(total)]
        prefix = f"{self._source}: " if self._source else ""
        if whole:
            r = whole[0]
            raise ConfigError(
                f"{prefix}the search space has no valid configuration: rule {r.name} ({r.description}) "
                f"removes every one of the {len(total)} indexing combinations ({explain[r.name]}); "
                f"{remedy[r.name]}"
            )
        parts = "; ".join(f"{r.name} ({r.description}) removes {removed[r.name]}" for r in RULES)
        raise ConfigError(
            f"{prefix}the search space has no valid configuration: of {len(total)} indexing combinations, {parts}, "
            f"and together they remove all ({explain['overlap_below_half_chunk']}; "
            f"{explain['chunk_fits_embedding_model']})"
        )

    # Variants ---------------------------------------------------------------------------------
    def with_overrides(self, overrides: Mapping[str, Any], *, source: str | None = None) -> "SearchSpace":
        """Return a new space with some parameters' values replaced (narrowed or widened).

        Args:
            overrides: parameter name -> a value or a list of values (already typed, as
                from JSON, YAML or :func:`parse_override`). ``embedding_model`` may also be a
                mapping ``model id -> context length in tokens (or null)``.
            source: where the overrides come from (a file path, ``"--set"``), for messages.

        Raises:
            ConfigError: an unknown parameter, a wrongly typed or out-of-domain value, an
                empty list, or an empty resulting space; messages name the parameter and
                ``source``.
        """
        if not isinstance(overrides, Mapping):
            raise ConfigError(f"{source + ': ' if source else ''}overrides must be a mapping, got {type(overrides).__name__}")
        params = dict(self._by_name)
        lengths = dict(self._lengths)
        for name, raw in overrides.items():
            _check_name(name, source)
            if name == "embedding_model" and isinstance(raw, Mapping):
                given = _check_lengths(raw, source)
                lengths.update(given)
                raw = list(given)
            values = _as_values(raw, name, source)
            try:
                params[name] = Parameter(name, PARAMETER_KINDS[name], tuple(
                    coerce_value(PARAMETER_KINDS[name], v, name, source) for v in values))
            except ConfigError as exc:
                msg = str(exc)
                raise ConfigError(msg if source is None or msg.startswith(source) else f"{source}: {msg}") from None
        return SearchSpace(params.values(), lengths, source=source or self._source)

    @classmethod
    def from_file(
        cls,
        path: str | Path,
        *,
        embedding_models: Mapping[str, int | None] | Sequence[str] | None = None,
        foundation_models: Sequence[str] | None = None,
        vector_stores: Sequence[str] = ("milvus-lite",),
    ) -> "SearchSpace":
        """Read a JSON or YAML space file and merge it over :func:`default_space`.

        The file is a mapping ``parameter name -> value or list of values``, for example
        ``{"chunk_size": [256, 512], "search_mode": ["hybrid"]}``; parameters it does not name
        keep their defaults. ``embedding_model`` may be a list of ids or a mapping
        ``id -> context length in tokens`` (null: unknown). When the file names the models,
        its list replaces ``embedding_models`` / ``foundation_models`` (context lengths are
        still taken from ``embedding_models`` when the file gives none), and the default
        chunk sizes follow the resulting models.

        Args:
            path: a ``.json``, ``.yaml`` or ``.yml`` file (other suffixes: JSON, then YAML).
            embedding_models: the default embedding models (id -> context length), when the
                file names none.
            foundation_models: the default chat model ids, when the file names none.

        Raises:
            ConfigError: the file cannot be read or parsed, is not a mapping, names an unknown
                parameter or a wrongly typed value, gives no models at all, or leaves no valid
                configuration. Messages start with the path.
        """
        src = str(path)
        raw = _read_space_file(Path(path))
        known: dict[str, int | None] = _as_model_lengths(embedding_models or {}, src)
        if "embedding_model" in raw:
            value = raw["embedding_model"]
            if isinstance(value, Mapping):
                given = _check_lengths(value, src)
                emb = {m: (given[m] if given[m] is not None else known.get(m)) for m in given}
            else:
                ids = [coerce_value("categorical", m, "embedding_model", src) for m in _as_values(value, "embedding_model", src)]
                emb = {m: known.get(m) for m in ids}  # type: ignore[misc]
        else:
            emb = known
        if "foundation_model" in raw:
            fms = [coerce_value("categorical", m, "foundation_model", src) for m in _as_values(raw["foundation_model"], "foundation_model", src)]
        else:
            fms = list(foundation_models or [])
        if not emb:
            raise ConfigError(f"{src}: no embedding_model; list the embedding models in the file or pass them")
        if not fms:
            raise ConfigError(f"{src}: no foundation_model; list the chat model ids in the file or pass them")
        try:
            base = default_space(emb, fms, vector_stores)  # type: ignore[arg-type]
        except ConfigError as exc:
            raise ConfigError(f"{src}: {exc}") from None
        rest = {k: v for k, v in raw.items() if k not in ("embedding_model", "foundation_model")}
        return base.with_overrides(rest, source=src) if rest else SearchSpace(base.parameters, base._lengths, source=src)

    # Serialisation and display -----------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Return ``{"parameters": [...], "embedding_context_lengths": {...}}`` (JSON-clean)."""
        return {
            "parameters": [p.to_dict() for p in self._parameters],
            "embedding_context_lengths": dict(self._lengths),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "SearchSpace":
        """Rebuild a space from :meth:`to_dict` output.

        Raises:
            ConfigError: malformed data or an invalid space.
        """
        try:
            params = [Parameter(d["name"], d["kind"], tuple(d["values"])) for d in data["parameters"]]
            lengths = data.get("embedding_context_lengths") or {}
        except (KeyError, TypeError) as exc:
            raise ConfigError(f"a stored search space is malformed ({type(exc).__name__}: {exc})") from None
        return cls(params, lengths)

    def fingerprint(self) -> str:
        """First 16 hex digits of the sha256 of the canonical JSON of :meth:`to_dict`."""
        import hashlib

        text = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SearchSpace):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]

    def describe(self) -> str:
        """Return a readable summary: values of each parameter, the rules, the counts."""
        lines = [f"search space: {self.n_valid} valid configurations ({self.full_size} points in the full grid)"]
        width = max(len(n) for n in PARAMETER_NAMES)
        for p in self._parameters:
            shown = ", ".join(_short(v) for v in p.values)
            notes = [x for x in (_UNITS.get(p.name), f"only when {_APPLIES_WHEN[p.name]}" if p.name in _APPLIES_WHEN else None) if x]
            lines.append(f"  {p.name:<{width}}  {p.kind:<11}  {shown}" + (f"  ({'; '.join(notes)})" if notes else ""))
        lengths = ", ".join(f"{m}: {n if n is not None else 'unknown'}" for m, n in self._lengths.items())
        lines.append(f"embedding model context lengths (tokens): {lengths}")
        lines.append("rules: " + "; ".join(r.description for r in RULES))
        lines.append("a parameter that does not apply is held at null")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"SearchSpace(n_valid={self.n_valid}, full_size={self.full_size})"


def _short(value: Any, most: int = 40) -> str:
    text = json.dumps(value, ensure_ascii=False) if isinstance(value, str) else str(value)
    return text if len(text) <= most else text[: most - 3] + '..."'


def _as_values(raw: Any, name: str, source: str | None) -> list[Any]:
    if isinstance(raw, (list, tuple)):
        values = list(raw)
    elif isinstance(raw, (Mapping, set, frozenset)) or raw is None:
        raise ConfigError(f"{_where(source, name)}: expected a value or a list of values, got {raw!r}")
    else:
        values = [raw]
    if not values:
        raise ConfigError(f"{_where(source, name)}: needs at least one value")
    return values


def _as_model_lengths(models: Mapping[str, int | None] | Sequence[str], source: str | None) -> dict[str, int | None]:
    if isinstance(models, Mapping):
        return _check_lengths(models, source)
    if isinstance(models, str):
        return _check_lengths({models: None}, source)
    return _check_lengths({m: None for m in models}, source)


def _read_space_file(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the search space file ({exc})") from None
    suffix = path.suffix.lower()

    def as_yaml() -> Any:
        try:
            import yaml
        except ImportError:
            raise ConfigError(f"{path}: reading YAML needs pyyaml (pip install pyyaml), or write the file as JSON") from None
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ConfigError(f"{path}: not valid YAML ({exc})") from None

    def as_json() -> Any:
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None

    if suffix == ".json":
        data = as_json()
    elif suffix in (".yaml", ".yml"):
        data = as_yaml()
    else:
        try:
            data = as_json()
        except ConfigError:
            data = as_yaml()
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"{path}: a search space file must hold a mapping of parameter names to values, "
                          f"got {type(data).__name__}")
    for name in data:
        _check_name(name, str(path))
    return dict(data)


# Defaults and overrides -----------------------------------------------------------------------
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


def default_space(
    embedding_models: Mapping[str, int | None] | Sequence[str],
    foundation_models: Sequence[str],
    vector_stores: Sequence[str] = ("milvus-lite",),
) -> SearchSpace:
    """Return ai4rag's default space for the given models.

    Values: ``chunking_method`` (recursive, hybrid), ``chunk_size`` (512, 1024, 2048),
    ``chunk_overlap`` (0, 128, 256), ``number_of_chunks`` (3, 5, 10), ``search_mode``
    (vector, hybrid), ``ranker_strategy`` (rrf, weighted), ``ranker_k`` (60),
    ``ranker_alpha`` (0.5, 1.0), the given models, and one value of each prompt template
    (the defaults of ``core.rag.template``).

    When the smallest known context length is below 512 tokens (the offline default
    all-MiniLM-L6-v2 reads 256), ``chunk_size`` is (128, 256) and ``chunk_overlap`` is
    (0, 32, 64) instead, so the space is not empty: with ai4rag's sizes every configuration
    of that model would break the context-length rule. Models with longer contexts then get
    the small sizes too; widen ``chunk_size`` in a space file to give them more.

    Args:
        embedding_models: embedding model id -> context length in tokens (None: unknown);
            a plain list of ids means every length is unknown.
        foundation_models: chat model ids (at least one; for example the extractive
            baseline's ``model_id``).
        vector_stores: the backends compared (``milvus-lite``, ``milvus``, ``pgvector``);
            one by default, so the search compares RAG settings, not databases.

    Raises:
        ConfigError: no embedding model, no foundation model, or a bad context length.

    References:
        IBM ai4rag ``default_search_space.py``: https://github.com/IBM/ai4rag
    """
    from core.rag.template import DEFAULT_CONTEXT_TEMPLATE, DEFAULT_SYSTEM_MESSAGE, DEFAULT_USER_MESSAGE

    lengths = _as_model_lengths(embedding_models, None)
    if not lengths:
        raise ConfigError("default_space needs at least one embedding model")
    if isinstance(foundation_models, str) or not list(foundation_models):
        raise ConfigError("default_space needs a list of at least one foundation model id")
    known = [n for n in lengths.values() if n is not None]
    short = bool(known) and min(known) < AI4RAG_CHUNK_SIZES[0]
    sizes = SHORT_CONTEXT_CHUNK_SIZES if short else AI4RAG_CHUNK_SIZES
    overlaps = SHORT_CONTEXT_CHUNK_OVERLAPS if short else AI4RAG_CHUNK_OVERLAPS
    values: dict[str, tuple[Any, ...]] = {
        "chunking_method": DEFAULT_CHUNKING_METHODS,
        "chunk_size": sizes,
        "chunk_overlap": overlaps,
        "embedding_model": tuple(lengths),
        "number_of_chunks": DEFAULT_NUMBER_OF_CHUNKS,
        "search_mode": DEFAULT_SEARCH_MODES,
        "ranker_strategy": DEFAULT_RANKER_STRATEGIES,
        "ranker_k": DEFAULT_RANKER_K,
        "ranker_alpha": DEFAULT_RANKER_ALPHA,
        "foundation_model": tuple(foundation_models),
        "vector_store": tuple(vector_stores),
        "system_message_text": (DEFAULT_SYSTEM_MESSAGE,),
        "context_template_text": (DEFAULT_CONTEXT_TEMPLATE,),
        "user_message_text": (DEFAULT_USER_MESSAGE,),
        "reranker": DEFAULT_RERANKERS,
        "retrieval_depth": DEFAULT_RETRIEVAL_DEPTH,
    }
    return SearchSpace([Parameter(n, PARAMETER_KINDS[n], values[n]) for n in PARAMETER_NAMES], lengths)


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
    _check_name(name, "--set")
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


__all__ = [
    "AI4RAG_CHUNK_OVERLAPS",
    "AI4RAG_CHUNK_SIZES",
    "KINDS",
    "PARAMETER_KINDS",
    "PARAMETER_NAMES",
    "PLACEHOLDER",
    "Parameter",
    "RULES",
    "Rule",
    "SHORT_CONTEXT_CHUNK_OVERLAPS",
    "SHORT_CONTEXT_CHUNK_SIZES",
    "SearchSpace",
    "applies",
    "coerce_value",
    "default_space",
    "parse_override",
    "parse_overrides",
    "parse_value",
]
