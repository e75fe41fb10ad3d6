"""Configuration search: the search space, samplers (random, GAM), the ask / tell study.

- :mod:`~core.optimization.space`: :class:`SearchSpace` (a finite grid after IBM ai4rag,
  with validity rules and ``null`` placeholders), :func:`default_space`, space files and
  ``--set`` overrides.
- :mod:`~core.optimization.samplers`: the :class:`Sampler` protocol, :class:`RandomSampler`
  and :class:`GAMSampler` (ai4rag's GAM-based optimizer on pygam).
- :mod:`~core.optimization.study`: :class:`Study`, ``ask`` / ``tell``, warm start, JSON state.
- :mod:`~core.optimization.replay`: replaying samplers (and Optuna's TPE) on a score table.

Importing this package does no I/O and does not import pygam or optuna.

References:
    IBM ai4rag: https://github.com/IBM/ai4rag
"""

from core.optimization.configuration import Configuration, Value
from core.optimization.replay import ReplayStats, SeedReplay, replay, replay_tpe, score_table
from core.optimization.samplers import GAMSampler, ProposalInfo, RandomSampler, Sampler, sampler_from_dict
from core.optimization.space import (
    PARAMETER_KINDS,
    PARAMETER_NAMES,
    PLACEHOLDER,
    RULES,
    Parameter,
    Rule,
    SearchSpace,
    default_space,
    parse_override,
    parse_overrides,
)
from core.optimization.study import Study
from core.optimization.trial import Trial

__all__ = [
    "Configuration",
    "GAMSampler",
    "PARAMETER_KINDS",
    "PARAMETER_NAMES",
    "PLACEHOLDER",
    "Parameter",
    "ProposalInfo",
    "RULES",
    "RandomSampler",
    "ReplayStats",
    "Rule",
    "Sampler",
    "SearchSpace",
    "SeedReplay",
    "Study",
    "Trial",
    "Value",
    "default_space",
    "parse_override",
    "parse_overrides",
    "replay",
    "replay_tpe",
    "sampler_from_dict",
    "score_table",
]
