"""What travels between the steps of an experiment: small, frozen, JSON-serialisable records.

- :class:`EvaluationRequest`: one evaluation asked of a worker (the queue message): the
  experiment id, the configuration and its key, nothing else.
- :class:`EvaluationOutcome`: what one evaluation stored, in a few fields (never the
  per-question records).
- :class:`ExperimentSummary`: the study's progress after a tell.
- :class:`EvaluationResult` (from ``core.evaluation.result``): what one evaluation gives and
  the engine stores, in full, with ``to_dict`` / ``from_dict``.

Texts that travel are capped at :data:`MAX_MESSAGE_BYTES` (see :func:`cap_text`): the full text
stays in the experiment's store.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Collection, Mapping

from core.errors import ConfigError
from core.evaluation.result import EvaluationResult
from core.optimization import Configuration
from core.reports.files import is_safe_id

if TYPE_CHECKING:
    from core.optimization.study import Study

#: Version of the evaluation message layout.
MESSAGE_VERSION = 2
#: The most bytes (UTF-8) of a text that goes into orchestration input, output, events, custom
#: status or queue messages.
MAX_MESSAGE_BYTES = 2048
#: The most bytes of one evaluation message (queue messages hold 64 KB; Base64 adds a third).
MAX_EVALUATION_MESSAGE_BYTES = 32 * 1024


def cut_text(text: str, limit: int = MAX_MESSAGE_BYTES) -> str:
    """``text`` cut to at most ``limit`` UTF-8 bytes (on a character boundary), with ``...``
    when cut."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[: max(0, limit - 3)].decode("utf-8", errors="ignore") + "..."


def evaluated_event(key: str, rung: int = 0) -> str:
    """The name of the external event that says configuration ``key``'s result at ``rung`` is
    stored (``evaluated-<key>`` at rung 0, as before rungs; ``evaluated-<key>-r<rung>`` above)."""
    return f"evaluated-{key}" if not rung else f"evaluated-{key}-r{int(rung)}"


@dataclass(frozen=True)
class EvaluationRequest:
    """One evaluation to run: the body of an evaluation queue message.

    Attributes:
        experiment_id: the experiment (also the orchestration's instance id).
        key: ``Configuration.key`` of ``configuration``.
        configuration: parameter -> value.
        rung: the multi-fidelity rung (0: the first, or an experiment without rungs).
        questions: the ids of the golden questions to evaluate (the rung's subset; None:
            every question). The evaluator checks them against the stored experiment's rung.
    """

    experiment_id: str
    key: str
    configuration: Mapping[str, Any]
    rung: int = 0
    questions: tuple[str, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        """``{"v", "experiment_id", "key", "configuration"}``, with ``"rung"`` and
        ``"questions"`` when a subset is asked for."""
        out = {"v": MESSAGE_VERSION, "experiment_id": self.experiment_id, "key": self.key,
               "configuration": dict(self.configuration)}
        if self.rung or self.questions is not None:
            out.update(rung=self.rung, questions=None if self.questions is None else list(self.questions))
        return out

    @property
    def event(self) -> str:
        """The completion event's name (:func:`evaluated_event`)."""
        return evaluated_event(self.key, self.rung)

    def to_json(self) -> str:
        """:meth:`to_dict` as JSON text."""
        return json.dumps(self.to_dict(), ensure_ascii=False, allow_nan=False)

    @classmethod
    def parse(cls, data: bytes | str | Mapping[str, Any]) -> "EvaluationRequest":
        """Parse and check a message (JSON text or a parsed dict).

        Only the experiment id, the key and the configuration are read: anything else a message
        carries (addresses, scores) is ignored.

        Raises:
            ConfigError: not JSON, too large, another version, a field missing or of the wrong
                type, or a key that does not match the configuration (names the field).
        """
        if isinstance(data, Mapping):
            message: Any = data
        else:
            if len(data) > MAX_EVALUATION_MESSAGE_BYTES:
                raise ConfigError(f"evaluation message is {len(data)} bytes; at most "
                                  f"{MAX_EVALUATION_MESSAGE_BYTES} are accepted")
            try:
                message = json.loads(data)
            except (ValueError, UnicodeDecodeError, RecursionError) as exc:
                raise ConfigError(f"evaluation message is not JSON: {cut_text(str(exc), 200)}") from None
        if not isinstance(message, Mapping):
            raise ConfigError("evaluation message must be a JSON object")
        if message.get("v") != MESSAGE_VERSION:
            raise ConfigError(f"evaluation message version must be {MESSAGE_VERSION}, got {cut_text(repr(message.get('v')), 60)}")
        for name in ("experiment_id", "key"):
            if not isinstance(message.get(name), str) or not message[name]:
                raise ConfigError(f"evaluation message: {name!r} must be a non-empty string")
        if not is_safe_id(message["experiment_id"]):
            raise ConfigError(f"evaluation message: bad experiment_id {cut_text(repr(message['experiment_id']), 80)}")
        if not isinstance(message.get("configuration"), Mapping):
            raise ConfigError("evaluation message: 'configuration' must be an object")
        configuration = Configuration(message["configuration"])
        if configuration.key != message["key"]:
            raise ConfigError("evaluation message: 'key' does not match the configuration")
        rung = message.get("rung", 0)
        if isinstance(rung, bool) or not isinstance(rung, int) or rung < 0:
            raise ConfigError("evaluation message: 'rung' must be a non-negative integer")
        questions = message.get("questions")
        if questions is not None and (not isinstance(questions, list)
                                      or not all(isinstance(q, str) for q in questions)):
            raise ConfigError("evaluation message: 'questions' must be a list of question ids")
        return cls(message["experiment_id"], message["key"], configuration.to_dict(), rung,
                   None if questions is None else tuple(questions))


def evaluation_seconds(result: Mapping[str, Any]) -> float | None:
    """The wall seconds of the evaluation that wrote ``result`` (a stored evaluation result): a
    promotion's own (``rung_s``, see ``core.experiment.engine.merge_rung``), else
    ``timings.total_s``; None when not recorded."""
    if "rung_s" in result:
        return result["rung_s"]
    return (result.get("timings") or {}).get("total_s")


@dataclass(frozen=True)
class EvaluationOutcome:
    """What one stored evaluation gave, in a few fields.

    Attributes:
        key: the configuration's key.
        status: ``"ok"`` or ``"failed"``.
        score: the objective's mean (None when failed or not computed).
        error: why it failed (capped), else None.
        stored: True when the result was already stored (nothing was evaluated).
        duration_s: the evaluation's wall time in seconds, or None.
    """

    key: str
    status: str
    score: float | None = None
    error: str | None = None
    stored: bool = False
    duration_s: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-clean dict of every field."""
        return asdict(self)


@dataclass(frozen=True)
class ExperimentSummary:
    """The study's progress.

    Attributes:
        evaluated: configurations evaluated (failed included; warm starts and pending not).
        failed: evaluations without a score (warm starts not counted).
        pending: configurations asked and not yet told.
        planned: the study's budget (``Study.max_evals``).
        best_score: the best objective value so far, or None; with multi-fidelity the best
            of the configurations scored on every question (a mean over a rung's subset is no
            rival to one over every question, and the report's best is the same).
        best_key: its configuration's key, or None.
        finished: True when nothing more will be asked and nothing is pending.
    """

    evaluated: int
    failed: int
    pending: int
    planned: int
    best_score: float | None = None
    best_key: str | None = None
    finished: bool = False

    def to_dict(self) -> dict[str, Any]:
        """A JSON-clean dict of every field."""
        return asdict(self)

    @classmethod
    def of(cls, study: Study, complete_keys: Collection[str] | None = None) -> "ExperimentSummary":
        """The summary of ``study`` (a ``core.optimization.Study``); ``complete_keys``: with
        multi-fidelity, the keys scored on every question (``Halving.complete_keys``), the
        only ones the best is chosen from (None: every complete trial)."""
        best = study.best_trial
        if complete_keys is not None:
            kept = set(complete_keys)
            scored = [t for t in study.trials if t.status == "complete" and t.configuration.key in kept]
            best = max(scored, key=lambda t: t.score if study.direction == "maximize" else -t.score, default=None)
        return cls(evaluated=study.n_evaluated,
                   failed=sum(1 for t in study.trials if t.status == "failed" and not t.warm_start),
                   pending=len(study.pending_trials), planned=study.max_evals,
                   best_score=None if best is None else best.score,
                   best_key=None if best is None else best.configuration.key,
                   finished=study.is_finished)


@dataclass(frozen=True)
class Prepared:
    """What ``prepare`` reports.

    Attributes:
        objective: the objective metric.
        n_valid: valid configurations in the space.
        max_evals: the study's budget.
        notes: what the caller should be told (for example that the space is smaller than the
            budget asked for, or which configurations a ``--set`` removed), each capped.
    """

    objective: str
    n_valid: int
    max_evals: int
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-clean dict of every field."""
        return {"objective": self.objective, "n_valid": self.n_valid, "max_evals": self.max_evals,
                "notes": list(self.notes)}


def __getattr__(name: str) -> Any:
    """``EvaluationResult``, imported on first use (``core.evaluation`` is not loaded with the
    small records above, which the orchestrators import)."""
    if name == "EvaluationResult":
        return EvaluationResult
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["evaluated_event", "EvaluationOutcome", "EvaluationResult", "EvaluationRequest", "ExperimentSummary", "MAX_EVALUATION_MESSAGE_BYTES",
           "MAX_MESSAGE_BYTES", "MESSAGE_VERSION", "Prepared", "cut_text"]
