"""One configuration tried by a study: asked (pending), then told (complete or failed).

References:
    Optuna's ``FrozenTrial`` and trial states (the ask / tell interface):
    https://optuna.readthedocs.io/en/stable/reference/generated/optuna.trial.FrozenTrial.html
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping

from core.errors import ConfigError
from core.optimization.configuration import Configuration

TrialStatus = Literal["pending", "complete", "failed"]

PENDING: TrialStatus = "pending"
COMPLETE: TrialStatus = "complete"
FAILED: TrialStatus = "failed"
STATUSES: tuple[str, ...] = (PENDING, COMPLETE, FAILED)


def check_metrics(metrics: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Return ``metrics`` as a plain JSON-clean dict (or None).

    Raises:
        ConfigError: a key that is not a string, or a value JSON cannot hold (NaN included:
            a metric that was not computed must be ``None``, not NaN).
    """
    if metrics is None:
        return None
    if not isinstance(metrics, Mapping):
        raise ConfigError(f"metrics must be a mapping, got {type(metrics).__name__}")
    out: dict[str, Any] = {}
    for name, value in metrics.items():
        if not isinstance(name, str):
            raise ConfigError(f"metric names must be strings, got {name!r}")
        item = getattr(value, "item", None)
        if callable(item) and getattr(value, "shape", None) == ():
            value = item()  # numpy scalar
        out[name] = value
    try:
        json.dumps(out, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"metrics are not JSON-clean ({exc}); use None for a metric that was not computed") from None
    return out


@dataclass(frozen=True)
class Trial:
    """A configuration the study has handed out, and what came back.

    Attributes:
        number: 0-based position in the study (warm-start observations come first).
        configuration: the configuration tried.
        status: ``"pending"`` (asked, not yet told), ``"complete"`` (has a score) or
            ``"failed"`` (told without a score; never used to fit a model).
        score: the objective value of a complete trial (finite float), else None.
        error: why a failed trial failed, else None.
        metrics: every metric the evaluation reported (JSON-clean), or None.
        warm_start: True for a ``known_observations`` entry given at construction (not
            evaluated by this study and not counted against ``max_evals``).
        round: the 1-based number of the :meth:`Study.ask` call that handed the trial out
            (trials of one round may be evaluated at the same time); None for a warm start
            and for trials stored before rounds were recorded.
    """

    number: int
    configuration: Configuration
    status: TrialStatus = PENDING
    score: float | None = None
    error: str | None = None
    metrics: dict[str, Any] | None = field(default=None, compare=False)
    warm_start: bool = False
    round: int | None = None

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ConfigError(f"trial status must be one of {', '.join(STATUSES)}, got {self.status!r}")
        if self.status == COMPLETE and (self.score is None or not math.isfinite(self.score)):
            raise ConfigError(f"complete trial {self.number} needs a finite score, got {self.score!r}")
        if self.status != COMPLETE and self.score is not None:
            raise ConfigError(f"{self.status} trial {self.number} cannot have a score")

    @property
    def is_complete(self) -> bool:
        """True when the trial has a score."""
        return self.status == COMPLETE

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serialisable dict of every field."""
        return {
            "number": self.number,
            "configuration": self.configuration.to_dict(),
            "status": self.status,
            "score": self.score,
            "error": self.error,
            "metrics": self.metrics,
            "warm_start": self.warm_start,
            "round": self.round,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Trial":
        """Rebuild a trial from :meth:`to_dict` output.

        Raises:
            ConfigError: a missing field or an inconsistent status and score.
        """
        try:
            score = data.get("score")
            return cls(
                number=int(data["number"]),
                configuration=Configuration.from_dict(data["configuration"]),
                status=data["status"],
                score=None if score is None else float(score),
                error=data.get("error"),
                metrics=check_metrics(data.get("metrics")),
                warm_start=bool(data.get("warm_start", False)),
                round=None if data.get("round") is None else int(data["round"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"a stored trial is malformed ({type(exc).__name__}: {exc})") from None


__all__ = ["COMPLETE", "FAILED", "PENDING", "STATUSES", "Trial", "TrialStatus", "check_metrics"]
