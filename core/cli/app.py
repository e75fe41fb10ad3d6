"""A deployed RAG app: ``ragtune evaluate-app`` and ``ragtune compare-apps``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from core.cli.common import (EXIT_ALL_FAILED, _branch, _check_output, _output, _print_json, _print_report,
                             _print_warnings, _write_page)
from core.errors import ConfigError
from core.workspace import Workspace

#: The exit code of a command asked something it cannot do (argparse's own for bad usage).
EXIT_USAGE = 2

if TYPE_CHECKING:
    from core.evaluation.app_config import AppConfig
    from core.golden.types import GoldenSet
    from core.reports.files import Files
    from core.settings import Settings


def _app_overrides(items: Sequence[str] | None) -> dict[str, Any]:
    """``--override KEY=VALUE`` values (each VALUE read as YAML: ``3``, ``true``, ``hybrid``).

    Raises:
        ConfigError: an item without ``=``.
    """
    import yaml

    out: dict[str, Any] = {}
    for item in items or ():
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--override {item!r}: use KEY=VALUE, for example --override top=5")
        try:
            out[key.strip()] = yaml.safe_load(raw)
        except yaml.YAMLError:
            out[key.strip()] = raw
    return out


def _app_setup(args: argparse.Namespace, url: str | None = None) -> tuple[Any, Any, Path, Any, str]:
    """What ``evaluate-app`` and ``compare-apps`` start from: the settings, the app config
    (``--config``, then ``--url``, ``RAGTUNE_APP_URL`` and ``--override`` on top), the working
    folder, the report store's files and where they are, as shown."""
    from core.evaluation.app_config import load_app_config, placeholders_of
    from core.settings import Settings

    settings = Settings.from_env()
    _check_output(getattr(args, "html", None))  # refused now, not after every question was asked
    out, files, where = _output(args.out, settings)
    config = load_app_config(args.config)
    overrides = _app_overrides(args.override)
    if overrides and "overrides" not in placeholders_of(config.request):
        raise ConfigError(f"--override {', '.join(overrides)}: the request template has no ${{overrides}}, so the "
                          "app would never see them; put ${overrides} where the app reads them (request.context."
                          "overrides for azure-search-openai-demo) or leave --override out")
    config = config.with_overrides(url=url or args.url or (None if config.url else settings.app.url),
                                   overrides=overrides)
    return settings, config, out, files, where


def _judge_for_app(settings: Settings, args: argparse.Namespace, out: Path, *,
                   dry_run: bool = False) -> tuple[Any, Any]:
    """``(judge or None, the reply cache)``: the judge keeps its replies in the cache too. A
    dry run writes nothing: without a cache file it looks things up in an empty one in memory."""
    from core.models import CachedChatModel, EmbeddingCache

    path = Workspace.at(out).embedding_cache
    cache = EmbeddingCache(":memory:" if dry_run and not Path(path).is_file() else path)
    judge = settings.judge_model(args.judge)
    return (CachedChatModel(judge, cache) if judge is not None else None), cache


def _ask_app(args: argparse.Namespace, settings: Settings, config: AppConfig, out: Path,
             golden: GoldenSet) -> dict[str, Any]:
    """Run :func:`core.evaluation.app.evaluate_app` with the command's options, a progress bar
    on a terminal."""
    from tqdm.auto import tqdm

    from core.evaluation.app import evaluate_app

    judge, cache = _judge_for_app(settings, args, out)
    with tqdm(total=len(golden.questions), desc="asking the app", unit="", leave=False, dynamic_ncols=True,
              disable=None if not args.json else True) as bar:
        def progress(done: int, total: int) -> None:
            bar.n = done
            bar.refresh()

        return evaluate_app(golden, config, settings.app, cache=cache, refresh=args.refresh, judge=judge,
                            judge_repeat=args.judge_repeat, on_turn=progress)


def _store_app_run(report: dict[str, Any], golden: GoldenSet, files: Files, where: str) -> None:
    from core.evaluation.app_report import save_app_run
    from core.reports import ReportStore, new_run_id

    store = ReportStore(files)
    report["run_id"] = report.get("run_id") or new_run_id()
    report["golden"]["stored_as"] = store.save_golden(golden.sha256, golden.raw)
    report["location"] = f"{where}/{save_app_run(store, report['run_id'], report)}"


def cmd_evaluate_app(args: argparse.Namespace) -> int:
    """``ragtune evaluate-app --golden FILE [--config FILE] [--url URL]``: ask a deployed RAG app
    every golden question, score its replies, write the report (``app/runs/<id>/report.json``);
    exit 4 when the gate fails, 3 when the app answered nothing."""
    from core.evaluation.app_report import app_gate, format_app_report, latest_app_baseline, load_app_run
    from core.evaluation.gate import EXIT_GATE
    from core.golden import read_golden
    from core.reports import ReportStore

    if args.judge_repeat < 1:
        raise ConfigError(f"--judge-repeat must be at least 1, got {args.judge_repeat}")
    settings, config, out, files, where = _app_setup(args)
    from core.evaluation.app import answer_metric_names
    from core.evaluation.app_report import check_app_gate

    thresholds = list(args.fail_under or [])
    judge_model = settings.judge_model(args.judge)
    if args.judge_repeat > 1 and judge_model is None:
        return _usage(f"--judge-repeat {args.judge_repeat} repeats the judge's calls, and there is no judge: give "
                      "--judge MODEL or set RAGTUNE_JUDGE_MODEL")
    gate_checks = {"has_citations": config.has_citations, "metrics": answer_metric_names(config, judge_model),
                   "has_judge": judge_model is not None}
    try:  # every threshold names a measure this run computes: checked before any request
        check_app_gate(thresholds, **gate_checks)
    except ConfigError as exc:
        return _usage(str(exc))
    golden = read_golden(args.golden)
    if args.dry_run:
        return _dry_run_app(args, settings, config, out, golden)
    baseline = None
    branch = _branch(args)
    if args.baseline == "latest":
        baseline = latest_app_baseline(ReportStore(files), golden.sha256, branch=branch)
        if baseline is None:
            print("gate: no earlier app run that passed its gate on this golden file and branch to compare with",
                  file=sys.stderr)
    elif args.baseline:
        baseline = load_app_run(ReportStore(files), args.baseline)
        try:
            check_app_gate([], **gate_checks, baseline=baseline, golden_sha256=golden.sha256)
        except ConfigError as exc:
            return _usage(str(exc))
    report = _ask_app(args, settings, config, out, golden)
    report["branch"] = branch
    gate = None
    if thresholds or args.baseline:  # judged before the report is saved: the report keeps it
        try:
            lines, failed = app_gate(report, thresholds=thresholds, baseline=baseline)
            code = EXIT_GATE if failed else 0
        except ConfigError as exc:  # found only now: the run is kept, and the gate fails with the reason
            lines, failed, code = [f"error: {exc}"], True, EXIT_USAGE
        gate = {"passed": not failed, "exit_code": code, "lines": lines, "thresholds": thresholds,
                "baseline": None if baseline is None else baseline.get("run_id")}
        report["gate"] = gate
    _store_app_run(report, golden, files, where)
    if args.html:
        from core.reports.pages.app_page import render_app

        _write_page(args.html, render_app(report))
    _print_report(args, report, format_app_report)
    _print_warnings(report["golden"]["warnings"], report["golden"]["path"])  # to stderr, with --json too
    if gate is not None:
        for line in gate["lines"]:
            print(f"gate: {line}", file=sys.stderr)
        if not gate["passed"]:
            return int(gate["exit_code"])
    if report["requests"]["n_questions"] and not report["requests"]["n_answered"]:
        print("error: the app answered no question; the report lists each failure", file=sys.stderr)
        return EXIT_ALL_FAILED
    return 0


def _usage(message: str) -> int:
    """Say why ``evaluate-app`` cannot run as asked (before it sends anything); exit 2."""
    print(f"ragtune evaluate-app: {message}", file=sys.stderr)
    return EXIT_USAGE


def _dry_run_app(args: argparse.Namespace, settings: Settings, config: AppConfig, out: Path, golden: GoldenSet) -> int:
    """Print what ``evaluate-app`` would send (:func:`core.evaluation.dry_run.plan_app`); 0."""
    from core.evaluation.dry_run import plan_app

    judge, cache = _judge_for_app(settings, args, out, dry_run=True)
    plan = plan_app(golden, config, settings.app, cache=cache, refresh=args.refresh, judge=judge,
                    judge_repeat=args.judge_repeat)
    if judge is None:
        plan.notes.append("no judge: the answers are scored by unitxt only (give --judge MODEL or set "
                          "RAGTUNE_JUDGE_MODEL to have them judged)")
    if args.json:
        _print_json(plan.to_dict(settings.prices))
    else:
        print(plan.format(settings.prices))
    return 0


def cmd_compare_apps(args: argparse.Namespace) -> int:
    """``ragtune compare-apps A B --golden FILE``: two app versions question by question; each
    of A and B is a stored app run id or a URL (asked now, with the config, and stored)."""
    from core.evaluation.app_report import compare_apps, format_app_comparison, is_app_run, load_app_run
    from core.golden import read_golden
    from core.reports import ReportStore

    if args.judge_repeat < 1:
        raise ConfigError(f"--judge-repeat must be at least 1, got {args.judge_repeat}")
    reports = []
    golden = None
    for which in (args.first, args.second):
        settings, config, out, files, where = _app_setup(args, url=which if "://" in which else None)
        if "://" not in which:
            if not is_app_run(files, which) and which != "latest":
                raise ConfigError(f"{which!r} is neither a stored app run nor a URL (http:// or https://)")
            reports.append(load_app_run(ReportStore(files), which))
            continue
        if golden is None:
            if not args.golden:
                raise ConfigError(f"asking {which} needs --golden FILE")
            golden = read_golden(args.golden)
        if args.dry_run:
            _dry_run_app(args, settings, config, out, golden)
            continue
        report = _ask_app(args, settings, config, out, golden)
        _store_app_run(report, golden, files, where)
        print(f"asked {which}: run {report['run_id']} ({report['location']})", file=sys.stderr)
        reports.append(report)
    if args.dry_run:
        return 0
    comparison = compare_apps(reports[0], reports[1])
    if args.html:
        from core.reports.pages.app_page import render_app_compare

        _write_page(args.html, render_app_compare(comparison))
    _print_report(args, comparison, format_app_comparison)
    return 0

