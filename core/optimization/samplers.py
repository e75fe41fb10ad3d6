"""Samplers: which untried configurations to evaluate next.

A :class:`Sampler` proposes configurations from the valid configurations of a
:class:`~core.optimization.space.SearchSpace` that no trial holds yet; it never evaluates
anything. The :class:`~core.optimization.study.Study` hands it a seeded
``numpy.random.Generator`` derived from the study's seed and the number of trials, so the
same history and seed always give the same proposals (also after a study is stored and
resumed).

- :class:`RandomSampler`: uniform over the untried configurations (Bergstra & Bengio 2012).
- :class:`GAMSampler`: IBM ai4rag's GAM-based optimizer: a random phase that covers every
  categorical value and spreads over the values of every other parameter, then a generalized
  additive model (pygam ``LinearGAM``) fitted on the successful trials predicts every untried
  configuration, and the best predicted are tried.

References:
    Bergstra, J. and Bengio, Y. (2012). Random Search for Hyper-Parameter Optimization.
    JMLR 13, 281-305.
    IBM ai4rag ``GAMOptimizer`` (``n_random_nodes``, ``evals_per_trial``, ``max_evals``):
    https://github.com/IBM/ai4rag
    Serven, D. and Brummitt, C. (2018). pyGAM: Generalized Additive Models in Python.
    doi:10.5281/zenodo.1208723; https://pygam.readthedocs.io
    Hastie, T. and Tibshirani, R. (1990). Generalized Additive Models. Chapman & Hall.
    Hastie, T., Tibshirani, R. and Friedman, J. (2009). The Elements of Statistical Learning,
    2nd ed., section 3.4.1 (ridge regression as a Gaussian prior). Springer.
    Desautels, T., Krause, A. and Burdick, J. W. (2014). Parallelizing Exploration-Exploitation
    Tradeoffs in Gaussian Process Bandit Optimization (GP-BUCB). JMLR 15, 4053-4103.
    Wood, S. N. (2017). Generalized Additive Models: An Introduction with R, 2nd ed.
    Chapman & Hall/CRC.
    Li, L., Chu, W., Langford, J. and Schapire, R. E. (2010). A Contextual-Bandit Approach to
    Personalized News Article Recommendation (LinUCB). WWW 2010, 661-670.
    Chvatal, V. (1979). A greedy heuristic for the set-covering problem. Mathematics of
    Operations Research 4(3), 233-235.
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass
from typing import Any, Literal, Mapping, Protocol, Sequence, runtime_checkable

import numpy as np

from core.errors import ConfigError
from core.optimization.configuration import Configuration
from core.optimization.space import SearchSpace
from core.optimization.trial import COMPLETE, PENDING, Trial

logger = logging.getLogger(__name__)

Direction = Literal["maximize", "minimize"]


@runtime_checkable
class Sampler(Protocol):
    """Proposes configurations to evaluate; never evaluates them.

    Attributes:
        name: short id stored with a study (``"random"``, ``"gam"``).
        max_evals: the most configurations the sampler wants evaluated in a study, or None
            (no limit of its own). A study uses the smaller of its own and this.
    """

    name: str
    max_evals: int | None

    def propose(
        self,
        space: SearchSpace,
        trials: Sequence[Trial],
        n: int,
        rng: np.random.Generator,
        direction: Direction = "maximize",
    ) -> list[Configuration]:
        """Return at most ``n`` distinct valid configurations that no trial holds.

        Args:
            space: the search space.
            trials: every trial so far (pending, complete and failed, warm start included).
            n: how many configurations are wanted (>= 1).
            rng: the only source of randomness.
            direction: whether higher (``"maximize"``) or lower scores are better.

        Returns:
            Fewer than ``n`` only when fewer untried configurations remain.
        """
        ...

    def batch_size(self, space: SearchSpace, trials: Sequence[Trial]) -> int:
        """Return how many configurations the sampler would propose at once now (>= 1)."""
        ...

    def to_dict(self) -> dict[str, Any]:
        """Return ``{"name": ..., <settings>}`` (JSON-clean; see :func:`sampler_from_dict`)."""
        ...


def _check_direction(direction: str) -> None:
    if direction not in ("maximize", "minimize"):
        raise ConfigError(f"direction must be 'maximize' or 'minimize', got {direction!r}")


def _check_optional_positive(name: str, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{name} must be a positive integer or None, got {value!r}")
    return value


def untried_indices(space: SearchSpace, trials: Sequence[Trial]) -> np.ndarray:
    """Return the positions (in ``space.valid_configurations()``) no trial holds, ascending."""
    taken = np.zeros(space.n_valid, dtype=bool)
    for t in trials:
        i = space.index_of(t.configuration)
        if i is not None:
            taken[i] = True
    return np.flatnonzero(~taken)


class RandomSampler:
    """Uniform random search over the untried valid configurations.

    Each proposal draws ``n`` configurations without replacement, uniformly among those no
    trial holds. On a grid this is the baseline every model-based sampler must beat.

    Args:
        max_evals: the most evaluations this sampler asks for, or None.

    References:
        Bergstra, J. and Bengio, Y. (2012). Random Search for Hyper-Parameter Optimization.
        JMLR 13, 281-305.
    """

    name = "random"

    def __init__(self, max_evals: int | None = None) -> None:
        self.max_evals = _check_optional_positive("max_evals", max_evals)

    def propose(
        self,
        space: SearchSpace,
        trials: Sequence[Trial],
        n: int,
        rng: np.random.Generator,
        direction: Direction = "maximize",
    ) -> list[Configuration]:
        """See :meth:`Sampler.propose`."""
        _check_direction(direction)
        untried = untried_indices(space, trials)
        k = min(int(n), untried.size)
        if k <= 0:
            return []
        configs = space.valid_configurations()
        return [configs[i] for i in rng.choice(untried, size=k, replace=False)]

    def batch_size(self, space: SearchSpace, trials: Sequence[Trial]) -> int:
        """Always 1: random search gains nothing from batching."""
        return 1

    def to_dict(self) -> dict[str, Any]:
        """Return ``{"name": "random", "max_evals": ...}``."""
        return {"name": self.name, "max_evals": self.max_evals}

    def __repr__(self) -> str:
        return f"RandomSampler(max_evals={self.max_evals})"


@dataclass(frozen=True)
class ProposalInfo:
    """How the last proposal of a :class:`GAMSampler` was made (for logs and tests).

    Attributes:
        n_cover: configurations chosen to cover categorical values not tried yet.
        n_random: configurations chosen in the rest of the random phase (spread over the
            values not tried yet, then at random) or at random by a fallback.
        n_model: configurations chosen by the model's predictions.
        model: ``"gam"`` (pygam), ``"ridge"`` (the fallback fit) or None (no model fitted).
        reason: why no model was used, or why the ridge fallback was used; None otherwise.
        n_rows: successful trials the model was fitted on.
    """

    n_cover: int = 0
    n_random: int = 0
    n_model: int = 0
    model: str | None = None
    reason: str | None = None
    n_rows: int = 0


class GAMSampler:
    """IBM ai4rag's GAM-based search: cover, explore at random, then follow a GAM.

    - **Random phase**, while fewer than ``n_random_nodes`` trials are complete or pending, or a
      categorical value (``null`` included) is in no trial: a greedy covering design (Chvatal
      1979) takes the untried configuration holding the most untried values, categorical
      values first; failed trials count as tried.
    - **Model phase**: a pygam ``LinearGAM`` on the complete trials, one term per varying
      parameter: a spline ``s()`` on the value's rank (numeric, at least ``SPLINE_MIN_VALUES``
      values), a line ``l()`` (numeric, 3 or 4 values; factors instead when their GCV is lower
      and valid, Wood 2017 section 6.2), else a factor ``f()``. ``lam`` is
      ``SMALL_HISTORY_LAM`` for small histories, else chosen over ``LAM_GRID``.
    - **Exploration bonus**: candidates rank by
      ``prediction(c) + EXPLORATION * sd(y) * sqrt(x(c)^T (A^T A + P)^-1 x(c))`` on one-hot codes
      (ridge as a Gaussian prior, LinUCB's width; ``A`` holds failed and pending rows too, as
      in GP-BUCB). ``EXPLORATION = 0`` is plain greedy.
    - **Batches**: ``propose(n)`` picks one at a time, each joining ``A`` as pending (GP-BUCB,
      Desautels et al. 2014), so a batch spreads over values; :meth:`batch_size` is the rest of
      the random phase, then ``evals_per_trial`` per fit.
    - **Fallbacks**: fewer than ``MIN_ROWS`` complete trials or equal scores: uniform picks;
      pygam missing, failing or non-finite: ridge on one-hot codes (``RIDGE_PENALTY``).
      :attr:`last_info` tells which path the last proposal took.

    Args:
        n_random_nodes: complete or pending trials before the model takes over (>= 1).
        evals_per_trial: configurations per model fit, the natural batch (>= 1).
        max_evals: the most evaluations this sampler asks for, or None.
        n_splines: the most spline basis functions per numeric term (> ``spline_order``).
        spline_order: order of the spline terms (3: cubic).
        lam_search_min_rows: complete trials from which ``lam`` is chosen by grid search.

    Raises:
        ConfigError: a setting out of range.

    References:
        IBM ai4rag ``GAMOptimizer`` / ``GAMOptSettings``: https://github.com/IBM/ai4rag
        pyGAM ``LinearGAM``, ``s``, ``l``, ``f``, ``gridsearch``: https://pygam.readthedocs.io
        Chvatal, V. (1979). A greedy heuristic for the set-covering problem.
        Desautels, T., Krause, A. and Burdick, J. W. (2014). Parallelizing
        Exploration-Exploitation Tradeoffs in Gaussian Process Bandit Optimization. JMLR 15.
        Li, L. et al. (2010). A Contextual-Bandit Approach to Personalized News Article
        Recommendation (LinUCB).
        Wood, S. N. (2017). Generalized Additive Models: An Introduction with R, 2nd ed.
    """

    name = "gam"
    #: Fewer complete trials than this and the sampler proposes at random.
    MIN_ROWS = 3
    #: A numeric parameter needs at least this many values in the space for a spline term.
    SPLINE_MIN_VALUES = 5
    #: The shared ``lam`` grid tried by ``gridsearch``.
    LAM_GRID = (0.01, 0.1, 1.0, 10.0, 100.0)
    #: Every term's ``lam`` while fewer than ``lam_search_min_rows`` trials are complete.
    SMALL_HISTORY_LAM = 0.1
    #: pygam's GCV ``gamma``: the score is ``n * deviance / (n - GCV_GAMMA * edof)**2``.
    GCV_GAMMA = 1.4
    #: The ridge fallback's penalty.
    RIDGE_PENALTY = 1.0
    #: Weight of the exploration bonus in units of the scores' standard deviation (0: greedy).
    EXPLORATION = 1.0
    #: Prior precision of each value's effect in the exploration bonus's linear model.
    POSTERIOR_PENALTY = 1.0

    def __init__(
        self,
        n_random_nodes: int = 4,
        evals_per_trial: int = 1,
        max_evals: int | None = None,
        *,
        n_splines: int = 10,
        spline_order: int = 3,
        lam_search_min_rows: int = 12,
    ) -> None:
        for label, value, low in (
            ("n_random_nodes", n_random_nodes, 1),
            ("evals_per_trial", evals_per_trial, 1),
            ("spline_order", spline_order, 1),
            ("lam_search_min_rows", lam_search_min_rows, 1),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ConfigError(f"{label} must be an integer >= {low}, got {value!r}")
        if isinstance(n_splines, bool) or not isinstance(n_splines, int) or n_splines <= spline_order:
            raise ConfigError(f"n_splines must be an integer greater than spline_order ({spline_order}), got {n_splines!r}")
        self.n_random_nodes = n_random_nodes
        self.evals_per_trial = evals_per_trial
        self.max_evals = _check_optional_positive("max_evals", max_evals)
        self.n_splines = n_splines
        self.spline_order = spline_order
        self.lam_search_min_rows = lam_search_min_rows
        self.last_info: ProposalInfo | None = None

    def __repr__(self) -> str:
        return (
            f"GAMSampler(n_random_nodes={self.n_random_nodes}, evals_per_trial={self.evals_per_trial}, "
            f"max_evals={self.max_evals})"
        )

    def to_dict(self) -> dict[str, Any]:
        """Return the sampler's name and settings."""
        return {
            "name": self.name,
            "n_random_nodes": self.n_random_nodes,
            "evals_per_trial": self.evals_per_trial,
            "max_evals": self.max_evals,
            "n_splines": self.n_splines,
            "spline_order": self.spline_order,
            "lam_search_min_rows": self.lam_search_min_rows,
        }

    # Random phase -----------------------------------------------------------------------------
    @staticmethod
    def _cover_columns(space: SearchSpace) -> list[int]:
        levels, _ = space.level_codes()
        return [j for j, p in enumerate(space.parameters) if p.kind in ("categorical", "boolean") and len(levels[j]) > 1]

    def _untried_values(self, space: SearchSpace, trials: Sequence[Trial], columns: Sequence[int]) -> dict[int, np.ndarray]:
        """Column -> boolean mask over its levels: True where no trial holds the value."""
        levels, codes = space.level_codes()
        out: dict[int, np.ndarray] = {}
        tried = [i for i in (space.index_of(t.configuration) for t in trials) if i is not None]
        for j in columns:
            mask = np.ones(len(levels[j]), dtype=bool)
            if tried:
                mask[codes[tried, j]] = False
            if mask.any():
                out[j] = mask
        return out

    def _uncovered(self, space: SearchSpace, trials: Sequence[Trial]) -> dict[int, np.ndarray]:
        """Categorical column -> boolean mask over its levels: True where no trial holds the value."""
        return self._untried_values(space, trials, self._cover_columns(space))

    def _cover(
        self, space: SearchSpace, trials: Sequence[Trial], candidates: np.ndarray, rng: np.random.Generator, size: int
    ) -> tuple[list[int], int]:
        """Greedy covering design over ``candidates`` for the random phase.

        Returns ``(positions, n_categorical)``: the first ``n_categorical`` positions try every
        categorical value no trial holds yet; the rest fill the phase up to ``size`` picks,
        each holding the most values (of any parameter) not tried yet, ties to a shuffled
        order, so once every value has been tried they are uniform random picks.
        """
        levels, codes = space.level_codes()
        categorical = self._uncovered(space, trials)
        if (not categorical and size <= 0) or candidates.size == 0:
            return [], 0  # the model phase: no draw from rng
        spread = self._untried_values(space, trials, [j for j in range(len(levels)) if len(levels[j]) > 1])
        order = candidates[rng.permutation(candidates.size)]
        chosen: list[int] = []
        n_categorical = 0
        available = np.ones(order.size, dtype=bool)
        weight = 1 + sum(int(m.size) for m in spread.values())  # one categorical value outweighs all others
        while available.any() and (categorical or len(chosen) < size):
            gain = np.zeros(order.size, dtype=np.int64)
            for j, mask in categorical.items():
                gain += weight * mask[codes[order, j]]
            if categorical and int(gain[available].max(initial=0)) <= 0:
                categorical = {}  # the remaining values appear in no untried configuration
                continue
            for j, mask in spread.items():
                gain += mask[codes[order, j]]
            gain[~available] = -1
            best = int(np.argmax(gain))  # the first of the best in the shuffled order
            chosen.append(int(order[best]))
            available[best] = False
            if categorical:
                n_categorical = len(chosen)
            for book in (categorical, spread):
                for j in list(book):
                    book[j][codes[order[best], j]] = False
                    if not book[j].any():
                        del book[j]
        return chosen, n_categorical

    def _n_busy(self, trials: Sequence[Trial]) -> int:
        return sum(1 for t in trials if t.status in (COMPLETE, PENDING))

    def batch_size(self, space: SearchSpace, trials: Sequence[Trial]) -> int:
        """Return the rest of the random phase (at least the largest count of untried
        categorical values), else ``evals_per_trial``."""
        left = self.n_random_nodes - self._n_busy(trials)
        most_uncovered = max((int(m.sum()) for m in self._uncovered(space, trials).values()), default=0)
        random_phase = max(left, most_uncovered)
        return random_phase if random_phase > 0 else self.evals_per_trial

    # Proposals --------------------------------------------------------------------------------
    def propose(
        self,
        space: SearchSpace,
        trials: Sequence[Trial],
        n: int,
        rng: np.random.Generator,
        direction: Direction = "maximize",
    ) -> list[Configuration]:
        """See :meth:`Sampler.propose` and the class description."""
        _check_direction(direction)
        candidates = untried_indices(space, trials)
        n = min(int(n), candidates.size)
        if n <= 0:
            self.last_info = ProposalInfo()
            return []
        left = max(self.n_random_nodes - self._n_busy(trials), 0)
        cover, n_categorical = self._cover(space, trials, candidates, rng, min(n, left))
        picks: list[int] = cover[:n]
        n_cover = min(n_categorical, len(picks))
        n_random = len(picks) - n_cover
        n_model, model, reason, n_rows = 0, None, None, 0
        if len(picks) < n:
            rest = np.setdiff1d(candidates, picks, assume_unique=True)
            order, model, reason, n_rows = self._model_order(space, trials, rest, rng, direction, n - len(picks))
            take = [int(i) for i in order[: n - len(picks)]]
            picks += take
            if model is None:
                n_random += len(take)
            else:
                n_model = len(take)
        self.last_info = ProposalInfo(n_cover, n_random, n_model, model, reason, n_rows)
        configs = space.valid_configurations()
        return [configs[i] for i in picks]

    def _model_order(
        self,
        space: SearchSpace,
        trials: Sequence[Trial],
        candidates: np.ndarray,
        rng: np.random.Generator,
        direction: Direction,
        n_take: int = 1,
    ) -> tuple[np.ndarray, str | None, str | None, int]:
        """Order ``candidates`` best predicted first, or at random when no model is sound.

        The first ``n_take`` are chosen one at a time (see "Batches" in the class description):
        each pick joins the tried rows of the exploration bonus before the next is chosen.

        Returns:
            ``(order, model, reason, n_rows)``: ``model`` is ``"gam"``, ``"ridge"`` or None
            (random order); ``reason`` says why no model or the fallback was used.
        """
        rows = [(space.index_of(t.configuration), t.score) for t in trials if t.status == COMPLETE]
        rows = [(i, s) for i, s in rows if i is not None and s is not None]
        n_rows = len(rows)

        def at_random(reason: str) -> tuple[np.ndarray, None, str, int]:
            logger.debug("GAMSampler: proposing at random: %s", reason)
            return candidates[rng.permutation(candidates.size)], None, reason, n_rows

        if n_rows < self.MIN_ROWS:
            return at_random(f"too few successful trials to fit a model ({n_rows} < {self.MIN_ROWS})")
        train = np.array([i for i, _ in rows], dtype=np.int64)
        y = np.array([s for _, s in rows], dtype=float)
        if direction == "minimize":
            y = -y
        if float(np.ptp(y)) <= 1e-12 * max(1.0, float(np.abs(y).max())):
            return at_random("every successful trial has the same score")
        tables, model, reason = self._fit_tables(space, train, y)
        if tables is None:
            return at_random(reason or "no parameter varies among the successful trials")
        _, codes = space.level_codes()
        pred = np.zeros(candidates.size)
        for j, table in tables.items():
            pred += table[codes[candidates, j]]
        if not np.all(np.isfinite(pred)):
            return at_random("the model predicted non-finite scores")
        ties = rng.random(candidates.size)
        if self.EXPLORATION <= 0:
            # best first; round so float noise does not decide, then break ties at random
            return candidates[np.lexsort((ties, -np.round(pred, 10)))], model, reason, n_rows
        # every trial counts as tried: a value that only ever failed is not sought out again
        tried = [i for i in (space.index_of(t.configuration) for t in trials) if i is not None]
        scale = self.EXPLORATION * float(np.std(y))
        chosen: list[int] = []
        order = np.arange(candidates.size)
        for _ in range(max(1, min(int(n_take), candidates.size))):
            rows = np.array(tried + [int(candidates[c]) for c in chosen], dtype=np.int64)
            score = pred + scale * self._uncertainty(space, rows, candidates, self.POSTERIOR_PENALTY)
            score[chosen] = -np.inf
            order = np.lexsort((ties, -np.round(score, 10)))
            chosen.append(int(order[0]))
        rest = [int(c) for c in order if int(c) not in set(chosen)]
        return candidates[np.array(chosen + rest, dtype=np.int64)], model, reason, n_rows

    @staticmethod
    def _one_hot(space: SearchSpace, rows: np.ndarray) -> np.ndarray:
        """Return the rows' codes as ``(len(rows), 1 + sum of value counts)`` floats.

        Column 0 is the intercept (all ones); then, for every parameter with more than one
        value in the space, one column per value in the order of ``space.level_codes()``, 1
        where the row holds the value. ``rows`` are positions in ``space.valid_configurations()``.
        """
        levels, codes = space.level_codes()
        blocks = [np.ones((rows.size, 1))]
        for j, lv in enumerate(levels):
            if len(lv) > 1:
                blocks.append((codes[rows, j][:, None] == np.arange(len(lv))[None, :]).astype(float))
        return np.hstack(blocks)

    @classmethod
    def _uncertainty(
        cls, space: SearchSpace, train: np.ndarray, candidates: np.ndarray, penalty: float = 1.0
    ) -> np.ndarray:
        """Return ``sqrt(x^T (A^T A + penalty * P)^-1 x)`` per candidate (shape ``(len(candidates),)``).

        ``A`` holds the one-hot rows (:meth:`_one_hot`) of ``train`` (positions in
        ``space.valid_configurations()``, repeats counted), ``x`` a candidate's row and ``P``
        the identity with 0 for the intercept: the posterior standard deviation of the
        candidate's score, in units of the noise's, under a linear model with a flat prior on
        the intercept and independent ``N(0, noise variance / penalty)`` priors on the values'
        effects. It is larger for values no row holds and for values that only ever appeared
        together with the same other values.

        Raises:
            numpy.linalg.LinAlgError: ``train`` is empty or ``penalty`` is not positive (the
                posterior precision is then singular).
        """
        A = cls._one_hot(space, np.asarray(train, dtype=np.int64))
        X = cls._one_hot(space, np.asarray(candidates, dtype=np.int64))
        prior = np.full(A.shape[1], float(penalty))
        prior[0] = 0.0
        # Cholesky of the (positive definite) posterior precision; solve instead of inverting.
        chol = np.linalg.cholesky(A.T @ A + np.diag(prior))
        half = np.linalg.solve(chol, X.T)  # L^-1 x per column: x^T (L L^T)^-1 x = |L^-1 x|^2
        return np.sqrt(np.maximum(np.einsum("ij,ij->j", half, half), 0.0))

    # Model fitting ------------------------------------------------------------------------------
    def _design(self, space: SearchSpace, train: np.ndarray) -> list[tuple[int, str, np.ndarray, np.ndarray]]:
        """Return ``(column, "spline"|"linear"|"factor", seen codes, feature per level)`` per term.

        ``feature per level`` maps each level code of the column to the model's feature value
        (rank for splines and linear terms; position among the seen values for factors, -1
        when unseen).
        """
        levels, codes = space.level_codes()
        terms = []
        for j, p in enumerate(space.parameters):
            lv = levels[j]
            if len(lv) < 2:
                continue
            seen = np.unique(codes[train, j])
            if seen.size < 2:
                continue  # constant among the trials: no information, no term
            numeric = p.kind in ("integer", "real") and None not in lv
            ranks = np.argsort(np.argsort(np.array(lv, dtype=float))).astype(float) if numeric else None
            if numeric and len(lv) >= self.SPLINE_MIN_VALUES and seen.size >= self.spline_order + 1:
                terms.append((j, "spline", seen, ranks))
            elif numeric and 3 <= len(lv) < self.SPLINE_MIN_VALUES:
                terms.append((j, "linear", seen, ranks))
            else:
                terms.append(self._factor_term(j, len(lv), seen))
        return terms

    @staticmethod
    def _factor_term(column: int, n_levels: int, seen: np.ndarray) -> tuple[int, str, np.ndarray, np.ndarray]:
        """Return a factor term for ``column``: seen values coded 0, 1, ...; unseen -1."""
        feature = np.full(n_levels, -1.0)
        feature[seen] = np.arange(seen.size, dtype=float)
        return column, "factor", seen, feature

    def _fit_tables(
        self, space: SearchSpace, train: np.ndarray, y: np.ndarray
    ) -> tuple[dict[int, np.ndarray] | None, str | None, str | None]:
        """Fit the model; return ``(column -> predicted effect per level, model, reason)``."""
        terms = self._design(space, train)
        if not terms:
            return None, None, "no parameter varies among the successful trials"
        try:
            tables, fit = self._fit_gam(space, terms, train, y)
            if y.size >= self.lam_search_min_rows and any(kind == "linear" for _, kind, _, _ in terms):
                tables = self._line_or_factor(space, terms, train, y, tables, fit)
            if all(np.all(np.isfinite(t)) for t in tables.values()):
                return tables, "gam", None
            reason = "pygam predicted non-finite values"
        except ImportError:
            reason = "pygam is not installed"
        except (ValueError, ArithmeticError, np.linalg.LinAlgError) as exc:
            reason = f"pygam failed ({type(exc).__name__}: {exc})"
        logger.warning("GAMSampler: %s; using the ridge fallback", reason)
        return self._fit_ridge(space, terms, train, y), "ridge", reason

    def _line_or_factor(
        self,
        space: SearchSpace,
        terms: list[tuple[int, str, np.ndarray, np.ndarray]],
        train: np.ndarray,
        y: np.ndarray,
        line_tables: dict[int, np.ndarray],
        line_fit: tuple[float, float],
    ) -> dict[int, np.ndarray]:
        """Return the tables of the fit with every linear term as a factor when GCV prefers it.

        Both fits are compared on pygam's GCV score ``n * deviance / (n - 1.4 * edof)**2``
        (``gamma = 1.4``), which only ranks fits while ``n > 1.4 * edof``: past that the
        denominator grows again and rewards over-fitting, so a fit outside that range never
        wins, and neither does a factor fit that fails. ``line_tables`` (whose fit had
        ``line_fit = (GCV, edof)``) are returned otherwise.
        """
        levels, _ = space.level_codes()
        free = [self._factor_term(j, len(levels[j]), seen) if kind == "linear" else (j, kind, seen, feature)
                for j, kind, seen, feature in terms]
        line_gcv, line_edof = line_fit
        try:
            free_tables, (free_gcv, free_edof) = self._fit_gam(space, free, train, y)
        except (ValueError, ArithmeticError, np.linalg.LinAlgError) as exc:
            logger.debug("GAMSampler: the factor fit failed (%s: %s); keeping the lines", type(exc).__name__, exc)
            return line_tables
        n = float(y.size)
        valid = n > self.GCV_GAMMA * free_edof and (n <= self.GCV_GAMMA * line_edof or free_gcv < line_gcv)
        if valid and all(np.all(np.isfinite(t)) for t in free_tables.values()):
            return free_tables
        return line_tables

    def _fit_gam(
        self, space: SearchSpace, terms: list[tuple[int, str, np.ndarray, np.ndarray]], train: np.ndarray, y: np.ndarray
    ) -> tuple[dict[int, np.ndarray], tuple[float, float]]:
        """Fit pygam on ``terms``; return ``(column -> effect per level, (GCV score, edof))``.

        ``edof`` is the fit's effective degrees of freedom (pygam ``statistics_``).
        """
        from pygam import LinearGAM, f, l, s  # lazy: pygam is heavy

        levels, codes = space.level_codes()
        X = np.column_stack([feature[codes[train, j]] for j, _, _, feature in terms]).astype(float)
        lam = self.SMALL_HISTORY_LAM  # replaced by gridsearch from lam_search_min_rows rows
        spec = None
        for col, (j, kind, seen, _) in enumerate(terms):
            if kind == "spline":
                k = max(self.spline_order + 1, min(self.n_splines, int(seen.size)))
                term = s(col, n_splines=k, spline_order=self.spline_order, lam=lam)
            elif kind == "linear":
                term = l(col, lam=lam)
            else:
                term = f(col, lam=lam)
            spec = term if spec is None else spec + term
        gam = LinearGAM(spec)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if y.size >= self.lam_search_min_rows:
                gam.gridsearch(X, y, lam=np.array(self.LAM_GRID), progress=False)
            else:
                gam.fit(X, y)
            # One prediction call over a stacked grid: the base row (the first training row),
            # then, per term, the base row with that term's feature set to each level. In an
            # additive model, prediction(level) - prediction(base) is the term's effect relative
            # to the base value, so base + the sum of those differences is the prediction.
            grids = [X[:1]]
            for col, (j, kind, seen, feature) in enumerate(terms):
                if kind == "spline":
                    values = np.clip(feature, X[:, col].min(), X[:, col].max())  # flat outside the seen range
                elif kind == "linear":
                    values = feature  # every value on the fitted line
                else:
                    values = np.arange(seen.size, dtype=float)
                grid = np.repeat(X[:1], values.size, axis=0)
                grid[:, col] = values
                grids.append(grid)
            predicted = np.asarray(gam.predict(np.vstack(grids)), dtype=float)
        base, at = predicted[0], 1
        tables: dict[int, np.ndarray] = {}
        for (j, kind, seen, feature), grid in zip(terms, grids[1:]):
            effect = predicted[at: at + len(grid)] - base
            at += len(grid)
            if kind in ("spline", "linear"):
                tables[j] = effect
            else:
                table = np.full(len(levels[j]), float(effect.mean()))  # unseen values: mean effect
                table[seen] = effect
                tables[j] = table
        return tables, (float(gam.statistics_["GCV"]), float(gam.statistics_["edof"]))

    def _fit_ridge(
        self, space: SearchSpace, terms: list[tuple[int, str, np.ndarray, np.ndarray]], train: np.ndarray, y: np.ndarray
    ) -> dict[int, np.ndarray]:
        """Ridge regression on one-hot codes of the seen values (intercept not penalized)."""
        levels, codes = space.level_codes()
        blocks = [np.ones((y.size, 1))]
        for j, _, seen, _ in terms:
            blocks.append((codes[train, j][:, None] == seen[None, :]).astype(float))
        A = np.hstack(blocks)
        penalty = np.full(A.shape[1], self.RIDGE_PENALTY)
        penalty[0] = 0.0
        beta = np.linalg.solve(A.T @ A + np.diag(penalty), A.T @ y)
        tables: dict[int, np.ndarray] = {}
        at = 1
        for j, _, seen, _ in terms:
            coef = beta[at: at + seen.size]
            at += seen.size
            table = np.full(len(levels[j]), float(coef.mean()))
            table[seen] = coef
            tables[j] = table
        return tables


def sampler_from_dict(data: Mapping[str, Any]) -> Sampler:
    """Rebuild a built-in sampler from its :meth:`~Sampler.to_dict` output.

    Raises:
        ConfigError: an unknown sampler name or bad settings.
    """
    if not isinstance(data, Mapping) or "name" not in data:
        raise ConfigError(f"a stored sampler needs a name, got {data!r}")
    settings = {k: v for k, v in data.items() if k != "name"}
    kinds: dict[str, type] = {"random": RandomSampler, "gam": GAMSampler}
    cls = kinds.get(data["name"])
    if cls is None:
        raise ConfigError(
            f"unknown sampler {data['name']!r}; built-in samplers: {', '.join(kinds)} "
            "(pass a custom sampler to Study.from_json)"
        )
    try:
        return cls(**settings)
    except TypeError as exc:
        raise ConfigError(f"bad settings for sampler {data['name']!r}: {exc}") from None


__all__ = ["Direction", "GAMSampler", "ProposalInfo", "RandomSampler", "Sampler", "sampler_from_dict", "untried_indices"]
