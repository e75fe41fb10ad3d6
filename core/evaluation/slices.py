"""Retrieval metrics per slice of the golden file: ``ragtune evaluate --by metadata.KEY``.

A slice is the set of questions whose ``metadata`` holds the same value at ``KEY`` (a dotted
path into nested objects: ``metadata.source.kind``). Values are compared as text: a string as
it is, anything else as its JSON (``2``, ``true``, ``["a", "b"]``). Questions without the key
form the slice :data:`MISSING`. Each slice's means are :func:`core.metrics.retrieval.aggregate`
over its own questions, so a slice's ``n_scored`` and ``n_unscorable`` count only them, and the
slices' ``n_scored`` add up to the overall ``n_scored``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from core.errors import ConfigError
from core.golden.types import Problem
from core.metrics.retrieval import aggregate

if TYPE_CHECKING:
    from core.golden.types import GoldenQuestion

#: The slice of questions whose metadata lacks the key.
MISSING = "(none)"
#: The prefix every slice key starts with.
PREFIX = "metadata."

_ABSENT = object()


def check_slice_key(key: str) -> str:
    """Validate a ``--by`` key and return it stripped.

    Raises:
        ConfigError: the key does not start with ``metadata.`` or names an empty part.
    """
    key = key.strip() if isinstance(key, str) else key
    if not isinstance(key, str) or not key.startswith(PREFIX) or any(not p for p in key[len(PREFIX):].split(".")):
        raise ConfigError(f"--by takes a metadata key such as 'metadata.type' (parts separated by dots), got {key!r}")
    return key


def metadata_value(question: GoldenQuestion, key: str) -> str:
    """The slice of ``question`` for ``key``: its metadata value as text, or :data:`MISSING`."""
    value: Any = question.metadata
    for part in key[len(PREFIX):].split("."):
        value = value.get(part, _ABSENT) if isinstance(value, Mapping) else _ABSENT
        if value is _ABSENT:
            return MISSING
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


def slice_metrics(questions: Sequence[Any], grains: Mapping[str, Any], key: str) -> list[dict[str, Any]]:
    """Metrics of one setup per slice of ``key``, at every grain.

    Args:
        questions: the scored ``GoldenQuestion`` objects.
        grains: grain -> ``GrainResult`` of one setup (from ``evaluate_rankings``).
        key: a ``metadata.`` key (see :func:`check_slice_key`).

    Returns:
        One dict per slice, ordered by value (:data:`MISSING` last): ``{"value", "n_questions",
        "metrics": {grain: RetrievalAggregate.to_dict()}}``.
    """
    groups: dict[str, list[str]] = {}
    for q in questions:
        groups.setdefault(metadata_value(q, key), []).append(q.id)
    out = []
    for value in sorted(groups, key=lambda v: (v == MISSING, v)):
        ids = groups[value]
        metrics = {}
        for grain, result in grains.items():
            rows = [result.per_question[i] for i in ids]
            n_fallback = sum(1 for r in rows if r.judgement is not None and r.judgement.fallback)
            metrics[grain] = aggregate([r.scores for r in rows], n_fallback=n_fallback).to_dict()
        out.append({"value": value, "n_questions": len(ids), "metrics": metrics})
    return out


def slice_warnings(questions: Sequence[Any], keys: Sequence[str]) -> list[Any]:
    """A ``Problem`` warning per key that no question's metadata holds (every question would be in
    :data:`MISSING`)."""
    return [Problem("warning", f"--by {key}: no question's metadata has this key, so every question is in "
                               f"the slice {MISSING}")
            for key in keys if questions and all(metadata_value(q, key) == MISSING for q in questions)]


def setup_slices(questions: Sequence[Any], grains: Mapping[str, Any], keys: Sequence[str]) -> dict[str, Any]:
    """``{key: slice_metrics(...)}`` for every key (empty without keys)."""
    return {key: slice_metrics(questions, grains, key) for key in keys}


def format_slices(report: Mapping[str, Any]) -> str:
    """The per-slice tables of a retrieval report, at its ranking grain, as text ("" without slices).

    One table per key: a row per setup and slice with the questions in the slice, those scored,
    found@10, found@1, recall@5, MRR and nDCG@10.
    """
    setups = report.get("setups") or []
    keys = list((setups[0].get("slices") or {}) if setups else {})
    if not keys:
        return ""
    grain = report["evaluation"]["rank_grain"]
    lines: list[str] = []
    for key in keys:
        lines.append(f"\n[{grain}] by {key}")
        header = (f"{'setup':<24} {'slice':<20} {'n':>5} {'scored':>7} {'found@10':>9} {'found@1':>8} "
                  f"{'recall@5':>9} {'mrr':>6} {'ndcg@10':>8}")
        lines += [header, "-" * len(header)]
        for s in setups:
            for sl in s["slices"][key]:
                agg = sl["metrics"][grain]
                m = agg["means"]

                def f(name: str) -> str:
                    return "-" if name not in m else f"{m[name]:.3f}"

                lines.append(f"{s['name']:<24} {sl['value'][:20]:<20} {sl['n_questions']:>5} {agg['n_scored']:>7} "
                             f"{f('found@10'):>9} {f('found@1'):>8} {f('recall@5'):>9} {f('mrr'):>6} "
                             f"{f('ndcg@10'):>8}")
    return "\n".join(lines)
