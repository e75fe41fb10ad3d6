"""The experiment engine: one experiment's state in a ``Files`` store and its steps.

The same steps serve the local runner (``ragtune optimize``, a pool of worker threads) and the
Durable Functions (one activity or queue-triggered function per step, on any instance):

1. prepare: :meth:`Experiment.create` stores the spec and a new study;
2. ask: :meth:`Experiment.ask` returns ``n`` distinct untried configurations (configurations
   asked before and never told come back first, so a retried step loses nothing);
3. evaluate: :meth:`Experiment.evaluate` runs one configuration and stores its result;
4. tell: :meth:`Experiment.tell` tells the study what the *stored* results say (a score that
   arrives any other way is never believed);
5. report: :meth:`Experiment.build_report` (:mod:`core.experiment.report`).

Layout under ``experiments/<experiment id>/`` in the store:

- ``request.json``: a request from the network, stored by the starter for prepare to read;
- ``spec.json``: the :class:`~core.experiment.spec.ExperimentSpec`;
- ``notes.json``: what prepare noted (shown in the report's ``notes``);
- ``study.json``: the study's state (``Study.to_json``);
- ``results/<configuration key>.json``: each evaluation's full result;
- ``queued/<configuration key>``: an empty marker once its evaluation message was sent;
- ``tried/<configuration key>``: an empty marker once a delivery of its evaluation message
  failed or came again after one that did not finish (what a poison message must find, see
  :meth:`Experiment.record_poisoned`);
- ``texts/<sha256>.txt``: full texts of messages that were cut to travel (see :meth:`Experiment.cap`);
- ``fidelity.json``: with multi-fidelity, the golden question ids and the successive-halving
  state (``core.optimization.halving.Halving``: per-question scores, decisions, pending rungs);
- ``progress.json``: what the runs so far cost (the local runner);
- ``report.json``: the final report.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import weakref
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from core.errors import ConfigError, DamagedFileError, EvaluationError, RagtuneError, StoreError, is_transient
from core.evaluation.waits import merge_waits, wait_timings
from core.experiment.report import build_report
from core.experiment.spec import ExperimentSpec
from core.experiment.types import (MAX_MESSAGE_BYTES, EvaluationOutcome, EvaluationRequest, ExperimentSummary,
                                   cut_text, evaluation_seconds)
from core.metrics.retrieval import aggregate
from core.optimization import Configuration
from core.optimization.fidelity import Decision
from core.optimization.halving import Halving, per_question_scores
from core.optimization.study import Study
from core.reports.files import is_safe_id, json_type, parse_json, read_if_present, read_json, shown_key
from core.reports.keys import EXPERIMENTS_PREFIX

if TYPE_CHECKING:
    from core.reports.files import Files

logger = logging.getLogger(__name__)

#: Store requests in flight at once when a step reads or writes many objects (a round's
#: results, a report's, a round's messages): each is a network round trip to Blob or S3.
STORE_REQUESTS_AT_ONCE = 8

#: The type of each field a stored evaluation result may hold (``null`` allowed where listed),
#: checked when it is read back so a damaged result names its file instead of failing later.
_RESULT_FIELDS: dict[str, tuple[type, ...]] = {
    "key": (str,), "configuration": (dict,), "status": (str,), "error": (str, type(None)),
    "metrics": (dict, type(None)), "retrieval": (dict, type(None)), "answers": (dict, type(None)),
    "timings": (dict, type(None)), "timings_ms": (dict, type(None)), "per_question": (dict, type(None)),
    "cost": (dict, type(None)), "models": (dict, type(None)), "n_questions": (int, type(None)),
}


def _each(fn: Callable[[Any], Any], items: list[Any]) -> list[Any]:
    """``[fn(item) for item in items]``, up to :data:`STORE_REQUESTS_AT_ONCE` at a time, in
    order. The first exception is raised once the calls in flight end; no call starts after a
    call failed (a store that is down is not asked once per item)."""
    if len(items) <= 1:
        return [fn(item) for item in items]
    from concurrent.futures import ThreadPoolExecutor

    failed = threading.Event()
    errors: list[BaseException] = []

    def call(item: Any) -> Any:
        if failed.is_set():
            return None  # not made: an earlier call failed
        try:
            return fn(item)
        except BaseException as exc:
            errors.append(exc)
            failed.set()
            raise

    with ThreadPoolExecutor(max_workers=min(STORE_REQUESTS_AT_ONCE, len(items)),
                            thread_name_prefix="ragtune-store") as pool:
        futures = [pool.submit(call, item) for item in items]
        for future in futures:
            future.exception()  # wait for every call (those after a failure return at once)
    if errors:
        raise errors[0]
    return [future.result() for future in futures]


#: Experiments of one store whose spec and last-read study a process remembers (least recently
#: used forgotten first), so that each evaluation message does not read and parse both again.
REMEMBERED_EXPERIMENTS = 16


class _Remembered:
    """What this process read of one store's recent experiments, by experiment id: the spec
    (stored once, never changed) and the last study read (asked trials are never taken back,
    so a study that holds a configuration's trial answers for it later too). Thread-safe; at
    most :data:`REMEMBERED_EXPERIMENTS` experiments. Nothing here removes an experiment from a
    store; one removed by hand while a process runs stays known to that process's store
    object (its late messages are evaluated as before the removal)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: OrderedDict[str, dict[str, Any]] = OrderedDict()

    def get(self, experiment_id: str, what: str) -> Any:
        with self._lock:
            item = self._items.get(experiment_id)
            if item is None:
                return None
            self._items.move_to_end(experiment_id)
            return item.get(what)

    def put(self, experiment_id: str, what: str, value: Any) -> None:
        with self._lock:
            self._items.setdefault(experiment_id, {})[what] = value
            self._items.move_to_end(experiment_id)
            while len(self._items) > REMEMBERED_EXPERIMENTS:
                self._items.popitem(last=False)

    def reading(self, experiment_id: str, what: str) -> Any:
        """A lock to hold while looking up ``what`` and reading it on a miss, so that threads
        that miss at once (a new instance's first messages) read it once."""
        with self._lock:
            item = self._items.setdefault(experiment_id, {})
            self._items.move_to_end(experiment_id)
            return item.setdefault(f"{what}-lock", threading.Lock())


_MEMOS: "weakref.WeakKeyDictionary[Any, _Remembered]" = weakref.WeakKeyDictionary()
_MEMOS_LOCK = threading.Lock()


def _memo_of(files: Files) -> _Remembered | None:
    """The memo of the store object ``files`` (one per object, gone with it: two objects are
    never taken for the same store), or None for an object that cannot be weakly referenced."""
    with _MEMOS_LOCK:
        try:
            memo = _MEMOS.get(files)
            if memo is None:
                memo = _MEMOS[files] = _Remembered()
        except TypeError:
            return None
        return memo


class Experiment:
    """One experiment's state in a ``Files`` store (see the module docstring for the layout).

    Every method loads what it needs and saves what it changed, so any process may run any step;
    steps may be retried.

    Args:
        files: a ``Files`` store (local folder, S3, Blob).
        experiment_id: letters, digits, ``_``, ``.``, ``-``.

    Raises:
        ConfigError: a bad experiment id.
    """

    def __init__(self, files: Files, experiment_id: str) -> None:
        if not is_safe_id(experiment_id):
            raise ConfigError(f"experiment id may only hold letters, digits, '_', '.' and '-', got "
                              f"{cut_text(repr(experiment_id), 80)}")
        self.files = files
        self.experiment_id = experiment_id
        self.prefix = f"{EXPERIMENTS_PREFIX}/{experiment_id}"
        self._spec: ExperimentSpec | None = None  # read once: a stored spec never changes

    # Storage ----------------------------------------------------------------------------------
    def _write(self, name: str, data: Any) -> None:
        self.files.write_bytes(f"{self.prefix}/{name}", json.dumps(data, ensure_ascii=False, allow_nan=False).encode("utf-8"))

    def _where(self, name: str) -> str:
        """The stored file ``name`` as a person finds it (``shown_key``)."""
        return shown_key(self.files, f"{self.prefix}/{name}")

    def _read(self, name: str, expect: type | None = dict) -> Any:
        return read_json(self.files, f"{self.prefix}/{name}", expect)

    def _read_optional(self, name: str, default: Any = None, expect: type | None = dict) -> Any:
        """The stored ``name`` parsed (a JSON object unless ``expect`` says otherwise), or
        ``default`` when it is absent (one request)."""
        data = read_if_present(self.files, f"{self.prefix}/{name}")
        return default if data is None else parse_json(self.files, f"{self.prefix}/{name}", data, expect)

    def _damaged(self, name: str, what: str, problems: list[str]) -> None:
        """Raise DamagedFileError for the stored ``name`` when ``problems`` holds any."""
        if problems:
            raise DamagedFileError(f"{self._where(name)} is not {what}: {'; '.join(problems[:3])}")

    def _has(self, name: str) -> bool:
        return self.files.exists(f"{self.prefix}/{name}")

    def exists(self) -> bool:
        """Whether the experiment was prepared (its spec and study are stored)."""
        return self._has("spec.json") and self._has("study.json")

    def store_request(self, request: Mapping[str, Any]) -> None:
        """Store a validated request (``request.json``) for the prepare step to read, so the
        orchestration's input holds the experiment id only."""
        self._write("request.json", dict(request))

    def request(self) -> dict[str, Any]:
        """The stored request. Raises ``StoreError`` when absent."""
        return self._read("request.json")

    def has_request(self) -> bool:
        """Whether a request is stored (``request.json``) for the prepare step."""
        return self._has("request.json")

    def notes(self) -> list[str]:
        """What prepare noted (a space smaller than the budget, values an override removed)."""
        notes = self._read_optional("notes.json", [], expect=list)
        self._damaged("notes.json", "a list of notes", [f"item {i} is a JSON {json_type(n)}, not a string"
                                                       for i, n in enumerate(notes) if not isinstance(n, str)])
        return notes

    def write_notes(self, notes: list[str]) -> None:
        """Store prepare's notes (``notes.json``), shown in the report."""
        self._write("notes.json", list(notes))

    def _remembered(self, what: str, read: Callable[[], Any], usable: Callable[[Any], bool] = lambda _: True) -> Any:
        """``what`` as this process last read it for this store object, when ``usable``; else
        ``read()`` (once, while other threads asking for it wait), then remembered."""
        memo = _memo_of(self.files)
        if memo is None:
            return read()
        with memo.reading(self.experiment_id, what):
            value = memo.get(self.experiment_id, what)
            if value is None or not usable(value):
                value = read()
                memo.put(self.experiment_id, what, value)
            return value

    def spec(self) -> ExperimentSpec:
        """The stored spec (read once per store object in a process: prepare writes it once and
        nothing changes it). Raises ``StoreError`` when ``spec.json`` is absent,
        ``DamagedFileError`` naming it when it is not valid JSON or not a valid spec."""
        def read() -> ExperimentSpec:
            data = self._read("spec.json")
            try:
                return ExperimentSpec.from_dict(data)
            except (ConfigError, TypeError, ValueError, KeyError, AttributeError) as exc:
                raise DamagedFileError(f"{self._where('spec.json')} is not a valid experiment spec: {exc}") from None

        if self._spec is None:
            self._spec = self._remembered("spec", read)
        return self._spec

    def study_with(self, configuration: Mapping[str, Any]) -> Study:
        """A study that asked ``configuration``, if the stored one did: the study this process
        read last, when it already holds the configuration's trial (trials are never taken
        back), else the stored study, read again (and remembered).

        Raises:
            StoreError: the study cannot be read.
        """
        def asked(study: Study) -> bool:
            try:
                return study.trial_of(study.space.configuration(configuration, check=False)) is not None
            except ConfigError:  # not a configuration of the space: checked on the stored study
                return False

        return self._remembered("study", self.study, asked)

    def study(self) -> Study:
        """The stored ``Study``. Raises ``StoreError`` when ``study.json`` (or ``spec.json``) is
        absent, ``DamagedFileError`` naming the file when it is not valid JSON or not a valid
        study."""
        data = read_json(self.files, f"{self.prefix}/study.json", dict)
        try:
            return Study.from_dict(data, sampler=self.spec().sampler())
        except (ConfigError, TypeError, ValueError, KeyError, AttributeError) as exc:
            raise DamagedFileError(f"{self._where('study.json')} is not a valid study: {exc}") from None

    def save_study(self, study: Study) -> None:
        """Store ``study``'s state."""
        self.files.write_bytes(f"{self.prefix}/study.json", study.to_json().encode("utf-8"))

    def result(self, key: str) -> dict[str, Any] | None:
        """The stored result of configuration ``key``, or None."""
        return self._checked_result(f"results/{key}.json", self._read_optional(f"results/{key}.json"))

    def _checked_result(self, name: str, result: dict[str, Any] | None) -> dict[str, Any] | None:
        """``result`` when each field it holds has its type (``_RESULT_FIELDS``). Raises
        DamagedFileError naming the stored file otherwise."""
        if result is not None:
            self._damaged(name, "an evaluation result", [
                f"{field} is a JSON {json_type(result[field])}, not "
                f"{' or '.join(json_type(k()) for k in kinds)}"
                for field, kinds in _RESULT_FIELDS.items() if field in result and not isinstance(result[field], kinds)])
        return result

    def results(self) -> dict[str, dict[str, Any]]:
        """Every stored result by configuration key."""
        keys = [key for key in self.files.list(f"{self.prefix}/results") if key.endswith(".json")]
        read = _each(lambda key: self._checked_result(key.removeprefix(f"{self.prefix}/"),
                                                      read_json(self.files, key, dict)), keys)
        return {key.rsplit("/", 1)[-1].removesuffix(".json"): result for key, result in zip(keys, read)}

    def results_to_resume(self) -> dict[str, dict[str, Any]]:
        """Every stored result (:meth:`results`), read when a resume starts, before anything is
        evaluated, so a damaged one stops it at once instead of after the new evaluations.

        Raises:
            DamagedFileError: a result that is not valid JSON or not an evaluation result; the
                message names its file and says what to do (delete it to evaluate that
                configuration again).
        """
        try:
            return self.results()
        except DamagedFileError as exc:
            raise DamagedFileError(f"{exc}; delete it to evaluate that configuration again when the experiment "
                                   "is resumed") from None

    def reopen_lost(self, results: Mapping[str, Any], study: Study, halving: Halving | None = None, *,
                    save: bool = True) -> list[str]:
        """Make pending again (``Study.reopen``; with multi-fidelity also ``Halving.forget``)
        every evaluated trial of ``study`` whose result is not among ``results`` (the stored
        ones: a result deleted by hand), so a resume evaluates it again instead of reporting a
        score with no interval, timings or answers behind it.

        Args:
            results: the stored results by configuration key (:meth:`results_to_resume`).
            study: the study, changed in place.
            halving: the multi-fidelity state, changed in place (None: none).
            save: store the study (and the multi-fidelity state) when a trial was reopened.

        Returns:
            The keys reopened, in trial order.
        """
        lost = [t for t in study.trials
                if not t.warm_start and t.status != "pending" and t.configuration.key not in results]
        for trial in lost:
            study.reopen(trial)
            if halving is not None:
                halving.forget(trial.configuration.key)
        if lost and save:
            self.save_study(study)
            if halving is not None:
                self.save_fidelity(halving)
        return [t.configuration.key for t in lost]

    def result_name(self, key: str) -> str:
        """Where configuration ``key``'s result is stored, as a person finds it."""
        return self._where(f"results/{key}.json")

    def stored_keys(self, keys: list[str]) -> list[str]:
        """The keys among ``keys`` whose result is stored, in order (one request per key, up to
        :data:`STORE_REQUESTS_AT_ONCE` at a time)."""
        found = _each(lambda key: self._has(f"results/{key}.json"), keys)
        return [key for key, here in zip(keys, found) if here]

    def write_result(self, key: str, result: Mapping[str, Any]) -> None:
        """Store configuration ``key``'s result."""
        self._write(f"results/{key}.json", dict(result))

    def progress(self) -> dict[str, Any]:
        """What earlier runs cost (``progress.json``), or ``{}``."""
        progress = self._read_optional("progress.json", {})
        problems = [f"{name} is not an object of numbers"
                    for name in ("counts", "timings_s") if name in progress and not (
                        isinstance(progress[name], dict) and all(
                            isinstance(v, (int, float)) and not isinstance(v, bool) for v in progress[name].values()))]
        self._damaged("progress.json", "what earlier runs cost", problems)
        return progress

    def write_progress(self, progress: Mapping[str, Any]) -> None:
        """Store what the runs so far cost."""
        self._write("progress.json", dict(progress))

    def cap(self, text: str, limit: int = MAX_MESSAGE_BYTES) -> str:
        """``text`` as it may travel: unchanged when at most ``limit`` UTF-8 bytes, else cut,
        with the full text stored at ``texts/<sha256>.txt`` and that address at the end."""
        data = text.encode("utf-8")
        if len(data) <= limit:
            return text
        name = f"texts/{hashlib.sha256(data).hexdigest()[:32]}.txt"
        self.files.write_bytes(f"{self.prefix}/{name}", data)
        tail = f" [cut; full text: {self.prefix}/{name}]"
        return cut_text(text, limit - len(tail.encode("utf-8"))) + tail

    # Steps ------------------------------------------------------------------------------------
    @classmethod
    def create(cls, files: Files, spec: ExperimentSpec, study: Study,
               question_ids: list[str] | None = None) -> "Experiment":
        """Store ``spec`` and ``study`` (the prepare step), and with ``spec.multi_fidelity`` and
        ``question_ids`` (golden order) a new ``fidelity.json``; an experiment already stored is
        left as it is (a retried prepare).

        Raises:
            ConfigError: ``study``'s objective differs from ``spec.objective``.
            StoreError: the store cannot be written.
        """
        if study.objective_metric != spec.objective:
            raise ConfigError(f"the study maximises {study.objective_metric}, the spec {spec.objective}")
        experiment = cls(files, spec.experiment_id)
        if not experiment.exists():
            if spec.multi_fidelity and question_ids:
                experiment._write("fidelity.json", {"question_ids": list(question_ids),
                                                    "state": Halving(spec.rungs(question_ids),
                                                                     promotion=spec.promotion).to_dict()})
            experiment._write("spec.json", spec.to_dict())
            experiment.save_study(study)
        return experiment

    # Multi-fidelity ----------------------------------------------------------------------------
    def fidelity(self) -> Halving | None:
        """The experiment's ``Halving`` (multi-fidelity state), or None without rungs.

        Raises:
            ConfigError: the stored state does not match the spec.
        """
        if not self.spec().multi_fidelity:
            return None
        data = self._read_optional("fidelity.json")
        if data is None:
            return None
        ids, state = data.get("question_ids"), data.get("state")
        state = {} if state is None else state
        try:
            if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
                raise ConfigError("question_ids is not a list of question ids")
            if not isinstance(state, dict) or not all(isinstance(state.get(name, {}), dict)
                                                      for name in ("scores", "decisions", "pending", "rungs")):
                raise ConfigError("state, or its scores, decisions, pending or rungs, is not a JSON object")
            return Halving.from_dict(self.spec().rungs(ids), state)
        except (ConfigError, KeyError, TypeError, ValueError, AttributeError) as exc:
            raise DamagedFileError(f"{self._where('fidelity.json')} does not hold this experiment's multi-fidelity "
                                   f"state: {exc}") from None

    def save_fidelity(self, halving: Halving) -> None:
        """Store ``halving``'s state beside its question ids."""
        self._write("fidelity.json", {"question_ids": halving.rungs.question_ids, "state": halving.to_dict()})

    def ask_requests(self, n: int | None = None, study: Study | None = None,
                     halving: Halving | None = None) -> list[EvaluationRequest]:
        """The next round's evaluation requests: :meth:`ask`'s configurations on every question,
        or with multi-fidelity ``Halving.ask``'s work items (promotions first), none once
        ``Halving.stop_reason`` gives a reason. The study (and the multi-fidelity state) are
        saved.

        Args:
            n: how many (None: the sampler's natural batch).
            study: the study (None: the stored one).
            halving: the multi-fidelity state (None: the stored one, if any).
        """
        study = self.study() if study is None else study
        halving = self.fidelity() if halving is None else halving
        if halving is None:
            return [self.evaluation_request(c) for c in self.ask(n, study=study)]
        if halving.stop_reason(study) is not None:
            return []
        items = halving.ask(study, n)
        self.save_study(study)
        self.save_fidelity(halving)
        return [self.evaluation_request(i.configuration, i.rung, i.questions) for i in items]

    def stop_reason(self, study: Study | None = None, halving: Halving | None = None) -> str | None:
        """Why the search ended (``core.optimization.halving.STOP_REASONS``), or None while it
        goes on; without rungs ``"budget"`` or ``"space"`` once the study is finished."""
        study = self.study() if study is None else study
        halving = self.fidelity() if halving is None else halving
        if halving is not None:
            return halving.stop_reason(study)
        if not study.is_finished:
            return None
        return "space" if study.n_asked >= study.space.n_valid else "budget"

    def ask(self, n: int | None = None, study: Study | None = None) -> list[Configuration]:
        """Up to ``n`` configurations to evaluate, recorded as pending and saved.

        Configurations asked before and never told come first (a retried step, a resumed
        run), as many as the budget leaves room for (a budget lowered on resume leaves the
        rest unevaluated); new ones fill up to ``n`` (``Study.ask``: distinct, untried). An
        empty list means the study is finished.

        Args:
            n: how many (>= 1), or None for the sampler's natural batch.
            study: the study to ask (the local runner keeps one in memory); None loads the
                stored one. It is saved either way.
        """
        study = self.study() if study is None else study
        room = max(0, study.max_evals - study.n_evaluated)
        pending = [t.configuration for t in study.pending_trials][:room]
        want = n if n is not None else max(1, int(study.sampler.batch_size(study.space, study.trials)))
        out = pending[:want]
        if len(out) < want:
            out += study.ask(want - len(out))
            self.save_study(study)
        return out

    def evaluation_request(self, configuration: Mapping[str, Any], rung: int = 0,
                           questions: Sequence[str] | None = None) -> EvaluationRequest:
        """The message asking for one evaluation: the experiment id, the configuration and its
        key, and with multi-fidelity the rung and its question ids; nothing the evaluator could
        be misled by (addresses, scores)."""
        config = Configuration(configuration)
        return EvaluationRequest(self.experiment_id, config.key, config.to_dict(), int(rung),
                                 None if questions is None else tuple(questions))

    def enqueued_keys(self) -> set[str]:
        """The configuration keys whose evaluation messages were sent (one listing, not one
        look-up per key)."""
        marker = f"{self.prefix}/queued/"
        return {key.rsplit("/", 1)[-1] for key in self.files.list(f"{self.prefix}/queued") if key.startswith(marker)}

    def mark_enqueued(self, key: str) -> None:
        """Record that configuration ``key``'s evaluation message was sent."""
        self.files.write_bytes(f"{self.prefix}/queued/{key}", b"")

    def enqueue(self, configurations: list[Any], send: Callable[[bytes], Any]) -> tuple[list[str], int]:
        """Send one evaluation message (:class:`EvaluationRequest` as JSON bytes, through
        ``send``) per configuration (or ``EvaluationRequest``, for a rung) not sent before (one
        listing of the markers; a rung above 0 has its own, ``<key>-r<rung>``), each marked
        sent once ``send`` returned; up to :data:`STORE_REQUESTS_AT_ONCE` at a time. A retried
        step sends only what an earlier try did not mark.

        Returns:
            ``(keys, sent)``: every configuration's key, in order, and how many were sent now.

        Raises:
            Exception: what ``send`` or the store raised (the messages before it may be sent).
        """
        messages = [c if isinstance(c, EvaluationRequest) else self.evaluation_request(c) for c in configurations]
        sent_before = self.enqueued_keys()
        todo = list({_marker(m): m for m in messages if _marker(m) not in sent_before}.values())

        def send_one(message: EvaluationRequest) -> None:
            send(message.to_json().encode("utf-8"))
            self.mark_enqueued(_marker(message))

        _each(send_one, todo)
        return [m.key for m in messages], len(todo)

    def mark_tried(self, key: str) -> None:
        """Record that a delivery of configuration ``key``'s evaluation message failed, or came
        again after one that did not finish (``tried/<key>``)."""
        self.files.write_bytes(f"{self.prefix}/tried/{key}", b"")

    def was_tried(self, key: str) -> bool:
        """Whether :meth:`mark_tried` recorded a failed delivery of configuration ``key``."""
        return self._has(f"tried/{key}")

    def admit(self, request: EvaluationRequest, study: Study | None = None) -> tuple[Configuration, Study]:
        """The one check of an evaluation message, from the evaluations queue or its poison
        queue: the experiment is stored, and the message's configuration (its key already
        matched by ``EvaluationRequest.parse``) is in the experiment's space and was asked by
        its study. Nothing is written.

        Args:
            request: the parsed message (only its ids, key and configuration are read).
            study: the study (None: the one this process read last when it holds the
                configuration's trial, else the stored one).

        Returns:
            ``(configuration, study)``: the ``Configuration`` and the study it was checked on.

        Raises:
            ConfigError: no experiment with the message's id is stored, or the configuration is
                outside its space or was never asked.
            StoreError: the store cannot be read (transient: the message comes again).
        """
        missing = ConfigError(f"no experiment {self.experiment_id!r} is stored: the message is not believed")
        if study is None:
            try:
                study = self.study_with(request.configuration)
            except StoreError:
                if not self.exists():  # looked up only when the study cannot be read
                    raise missing from None
                raise
        elif not self.exists():
            raise missing
        config = self.check_configuration(request.configuration, study)
        if request.rung or request.questions is not None:
            halving = self.fidelity()
            if halving is None or request.rung > halving.rungs.last \
                    or list(request.questions or ()) != halving.rungs.questions(request.rung):
                raise ConfigError(f"configuration {config.key}: the message's rung {request.rung} and questions are "
                                  f"not the stored experiment's")
        return config, study

    def check_configuration(self, configuration: Mapping[str, Any], study: Study | None = None) -> Configuration:
        """The ``Configuration`` of ``configuration`` when the study asked for it.

        Raises:
            ConfigError: it is not a valid configuration of the experiment's space, or the study
                never asked for it.
        """
        study = self.study() if study is None else study
        config = study.space.configuration(configuration, check=False)
        if not study.space.contains(config):
            raise ConfigError(f"configuration {config.key} is not in experiment {self.experiment_id}'s space")
        if study.trial_of(config) is None:
            raise ConfigError(f"configuration {config.key} was never asked in experiment {self.experiment_id}")
        return config

    def outcome(self, key: str, result: Mapping[str, Any], *, stored: bool, objective: str | None = None) -> EvaluationOutcome:
        """The :class:`EvaluationOutcome` of a stored result (its error capped)."""
        objective = objective or self.spec().objective
        metrics = result.get("metrics") or {}
        score = metrics.get(objective) if result.get("status") == "ok" else None
        error = None
        if result.get("status") != "ok":
            error = self.cap(str(result.get("error") or "evaluation failed"))
        elif score is None:
            error = f"objective metric {objective!r} was not computed"
        return EvaluationOutcome(key=key, status=str(result.get("status")), score=score, error=error, stored=stored,
                                 duration_s=evaluation_seconds(result))

    def evaluate(self, request: EvaluationRequest, run: Callable[[Mapping[str, Any]], Mapping[str, Any]], *,
                 study: Study | None = None, delivery: int = 1) -> EvaluationOutcome:
        """Run one evaluation and store its result; a configuration whose OK result is stored is
        not evaluated again.

        Args:
            request: the evaluation asked for (only its key and configuration are read).
            run: evaluates a configuration (``run_single_evaluation`` over the experiment's
                stored data) and returns its result ``{"status", "error", "metrics", ...}``.
            study: the study (None loads the stored one), to check the configuration.
            delivery: which delivery of the message this is (the queue's dequeue count, from
                1); from the second on, and whenever a transient failure is raised, the
                configuration is marked tried (:meth:`mark_tried`), so that its poison message
                is believed.

        Returns:
            The outcome.

        Raises:
            ConfigError: the experiment is not stored, or the configuration is outside its
                space or was never asked (:meth:`admit`; nothing is evaluated or stored).
            Exception: a transient failure (``core.errors.is_transient``: storage, timeouts, 429
                and 5xx answers) is raised, not stored, so the queue delivers the message again.
        """
        config, study = self.admit(request, study)  # the study is kept for the result's round
        stored = self.result(config.key)
        if stored is not None and stored.get("status") == "ok" and int(stored.get("rung") or 0) >= request.rung:
            return self.outcome(config.key, stored, stored=True)
        if delivery > 1:  # an earlier delivery did not finish (it may have crashed the worker)
            self.mark_tried(config.key)
        earlier = stored if stored is not None and stored.get("status") == "ok" and request.rung else None
        try:
            if request.questions is None:
                result = dict(run(config.to_dict()))
            else:
                seen = set(((earlier or {}).get("per_question") or {}).get("ids") or ())
                todo = [q for q in request.questions if q not in seen]  # a promotion scores only the new ones
                result = dict(run(config.to_dict(), todo)) if todo else dict(earlier or {}, per_question={})
                if earlier is not None and result.get("status") == "ok":
                    result = merge_rung(earlier, result, list(request.questions), self.spec().objective)
        except Exception as exc:  # noqa: BLE001 - a permanent failure is recorded, never lost
            if is_transient(exc):
                self._mark_tried_quietly(config.key)
                raise
            logger.exception("configuration %s of experiment %s failed", config.key, self.experiment_id)
            result = {"key": config.key, "configuration": config.to_dict(), "status": "failed",
                      "error": f"{type(exc).__name__}: {exc}", "metrics": {}}
        if result.get("status") != "ok" and result.get("transient"):
            self._mark_tried_quietly(config.key)
            raise TransientEvaluationError(self.cap(str(result.get("error"))))
        result["key"] = config.key
        result["round"] = self._round_of(config, study)
        result["rung"] = request.rung
        if request.questions is not None:
            result["n_questions"] = len(request.questions)
        if request.rung and result.get("status") != "ok" and stored is not None:
            # a failed promotion keeps the lower rung's result: it is noted, never lost
            result = {**stored, "promotion_error": {"rung": request.rung, "error": self.cap(str(result.get("error")))}}
        self.write_result(config.key, result)
        return self.outcome(config.key, result, stored=False)

    def _mark_tried_quietly(self, key: str) -> None:
        """:meth:`mark_tried`, logging a store failure instead of raising it (the failure being
        raised matters more; the next delivery marks it again)."""
        try:
            self.mark_tried(key)
        except StoreError as exc:
            logger.warning("configuration %s of experiment %s: the failed delivery could not be recorded: %s",
                           key, self.experiment_id, exc)

    def _round_of(self, config: Configuration, study: Study | None) -> int | None:
        """The round (``Trial.round``) in which ``config`` was asked, or None."""
        if study is None and not self.exists():
            return None
        trial = (self.study() if study is None else study).trial_of(config)
        return None if trial is None else trial.round

    def record_failure(self, configuration: Mapping[str, Any], error: str, *, study: Study | None = None,
                       rung: int = 0) -> EvaluationOutcome:
        """Store a failed result for ``configuration`` unless an OK result is stored (a
        configuration evaluated after all raises no failure). The caller has checked the
        configuration (:meth:`admit`, or it comes from the study itself).

        Args:
            configuration: the configuration.
            error: why it failed.
            study: the study, for the result's round (None: the stored one).
            rung: the multi-fidelity rung that failed; above 0 the lower rung's OK result is
                kept with a ``promotion_error`` (unless the rung's own result is stored).
        """
        config = Configuration(configuration)
        stored = self.result(config.key)
        if stored is not None and stored.get("status") == "ok":
            if rung and int(stored.get("rung") or 0) < rung:
                stored = {**stored, "promotion_error": {"rung": rung, "error": self.cap(error)}}
                self.write_result(config.key, stored)
                return self.outcome(config.key, stored, stored=False)
            return self.outcome(config.key, stored, stored=True)
        result = {"key": config.key, "configuration": config.to_dict(), "status": "failed", "error": error,
                  "metrics": {}, "round": self._round_of(config, study)}
        self.write_result(config.key, result)
        return self.outcome(config.key, result, stored=False)

    def record_poisoned(self, request: EvaluationRequest, error: str) -> EvaluationOutcome:
        """What a poison message (one that failed on every delivery) does: checked as an
        evaluation message is (:meth:`admit`: a stored experiment, a configuration of its
        space that its study asked), then a failed result is stored with ``error``, unless an OK
        result is stored (nothing failed after all; nothing is written).

        A configuration none of whose deliveries failed (no :meth:`mark_tried` marker: its
        message was never delivered, or is being evaluated for the first time) is not failed:
        a poison message cannot have come from it.

        Returns:
            The outcome (``stored`` True when an OK result was already there).

        Raises:
            ConfigError: the message is not believed (nothing is written).
            StoreError: the store cannot be read or written (the message comes again).
        """
        config, study = self.admit(request)
        stored = self.result(config.key)
        if stored is not None and stored.get("status") == "ok":
            return self.outcome(config.key, stored, stored=True)
        if not self.was_tried(config.key):
            raise ConfigError(f"configuration {config.key} of experiment {self.experiment_id} has no failed delivery "
                              "on record: a poison message for it is not believed")
        return self.record_failure(config.to_dict(), error, study=study, rung=request.rung)

    def tell(self, keys: list[str], *, missing: str | Mapping[str, str] | None = None,
             study: Study | None = None) -> ExperimentSummary:
        """Tell the study what the stored results of ``keys`` say, and save it.

        A pending configuration with no stored result stays pending, unless ``missing`` gives a
        reason (one for all, or per key): then it is told failed with it (a round's timeout). Keys already told
        (a retried step) or never asked are skipped. Scores are read from the stored results
        only: nothing a message or an event carries is believed.

        Returns:
            The summary after telling.
        """
        study = self.study() if study is None else study
        halving = self.fidelity()
        if halving is not None:
            return self._tell_rungs(keys, missing, study, halving)
        by_key = {t.configuration.key: t for t in study.pending_trials}
        wanted = list(dict.fromkeys(key for key in keys if key in by_key))
        for key, result in zip(wanted, _each(self.result, wanted)):
            trial = by_key[key]
            if result is None:
                reason = missing.get(key) if isinstance(missing, Mapping) else missing
                if reason is not None:
                    study.tell(trial, None, error=self.cap(reason))
                continue
            metrics = result.get("metrics") or {}
            if result.get("status") == "ok":
                study.tell(trial, metrics, metrics=metrics)
            else:
                study.tell(trial, None, error=self.cap(str(result.get("error") or "evaluation failed")),
                           metrics=metrics or None)
        self.save_study(study)
        return ExperimentSummary.of(study)

    def _tell_rungs(self, keys: list[str], missing: str | Mapping[str, str] | None, study: Study,
                    halving: Halving) -> ExperimentSummary:
        """:meth:`tell` with multi-fidelity: each key's result at its pending rung goes to
        ``Halving.tell`` (per-question scores of the objective, from the stored result)."""
        asked = {t.configuration.key for t in study.pending_trials}
        for key in dict.fromkeys(keys):  # asked by plain ask(): a rung-0 item on every question
            if key in asked and key not in halving.pending:
                halving.pending[key] = 0
        wanted = [k for k in dict.fromkeys(keys) if k in halving.pending]
        for key, result in zip(wanted, _each(self.result, wanted)):
            rung = halving.pending[key]
            config = next((t.configuration for t in study.trials if t.configuration.key == key), None)
            if config is None:
                continue
            failed_here = (result or {}).get("promotion_error") or {}
            arrived = result is not None and (int(result.get("rung") or 0) >= rung or failed_here.get("rung") == rung)
            if not arrived:
                reason = missing.get(key) if isinstance(missing, Mapping) else missing
                if reason is not None:
                    halving.tell(study, config, rung, None, None, self.cap(reason))
                continue
            if failed_here.get("rung") == rung or result.get("status") != "ok":
                error = failed_here.get("error") or result.get("error") or "evaluation failed"
                halving.tell(study, config, rung, None, result.get("metrics") or None, self.cap(str(error)))
                continue
            metrics = result.get("metrics") or {}
            scores = per_question_scores(result, study.objective_metric)
            if scores is None and rung == 0:
                # no per-question scores (another evaluator): it counts as scored on every question
                halving.pending.pop(key, None)
                study.tell(config, metrics, metrics=metrics)
                if study.trial_of(config).status == "complete":
                    n = len(halving.rungs.order)
                    halving.decisions[key] = Decision("complete", halving.rungs.last, n,
                                                      reason="scored without per-question scores: taken as on "
                                                             "every question")
                continue
            halving.tell(study, config, rung, scores, metrics if scores is not None else None,
                         None if scores is not None else f"no per-question {study.objective_metric} in the result")
        self.save_study(study)
        self.save_fidelity(halving)
        return ExperimentSummary.of(study, halving.complete_keys())

    def summary(self, study: Study | None = None) -> ExperimentSummary:
        """The :class:`ExperimentSummary` of ``study`` (None: the stored one); with
        multi-fidelity its best is among the configurations scored on every question."""
        halving = self.fidelity()
        return ExperimentSummary.of(self.study() if study is None else study,
                                    None if halving is None else halving.complete_keys())

    def build_report(self, extra: Mapping[str, Any] | None = None, study: Study | None = None,
                     prices: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The report from the stored state (see ``core.experiment.report.build_report``;
        ``prices``: model id -> price, for the front's cost per question)."""
        study = self.study() if study is None else study
        halving = self.fidelity()
        extra = {"notes": self.notes(), **(extra or {})}
        return build_report(self.spec(), study, self.results(), extra, halving=halving,
                            stop_reason=self.stop_reason(study, halving), prices=prices)

    def current_report(self) -> dict[str, Any] | None:
        """The final report when written, else the report so far, or None when the experiment
        is not stored."""
        report = self._read_optional("report.json")
        if report is not None:
            return report
        return self.build_report() if self.exists() else None

    def write_report(self, report: Mapping[str, Any] | None = None, prices: Mapping[str, Any] | None = None) -> str:
        """Write ``report.json`` (``report``, or :meth:`build_report` with ``prices``); returns its key."""
        data = dict(report) if report is not None else self.build_report(prices=prices)
        self.files.write_bytes(f"{self.prefix}/report.json",
                               json.dumps(data, ensure_ascii=False, indent=2, allow_nan=False).encode("utf-8"))
        return f"{self.prefix}/report.json"


def merge_rung(earlier: Mapping[str, Any], new: Mapping[str, Any], questions: list[str], objective: str) -> dict[str, Any]:
    """A promotion's result: ``new`` (scored on the rung's questions the lower rung did not
    score) merged with ``earlier`` (the lower rung's OK result) into one result over
    ``questions``: the per-question scores of both, in ``questions``' order, and the rank
    grain's means and 95 % intervals computed again from them
    (``core.metrics.retrieval.aggregate``); other grains are not kept. ``timings`` (seconds),
    ``cost`` (seconds, texts, requests, tokens) and ``n_embedded`` are the sums of both, so
    the configuration's cost covers every rung it was scored on, the index its first rung
    built included (a count one of them did not record is None; ``texts_from_cache``, which
    each rung counts again for the same chunks, is the larger of the two), ``rung_s`` is the
    new evaluation's own seconds (what the progress line of that rung shows), and
    ``n_questions_evaluated``, the questions they cover, is every question of ``questions``
    (a result merged before the sums kept the new evaluation's own and the questions it
    scored: readers divide by ``n_questions_evaluated`` and read both alike). The per-question waits (``per_question["wait_ms"]``) of both are merged the same
    way and ``timings_ms`` computed again from them (``core.evaluation.waits``); when either
    result lacks them, neither is kept.

    Raises:
        EvaluationError: a question of ``questions`` has no score in either result.
    """
    blocks = [earlier.get("per_question") or {}, new.get("per_question") or {}]
    names = list((blocks[1].get("scores") or {}) or (blocks[0].get("scores") or {}))
    by_id: dict[str, dict[str, Any] | None] = {}
    for block in blocks:
        scores = block.get("scores") or {}
        for i, q in enumerate(block.get("ids") or []):
            row = {m: (scores.get(m) or [None] * (i + 1))[i] for m in names}
            by_id[q] = None if all(v is None for v in row.values()) else row
    missing = [q for q in questions if q not in by_id]
    if missing:
        raise EvaluationError(f"no score for {len(missing)} question(s) of the rung, such as {missing[0]!r}")
    rows = [by_id[q] for q in questions]
    summary = aggregate(rows)
    grain = new.get("rank_grain") or earlier.get("rank_grain")
    merged = dict(new)
    merged["per_question"] = {"ids": list(questions),
                              "scores": {m: [None if r is None else r.get(m) for r in rows] for m in names}}
    merged["metrics"] = dict(summary.means)
    merged["retrieval"] = {grain: summary.to_dict()} if grain else {}
    fresh = bool(blocks[1].get("ids"))  # a promotion that scored no new question adds no cost
    merged["rung_s"] = (new.get("timings") or {}).get("total_s") if fresh else 0.0
    if fresh:
        merged["timings"] = _summed(earlier.get("timings"), new.get("timings"))
        merged["cost"] = _summed(earlier.get("cost"), new.get("cost"))
        merged["n_embedded"] = _summed({"n": earlier.get("n_embedded")}, {"n": new.get("n_embedded")})["n"]
    else:
        merged.update({k: earlier.get(k) for k in ("timings", "cost", "n_embedded")})
    merged["n_questions_evaluated"] = len(questions)
    waits = merge_waits(blocks, questions)
    merged.pop("timings_ms", None)
    if waits is not None:
        merged["per_question"]["wait_ms"] = waits
        merged["timings_ms"] = wait_timings(waits)
    if objective not in merged["metrics"]:
        merged["status"], merged["error"] = "failed", f"objective metric {objective!r} was not computed"
    return merged


#: Cost counts two evaluations of one configuration each count in full (the same chunks are
#: looked up in the cache again by every rung): their merge keeps the larger, not the sum.
RECOUNTED = frozenset({"texts_from_cache"})


def _summed(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> dict[str, Any]:
    """Key by key, ``a[k] + b[k]`` where both are numbers (the larger for :data:`RECOUNTED`),
    None where one of them is missing or None (not known); ``b``'s value for anything else."""
    a, b = dict(a or {}), dict(b or {})
    out: dict[str, Any] = {}
    for key in {**a, **b}:
        x, y = a.get(key), b.get(key)
        numbers = [v for v in (x, y) if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if len(numbers) == 2 and key in RECOUNTED:
            out[key] = max(x, y)
        elif len(numbers) == 2:
            out[key] = round(x + y, 3) if isinstance(x, float) or isinstance(y, float) else x + y
        elif x is None or y is None:
            out[key] = None
        else:
            out[key] = y
    return out


def _marker(request: EvaluationRequest) -> str:
    """The ``queued/`` marker of a request: its key at rung 0, ``<key>-r<rung>`` above."""
    return request.key if not request.rung else f"{request.key}-r{request.rung}"


class ExperimentFailed(RagtuneError):
    """An experiment cannot run (for example its prepare step failed); the message is short."""


class TransientEvaluationError(EvaluationError):
    """An evaluation failed for a reason that may go away on a retry (see
    ``core.errors.is_transient``); raised so the queue delivers the message again."""


def report_so_far(files: Files, experiment_id: str) -> dict[str, Any] | None:
    """A running experiment's report so far, from its stored spec, study and results, with
    ``status: "running"`` and the progress' ``timings_s``; None when no experiment has that id.

    Raises:
        StoreError: the stored state cannot be read.
    """
    experiment = Experiment(files, experiment_id)
    if not experiment.exists():
        return None
    report = experiment.build_report()
    progress = experiment.progress()
    if isinstance(progress, dict) and progress.get("timings_s"):
        report["timings_s"] = progress["timings_s"]
    report["status"] = "running"
    return report


__all__ = ["EXPERIMENTS_PREFIX", "Experiment", "ExperimentFailed", "TransientEvaluationError", "report_so_far"]
