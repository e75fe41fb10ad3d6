"""The local experiment runner: one process drives a :class:`~core.optimization.study.Study`.

It loads the corpus and the golden file once, then loops: ``study.ask`` -> evaluate each
configuration with ``run_single_evaluation`` -> ``study.tell``, publishing events and saving
the study's state after every evaluation (``experiments/<id>/study.json``), so a stopped
experiment resumes where it stopped. It ends by writing the experiment report
(``experiments/<id>/report.json``): a leaderboard of every configuration tried, the best one,
and what it cost (evaluations, collections built, texts embedded).
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

from core.errors import ConfigError
from core.text import plural

logger = logging.getLogger(__name__)

#: Version of the experiment report's JSON layout.
EXPERIMENT_SCHEMA_VERSION = "1.0"
#: The default objective when the golden file has reference answers, else the retrieval one.
DEFAULT_ANSWER_OBJECTIVE = "unitxt.answer_correctness"
DEFAULT_RETRIEVAL_OBJECTIVE = "mrr"


@dataclass
class ExperimentOptions:
    """Settings of one experiment.

    Attributes:
        optimizer: ``"gam"`` (random phase, then a GAM surrogate) or ``"random"``.
        max_evals: the most configurations to evaluate (None: the whole valid space).
        objective: the metric maximised (None: ``unitxt.answer_correctness`` when questions
            have reference answers, else ``mrr``).
        seed: the study's seed; the same seed on the same data gives the same sequence.
        n_random_nodes: configurations of the GAM's random phase (at least enough to try every
            categorical value once).
        evals_per_trial: configurations evaluated per GAM round.
        space_file: a JSON or YAML file narrowing or widening the default space.
        overrides: ``name -> values`` overrides applied last (from ``--set``).
        overrides_source: where the overrides come from, for messages (``"--set"``, ``"the
            request's space"``).
        resume_budget: with ``experiment_id``, the new ``max_evals`` of the resumed study (None
            keeps the stored one).
        experiment_id: resume this experiment (its ``study.json``) instead of starting anew.
        keep_embedding: with more embedding models than this (or more foundation models than
            ``keep_foundation``), model pre-selection narrows them first.
        keep_foundation: foundation models kept by pre-selection.
        preselection_questions: questions in pre-selection's sample.
        show_progress: show a progress bar.
    """

    optimizer: str = "gam"
    max_evals: int | None = 12
    objective: str | None = None
    seed: int = 0
    n_random_nodes: int = 4
    evals_per_trial: int = 1
    space_file: str | None = None
    overrides: dict[str, Any] = field(default_factory=dict)
    experiment_id: str | None = None
    show_progress: bool = True
    overrides_source: str = "--set"
    resume_budget: int | None = None
    keep_embedding: int = 2
    keep_foundation: int = 3
    preselection_questions: int = 5


def default_objective(golden: Any) -> str:
    """The objective when none is asked for: ``unitxt.answer_correctness`` when the golden
    file's questions have reference answers, else ``mrr``."""
    return DEFAULT_ANSWER_OBJECTIVE if any(q.reference for q in golden.questions) else DEFAULT_RETRIEVAL_OBJECTIVE


def _sampler(options: ExperimentOptions) -> Any:
    from core.optimization.samplers import GAMSampler, RandomSampler

    if options.optimizer == "gam":
        return GAMSampler(n_random_nodes=options.n_random_nodes, evals_per_trial=options.evals_per_trial)
    if options.optimizer == "random":
        return RandomSampler()
    raise ConfigError(f"optimizer must be 'gam' or 'random', got {options.optimizer!r}")


def build_space(options: ExperimentOptions, embedding_models: dict[str, Any], foundation_models: Sequence[str],
                vector_stores: Sequence[str] = ("milvus-lite",), *, default_embedding_models: Sequence[str] | None = None,
                rerankers: Sequence[str] = ()) -> Any:
    """The default space for the models, narrowed or widened by the space file and overrides.

    Args:
        default_embedding_models: the ids the default space holds (None: every one of
            ``embedding_models``); a space file or ``--set`` may name any configured one.
        rerankers: reranker ids a space may name besides ``none``.

    Raises:
        ConfigError: a bad space file or override, a space with no valid configuration, or an
            embedding model, foundation model or reranker that is not configured
            (``embedding_models`` / ``foundation_models`` / ``rerankers``).
    """
    from core.optimization.space import NO_RERANKER, SearchSpace, default_space, unconfigured_values

    lengths = {name: model.max_input_tokens for name, model in embedding_models.items()
               if default_embedding_models is None or name in default_embedding_models}
    if options.space_file:
        space = SearchSpace.from_file(options.space_file, embedding_models=lengths,
                                      foundation_models=list(foundation_models), vector_stores=tuple(vector_stores))
    else:
        space = default_space(lengths, list(foundation_models), tuple(vector_stores))
    if options.overrides:
        space = space.with_overrides(options.overrides, source=options.overrides_source)
    source = " and ".join(filter(None, (options.space_file and f"--space {options.space_file}",
                                        options.overrides and options.overrides_source))) or "the space"
    problems = unconfigured_values({p.name: p.values for p in space.parameters},
                                   {"embedding_model": list(embedding_models),
                                    "foundation_model": list(foundation_models),
                                    "reranker": [NO_RERANKER, *rerankers]}, source)
    if problems:
        raise ConfigError("; ".join(problems))
    return space


def leaderboard(study: Any, results: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows for every trial, best first (failed ones last, in the order tried).

    Each row: ``rank`` (None for failed), ``trial``, ``key``, ``status``, ``score``, ``ci_low``
    / ``ci_high`` (the objective's 95 % interval when it has one), ``parameters`` (the
    configuration without its prompt templates), ``duration_s``, ``error``, ``stored``.
    """
    rows = []
    for trial in study.trials:
        if trial.status == "pending":
            continue
        cfg = dict(trial.configuration)
        res = results.get(trial.configuration.key, {})
        ci = _objective_interval(res, study.objective_metric)
        rows.append({
            "rank": None, "trial": trial.number, "key": trial.configuration.key, "status": trial.status,
            "score": trial.score, "ci_low": ci[0], "ci_high": ci[1],
            "parameters": {k: v for k, v in cfg.items() if not k.endswith("_text")},
            "duration_s": res.get("timings", {}).get("total_s"), "error": trial.error,
            "stored": res.get("stored", False), "warm_start": trial.warm_start,
        })
    done = sorted((r for r in rows if r["score"] is not None), key=lambda r: (-r["score"], r["trial"]))
    for i, row in enumerate(done, start=1):
        row["rank"] = i
    return done + [r for r in rows if r["score"] is None]


def report_fields(experiment_id: str, study: Any, results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The fields every experiment report shares, local or stored, built from the study.

    Returns:
        ``{schema_version, kind: "experiment", experiment_id, space{n_valid, parameters},
        objective, leaderboard (see :func:`leaderboard`), best{key, score, configuration} or
        None, study (``Study.to_dict()``)}``.
    """
    best = study.best_trial
    return {
        "schema_version": EXPERIMENT_SCHEMA_VERSION,
        "kind": "experiment",
        "experiment_id": experiment_id,
        "space": {"n_valid": study.space.n_valid, "parameters": study.space.to_dict()},
        "objective": study.objective_metric,
        "leaderboard": leaderboard(study, results),
        "best": None if best is None else {"key": best.configuration.key, "score": best.score,
                                           "configuration": dict(best.configuration)},
        "study": study.to_dict(),
    }


def _objective_interval(result: dict[str, Any], objective: str) -> tuple[float | None, float | None]:
    for metric in (result.get("answers") or {}).get("metrics", []):
        if metric["name"] == objective:
            return metric["scores"]["ci_low"], metric["scores"]["ci_high"]
    return None, None


def run_experiment(
    docs_dir: str | Path,
    golden_path: str | Path,
    *,
    out_dir: str | Path,
    embedding_models: dict[str, Any],
    chat_models: dict[str, Any] | None = None,
    judge: Any = None,
    vector_store_config: Any = None,
    vector_store_configs: dict[str, Any] | None = None,
    options: ExperimentOptions | None = None,
    handlers: Sequence[Any] = (),
    rerankers: dict[str, Any] | None = None,
    default_embedding_models: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Search the space of RAG configurations on one corpus and golden file.

    Args:
        docs_dir: the documents: a folder, or an ``s3://`` / Blob address (downloaded under
            ``<out_dir>/inputs``).
        golden_path: the golden file (native or Bedrock): a path or an address.
        out_dir: working folder (caches, Milvus Lite, stored results, experiments).
        embedding_models: embedding model id -> ``EmbeddingModel`` (the space's values).
        chat_models: foundation model id -> ``ChatModel``; the extractive baseline
            (``"extractive"``) is always available.
        judge: a ``ChatModel`` judging answers, or None.
        vector_store_config: the vector store (default Milvus Lite in ``out_dir``); the default
            space searches this backend only.
        vector_store_configs: backend name -> configuration, for spaces that list several
            backends in ``vector_store`` (a space file or ``--set vector_store=...``).
        options: optimizer, budget, objective, seed, space.
        handlers: ``EventHandler`` objects hearing progress.
        rerankers: reranker id -> ``Reranker``, for spaces whose ``reranker`` names one.
        default_embedding_models: the embedding model ids of the default space (None: all of
            ``embedding_models``; a space file or ``--set`` may name any of them).

    Returns:
        The experiment report (also written to ``experiments/<id>/report.json``):
        ``{schema_version, experiment_id, golden, corpus, space{n_valid, parameters},
        optimizer{...}, objective, leaderboard[...], best{key, score, configuration}, counts
        {evaluations, failed, stored, collections_built, texts_embedded}, study (its state),
        timings, versions}``.

    Raises:
        GoldenError / DocumentError / ConfigError: bad input (including an unknown objective
            metric), before any evaluation.
    """
    from core.evaluation.retrieval import corpus_warnings, package_versions
    from core.evaluation.single import EXTRACTIVE, Corpus, EvaluationContext, check_objective, run_single_evaluation
    from core.golden import read_golden
    from core.inputs import shown_address
    from core.optimization.events import pattern_payload
    from core.optimization.preselection import preselect_models
    from core.optimization.study import Study
    from core.reports import LocalFiles, new_run_id
    from core.vectorstores import MilvusLiteConfig, backend_name

    options = options or ExperimentOptions()
    chat_models = dict(chat_models or {})
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise ConfigError(f"output folder {out_dir} is a file: choose a folder")
    started = datetime.now(timezone.utc)
    t_start = time.perf_counter()

    def status(level: str, message: str, step: str | None = None) -> None:
        for h in handlers:
            h.on_status_change(level, message, step)

    if options.objective:
        check_objective(options.objective, has_judge=judge is not None)
    golden = read_golden(golden_path)
    objective = options.objective or default_objective(golden)
    sampler = _sampler(options)
    default_store = vector_store_config or MilvusLiteConfig(str(out_dir / "milvus.db"))
    rerankers = dict(rerankers or {})
    space = build_space(options, embedding_models, [EXTRACTIVE, *chat_models], [backend_name(default_store)],
                        default_embedding_models=default_embedding_models, rerankers=list(rerankers))
    files = LocalFiles(out_dir)
    experiment_id = options.experiment_id or new_run_id()
    prefix = f"experiments/{experiment_id}"
    if options.experiment_id and not files.exists(f"{prefix}/study.json"):
        raise ConfigError(f"no experiment {experiment_id!r} to resume in {out_dir}/experiments")

    corpus = Corpus.load(docs_dir, cache_dir=out_dir / "inputs")
    for skipped in corpus.skipped:
        status("warning", f"document {skipped.document_id} skipped: {skipped.reason}", "documents")
    warnings = corpus_warnings(golden.questions, corpus.documents, corpus.skipped)
    for w in warnings:
        status("warning", w.format(shown_address(golden_path)), "golden")
    store_config = default_store
    context = EvaluationContext(out_dir=out_dir, embedding_models=embedding_models, chat_models=chat_models,
                                vector_store_config=store_config, vector_store_configs=dict(vector_store_configs or {}),
                                judge=judge, rerankers=rerankers)

    preselection = None
    previous: dict[str, Any] = {}
    inputs = {"golden_sha256": golden.sha256, "corpus_fingerprint": corpus.fingerprint}
    if options.experiment_id:
        stored_inputs = json.loads(files.read_bytes(f"{prefix}/inputs.json")) if files.exists(f"{prefix}/inputs.json") \
            else {}
        changed = [f"{name} ({what})" for name, what in (("golden_sha256", "the golden file"),
                                                          ("corpus_fingerprint", "the documents"))
                   if stored_inputs.get(name) not in (None, inputs[name])]
        if changed:
            raise ConfigError(f"experiment {experiment_id} was run on other data: {', '.join(changed)} differ; "
                              "resume it with the same --docs and --golden, or start a new experiment")
        # The stored experiment's optimizer settings win over the command line's.
        for name in ("optimizer", "n_random_nodes", "evals_per_trial"):
            if name in stored_inputs and stored_inputs[name] != getattr(options, name):
                status("warning", f"resuming with the experiment's {name} = {stored_inputs[name]!r}, "
                                  f"not {getattr(options, name)!r}", "resume")
                setattr(options, name, stored_inputs[name])
        sampler = _sampler(options)
        study = Study.from_json(files.read_bytes(f"{prefix}/study.json").decode("utf-8"), sampler=sampler)
        space = study.space
        objective = study.objective_metric
        done = study.n_evaluated
        if options.resume_budget is not None:
            if options.resume_budget < done:
                status("warning", f"--max-evals {options.resume_budget} is below the {done} evaluations already "
                                  f"made; the budget stays at {done} and nothing more is evaluated", "resume")
            study.set_budget(max(options.resume_budget, done))
        # What earlier runs cost: progress.json is rewritten after every evaluation (a stopped run
        # has no report); report.json for experiments stored before it existed.
        for name in ("progress.json", "report.json"):
            if files.exists(f"{prefix}/{name}"):
                previous = json.loads(files.read_bytes(f"{prefix}/{name}"))
                break
        asked = len(study.pending_trials)
        status("info", f"resuming experiment {experiment_id}: {plural(done, 'evaluation')} done"
                       + (f", {asked} asked but not evaluated (evaluated first)" if asked else ""), "resume")
    else:
        preselection = preselect_models(
            space, corpus, golden, context=context, objective=objective, keep_embedding=options.keep_embedding,
            keep_foundation=options.keep_foundation, n_questions=options.preselection_questions, seed=options.seed,
        )
        if preselection["ran"]:
            space = space.with_overrides({"embedding_model": tuple(preselection["embedding_models"]),
                                          "foundation_model": tuple(preselection["foundation_models"])},
                                         source="model pre-selection")
            status("info", f"model pre-selection kept {preselection['embedding_models']} and "
                           f"{preselection['foundation_models']}", "preselection")
        study = Study(space, sampler, objective, options.seed, max_evals=options.max_evals)
    status("info", f"experiment {experiment_id}: {plural(space.n_valid, 'valid configuration')}; evaluating up to "
                   f"{study.max_evals} with {options.optimizer}", "space")

    results: dict[str, dict[str, Any]] = {}
    for key_file in files.list(f"{prefix}/results"):
        stored = json.loads(files.read_bytes(key_file))
        results[stored["key"]] = stored

    # Pending trials of a resumed study were asked but never told: evaluate them first, as far
    # as the budget (the experiment's total, evaluations already made included) allows.
    pending = [t.configuration for t in study.pending_trials]
    iteration = study.n_evaluated
    room = max(0, study.max_evals - iteration)
    if len(pending) > room:
        status("warning", f"the budget of {study.max_evals} evaluations leaves {len(pending) - room} asked "
                          "configuration(s) unevaluated; resume with a larger --max-evals to evaluate them", "resume")
        pending = pending[:room]
    started_at = previous.get("started_at") or started.isoformat(timespec="seconds")
    preselection = preselection if not options.experiment_id else previous.get("preselection")
    prev_counts = previous.get("counts") or {}
    prev_timings = previous.get("timings_s") or {}

    def progress() -> dict[str, Any]:
        """What the experiment has cost so far, earlier runs included (``progress.json``)."""
        return {
            "started_at": started_at, "preselection": preselection,
            "counts": {"collections_built": context.collections_built + prev_counts.get("collections_built", 0),
                       "texts_embedded": sum(m.n_embedded for m in context._cached_models.values())
                       + prev_counts.get("texts_embedded", 0)},
            "timings_s": {"total_s": round(time.perf_counter() - t_start + prev_timings.get("total_s", 0.0), 3)},
        }

    # Stored before the first evaluation, so a run stopped at any point from here on resumes.
    if not options.experiment_id:
        files.write_bytes(f"{prefix}/inputs.json", json.dumps({
            **inputs, "optimizer": options.optimizer, "n_random_nodes": options.n_random_nodes,
            "evals_per_trial": options.evals_per_trial, "seed": options.seed, "objective": objective}).encode("utf-8"))
        files.write_bytes(f"{prefix}/study.json", study.to_json().encode("utf-8"))
        files.write_bytes(f"{prefix}/progress.json", json.dumps(progress()).encode("utf-8"))
    try:
        while True:
            batch = pending or study.ask(None)
            pending = []
            if not batch:
                break
            for config in batch:
                info = getattr(study.sampler, "last_info", None)
                step = "model" if info is not None and getattr(info, "n_model", 0) else "random"
                status("info", f"evaluating configuration {config.key}", step)
                result = run_single_evaluation(dict(config), corpus, golden, context=context)
                iteration += 1
                if result["status"] == "ok":
                    study.tell(config, result["metrics"])
                else:
                    study.tell(config, None, error=result["error"] or "evaluation failed")
                    status("warning", f"configuration {config.key} failed: {result['error']}", "evaluation")
                results[config.key] = result
                files.write_bytes(f"{prefix}/results/{config.key}.json",
                                  json.dumps(result, ensure_ascii=False, allow_nan=False).encode("utf-8"))
                files.write_bytes(f"{prefix}/study.json", study.to_json().encode("utf-8"))
                files.write_bytes(f"{prefix}/progress.json", json.dumps(progress()).encode("utf-8"))
                payload = pattern_payload(result, iteration=iteration, max_combinations=space.n_valid,
                                          vector_store=backend_name(store_config), objective=objective,
                                          max_evals=study.max_evals)
                records = (result.get("answers") or {}).get("questions", [])
                for h in handlers:
                    h.on_pattern_creation(payload, records)
    except KeyboardInterrupt:
        status("warning", f"experiment {experiment_id} stopped after {plural(iteration, 'evaluation')}; continue it with "
                          f"--resume {experiment_id} and the same --docs and --golden", "stopped")
        raise

    best = study.best_trial
    spent = progress()
    evaluated = [r for r in results.values() if r["key"] in {t.configuration.key for t in study.trials}]
    shared = report_fields(experiment_id, study, results)
    report = {
        **{k: shared[k] for k in ("schema_version", "kind", "experiment_id")},
        "started_at": started_at,
        "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "golden": {"path": shown_address(golden_path), "sha256": golden.sha256, "format": getattr(golden, "format", "ragtune"),
                   "n_questions": len(golden.questions), "warnings": [w.to_dict() for w in warnings]},
        "corpus": {"path": shown_address(docs_dir), "n_documents": len(corpus.documents), "fingerprint": corpus.fingerprint,
                   "skipped": [{"document_id": s.document_id, "reason": s.reason} for s in corpus.skipped]},
        "space": shared["space"],
        "preselection": preselection,
        "optimizer": {"name": options.optimizer, "seed": study.seed, "max_evals": study.max_evals,
                      "n_random_nodes": options.n_random_nodes, "evals_per_trial": options.evals_per_trial},
        "objective": shared["objective"],
        "vector_store": backend_name(store_config),
        "leaderboard": shared["leaderboard"],
        "best": shared["best"],
        "counts": {
            "evaluations": len(evaluated),
            # Failed trials: a failed evaluation, or one that did not compute the objective.
            "failed": sum(1 for t in study.trials if t.status == "failed" and not t.warm_start),
            "stored": sum(1 for r in evaluated if r.get("stored")),
            # Costs add up over the runs of a resumed experiment.
            **spent["counts"],
        },
        "study": shared["study"],
        "timings_s": spent["timings_s"],
        "versions": package_versions(),
    }
    files.write_bytes(f"{prefix}/report.json", json.dumps(report, ensure_ascii=False, indent=2, allow_nan=False).encode("utf-8"))
    report["location"] = str(out_dir / prefix / "report.json")
    status("info", f"experiment {experiment_id} done: best {objective} = "
                   f"{'-' if best is None else f'{best.score:.3f}'}", "done")
    return report
