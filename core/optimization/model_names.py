"""The model names a run's search space holds, so the models it names by ``hf:`` or ``onnx:``
can be built before the space is checked against the models that exist here."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping

from core.optimization.space_file import read_space_file

#: The parameters whose values name models.
MODEL_PARAMETERS: tuple[str, ...] = ("embedding_model", "reranker")


def _values(raw: Any) -> list[str]:
    """The string values of one parameter's raw value (a value, a list, or for
    ``embedding_model`` a mapping id -> context length)."""
    if isinstance(raw, Mapping):
        raw = list(raw)
    if not isinstance(raw, (list, tuple)):
        raw = [raw]
    return [v.strip() for v in raw if isinstance(v, str) and v.strip()]


def space_model_names(overrides: Mapping[str, Any] | None = None, space_file: str | Path | None = None,
                      spaces: Iterable[Any] = ()) -> dict[str, list[str]]:
    """``{"embedding_model": [...], "reranker": [...]}``: every model name the overrides, the
    space file and the given spaces hold, each once, in the order found.

    Args:
        overrides: parameter -> values (``--set``, a request's space).
        space_file: a JSON or YAML space file.
        spaces: ``SearchSpace`` objects (a resumed experiment's stored space).

    Raises:
        ConfigError: the space file cannot be read (``read_space_file``).
    """
    found: dict[str, dict[str, None]] = {name: {} for name in MODEL_PARAMETERS}
    sources: list[Mapping[str, Any]] = [overrides or {}]
    if space_file:
        sources.append(read_space_file(Path(space_file)))
    for space in spaces:
        sources.append({p.name: list(p.values) for p in space.parameters})
    for source in sources:
        for name in MODEL_PARAMETERS:
            for value in _values(source.get(name, ())):
                found[name][value] = None
    return {name: list(values) for name, values in found.items()}


__all__ = ["MODEL_PARAMETERS", "space_model_names"]
