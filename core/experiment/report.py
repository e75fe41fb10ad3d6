"""The one experiment report: leaderboard, best configuration, counts, from the stored state.

Both the local runner and the Functions build the report here, from the study and the stored
results, so both count the same way: ``evaluations`` are the study's evaluated trials (failed
ones included, warm starts and pending ones not), ``failed`` the evaluated trials without a
score, ``stored`` those whose result was already stored, ``pending`` those asked and not told.

With multi-fidelity (``core.optimization.halving``) each leaderboard row says on how many
questions the configuration was scored and why it stopped; configurations scored on every
question rank first, the rest after them, marked ``fully_evaluated: false``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from core.evaluation.envelope import envelope
from core.experiment.front import front
from core.inputs import shown_address
from core.optimization.halving import STOP_REASONS

if TYPE_CHECKING:
    from core.experiment.spec import ExperimentSpec
    from core.optimization.halving import Halving
    from core.optimization.study import Study

#: Version of the experiment report's JSON layout.
EXPERIMENT_SCHEMA_VERSION = "1.2"


def _objective_interval(result: Mapping[str, Any], objective: str) -> tuple[float | None, float | None]:
    """The objective's 95 % interval in a stored evaluation result: an answer metric's
    ``scores``, or a retrieval metric's bootstrap interval at the result's rank grain
    (``retrieval[rank_grain].ci_low / ci_high``); ``(None, None)`` when it has none."""
    for metric in (result.get("answers") or {}).get("metrics", []):
        if metric.get("name") == objective:
            return metric["scores"].get("ci_low"), metric["scores"].get("ci_high")
    block = (result.get("retrieval") or {}).get(result.get("rank_grain") or "")
    if isinstance(block, dict) and isinstance(block.get("ci_low"), dict) and isinstance(block.get("ci_high"), dict):
        return block["ci_low"].get(objective), block["ci_high"].get(objective)
    return None, None


def leaderboard(study: Study, results: Mapping[str, Mapping[str, Any]], halving: Halving | None = None,
                n_questions: int | None = None) -> list[dict[str, Any]]:
    """Rows for every told trial, best first (failed ones last, in the order tried); with
    multi-fidelity (``halving``) the configurations scored on every question first, then the
    others by score, each group best first.

    Each row: ``rank`` (None for failed), ``trial``, ``key``, ``status``, ``score``, ``ci_low``
    / ``ci_high`` (the objective's 95 % interval when it has one), ``parameters`` (the
    configuration without its prompt templates), ``duration_s`` (the evaluation's own time,
    one-off start-up such as loading a model excluded), ``error``, ``stored``, ``warm_start``,
    ``late_result``: for a trial told failed (for example past a round's timeout) whose
    evaluation stored a result afterwards, that result's status and score (the optimizer did
    not see it), else None; ``round``: the ``Study.ask`` call that handed the configuration out
    (1-based; None for a warm start or a study stored before rounds were kept); and ``cost``:
    what the evaluation spent (``{seconds, texts_embedded, texts_from_cache, chat_requests,
    replies_from_cache, prompt_tokens, completion_tokens, tokens}``, tokens None when the
    endpoint did not say; ``{}`` when not recorded); ``n_questions``: questions the score is
    over (``n_questions`` of the whole golden file without rungs); ``fully_evaluated``; and
    ``fidelity``: the last multi-fidelity decision (``{verdict, rung, n_questions, best_key,
    p_value, reason}``, ``core.optimization.fidelity.Decision``, with ``waiting``: promoted but
    held back, below the best configuration scored on every question on the questions both saw,
    ``Halving.ready``), or None.
    """
    waiting: set[str] = set()
    if halving is not None:
        promoted = halving.promotions()
        waiting = set(promoted) - set(halving.ready(promoted))
    rows = []
    for trial in study.trials:
        if trial.status == "pending":
            continue
        res = results.get(trial.configuration.key, {})
        ci = _objective_interval(res, study.objective_metric)
        late = None
        if trial.status == "failed" and res.get("status") == "ok":
            late = {"status": "ok", "score": (res.get("metrics") or {}).get(study.objective_metric)}
        rows.append({
            "rank": None, "trial": trial.number, "key": trial.configuration.key, "status": trial.status,
            "score": trial.score, "ci_low": ci[0], "ci_high": ci[1],
            "parameters": {k: v for k, v in dict(trial.configuration).items() if not k.endswith("_text")},
            "duration_s": (res.get("timings") or {}).get("total_s"), "error": trial.error,
            "stored": bool(res.get("stored", False)), "warm_start": trial.warm_start, "late_result": late,
            "round": trial.round, "cost": dict(res.get("cost") or {}),
        })
        decision = None if halving is None else halving.decisions.get(trial.configuration.key)
        row = rows[-1]
        row["fidelity"] = None if decision is None else {**decision.to_dict(),
                                                         "waiting": trial.configuration.key in waiting}
        row["n_questions"] = res.get("n_questions") or (decision.n_questions if decision is not None else n_questions)
        row["fully_evaluated"] = trial.status == "complete" and (decision is None or decision.verdict == "complete")
    done = sorted((r for r in rows if r["score"] is not None),
                  key=lambda r: (not r["fully_evaluated"], -r["score"], r["trial"]))
    for i, row in enumerate(done, start=1):
        row["rank"] = i
    return done + [r for r in rows if r["score"] is None]


def counts(study: Study, results: Mapping[str, Mapping[str, Any]]) -> dict[str, int]:
    """``{evaluations, failed, stored, pending}`` of ``study`` (see the module docstring)."""
    told = [t for t in study.trials if t.status != "pending" and not t.warm_start]
    return {
        "evaluations": len(told),
        "failed": sum(1 for t in told if t.status == "failed"),
        "stored": sum(1 for t in told if (results.get(t.configuration.key) or {}).get("stored")),
        "pending": len(study.pending_trials),
    }


def build_report(spec: ExperimentSpec, study: Study, results: Mapping[str, Mapping[str, Any]],
                 extra: Mapping[str, Any] | None = None, *, halving: Halving | None = None,
                 stop_reason: str | None = None, prices: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The experiment report, on the one report envelope (``core.evaluation.envelope``) with
    the experiment's own schema version and ``experiment_id`` and ``complete`` at its head.

    Args:
        spec: the ``ExperimentSpec``.
        study: the ``Study``.
        results: stored evaluation results by configuration key.
        extra: fields the caller adds or refines (the local runner's corpus details, costs,
            timings); ``counts`` and ``golden`` / ``corpus`` are merged key by key.
        halving: the multi-fidelity state (``core.optimization.halving.Halving``), or None.
        stop_reason: why the search ended (``core.optimization.halving.STOP_REASONS``), or None.
        prices: model id -> price (``Settings.prices``) for the front's cost per question, or None.

    Returns:
        ``{schema_version, kind: "experiment", experiment_id, complete, golden{path, sha256,
        format, n_questions}, corpus{path}, space{n_valid, parameters}, optimizer{name, seed,
        max_evals, n_random_nodes, evals_per_trial}, objective, leaderboard, best{key, score,
        configuration} or None, counts{evaluations, failed, stored, pending}, results{key:
        {status, error, metrics, timings, timings_ms, collection, store_binding, stored, round, cost}}, study,
        models{model id: description}, stop{reason, text}, fidelity{sizes, alpha,
        promotion, rule} or None, front}`` (``models``: every embedding model and reranker the
        results name, from their stored descriptions; see ``core.models.describe``; ``stop``:
        why the search ended, reason None while it goes on; ``front``: see
        ``core.experiment.front.front``).
        Addresses are shown without their query strings.
    """
    best = study.best_trial
    board = leaderboard(study, results, halving, spec.n_questions or None)
    if halving is not None:
        best_key = halving.best_complete()
        best = next((t for t in study.trials if best_key is not None and t.configuration.key == best_key), None)
    report = envelope("experiment", {
        "space": {"n_valid": study.space.n_valid, "parameters": study.space.to_dict()},
        "optimizer": {"name": spec.optimizer, "seed": study.seed, "max_evals": study.max_evals,
                      "n_random_nodes": spec.n_random_nodes, "evals_per_trial": spec.evals_per_trial},
        "objective": study.objective_metric,
        "leaderboard": board,
        "best": None if best is None else {"key": best.configuration.key, "score": best.score,
                                           "configuration": dict(best.configuration)},
        "counts": counts(study, results),
        "results": {key: {k: r.get(k) for k in ("status", "error", "metrics", "timings", "timings_ms",
                                               "collection", "store_binding", "stored", "round", "cost")}
                    for key, r in results.items()},
        "study": study.to_dict(),
        # beside the configurations' model ids: each model's source, revision and weight files' sha256
        "models": {m: d for r in results.values() for m, d in (r.get("models") or {}).items()},
        "stop": {"reason": stop_reason, "text": STOP_REASONS.get(stop_reason or "")},
        "fidelity": None if halving is None else {
            **halving.rungs.to_dict(), "promotion": halving.promotion,
            "rule": "successive halving over a seeded question order; a configuration stops only when the exact "
                    "two-sided sign test on the questions both saw says it is worse than the rung's best"
                    + ("; a promoted one gets the next rung only while it is at least as good as the best "
                       "configuration scored on every question, on the questions both saw, else it waits"
                       if halving.promotion == "incumbent" else "")},
        "front": front(board, results, spec.n_questions or None, prices),
    }, schema_version=EXPERIMENT_SCHEMA_VERSION,
        head={"experiment_id": spec.experiment_id,
              "complete": study.is_finished if halving is None else stop_reason is not None},
        golden={"path": shown_address(spec.golden), "sha256": spec.golden_sha256, "format": spec.golden_format,
                "n_questions": spec.n_questions},
        corpus={"path": shown_address(spec.documents), "fingerprint": spec.corpus_fingerprint})
    for name, value in (extra or {}).items():
        if name in ("counts", "golden", "corpus") and isinstance(value, Mapping):
            report[name] = {**report[name], **value}
        else:
            report[name] = value
    return report


__all__ = ["EXPERIMENT_SCHEMA_VERSION", "build_report", "counts", "leaderboard"]
