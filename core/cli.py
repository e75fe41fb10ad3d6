"""The ``ragtune`` command: check golden files, evaluate retrieval, show reports.

Exit codes: 0 success; 1 the input has errors (a golden file that cannot be run, a missing
report); 2 bad command-line usage (argparse's own); 3 ``optimize`` finished but every
evaluation failed (the report is written and lists each error); 4 ``evaluate``'s gate failed
(``--fail-under``, ``--baseline``); 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

from core import __version__
from core.errors import ConfigError, GoldenError, RagtuneError
from core.text import plural

DEFAULT_OUT = "ragtune-out"
#: ``optimize``'s exit code when the experiment ran but no evaluation succeeded.
EXIT_ALL_FAILED = 3


def _print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False))


def cmd_check(args: argparse.Namespace) -> int:
    """``ragtune check GOLDEN [--docs DIR] [--target T] [--targets FILE] [--json] [--all]``: 0 when the
    file can be run, 1 when not (or when a target cannot be reached).

    GOLDEN and DIR may be local paths or addresses (``s3://...``, Blob URLs; see
    ``core.inputs``); a remote folder is listed, not downloaded. The problems shown are bounded
    (the first 100 of each kind, then a count and the lines of the rest) unless ``--all``."""
    from core.golden import DEFAULT_LIMITS, CheckLimits, check_golden, format_check
    from core.inputs import is_remote, shown_address

    documents = None
    if args.docs:
        from core.documents import list_document_ids

        if is_remote(args.docs):
            documents = list_document_ids(args.docs)
            if not documents:
                print(f"ragtune check: --docs {shown_address(args.docs)} holds no documents", file=sys.stderr)
                return 1
        else:  # main() has checked that a local --docs is a folder
            documents = list_document_ids(Path(args.docs))
    check = check_golden(args.golden, documents=documents,
                         limits=CheckLimits.unbounded() if args.all else DEFAULT_LIMITS)
    if args.docs:  # stale evidence and pages past the end need the documents themselves
        from core.golden.corpus_check import add_corpus_problems

        add_corpus_problems(check, args.golden, args.docs, document_ids=documents)
    if args.target or args.targets:  # expected documents and evidence against indexes searched in place
        from core.settings import Settings
        from core.targets.check import add_target_problems

        add_target_problems(check, args.golden, target_specs(args), Settings.from_env())
    if args.json:
        _print_json(check.to_dict())
    else:
        print(format_check(check))
        if check.omitted:
            print(f"(some problems shown as counts with their lines; ragtune check --all {args.golden} lists every one)")
    return 0 if check.ok else 1


def _fmt(value: Any, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def found_name(means: dict[str, Any], k: int) -> Any:
    """``found@k`` from a report's means (``success@k`` in reports written before the rename)."""
    from core.metrics.retrieval import found_name as read

    return read(means, k)


def format_report(report: dict[str, Any]) -> str:
    """Return a retrieval report as text tables a person reads: one table per grain with
    scored questions (found in top 10, found first, recall@5, MRR, nDCG@10, median and p95
    search time per setup), then the picks and where the report lives."""
    lines = []
    g = report["golden"]
    if report.get("targets") is not None:  # a run over targets (core.evaluation.targets)
        from core.evaluation.targets import format_targets

        lines.extend(format_targets(report))
    else:
        c, ix = report["corpus"], report["indexing"]
        lines.append(
            f"golden {g['path']}: {g['n_questions']} questions (sha256 {g['sha256'][:12]}); corpus {c['path']}: "
            f"{c['n_documents']} documents, {c['n_pages']} pages, {c['n_chunks']} chunks"
        )
        emb = ix["embedding"]
        if ix.get("vector_store_location"):
            lines.append(f"vector store {ix['vector_store']} at {ix['vector_store_location']}")
        lines.append(
            f"chunking {ix['chunking']}; embedding {ix['embedding_model']}: {emb['n_embedded']} texts embedded, "
            f"{emb['n_cache_hits']} from cache; collection {ix['collection']}{' (reused)' if ix['reused'] else ''}"
        )
        for skipped in c.get("skipped", []):
            lines.append(f"skipped {skipped['document_id']}: {skipped['reason']}")
    width = max([34] + [len(str(s["name"])) + 1 for s in report["setups"]])
    rank_grain = report["evaluation"]["rank_grain"]
    ran = [s for s in report["setups"] if s.get("status", "ok") == "ok"]
    if report["evaluation"].get("rank_grain_reason"):
        lines.append(f"setups ranked by the {rank_grain} grain: {report['evaluation']['rank_grain_reason']}")
    for grain in report["evaluation"]["grains"]:
        first = ran[0]["metrics"][grain] if ran else None
        if first is None:
            continue
        marker = " (setups ranked by this grain)" if grain == rank_grain else ""
        if not first["n_scored"]:
            lines.append(f"\n[{grain}] not scorable: {first.get('reason') or 'no labels at this grain'}"
                         f" ({first['n_unscorable']} questions left out)")
            continue
        if grain == "evidence" and first.get("n_fallback") == first["n_scored"]:
            lines.append(f"\n[{grain}] no usable evidence quotes (3 words or more): every question is judged "
                         "on its documents, as in [doc]")
            continue
        extra = []
        if first["n_unscorable"]:
            extra.append(f"{first['n_unscorable']} left out (no labels at this grain)")
        if first.get("n_fallback"):
            extra.append(f"{first['n_fallback']} judged on documents (no usable evidence)")
        lines.append(f"\n[{grain}] {plural(first['n_scored'], 'question')} scored{', ' + ', '.join(extra) if extra else ''}{marker}")
        header = (f"{'setup':<{width}} {'found@10':>9} {'95% CI':>11} {'found@1':>8} {'recall@5':>9} {'mrr':>6} "
                  f"{'ndcg@10':>8} {'wait ms':>8} {'search ms':>9}")
        lines.append(header)
        lines.append("-" * len(header))
        for s in report["setups"]:
            if s.get("status", "ok") != "ok":
                lines.append(f"{s['name']:<{width}} failed: {s.get('error')}")
                continue
            agg = s["metrics"][grain]
            m, low, high = agg["means"], agg.get("ci_low") or {}, agg.get("ci_high") or {}
            ci = (f"{_fmt(found_name(low, 10), 2)}-{_fmt(found_name(high, 10), 2)}"
                  if found_name(low, 10) is not None else "-")
            t = s["timings_ms"]
            wait = (t.get("total") or t)["median"]
            tied = "=" if grain == rank_grain and s.get("tied_with_best") else " "
            lines.append(
                f"{s['name']:<{width - 1}}{tied} {_fmt(found_name(m, 10)):>9} {ci:>11} {_fmt(found_name(m, 1)):>8} "
                f"{_fmt(m.get('recall@5')):>9} {_fmt(m.get('mrr')):>6} {_fmt(m.get('ndcg@10')):>8} "
                f"{wait:>8.2f} {(t.get('search') or t)['median']:>9.2f}"
            )
        if grain == rank_grain:
            lines.append("(found@k: share of questions with a right result in the top k, the hit rate or success@k; "
                         "95% CI: bootstrap over questions; '=': tied with the best, McNemar's exact test; "
                         "wait: median query embedding + search + rerank)")
    picks = report["picks"]
    lines.append("")
    for skipped in report.get("skipped_setups") or []:
        lines.append(f"skipped {skipped['key']}: {skipped['reason']}")
    if picks.get("reason"):
        lines.append(f"no pick: {picks['reason']}")
    undecided = report.get("undecided")
    if undecided:
        lines.append(f"no winner: {undecided['message']}")
    for key in ("finds_the_most", "best_for_balance", "best_for_time"):
        rule = picks["rules"][key]
        if key == "finds_the_most" and picks.get("tied_with_all"):
            rule = "tied with every other setup: not a winner"
        lines.append(f"{key:<17} {picks[key] or '-':<24} ({rule})")
    answers = report.get("answers")
    if answers:
        gen = answers["generator"]
        kind = {"extractive": "extractive baseline, no language model", "llm": "language model",
                "external": "answers read from the file"}.get(gen["kind"], gen["kind"])
        where = f" from the top {gen['k']} chunks of {gen['setup']}" if gen.get("setup") else ""
        lines.append(f"\nanswers by {gen['model_id']} ({kind}){where}: {answers['n_answered']} of "
                     f"{answers['n_questions']} answered, {answers['n_failed']} failed")
        from core.evaluation.app_report import answer_metric_lines

        metric_lines = answer_metric_lines(answers)
        no_score = [line for line in metric_lines if ": no score: " in line]
        lines += [line for line in metric_lines if line not in no_score]
        if answers.get("overall_score") is not None:
            lines.append(f"overall_score {answers['overall_score']:.3f} (mean of {', '.join(answers['overall_metrics'])})")
        if answers["n_failed"]:
            lines.append(f"warning: {answers['n_failed']} of {answers['n_questions']} answers failed; the scores above "
                         "cover only the answered questions (errors per question are in the report)")
        lines += no_score
    if report.get("unjudged"):
        from core.evaluation.unjudged import format_unjudged

        lines.append(format_unjudged(report["unjudged"]))
    if report.get("location"):
        lines.append(f"\nreport: {report['location']}")
    return "\n".join(lines)


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

        verdict = judge_gate(report, setup=args.setup, thresholds=thresholds, baseline=baseline, branch=branch,
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
        _print_warnings(report["golden"]["warnings"], report["golden"]["path"])
    return _gate_exit(verdict)


def _gate_exit(verdict: Any) -> int:
    """Print the gate's findings (a :class:`core.evaluation.gate.GateVerdict`, or None for no
    gate) and return the exit code: 0 without a gate."""
    if verdict is None:
        return 0
    for line in verdict.lines:
        print(f"gate: {line}", file=sys.stderr)
    print(f"gate: {'passed' if verdict.passed else 'failed'} (exit {verdict.exit_code}); the verdict is in the "
          "report's 'gate'", file=sys.stderr)
    return verdict.exit_code


def _branch(args: argparse.Namespace) -> str | None:
    """The run's branch: ``--branch``, else the CI's (:func:`core.settings.ci_branch`), else None."""
    from core.settings import branch_name, ci_branch

    return branch_name(args.branch, "--branch") if args.branch is not None else ci_branch()


def _baseline(args: argparse.Namespace, store: Any, golden_sha256: str, branch: str | None,
              targets: tuple[str, ...] | None = None) -> tuple[Any, str | None]:
    """``(baseline or None, note)`` for ``--baseline`` (:mod:`core.evaluation.gate`'s rules),
    found before any work so a bad name stops the run at once; ``targets``: the sorted names
    of a run over targets (a ``latest`` baseline searched the same ones).

    Raises:
        NotStoredError / ConfigError: a named baseline that is not stored, not a report, or
            on another golden file.
    """
    from core.evaluation.gate import BaselineRule, find_baseline, named_baseline
    from core.inputs import shown_address
    from core.settings import branch_name

    if args.any_branch and args.baseline_branch is not None:
        raise ConfigError("--any-branch and --baseline-branch contradict each other: give one")
    if not args.baseline:
        if args.any_branch or args.baseline_branch is not None:
            raise ConfigError("--any-branch and --baseline-branch choose a --baseline latest: give --baseline latest")
        return None, None
    if args.baseline != "latest":
        if args.any_branch or args.baseline_branch is not None:
            raise ConfigError("--any-branch and --baseline-branch choose a --baseline latest, not a named one")
        return named_baseline(store, args.baseline, golden_sha256), None
    wanted = branch_name(args.baseline_branch, "--baseline-branch") if args.baseline_branch is not None else branch
    rule = BaselineRule(golden_sha256, shown_address(args.docs) if targets is None else None, wanted,
                        any_branch=args.any_branch, targets=targets)
    return find_baseline(store, rule)


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
    from core.evaluation.app_config import load_app_config
    from core.settings import Settings

    settings = Settings.from_env()
    out, files, where = _output(args.out, settings)
    config = load_app_config(args.config)
    config = config.with_overrides(url=url or args.url or (None if config.url else settings.app.url),
                                   overrides=_app_overrides(args.override))
    return settings, config, out, files, where


def _judge_for_app(settings: Any, args: argparse.Namespace, out: Path) -> tuple[Any, Any]:
    """``(judge or None, the reply cache)``: the judge keeps its replies in the cache too."""
    from core.models import CachedChatModel, EmbeddingCache

    cache = EmbeddingCache(out / "cache" / "embeddings.sqlite")
    judge = settings.judge_model(args.judge)
    return (CachedChatModel(judge, cache) if judge is not None else None), cache


def _ask_app(args: argparse.Namespace, settings: Any, config: Any, out: Path, golden: Any) -> dict[str, Any]:
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


def _store_app_run(report: dict[str, Any], golden: Any, files: Any, where: str) -> None:
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
    from core.evaluation.app_report import parse_app_thresholds

    parse_app_thresholds(args.fail_under or [])  # a malformed threshold stops before any request
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
    report = _ask_app(args, settings, config, out, golden)
    report["branch"] = branch
    gate = None
    if args.fail_under or baseline is not None:  # judged before the report is saved: the report keeps it
        lines, failed = app_gate(report, thresholds=args.fail_under or [], baseline=baseline)
        gate = {"passed": not failed, "exit_code": EXIT_GATE if failed else 0, "lines": lines,
                "thresholds": list(args.fail_under or []),
                "baseline": None if baseline is None else baseline.get("run_id")}
        report["gate"] = gate
    _store_app_run(report, golden, files, where)
    if args.html:
        from core.reports.files import write_atomic
        from core.reports.pages.app_page import render_app

        write_atomic(Path(args.html), render_app(report).encode("utf-8"))
        print(f"wrote page {args.html}", file=sys.stderr)
    if args.json:
        _print_json(report)
    else:
        print(format_app_report(report))
        _print_warnings(report["golden"]["warnings"], report["golden"]["path"])
    if gate is not None:
        for line in gate["lines"]:
            print(f"gate: {line}", file=sys.stderr)
        if not gate["passed"]:
            return EXIT_GATE
    if report["requests"]["n_questions"] and not report["requests"]["n_answered"]:
        print("error: the app answered no question; the report lists each failure", file=sys.stderr)
        return EXIT_ALL_FAILED
    return 0


def _dry_run_app(args: argparse.Namespace, settings: Any, config: Any, out: Path, golden: Any) -> int:
    """Print what ``evaluate-app`` would send (:func:`core.evaluation.dry_run.plan_app`); 0."""
    from core.evaluation.dry_run import plan_app

    judge, cache = _judge_for_app(settings, args, out)
    plan = plan_app(golden, config, settings.app, cache=cache, refresh=args.refresh, judge=judge,
                    judge_repeat=args.judge_repeat)
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
        from core.reports.files import write_atomic
        from core.reports.pages.app_page import render_app_compare

        write_atomic(Path(args.html), render_app_compare(comparison).encode("utf-8"))
        print(f"wrote page {args.html}", file=sys.stderr)
    if args.json:
        _print_json(comparison)
    else:
        print(format_app_comparison(comparison))
    return 0


def _print_plan(args: argparse.Namespace, plan: Any, settings: Any) -> int:
    """Print a ``--dry-run`` plan (as JSON with ``--json`` when the command has it); 0."""
    if getattr(args, "json", False):
        _print_json(plan.to_dict(settings.prices))
    else:
        print(plan.format(settings.prices))
    return 0


def _dry_run_evaluate(args: argparse.Namespace, settings: Any, options: Any, golden: Any, models: Sequence[Any]) -> int:
    """Print what ``evaluate`` would send to chat models and judges
    (:func:`core.evaluation.dry_run.plan_evaluate`); 0. Nothing is loaded, indexed or sent."""
    from core.evaluation.answers import ANSWER_K
    from core.evaluation.dry_run import plan_evaluate

    n_setups = len(options.setups) * len(models) * (2 if settings.rerank_provider != "none" else 1)
    plan = plan_evaluate(golden, chat_model=options.chat_model if options.generate else None,
                         judge=options.judge, k=ANSWER_K, chunk_size_tokens=options.chunk_size,
                         judge_repeat=options.judge_repeat,
                         label_depth=options.label_depth if options.label_unjudged else 0, n_setups=n_setups)
    if not options.generate:
        plan.notes.append("--no-generate: no answers, so no answer is judged")
    elif options.chat_model is None:
        plan.notes.append("answers come from the extractive baseline: no chat calls")
    if args.json:
        _print_json(plan.to_dict(settings.prices))
    else:
        print(plan.format(settings.prices))
    return 0


def _settings(args: argparse.Namespace) -> Any:
    """``Settings.from_env()``, with downloads of ``hf:`` models allowed when the command
    line says ``--allow-download`` (as ``RAGTUNE_ALLOW_MODEL_DOWNLOAD=1`` does)."""
    from dataclasses import replace

    from core.settings import Settings

    settings = Settings.from_env()
    return replace(settings, allow_model_download=True) if getattr(args, "allow_download", False) else settings


def evaluation_models(settings: Any, names: Sequence[str] | None) -> list[Any]:
    """The embedding models ``--embedding-model`` names (each a comma-separated list of ids
    of ``Settings.embedding_models``, or of ``hf:ORG/NAME[@REVISION]`` and ``onnx:PATH``
    names), or the configured one.

    Raises:
        ConfigError: a name that is not configured (the message lists the ones that are and
            the forms a name may take).
    """
    if not names:
        return [settings.embedding_model()]
    from core.models.local import name_form

    available = settings.embedding_models()
    out = []
    for name in (n.strip() for arg in names for n in arg.split(",")):
        if not name:
            continue
        match = available.get(name) or available.get(f"local:{name}")
        if match is None:
            try:
                named = name_form(name) != "local"  # hf: and onnx: names need no configuring
            except ConfigError as exc:
                raise ConfigError(f"--embedding-model {name!r} is not configured (configured: "
                                  f"{', '.join(available)}); {exc}") from None
            if not named:
                raise ConfigError(f"--embedding-model {name!r} is not configured; configured: {', '.join(available)}")
            match = available[name] = settings.embedding_model_named(name)
        if match not in out:
            out.append(match)
    return out


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


def _evaluate_targets(args: argparse.Namespace, settings: Any, out: Path, files: Any, where: str,
                      thresholds: list[Any]) -> int:
    """``ragtune evaluate --golden FILE --target ... [--targets FILE] [--docs DIR]``: every setup
    of every target in one report (``core.evaluation.targets``); the gate checks ``--setup``
    (a pick across targets, ``TARGET/PICK``, or ``TARGET/SETUP``)."""
    from core.evaluation.targets import TargetsOptions, evaluate_targets, resolve_gate_setup
    from core.targets.spec import BUILT_TARGET
    from core.golden import read_golden
    from core.reports import ReportStore, new_run_id

    specs = target_specs(args)
    models = evaluation_models(settings, args.embedding_model)
    golden = read_golden(args.golden)
    store = ReportStore(files)
    branch = _branch(args)
    names = tuple(sorted([s.name for s in specs] + ([BUILT_TARGET] if args.docs else [])))
    baseline, note = _baseline(args, store, golden.sha256, branch, targets=names)
    options = TargetsOptions(rank_grain=args.rank_by, only=args.only or (), skip=args.skip or (),
                             show_progress=not args.json,
                             chunking=(args.chunking, _chunk_size(args), _chunk_overlap(args)), embed_title=args.title)
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

        verdict = judge_gate(report, setup=resolve_gate_setup(report, args.setup), thresholds=thresholds,
                             baseline=baseline, branch=branch, note=note)
        report["gate"] = verdict.to_dict()
    report["golden"]["stored_as"] = store.save_golden(golden.sha256, golden.raw)
    report["location"] = f"{where}/{store.save_run(run_id, report)}"
    if args.json:
        _print_json(report)
    else:
        print(format_report(report))
        _print_warnings(report["golden"]["warnings"], report["golden"]["path"])
    return _gate_exit(verdict)


def _output(address: str | None, settings: Any) -> tuple[Path, Any, str]:
    """``(working folder, report store Files, where as shown)`` for ``--out``: a folder is
    both; an ``s3://`` or Blob address holds the reports while caches and Milvus Lite stay in
    the local ``$RAGTUNE_OUT_DIR`` (or ``ragtune-out``)."""
    from core.inputs import is_remote, shown_address
    from core.reports import LocalFiles

    target = address or settings.out_dir
    if not is_remote(target):
        return Path(target), LocalFiles(target), str(Path(target))
    work = settings.out_dir if not is_remote(settings.out_dir) else DEFAULT_OUT
    return Path(work), settings.files(target), shown_address(target).rstrip("/")


def _chunk_size(args: argparse.Namespace) -> int:
    """``--chunk-size``, else :data:`core.chunking._common.DEFAULT_CHUNK_SIZE`."""
    from core.chunking._common import DEFAULT_CHUNK_SIZE

    return DEFAULT_CHUNK_SIZE if args.chunk_size is None else args.chunk_size


def _chunk_overlap(args: argparse.Namespace) -> int:
    """``--chunk-overlap``, else the default that fits the size
    (:func:`core.chunking._common.default_overlap`); a given overlap is checked by the chunker."""
    from core.chunking._common import default_overlap

    return default_overlap(_chunk_size(args)) if args.chunk_overlap is None else args.chunk_overlap


def _check_expected_documents(golden: Any, docs: str) -> None:
    """Stop before any work when none of the golden file's expected documents is in ``docs``.

    Raises:
        ConfigError: with the reason (``core.evaluation.gate.missing_documents_reason``).
    """
    from core.documents import list_document_ids
    from core.evaluation.gate import golden_documents_reason
    from core.inputs import shown_address

    if not any(q.expected for q in golden.questions):  # nothing to look for: the folder is not listed
        return
    reason = golden_documents_reason(golden, list_document_ids(docs), shown_address(docs))
    if reason:
        raise ConfigError(reason)


def _print_warnings(warnings: list[dict[str, Any]], path: str, most: int = 10) -> None:
    """Print the golden file's warnings to stderr, at most ``most`` of them."""
    if not warnings:
        return
    print(f"\n{plural(len(warnings), 'warning')} about {path}:", file=sys.stderr)
    for w in warnings[:most]:
        line = f":{w['line']}" if w.get("line") is not None else ""
        field = f"field '{w['field']}': " if w.get("field") else ""
        print(f"  {path}{line}: {field}{w['message']}", file=sys.stderr)
    if len(warnings) > most:
        print(f"  ... and {len(warnings) - most} more in the report", file=sys.stderr)


def cmd_report(args: argparse.Namespace) -> int:
    """``ragtune report [RUN|latest|EXPERIMENT|CHUNKING] [--out DIR|ADDRESS] [--json] [--html FILE]
    [--csv FILE [--per-question]] [--mlflow [URI]]``: print a stored report (``latest``: the
    newest evaluate run, or the newest finished experiment when no run is stored), or write
    it as a page, a CSV file or MLflow runs; a chunking comparison or sweep (by its id) is
    printed or written as a page.

    Raises:
        StoreError: nothing stored under that id (the message lists recent runs and
            experiments), or an experiment that stopped before writing its report (a page
            of it is still written with ``--html``).
    """
    from core.errors import StoreError
    from core.reports import ReportStore
    from core.reports.keys import EXPERIMENTS_PREFIX
    from core.settings import Settings

    settings = Settings.from_env()
    _, files, where = _output(args.out, settings)
    if _report_chunking(args, files, where):
        return 0
    experiment_key = f"{EXPERIMENTS_PREFIX}/{args.run}/report.json"
    if args.run != "latest" and "/" not in args.run and ".." not in args.run and files.exists(experiment_key):
        experiment = json.loads(files.read_bytes(experiment_key))
        experiment["location"] = f"{where}/{experiment_key}"
        if _write_exports(args, experiment):
            return 0
        if args.json:
            _print_json(experiment)
        else:
            print(format_experiment(experiment))
        return 0
    from core.evaluation.app_report import format_app_report, is_app_run, load_app_run

    if args.run != "latest" and is_app_run(files, args.run):
        if args.csv or args.mlflow is not None:
            raise ConfigError("--csv and --mlflow export evaluate runs and experiments; an app run is shown as text, "
                              "--json or --html")
        app_report = load_app_run(ReportStore(files), args.run)
        app_report["location"] = f"{where}/app/runs/{args.run}/report.json"
        if not _write_exports(args, app_report):
            _print_json(app_report) if args.json else print(format_app_report(app_report))
        return 0
    store = ReportStore(files)
    experiments = sorted({k.split("/")[1] for k in files.list(EXPERIMENTS_PREFIX) if k.endswith("/study.json")},
                         reverse=True)  # experiment ids sort by time
    if args.run in experiments:
        if args.html:
            from core.reports.pages.site import load_experiment

            report, running = load_experiment(files, args.run)
            _write_exports(args, dict(report, status="running" if running else report.get("status")))
            return 0
        raise StoreError(f"experiment {args.run} has no report yet (it stopped before its end): continue it with "
                         f"'ragtune optimize --resume {args.run}' and the same --docs and --golden")
    if args.run == "latest" and not store.run_ids():
        finished = [e for e in experiments if files.exists(f"{EXPERIMENTS_PREFIX}/{e}/report.json")]
        if finished:
            args.run = finished[0]
            return cmd_report(args)
    try:
        report = store.load_run(args.run)
    except StoreError as exc:
        if experiments:
            raise StoreError(f"{exc}; experiments: {', '.join(experiments[:5])}") from None
        raise
    report["location"] = f"{where}/retrieval/runs/{report.get('run_id', args.run)}/report.json"
    if _write_exports(args, report):
        return 0
    if args.json:
        _print_json(report)
    else:
        print(format_report(report))
    return 0


def _report_chunking(args: argparse.Namespace, files: Any, where: str) -> bool:
    """``ragtune report ID`` for a stored chunking comparison or sweep: its page with
    ``--html``, its JSON with ``--json``, else its text as ``compare-chunking`` / ``sweep``
    print it. False when ``args.run`` names neither.

    Raises:
        ConfigError: ``--csv``, ``--per-question`` or ``--mlflow`` asked of one (they take
            evaluate runs and experiments).
    """
    from core.reports.files import is_safe_id
    from core.reports.pages.site import chunking_prefixes

    if args.run == "latest" or not is_safe_id(args.run):
        return False
    for kind, prefix in chunking_prefixes().items():
        key = f"{prefix}/{args.run}/report.json"
        if not files.exists(key):
            continue
        report = json.loads(files.read_bytes(key))
        report["location"] = f"{where}/{key}"
        if args.csv or args.per_question or args.mlflow is not None:
            raise ConfigError(f"{args.run} is a {'sweep' if kind == 'sweeps' else 'chunking comparison'}: write it "
                              "with --html FILE or print it with --json (--csv and --mlflow take evaluate runs and "
                              "experiments)")
        if args.html:
            _write_exports(args, report)
        elif args.json:
            _print_json(report)
        elif kind == "sweeps":
            from core.evaluation.sweep import format_sweep

            print(format_sweep(report))
        else:
            from core.evaluation.chunking import format_comparison

            print(format_comparison(report))
        return True
    return False


def _write_exports(args: argparse.Namespace, report: dict[str, Any]) -> bool:
    """Write what ``--html``, ``--csv`` and ``--mlflow`` ask for (saying each on stderr);
    False when none was asked for."""
    from core.reports.files import write_atomic

    if args.per_question and not args.csv:
        raise ConfigError("--per-question shapes the --csv export; give --csv FILE too")
    wrote = False
    if args.html:
        from core.reports.pages import render_report

        write_atomic(Path(args.html), render_report(report).encode("utf-8"))
        print(f"wrote page {args.html}", file=sys.stderr)
        wrote = True
    if args.csv:
        from core.reports.exports import to_csv

        write_atomic(Path(args.csv), to_csv(report, per_question=args.per_question).encode("utf-8"))
        print(f"wrote {args.csv}", file=sys.stderr)
        wrote = True
    if args.mlflow is not None:
        from core.reports.mlflow_export import DEFAULT_TRACKING_URI, log_report

        uri = args.mlflow or DEFAULT_TRACKING_URI
        run_ids = log_report(report, tracking_uri=uri)
        print(f"logged {plural(len(run_ids), 'MLflow run')} to {uri}", file=sys.stderr)
        wrote = True
    return wrote


def cmd_serve(args: argparse.Namespace) -> int:
    """``ragtune serve [--out DIR|ADDRESS] [--host H] [--port N]``: serve the pages of every
    report in a store until interrupted."""
    from core.reports import ReportStore
    from core.reports.serve import serve
    from core.settings import Settings

    _, files, where = _output(args.out, Settings.from_env())
    print(f"serving the reports in {where} on http://{args.host}:{args.port}/ (Ctrl-C stops)", file=sys.stderr)
    serve(ReportStore(files), where=where, host=args.host, port=args.port)
    return 0


def format_experiment(report: dict[str, Any], most: int = 20) -> str:
    """Return an experiment report as text: the leaderboard (score with its interval, key
    parameters, and each evaluation's cost: seconds, texts embedded, chat and judge tokens,
    ``—`` when not recorded or the endpoint did not say), the best configuration, and what the
    search cost."""
    lines = []
    g, sp, opt = report["golden"], report["space"], report["optimizer"]
    lines.append(f"experiment {report['experiment_id']}: {plural(g['n_questions'], 'question')}, "
                 f"{plural(report['corpus']['n_documents'], 'document')}; {plural(sp['n_valid'], 'valid configuration')}; "
                 f"optimizer {opt['name']} (seed {opt['seed']}, up to {plural(opt['max_evals'], 'evaluation')}); "
                 f"objective {report['objective']}")
    header = (f"{'rank':>4} {'score':>6} {'95% CI':>13} {'chunking':<12} {'size':>5} {'overlap':>7} {'k':>3} "
              f"{'search':<22} {'generator':<11} {'seconds':>8} {'embedded':>8} {'tokens':>8}")
    lines += ["", header, "-" * len(header)]
    for row in report["leaderboard"][:most]:
        p = row["parameters"]
        search = p.get("search_mode") or "-"
        if search == "hybrid":
            search += f"-{p.get('ranker_strategy')}"
            if p.get("ranker_strategy") == "weighted":
                search += f"-a{p.get('ranker_alpha')}"
        ci = f"{_fmt(row['ci_low'])}-{_fmt(row['ci_high'])}" if row["ci_low"] is not None else "-"
        rank = "-" if row["rank"] is None else str(row["rank"])
        score = "failed" if row["status"] == "failed" else _fmt(row["score"])
        overlap = "-" if p.get("chunk_overlap") is None else str(p.get("chunk_overlap"))
        size = "-" if p.get("chunk_size") is None else str(p.get("chunk_size"))
        gen = str(p.get("foundation_model"))[:11]
        dur = "-" if row["duration_s"] is None else f"{row['duration_s']:.1f}"
        cost = row.get("cost") or {}
        embedded = "—" if cost.get("texts_embedded") is None else str(cost["texts_embedded"])
        tokens = "—" if cost.get("tokens") is None else str(cost["tokens"])
        lines.append(f"{rank:>4} {score:>6} {ci:>13} {str(p.get('chunking_method')):<12} {size:>5} "
                     f"{overlap:>7} {str(p.get('number_of_chunks')):>3} {search:<22} {gen:<11} {dur:>8} "
                     f"{embedded:>8} {tokens:>8}")
        if row["status"] == "failed":
            lines.append(f"{'':>4} error: {row['error']}")
    if len(report["leaderboard"]) > most:
        lines.append(f"... {len(report['leaderboard']) - most} more in the report")
    best = report.get("best")
    c = report["counts"]
    lines.append("")
    if best:
        params = {k: v for k, v in best["configuration"].items() if not k.endswith("_text") and v is not None}
        lines.append(f"best: {report['objective']} = {best['score']:.3f} with {json.dumps(params)}")
    else:
        lines.append("best: none (every evaluation failed)")
    timings = report["timings_s"]
    lines.append(f"cost: {plural(c['evaluations'], 'evaluation')} ({c['failed']} failed, {c['stored']} from stored "
                 f"results), {plural(c['collections_built'], 'collection')} built, "
                 f"{plural(c.get('texts_unique', c['texts_embedded']), 'distinct text')}: "
                 f"{c['texts_embedded']} embedded, {c.get('texts_from_cache', 0)} from the cache"
                 + (f"; {plural(c['chat_calls'], 'chat call')}, {c.get('replies_from_cache', 0)} replies from the cache"
                    if c.get("chat_calls") or c.get("replies_from_cache") else "")
                 + f"; {timings['total_s']:.0f} s"
                 + (f" ({timings['startup_s']:.1f} s start-up)" if timings.get("startup_s") else ""))
    for note in report.get("notes") or []:
        lines.append(f"note: {note}")
    if report.get("location"):
        lines.append(f"report: {report['location']}")
    return "\n".join(lines)


def _space_models(args: argparse.Namespace, files: Any) -> dict[str, list[str]]:
    """The ``hf:`` and ``onnx:`` model names ``optimize``'s space holds (``--set``, ``--space``
    and, resuming, the stored experiment's space), by parameter (``embedding_model``,
    ``reranker``), to be built before the space is checked.

    Raises:
        ConfigError: a bad ``--set`` or space file, or a name of an unknown kind (``x:...``)
            that is not a configured model's id (the message lists the forms a name may take).
    """
    from core.models.local import name_form
    from core.models.rerank import RERANK_PROVIDERS
    from core.optimization.model_names import space_model_names
    from core.optimization.overrides import parse_overrides

    endpoints = {*RERANK_PROVIDERS, "openai"}  # the prefixes of endpoint models' ids
    spaces = []
    if args.resume:
        from core.errors import StoreError
        from core.experiment.engine import Experiment

        try:
            spaces.append(Experiment(files, args.resume).study().space)
        except (StoreError, ConfigError):
            pass  # the run says what is wrong with the experiment
    found = space_model_names(parse_overrides(args.set or []), args.space, spaces)
    out: dict[str, list[str]] = {name: [] for name in found}
    for parameter, names in found.items():
        for name in names:
            try:
                if name != "none" and name_form(name) != "local":
                    out[parameter].append(name)
            except ConfigError:
                if name.partition(":")[0] not in endpoints:  # an endpoint model's id is checked by the run
                    raise
    return out


def cmd_optimize(args: argparse.Namespace) -> int:
    """``ragtune optimize``: search the space of RAG configurations and write the experiment report."""
    from core.experiment.events import LoggingHandler, ProgressBarHandler
    from core.experiment.runner import DEFAULT_ENDPOINT_WORKERS, ExperimentOptions, run_experiment
    from core.optimization.overrides import parse_overrides

    settings = _settings(args)
    out, files, _ = _output(args.out, settings)
    embedding = settings.embedding_model()
    named = _space_models(args, files)
    embeddings = settings.embedding_models(named["embedding_model"])  # a space may name any of them; the default holds the configured one
    rerankers = settings.rerankers(named["reranker"])
    chat = settings.chat_model()
    if args.max_evals is not None and args.max_evals < 1:
        raise ConfigError(f"--max-evals must be at least 1, got {args.max_evals}")
    if args.workers is not None and args.workers < 1:
        raise ConfigError(f"--workers must be at least 1, got {args.workers}")
    endpoints = settings.embedding_provider != "local" or chat is not None
    options = ExperimentOptions(
        optimizer=args.optimizer, max_evals=12 if args.max_evals is None else args.max_evals, objective=args.metric,
        seed=args.seed, resume_budget=args.max_evals if args.resume else None,
        space_file=args.space, overrides=parse_overrides(args.set or []), experiment_id=args.resume,
        show_progress=not args.json, workers=args.workers or (DEFAULT_ENDPOINT_WORKERS if endpoints else 1),
        cache_replies=not args.no_cache, multi_fidelity=args.multi_fidelity, min_questions=args.min_questions,
        prices=dict(settings.prices),
    )
    if args.dry_run:
        from core.evaluation.dry_run import plan_optimize
        from core.golden import read_golden

        plan = plan_optimize(read_golden(args.golden), chat_model=chat, judge=settings.judge_model(args.judge),
                             max_evals=options.max_evals or 0)
        return _print_plan(args, plan, settings)
    if not args.resume:  # a resumed experiment checks its data against the stored spec
        from core.golden import read_golden

        _check_expected_documents(read_golden(args.golden), args.docs)
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


def _csv(text: str | None, option: str = "") -> list[str]:
    """The comma-separated values of an option, stripped, duplicates dropped (first kept);
    ``[]`` when the option is not given.

    Raises:
        ConfigError: the option is given (``option`` names it) but lists nothing (``","``).
    """
    values = list(dict.fromkeys(p.strip() for p in (text or "").split(",") if p.strip()))
    if text is not None and option and not values:
        raise ConfigError(f"{option} lists nothing (got {text!r}): give at least one value, or leave it out")
    return values


def _threshold(text: str) -> Any:
    """argparse ``type`` of ``--fail-under``: one :class:`core.evaluation.gate.Threshold`, or
    ``argparse.ArgumentTypeError`` with the gate's message (so a malformed value is exit 2)."""
    from core.evaluation.gate import parse_thresholds

    try:
        return parse_thresholds([text])[0]
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--fail-under ")) from None


def _csv_ints(text: str | None, option: str) -> list[int]:
    try:
        return list(dict.fromkeys(int(p) for p in _csv(text, option)))
    except ValueError:
        raise ConfigError(f"{option} takes whole numbers separated by commas, got {text!r}") from None


def _search_setups(names: list[str]) -> list[Any]:
    """Search setups by name: ``vector``, ``keyword``, ``hybrid-rrf[-kN]``, ``hybrid-weighted[-aX]``."""
    from core.vectorstores import SearchSetup

    out: list[Any] = []
    for name in names:
        parts = name.split("-")
        try:
            if name in ("vector", "keyword"):
                out.append(SearchSetup(name))
            elif parts[:2] == ["hybrid", "rrf"] and len(parts) <= 3:
                out.append(SearchSetup("hybrid", "rrf", ranker_k=int(parts[2][1:]) if len(parts) == 3 else 60))
            elif parts[:2] == ["hybrid", "weighted"] and len(parts) <= 3:
                out.append(SearchSetup("hybrid", "weighted", ranker_alpha=float(parts[2][1:]) if len(parts) == 3 else 0.5))
            else:
                raise ValueError
        except (ValueError, IndexError):
            raise ConfigError(f"unknown search setup {name!r}; use vector, keyword, hybrid-rrf, hybrid-rrf-k60, "
                              "hybrid-weighted or hybrid-weighted-a0.5") from None
        if out[-1] in out[:-1]:  # the same setup named twice (keyword,keyword or hybrid-rrf,hybrid-rrf-k60)
            out.pop()
    return out


def _corpus_study(args: argparse.Namespace) -> tuple[Any, Path, dict[str, Any]]:
    """What ``compare-chunking``, ``sweep`` and ``cutoff`` start from: the settings, the out folder
    (``--out``, else ``RAGTUNE_OUT_DIR``) and the keywords ``out_dir``, ``embedding_model`` and
    ``vector_store_config`` (``--vector-store``) of their core function.

    Raises:
        ConfigError: none of the golden file's expected documents is in ``--docs`` (checked
            before any work, as ``evaluate`` does).
    """
    from core.golden import read_golden

    _check_expected_documents(read_golden(args.golden), args.docs)
    settings = _settings(args)
    out = Path(args.out or settings.out_dir)
    return settings, out, {"out_dir": out, "embedding_model": settings.embedding_model(),
                           "vector_store_config": settings.vector_store_config(out, args.vector_store)}


def _print_report(args: argparse.Namespace, report: dict[str, Any], location: Path,
                  text: Callable[[dict[str, Any]], str]) -> int:
    """Set ``report["location"]`` and print the report: as JSON with ``--json``, else ``text(report)``."""
    report["location"] = str(location)
    if args.json:
        _print_json(report)
    else:
        print(text(report))
    return 0


def cmd_compare_chunking(args: argparse.Namespace) -> int:
    """``ragtune compare-chunking``: every technique at every size, judged on the same character
    budget; writes ``chunking/runs/<id>/report.json``."""
    from core.evaluation.chunking import CompareOptions, compare_chunking, format_comparison, save_comparison

    settings, out, inputs = _corpus_study(args)
    chat = settings.chat_model()
    judge = settings.judge_model(args.judge)
    options = CompareOptions(
        methods=_csv(args.techniques, "--techniques") or None, sizes=_csv_ints(args.sizes, "--sizes") or (64, 128, 256),
        budget_chars=args.budget, current=args.current, search=_search_setups([args.search])[0],
        chat_model=chat if judge is not None else None, judge=judge, chunking_chat_model=chat,
        progress=None if args.json else (lambda m: print(m, file=sys.stderr)),
    )
    if args.dry_run:
        from core.chunking import MODEL_FREE_METHODS
        from core.evaluation.dry_run import plan_compare_chunking
        from core.golden import read_golden

        n_builds = len(options.methods or MODEL_FREE_METHODS) * len(options.sizes)
        plan = plan_compare_chunking(read_golden(args.golden), chat_model=options.chat_model, judge=judge,
                                     n_builds=n_builds, budget_chars=args.budget)
        return _print_plan(args, plan, settings)
    report, questions = compare_chunking(args.docs, args.golden, options=options, **inputs)
    return _print_report(args, report, out / save_comparison(out, report, questions), format_comparison)


def _yes_no(text: str | None) -> list[bool]:
    out = []
    for v in _csv(text, "--embed-headings"):
        if v.lower() not in ("yes", "no"):
            raise ConfigError(f"--embed-headings takes yes, no or yes,no; got {v!r}")
        out.append(v.lower() == "yes")
    return out


def cmd_sweep(args: argparse.Namespace) -> int:
    """``ragtune sweep``: every chunking combination built once, every search setup asked of each,
    rows ranked by nDCG@10, MRR, time; writes ``sweep/runs/<id>/report.json``."""
    from core.evaluation.sweep import DEFAULT_METHODS, DEFAULT_OVERLAPS, DEFAULT_SIZES, format_sweep, run_sweep, save_sweep

    settings, out, inputs = _corpus_study(args)
    report = run_sweep(
        args.docs, args.golden, methods=_csv(args.chunking, "--chunking") or DEFAULT_METHODS,
        sizes=_csv_ints(args.chunk_size, "--chunk-size") or DEFAULT_SIZES,
        overlaps=_csv_ints(args.chunk_overlap, "--chunk-overlap") or DEFAULT_OVERLAPS,
        embed_headings=_yes_no(args.embed_headings) or [False],
        setups=_search_setups(_csv(args.search, "--search")) if args.search is not None else None,
        chat_model=settings.chat_model(), progress=None if args.json else (lambda m: print(m, file=sys.stderr)),
        **inputs,
    )
    return _print_report(args, report, out / save_sweep(out, report),
                         lambda r: f"{format_sweep(r, markdown=args.markdown)}\n\nreport: {r['location']}")


def _cutoff_reranker(settings: Any, measure: str) -> Any:
    """The configured reranker (``RAGTUNE_RERANK_*``), checked before any work, when ``measure``
    is ``relevance``; else None.

    Raises:
        ConfigError: the reranker cannot run (``Reranker.verify``), or none is configured.
    """
    if measure != "relevance":
        return None
    reranker = settings.reranker()
    if reranker is not None:
        reranker.verify()
    return reranker


def cmd_cutoff(args: argparse.Namespace) -> int:
    """``ragtune cutoff``: the top-result score that best separates answers from near misses;
    writes ``cutoff/runs/<id>/report.json``."""
    from core.evaluation.cutoff import answer_cutoff, format_cutoff
    from core.reports import LocalFiles, new_run_id

    settings, out, inputs = _corpus_study(args)
    report = answer_cutoff(
        args.docs, args.golden, args.unanswerable, chunking_method=args.chunking,
        chunk_size=_chunk_size(args), chunk_overlap=_chunk_overlap(args),
        setup=_search_setups([args.setup])[0], measure=args.measure,
        reranker=_cutoff_reranker(settings, args.measure), **inputs,
    )
    run_id = new_run_id()
    report["run_id"] = run_id
    key = f"cutoff/runs/{run_id}/report.json"
    LocalFiles(out).write_bytes(key, json.dumps(report, indent=2, ensure_ascii=False).encode("utf-8"))
    return _print_report(args, report, out / key, format_cutoff)


def _load_corpus(docs: str, out: Path) -> Any:
    """Load the documents of ``docs`` (a remote folder is downloaded to ``<out>/inputs``);
    skipped files are reported on stderr."""
    from core.documents import load_documents

    loaded = load_documents(docs, cache_dir=out / "inputs")
    for skipped in loaded.skipped:
        print(f"skipped {skipped.document_id}: {skipped.reason}", file=sys.stderr)
    return loaded


def cmd_template(args: argparse.Namespace) -> int:
    """``ragtune template --docs DIR -o FILE``: write template rows to fill in (never over a file)."""
    from core.golden.template import rows_to_jsonl, template_rows, write_new_file
    from core.settings import Settings

    if Path(args.output).exists():
        raise ConfigError(f"{args.output} exists already: it is never overwritten; choose another name")
    loaded = _load_corpus(args.docs, Path(Settings.from_env().out_dir))
    rows = template_rows(loaded.documents, by=args.by, n=args.n, seed=args.seed)
    write_new_file(args.output, rows_to_jsonl(rows))
    print(f"wrote {plural(len(rows), 'template row')} to {args.output} (one {args.by} each): write a question in "
          f"each, keep or fix its expected id, then run 'ragtune check {args.output}'")
    return 0


def cmd_suggest(args: argparse.Namespace) -> int:
    """``ragtune suggest --docs DIR --golden FILE -o FILE``: propose draft labels from reference answers."""
    from core.golden.suggest import build_index, suggest_labels
    from core.golden.template import rows_to_jsonl, write_new_file
    from core.models import CachedEmbeddingModel, EmbeddingCache

    if Path(args.output).exists():
        raise ConfigError(f"{args.output} exists already: it is never overwritten; choose another name")
    settings = _settings(args)
    out = Path(args.out or settings.out_dir)
    loaded = _load_corpus(args.docs, out)
    model = CachedEmbeddingModel(settings.embedding_model(), EmbeddingCache(out / "cache" / "embeddings.sqlite"))
    with build_index(loaded.documents, model, settings.vector_store_config(out, args.vector_store)) as index:
        result = suggest_labels(args.golden, loaded.documents, index=index, top=args.top, by=args.by)
    write_new_file(args.output, rows_to_jsonl(result.rows))
    print(f"wrote {args.output}: {result.summary()}")
    return 0


def cmd_draft(args: argparse.Namespace) -> int:
    """``ragtune draft --docs DIR -o FILE``: draft questions with a writer and a critic chat model.

    Prints a line per row written; exits 1 when the run wrote no row or a model stopped it
    (refused, stopped answering, or kept ignoring the reply format: the message shows the
    reply expected), 130 when interrupted (saying how to resume); says why fewer rows than
    asked were written."""
    from core.golden.draft import (DraftInterrupted, DraftOptions, DraftStopped, draft_to_file, read_examples,
                                   unanswerable_path)
    from core.models import CachedEmbeddingModel, EmbeddingCache

    settings = _settings(args)
    writer = settings.chat_model_named(args.writer) if args.writer else settings.chat_model()
    if writer is None:
        raise ConfigError("drafting needs a chat model: set RAGTUNE_CHAT_PROVIDER and RAGTUNE_CHAT_MODEL "
                          "(and RAGTUNE_CHAT_BASE_URL), or give --writer MODEL")
    critic = settings.chat_model_named(args.critic) if args.critic else None
    kinds = tuple(k.strip() for k in args.kinds.split(",") if k.strip()) if args.kinds else None
    options = DraftOptions(n=args.n, seed=args.seed, tries=args.tries, max_unusable=args.max_unusable,
                           examples=read_examples(args.examples) if args.examples else (),
                           **({"kinds": kinds} if kinds is not None else {}))
    if args.dry_run:
        from core.golden.draft import plan_draft

        cache_file = Path(args.cache or f"{args.output}.replies.jsonl")
        n_cached = sum(1 for line in cache_file.read_text(encoding="utf-8").splitlines() if line.strip()) \
            if cache_file.is_file() else 0
        return _print_plan(args, plan_draft(writer=writer, critic=critic, n=options.n, tries=options.tries,
                                            n_cached=n_cached), settings)
    out = Path(args.out or settings.out_dir)
    loaded = _load_corpus(args.docs, out)
    model = CachedEmbeddingModel(settings.embedding_model(), EmbeddingCache(out / "cache" / "embeddings.sqlite"))
    side = Path(args.unanswerable_output) if args.unanswerable_output else unanswerable_path(args.output)
    files = f"{args.output}" + (f" and {side}" if "unanswerable" in options.kinds else "")
    print(f"drafting {plural(options.n, 'row')} from {plural(len(loaded.documents), 'document')} "
          f"(writer {writer.model_id}, critic {(critic or writer).model_id}) into {files}", file=sys.stderr)

    def progress(row: dict[str, Any], path: Path) -> None:
        print(f"  {row['id']} ({row['metadata']['kind']}) -> {path}", file=sys.stderr)

    resume = (f"run the same command again to resume: the rows written are kept and the replies so far are cached "
              f"in {args.cache or args.output + '.replies.jsonl'}")
    try:
        summary = draft_to_file(loaded.documents, args.output, writer=writer, critic=critic, embedding_model=model,
                                options=options, cache_path=args.cache, unanswerable_output=side, on_row=progress)
    except DraftStopped as exc:
        print(exc.summary.format(), file=sys.stderr)
        print(f"ragtune draft: {exc}; {plural(exc.summary.n_written, 'row')} written so far, kept in {files}; "
              f"{resume}", file=sys.stderr)
        return 1
    except DraftInterrupted as exc:
        print(exc.summary.format(), file=sys.stderr)
        print(f"ragtune draft: interrupted; {plural(exc.summary.n_written, 'row')} written so far, kept in {files}; "
              f"{resume}", file=sys.stderr)
        return 130
    print(summary.format())
    if not summary.n_written:
        print("ragtune draft: no row was written (see above why)", file=sys.stderr)
        return 1
    print(f"written to {files}: every row is a draft; check each, then remove 'draft'"
          + (f" (unanswerable questions go to {side}, for 'ragtune cutoff --unanswerable')"
             if summary.written.get("unanswerable") else ""))
    return 0


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of the ``ragtune`` command."""
    from core.chunking import MODEL_FREE_METHODS
    from core.reports import serve as serve_defaults

    parser = argparse.ArgumentParser(prog="ragtune", description="Evaluate and optimize RAG setups with evidence.")
    parser.add_argument("--version", action="version", version=f"ragtune {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("check", help="check a golden file; exit 0 when it can be run, 1 when it has errors")
    p.add_argument("golden", help="golden JSONL file (a path, s3://bucket/key or a Blob URL)")
    p.add_argument("--docs", help="corpus folder (a path, s3://bucket/prefix or a Blob URL): warn about expected "
                                  "documents it does not hold")
    p.add_argument("--target", action="append", metavar="KIND:WHERE#INDEX",
                   help="warn about expected documents this index lacks and evidence its chunks do not hold "
                        "(as for evaluate; repeatable)")
    p.add_argument("--targets", metavar="FILE", help="a targets file: check against each of its targets")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--all", action="store_true", help="list every problem in full (by default the first 100 of "
                                                      "each kind, then their count and lines)")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("evaluate", help="evaluate every search setup on documents and a golden file")
    p.add_argument("--docs", help="folder of documents (.pdf .md .html .docx .txt .json): a path, "
                                  "s3://bucket/prefix or a Blob URL (required unless targets are given)")
    p.add_argument("--target", action="append", metavar="KIND:WHERE#INDEX",
                   help="also search an index in place: azure-search:INDEX, azure-search:ENDPOINT#INDEX, "
                        "pgvector:DSN#TABLE, qdrant:PATH_OR_URL#COLLECTION, milvus:URI_OR_DB#COLLECTION (repeatable)")
    p.add_argument("--targets", metavar="FILE", help="a targets file (YAML or JSON) naming targets and their fields")
    p.add_argument("--golden", required=True, help="golden JSONL file (a path, s3://bucket/key or a Blob URL)")
    p.add_argument("--out", help=f"output folder (default $RAGTUNE_OUT_DIR or {DEFAULT_OUT})")
    p.add_argument("--chunking", default="recursive",
                   choices=list(MODEL_FREE_METHODS), help="chunking technique (default recursive; see compare-chunking)")
    p.add_argument("--chunk-size", type=int, help="chunk size in tokens (default 256; not for hierarchical)")
    p.add_argument("--chunk-overlap", type=int, help="chunk overlap in tokens (default 32, at most an eighth of the size; recursive only)")
    p.add_argument("--title", action=argparse.BooleanOptionalAction, default=True,
                   help="put each document's title (its file name, made readable) in front of its chunks' text, "
                        "which is embedded, searched and reranked (default: on)")
    p.add_argument("--vector-store", choices=["milvus-lite", "milvus", "pgvector"],
                   help="vector store (default $RAGTUNE_VECTOR_STORE; else milvus when $RAGTUNE_MILVUS_URI is set; "
                        "else milvus-lite in the output folder)")
    p.add_argument("--generate", action=argparse.BooleanOptionalAction, default=True,
                   help="answer every question with the setup that finds the most and score the answers: with the "
                        "chat model from RAGTUNE_CHAT_* when set, else the extractive baseline (default: on)")
    p.add_argument("--judge", metavar="MODEL",
                   help="judge answers with this chat model (on RAGTUNE_JUDGE_BASE_URL or the chat endpoint)")
    p.add_argument("--rank-by", choices=["doc", "page", "evidence"], help="grain to rank setups by (default: finest labelled)")
    p.add_argument("--judge-repeat", type=int, default=1, metavar="N",
                   help="ask the judge N times per answer and metric, and report how the scores spread (default 1)")
    p.add_argument("--label-unjudged", action="store_true",
                   help="with a judge: grade (0-3, the UMBRELA prompt) each setup's top results that are not from an "
                        "expected document or page, and report judged@k, the holes, and found@k and nDCG with those "
                        "labels beside the golden-only numbers")
    p.add_argument("--label-depth", type=int, default=10, metavar="K",
                   help="with --label-unjudged: results per setup and question graded (default 10)")
    p.add_argument("--dry-run", action="store_true",
                   help="send nothing: print the chat and judge calls, tokens and cost this would take")
    p.add_argument("--embedding-model", action="append", metavar="ID[,ID]",
                   help="embedding models whose vectors dense and hybrid search run on (default: the configured one)")
    p.add_argument("--only", action="append", metavar="PATTERN", help="evaluate only the setups whose key matches "
                   "(shell-style, for example 'hybrid*' or '*+rerank'; repeatable)")
    p.add_argument("--skip", action="append", metavar="PATTERN", help="leave out the setups whose key matches (repeatable)")
    p.add_argument("--by", action="append", metavar="metadata.KEY",
                   help="also report every setup's metrics per value of this metadata key, with counts (repeatable)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--fail-under", action="append", metavar="METRIC=V", type=_threshold,
                   help="exit 4 when the chosen setup's METRIC (found@k, recall@k, precision@k, ndcg@k, mrr; at the "
                        "rank grain) is under V, e.g. --fail-under found@5=0.8 (repeatable)")
    p.add_argument("--setup", default="finds_the_most",
                   help="the setup the gate checks: a pick (finds_the_most, best_for_balance, best_for_time) or a "
                        "setup name (default finds_the_most; with a baseline, a pick is the setup the baseline "
                        "gated)")
    p.add_argument("--baseline", metavar="RUN|FILE|latest",
                   help="exit 4 when the gated setup finds significantly fewer questions than in this run on the same "
                        "golden file (exact McNemar test, alpha 0.05): a stored run's id, a report.json file, or "
                        "latest: the newest stored run that passed its gate on this golden file, corpus and branch; "
                        "the setup it gated is the one gated now")
    p.add_argument("--branch", metavar="NAME",
                   help="the branch this run is on, recorded in the report (default $RAGTUNE_BRANCH, else the CI's: "
                        "GITHUB_HEAD_REF, GITHUB_REF_NAME, CI_COMMIT_REF_NAME, BUILD_SOURCEBRANCHNAME)")
    p.add_argument("--baseline-branch", metavar="NAME",
                   help="with --baseline latest: take the baseline from this branch (for example main, for a pull "
                        "request) instead of this run's branch")
    p.add_argument("--any-branch", action="store_true",
                   help="with --baseline latest: take the baseline from any branch")
    p.set_defaults(func=cmd_evaluate)

    def app_options(p: argparse.ArgumentParser) -> None:
        p.add_argument("--config", help="the app config: request template and response mapping (YAML or JSON; see "
                                        "the README's 'Evaluate your deployed app')")
        p.add_argument("--override", action="append", metavar="KEY=VALUE",
                       help="add to the config's overrides, sent as ${overrides} (repeatable; VALUE read as YAML)")
        p.add_argument("--judge", metavar="MODEL", help="judge the answers with this chat model (on "
                                                        "RAGTUNE_JUDGE_BASE_URL or the chat endpoint)")
        p.add_argument("--judge-repeat", type=int, default=1, metavar="N",
                       help="ask the judge N times per answer and metric, and report how the scores spread (default 1)")
        p.add_argument("--refresh", action="store_true",
                       help="ask the app again even for questions whose replies are cached")
        p.add_argument("--dry-run", action="store_true",
                       help="send nothing: print the calls, tokens and cost this would take, and what the cache holds")
        p.add_argument("--out", help=f"output folder, or an s3:// or Blob address for the report (caches stay in "
                                     f"$RAGTUNE_OUT_DIR or {DEFAULT_OUT}; default $RAGTUNE_OUT_DIR or {DEFAULT_OUT})")
        p.add_argument("--html", metavar="FILE", help="also write the page of the run (or the comparison)")
        p.add_argument("--json", action="store_true", help="print the report as JSON")

    p = sub.add_parser("evaluate-app", help="ask a deployed RAG app every golden question and score its replies")
    p.add_argument("--golden", required=True, help="golden JSONL file, native or Amazon Bedrock (conversations are "
                                                   "played turn by turn)")
    p.add_argument("--url", help="the app's endpoint (default: the config's url, else $RAGTUNE_APP_URL)")
    app_options(p)
    p.add_argument("--fail-under", action="append", metavar="METRIC=V",
                   help="exit 4 when METRIC is under V: a measure of the citations (found@5, mrr, ... at the rank "
                        "grain), an answer metric (judge.correctness, unitxt.answer_correctness, ...) or answered "
                        "(the share of questions answered) (repeatable)")
    p.add_argument("--baseline", metavar="RUN|latest",
                   help="exit 4 when this run is significantly worse than that stored app run on the same golden "
                        "file (exact McNemar tests on the questions answered and cited right; bootstrap intervals "
                        "of each answer metric's per-question differences); 'latest' is the newest app run "
                        "that passed its gate on this golden file and branch")
    p.add_argument("--branch", help="the branch this run is on (default: the CI's, e.g. GITHUB_HEAD_REF or "
                                    "GITHUB_REF_NAME); a 'latest' baseline comes from the same branch")
    p.set_defaults(func=cmd_evaluate_app)

    p = sub.add_parser("compare-apps", help="compare two app versions question by question (stored runs or URLs)")
    p.add_argument("first", help="a stored app run id, 'latest', or a URL to ask now")
    p.add_argument("second", help="a stored app run id or a URL to ask now")
    p.add_argument("--golden", help="golden JSONL file (needed to ask a URL)")
    p.add_argument("--url", help=argparse.SUPPRESS)
    app_options(p)
    p.set_defaults(func=cmd_compare_apps)

    p = sub.add_parser("optimize", help="search the space of RAG configurations (random phase, then a GAM surrogate)")
    p.add_argument("--docs", required=True, help="folder of documents (a path, s3://bucket/prefix or a Blob URL)")
    p.add_argument("--golden", required=True, help="golden JSONL file, native or Amazon Bedrock (a path, "
                                                   "s3://bucket/key or a Blob URL)")
    p.add_argument("--space", help="JSON or YAML file narrowing or widening the default search space")
    p.add_argument("--set", action="append", metavar="NAME=V1,V2",
                   help="override one parameter's values, e.g. --set chunk_size=128,256 (repeatable)")
    p.add_argument("--max-evals", type=int, default=None,
                   help="most configurations to evaluate (default 12; with --resume: the experiment's new budget)")
    p.add_argument("--optimizer", choices=["gam", "random"], default="gam")
    p.add_argument("--metric", help="objective (default: overall_score with a chat or judge model, else "
                                    "unitxt.answer_correctness; mrr without reference answers)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--judge", metavar="MODEL", help="judge answers with this chat model")
    p.add_argument("--vector-store", choices=["milvus-lite", "milvus", "pgvector"])
    p.add_argument("--resume", metavar="EXPERIMENT_ID", help="continue a stopped experiment")
    p.add_argument("--workers", type=int, metavar="N",
                   help="evaluations run at once, in threads (default 1 with the local embedding model, 4 when the "
                        "models are endpoints)")
    p.add_argument("--no-cache", action="store_true",
                   help="ask the chat and judge models afresh instead of reusing cached replies")
    p.add_argument("--multi-fidelity", action=argparse.BooleanOptionalAction, default=True,
                   help="score configurations on a seeded subset of the questions first and promote the better ones "
                        "(retrieval objectives; default on)")
    p.add_argument("--min-questions", type=int, metavar="N", help="questions of the first rung (default 16)")
    p.add_argument("--dry-run", action="store_true",
                   help="send nothing: print the chat and judge calls (at most), tokens and cost this would take")
    p.add_argument("--out", help=f"output folder, or an s3:// or Blob address for the experiment (caches stay in "
                                 f"$RAGTUNE_OUT_DIR or {DEFAULT_OUT}; default $RAGTUNE_OUT_DIR or {DEFAULT_OUT})")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_optimize)

    p = sub.add_parser("compare-chunking", help="compare chunking techniques on the same character budget")
    p.add_argument("--docs", required=True, help="folder of documents (a path, s3://bucket/prefix or a Blob URL)")
    p.add_argument("--golden", required=True, help="golden JSONL file")
    p.add_argument("--techniques", help="comma-separated chunking techniques (default: every one without a chat model)")
    p.add_argument("--sizes", help="comma-separated chunk sizes in tokens, 4 characters each (default 64,128,256)")
    p.add_argument("--budget", type=int, default=4000, help="characters handed over per question (default 4000)")
    p.add_argument("--search", default="vector", help="search setup (default vector; hybrid-rrf, hybrid-weighted, keyword)")
    p.add_argument("--current", metavar="KEY", help="the build in use (e.g. recursive-64-8-plain): it stays unless the "
                                                    "best beats it significantly")
    p.add_argument("--judge", metavar="MODEL", help="with a chat model: judge answers and count 'answered'")
    p.add_argument("--dry-run", action="store_true",
                   help="send nothing: print the chat and judge calls (at most), tokens and cost this would take")
    p.add_argument("--vector-store", choices=["milvus-lite", "milvus", "pgvector"])
    p.add_argument("--out", help=f"output folder (default $RAGTUNE_OUT_DIR or {DEFAULT_OUT})")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_compare_chunking)

    p = sub.add_parser("sweep", help="build every chunking combination once and ask every search setup of each")
    p.add_argument("--docs", required=True, help="folder of documents (a path, s3://bucket/prefix or a Blob URL)")
    p.add_argument("--golden", required=True, help="golden JSONL file")
    p.add_argument("--chunking", help="comma-separated chunking methods (default recursive)")
    p.add_argument("--chunk-size", help="comma-separated sizes in tokens (default 128,256)")
    p.add_argument("--chunk-overlap", help="comma-separated overlaps in tokens (default 0,32; for the methods that take one)")
    p.add_argument("--embed-headings", help="yes, no or yes,no (default no)")
    p.add_argument("--search", help="comma-separated search setups (default vector,hybrid-rrf,hybrid-weighted)")
    p.add_argument("--markdown", action="store_true", help="print the table as Markdown (for a pull request)")
    p.add_argument("--vector-store", choices=["milvus-lite", "milvus", "pgvector"])
    p.add_argument("--out", help=f"output folder (default $RAGTUNE_OUT_DIR or {DEFAULT_OUT})")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_sweep)

    p = sub.add_parser("cutoff", help="the top-result score below which to decline to answer")
    p.add_argument("--docs", required=True, help="folder of documents (a path, s3://bucket/prefix or a Blob URL)")
    p.add_argument("--golden", required=True, help="golden JSONL file (labelled questions)")
    p.add_argument("--unanswerable", required=True, help="JSONL file of questions no document answers")
    p.add_argument("--setup", default="vector", metavar="KEY", help="search setup (default vector; hybrid-rrf, hybrid-weighted, keyword)")
    p.add_argument("--chunking", default="recursive", help="chunking method of the setup (default recursive)")
    p.add_argument("--chunk-size", type=int, help="chunk size in tokens (default 256)")
    p.add_argument("--chunk-overlap", type=int, help="chunk overlap in tokens (default 32, at most an eighth of the size)")
    p.add_argument("--measure", choices=["similarity", "relevance"], default="similarity",
                   help="the top result's search score, or a reranker's relevance score")
    p.add_argument("--vector-store", choices=["milvus-lite", "milvus", "pgvector"])
    p.add_argument("--out", help=f"output folder (default $RAGTUNE_OUT_DIR or {DEFAULT_OUT})")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_cutoff)

    p = sub.add_parser("report", help="print a stored retrieval report or experiment report")
    p.add_argument("run", nargs="?", default="latest",
                   help="an evaluate run id, 'latest' (default: the newest evaluate run, else the newest experiment), "
                        "an optimize experiment id, or a compare-chunking or sweep id")
    p.add_argument("--out", help=f"report store: a folder, s3://bucket/prefix or a Blob URL (default $RAGTUNE_OUT_DIR "
                                 f"or {DEFAULT_OUT})")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--html", metavar="FILE", help="write the report as a self-contained HTML page")
    p.add_argument("--csv", metavar="FILE", help="write one row per setup and grain (per configuration for an "
                                                 "experiment) as CSV")
    p.add_argument("--per-question", action="store_true", help="with --csv: one row per question and setup")
    p.add_argument("--mlflow", nargs="?", const="", default=None, metavar="TRACKING_URI",
                   help="log the report to MLflow: one run per evaluated configuration (default a local ./mlruns store)")
    p.set_defaults(func=cmd_report)

    from core.golden.draft import KINDS, DraftOptions
    from core.golden.suggest import DEFAULT_TOP
    from core.golden.template import DEFAULT_TEMPLATE_ROWS

    p = sub.add_parser("template", help="write golden rows to fill in, one sampled document or page each")
    p.add_argument("--docs", required=True, help="folder of documents (a path, s3://bucket/prefix or a Blob URL)")
    p.add_argument("--by", choices=["doc", "page"], default="page", help="one row per page (default) or per document")
    p.add_argument("--n", type=int, default=DEFAULT_TEMPLATE_ROWS, help=f"rows to write (default {DEFAULT_TEMPLATE_ROWS})")
    p.add_argument("--seed", type=int, default=0, help="picks where the even spread through the corpus starts")
    p.add_argument("-o", "--output", required=True, help="the file to write (never overwritten)")
    p.set_defaults(func=cmd_template)

    p = sub.add_parser("suggest", help="propose draft expected ids for questions with a reference answer")
    p.add_argument("--docs", required=True, help="folder of documents (a path, s3://bucket/prefix or a Blob URL)")
    p.add_argument("--golden", required=True, help="golden JSONL file, native or Amazon Bedrock")
    p.add_argument("--top", type=int, default=DEFAULT_TOP, help=f"ids proposed per question (default {DEFAULT_TOP})")
    p.add_argument("--by", choices=["doc", "page"], default="page", help="propose pages (default) or documents")
    p.add_argument("--vector-store", choices=["milvus-lite", "milvus", "pgvector"],
                   help="where the chunks are indexed (as for evaluate; the collection is shared with it)")
    p.add_argument("--out", help=f"output folder of the index and caches (default $RAGTUNE_OUT_DIR or {DEFAULT_OUT})")
    p.add_argument("-o", "--output", required=True, help="the golden file to write (never overwritten)")
    p.set_defaults(func=cmd_suggest)

    p = sub.add_parser("draft", help="draft golden questions from the documents with a writer and a critic chat model")
    p.add_argument("--docs", required=True, help="folder of documents (a path, s3://bucket/prefix or a Blob URL)")
    p.add_argument("--n", type=int, default=DraftOptions.n, help=f"rows wanted (default {DraftOptions.n})")
    p.add_argument("--seed", type=int, default=DraftOptions.seed, help="picks where the spread of passages starts")
    p.add_argument("--kinds", help=f"comma-separated kinds of question (default {','.join(KINDS)})")
    p.add_argument("--examples", help="a golden file whose questions show the writer the style wanted")
    p.add_argument("--writer", metavar="MODEL", help="writer model on the chat endpoint (default $RAGTUNE_CHAT_MODEL)")
    p.add_argument("--critic", metavar="MODEL", help="critic model on the chat endpoint (default the writer)")
    p.add_argument("--tries", type=int, default=DraftOptions.tries,
                   help=f"writer replies per passage before it is set aside (default {DraftOptions.tries})")
    p.add_argument("--max-unusable", type=int, default=DraftOptions.max_unusable, metavar="N",
                   help=f"stop after N replies in a row that are not in the reply format (default "
                        f"{DraftOptions.max_unusable})")
    p.add_argument("--cache", help="reply cache file (default OUTPUT.replies.jsonl)")
    p.add_argument("--dry-run", action="store_true",
                   help="send nothing: print the chat and judge calls (at most), tokens and cost this would take")
    p.add_argument("--unanswerable-output", metavar="FILE",
                   help="where unanswerable questions go, for 'cutoff --unanswerable' (default "
                        "OUTPUT without .jsonl, then .unanswerable.jsonl)")
    p.add_argument("--out", help=f"output folder of the caches (default $RAGTUNE_OUT_DIR or {DEFAULT_OUT})")
    p.add_argument("-o", "--output", required=True,
                   help="the golden file to write (never overwritten; a stopped run of the same settings resumes)")
    p.set_defaults(func=cmd_draft)

    p = sub.add_parser("serve", help="serve the pages of every report in a store (127.0.0.1 by default)")
    p.add_argument("--out", help=f"report store: a folder, s3://bucket/prefix or a Blob URL (default $RAGTUNE_OUT_DIR "
                                 f"or {DEFAULT_OUT})")
    p.add_argument("--host", default=serve_defaults.DEFAULT_HOST,
                   help=f"address to listen on (default {serve_defaults.DEFAULT_HOST}: this machine only)")
    p.add_argument("--port", type=int, default=serve_defaults.DEFAULT_PORT,
                   help=f"TCP port (default {serve_defaults.DEFAULT_PORT})")
    p.set_defaults(func=cmd_serve)

    for name in ("evaluate", "optimize", "compare-chunking", "sweep", "cutoff", "suggest", "draft"):
        sub.choices[name].add_argument(
            "--allow-download", action="store_true",
            help="download an hf:ORG/NAME model missing from the Hugging Face cache (once; as "
                 "RAGTUNE_ALLOW_MODEL_DOWNLOAD=1 does); without it such a model is an error and nothing is downloaded")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``ragtune`` command; returns the exit code."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    from core.inputs import is_remote

    docs = getattr(args, "docs", None)
    if isinstance(docs, str) and docs and not is_remote(docs) and not Path(docs).is_dir():
        # every command that reads a documents folder: say so before any work, not that no
        # expected document is in it
        what = "is not a folder" if Path(docs).exists() else "does not exist"
        print(f"ragtune {args.command}: --docs {docs} {what}", file=sys.stderr)
        return 1
    try:
        return int(args.func(args))
    except RagtuneError as exc:
        print(f"ragtune {args.command}: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # the reader of stdout left (``ragtune check ... | head``): stop quietly
        import os

        devnull = os.open(os.devnull, os.O_WRONLY)  # as the Python docs advise, so the exit flush is quiet too
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except OSError as exc:  # a path that cannot be read or written: say which, without a traceback
        where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
        print(f"ragtune {args.command}: {exc.strerror or exc}{where}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


#: How many collections of the collector's middle generation come before one of the oldest
#: (Python's default is 10) in the ``ragtune`` command's process; see :func:`run`.
FULL_COLLECTION_EVERY = 100


def run() -> None:
    """The ``ragtune`` command's process: :func:`main`, then exit with its code.

    Two settings of the garbage collector, for this process only. A run imports large
    libraries (unitxt, transformers, the models' runtimes) whose objects live until it ends,
    and every full collection walks all of them: full collections therefore come
    :data:`FULL_COLLECTION_EVERY` middle-generation collections apart instead of 10 (young
    objects are collected as often as before, and Python's other condition for a full
    collection, that long-lived objects grew by a quarter since the last one, still holds).
    And once the command is done, every object still held is moved to the collector's
    permanent generation (``gc.freeze``), which no collection examines, so the collection
    Python runs as it exits does not walk them all once more to free what the end of the
    process frees anyway (objects are still released by reference counting as modules are
    torn down, and ``atexit`` handlers run; finalisers of objects left in reference cycles do
    not, which is why ``core.vectorstores.milvus`` stops the Milvus Lite servers it started
    from an ``atexit`` handler). Not in :func:`main`, which tests and other programs call in a
    process that goes on.
    """
    import gc

    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_COLLECTION_EVERY)
    code = main()
    gc.freeze()
    sys.exit(code)


if __name__ == "__main__":
    run()
