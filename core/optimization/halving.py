"""The multi-fidelity loop over a study: which configuration to score on how many questions.

:class:`Halving` sits beside a :class:`~core.optimization.study.Study` (pure, like it: no I/O,
no clock). :meth:`Halving.ask` hands out work items ``(configuration, rung)``: promotions
waiting for their next rung first (best first), then new configurations from ``Study.ask`` at
rung 0; the items of one call share one rung (a round is a rung). :meth:`Halving.tell` takes a work item's per-question scores and metrics: a rung-0
result is told to the study, a later rung's replaces the trial's score (``Study.rescore``),
then the promotion rule of :class:`~core.optimization.fidelity.Rungs` decides. The study's
budget (``max_evals``) counts configurations; a promotion is a further evaluation of one of
them (at most ``len(rungs.sizes) - 1`` each).

:meth:`Halving.stop_reason` says why the search ends: ``"separated"`` (the best configuration
scored on every question is significantly better than every other one scored, once more
configurations than :data:`SEPARATION_MIN_EVALS` and the sampler's random phase were evaluated
and nothing is pending), ``"budget"`` (``max_evals``
configurations asked and every promotion done) or ``"space"`` (every valid configuration
tried); None while it goes on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from core.errors import ConfigError
from core.optimization.fidelity import Decision, Rungs

if TYPE_CHECKING:
    from core.optimization.configuration import Configuration
    from core.optimization.study import Study

#: Configurations evaluated before separation may end a search (more when the sampler's random
#: phase, ``n_random_nodes``, is longer): separation after one or two says little of the space.
SEPARATION_MIN_EVALS = 4
#: When a promoted configuration is handed out at its next rung (see :class:`Halving`).
PROMOTIONS = ("tied", "incumbent")
#: The stop reasons, in words for the report.
STOP_REASONS: dict[str, str] = {
    "separated": "the best configuration is separated from the rest by the exact paired test",
    "budget": "the budget of configurations ran out",
    "space": "every valid configuration was tried",
}


@dataclass(frozen=True)
class WorkItem:
    """One evaluation to run: a configuration on the questions of one rung.

    Attributes:
        configuration: the configuration.
        rung: 0-based rung.
        questions: the rung's question ids (a prefix of the seeded order).
    """

    configuration: "Configuration"
    rung: int
    questions: tuple[str, ...]


class Halving:
    """Successive halving over a study (see the module docstring).

    Args:
        rungs: the rungs and the promotion rule.
        scores: key -> question id -> score of every configuration scored so far (the stored
            state; None: none yet).
        decisions: key -> the last :class:`Decision` (stored state).
        pending: key -> rung of the work items handed out and not yet told (stored state).
        promotion: when a promoted configuration is handed out at its next rung (one of
            :data:`PROMOTIONS`): ``"tied"``, at once (every promotion before any new
            configuration); ``"incumbent"``, only while on its rung's questions its mean is at
            least that of the next rung's best (:meth:`Rungs.rung_best`) on the same questions,
            else it waits (pending, not stopped) while new configurations are screened at
            rung 0, and is handed out when it qualifies again or nothing else is left to ask.

    Raises:
        ConfigError: an unknown ``promotion``.
    """

    def __init__(self, rungs: Rungs, scores: Mapping[str, Mapping[str, float | None]] | None = None,
                 decisions: Mapping[str, Decision] | None = None, pending: Mapping[str, int] | None = None,
                 *, promotion: str = "tied") -> None:
        if promotion not in PROMOTIONS:
            raise ConfigError(f"promotion must be one of {', '.join(PROMOTIONS)}, got {promotion!r}")
        self.rungs = rungs
        self.promotion = promotion
        self.scores: dict[str, dict[str, float | None]] = {k: dict(v) for k, v in (scores or {}).items()}
        self.decisions: dict[str, Decision] = dict(decisions or {})
        self.pending: dict[str, int] = dict(pending or {})

    # Ask / tell --------------------------------------------------------------------------------
    def promotions(self) -> list[str]:
        """Keys promoted and not yet handed out at their next rung, best mean first."""
        waiting = [k for k, d in self.decisions.items() if d.verdict == "promote" and k not in self.pending]

        def mean(key: str) -> float:
            ids = self.rungs.questions(self.decisions[key].rung)
            kept = [v for v in (self.scores[key].get(q) for q in ids) if v is not None]
            return sum(kept) / len(kept) if kept else float("-inf")

        return sorted(waiting, key=lambda k: -mean(k))

    def ready(self, keys: Sequence[str]) -> list[str]:
        """The promotions among ``keys`` to hand out now (all of them with ``"tied"``; with
        ``"incumbent"``, those at least as good as the next rung's best on their rung's
        questions, or any when no configuration has reached the next rung), in ``keys``' order."""
        if self.promotion == "tied":
            return list(keys)
        out = []
        for key in keys:
            rung = self.decisions[key].rung
            best = self.rungs.rung_best(rung + 1, {k: v for k, v in self.scores.items() if k != key})
            if best is None:
                out.append(key)
                continue
            ids = self.rungs.questions(rung)
            mine, theirs = (_mean_on(self.scores[k], ids) for k in (key, best[0]))
            if mine is not None and (theirs is None or mine >= theirs):
                out.append(key)
        return out

    def ask(self, study: "Study", n: int | None = None) -> list[WorkItem]:
        """Up to ``n`` work items of one rung (None: the sampler's natural batch), each recorded
        as pending: items handed out and never told (a resumed run) alone; else the promotions
        to the lowest rung any waits for, best first; else trials the study holds as pending and
        this loop does not, then new configurations, at rung 0. A round is one rung's work."""
        want = n if n is not None else max(1, int(study.sampler.batch_size(study.space, study.trials)))
        items: list[WorkItem] = []
        for key, rung in list(self.pending.items())[:want]:  # handed out and never told (a resumed run)
            items.append(self._item(self._trial(study, key).configuration, rung))
        if items:
            return items
        waiting = self.promotions()
        ready = self.ready(waiting)
        if ready:  # a round holds one rung: the lowest rung promotions wait for, best first
            return self._promote(study, ready, want)
        for trial in study.pending_trials:
            if len(items) < want and trial.configuration.key not in self.pending:
                items.append(self._item(trial.configuration, 0))
        if len(items) < want:
            items += [self._item(c, 0) for c in study.ask(want - len(items))]
        if not items and waiting:  # nothing new to screen: the waiting promotions, best first
            return self._promote(study, waiting, want)
        return items

    def _promote(self, study: "Study", keys: Sequence[str], want: int) -> list[WorkItem]:
        """Work items for the promotions of ``keys`` (best first) to the lowest next rung among them."""
        rung = min(self.decisions[k].rung for k in keys) + 1
        return [self._item(self._trial(study, k).configuration, rung)
                for k in keys if self.decisions[k].rung + 1 == rung][:want]

    def _item(self, configuration: "Configuration", rung: int) -> WorkItem:
        self.pending[configuration.key] = rung
        return WorkItem(configuration, rung, tuple(self.rungs.questions(rung)))

    @staticmethod
    def _trial(study: "Study", key: str) -> Any:
        for t in study.trials:
            if t.configuration.key == key:
                return t
        raise ConfigError(f"configuration {key} is not in the study")

    def tell(self, study: "Study", configuration: "Configuration", rung: int,
             scores: Mapping[str, float | None] | None, metrics: Mapping[str, Any] | None,
             error: str | None = None) -> Decision | None:
        """Record a work item's outcome and decide the configuration's next step.

        Args:
            study: the study.
            configuration: the item's configuration.
            rung: the item's rung.
            scores: question id -> objective score on the rung's questions, or None (failed).
            metrics: the evaluation's metrics (its objective mean is the trial's score).
            error: why it failed (with ``scores`` None).

        Returns:
            The decision, or None when the evaluation failed (at rung 0 the trial is told
            failed; later, the configuration stops where it was).

        Raises:
            ConfigError: scores missing some of the rung's questions, or a configuration the
                study does not hold.
        """
        key = configuration.key
        self.pending.pop(key, None)
        if scores is None or metrics is None or metrics.get(study.objective_metric) is None:
            why = error or "the evaluation gave no score"
            if rung == 0:
                trial = study.trial_of(configuration)
                if trial is not None and trial.status == "pending":
                    study.tell(configuration, None, error=why, metrics=metrics)
                return None
            before = self.decisions.get(key)
            n = before.n_questions if before is not None else self.rungs.sizes[rung - 1]
            self.decisions[key] = Decision("stop", rung - 1, n, reason=f"its evaluation at rung {rung} failed: {why}")
            return None
        ids = self.rungs.questions(rung)
        missing = [q for q in ids if q not in scores]
        if missing:
            raise ConfigError(f"configuration {key}: no score for {len(missing)} question(s) of rung {rung}, "
                              f"such as {missing[0]!r}")
        self.scores[key] = {q: scores[q] for q in ids}
        if rung == 0:
            study.tell(configuration, dict(metrics), metrics=metrics)
        else:
            study.rescore(configuration, dict(metrics), metrics=metrics)
        decision = self.rungs.decide(key, rung, self.scores)
        self.decisions[key] = decision
        return decision

    def forget(self, key: str) -> None:
        """Drop what the loop holds of configuration ``key`` (its scores, decision and pending
        item): its stored result was lost, so it is screened again from rung 0 once its trial
        is pending again (``Study.reopen``)."""
        self.scores.pop(key, None)
        self.decisions.pop(key, None)
        self.pending.pop(key, None)

    # Stopping ----------------------------------------------------------------------------------
    def complete_keys(self) -> list[str]:
        """Keys scored on every question."""
        return [k for k, d in self.decisions.items() if d.verdict == "complete"]

    def best_complete(self) -> str | None:
        """The complete configuration with the highest mean over every question (earliest on ties)."""
        best = self.rungs.rung_best(self.rungs.last, {k: self.scores[k] for k in self.complete_keys()})
        return None if best is None else best[0]

    def stop_reason(self, study: "Study") -> str | None:
        """``"separated"``, ``"budget"``, ``"space"`` or None (see the module docstring)."""
        if self.pending or study.pending_trials:
            return None
        random_phase = max(SEPARATION_MIN_EVALS, int(getattr(study.sampler, "n_random_nodes", 0)))
        best = self.best_complete()
        if best is not None and study.n_evaluated > random_phase:
            separated, _ = self.rungs.separated(best, self.scores)
            if separated:
                return "separated"
        if self.promotions():
            return None
        if study.n_remaining == 0:
            return "space" if study.n_asked >= study.space.n_valid else "budget"
        return None

    # State -------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The loop's state (JSON-clean): rungs' settings, promotion rule, scores, decisions,
        pending items."""
        return {"rungs": self.rungs.to_dict(), "promotion": self.promotion, "scores": self.scores,
                "decisions": {k: d.to_dict() for k, d in self.decisions.items()}, "pending": dict(self.pending)}

    @classmethod
    def from_dict(cls, rungs: Rungs, data: Mapping[str, Any]) -> "Halving":
        """Rebuild from :meth:`to_dict` output over ``rungs`` (rebuilt from the stored spec).

        Raises:
            ConfigError: the stored rung sizes differ from ``rungs``' or the state is malformed.
        """
        stored = (data.get("rungs") or {}).get("sizes")
        if stored is not None and list(stored) != list(rungs.sizes):
            raise ConfigError(f"the stored rungs {stored} differ from the experiment's {list(rungs.sizes)}")
        try:
            decisions = {k: Decision(**d) for k, d in (data.get("decisions") or {}).items()}
            return cls(rungs, data.get("scores") or {}, decisions,
                       {k: int(v) for k, v in (data.get("pending") or {}).items()},
                       promotion=str(data.get("promotion") or "tied"))
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"the stored multi-fidelity state is malformed ({exc})") from None


def _mean_on(scores: Mapping[str, float | None], ids: Sequence[str]) -> float | None:
    kept = [v for v in (scores.get(q) for q in ids) if v is not None]
    return sum(kept) / len(kept) if kept else None


def per_question_scores(result: Mapping[str, Any], metric: str) -> dict[str, float | None] | None:
    """Question id -> ``metric``'s score from an evaluation result's ``per_question`` block
    (``core.evaluation.single.run_single_evaluation``), or None when it has none."""
    block = result.get("per_question")
    if not isinstance(block, Mapping):
        return None
    values = (block.get("scores") or {}).get(metric)
    ids = block.get("ids")
    if not isinstance(values, Sequence) or not isinstance(ids, Sequence) or len(values) != len(ids):
        return None
    return {str(q): (None if v is None else float(v)) for q, v in zip(ids, values)}


__all__ = ["Halving", "PROMOTIONS", "SEPARATION_MIN_EVALS", "STOP_REASONS", "WorkItem", "per_question_scores"]
