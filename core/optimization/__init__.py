"""Configuration search: the search space, samplers (random, GAM), the ask / tell study.

- :mod:`~core.optimization.space`: :class:`SearchSpace` (a finite grid after IBM ai4rag,
  with validity rules and ``null`` placeholders) and :func:`default_space`, built on
  :mod:`~core.optimization.parameters` (names, kinds, domains), :mod:`~core.optimization.rules`
  (applicability, validity rules), :mod:`~core.optimization.defaults` (default values),
  :mod:`~core.optimization.overrides` (``--set``) and :mod:`~core.optimization.space_file`.
- :mod:`~core.optimization.samplers`: the :class:`Sampler` protocol, :class:`RandomSampler`
  and :class:`GAMSampler` (ai4rag's GAM-based optimizer on pygam).
- :mod:`~core.optimization.study`: :class:`Study`, ``ask`` / ``tell``, warm start, JSON state.

Importing this package does no I/O and does not import pygam or optuna.

References:
    IBM ai4rag: https://github.com/IBM/ai4rag
"""

from core.optimization.configuration import Configuration, Value
from core.optimization.samplers import GAMSampler, ProposalInfo, RandomSampler, Sampler, sampler_from_dict
from core.optimization.overrides import parse_override, parse_overrides
from core.optimization.parameters import PARAMETER_KINDS, PARAMETER_NAMES, PLACEHOLDER, Parameter
from core.optimization.rules import RULES, Rule
from core.optimization.space import SearchSpace, default_space
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
    "Rule",
    "Sampler",
    "SearchSpace",
    "Study",
    "Trial",
    "Value",
    "default_space",
    "parse_override",
    "parse_overrides",
    "sampler_from_dict",
]
