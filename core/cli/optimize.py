"""``ragtune optimize``: search the space of RAG configurations, write the experiment report."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from core.cli.common import EXIT_ALL_FAILED, _check_expected_documents, _output, _print_json, _print_plan
from core.cli.formats import format_experiment
from core.cli.models import _settings
from core.errors import ConfigError, StoreError

if TYPE_CHECKING:
    from core.experiment.runner import ExperimentOptions
    from core.golden.types import GoldenSet
    from core.reports.files import Files


def _space_models(args: argparse.Namespace, files: Files) -> dict[str, dict[str, str]]:
    """The ``hf:`` and ``onnx:`` model names ``optimize``'s space holds (``--set``, ``--space``
    and, resuming, the stored experiment's space), by parameter (``embedding_model``,
    ``reranker``), to be built before the space is checked: each name with where it is written
    (``--set: reranker``, ``SPACE_FILE: reranker`` or ``experiment ID: reranker``).

    Raises:
        ConfigError: a bad ``--set`` or space file, or a name of an unknown kind (``x:...``)
            that is not a configured model's id (the message starts with where the name is:
            ``--set: reranker``, ``SPACE_FILE: reranker`` or the resumed experiment, and lists
            the forms a name may take).
    """
    from core.models.local import name_form
    from core.models.rerank import RERANK_PROVIDERS
    from core.optimization.model_names import space_model_names
    from core.optimization.overrides import parse_overrides

    endpoints = {*RERANK_PROVIDERS, "openai"}  # the prefixes of endpoint models' ids
    spaces = []
    if args.resume:
        from core.experiment.engine import Experiment

        try:
            spaces.append(Experiment(files, args.resume).study().space)
        except (StoreError, ConfigError):
            pass  # the run says what is wrong with the experiment
    overrides = parse_overrides(args.set or [])
    found = space_model_names(overrides, args.space, spaces)
    in_file = space_model_names(None, args.space) if args.space else {}
    in_set = space_model_names(overrides)
    out: dict[str, dict[str, str]] = {name: {} for name in found}
    for parameter, names in found.items():
        for name in names:
            where = (f"--set: {parameter}" if name in in_set[parameter] else
                     f"{args.space}: {parameter}" if name in in_file.get(parameter, ()) else
                     f"experiment {args.resume}: {parameter}")
            try:
                if name != "none" and name_form(name) != "local":
                    out[parameter][name] = where
            except ConfigError as exc:
                if name.partition(":")[0] in endpoints:  # an endpoint model's id is checked by the run
                    continue
                raise ConfigError(f"{where}: {exc}") from None
    return out


def _built(build: Callable[[Sequence[str]], dict[str, Any]], where_of: dict[str, str]) -> dict[str, Any]:
    """``build(names)`` (``Settings.embedding_models`` or ``Settings.rerankers``) over the names
    of ``where_of``, one name at a time, so a model that cannot be built is named with where it
    is written.

    Raises:
        ConfigError: a model that cannot be built or whose files are not found (an ``onnx:``
            folder that is not there, an ``hf:`` model missing its packages or not in the Hugging
            Face cache), the message starting with ``where_of[name]``.
    """
    from core.models.local import name_form

    out = build(())
    for name, where in where_of.items():
        try:
            built = build((name,))
            if name_form(name) == "hf":
                built[name].verify()  # found in the Hugging Face cache now, as the run's start-up finds it
            out.update(built)
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None
    return out


@dataclass(frozen=True)
class _Unloaded:
    """An embedding model as the space sees it in a dry run: its id, and its context length
    when known without loading it or calling an endpoint
    (``core.experiment.prepare.known_context_length``), else None (chunk sizes are then not
    bounded by it until the run)."""

    model_id: str
    max_input_tokens: int | None


def _check_dry_run(args: argparse.Namespace, options: ExperimentOptions, golden: GoldenSet, *, files: Files,
                   where: str, embeddings: dict[str, Any], chat: Any, judge: Any, rerankers: dict[str, Any],
                   vector_store: str, default_embedding: str) -> tuple[tuple[str, ...], int, tuple[str, ...]]:
    """What a run checks before any work, for ``--dry-run``: the objective
    (``core.evaluation.single.check_objective``), the experiment to resume
    (``core.experiment.engine.Experiment``, every stored file read, its results included,
    ``core.experiment.runner.resume_warnings``), and the space with ``--space`` and ``--set``
    (``core.experiment.prepare.plan_experiment``) and the new study
    (``core.experiment.prepare.start_study``), through the same functions
    :func:`core.experiment.runner.run_experiment` calls. Nothing is loaded or sent: chunk sizes
    are bounded by the context lengths known without loading a model
    (``core.experiment.prepare.known_context_length``); the others are checked by the run.

    Returns:
        ``(notes, budget, unchecked)``: the notes the run would show (a space smaller than the
        budget, values the overrides leave without a valid configuration, parameters no
        configuration uses; resuming, the stored experiment's notes, results missing and the
        new budget's), the evaluations budgeted (never more than the space's valid
        configurations; resuming, ``--max-evals`` when given, never below the evaluations
        already made), and the embedding models of the space whose context length only the
        run reads (the default one, whose length bounds the space's chunk sizes).

    Raises:
        ConfigError: an unknown objective, a bad experiment id or none stored under it, a bad
            space file or override, or a space with no valid configuration.
        DamagedFileError: a stored file of the experiment to resume is damaged.
    """
    from core.evaluation.single import check_objective
    from core.experiment.engine import Experiment
    from core.experiment.prepare import known_context_length, plan_experiment, start_study
    from core.experiment.runner import resume_warnings

    if options.objective:
        check_objective(options.objective, has_judge=judge is not None)
    if args.resume:
        experiment = Experiment(files, args.resume)
        if not experiment.exists():
            raise ConfigError(f"no experiment {args.resume!r} to resume in {where}")
        # a resume keeps the stored space, objective and notes: read them as the run does
        study = experiment.study()
        notes = experiment.notes()
        experiment.progress()
        notes += resume_warnings(experiment, study, options.resume_budget, save=False)
        return tuple(notes), study.max_evals, ()
    models = {name: _Unloaded(name, known_context_length(model)) for name, model in embeddings.items()}
    chat_models = {chat.model_id: chat} if chat is not None else {}
    plan = plan_experiment(golden, objective=options.objective, has_judge=judge is not None, embedding_models=models,
                           chat_models=chat_models, vector_stores=[vector_store], space_file=options.space_file,
                           overrides=options.overrides, overrides_source=options.overrides_source,
                           default_embedding_models=[default_embedding], rerankers=list(rerankers))
    # the study the run would start (before pre-selection), for its notes and budget
    new = start_study(options.spec("dry-run", golden=str(args.golden), documents=str(args.docs),
                                   objective=plan.objective),
                      golden, plan.space, plan.notes, default_embedding_model=default_embedding)
    # the run bounds chunk sizes by the default model's length (build_space), read once it is loaded
    unchecked = tuple(str(m) for m in dict.fromkeys(plan.space["embedding_model"].values)
                      if str(m) == default_embedding and models[str(m)].max_input_tokens is None)
    return new.notes, new.study.max_evals, unchecked


def cmd_optimize(args: argparse.Namespace) -> int:
    """``ragtune optimize``: search the space of RAG configurations and write the experiment report."""
    from core.experiment.events import LoggingHandler, ProgressBarHandler
    from core.experiment.runner import DEFAULT_ENDPOINT_WORKERS, ExperimentOptions, run_experiment
    from core.optimization.overrides import parse_overrides

    settings = _settings(args)
    out, files, where = _output(args.out, settings)
    embedding = settings.embedding_model()
    named = _space_models(args, files)
    embeddings = _built(settings.embedding_models, named["embedding_model"])  # a space may name any of them; the default holds the configured one
    rerankers = _built(settings.rerankers, named["reranker"])
    chat = settings.chat_model()
    if args.max_evals is not None and args.max_evals < 1:
        raise ConfigError(f"--max-evals must be at least 1, got {args.max_evals}")
    if args.workers is not None and args.workers < 1:
        raise ConfigError(f"--workers must be at least 1, got {args.workers}")
    if args.min_questions is not None and args.min_questions < 1:
        raise ConfigError(f"--min-questions must be at least 1, got {args.min_questions}")
    endpoints = settings.embedding_provider != "local" or chat is not None
    options = ExperimentOptions(
        optimizer=args.optimizer, max_evals=12 if args.max_evals is None else args.max_evals, objective=args.metric,
        seed=args.seed, resume_budget=args.max_evals if args.resume else None,
        space_file=args.space, overrides=parse_overrides(args.set or []), experiment_id=args.resume,
        show_progress=not args.json, workers=args.workers or (DEFAULT_ENDPOINT_WORKERS if endpoints else 1),
        cache_replies=not args.no_cache, multi_fidelity=args.multi_fidelity, min_questions=args.min_questions,
        prices=dict(settings.prices), stop_running_on_interrupt=True,
    )
    golden = None
    if not args.resume or args.dry_run:
        from core.golden import read_golden

        golden = read_golden(args.golden)
    if not args.resume:  # a resumed experiment checks its data against the stored spec
        _check_expected_documents(golden, args.docs)
    if args.dry_run:
        from core.evaluation.dry_run import plan_optimize
        from core.vectorstores import backend_name

        judge = settings.judge_model(args.judge)
        notes, budget, unchecked = _check_dry_run(
            args, options, golden, files=files, where=where, embeddings=embeddings, chat=chat, judge=judge,
            rerankers=rerankers, default_embedding=embedding.model_id,
            vector_store=backend_name(settings.vector_store_config(out, args.vector_store)))
        for note in notes:
            print(f"warning: {note}", file=sys.stderr)  # as the run's progress shows its notes
        plan = plan_optimize(golden, chat_model=chat, judge=judge, max_evals=budget)
        if unchecked:
            plan.notes.append(f"chunk sizes are checked against the context length of {', '.join(unchecked)} by the "
                              "run, which loads the model to read it")
        return _print_plan(args, plan, settings)
    handlers: list[Any] = [LoggingHandler(quiet=not args.json)]
    bar = None
    if not args.json:
        bar = ProgressBarHandler(options.max_evals or 0, args.metric or "objective")
        handlers.append(bar)
    try:
        report = run_experiment(
            args.docs, args.golden, out_dir=out, embedding_models=embeddings,
            default_embedding_models=[embedding.model_id],
            rerankers=rerankers or None,
            chat_models={chat.model_id: chat} if chat is not None else None,
            judge=settings.judge_model(args.judge), vector_store_config=settings.vector_store_config(out, args.vector_store),
            vector_store_configs=settings.vector_store_configs(out),
            options=options, handlers=handlers, files=files,
        )
    finally:
        if bar is not None:
            bar.close()
    if args.json:
        _print_json(report)
    else:
        print(format_experiment(report))
    if report.get("best") is None and report.get("counts", {}).get("evaluations"):
        print("error: every evaluation failed; the report lists each error", file=sys.stderr)
        return EXIT_ALL_FAILED
    return 0

