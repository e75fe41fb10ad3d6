"""The local experiment runner: ``ragtune optimize`` drives one experiment in one process.

It loads the corpus and the golden file once, then loops over the steps of the experiment
engine (:class:`core.experiment.Experiment`): ask a batch (``Experiment.ask``), evaluate it in a
pool of worker threads (``workers``), tell each stored result, publish events, and save the study and what it
cost after every evaluation (``experiments/<id>/study.json`` and ``progress.json``), so a
stopped experiment resumes where it stopped. It ends by writing the one experiment report
(``core.experiment.report``), with the corpus details and costs this runner knows.

Milvus Lite is one process: the worker threads share its one embedded server. For evaluations
in several processes use a Milvus server or pgvector.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from core.errors import ConfigError, DamagedFileError
from core.evaluation.indexing import store_config
from core.evaluation.retrieval import corpus_warnings, package_versions
from core.evaluation.single import Corpus, EvaluationContext, check_objective
from core.experiment.engine import Experiment, TransientEvaluationError
from core.experiment.events import pattern_payload
from core.experiment.prepare import LoadedEvaluator, embed_questions_early, plan_experiment, start_study
from core.experiment.preselection import preselect_models
from core.experiment.spec import DEFAULT_OPTIMIZER, ExperimentSpec
from core.golden import read_golden
from core.inputs import shown_address
from core.reports import LocalFiles, new_run_id
from core.text import plural
from core.vectorstores import MilvusLiteConfig, backend_name
from core.workspace import Workspace

if TYPE_CHECKING:
    from core.experiment.types import EvaluationRequest
    from core.models.chat import ChatModel
    from core.reports.files import Files
    from core.vectorstores.milvus import MilvusConfig
    from core.vectorstores.pgvector import PGVectorConfig

logger = logging.getLogger(__name__)
#: Warnings about the golden file's labels shown before a run (the rest are counted).
GOLDEN_WARNINGS_SHOWN = 10

#: Worker threads when the models are endpoints (network-bound); a local model uses 1.
DEFAULT_ENDPOINT_WORKERS = 4
#: What the answer metrics load on first use, as ``module:function``: unitxt (with pandas and
#: datasets) imported and its metrics fetched from its catalog.
ANSWER_METRICS_MODULE = "core.metrics.unitxt_metrics:preload"


def _import_in_background(target: str) -> Any:
    """Start importing ``target`` (a module name, or ``module:function`` to call that function
    of the module once it is imported) in a daemon thread and return the thread.

    An import is Python work that holds the interpreter lock for seconds, while the first
    evaluation spends its first seconds in the embedding model, which releases it: importing
    meanwhile overlaps the two instead of paying them one after the other. Whoever imports
    the module later waits for this import (Python's import lock) and gets the same module. A
    failure here is only logged: the later import raises it again where it is handled (a
    missing unitxt is a ``ConfigError`` of the unitxt metrics).
    """
    import importlib
    import threading

    module, _, function = target.partition(":")

    def run() -> None:
        try:
            loaded = importlib.import_module(module)
            if function:
                getattr(loaded, function)()
        except Exception as exc:  # noqa: BLE001 - reported by the import that needs the module
            logger.debug("background import of %s failed: %s: %s", target, type(exc).__name__, exc)

    thread = threading.Thread(target=run, name=f"ragtune-import-{module}", daemon=True)
    thread.start()
    return thread


@dataclass
class ExperimentOptions:
    """Settings of one experiment.

    Attributes:
        optimizer: ``"screen"`` (the default, ``core.optimizers.SCREEN``), ``"gam"`` (random
            phase, then a GAM surrogate) or ``"random"``.
        max_evals: the most configurations to evaluate (None: the whole valid space).
        objective: the metric maximised (None: see ``core.experiment.spec.default_objective``).
        seed: the study's seed; the same seed on the same data gives the same sequence.
        n_random_nodes: configurations of the GAM's random phase (at least enough to try every
            categorical value once).
        evals_per_trial: configurations per GAM round with one worker.
        workers: evaluations run at once, in threads; each round asks this many
            configurations (``Study.ask(n)``). None: 1.
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
        cache_replies: reuse cached chat and judge replies (False: ``--no-cache``).
        multi_fidelity: score configurations on a seeded subset of the questions first and
            promote the better ones (``core.optimization.fidelity``; retrieval objectives).
        min_questions: questions of the first rung (None: the default).
        promotion: when a promoted configuration gets its next rung
            (``core.optimization.halving.PROMOTIONS``).
        start: the configuration evaluated first (``core.optimization.defaults.STARTS``, or None);
            ``screen`` takes :data:`core.optimizers.SCREEN`'s.
        prices: model id -> price (``Settings.prices``), for the front's cost per question.
        stop_running_on_interrupt: interrupted (Ctrl-C), the evaluations still running end at
            their next step (``core.evaluation.single.EvaluationInterrupted``: nothing is
            stored for them, their trials stay pending and a resume evaluates them), so the
            run stops within seconds; False: they run to their end first (``ragtune optimize``
            sets it: a terminal's Ctrl-C also stops the Milvus Lite server they use).
    """

    optimizer: str = DEFAULT_OPTIMIZER
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
    workers: int | None = None
    cache_replies: bool = True
    multi_fidelity: bool = False
    min_questions: int | None = None
    promotion: str = "tied"
    start: str | None = None
    prices: dict[str, Any] = field(default_factory=dict)
    stop_running_on_interrupt: bool = False

    def spec(self, experiment_id: str, *, golden: str, documents: str, objective: str,
             corpus_fingerprint: str | None = None) -> ExperimentSpec:
        """The spec of a new experiment run with these options (what ``start_study`` stores):
        ``golden`` and ``documents`` as given, ``objective`` as resolved by the plan."""
        return ExperimentSpec(experiment_id=experiment_id, golden=golden, documents=documents, objective=objective,
                              optimizer=self.optimizer, max_evals=self.max_evals, seed=self.seed,
                              n_random_nodes=self.n_random_nodes, evals_per_trial=self.evals_per_trial,
                              overrides=dict(self.overrides), corpus_fingerprint=corpus_fingerprint,
                              multi_fidelity=self.multi_fidelity, min_questions=self.min_questions,
                              promotion=self.promotion, start=self.start)


@dataclass
class _LocalRun:
    """The state of one :func:`run_experiment` run, filled step by step (internal)."""

    options: ExperimentOptions
    handlers: Sequence[Any]
    workers: int
    experiment: Any = None
    experiment_id: str = ""
    files: Any = None
    where: str = ""
    golden: Any = None
    corpus: Any = None
    context: Any = None
    store_config: Any = None
    space: Any = None
    objective: str | None = None
    notes: list[str] = field(default_factory=list)
    spec: Any = None
    study: Any = None
    warnings: list[Any] = field(default_factory=list)
    preselection: Any = None
    previous: dict[str, Any] = field(default_factory=dict)
    started_at: str = ""
    startup_s: float = 0.0
    iteration: int = 0
    question_ids: list[str] = field(default_factory=list)
    pending: int = 0
    default_embedding: str | None = None
    t_start: float = field(default_factory=time.perf_counter)

    def status(self, level: str, message: str, step: str | None = None) -> None:
        """Tell every handler (``on_status_change``)."""
        for h in self.handlers:
            h.on_status_change(level, message, step)

    def progress(self) -> dict[str, Any]:
        """What the experiment has cost so far, earlier runs included (``progress.json``)."""
        context = self.context
        prev_counts = self.previous.get("counts") or {}
        prev_timings = self.previous.get("timings_s") or {}
        stats = [m.stats() for m in context._cached_models.values()]
        return {
            "started_at": self.started_at, "preselection": self.preselection,
            "counts": {"runs": int(prev_counts.get("runs") or (1 if self.previous else 0)) + 1,
                       "collections_built": context.collections_built + prev_counts.get("collections_built", 0),
                       **{name: sum(int(st[name]) for st in stats) + prev_counts.get(name, 0)
                          for name in ("texts_embedded", "texts_from_cache", "texts_unique")},
                       **{name: value + prev_counts.get(name, 0) for name, value in context.reply_stats().items()}},
            "evaluations": self.iteration,
            "timings_s": {"total_s": round(time.perf_counter() - self.t_start + prev_timings.get("total_s", 0.0), 3),
                          "startup_s": round(self.startup_s + prev_timings.get("startup_s", 0.0), 3)},
        }


def run_experiment(
    docs_dir: str | Path,
    golden_path: str | Path,
    *,
    out_dir: str | Path,
    embedding_models: dict[str, Any],
    chat_models: dict[str, Any] | None = None,
    judge: ChatModel | None = None,
    vector_store_config: MilvusLiteConfig | MilvusConfig | PGVectorConfig | None = None,
    vector_store_configs: dict[str, Any] | None = None,
    options: ExperimentOptions | None = None,
    handlers: Sequence[Any] = (),
    rerankers: dict[str, Any] | None = None,
    default_embedding_models: Sequence[str] | None = None,
    files: Files | None = None,
) -> dict[str, Any]:
    """Search the space of RAG configurations on one corpus and golden file.

    Args:
        docs_dir: the documents: a folder, or an ``s3://`` / Blob address (downloaded under
            ``<out_dir>/inputs``).
        golden_path: the golden file (native or Bedrock): a path or an address.
        out_dir: working folder (``core.workspace.Workspace``: caches, Milvus Lite, stored
            results, experiments).
        embedding_models: embedding model id -> ``EmbeddingModel`` (the space's values).
        chat_models: foundation model id -> ``ChatModel``. With chat models, the space's
            foundation models are these; the extractive baseline (``"extractive"``) joins them
            only when a space file or an override names it; without, it is the only one.
        judge: a ``ChatModel`` judging answers, or None.
        vector_store_config: the vector store (default Milvus Lite in ``out_dir``); the default
            space searches this backend only.
        vector_store_configs: backend name -> configuration, for spaces that list several
            backends in ``vector_store`` (a space file or ``--set vector_store=...``).
        options: optimizer, budget, objective, seed, space, workers.
        handlers: ``EventHandler`` objects hearing progress.
        rerankers: reranker id -> ``Reranker``, for spaces whose ``reranker`` names one.
        default_embedding_models: the embedding model ids of the default space (None: all of
            ``embedding_models``; a space file or ``--set`` may name any of them).
        files: where the experiment is kept (its spec, study, results and report): a
            ``Files`` store such as an S3 or Blob one; None: a local folder store in
            ``out_dir``. Caches and Milvus Lite stay in ``out_dir`` either way.

    Returns:
        The experiment report (``core.experiment.report.build_report``, also written to
        ``experiments/<id>/report.json``), with ``started_at``, ``finished_at``, golden
        warnings, corpus details, ``preselection``, ``vector_store``, ``notes`` (a space
        smaller than the budget, values an override removed), costs in ``counts``
        (``runs``: this run and the earlier ones of a resumed experiment; ``collections_built``,
        ``texts_embedded``, ``texts_from_cache``, ``texts_unique``: each run's distinct texts,
        summed over the runs, so a text two runs asked for counts in each),
        ``timings_s{total_s, startup_s}`` and ``versions``.

    Raises:
        GoldenError / DocumentError / ConfigError: bad input (including an unknown objective
            metric), before any evaluation.
    """
    options = options or ExperimentOptions()
    chat_models = dict(chat_models or {})
    workspace = Workspace.at(out_dir)
    out_dir = workspace.root
    if out_dir.exists() and not out_dir.is_dir():
        raise ConfigError(f"output folder {out_dir} is a file: choose a folder")
    workers = 1 if options.workers is None else int(options.workers)
    if workers < 1:
        raise ConfigError(f"workers must be at least 1, got {options.workers}")
    run = _LocalRun(options=options, handlers=handlers, workers=workers,
                    default_embedding=next(iter(default_embedding_models or embedding_models), None))
    started = datetime.now(timezone.utc)

    if options.objective:
        check_objective(options.objective, has_judge=judge is not None)
    run.golden = read_golden(golden_path)
    run.store_config = store_config(vector_store_config, workspace)
    rerankers = dict(rerankers or {})
    t0 = time.perf_counter()  # reading the models' context lengths loads them
    plan = plan_experiment(run.golden, objective=options.objective, has_judge=judge is not None,
                           embedding_models=embedding_models, chat_models=chat_models,
                           vector_stores=[backend_name(run.store_config)], space_file=options.space_file,
                           overrides=options.overrides, overrides_source=options.overrides_source,
                           default_embedding_models=default_embedding_models, rerankers=list(rerankers))
    space_s = time.perf_counter() - t0
    run.space, run.objective, run.notes = plan.space, plan.objective, list(plan.notes)
    run.where = str(out_dir) if files is None else str(getattr(files, "root", files))
    run.files = LocalFiles(out_dir) if files is None else files
    run.experiment_id = options.experiment_id or new_run_id()
    run.experiment = Experiment(run.files, run.experiment_id)
    if options.experiment_id and not run.experiment.exists():
        raise ConfigError(f"no experiment {run.experiment_id!r} to resume in {run.where}")

    run.context = EvaluationContext(out_dir=out_dir, embedding_models=embedding_models, chat_models=chat_models,
                                    vector_store_config=run.store_config,
                                    vector_store_configs=dict(vector_store_configs or {}),
                                    judge=judge, cache_replies=options.cache_replies, rerankers=rerankers)
    workspace.create()  # marked before the documents load, so they never hold it
    run.context.open_store_early()  # while the documents load
    try:  # until the loop's own finally takes over, a failure closes the store opened above
        _load_inputs(run, docs_dir, golden_path, workspace)
        if options.experiment_id:
            _resume(run)
        else:
            _start(run, docs_dir, golden_path)
        _ready(run, started)
        run.startup_s = round(_start_up(run, embedding_models, rerankers) + space_s, 3)
        # Stored before the first evaluation, so a run stopped at any point from here on resumes.
        if not options.experiment_id:
            Experiment.create(run.files, run.spec, run.study, run.question_ids).write_notes(run.notes)
            run.experiment.write_progress(run.progress())
    except BaseException:
        run.context.close()
        raise
    _drive(run)
    return _finish(run)


def _load_inputs(run: _LocalRun, docs_dir: str | Path, golden_path: str | Path, workspace: Workspace) -> None:
    """Embed the questions early (a new experiment), load the corpus, and say what of the
    documents and the golden file's labels is off."""
    if not run.options.experiment_id:  # a resumed experiment's space is the stored one, read below
        embed_questions_early(run.context, run.golden, run.space)
    run.corpus = corpus = Corpus.load(docs_dir, cache_dir=workspace.inputs)
    for skipped in corpus.skipped:
        run.status("warning", f"document {skipped.document_id} skipped: {skipped.reason}", "documents")
    run.warnings = corpus_warnings(run.golden.questions, corpus.documents, corpus.skipped)
    shown = shown_address(golden_path)
    for w in run.warnings[:GOLDEN_WARNINGS_SHOWN]:  # the handlers say "warning" themselves
        run.status("warning", w.format(shown, severity=False), "golden")
    if len(run.warnings) > GOLDEN_WARNINGS_SHOWN:
        run.status("warning", f"... and {len(run.warnings) - GOLDEN_WARNINGS_SHOWN} more like these about {shown}",
                   "golden")


def _resume(run: _LocalRun) -> None:
    """Take up the stored experiment: check it ran on the same data, read its study, set its
    new budget and what it spent before.

    Raises:
        ConfigError: the golden file or the documents differ from the experiment's.
    """
    options, experiment, experiment_id = run.options, run.experiment, run.experiment_id
    run.spec = spec = experiment.spec()
    changed = [f"{name} ({what})" for name, mine, what in (
        ("golden_sha256", run.golden.sha256, "the golden file"),
        ("corpus_fingerprint", run.corpus.fingerprint, "the documents"))
        if getattr(spec, name) not in (None, "", mine)]
    if changed:
        raise ConfigError(f"experiment {experiment_id} was run on other data: {', '.join(changed)} differ; "
                          "resume it with the same --docs and --golden, or start a new experiment")
    # The stored experiment's optimizer settings win over the command line's.
    for name in ("optimizer", "n_random_nodes", "evals_per_trial"):
        if getattr(spec, name) != getattr(options, name):
            run.status("warning", f"resuming with the experiment's {name} = {getattr(spec, name)!r}, "
                                  f"not {getattr(options, name)!r}", "resume")
    # The stored space and objective win too: the command line's would plan another experiment.
    ignored = [f"--metric {options.objective}"] if options.objective not in (None, spec.objective) else []
    ignored += [f"--space {options.space_file}"] if options.space_file else []
    ignored += ([f"{options.overrides_source or '--set'} {', '.join(sorted(options.overrides))}"]
                if options.overrides and {str(k): tuple(v) for k, v in dict(options.overrides).items()}
                   != spec.overrides else [])  # the spec holds its overrides as tuples
    if ignored:
        run.status("warning", f"resuming with the experiment's own space and objective ({spec.objective}); "
                              f"ignored: {'; '.join(ignored)}", "resume")
    run.study = study = experiment.study()
    run.space = study.space
    run.objective = study.objective_metric
    run.notes = experiment.notes()  # what the experiment noted when it started, not this command's plan
    run.previous = experiment.progress()
    # every stored result is read now, so a damaged one stops the resume before any evaluation
    for text in resume_warnings(experiment, study, options.resume_budget, save=True):
        run.status("warning", text, "resume")
    done = study.n_evaluated
    asked = len(study.pending_trials)
    evaluations = int(run.previous.get("evaluations") or done)  # with rungs: one per rung
    made = plural(done, "evaluation") if evaluations <= done else \
        f"{plural(evaluations, 'evaluation')} of {plural(done, 'configuration')}"
    run.status("info", f"resuming experiment {experiment_id}: {made} done"
                       + (f", {asked} asked but not evaluated (evaluated first)" if asked else ""), "resume")


def resume_warnings(experiment: Experiment, study: Any, budget: int | None, *, save: bool) -> list[str]:
    """What a resume checks and changes in ``study`` before it evaluates anything, and the
    warnings it shows: every stored result is read (``Experiment.results_to_resume``); a trial
    whose result is missing is made pending, to be evaluated again
    (``Experiment.reopen_lost``); and the new ``budget`` (``--max-evals``, None: the stored
    one) is set, never below the evaluations made, with the note a space smaller than it
    gets (``core.experiment.prepare.budget_note``). ``optimize --resume --dry-run`` calls it
    with ``save`` False (nothing stored), the run with True (the study, and with
    multi-fidelity its state, stored as changed).

    Raises:
        DamagedFileError: a stored result or the multi-fidelity state cannot be read (the
            message names the file and what to do).
    """
    from core.experiment.prepare import budget_note

    warnings = []
    halving = experiment.fidelity()
    for key in experiment.reopen_lost(experiment.results_to_resume(), study, halving, save=save):
        warnings.append(f"configuration {key} has no stored result ({experiment.result_name(key)} is missing): "
                        "it is evaluated again")
    done = study.n_evaluated
    if budget is not None:
        if budget < done:
            warnings.append(f"--max-evals {budget} is below the {done} evaluations already made; the budget stays "
                            f"at {done} and nothing more is evaluated")
        note = budget_note(study.space.n_valid, max(budget, done))
        if note:
            warnings.append(note)
        study.set_budget(max(budget, done))
        if save:
            experiment.save_study(study)  # the budget the resumed run works to
    return warnings


def _start(run: _LocalRun, docs_dir: str | Path, golden_path: str | Path) -> None:
    """Pre-select the models (when there are more than kept) and start the study
    (``core.experiment.prepare.start_study``, as the Functions do)."""
    options = run.options
    run.preselection = preselection = preselect_models(
        run.space, run.corpus, run.golden, context=run.context, objective=run.objective,
        keep_embedding=options.keep_embedding, keep_foundation=options.keep_foundation,
        n_questions=options.preselection_questions, seed=options.seed,
    )
    if preselection["ran"]:
        run.space = run.space.with_overrides({"embedding_model": tuple(preselection["embedding_models"]),
                                              "foundation_model": tuple(preselection["foundation_models"])},
                                             source="model pre-selection")
        run.status("info", f"model pre-selection kept {preselection['embedding_models']} and "
                           f"{preselection['foundation_models']}", "preselection")
    new = start_study(options.spec(run.experiment_id, golden=str(golden_path), documents=str(docs_dir),
                                   objective=run.objective, corpus_fingerprint=run.corpus.fingerprint),
                      run.golden, run.space, run.notes, default_embedding_model=run.default_embedding)
    run.spec, run.study, run.notes = new.spec, new.study, list(new.notes)
    run.question_ids = list(new.question_ids)


def _ready(run: _LocalRun, started: datetime) -> None:
    """Fit the context to the space, say what will run, and count the pending trials a
    resumed study evaluates first."""
    study, space = run.study, run.space
    run.context.fit_to_space(space)
    for text in run.notes:
        run.status("warning", text, "space")
    run.status("info", f"experiment {run.experiment_id}: {plural(space.n_valid, 'valid configuration')}; evaluating "
                       f"up to {study.max_evals} with {run.spec.optimizer}"
                       + (f", {run.workers} at a time" if run.workers > 1 else ""), "space")
    # Pending trials of a resumed study were asked but never told: Experiment.ask hands them
    # out first, in one batch, as far as the budget (the experiment's total, evaluations
    # already made included) allows.
    pending = len(study.pending_trials)
    # evaluations so far: with rungs a configuration is evaluated once per rung
    run.iteration = max(study.n_evaluated, int(run.previous.get("evaluations") or 0))
    room = max(0, study.max_evals - study.n_evaluated)
    if pending > room:
        run.status("warning", f"the budget of {study.max_evals} evaluations leaves {pending - room} asked "
                              "configuration(s) unevaluated; resume with a larger --max-evals to evaluate them",
                   "resume")
        pending = room
    run.pending = pending
    run.started_at = run.previous.get("started_at") or started.isoformat(timespec="seconds")
    if run.options.experiment_id:
        run.preselection = run.previous.get("preselection")


def _start_up(run: _LocalRun, embedding_models: dict[str, Any], rerankers: dict[str, Any] | None = None) -> float:
    """One-off start-up, timed once outside the evaluations; returns its seconds.

    Loads each embedding model (its context length was read while building the space), finds
    the files of each reranker the space names (``Reranker.verify``: an ``hf:`` model missing
    from the cache stops the run here, before any evaluation) and opens the vector store.
    Then the answer metrics' library starts importing in the background, overlapping the first evaluation (see :func:`_import_in_background`); what of it
    is left when the first answers are scored is waited for there, in that evaluation's
    seconds. A model that loaded before (embedding the questions while the documents loaded)
    counts with its own load time.
    """
    context = run.context
    t0 = time.perf_counter()
    loaded_before = 0.0
    for model_id in dict.fromkeys(str(c) for c in run.space["embedding_model"].values):
        if model_id in embedding_models:
            model = embedding_models[model_id]
            earlier = getattr(model, "load_s", None)
            if isinstance(earlier, (int, float)):
                loaded_before += float(earlier)
            load = getattr(model, "load", None)
            if callable(load):
                load()
            _ = context.embedding_model(model_id).embedding_dimension
    for name in dict.fromkeys(str(v) for v in run.space["reranker"].values):
        verify = getattr((rerankers or {}).get(name), "verify", None)
        if callable(verify):
            verify()
    if isinstance(run.store_config, MilvusLiteConfig):
        context.vector_store(None, run.store_config, "ragtune_start_up").close()
    if context.with_answers:
        _import_in_background(ANSWER_METRICS_MODULE)
    return time.perf_counter() - t0 + loaded_before


def _drive(run: _LocalRun) -> None:
    """Ask, evaluate in the worker pool, tell, save the progress and publish each pattern,
    until the study asks nothing more. Closes the context at the end; stopped, saves the
    progress once more when the evaluations still running have ended, so the collections they
    built and the texts they embedded are counted (a resume reuses them without counting).

    Stopped with ``stop_running_on_interrupt``, the context's ``stop`` event is set, so the
    evaluations running end at their next step and store nothing; while they end, a line says
    so, and a second interrupt leaves them behind (the progress is saved without waiting and
    the context is left open to them: the process is expected to end).

    Raises:
        KeyboardInterrupt: stopped (said with how to resume).
    """
    import threading
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    experiment, study, workers = run.experiment, run.study, run.workers
    if run.options.stop_running_on_interrupt:
        run.context.stop = threading.Event()
    evaluator = LoadedEvaluator(run.corpus, run.golden, run.context)

    def evaluate(request: EvaluationRequest) -> Any:
        try:
            return experiment.evaluate(request, evaluator, study=study)
        except TransientEvaluationError as exc:  # no queue retries here: recorded, the search goes on
            return experiment.record_failure(request.configuration, str(exc), rung=request.rung)

    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ragtune-eval")
    quieted: dict[str, int] = {}
    interrupted = abandoned = False
    running: dict[Any, Any] = {}
    try:
        while True:
            batch = experiment.ask_requests(run.pending or (workers if workers > 1 else None), study=study)
            run.pending = 0
            if not batch:
                break
            info = getattr(study.sampler, "last_info", None)
            step = "model" if info is not None and getattr(info, "n_model", 0) else "random"
            running = {}
            for request in batch:
                on = f" on {len(request.questions)} questions (rung {request.rung})" if request.questions else ""
                run.status("info", f"evaluating configuration {request.key}{on}", step)
                running[pool.submit(evaluate, request)] = request
            while running:
                finished, _ = wait(list(running), return_when=FIRST_COMPLETED)
                for future in finished:
                    config = running.pop(future)
                    outcome = future.result()  # a transient failure stops the run; resume retries it
                    run.iteration += 1
                    summary = experiment.tell([config.key], study=study)
                    result = experiment.result(config.key) or {}
                    if outcome.status != "ok":
                        run.status("warning", f"configuration {config.key} failed: {outcome.error}", "evaluation")
                    experiment.write_progress(run.progress())
                    trial = study.trial_of(config.configuration)
                    payload = pattern_payload(result, iteration=run.iteration, max_combinations=run.space.n_valid,
                                              vector_store=backend_name(run.store_config), objective=run.objective,
                                              max_evals=study.max_evals, trial=None if trial is None else trial.number,
                                              configurations=study.n_asked, fidelity=_decision(experiment, config.key),
                                              best_score=summary.best_score)
                    records = (result.get("answers") or {}).get("questions", [])
                    for h in run.handlers:
                        h.on_pattern_creation(payload, records)
    except KeyboardInterrupt:
        interrupted = True
        if run.context.stop is not None:
            run.context.stop.set()
        pool.shutdown(wait=False, cancel_futures=True)
        # An evaluation still running loses the Milvus Lite server as the run closes it (a
        # terminal's Ctrl-C stops the server too): pymilvus's reconnect warnings and the
        # evaluation's failure, each with a traceback, would bury the resume hint. Its trial
        # stays pending, so --resume evaluates it again whatever its stored result says.
        for name in ("pymilvus", "core.evaluation.single"):
            quieted[name] = logging.getLogger(name).level
            logging.getLogger(name).setLevel(logging.CRITICAL)
        run.status("warning", f"experiment {run.experiment_id} stopped after {plural(run.iteration, 'evaluation')}; "
                              f"continue it with --resume {run.experiment_id} and the same --docs, --golden and --out",
                   "stopped")
        still = sum(future.running() for future in running)
        if still:
            run.status("warning", f"stopping: waiting for the running evaluation{'s' if still > 1 else ''} to end "
                                  "(Ctrl-C again to quit at once)", "stopping")
        raise
    finally:
        try:
            pool.shutdown(wait=True, cancel_futures=True)  # the evaluations still running end here
        except KeyboardInterrupt:  # interrupted again: they are left behind
            abandoned = interrupted = True
        if interrupted:  # what they built and embedded is spent: a resume reuses it without counting it
            try:
                experiment.write_progress(run.progress())
            except Exception as exc:  # noqa: BLE001 - the stop and its resume hint come first
                logger.warning("the costs of the evaluations cut short were not saved: %s", exc)
        if not abandoned:  # an evaluation left running still uses the shared clients
            run.context.close()
        for name, level in quieted.items():
            logging.getLogger(name).setLevel(level)


def _decision(experiment: Experiment, key: str) -> dict[str, Any] | None:
    """With multi-fidelity, ``key``'s decision after its last rung (``Decision.to_dict``) with
    ``n_questions_total``; None without multi-fidelity or before a decision."""
    halving = experiment.fidelity()
    decision = None if halving is None else halving.decisions.get(key)
    if decision is None:
        return None
    return {**decision.to_dict(), "n_questions_total": halving.rungs.sizes[-1]}


def _finish(run: _LocalRun) -> dict[str, Any]:
    """Write the progress and the experiment report (``experiments/<id>/report.json``) and
    return the report with its ``location``."""
    experiment = run.experiment
    spent = run.progress()
    experiment.write_progress(spent)
    try:
        report = _build_report(run, spent)
    except DamagedFileError as exc:  # a stored file damaged while the experiment ran
        earlier = f"{run.where}/{experiment.prefix}/report.json"
        stale = (f"; {earlier} still holds the report of an earlier run, not this one's "
                 if experiment.files.exists(f"{experiment.prefix}/report.json") else "; ")
        raise DamagedFileError(f"{exc}{stale}(the evaluations are stored: once the file is fixed, or deleted "
                               f"if it is a result, which is then evaluated again, --resume {run.experiment_id} "
                               "writes the report)") from None
    experiment.write_report(report)
    report["location"] = f"{run.where}/{experiment.prefix}/report.json"
    best = report.get("best")  # with rungs, the best over every question
    shown = "-" if not best else f"{best['score']:.3f}"
    run.status("info", f"experiment {run.experiment_id} done: best {run.objective} = {shown}", "done")
    return report


def _build_report(run: _LocalRun, spent: dict[str, Any]) -> dict[str, Any]:
    """The experiment report from the stored state, with what this runner knows (the corpus,
    golden warnings, pre-selection, costs ``spent``, versions).

    Raises:
        DamagedFileError: a stored file the report reads is damaged.
    """
    experiment, study, corpus = run.experiment, run.study, run.corpus
    return experiment.build_report({
        "started_at": run.started_at,
        "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "golden": {"warnings": [w.to_dict() for w in run.warnings]},
        "corpus": {"n_documents": len(corpus.documents), "fingerprint": corpus.fingerprint,
                   "skipped": [{"document_id": s.document_id, "reason": s.reason} for s in corpus.skipped]},
        "preselection": run.preselection,
        "vector_store": backend_name(run.store_config),
        "notes": run.notes,
        "counts": spent["counts"],
        "timings_s": spent["timings_s"],
        "workers": run.workers,
        "versions": package_versions(),
    }, study=study, prices=run.options.prices)
