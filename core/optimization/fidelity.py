"""Multi-fidelity: evaluate on a seeded subset of the questions first, promote the better ones.

Successive halving (Jamieson and Talwalkar 2016; Li et al. 2018) with an exact paired test as
the gate, run asynchronously (ASHA, Li et al. 2020): a configuration never waits for a full
rung before its fate is decided.

**Questions.** The golden questions are put in one seeded order (:func:`question_order`,
``numpy.random.default_rng([seed, QUESTION_ORDER_STREAM]).permutation``); rung ``r`` scores the
first ``sizes[r]`` of that order, so every rung's questions hold the rung below's, and two
configurations scored at rungs ``r <= s`` share exactly rung ``r``'s questions.

**Rung sizes** (:func:`rung_sizes`, ``N`` questions, ``q0 = min_questions``, ``eta``):
``q0 * eta**r`` for ``r = 0, 1, ...`` while ``q0 * eta**r <= N / eta``, then ``N``. With
``q0 = 16`` and ``eta = 3``: 49 questions give ``(16, 49)``, 100 give ``(16, 100)``, 293 give
``(16, 48, 293)``; with ``N < q0 * eta`` there is one rung (every configuration sees every
question).

**Promotion rule** (:meth:`Rungs.decide`). When a configuration has been scored at rung ``r``
(not the last), it is compared with the rung's best: the configuration with the highest mean
objective over rung ``r``'s questions among every configuration scored at rung ``r`` or above
(itself included; the earliest on equal means). It is **stopped** only when it is not that
best, its mean is lower, and the exact two-sided sign test on the questions both were scored on
says the difference is real: ``b`` questions where it scored higher, ``c`` where the best did
(equal scores and unscorable questions left out), p-value ``min(1, 2 * P[X <= min(b, c)])``
with ``X ~ Binomial(b + c, 1/2)`` below ``alpha``. For a binary score (``found@k``) this is
McNemar's exact test on the discordant questions (``core.exact.binomial_two_sided``, the
p-value ``core.metrics.paired.mcnemar_exact`` gives ``evaluate`` for its ties). Otherwise, a tie included, it is **promoted** to rung
``r + 1``. A configuration scored at the last rung is **complete**.

**Stopping the search** (:meth:`Rungs.separated`): the best complete configuration is
separated from the rest when each other configuration that was scored is significantly worse
by the same paired test on the questions both saw (stopped ones included).

References:
    Jamieson, K. and Talwalkar, A. (2016). Non-stochastic Best Arm Identification and
    Hyperparameter Optimization. AISTATS.
    Li, L., Jamieson, K., DeSalvo, G., Rostamizadeh, A. and Talwalkar, A. (2018). Hyperband: A
    Novel Bandit-Based Approach to Hyperparameter Optimization. JMLR 18(185).
    Li, L. et al. (2020). A System for Massively Parallel Hyperparameter Tuning (ASHA). MLSys.
    Dixon, W. J. and Mood, A. M. (1946). The statistical sign test. JASA 41(236), 557-566.
    McNemar, Q. (1947). Psychometrika 12(2), 153-157.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Mapping, Sequence

import numpy as np

from core.errors import ConfigError
from core.exact import binomial_two_sided

#: The default number of questions of the first rung.
DEFAULT_MIN_QUESTIONS = 16
#: The default growth of the question count from one rung to the next.
DEFAULT_ETA = 3
#: The default significance level of the paired test that stops a configuration.
DEFAULT_ALPHA = 0.05
#: The second word of the seed of the question order (so it differs from the study's draws).
QUESTION_ORDER_STREAM = 0x5155
#: The most questions a rung below the last may hold, so an evaluation message that carries a
#: rung's question ids stays small.
MAX_SUBSET_QUESTIONS = 512

Verdict = Literal["promote", "stop", "complete"]


def rung_sizes(n_questions: int, min_questions: int = DEFAULT_MIN_QUESTIONS, eta: int = DEFAULT_ETA) -> tuple[int, ...]:
    """The questions scored at each rung (see the module docstring for the rule).

    Args:
        n_questions: questions in the golden file (>= 1).
        min_questions: questions of the first rung (>= 1).
        eta: growth from one rung to the next (>= 2).

    Returns:
        Increasing sizes; the last is ``n_questions``. A rung below the last holds at most
        :data:`MAX_SUBSET_QUESTIONS` questions.

    Raises:
        ConfigError: a setting out of range.
    """
    for name, value, low in (("n_questions", n_questions, 1), ("min_questions", min_questions, 1), ("eta", eta, 2)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ConfigError(f"{name} must be an integer >= {low}, got {value!r}")
    sizes = []
    size = min_questions
    while size * eta <= n_questions and size <= MAX_SUBSET_QUESTIONS:
        sizes.append(size)
        size *= eta
    return tuple(sizes) + (n_questions,)


def question_order(question_ids: Sequence[str], seed: int) -> list[str]:
    """``question_ids`` in the seeded order the rungs take their prefixes from.

    Raises:
        ConfigError: repeated ids.
    """
    ids = list(question_ids)
    if len(set(ids)) != len(ids):
        raise ConfigError("question ids must be distinct for the rungs' subsets")
    order = np.random.default_rng([int(seed), QUESTION_ORDER_STREAM]).permutation(len(ids))
    return [ids[int(i)] for i in order]


def sign_test(first: Sequence[float | None], second: Sequence[float | None]) -> tuple[int, int, float]:
    """Exact two-sided sign test of paired scores (one per question, in the same order).

    Args:
        first: the first configuration's scores (None: not scorable).
        second: the second's.

    Returns:
        ``(b, c, p_value)``: questions where the first scored higher, where the second did, and
        ``min(1, 2 * P[X <= min(b, c)])`` for ``X ~ Binomial(b + c, 1/2)`` (1.0 with no
        difference). Pairs with a None or equal scores are left out.

    Raises:
        ConfigError: the sequences differ in length.

    References:
        Dixon and Mood (1946); for 0/1 scores, McNemar's exact test (the p-value of
        ``core.exact.binomial_two_sided``, as ``core.metrics.paired.mcnemar_exact`` computes it).
    """
    if len(first) != len(second):
        raise ConfigError(f"a paired test needs the same questions, got {len(first)} and {len(second)} scores")
    b = c = 0
    for x, y in zip(first, second):
        if x is None or y is None or x == y:
            continue
        if x > y:
            b += 1
        else:
            c += 1
    return b, c, binomial_two_sided(b, c)


@dataclass(frozen=True)
class Decision:
    """What happens to a configuration after a rung.

    Attributes:
        verdict: ``"promote"`` (to the next rung), ``"stop"`` (significantly worse than the
            rung's best) or ``"complete"`` (scored on every question).
        rung: the rung it was scored at (0-based).
        n_questions: questions of that rung.
        best_key: the rung's best it was compared with (None when it is the best or complete).
        p_value: the sign test's p-value against the best (None when not compared).
        reason: the decision in words, for the report.
    """

    verdict: Verdict
    rung: int
    n_questions: int
    best_key: str | None = None
    p_value: float | None = None
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-clean dict of every field."""
        return {"verdict": self.verdict, "rung": self.rung, "n_questions": self.n_questions,
                "best_key": self.best_key, "p_value": self.p_value, "reason": self.reason}


def _mean(values: Sequence[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


class Rungs:
    """The rungs of one experiment and the promotion rule (pure: no I/O, no clock).

    Args:
        question_ids: every golden question's id, in golden-file order.
        seed: the experiment's seed (the question order's).
        min_questions: questions of the first rung.
        eta: growth from rung to rung.
        alpha: significance level of the sign test that stops a configuration.

    Raises:
        ConfigError: a setting out of range or repeated question ids.
    """

    def __init__(self, question_ids: Sequence[str], seed: int, *, min_questions: int = DEFAULT_MIN_QUESTIONS,
                 eta: int = DEFAULT_ETA, alpha: float = DEFAULT_ALPHA) -> None:
        if not isinstance(alpha, (int, float)) or isinstance(alpha, bool) or not 0 < alpha < 1:
            raise ConfigError(f"alpha must be in (0, 1), got {alpha!r}")
        self.question_ids = list(question_ids)
        self.order = question_order(self.question_ids, seed)
        self.sizes = rung_sizes(max(1, len(self.order)), min_questions, eta)
        self.alpha = float(alpha)

    @property
    def last(self) -> int:
        """The index of the last rung (every question)."""
        return len(self.sizes) - 1

    def questions(self, rung: int) -> list[str]:
        """The question ids of ``rung`` (a prefix of the seeded order).

        Raises:
            ConfigError: no such rung.
        """
        if isinstance(rung, bool) or not isinstance(rung, int) or not 0 <= rung <= self.last:
            raise ConfigError(f"rung must be an integer in 0..{self.last}, got {rung!r}")
        return self.order[: self.sizes[rung]]

    def rung_of(self, n_questions: int) -> int | None:
        """The rung that holds ``n_questions`` questions, or None."""
        return self.sizes.index(n_questions) if n_questions in self.sizes else None

    @staticmethod
    def _on(scores: Mapping[str, float | None], ids: Sequence[str]) -> list[float | None]:
        return [scores.get(q) for q in ids]

    def rung_best(self, rung: int, scored: Mapping[str, Mapping[str, float | None]]) -> tuple[str, float] | None:
        """The rung's best: ``(key, mean over the rung's questions)`` of the configuration with
        the highest mean among those in ``scored`` (key -> question id -> score) scored on every
        question of the rung; None when none is (or none has a scorable question).

        Ties go to the first key in ``scored``'s order (the order they were asked in).
        """
        ids = self.questions(rung)
        best: tuple[str, float] | None = None
        for key, scores in scored.items():
            if not all(q in scores for q in ids):
                continue
            mean = _mean(self._on(scores, ids))
            if mean is not None and (best is None or mean > best[1]):
                best = (key, mean)
        return best

    def decide(self, key: str, rung: int, scored: Mapping[str, Mapping[str, float | None]]) -> Decision:
        """The decision for configuration ``key`` just scored at ``rung``.

        Args:
            key: the configuration's key (in ``scored``).
            rung: the rung it was scored at.
            scored: key -> question id -> score of every configuration scored so far (each on
                the questions of the highest rung it reached), in the order they were asked.

        Raises:
            ConfigError: ``key`` was not scored on every question of ``rung``.
        """
        ids = self.questions(rung)
        mine = scored.get(key)
        if mine is None or not all(q in mine for q in ids):
            raise ConfigError(f"configuration {key} has no scores for every question of rung {rung}")
        n = len(ids)
        if rung == self.last:
            return Decision("complete", rung, n, reason=f"scored on all {n} questions")
        best = self.rung_best(rung, scored)
        if best is None or best[0] == key:
            return Decision("promote", rung, n, reason=f"the best of rung {rung} ({n} questions)")
        b, c, p = sign_test(self._on(mine, ids), self._on(scored[best[0]], ids))
        my_mean = _mean(self._on(mine, ids))
        if my_mean is not None and my_mean < best[1] and p < self.alpha:
            return Decision("stop", rung, n, best[0], p,
                            f"worse than {best[0]} on {c} of {n} questions and better on {b} "
                            f"(exact sign test p = {p:.3g} < {self.alpha:g})")
        return Decision("promote", rung, n, best[0], p,
                        f"not told apart from {best[0]} on {n} questions (exact sign test p = {p:.3g}, "
                        f"{b} better, {c} worse)")

    def separated(self, best_key: str, scored: Mapping[str, Mapping[str, float | None]]) -> tuple[bool, str]:
        """Whether ``best_key`` (scored on every question) is significantly better than every
        other configuration in ``scored`` on the questions both were scored on.

        Returns:
            ``(separated, reason)``; the reason names a configuration it is not told apart from.
        """
        mine = scored[best_key]
        if len(scored) < 2:
            return False, "no other configuration to compare with"
        for key, theirs in scored.items():
            if key == best_key:
                continue
            ids = [q for q in self.order if q in theirs and q in mine]
            b, c, p = sign_test(self._on(mine, ids), self._on(theirs, ids))
            if not (b > c and p < self.alpha):
                return False, f"not told apart from {key} (exact sign test p = {p:.3g} on {len(ids)} questions)"
        return True, (f"{best_key} is better than each of the {len(scored) - 1} other configurations scored "
                      f"(exact sign test, p < {self.alpha:g} each)")

    def to_dict(self) -> dict[str, Any]:
        """The settings that rebuild the rungs with the same question ids (``sizes`` for the record)."""
        return {"sizes": list(self.sizes), "alpha": self.alpha}


__all__ = ["DEFAULT_ALPHA", "DEFAULT_ETA", "DEFAULT_MIN_QUESTIONS", "Decision", "MAX_SUBSET_QUESTIONS",
           "QUESTION_ORDER_STREAM", "Rungs", "Verdict", "question_order", "rung_sizes", "sign_test"]
