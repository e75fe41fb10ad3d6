"""Stand-ins for the Durable Functions host, which does not run on these machines.

- :class:`ReplayHost`, which runs an orchestrator through the SDK's own replay engine, answering
  its activities, events and timers with history events, generation after generation;
- :class:`RecordingClient`, the parts of ``DurableOrchestrationClient`` the functions call,
  recording starts and raised events.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any, Callable

#: Marks, in test tables, an evaluation whose completion event never comes.
RUNNING = object()


class Status:
    """A ``DurableOrchestrationStatus`` with the fields the functions read."""

    def __init__(self, runtime_status: Any = None, custom_status: Any = None, output: Any = None):
        self.runtime_status = runtime_status
        self.custom_status = custom_status
        self.output = output
        self.created_time = datetime(2026, 1, 1, tzinfo=timezone.utc)
        self.last_updated_time = datetime(2026, 1, 1, 0, 5, tzinfo=timezone.utc)


class RecordingClient:
    """The parts of ``DurableOrchestrationClient`` the functions call.

    ``started`` holds ``(orchestrator, instance_id, input)``; ``raised`` holds ``(instance_id,
    event, data)``; ``get_status`` answers an instance in ``failed`` as Failed, one in
    ``statuses`` with its runtime status (``"Completed"``, ``"Terminated"``, ...), a started one
    as Running and an unknown one with ``runtime_status`` None, as the real client does for a
    404. Starting an instance clears its ``failed`` and ``statuses`` entries (it runs again).

    ``start_new`` behaves as the Durable extension does with host.json's
    ``overridableExistingInstanceStates`` set to ``NonRunningStates``: an instance id whose
    orchestration is pending or running is refused (the SDK raises a plain ``Exception`` with
    the extension's message), any other is (re)started. With ``latency_s``, ``get_status`` and
    ``start_new`` each wait that long before answering, as an HTTP round trip to the host does,
    so concurrent callers interleave.
    """

    def __init__(self, latency_s: float = 0.0) -> None:
        self.started: list = []
        self.raised: list = []
        self.gone: set[str] = set()
        self.failed: set[str] = set()
        self.statuses: dict[str, str] = {}
        self.refused: list = []
        self.latency_s = latency_s

    def _runtime(self, instance_id: str) -> str | None:
        if instance_id in self.failed:
            return "Failed"
        if instance_id in self.statuses:
            return self.statuses[instance_id]
        return "Running" if any(i == instance_id for _, i, _ in self.started) else None

    async def start_new(self, name: str, instance_id: str | None = None, client_input: Any = None) -> str:
        import asyncio

        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        if self._runtime(instance_id) in ("Pending", "Running", "ContinuedAsNew", "Suspended"):
            self.refused.append(instance_id)
            raise Exception(f"An Orchestration instance with the status {self._runtime(instance_id)} already exists.")
        self.failed.discard(instance_id)
        self.statuses.pop(instance_id, None)
        self.started.append((name, instance_id, json.loads(json.dumps(client_input))))
        return instance_id

    async def get_status(self, instance_id: str, *args: Any, **kw: Any) -> Status:
        import asyncio

        from azure.durable_functions.models.OrchestrationRuntimeStatus import OrchestrationRuntimeStatus

        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        runtime = self._runtime(instance_id)
        if runtime is None:
            return Status()
        custom = {"Failed": {"phase": "failed"}, "Running": {"phase": "evaluating"}}.get(runtime)
        return Status(OrchestrationRuntimeStatus(runtime), custom)

    async def raise_event(self, instance_id: str, event_name: str, event_data: Any = None, **kw: Any) -> None:
        if instance_id in self.gone:  # the SDK's message for a 410
            raise Exception(f"Instance with ID {instance_id} is gone: either completed or failed")
        self.raised.append((instance_id, event_name, json.loads(json.dumps(event_data))))

    def create_check_status_response(self, request: Any, instance_id: str) -> Any:
        import azure.functions as func

        return func.HttpResponse(json.dumps({"id": instance_id}), status_code=202, mimetype="application/json")


def user_function(app_functions: dict, name: str) -> Callable:
    """The code of function ``name`` as written: for functions with a Durable client binding,
    the function behind the SDK's middleware (which would build a real client from the host's
    JSON), so a :class:`RecordingClient` can be passed."""
    fn = app_functions[name].get_user_function()
    return getattr(fn, "client_function", fn)


class ReplayHost:
    """Runs an orchestrator through the SDK's own replay engine (``Orchestrator.create(fn)``,
    the handler the Functions host calls) the way the Durable extension does: each episode
    replays the whole history of the current generation; the host answers every new action
    (an activity's result, a raised event, a fired timer) by appending history events, and
    ``continue_as_new`` starts a new generation whose history begins empty.

    Args:
        orchestrator: the orchestrator function (``experiment_orchestrator``'s user code).
        activities: activity name -> function of its input.
        event: called with an external event's name; returns its data, or None when the event
            never comes (the round's timer then fires).
        instance_id: the orchestration's instance id.

    Attributes:
        generations: per finished generation, the number of history events it ended with.
        episodes: how many times the orchestrator was replayed.
        statuses: every custom status set, in order.
        activity_calls: the name of every activity run, each try counted.
        retry_options: per activity action, its retry options (None for a plain call).
    """

    def __init__(self, orchestrator: Callable, activities: dict[str, Callable[[Any], Any]],
                 event: Callable[[str], Any], instance_id: str = "instance-1") -> None:
        import azure.durable_functions as df

        self.handle = df.Orchestrator.create(orchestrator)
        self.activities = activities
        self.event = event
        self.instance_id = instance_id
        self.generations: list[int] = []
        self.episodes = 0
        self.statuses: list = []
        self.activity_calls: list = []
        self.retry_options: list = []
        self._clock = datetime(2026, 1, 1, tzinfo=timezone.utc)

    def _event(self, kind: int, **fields: Any) -> dict:
        from datetime import timedelta

        self._clock += timedelta(milliseconds=1)
        self._n += 1
        return {"EventType": kind, "EventId": fields.pop("EventId", -1), "IsPlayed": False,
                "Timestamp": self._clock.isoformat(), **fields}

    def _call_activity(self, action: dict, history: list, seq: int) -> tuple[list, int]:
        """Run an activity as the Durable extension does: ``TaskScheduled``, then
        ``TaskCompleted``, or ``TaskFailed`` (``Reason``: the error's text) when it raises; with
        retry options, each failure is followed by a timer (``TimerCreated``, ``TimerFired``
        after ``firstRetryIntervalInMilliseconds``) and, while tries remain, the activity is
        scheduled again: the history DTFx's retry interceptor writes, and the SDK's
        ``RetryAbleTask`` reads (one timer also after the last failure)."""
        from datetime import timedelta

        from azure.durable_functions.models.actions.ActionType import ActionType
        from azure.durable_functions.models.history.HistoryEventType import HistoryEventType as H

        name, data = action["functionName"], json.loads(action["input"])
        options = action.get("retryOptions") or {}
        retried = action["actionType"] == ActionType.CALL_ACTIVITY_WITH_RETRY
        attempts = int(options.get("maxNumberOfAttempts", 1)) if retried else 1
        self.retry_options.append(options if retried else None)
        for attempt in range(1, attempts + 1):
            self.activity_calls.append(name)
            history.append(self._event(H.TASK_SCHEDULED, EventId=seq, Name=name))
            try:
                result = self.activities[name](data)
            except Exception as exc:  # noqa: BLE001 - what the worker reports as the activity's failure
                history.append(self._event(H.TASK_FAILED, TaskScheduledId=seq, Reason=f"{type(exc).__name__}: {exc}",
                                           Details=""))
                seq += 1
                if retried:
                    fire_at = (self._clock + timedelta(milliseconds=options["firstRetryIntervalInMilliseconds"])).isoformat()
                    history.append(self._event(H.TIMER_CREATED, EventId=seq, FireAt=fire_at))
                    history.append(self._event(H.TIMER_FIRED, TimerId=seq, FireAt=fire_at))
                    seq += 1
                continue
            history.append(self._event(H.TASK_COMPLETED, TaskScheduledId=seq, Result=json.dumps(result)))
            return history, seq + 1
        return history, seq

    def run(self, input_: Any, max_generations: int = 10_000, max_episodes: int = 100) -> tuple[str, Any]:
        """Run to the end; returns ``("completed", output)`` or ``("failed", error text)``."""
        from azure.durable_functions.models.actions.ActionType import ActionType
        from azure.durable_functions.models.history.HistoryEventType import HistoryEventType as H

        for _ in range(max_generations):
            self._n = 0
            history = [self._event(H.ORCHESTRATOR_STARTED), self._event(H.EXECUTION_STARTED, Version="")]
            handled, seq, timers = 0, 0, []
            for _ in range(max_episodes):
                body = json.dumps({"history": history, "instanceId": self.instance_id, "isReplaying": False,
                                   "parentInstanceId": None, "input": json.dumps(input_)})
                self.episodes += 1
                try:
                    state = json.loads(self.handle(body))
                except Exception as exc:  # noqa: BLE001 - the orchestrator raised: Failed
                    self.generations.append(len(history))
                    text, _, data = str(exc).partition("\n\n$OutOfProcData$:")
                    status = json.loads(data).get("customStatus") if data else None
                    if status is not None and (not self.statuses or self.statuses[-1] != status):
                        self.statuses.append(status)
                    return "failed", text
                if state.get("customStatus") is not None and (not self.statuses or self.statuses[-1] != state["customStatus"]):
                    self.statuses.append(state["customStatus"])
                actions = [a for group in state["actions"] for a in group]
                new, handled = actions[handled:], len(actions)
                history.append(self._event(H.ORCHESTRATOR_STARTED))
                continued = None
                for action in new:
                    kind = action["actionType"]
                    if kind in (ActionType.CALL_ACTIVITY, ActionType.CALL_ACTIVITY_WITH_RETRY):
                        history, seq = self._call_activity(action, history, seq)
                    elif kind == ActionType.CREATE_TIMER:
                        history.append(self._event(H.TIMER_CREATED, EventId=seq, FireAt=action["fireAt"]))
                        timers.append((seq, action["fireAt"]))
                        seq += 1
                    elif kind == ActionType.WAIT_FOR_EXTERNAL_EVENT:
                        data = self.event(action["externalEventName"])
                        if data is not None:
                            history.append(self._event(H.EVENT_RAISED, Name=action["externalEventName"],
                                                       Input=json.dumps(data)))
                    elif kind == ActionType.CONTINUE_AS_NEW:
                        continued = json.loads(action["input"])
                if continued is not None:
                    self.generations.append(len(history))
                    input_ = continued
                    break
                if state.get("isDone"):
                    self.generations.append(len(history))
                    return "completed", state.get("output")
                if not new:
                    if not timers:
                        raise RuntimeError("the orchestration waits for something that never comes")
                    timer_id, fire_at = timers.pop(0)
                    history.append(self._event(H.TIMER_FIRED, TimerId=timer_id, FireAt=fire_at))
            else:
                raise RuntimeError(f"a generation took more than {max_episodes} episodes")
        raise RuntimeError(f"more than {max_generations} generations")
