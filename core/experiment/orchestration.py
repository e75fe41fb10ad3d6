"""The rules the experiment's orchestration runs by, kept apart from the Durable Functions app
(nothing here imports an Azure library): how its activities are retried, when an instance id
may be started (again), and how a failed experiment is resumed.

- Activities (prepare, ask, enqueue, tell, report) are called with a retry policy of
  :data:`ACTIVITY_MAX_ATTEMPTS` tries, the first retry after :data:`ACTIVITY_FIRST_RETRY_MS`;
  each step may be retried (``core.experiment.engine``), so a storage error that passes costs a
  wait, not the experiment.
- An instance id is started only when no orchestration has it or when the one that had it
  ended without finishing (:data:`RESTARTABLE_STATUSES`): a running one is never replaced and a
  completed one never run again (:func:`start_refusal`). Durable Functions replaces an existing
  instance on ``start_new`` unless host.json's ``overridableExistingInstanceStates`` is
  ``NonRunningStates`` (set in this app's ``host.json``), so the extension refuses a second
  start of a running instance too.
- A failed experiment is resumed from its stored state (:func:`resume_plan`): the orchestration
  starts again under the same id, at prepare when nothing was prepared, else at the next round,
  which asks the configurations still pending first; stored evaluations are neither sent nor
  evaluated again.

References:
    Durable Functions documentation: "Handling errors in Durable Functions" (automatic retry on
    failure, ``RetryOptions``), "Manage instances in Durable Functions" (start a new instance
    with an existing instance id) and the host.json reference
    (``overridableExistingInstanceStates``: ``AnyState`` or ``NonRunningStates``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:
    from core.experiment.engine import Experiment

#: The wait before an activity's first retry, in milliseconds
#: (``RetryOptions.first_retry_interval_in_milliseconds``). The Python SDK sends no back-off
#: coefficient, so every retry waits as long: a storage outage of up to
#: ``(ACTIVITY_MAX_ATTEMPTS - 1) * ACTIVITY_FIRST_RETRY_MS`` is ridden out.
ACTIVITY_FIRST_RETRY_MS = 15_000
#: Tries of one activity call in all, the first included (``RetryOptions.max_number_of_attempts``).
ACTIVITY_MAX_ATTEMPTS = 5

#: Runtime statuses of an orchestration that ended without finishing: its id may start again.
RESTARTABLE_STATUSES = ("Failed", "Terminated", "Canceled")
#: The runtime status of an orchestration that finished.
COMPLETED_STATUS = "Completed"


def start_refusal(runtime_status: str | None) -> str | None:
    """Why an orchestration may not be started under an id whose instance has
    ``runtime_status``, or None when it may: no instance (None) or one that ended without
    finishing (:data:`RESTARTABLE_STATUSES`). Every other status (``Pending``, ``Running``,
    ``ContinuedAsNew``, ``Suspended``, or one this code does not know) counts as running."""
    if runtime_status is None or runtime_status in RESTARTABLE_STATUSES:
        return None
    if runtime_status == COMPLETED_STATUS:
        return "it completed"
    return f"it is still running ({runtime_status})"


@dataclass(frozen=True)
class ResumePlan:
    """What resuming an experiment does.

    Attributes:
        outcome: ``"resume"`` (start the orchestration with :attr:`input`), ``"running"`` or
            ``"completed"`` (refused: the orchestration is under way, or finished), or
            ``"unknown"`` (nothing is stored under the id).
        input: the orchestration's input when resumed, else None: ``{"experiment_id"}`` for a
            prepared experiment (the next round), plus ``"prepare": true`` for one whose stored
            request was never prepared.
        message: one line saying what happens or why not.
    """

    outcome: str
    input: Mapping[str, Any] | None
    message: str


def resume_plan(experiment: Experiment, runtime_status: str | None) -> ResumePlan:
    """How to resume ``experiment`` (a ``core.experiment.Experiment``) whose orchestration has
    ``runtime_status`` (None: no orchestration has its id, say its history was purged).

    Raises:
        StoreError: the store cannot be read.
    """
    experiment_id = experiment.experiment_id
    refusal = start_refusal(runtime_status)
    if refusal is not None:
        outcome = "completed" if runtime_status == COMPLETED_STATUS else "running"
        return ResumePlan(outcome, None, f"experiment {experiment_id} is not resumed: {refusal}")
    ref = {"experiment_id": experiment_id}
    if experiment.exists():
        summary = experiment.summary()
        return ResumePlan("resume", ref, f"experiment {experiment_id} resumes at its next round: "
                                         f"{summary.evaluated} of {summary.planned} configurations told, "
                                         f"{summary.pending} pending")
    if experiment.has_request():
        return ResumePlan("resume", {**ref, "prepare": True}, f"experiment {experiment_id} resumes at prepare")
    return ResumePlan("unknown", None, f"no experiment {experiment_id!r}")


__all__ = ["ACTIVITY_FIRST_RETRY_MS", "ACTIVITY_MAX_ATTEMPTS", "COMPLETED_STATUS", "RESTARTABLE_STATUSES",
           "ResumePlan", "resume_plan", "start_refusal"]
