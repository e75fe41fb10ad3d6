"""``ragtune evaluate``: every search setup on documents and a golden file, with its gate."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any, Sequence

from core.cli.common import (_branch, _check_expected_documents, _chunk_overlap, _chunk_size, _output, _print_json,
                             _print_plan, _print_warnings)
from core.cli.formats import format_report
from core.cli.gate import _baseline, _gate_exit, _gate_setup
from core.cli.models import _settings, evaluation_models
from core.cli.targets import _evaluate_targets
from core.errors import ConfigError, GoldenError

if TYPE_CHECKING:
    from core.evaluation.retrieval import EvaluateOptions
    from core.golden.types import GoldenSet
    from core.settings import Settings


def cmd_evaluate(args: argparse.Namespace) -> int:
    """``ragtune evaluate --docs DIR --golden FILE``: evaluate every search setup, write the report."""
    from core.evaluation import EvaluateOptions, evaluate_retrieval
    from core.golden import read_golden
    from core.reports import ReportStore, new_run_id

    settings = _settings(args)
    out, files, where = _output(args.out, settings)
    thresholds = list(args.fail_under or [])  # parsed by argparse (_threshold): a malformed one is exit 2
    if args.target or args.targets:
        return _evaluate_targets(args, settings, out, files, where, thresholds)
    if not args.docs:
        print("ragtune evaluate: give --docs DIR, or targets to search in place (--target, --targets)", file=sys.stderr)
        return 2
    if args.chunking == "hierarchical" and (args.chunk_size is not None or args.chunk_overlap is not None):
        print("ragtune evaluate: hierarchical chunking makes one chunk per document element and takes no "
              "--chunk-size or --chunk-overlap", file=sys.stderr)
        return 1
    if args.judge and not args.generate and not args.label_unjudged:
        print("ragtune evaluate: --judge judges answers; it has nothing to judge with --no-generate", file=sys.stderr)
        return 1
    if args.judge_repeat < 1 or args.label_depth < 1:
        raise ConfigError("--judge-repeat and --label-depth must be at least 1")
    from core.chunking import OVERLAP_METHODS

    if args.chunking not in OVERLAP_METHODS and args.chunk_overlap is not None:
        print(f"ragtune evaluate: {args.chunking} chunking takes no --chunk-overlap", file=sys.stderr)
        return 1
    options = EvaluateOptions(
        chunking_method=args.chunking,
        chunk_size=_chunk_size(args), chunk_overlap=_chunk_overlap(args), embed_title=args.title,
        rank_grain=args.rank_by, show_progress=not args.json,
        generate=args.generate, chat_model=settings.chat_model() if args.generate else None,
        judge=settings.judge_model(args.judge) if args.generate or args.label_unjudged else None,
        only=args.only or (), skip=args.skip or (),
        by=tuple(args.by or ()), judge_repeat=args.judge_repeat,
        label_unjudged=args.label_unjudged, label_depth=args.label_depth,
    )
    if args.label_unjudged and options.judge is None:
        raise ConfigError("--label-unjudged grades results with the judge: give --judge MODEL or set RAGTUNE_JUDGE_MODEL")
    models = evaluation_models(settings, args.embedding_model)
    gate_setup = _gate_setup(args, setups=_setup_names(settings, options, models))
    try:
        golden = read_golden(args.golden)  # read once: the report and the stored copy share these bytes
        _check_expected_documents(golden, args.docs)
        if args.dry_run:
            return _dry_run_evaluate(args, settings, options, golden, models)
        store = ReportStore(files)
        branch = _branch(args)
        baseline, note = _baseline(args, store, golden.sha256, branch)
        report = evaluate_retrieval(
            args.docs, args.golden, out_dir=out, embedding_models=models, reranker=settings.reranker(),
            vector_store_config=settings.vector_store_config(out, args.vector_store), options=options,
            on_status=(lambda m: print(m, file=sys.stderr)) if not args.json else None, golden=golden,
        )
    except GoldenError as exc:
        if args.json:
            _print_json({"ok": False, "error": "golden file has errors",
                         "errors": [p.to_dict() for p in exc.problems]})
        print(f"ragtune evaluate: {exc}", file=sys.stderr)
        return 1
    run_id = new_run_id()
    report["run_id"] = run_id
    report["branch"] = branch
    verdict = None
    if thresholds or args.baseline:  # judged before the report is saved, so the report keeps the verdict
        from core.evaluation.gate import judge_gate

        verdict = judge_gate(report, setup=gate_setup, thresholds=thresholds, baseline=baseline, branch=branch,
                             note=note)
        report["gate"] = verdict.to_dict()
    report["golden"]["stored_as"] = store.save_golden(golden.sha256, golden.raw)
    key = store.save_run(run_id, report)
    report["location"] = f"{where}/{key}"
    if args.json:
        _print_json(report)
    else:
        print(format_report(report))
        if options.by:
            from core.evaluation.slices import format_slices

            print(format_slices(report))
    _print_warnings(report["golden"]["warnings"], report["golden"]["path"])  # to stderr, with --json too
    return _gate_exit(verdict)


def _setup_names(settings: Settings, options: EvaluateOptions, models: Sequence[Any]) -> list[str]:
    """The names of the setups a run over documents evaluates (``--only``/``--skip`` applied),
    known before it starts (:func:`core.evaluation.retrieval.build_setups`).

    Raises:
        ConfigError: ``--only``/``--skip`` match no setup or leave none.
    """
    from core.evaluation.retrieval import build_setups, select_setups

    reranker = "reranker" if settings.rerank_provider != "none" else None  # only the "+rerank" suffix is named
    setups = build_setups(options.setups, [m.model_id for m in models], reranker)
    return [s.key for s in select_setups(setups, options.only, options.skip)]


def _dry_run_evaluate(args: argparse.Namespace, settings: Settings, options: EvaluateOptions, golden: GoldenSet,
                      models: Sequence[Any]) -> int:
    """Print what ``evaluate`` would send to chat models and judges
    (:func:`core.evaluation.dry_run.plan_evaluate`); 0. Nothing is loaded, indexed or sent."""
    from core.evaluation.dry_run import plan_evaluate
    from core.rag.template import NUMBER_OF_CHUNKS

    n_setups = len(options.setups) * len(models) * (2 if settings.rerank_provider != "none" else 1)
    plan = plan_evaluate(golden, chat_model=options.chat_model if options.generate else None,
                         judge=options.judge, k=NUMBER_OF_CHUNKS, chunk_size_tokens=options.chunk_size,
                         judge_repeat=options.judge_repeat,
                         label_depth=options.label_depth if options.label_unjudged else 0, n_setups=n_setups)
    if not options.generate:
        plan.notes.append("--no-generate: no answers, so no answer is judged")
    elif options.chat_model is None:
        plan.notes.append("answers come from the extractive baseline: no chat calls")
    return _print_plan(args, plan, settings)

