"""Progress events of an experiment, as IBM ai4rag publishes them.

An :class:`EventHandler` hears ``on_status_change(level, message, step)`` while the experiment
runs and ``on_pattern_creation(payload, evaluation_results)`` once per evaluated configuration
("pattern"). Payloads follow ai4rag's shape: ``name``, ``iteration``, ``max_combinations``,
``duration_seconds``, ``evaluation.metrics[...]`` and ``settings{chunking, embedding,
retrieval, generation, vector_store}``.

References:
    IBM ai4rag, event handler and pattern payload:
    https://github.com/IBM/ai4rag (``ai4rag/core/experiment``, ``on_pattern_creation``).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Mapping, Protocol, Sequence, runtime_checkable

from core.experiment.types import evaluation_seconds
from core.reports import LocalFiles

logger = logging.getLogger(__name__)


@runtime_checkable
class EventHandler(Protocol):
    """Receives an experiment's progress."""

    def on_status_change(self, level: str, message: str, step: str | None = None) -> None:
        """A status line: ``level`` is ``"info"``, ``"warning"`` or ``"error"``; ``step`` names
        the phase (``"preselection"``, ``"random"``, ``"model"``, ``"evaluation"``, ``"done"``)."""
        ...

    def on_pattern_creation(self, payload: Mapping[str, Any], evaluation_results: Sequence[Mapping[str, Any]]) -> None:
        """One configuration was evaluated: its payload and per-question records."""
        ...


def pattern_payload(
    result: Mapping[str, Any], *, iteration: int, max_combinations: int, vector_store: str, objective: str,
    max_evals: int | None = None, trial: int | None = None, configurations: int | None = None,
    fidelity: Mapping[str, Any] | None = None, best_score: float | None = None,
) -> dict[str, Any]:
    """Build ai4rag's pattern payload from a ``run_single_evaluation`` result.

    Args:
        result: the evaluation result.
        iteration: 1-based number of the evaluation in the experiment (with multi-fidelity a
            promotion to a further rung is an evaluation of its own).
        max_combinations: the number of valid configurations of the search space.
        vector_store: the backend's name (``milvus-lite``, ``milvus``, ``pgvector``).
        objective: the objective metric's name.
        max_evals: the experiment's budget of configurations (None: not known).
        trial: the configuration's 0-based number in the study (None: not known).
        configurations: how many configurations the study has asked so far (None: not known).
        fidelity: with multi-fidelity, the configuration's decision after this rung
            (``core.optimization.fidelity.Decision.to_dict``) with ``n_questions_total``, the
            questions of the last rung; None without.
        best_score: the experiment's best objective value so far (earlier runs of a resumed
            experiment included; with multi-fidelity the best over every question), or None.

    Returns:
        ``{name, iteration, max_combinations, max_evals, trial, configurations, fidelity,
        duration_seconds (this evaluation's own; a promotion's, not its rungs' sum),
        best_score, status, error, objective, evaluation{metrics[{name, evaluator,
        scores{mean, ci_low, ci_high}}]}, settings{chunking, embedding, retrieval, generation,
        vector_store}}``.
    """
    cfg = result.get("configuration", {})
    answers = result.get("answers") or {}
    metrics = [
        {"name": name, "evaluator": "retrieval", "scores": {"mean": value, "ci_low": None, "ci_high": None}}
        for name, value in result.get("metrics", {}).items() if "." not in name
    ] + [
        {"name": m["name"], "evaluator": m["evaluator"], "scores": m["scores"]} for m in answers.get("metrics", [])
    ]
    return {
        "name": f"pattern{iteration}",
        "key": result.get("key"),
        "iteration": iteration,
        "max_combinations": max_combinations,
        "max_evals": max_evals,
        "trial": trial,
        "configurations": configurations,
        "fidelity": dict(fidelity) if fidelity is not None else None,
        "duration_seconds": evaluation_seconds(result),
        "best_score": best_score,
        "status": result.get("status"),
        "error": result.get("error"),
        "objective": {"name": objective, "value": result.get("metrics", {}).get(objective)},
        "evaluation": {"metrics": metrics},
        "settings": {
            "chunking": {k: cfg.get(k) for k in ("chunking_method", "chunk_size", "chunk_overlap")},
            "embedding": {"model_id": cfg.get("embedding_model")},
            "retrieval": {k: cfg.get(k) for k in ("search_mode", "ranker_strategy", "ranker_k", "ranker_alpha",
                                                  "number_of_chunks")},
            "generation": {"model_id": cfg.get("foundation_model"),
                           **{k: cfg.get(k) for k in ("system_message_text", "context_template_text",
                                                      "user_message_text") if k in cfg}},
            "vector_store": result.get("store_binding") or {"backend": vector_store, "collection": result.get("collection")},
        },
    }


class LoggingHandler:
    """Writes status lines to ``logging`` (patterns at debug level).

    Args:
        quiet: log every status line at debug level (when another handler already shows
            them, so warnings are not printed twice).
    """

    def __init__(self, *, quiet: bool = False) -> None:
        self.quiet = quiet

    def on_status_change(self, level: str, message: str, step: str | None = None) -> None:
        """Log ``message`` at ``level`` (debug when ``quiet``)."""
        at = logging.DEBUG if self.quiet else getattr(logging, level.upper(), logging.INFO)
        logger.log(at, "%s%s", f"[{step}] " if step else "", message)

    def on_pattern_creation(self, payload: Mapping[str, Any], evaluation_results: Sequence[Mapping[str, Any]]) -> None:
        """Log the pattern's name and objective."""
        logger.debug("%s: %s", payload.get("name"), payload.get("objective"))


class ProgressBarHandler:
    """A tqdm progress bar over the planned evaluations, with the best score so far.

    When stderr is no terminal (a pipe, a CI log) the bar hides itself and one line per
    evaluation is written instead: ``evaluation 3/12: mrr 0.412 (best 0.417), 12.3 s`` or
    ``evaluation 4/12: failed: <error>``; past the budget (a resume evaluating again a
    configuration whose result was deleted) ``evaluation 13 (configuration 2/12): ...``. The
    count, the budget and the metric's name come from each payload (``iteration``,
    ``max_evals``, ``objective.name``) when it has them.

    With multi-fidelity (a payload with ``fidelity``) the budget counts configurations while a
    configuration may be evaluated once per rung, so the bar counts configurations asked, each
    line names the configuration, the questions it was scored on and what its rung decided,
    and the best score is the best of the configurations scored on every question (a score on
    a subset of the questions is no rival to it): ``evaluation 4 (configuration 3/12, 16 of 293
    questions): mrr 0.918, promoted to the next rung (best on every question 0.880), 0.6 s``.

    Args:
        total: planned evaluations until a payload tells (0: unknown, no total shown).
        objective: the objective metric's name until a payload tells.
        enabled: False hides the bar and the lines.
        lines: write the per-evaluation lines; None (default): exactly when the bar is enabled
            but hid itself because stderr is no terminal.
    """

    def __init__(self, total: int, objective: str, *, enabled: bool = True, lines: bool | None = None) -> None:
        from tqdm.auto import tqdm

        self.objective = objective
        self.total = total
        self.best: float | None = None
        self.count = 0
        self.bar = tqdm(total=total, desc="optimizing", unit="eval", disable=None if enabled else True, dynamic_ncols=True)
        self.lines = bool(enabled and self.bar.disable) if lines is None else lines

    #: Steps whose info lines are shown (the experiment's id, size and resumption).
    SHOWN_STEPS = ("space", "resume", "preselection")

    def on_status_change(self, level: str, message: str, step: str | None = None) -> None:
        """Show warnings, errors and the experiment's start lines above the bar, on stderr
        (whether or not the bar itself shows)."""
        import sys

        if level in ("warning", "error"):
            self.bar.write(f"{level}: {message}", file=sys.stderr)
        elif step in self.SHOWN_STEPS:
            self.bar.write(message, file=sys.stderr)

    def on_pattern_creation(self, payload: Mapping[str, Any], evaluation_results: Sequence[Mapping[str, Any]]) -> None:
        """Advance the bar and show the best objective value so far (or write the line)."""
        import sys

        objective = payload.get("objective") or {}
        value = objective.get("value")
        name = objective.get("name") or self.objective
        fidelity = payload.get("fidelity") or None
        complete = fidelity is None or fidelity.get("verdict") == "complete"
        if payload.get("best_score") is not None:  # the experiment's own, earlier runs included
            self.best = payload["best_score"]
        elif value is not None and complete and (self.best is None or value > self.best):
            self.best = value
        # the payload's own count and budget win: a resumed experiment goes on from its count
        self.count = int(payload.get("iteration") or self.count + 1)
        self.total = int(payload.get("max_evals") or self.total or 0)
        self.bar.total = self.total or None
        self.bar.n = self.count if fidelity is None else int(payload.get("configurations") or self.bar.n)
        self.bar.refresh()
        if self.best is not None:
            self.bar.set_postfix({name: f"{self.best:.3f}"})
        if self.lines:
            print(self._line(payload, value, name, fidelity), file=sys.stderr, flush=True)

    def _line(self, payload: Mapping[str, Any], value: float | None, name: str,
              fidelity: Mapping[str, Any] | None) -> str:
        """One evaluation's line (see the class)."""
        seconds = payload.get("duration_seconds")
        took = f", {seconds:.1f} s" if isinstance(seconds, (int, float)) else ""
        failed = f"failed: {payload.get('error') or 'no ' + name + ' score'}{took}"
        trial = payload.get("trial")
        if fidelity is None:
            where = f"evaluation {self.count}/{self.total}" if self.total else f"evaluation {self.count}"
            if self.total and self.count > self.total and trial is not None:  # a lost result evaluated again
                where = f"evaluation {self.count} (configuration {int(trial) + 1}/{self.total})"
            if value is None:
                return f"{where}: {failed}"
            return f"{where}: {name} {value:.3f}" + (f" (best {self.best:.3f})" if self.best is not None else "") + took
        which = "" if trial is None else f"configuration {int(trial) + 1}" + (f"/{self.total}" if self.total else "")
        n, of = fidelity.get("n_questions"), fidelity.get("n_questions_total")
        scored = f"{n} of {of} questions" if n is not None and of is not None else ""
        where = f"evaluation {self.count}" + (f" ({', '.join(x for x in (which, scored) if x)})" if which or scored else "")
        if value is None:
            return f"{where}: {failed}"
        verdict = fidelity.get("verdict")
        decided = {"complete": "scored on every question", "promote": "promoted to the next rung",
                   "stop": f"stopped: {fidelity.get('reason')}" if fidelity.get("reason") else "stopped"}.get(str(verdict), "")
        best = f" (best on every question {self.best:.3f})" if self.best is not None else ""
        return f"{where}: {name} {value:.3f}" + (f", {decided}" if decided else "") + best + took

    def close(self) -> None:
        """Close the bar."""
        self.bar.close()


class PatternFileHandler:
    """Writes each pattern as ``<folder>/<name>.json`` (payload and per-question records),
    atomically.

    Args:
        folder: where the files go (created).
    """

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)

    def on_status_change(self, level: str, message: str, step: str | None = None) -> None:
        """Status lines are not written."""

    def on_pattern_creation(self, payload: Mapping[str, Any], evaluation_results: Sequence[Mapping[str, Any]]) -> None:
        """Write ``{"payload": ..., "evaluation_results": [...]}`` to ``<name>.json``."""
        data = {"payload": dict(payload), "evaluation_results": list(evaluation_results)}
        LocalFiles(self.folder).write_bytes(
            f"{payload['name']}.json", json.dumps(data, ensure_ascii=False, indent=2, allow_nan=False).encode("utf-8")
        )
