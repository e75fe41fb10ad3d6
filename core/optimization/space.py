"""The search space of a RAG configuration search: a finite grid of valid configurations.

The space is a finite grid, after IBM ai4rag: every parameter has a tuple of values, and a
configuration takes one value of each. Before anything runs, the grid is reduced to the
*valid* configurations: parameters that do not apply are held at ``null`` and configurations
breaking a rule are removed (:mod:`core.optimization.rules`).

The parts live beside it: parameter names, kinds and domains in
:mod:`core.optimization.parameters`, applicability and rules in :mod:`core.optimization.rules`,
default values in :mod:`core.optimization.defaults`, ``--set`` parsing in
:mod:`core.optimization.overrides`, space files in :mod:`core.optimization.space_file`.

References:
    IBM ai4rag search space, its defaults and rules (``AI4RAGSearchSpace``,
    ``default_search_space.py``): https://github.com/IBM/ai4rag
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from core.errors import ConfigError
from core.optimization.configuration import Configuration, Value
from core.optimization.defaults import default_values
from core.optimization.parameters import (
    PARAMETER_KINDS,
    PARAMETER_NAMES,
    PLACEHOLDER,
    Parameter,
    as_model_lengths,
    as_values,
    check_domain,
    check_lengths,
    check_name,
    coerce_value,
    qualified,
)
from core.optimization.rules import APPLIES_WHEN, RULES, UNITS, Rule, applies
from core.optimization.space_file import read_space_file


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
            check_name(p.name, source)
            if p.name in by_name:
                raise ConfigError(f"{qualified(source, p.name)}: given twice")
            check_domain(p, source)
            by_name[p.name] = p
        missing = [n for n in PARAMETER_NAMES if n not in by_name]
        if missing:
            raise ConfigError(f"{source + ': ' if source else ''}search space is missing parameters: {', '.join(missing)}")
        self._parameters: tuple[Parameter, ...] = tuple(by_name[n] for n in PARAMETER_NAMES)
        self._by_name = {p.name: p for p in self._parameters}
        lengths = check_lengths(dict(embedding_context_lengths or {}), source)
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
        return self._by_name[check_name(name, None)]

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
        return applies(check_name(name, None), values)

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
            check_name(name, None)
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
            check_name(name, source)
            if name == "embedding_model" and isinstance(raw, Mapping):
                given = check_lengths(raw, source)
                lengths.update(given)
                raw = list(given)
            values = as_values(raw, name, source)
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
        raw = read_space_file(Path(path))
        known: dict[str, int | None] = as_model_lengths(embedding_models or {}, src)
        if "embedding_model" in raw:
            value = raw["embedding_model"]
            if isinstance(value, Mapping):
                given = check_lengths(value, src)
                emb = {m: (given[m] if given[m] is not None else known.get(m)) for m in given}
            else:
                ids = [coerce_value("categorical", m, "embedding_model", src) for m in as_values(value, "embedding_model", src)]
                emb = {m: known.get(m) for m in ids}  # type: ignore[misc]
        else:
            emb = known
        if "foundation_model" in raw:
            fms = [coerce_value("categorical", m, "foundation_model", src) for m in as_values(raw["foundation_model"], "foundation_model", src)]
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
            notes = [x for x in (UNITS.get(p.name), f"only when {APPLIES_WHEN[p.name]}" if p.name in APPLIES_WHEN else None) if x]
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

    Sizes longer than an embedding model reads are left out by the context-length rule (the
    local default bge-small-en-v1.5 reads 512 tokens: size 512, overlaps 0 and 128). When the
    smallest known context length is below 512 tokens (all-MiniLM-L6-v2 reads 256),
    ``chunk_size`` is (128, 256) and ``chunk_overlap`` is
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
    lengths = as_model_lengths(embedding_models, None)
    if not lengths:
        raise ConfigError("default_space needs at least one embedding model")
    if isinstance(foundation_models, str) or not list(foundation_models):
        raise ConfigError("default_space needs a list of at least one foundation model id")
    values = default_values(lengths, foundation_models, vector_stores)
    return SearchSpace([Parameter(n, PARAMETER_KINDS[n], values[n]) for n in PARAMETER_NAMES], lengths)


__all__ = ["SearchSpace", "default_space"]
