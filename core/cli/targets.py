"""Targets searched in place: ``--target`` and ``--targets``, and ``evaluate`` over them."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.cli.common import (EXIT_ALL_FAILED, _branch, _chunk_overlap, _chunk_size, _print_json, _print_plan,
                             _print_warnings)
from core.cli.formats import format_report
from core.cli.gate import _baseline, _gate_exit, _gate_setup
from core.cli.models import evaluation_models

if TYPE_CHECKING:
    from core.reports.files import Files
    from core.settings import Settings


def target_specs(args: argparse.Namespace) -> list[Any]:
    """The targets of ``--target`` and ``--targets`` (none of them named twice).

    Raises:
        ConfigError: a malformed option or targets file, or two targets of one name.
    """
    from core.targets.spec import check_unique, parse_target_option, read_targets_file

    specs = [parse_target_option(t) for t in args.target or []]
    if args.targets:
        specs += read_targets_file(args.targets)
    check_unique(specs)
    return specs


def _evaluate_targets(args: argparse.Namespace, settings: Settings, out: Path, files: Files, where: str,
                      thresholds: list[Any]) -> int:
    """``ragtune evaluate --golden FILE --target ... [--targets FILE] [--docs DIR]``: every setup
    of every target in one report (``core.evaluation.targets``); the gate checks ``--setup``
    (a pick across targets, ``TARGET/PICK``, or ``TARGET/SETUP``)."""
    from core.evaluation.targets import TargetsOptions, evaluate_targets
    from core.targets.spec import BUILT_TARGET
    from core.golden import read_golden
    from core.reports import ReportStore, new_run_id

    refused = _refused_over_targets(args)
    if refused:
        print(f"ragtune evaluate: {refused}", file=sys.stderr)
        return 2
    judge = None
    if args.label_unjudged:
        judge = settings.judge_model(args.judge)
        if judge is None:
            print("ragtune evaluate: --label-unjudged grades results with the judge: give --judge MODEL or set "
                  "RAGTUNE_JUDGE_MODEL", file=sys.stderr)
            return 2
    specs = target_specs(args)
    models = evaluation_models(settings, args.embedding_model)
    golden = read_golden(args.golden)
    if args.dry_run:
        return _dry_run_targets(args, settings, golden, specs, judge)
    store = ReportStore(files)
    branch = _branch(args)
    names = tuple(sorted([s.name for s in specs] + ([BUILT_TARGET] if args.docs else [])))
    gate_setup = _gate_setup(args, targets=names)
    baseline, note = _baseline(args, store, golden.sha256, branch, targets=names)
    options = TargetsOptions(rank_grain=args.rank_by, only=args.only or (), skip=args.skip or (),
                             show_progress=not args.json,
                             chunking=(args.chunking, _chunk_size(args), _chunk_overlap(args)), embed_title=args.title,
                             label_unjudged=args.label_unjudged, judge=judge, label_depth=args.label_depth)
    report = evaluate_targets(
        args.golden, specs, settings=settings, out_dir=out, docs=args.docs, golden=golden, embedding_model=models[0],
        reranker=settings.reranker(), store_config=settings.vector_store_config(out, args.vector_store) if args.docs
        else None, options=options, on_status=(lambda m: print(m, file=sys.stderr)) if not args.json else None)
    run_id = new_run_id()
    report["run_id"] = run_id
    report["branch"] = branch
    verdict = None
    if thresholds or args.baseline:  # judged before the report is saved, so the report keeps the verdict
        from core.evaluation.gate import judge_gate

        # TARGET/PICK is resolved by the gate, so a target that failed is a verdict in the saved report
        verdict = judge_gate(report, setup=gate_setup, thresholds=thresholds, baseline=baseline, branch=branch,
                             note=note)
        report["gate"] = verdict.to_dict()
    report["golden"]["stored_as"] = store.save_golden(golden.sha256, golden.raw)
    report["location"] = f"{where}/{store.save_run(run_id, report)}"
    if args.json:
        _print_json(report)
    else:
        print(format_report(report))
    _print_warnings(report["golden"]["warnings"], report["golden"]["path"])  # to stderr, with --json too
    code = _gate_exit(verdict)
    if not any(s.get("status") != "failed" for s in report["setups"]):  # a CI gate must not pass on nothing
        print(f"ragtune evaluate: no target could be evaluated (every target or setup failed; the reasons are in "
              f"the report); exit {EXIT_ALL_FAILED}", file=sys.stderr)
        return EXIT_ALL_FAILED
    return code



def _refused_over_targets(args: argparse.Namespace) -> str | None:
    """Why ``evaluate``'s options cannot be honoured over targets, or None. A run over targets
    searches and scores the results, and with ``--label-unjudged`` grades them; it makes no
    answers, so the options about answers are refused rather than ignored."""
    if args.judge_repeat < 1 or args.label_depth < 1:
        return "--judge-repeat and --label-depth must be at least 1"
    if args.judge and not args.label_unjudged:
        return ("--judge judges answers, and a run over targets (--target, --targets) makes none: add "
                "--label-unjudged to have the judge grade the top results, or leave out --judge")
    if args.judge_repeat != 1:
        return (f"--judge-repeat {args.judge_repeat} repeats the judge's calls on answers, and a run over targets "
                "(--target, --targets) makes none")
    if args.by:
        return "--by slices a run over documents; a run over targets (--target, --targets) does not take it yet"
    return None


def _dry_run_targets(args: argparse.Namespace, settings: Settings, golden: Any, specs: list[Any], judge: Any) -> int:
    """Print what ``evaluate`` over targets would send (:func:`core.evaluation.dry_run.plan_evaluate`
    without answers): the judge's grades with ``--label-unjudged``, and the targets it would
    search; 0. No target is opened, nothing is built, loaded or sent."""
    from core.evaluation.dry_run import plan_evaluate

    depth = args.label_depth if args.label_unjudged else 0
    plan = plan_evaluate(golden, chat_model=None, judge=judge, k=0, chunk_size_tokens=_chunk_size(args),
                         label_depth=depth, n_setups=1, answers=False)
    names = [f"{s.name} ({s.kind} {s.index} at {s.shown_location()})" for s in specs]
    if args.docs:
        names.append(f"ragtune's own collection built from {args.docs}")
    plan.notes.append(f"would search {len(names)} target(s) with each of the {len(golden.questions)} questions, "
                      f"with every setup each offers: {'; '.join(names)}. A dry run opens no target")
    if depth:
        plan.notes.append(f"relevance labels counted for one setup (at most {depth} per question): each target's "
                          "setups are known only once it is opened, so multiply by the number of setups, ragtune's "
                          "reranked ones included")
    else:
        plan.notes.append("no chat model or judge is called: a run over targets makes no answers (--label-unjudged "
                          "has the judge grade the top results)")
    return _print_plan(args, plan, settings)
