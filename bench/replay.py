"""Replay a search against a precomputed score table, to compare samplers cheaply.

Instead of evaluating, each configuration's score is looked up in a table
``configuration key -> score (None: the evaluation failed)`` that holds every valid
configuration of the space (for example from a run that evaluated the whole grid once). A
sampler is then judged over many seeds by:

- ``evaluations_to_target``: evaluations (failed ones included) until one scores within
  ``tolerance`` of the table's best (0.01 = 1 point on a 0-1 metric); None when the budget
  ran out first;
- ``best_after[k]``: the best score seen after ``k`` evaluations (after all of them when the
  search stopped earlier; None when none had succeeded).

:func:`replay` drives a :class:`~core.optimization.study.Study`; :func:`replay_tpe` drives
Optuna's TPE sampler over the same grid, as an outside reference.

References:
    Bergstra, J., Bardenet, R., Bengio, Y. and Kegl, B. (2011). Algorithms for
    Hyper-Parameter Optimization (TPE). NeurIPS 24.
    Akiba, T. et al. (2019). Optuna: A Next-generation Hyperparameter Optimization Framework.
    KDD. https://optuna.readthedocs.io
    IBM ai4rag benchmarks of its GAM optimizer against random search:
    https://github.com/IBM/ai4rag
"""

from __future__ import annotations

import logging
import math
import statistics
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from core.errors import ConfigError
from core.optimization.configuration import Configuration
from core.optimization.samplers import Direction, Sampler, _check_direction
from core.optimization.parameters import PARAMETER_NAMES
from core.optimization.space import SearchSpace
from core.optimization.study import Study

logger = logging.getLogger(__name__)

#: The default checkpoints of ``best_after``.
CHECKPOINTS: tuple[int, ...] = (10, 20)


@dataclass(frozen=True)
class SeedReplay:
    """One replayed search.

    Attributes:
        seed: the seed.
        evaluations_to_target: 1-based count of evaluations until a score within tolerance of
            the table's best, or None when it was not reached.
        best_after: checkpoint -> best score after that many evaluations (or after all of
            them when fewer were made); None when no evaluation had succeeded.
        n_evaluations: evaluations made (counted against the budget; for TPE, cached
            repeats and invalid suggestions are not counted).
        scores: the score of each evaluation, in order (None: failed).
        extra: sampler-specific counts (TPE: ``duplicates``, ``invalid``, ``suggestions``).
    """

    seed: int
    evaluations_to_target: int | None
    best_after: dict[int, float | None]
    n_evaluations: int
    scores: tuple[float | None, ...]
    extra: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-clean dict (checkpoints become string keys)."""
        return {
            "seed": self.seed,
            "evaluations_to_target": self.evaluations_to_target,
            "best_after": {str(k): v for k, v in self.best_after.items()},
            "n_evaluations": self.n_evaluations,
            "scores": list(self.scores),
            "extra": dict(self.extra),
        }


@dataclass(frozen=True)
class ReplayStats:
    """Results of replaying one sampler over several seeds.

    Attributes:
        sampler: the sampler's name (``"gam"``, ``"random"``, ``"optuna-tpe"``).
        table_best: the best score in the table.
        tolerance: how close to ``table_best`` counts as found.
        max_evals: the budget per seed.
        direction: ``"maximize"`` or ``"minimize"``.
        runs: one :class:`SeedReplay` per seed, in the order given.
    """

    sampler: str
    table_best: float
    tolerance: float
    max_evals: int
    direction: str
    runs: tuple[SeedReplay, ...]

    @property
    def fraction_reached(self) -> float:
        """Share of seeds that reached the target within the budget (0..1)."""
        return sum(r.evaluations_to_target is not None for r in self.runs) / len(self.runs)

    @property
    def median_evaluations_to_target(self) -> float | None:
        """Median of ``evaluations_to_target`` over seeds, a seed that never reached the
        target counting as infinite; None when that median is infinite."""
        values = [math.inf if r.evaluations_to_target is None else r.evaluations_to_target for r in self.runs]
        median = statistics.median(values)
        return None if math.isinf(median) else float(median)

    def mean_best_after(self, checkpoint: int) -> float | None:
        """Mean best-so-far after ``checkpoint`` evaluations over seeds that had a success."""
        values = [r.best_after.get(checkpoint) for r in self.runs]
        values = [v for v in values if v is not None]
        return statistics.fmean(values) if values else None

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-clean summary and every run."""
        checkpoints = sorted({k for r in self.runs for k in r.best_after})
        return {
            "sampler": self.sampler,
            "table_best": self.table_best,
            "tolerance": self.tolerance,
            "max_evals": self.max_evals,
            "direction": self.direction,
            "n_seeds": len(self.runs),
            "fraction_reached": self.fraction_reached,
            "median_evaluations_to_target": self.median_evaluations_to_target,
            "mean_best_after": {str(k): self.mean_best_after(k) for k in checkpoints},
            "runs": [r.to_dict() for r in self.runs],
        }


def score_table(space: SearchSpace, objective: Callable[[Configuration], float | None]) -> dict[str, float | None]:
    """Return ``{configuration key: objective(configuration)}`` over every valid configuration."""
    return {c.key: objective(c) for c in space.valid_configurations()}


def _check_table(table: Mapping[str, float | None], space: SearchSpace, direction: str) -> float:
    missing = [c.key for c in space.valid_configurations() if c.key not in table]
    if missing:
        raise ConfigError(
            f"the score table lacks {len(missing)} of the {space.n_valid} valid configurations "
            f"(first: {missing[0]}); score every configuration, with None for a failure"
        )
    scores = []
    for c in space.valid_configurations():
        v = table[c.key]
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ConfigError(f"the score of {c.key} must be a finite number or None, got {v!r}")
        scores.append(float(v))
    if not scores:
        raise ConfigError("the score table has no successful configuration")
    return max(scores) if direction == "maximize" else min(scores)


def _within(score: float, best: float, tolerance: float, direction: str) -> bool:
    return score >= best - tolerance if direction == "maximize" else score <= best + tolerance


def _seed_result(
    seed: int,
    scores: Sequence[float | None],
    best: float,
    tolerance: float,
    direction: str,
    checkpoints: Sequence[int],
    extra: dict[str, int] | None = None,
) -> SeedReplay:
    better = (lambda a, b: a > b) if direction == "maximize" else (lambda a, b: a < b)
    reached = None
    running: list[float | None] = []
    current: float | None = None
    for i, s in enumerate(scores, start=1):
        if s is not None:
            if current is None or better(s, current):
                current = s
            if reached is None and _within(s, best, tolerance, direction):
                reached = i
        running.append(current)
    best_after = {k: (running[min(k, len(running)) - 1] if running else None) for k in checkpoints}
    return SeedReplay(seed, reached, best_after, len(scores), tuple(scores), dict(extra or {}))


def _check_common(seeds: Sequence[int], tolerance: float, checkpoints: Sequence[int], direction: str) -> None:
    _check_direction(direction)
    if not seeds:
        raise ConfigError("replay needs at least one seed")
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not tolerance >= 0:
        raise ConfigError(f"tolerance must be a number >= 0, got {tolerance!r}")
    if any(isinstance(k, bool) or not isinstance(k, int) or k < 1 for k in checkpoints):
        raise ConfigError(f"checkpoints must be positive integers, got {list(checkpoints)!r}")


def replay(
    table: Mapping[str, float | None],
    space: SearchSpace,
    sampler_factory: Callable[[], Sampler],
    seeds: Sequence[int],
    max_evals: int | None = None,
    *,
    tolerance: float = 0.01,
    direction: Direction = "maximize",
    checkpoints: Sequence[int] = CHECKPOINTS,
    batch: int | None = 1,
    stop_at_target: bool = False,
) -> ReplayStats:
    """Run a :class:`Study` per seed against ``table`` and measure how fast it finds the best.

    Args:
        table: configuration key -> score (None: failed) for every valid configuration.
        space: the search space the keys belong to.
        sampler_factory: returns a fresh sampler for each seed.
        seeds: the seeds (one study each).
        max_evals: evaluations per seed (None: the whole space).
        tolerance: a score within this of the table's best counts as found.
        direction: ``"maximize"`` or ``"minimize"``.
        checkpoints: evaluation counts for ``best_after``.
        batch: configurations asked at once (None: the sampler's natural batch, as in
            ai4rag's loop); every batch is told before the next ask.
        stop_at_target: stop a seed's search once the target is reached (faster; later
            ``best_after`` checkpoints then hold the score that reached it).

    Returns:
        :class:`ReplayStats`, ``sampler`` named after the first sampler.

    Raises:
        ConfigError: a table missing configurations or holding bad scores, or bad settings.
    """
    _check_common(seeds, tolerance, checkpoints, direction)
    best = _check_table(table, space, direction)
    runs = []
    name = "?"
    budget = space.n_valid
    for seed in seeds:
        sampler = sampler_factory()
        name = sampler.name
        study = Study(space, sampler, objective_metric="score", seed=seed, direction=direction, max_evals=max_evals)
        budget = study.max_evals
        scores: list[float | None] = []
        reached = False
        while not study.is_finished and not (stop_at_target and reached):
            configs = study.ask(batch)
            if not configs:
                break
            for config in configs:
                raw = table[config.key]
                score = None if raw is None else float(raw)
                study.tell(config, score, error=None if score is not None else "failed in the score table")
                scores.append(score)
                reached = reached or (score is not None and _within(score, best, tolerance, direction))
        runs.append(_seed_result(seed, scores, best, tolerance, direction, checkpoints))
    return ReplayStats(name, best, float(tolerance), budget, direction, tuple(runs))


def replay_tpe(
    table: Mapping[str, float | None],
    space: SearchSpace,
    seeds: Sequence[int],
    max_evals: int | None = None,
    *,
    tolerance: float = 0.01,
    direction: Direction = "maximize",
    checkpoints: Sequence[int] = CHECKPOINTS,
    n_startup_trials: int = 10,
    max_suggestions: int | None = None,
    stop_at_target: bool = False,
) -> ReplayStats:
    """Replay Optuna's TPE sampler (``TPESampler(seed=...)``) over the same grid.

    Each trial suggests, in :data:`PARAMETER_NAMES` order, a categorical choice among the
    values of every parameter that has more than one value and applies given the earlier
    choices (define-by-run, so TPE sees the conditional structure); the others take their
    single value or the placeholder. Two cases have no counterpart in a study:

    - **Repeats.** TPE may suggest a configuration it has already evaluated. The cached score
      is told to Optuna as a new trial (TPE keeps learning from it) and no evaluation is
      counted, since a runner with a result cache would not evaluate it again.
    - **Invalid suggestions** (breaking a rule, for example ``chunk_size <= 2 *
      chunk_overlap``): told to Optuna as failed trials (TPE ignores them) and not counted.

    The loop stops after ``max_evals`` evaluations, when every valid configuration has been
    evaluated, or after ``max_suggestions`` suggestions (default ``50 * budget``, a guard for
    a sampler stuck on repeats).

    Args:
        table, space, seeds, max_evals, tolerance, direction, checkpoints, stop_at_target:
            as in :func:`replay`.
        n_startup_trials: TPE's random start (Optuna's default is 10).
        max_suggestions: the most Optuna trials per seed.

    Returns:
        :class:`ReplayStats` named ``"optuna-tpe"``; each run's ``extra`` counts
        ``suggestions``, ``duplicates`` and ``invalid``.

    Raises:
        ConfigError: as :func:`replay`; ImportError when optuna is not installed.

    References:
        Optuna ``TPESampler``: https://optuna.readthedocs.io/en/stable/reference/samplers/generated/optuna.samplers.TPESampler.html
    """
    import optuna  # lazy: optional and heavy
    from optuna.trial import TrialState

    _check_common(seeds, tolerance, checkpoints, direction)
    best = _check_table(table, space, direction)
    budget = space.n_valid if max_evals is None else min(int(max_evals), space.n_valid)
    limit = max_suggestions if max_suggestions is not None else 50 * budget
    params = {p.name: p for p in space.parameters}
    runs = []
    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        for seed in seeds:
            sampler = optuna.samplers.TPESampler(seed=seed, n_startup_trials=n_startup_trials)
            study = optuna.create_study(direction=direction, sampler=sampler)
            cache: dict[str, float | None] = {}
            scores: list[float | None] = []
            counts = {"suggestions": 0, "duplicates": 0, "invalid": 0}
            while len(scores) < budget and counts["suggestions"] < limit:
                if stop_at_target and any(x is not None and _within(x, best, tolerance, direction) for x in scores[-1:]):
                    break
                trial = study.ask()
                counts["suggestions"] += 1
                values: dict[str, Any] = {}
                for name in PARAMETER_NAMES:
                    p = params[name]
                    if not space.applies(name, values):
                        values[name] = None
                    elif len(p.values) == 1:
                        values[name] = p.values[0]
                    else:
                        values[name] = trial.suggest_categorical(name, list(p.values))
                config = space.configuration(values, check=False)
                if not space.contains(config):
                    counts["invalid"] += 1
                    study.tell(trial, state=TrialState.FAIL)
                    continue
                if config.key in cache:
                    counts["duplicates"] += 1
                    score = cache[config.key]
                else:
                    score = table[config.key]
                    score = None if score is None else float(score)
                    cache[config.key] = score
                    scores.append(score)
                if score is None:
                    study.tell(trial, state=TrialState.FAIL)
                else:
                    study.tell(trial, score)
            runs.append(_seed_result(seed, scores, best, tolerance, direction, checkpoints, counts))
    finally:
        optuna.logging.set_verbosity(verbosity)
    return ReplayStats("optuna-tpe", best, float(tolerance), budget, direction, tuple(runs))


__all__ = ["CHECKPOINTS", "ReplayStats", "SeedReplay", "replay", "replay_tpe", "score_table"]


@dataclass(frozen=True)
class CostReplay:
    """One replayed search over a per-question table, with what it cost.

    Attributes:
        seed: the seed.
        evaluations_to_target: configurations evaluated (at any rung) until one within
            tolerance of the best was scored on every question, or None.
        questions_to_target: question-evaluations until then (each evaluation counts the
            questions it scored: a promotion scores only the questions its new rung adds), or None.
        n_evaluations: evaluations made in all (promotions included).
        n_questions: question-evaluations made in all.
    """

    seed: int
    evaluations_to_target: int | None
    questions_to_target: int | None
    n_evaluations: int
    n_questions: int


def _mean_of(values: Sequence[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def replay_questions(
    table: Mapping[str, Sequence[float | None] | None],
    question_ids: Sequence[str],
    space: SearchSpace,
    sampler_factory: Callable[[], Sampler],
    seeds: Sequence[int],
    *,
    tolerance: float = 0.01,
    rungs: Mapping[str, Any] | None = None,
    promotion: str = "tied",
    start: Mapping[str, Any] | None = None,
    target: float | None = None,
) -> list[CostReplay]:
    """Replay a search over per-question scores until it reaches the target (maximised).

    Args:
        table: configuration key -> per-question scores in the order of ``question_ids``
            (None per question: not scorable; None for the whole entry: failed), for every
            valid configuration. A configuration's score is the mean over its scorable
            questions (the evaluation's own mean).
        question_ids: the golden questions' ids.
        space: the space the keys belong to.
        sampler_factory: a fresh sampler per seed.
        seeds: the seeds.
        tolerance: within this of the best full-question score counts as reached.
        rungs: None for full fidelity (every evaluation scores every question); else the
            settings of :class:`~core.optimization.fidelity.Rungs` (``min_questions``,
            ``eta``, ``alpha``) for multi-fidelity with :class:`~core.optimization.halving.Halving`.
        promotion: the multi-fidelity loop's promotion rule (``Halving``'s ``promotion``).
        start: a configuration evaluated first (``Study.enqueue``), or None.
        target: the full-question score to come within ``tolerance`` of (None: the best over
            ``space``); a narrowed space is replayed against the whole table's best this way.

    Returns:
        One :class:`CostReplay` per seed.
    """
    from core.optimization.fidelity import Rungs
    from core.optimization.halving import Halving

    n = len(question_ids)
    full = {k: (None if v is None else _mean_of(v)) for k, v in table.items()}
    best = _check_table(full, space, "maximize")
    best = best if target is None else target
    out = []
    for seed in seeds:
        study = Study(space, sampler_factory(), objective_metric="score", seed=seed)
        if start is not None:
            study.enqueue(start)
        halving = (Halving(Rungs(question_ids, seed, **dict(rungs)), promotion=promotion)
                   if rungs is not None else None)
        evals = questions = 0
        reached: tuple[int, int] | None = None
        while reached is None:
            if halving is None:
                configs = [t.configuration for t in study.pending_trials][:1] or study.ask(1)
                if not configs:
                    break
                config = configs[0]
                score = full[config.key]
                study.tell(config, score, error=None if score is not None else "failed in the table")
                evals, questions = evals + 1, questions + n
                if score is not None and score >= best - tolerance:
                    reached = (evals, questions)
                continue
            items = halving.ask(study, 1)
            if not items:
                break
            item = items[0]
            row = table[item.configuration.key]
            below = halving.rungs.sizes[item.rung - 1] if item.rung else 0  # a promotion scores the new ones only
            evals, questions = evals + 1, questions + len(item.questions) - below
            if row is None:
                halving.tell(study, item.configuration, item.rung, None, None, "failed in the table")
                continue
            by_id = dict(zip(question_ids, row))
            scores = {q: by_id[q] for q in item.questions}
            mean = _mean_of(list(scores.values()))
            decision = halving.tell(study, item.configuration, item.rung, scores,
                                    {"score": mean} if mean is not None else None)
            if decision is not None and decision.verdict == "complete" and full[item.configuration.key] is not None \
                    and full[item.configuration.key] >= best - tolerance:
                reached = (evals, questions)
        out.append(CostReplay(seed, None if reached is None else reached[0], None if reached is None else reached[1],
                              evals, questions))
    return out
