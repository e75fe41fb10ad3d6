"""What answer metrics read and return: answered questions, per-question scores, per-metric scores.

Shared by the unitxt metrics (:mod:`core.metrics.unitxt_metrics`), the LLM judge
(:mod:`core.metrics.llm_judge`) and the aggregation (:mod:`core.metrics.answers`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from core.rag.records import Context

Status = Literal["scored", "failed", "invalid", "unscorable"]

@dataclass(frozen=True)
class AnswerItem:
    """One question joined with its answer, as the evaluators see it.

    Attributes:
        question_id: the golden question's id.
        question: the question text.
        history: earlier turns, ``(role, content)`` pairs, oldest first.
        reference: the reference answer, or None.
        expected_documents: the expected document ids (empty when the golden file names none).
        answer: the answer, or None when it could not be generated.
        error: why there is no answer, else None.
        contexts: the passages the answer was generated from, best first.
    """

    question_id: str
    question: str
    history: tuple[tuple[str, str], ...] = ()
    reference: str | None = None
    expected_documents: tuple[str, ...] = ()
    answer: str | None = None
    error: str | None = None
    contexts: tuple[Context, ...] = ()


@dataclass(frozen=True)
class QuestionScore:
    """One metric's outcome for one question.

    Attributes:
        score: in [0, 1] (higher is better) when ``status`` is ``"scored"``, else None.
        status: ``"scored"``, ``"failed"`` (no answer, or the evaluator failed),
            ``"invalid"`` (the judge's reply held no valid score) or ``"unscorable"`` (the
            metric does not apply to this question).
        reason: why there is no score, else None.
        raw: the judge's score on its own scale (1 to 5 for ``answer_relevance``), else None.
        lost: why a judge call brought no score: ``rate_limited`` (429 after the retries),
            ``timed_out``, ``error`` (another failed call), ``skipped`` (not sent: the judge
            had failed too many times in a row) or ``unparseable`` (a reply without a valid
            score); None otherwise (a question without an answer is not a lost judge call).
        samples: with ``--judge-repeat N``, each call's score (None for a lost one), in order;
            ``score`` is then the mean of the valid ones.
    """

    score: float | None
    status: Status = "scored"
    reason: str | None = None
    raw: float | None = None
    lost: str | None = None
    samples: tuple[float | None, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Return ``{score}`` plus ``status`` and ``reason`` when not scored, ``raw_score`` when
        known, ``lost`` when a judge call was lost, ``samples`` with repeats."""
        out: dict[str, Any] = {"score": self.score}
        if self.status != "scored":
            out["status"] = self.status
            out["reason"] = self.reason
        if self.raw is not None:
            out["raw_score"] = self.raw
        if self.lost is not None:
            out["lost"] = self.lost
        if self.samples:
            out["samples"] = list(self.samples)
        return out


@dataclass(frozen=True)
class MetricScores:
    """What an evaluator returns for one metric.

    Attributes:
        per_question: one :class:`QuestionScore` per item, in item order.
        interval: the evaluator's own confidence interval ``(low, high)`` over the scored
            questions, or None (then one is computed here).
        interval_method: how ``interval`` was computed.
        lost: judge calls that brought no score, by why (see :attr:`QuestionScore.lost`);
            with repeats, every lost call counts.
        repeats: with ``--judge-repeat N`` above 1, how the N calls per item differ
            (``core.metrics.llm_judge.repeat_spread``), else None.
    """

    per_question: list[QuestionScore]
    interval: tuple[float, float] | None = None
    interval_method: str | None = None
    lost: dict[str, int] = field(default_factory=dict)
    repeats: dict[str, Any] | None = None


def passages_of(item: AnswerItem) -> tuple[Context, ...]:
    """The item's passages that hold text (blank ones support nothing and are never shown)."""
    return tuple(c for c in item.contexts if c.text and c.text.strip())


def missing_answer(item: AnswerItem) -> QuestionScore | None:
    """A ``failed`` score when the item has no answer (with the generation error), else None."""
    if item.answer is None or item.error is not None:
        return QuestionScore(None, "failed", f"no answer: {item.error or 'no answer record'}")
    return None


def excerpt(text: str, limit: int = 60) -> str:
    """``text`` on one line, whitespace collapsed, cut to ``limit`` characters (ending ``…``)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
