"""The study: the ask / tell loop of a configuration search, and its stored state.

The optimizer never runs evaluations. :meth:`Study.ask` returns configurations to try;
whoever runs them (the local runner's workers, the Durable orchestrator's activities) calls
:meth:`Study.tell` with each result. The study is deterministic: no clock, environment or
unseeded randomness. The sampler gets a ``numpy`` generator seeded by ``(seed, number of
trials so far)``, so the same seed, history and sequence of ``ask`` sizes always give the
same configurations, also after :meth:`Study.to_json` / :meth:`Study.from_json`.

Example:
    >>> study = Study(space, GAMSampler(), objective_metric="recall@10", seed=7)
    >>> while not study.is_finished:
    ...     for config in study.ask():
    ...         study.tell(config, evaluate(config))   # a float, None or an exception

References:
    Optuna's ask-and-tell interface:
    https://optuna.readthedocs.io/en/stable/tutorial/20_recipes/009_ask_and_tell.html
    IBM ai4rag ``GAMOptimizer`` (``max_evals``, ``known_observations``):
    https://github.com/IBM/ai4rag
"""

from __future__ import annotations

import json
import logging
import math
from typing import Any, Mapping, Sequence

import numpy as np

from core.errors import ConfigError
from core.optimization.configuration import Configuration
from core.optimization.samplers import (Direction, Sampler, _check_direction, _check_optional_positive,
                                        sampler_from_dict, untried_indices)
from core.optimization.space import SearchSpace
from core.optimization.trial import COMPLETE, FAILED, PENDING, Trial, check_metrics

logger = logging.getLogger(__name__)

#: Identifies a stored study.
STUDY_FORMAT = "ragtune.study"
STUDY_FORMAT_VERSION = 1


class Study:
    """A search over a :class:`SearchSpace`, driven by ask / tell.

    Args:
        space: the search space.
        sampler: proposes configurations (:class:`~core.optimization.samplers.GAMSampler`,
            :class:`~core.optimization.samplers.RandomSampler`, or any ``Sampler``).
        objective_metric: the metric the score is (``"recall@10"``); also the key read from a
            metrics mapping given to :meth:`tell`.
        seed: non-negative integer; the only source of randomness.
        direction: ``"maximize"`` (default) or ``"minimize"`` the score.
        max_evals: the most configurations this study asks for (warm-start observations do
            not count), or None. The effective budget is the smallest of this, the sampler's
            ``max_evals`` and the number of valid configurations (see :attr:`max_evals`).
        known_observations: warm start: ``(configuration mapping, score)`` pairs (a score of
            None is a failed evaluation; a metrics mapping is read like :meth:`tell`), or
            ai4rag-style mappings with a ``"score"`` key. They become the first trials, with
            ``warm_start=True``; the sampler sees them like any other trial (so they count
            towards ``n_random_nodes`` and, when complete, feed the GAM).

    Raises:
        ConfigError: a bad setting, or a known observation that is malformed, repeated or not
            a valid configuration of the space (the message gives its index).
    """

    def __init__(
        self,
        space: SearchSpace,
        sampler: Sampler,
        objective_metric: str,
        seed: int,
        direction: Direction = "maximize",
        max_evals: int | None = None,
        known_observations: Sequence[Any] | None = None,
    ) -> None:
        if not isinstance(space, SearchSpace):
            raise ConfigError(f"space must be a SearchSpace, got {type(space).__name__}")
        if not isinstance(sampler, Sampler):
            raise ConfigError(f"sampler must implement Sampler (propose, batch_size, to_dict), got {type(sampler).__name__}")
        if not isinstance(objective_metric, str) or not objective_metric:
            raise ConfigError(f"objective_metric must be a non-empty string, got {objective_metric!r}")
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ConfigError(f"seed must be a non-negative integer, got {seed!r}")
        _check_direction(direction)
        self.space = space
        self.sampler = sampler
        self.objective_metric = objective_metric
        self.seed = seed
        self.direction: Direction = direction
        self._max_evals_setting = _check_optional_positive("max_evals", max_evals)
        self._trials: list[Trial] = []
        self._by_key: dict[str, int] = {}
        for i, obs in enumerate(known_observations or ()):
            self._add_known(i, obs)
        if known_observations:
            logger.info("study warm-started with %d known observations", len(self._trials))

    # State -----------------------------------------------------------------------------------
    @property
    def trials(self) -> list[Trial]:
        """Every trial, in order (a new list; trials are frozen)."""
        return list(self._trials)

    @property
    def pending_trials(self) -> list[Trial]:
        """Trials asked and not yet told (rerun or tell them after a resume)."""
        return [t for t in self._trials if t.status == PENDING]

    @property
    def max_evals(self) -> int:
        """The effective budget: the smallest of ``max_evals``, the sampler's ``max_evals``
        and the number of valid configurations."""
        limits = [self.space.n_valid]
        for value in (self._max_evals_setting, getattr(self.sampler, "max_evals", None)):
            if value is not None:
                limits.append(int(value))
        return min(limits)

    def set_budget(self, max_evals: int) -> None:
        """Change ``max_evals`` (for example when a stopped experiment is resumed with a larger
        budget); trials already asked are kept even when the new budget is below their count.

        Raises:
            ConfigError: ``max_evals`` is not a positive integer.
        """
        self._max_evals_setting = _check_optional_positive("max_evals", max_evals)

    @property
    def n_asked(self) -> int:
        """Configurations this study has handed out (warm-start observations excluded)."""
        return sum(1 for t in self._trials if not t.warm_start)

    @property
    def n_evaluated(self) -> int:
        """Configurations evaluated so far, failed ones included (pending trials and warm-start
        observations excluded)."""
        return sum(1 for t in self._trials if t.status != PENDING and not t.warm_start)

    @property
    def n_remaining(self) -> int:
        """How many more configurations :meth:`ask` can still return."""
        return max(0, min(self.max_evals - self.n_asked, self.space.n_valid - len(self._trials)))

    @property
    def is_finished(self) -> bool:
        """True when nothing more can be asked and no trial is pending."""
        return self.n_remaining == 0 and not any(t.status == PENDING for t in self._trials)

    @property
    def best_trial(self) -> Trial | None:
        """The complete trial with the best score (earliest on ties), or None when none is complete."""
        best: Trial | None = None
        for t in self._trials:
            if t.status != COMPLETE:
                continue
            if best is None or (t.score > best.score if self.direction == "maximize" else t.score < best.score):  # type: ignore[operator]
                best = t
        return best

    @property
    def n_rounds(self) -> int:
        """How many :meth:`ask` calls handed out trials (the highest ``Trial.round``; 0 before
        the first, and for a study stored before rounds were recorded)."""
        return max((t.round for t in self._trials if t.round is not None), default=0)

    def trial_of(self, configuration: Mapping[str, Any]) -> Trial | None:
        """Return the trial holding ``configuration`` (normalised by the space), or None."""
        number = self._by_key.get(self._normalise(configuration).key)
        return None if number is None else self._trials[number]

    def _normalise(self, configuration: Mapping[str, Any]) -> Configuration:
        if isinstance(configuration, Configuration) and self.space.contains(configuration):
            return configuration
        return self.space.configuration(configuration, check=False)

    # Ask / tell ------------------------------------------------------------------------------
    def ask(self, n: int | None = 1) -> list[Configuration]:
        """Return up to ``n`` configurations to evaluate, and record them as pending.

        Never returns a configuration that a trial already holds (pending, complete or
        failed), nor one twice. Each call that hands out configurations is one round: its
        trials carry ``round`` = :attr:`n_rounds` + 1. Returns fewer than ``n`` (possibly none) only when the budget
        (:attr:`max_evals`) or the space is exhausted: when the sampler proposes fewer distinct
        untried configurations than asked, the rest are drawn uniformly among the untried ones.

        Args:
            n: how many configurations (>= 1), or None for the sampler's natural batch
                (``sampler.batch_size``: the rest of the random phase, then
                ``evals_per_trial`` for :class:`GAMSampler`).

        Raises:
            ConfigError: ``n`` below 1.
        """
        if n is None:
            n = int(self.sampler.batch_size(self.space, self.trials))
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ConfigError(f"ask needs n >= 1 (or None), got {n!r}")
        n = min(n, self.n_remaining)
        if n == 0:
            return []
        rng = np.random.default_rng([self.seed, len(self._trials)])
        round_ = self.n_rounds + 1
        proposed = self.sampler.propose(self.space, self.trials, n, rng, self.direction)
        out: list[Configuration] = []
        for config in proposed:
            config = self._normalise(config)
            if not self.space.contains(config) or config.key in self._by_key or config in out:
                logger.warning("sampler %s proposed an invalid or already tried configuration; skipped", self.sampler.name)
                continue
            out.append(config)
            if len(out) == n:
                break
        for config in out:
            self._append(Trial(number=len(self._trials), configuration=config, status=PENDING, round=round_))
        if len(out) < n:  # the sampler gave fewer: the rest uniformly among the untried ones

            untried = untried_indices(self.space, self._trials)
            configs = self.space.valid_configurations()
            for i in rng.choice(untried, size=min(n - len(out), untried.size), replace=False):
                config = configs[int(i)]
                out.append(config)
                self._append(Trial(number=len(self._trials), configuration=config, status=PENDING, round=round_))
        logger.debug("asked %d configurations (%d trials)", len(out), len(self._trials))
        return out

    def enqueue(self, configuration: Mapping[str, Any]) -> Configuration:
        """Record ``configuration`` as a pending trial of a new round, to be evaluated before
        anything the sampler proposes (whoever runs the study evaluates pending trials first):
        how a search starts from a known configuration, such as the product's default (SMAC
        evaluates the default configuration first; Optuna's ``enqueue_trial``). It counts
        against the budget like any configuration asked.

        Returns:
            The configuration, as the space normalises it.

        Raises:
            ConfigError: not a valid configuration of the space, already tried, or no budget left.
        """
        config = self.space.configuration(configuration)
        if config.key in self._by_key:
            raise ConfigError(f"configuration {config.key} is already a trial of the study")
        if self.n_remaining < 1:
            raise ConfigError("the study's budget leaves no room for another configuration")
        self._append(Trial(number=len(self._trials), configuration=config, status=PENDING, round=self.n_rounds + 1))
        return config

    def tell(
        self,
        configuration: Mapping[str, Any] | Trial,
        result: Any,
        *,
        error: str | None = None,
        metrics: Mapping[str, Any] | None = None,
    ) -> Trial:
        """Record the result of a pending configuration.

        Args:
            configuration: a configuration returned by :meth:`ask` (or its :class:`Trial`).
            result: the score (a finite number; a NaN or infinite number fails the trial),
                ``None`` (the evaluation produced no score), an exception (the evaluation
                failed), or a metrics mapping from which ``objective_metric`` is read (a
                missing or None value fails the trial).
            error: why the evaluation failed (with a None result; defaults to a generic
                message or the exception's text).
            metrics: every metric of the evaluation, stored with the trial (JSON-clean); when
                omitted and ``result`` is a metrics mapping, that mapping is stored.

        Returns:
            The updated trial. Failed trials keep their error and are never fed to a model.

        Raises:
            ConfigError: the configuration is not pending in this study (never asked, or
                already told), both a score and an error were given, or the result or
                metrics have an unusable type.
        """
        config = configuration.configuration if isinstance(configuration, Trial) else self._normalise(configuration)
        number = self._by_key.get(config.key)
        if number is None:
            raise ConfigError(f"configuration {config.key} was never asked in this study; tell only what ask returned")
        trial = self._trials[number]
        if trial.status != PENDING:
            raise ConfigError(f"configuration {config.key} was already told (trial {number} is {trial.status})")
        status, score, err, stored_metrics = _interpret(result, self.objective_metric, error, metrics)
        updated = Trial(number=number, configuration=trial.configuration, status=status, score=score,
                        error=err, metrics=stored_metrics, warm_start=trial.warm_start, round=trial.round)
        self._trials[number] = updated
        if status == FAILED:
            logger.info("trial %d failed: %s", number, err)
        return updated

    def rescore(self, configuration: Mapping[str, Any] | Trial, result: Any, *,
                metrics: Mapping[str, Any] | None = None) -> Trial:
        """Replace the score of a complete trial by a better-informed one (the same
        configuration scored on more questions, see :mod:`core.optimization.fidelity`).

        Args:
            configuration: a configuration whose trial is complete (or its :class:`Trial`).
            result: the new score or metrics mapping, read as :meth:`tell` reads it; a result
                without a score leaves the trial as it was.
            metrics: every metric of the new evaluation.

        Returns:
            The trial (updated, or unchanged when the result has no score).

        Raises:
            ConfigError: the configuration has no complete trial, or an unusable result.
        """
        config = configuration.configuration if isinstance(configuration, Trial) else self._normalise(configuration)
        number = self._by_key.get(config.key)
        if number is None or self._trials[number].status != COMPLETE:
            raise ConfigError(f"configuration {config.key} has no complete trial to rescore")
        trial = self._trials[number]
        status, score, _, stored_metrics = _interpret(result, self.objective_metric, None, metrics)
        if status != COMPLETE:
            return trial
        updated = Trial(number=number, configuration=trial.configuration, status=COMPLETE, score=score,
                        metrics=stored_metrics, warm_start=trial.warm_start, round=trial.round)
        self._trials[number] = updated
        return updated

    def reopen(self, configuration: Mapping[str, Any] | Trial) -> Trial:
        """Make a told trial pending again, its score, error and metrics forgotten: its result
        was lost (a stored result deleted by hand), so whoever runs the study evaluates it
        again, first, like any pending trial. It keeps its number and round; it no longer
        counts in :attr:`n_evaluated`.

        Returns:
            The pending trial (unchanged when it was pending already).

        Raises:
            ConfigError: the configuration was never asked, or is a warm-start observation.
        """
        config = configuration.configuration if isinstance(configuration, Trial) else self._normalise(configuration)
        number = self._by_key.get(config.key)
        if number is None:
            raise ConfigError(f"configuration {config.key} was never asked in this study")
        trial = self._trials[number]
        if trial.warm_start:
            raise ConfigError(f"configuration {config.key} is a warm-start observation, never evaluated here")
        if trial.status == PENDING:
            return trial
        updated = Trial(number=number, configuration=trial.configuration, status=PENDING, round=trial.round)
        self._trials[number] = updated
        return updated

    # Warm start ------------------------------------------------------------------------------
    def _add_known(self, index: int, obs: Any) -> None:
        where = f"known observation {index}"
        if isinstance(obs, Mapping):
            if "score" not in obs:
                raise ConfigError(f"{where}: a mapping needs a 'score' key (or give (configuration, score) pairs)")
            values = {k: v for k, v in obs.items() if k != "score"}
            result = obs["score"]
        elif isinstance(obs, (tuple, list)) and len(obs) == 2:
            values, result = obs
        else:
            raise ConfigError(f"{where}: expected a (configuration, score) pair, got {obs!r}")
        try:
            config = self.space.configuration(values, check=True)
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        if config.key in self._by_key:
            raise ConfigError(f"{where}: the same configuration as trial {self._by_key[config.key]}")
        try:
            status, score, err, metrics = _interpret(result, self.objective_metric, None, None)
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        self._append(Trial(number=len(self._trials), configuration=config, status=status, score=score,
                           error=err, metrics=metrics, warm_start=True))

    def _append(self, trial: Trial) -> None:
        self._by_key[trial.configuration.key] = trial.number
        self._trials.append(trial)

    # Storage ---------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Return the whole state (settings, space, sampler, trials) as a JSON-clean dict."""
        return {
            "format": STUDY_FORMAT,
            "version": STUDY_FORMAT_VERSION,
            "objective_metric": self.objective_metric,
            "direction": self.direction,
            "seed": self.seed,
            "max_evals": self._max_evals_setting,
            "space": self.space.to_dict(),
            "sampler": self.sampler.to_dict(),
            "trials": [t.to_dict() for t in self._trials],
        }

    def to_json(self, indent: int | None = None) -> str:
        """Return :meth:`to_dict` as JSON text (no NaN)."""
        return json.dumps(self.to_dict(), ensure_ascii=False, allow_nan=False, indent=indent)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], sampler: Sampler | None = None) -> "Study":
        """Rebuild a study from :meth:`to_dict` output; it resumes where it stopped.

        Pending trials stay pending: run them again and tell their results (or tell them
        failed). With the same seed (stored), the study continues the same sequence.

        Args:
            data: the stored state.
            sampler: the sampler to use; None rebuilds the stored built-in sampler.

        Raises:
            ConfigError: not a stored study, an unknown version, or inconsistent trials.
        """
        if not isinstance(data, Mapping) or data.get("format") != STUDY_FORMAT:
            raise ConfigError("not a stored ragtune study (format field missing or different)")
        if data.get("version") != STUDY_FORMAT_VERSION:
            raise ConfigError(f"stored study version {data.get('version')!r} is not supported (expected {STUDY_FORMAT_VERSION})")
        try:
            space = SearchSpace.from_dict(data["space"])
            study = cls(space, sampler or sampler_from_dict(data["sampler"]), data["objective_metric"],
                        data["seed"], direction=data["direction"], max_evals=data.get("max_evals"))
            if not isinstance(data["trials"], list):
                raise ConfigError(f"stored trials are {type(data['trials']).__name__}, not a list")
            trials = [Trial.from_dict(t) for t in data["trials"]]
        except KeyError as exc:
            raise ConfigError(f"stored study is missing {exc}") from None
        for i, t in enumerate(trials):
            if t.number != i:
                raise ConfigError(f"stored trial {i} has number {t.number}")
            if not space.contains(t.configuration):
                raise ConfigError(f"stored trial {i} is not a valid configuration of the stored space")
            if t.configuration.key in study._by_key:
                raise ConfigError(f"stored trial {i} repeats trial {study._by_key[t.configuration.key]}")
            study._append(t)
        return study

    @classmethod
    def from_json(cls, text: str | bytes | Mapping[str, Any], sampler: Sampler | None = None) -> "Study":
        """Rebuild a study from :meth:`to_json` text (or an already parsed dict).

        Raises:
            ConfigError: not JSON, or see :meth:`from_dict`.
        """
        if isinstance(text, Mapping):
            return cls.from_dict(text, sampler)
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"stored study is not valid JSON ({exc})") from None
        return cls.from_dict(data, sampler)

    def __repr__(self) -> str:
        done = sum(1 for t in self._trials if t.status != PENDING)
        return (f"Study(objective_metric={self.objective_metric!r}, direction={self.direction!r}, "
                f"trials={len(self._trials)}, told={done}, max_evals={self.max_evals}, sampler={self.sampler!r})")


def _interpret(
    result: Any, objective_metric: str, error: str | None, metrics: Mapping[str, Any] | None
) -> tuple[str, float | None, str | None, dict[str, Any] | None]:
    """Return ``(status, score, error, metrics)`` for a told result."""
    if error is not None and not isinstance(error, str):
        raise ConfigError(f"error must be a string, got {type(error).__name__}")
    stored = check_metrics(metrics)
    if isinstance(result, BaseException):
        return FAILED, None, error or f"{type(result).__name__}: {result}", stored
    if result is None:
        return FAILED, None, error or "the evaluation returned no score", stored
    if isinstance(result, Mapping):
        given = check_metrics(result) or {}
        if stored is None:
            stored = given
        value = given.get(objective_metric)
        if value is None:
            reason = "was not computed" if objective_metric in given else "is missing"
            return FAILED, None, error or f"objective metric {objective_metric!r} {reason}", stored
        result = value
    item = getattr(result, "item", None)
    if callable(item) and getattr(result, "shape", None) == ():
        result = item()  # numpy scalar
    if isinstance(result, bool) or not isinstance(result, (int, float)):
        raise ConfigError(f"a result must be a number, None, an exception or a metrics mapping, got {type(result).__name__}")
    if error is not None:
        raise ConfigError("tell got both a score and an error; give a None result with the error")
    score = float(result)
    if not math.isfinite(score):
        return FAILED, None, f"the score is {score} (not a finite number)", stored
    return COMPLETE, score, None, stored


__all__ = ["STUDY_FORMAT", "STUDY_FORMAT_VERSION", "Study"]
