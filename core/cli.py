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
from typing import Any, Sequence

from core import __version__
from core.errors import ConfigError, GoldenError, RagtuneError
from core.text import plural

DEFAULT_OUT = "ragtune-out"
#: ``optimize``'s exit code when the experiment ran but no evaluation succeeded.
EXIT_ALL_FAILED = 3


def _print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False))


def cmd_check(args: argparse.Namespace) -> int:
    """``ragtune check GOLDEN [--docs DIR] [--json]``: 0 when the file can be run, 1 when not.

    GOLDEN and DIR may be local paths or addresses (``s3://...``, Blob URLs; see
    ``core.inputs``); a remote folder is listed, not downloaded."""
    from core.golden import check_golden, format_check
    from core.inputs import is_remote, shown_address

    documents = None
    if args.docs:
        from core.documents import list_document_ids

        if is_remote(args.docs):
            documents = list_document_ids(args.docs)
            if not documents:
                print(f"ragtune check: --docs {shown_address(args.docs)} holds no documents", file=sys.stderr)
                return 1
        else:
            docs = Path(args.docs)
            if not docs.is_dir():
                print(f"ragtune check: --docs {docs} is not a folder", file=sys.stderr)
                return 1
            documents = list_document_ids(docs)
    check = check_golden(args.golden, documents=documents)
    if args.json:
        _print_json(check.to_dict())
    else:
        print(format_check(check))
    return 0 if check.ok else 1


def _fmt(value: Any, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def format_report(report: dict[str, Any]) -> str:
    """Return a retrieval report as text tables a person reads: one table per grain with
    scored questions (found in top 10, found first, recall@5, MRR, nDCG@10, median and p95
    search time per setup), then the picks and where the report lives."""
    lines = []
    g, c, ix = report["golden"], report["corpus"], report["indexing"]
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
    rank_grain = report["evaluation"]["rank_grain"]
    for grain in report["evaluation"]["grains"]:
        first = report["setups"][0]["metrics"][grain] if report["setups"] else None
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
        header = f"{'setup':<24} {'found@10':>9} {'found@1':>8} {'recall@5':>9} {'mrr':>6} {'ndcg@10':>8} {'median ms':>10} {'p95 ms':>8}"
        lines.append(header)
        lines.append("-" * len(header))
        for s in report["setups"]:
            m = s["metrics"][grain]["means"]
            lines.append(
                f"{s['name']:<24} {_fmt(m.get('success@10')):>9} {_fmt(m.get('success@1')):>8} "
                f"{_fmt(m.get('recall@5')):>9} {_fmt(m.get('mrr')):>6} {_fmt(m.get('ndcg@10')):>8} "
                f"{s['timings_ms']['median']:>10.2f} {s['timings_ms']['p95']:>8.2f}"
            )
    picks = report["picks"]
    lines.append("")
    if picks.get("reason"):
        lines.append(f"no pick: {picks['reason']}")
    for key in ("finds_the_most", "best_for_balance", "best_for_time"):
        lines.append(f"{key:<17} {picks[key] or '-':<24} ({picks['rules'][key]})")
    answers = report.get("answers")
    if answers:
        gen = answers["generator"]
        kind = {"extractive": "extractive baseline, no language model", "llm": "language model",
                "external": "answers read from the file"}.get(gen["kind"], gen["kind"])
        where = f" from the top {gen['k']} chunks of {gen['setup']}" if gen.get("setup") else ""
        lines.append(f"\nanswers by {gen['model_id']} ({kind}){where}: {answers['n_answered']} of "
                     f"{answers['n_questions']} answered, {answers['n_failed']} failed")
        header = f"{'metric':<28} {'mean':>6} {'95% CI':>15} {'scored':>7} {'failed':>7} {'invalid':>8}"
        lines.append(header)
        lines.append("-" * len(header))
        for m in answers["metrics"]:
            sc = m["scores"]
            ci = f"{_fmt(sc['ci_low'])}-{_fmt(sc['ci_high'])}" if sc["ci_low"] is not None else "-"
            lines.append(f"{m['name']:<28} {_fmt(sc['mean']):>6} {ci:>15} {m['n_scored']:>7} {m['n_failed']:>7} "
                         f"{m.get('n_invalid', 0):>8}")
        if answers.get("overall_score") is not None:
            lines.append(f"overall_score {answers['overall_score']:.3f} (mean of {', '.join(answers['overall_metrics'])})")
        if answers["n_failed"]:
            lines.append(f"warning: {answers['n_failed']} of {answers['n_questions']} answers failed; the scores above "
                         "cover only the answered questions (errors per question are in the report)")
        for m in answers["metrics"]:
            if m["scores"]["mean"] is None and m.get("reason"):
                lines.append(f"{m['name']}: no score: {m['reason']}")
    if report.get("location"):
        lines.append(f"\nreport: {report['location']}")
    return "\n".join(lines)


def cmd_evaluate(args: argparse.Namespace) -> int:
    """``ragtune evaluate --docs DIR --golden FILE``: evaluate every search setup, write the report."""
    from core.evaluation import EvaluateOptions, evaluate_retrieval
    from core.evaluation.gate import EXIT_GATE, check_baseline, latest_baseline, parse_thresholds, run_gate
    from core.golden import read_golden
    from core.reports import ReportStore, new_run_id
    from core.settings import Settings

    settings = Settings.from_env()
    out, files, where = _output(args.out, settings)
    thresholds = parse_thresholds(args.fail_under or [])
    if args.chunking == "hierarchical" and (args.chunk_size is not None or args.chunk_overlap is not None):
        print("ragtune evaluate: hierarchical chunking makes one chunk per document element and takes no "
              "--chunk-size or --chunk-overlap", file=sys.stderr)
        return 1
    if args.judge and not args.generate:
        print("ragtune evaluate: --judge judges answers; it has nothing to judge with --no-generate", file=sys.stderr)
        return 1
    if args.chunking == "hybrid" and args.chunk_overlap is not None:
        print("ragtune evaluate: hybrid chunking takes no --chunk-overlap", file=sys.stderr)
        return 1
    options = EvaluateOptions(
        chunking_method=args.chunking,
        chunk_size=256 if args.chunk_size is None else args.chunk_size,
        chunk_overlap=32 if args.chunk_overlap is None else args.chunk_overlap,
        rank_grain=args.rank_by, show_progress=not args.json,
        generate=args.generate, chat_model=settings.chat_model() if args.generate else None,
        judge=settings.judge_model(args.judge) if args.generate else None,
    )
    model = settings.embedding_model()
    try:
        golden = read_golden(args.golden)  # read once: the report and the stored copy share these bytes
        _check_expected_documents(golden, args.docs)
        store = ReportStore(files)
        baseline = None
        if args.baseline == "latest":
            baseline = latest_baseline(store, golden.sha256)
            if baseline is None:
                print("gate: no earlier run on this golden file to compare with", file=sys.stderr)
        elif args.baseline:
            baseline = store.load_run(args.baseline)
            check_baseline(baseline, golden.sha256)
        report = evaluate_retrieval(
            args.docs, args.golden, out_dir=out, embedding_model=model,
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
    report["golden"]["stored_as"] = store.save_golden(golden.sha256, golden.raw)
    key = store.save_run(run_id, report)
    report["location"] = f"{where}/{key}"
    if args.json:
        _print_json(report)
    else:
        print(format_report(report))
        _print_warnings(report["golden"]["warnings"], report["golden"]["path"])
    if thresholds or baseline is not None:
        lines, failed = run_gate(report, setup=args.setup, thresholds=thresholds, baseline=baseline)
        for line in lines:
            print(f"gate: {line}", file=sys.stderr)
        if failed:
            return EXIT_GATE
    return 0


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


def _check_expected_documents(golden: Any, docs: str) -> None:
    """Stop before any work when none of the golden file's expected documents is in ``docs``.

    Raises:
        ConfigError: with the reason (``core.evaluation.gate.missing_documents_reason``).
    """
    from core.documents import list_document_ids
    from core.evaluation.gate import missing_documents_reason
    from core.inputs import shown_address

    expected = {t.document_id for q in golden.questions for t in q.expected}
    if not expected:
        return
    reason = missing_documents_reason(expected, list_document_ids(docs), shown_address(docs))
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
    """``ragtune report [RUN|latest|EXPERIMENT] [--out DIR|ADDRESS] [--json] [--html FILE]
    [--csv FILE [--per-question]] [--mlflow [URI]]``: print a stored report (``latest``: the
    newest evaluate run, or the newest finished experiment when no run is stored), or write
    it as a page, a CSV file or MLflow runs.

    Raises:
        StoreError: nothing stored under that id (the message lists recent runs and
            experiments), or an experiment that stopped before writing its report (a page
            of it is still written with ``--html``).
    """
    from core.errors import StoreError
    from core.reports import ReportStore
    from core.settings import Settings

    settings = Settings.from_env()
    _, files, where = _output(args.out, settings)
    experiment_key = f"experiments/{args.run}/report.json"
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
    store = ReportStore(files)
    experiments = sorted({k.split("/")[1] for k in files.list("experiments") if k.endswith("/study.json")},
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
        finished = [e for e in experiments if files.exists(f"experiments/{e}/report.json")]
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
    parameters, duration), the best configuration, and what the search cost."""
    lines = []
    g, sp, opt = report["golden"], report["space"], report["optimizer"]
    lines.append(f"experiment {report['experiment_id']}: {plural(g['n_questions'], 'question')}, "
                 f"{plural(report['corpus']['n_documents'], 'document')}; {plural(sp['n_valid'], 'valid configuration')}; "
                 f"optimizer {opt['name']} (seed {opt['seed']}, up to {plural(opt['max_evals'], 'evaluation')}); "
                 f"objective {report['objective']}")
    header = (f"{'rank':>4} {'score':>6} {'95% CI':>13} {'chunking':<12} {'size':>5} {'overlap':>7} {'k':>3} "
              f"{'search':<22} {'generator':<11} {'seconds':>8}")
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
        lines.append(f"{rank:>4} {score:>6} {ci:>13} {str(p.get('chunking_method')):<12} {size:>5} "
                     f"{overlap:>7} {str(p.get('number_of_chunks')):>3} {search:<22} {gen:<11} {dur:>8}")
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
    lines.append(f"cost: {plural(c['evaluations'], 'evaluation')} ({c['failed']} failed, {c['stored']} from stored "
                 f"results), {plural(c['collections_built'], 'collection')} built, "
                 f"{plural(c['texts_embedded'], 'text')} embedded; {report['timings_s']['total_s']:.0f} s")
    if report.get("location"):
        lines.append(f"report: {report['location']}")
    return "\n".join(lines)


def cmd_optimize(args: argparse.Namespace) -> int:
    """``ragtune optimize``: search the space of RAG configurations and write the experiment report."""
    from core.optimization.events import LoggingHandler, ProgressBarHandler
    from core.optimization.runner import ExperimentOptions, run_experiment
    from core.optimization.space import parse_overrides
    from core.settings import Settings

    settings = Settings.from_env()
    out = Path(args.out or settings.out_dir)
    embedding = settings.embedding_model()
    chat = settings.chat_model()
    if args.max_evals is not None and args.max_evals < 1:
        raise ConfigError(f"--max-evals must be at least 1, got {args.max_evals}")
    options = ExperimentOptions(
        optimizer=args.optimizer, max_evals=12 if args.max_evals is None else args.max_evals, objective=args.metric,
        seed=args.seed, resume_budget=args.max_evals if args.resume else None,
        space_file=args.space, overrides=parse_overrides(args.set or []), experiment_id=args.resume,
        show_progress=not args.json,
    )
    handlers: list[Any] = [LoggingHandler(quiet=not args.json)]
    bar = None
    if not args.json:
        bar = ProgressBarHandler(options.max_evals or 0, args.metric or "objective")
        handlers.append(bar)
    try:
        report = run_experiment(
            args.docs, args.golden, out_dir=out, embedding_models={embedding.model_id: embedding},
            chat_models={chat.model_id: chat} if chat is not None else None,
            judge=settings.judge_model(args.judge), vector_store_config=settings.vector_store_config(out, args.vector_store),
            vector_store_configs=settings.vector_store_configs(out),
            options=options, handlers=handlers,
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


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of the ``ragtune`` command."""
    from core.reports import serve as serve_defaults

    parser = argparse.ArgumentParser(prog="ragtune", description="Evaluate and optimize RAG setups with evidence.")
    parser.add_argument("--version", action="version", version=f"ragtune {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("check", help="check a golden file; exit 0 when it can be run, 1 when it has errors")
    p.add_argument("golden", help="golden JSONL file (a path, s3://bucket/key or a Blob URL)")
    p.add_argument("--docs", help="corpus folder (a path, s3://bucket/prefix or a Blob URL): warn about expected "
                                  "documents it does not hold")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("evaluate", help="evaluate every search setup on documents and a golden file")
    p.add_argument("--docs", required=True, help="folder of documents (.pdf .md .html .docx .txt .json): a path, "
                                                 "s3://bucket/prefix or a Blob URL")
    p.add_argument("--golden", required=True, help="golden JSONL file (a path, s3://bucket/key or a Blob URL)")
    p.add_argument("--out", help=f"output folder (default $RAGTUNE_OUT_DIR or {DEFAULT_OUT})")
    p.add_argument("--chunking", default="recursive", choices=["recursive", "hierarchical", "hybrid"])
    p.add_argument("--chunk-size", type=int, help="chunk size in tokens (default 256; not for hierarchical)")
    p.add_argument("--chunk-overlap", type=int, help="chunk overlap in tokens (default 32; recursive only)")
    p.add_argument("--vector-store", choices=["milvus-lite", "milvus", "pgvector"],
                   help="vector store (default $RAGTUNE_VECTOR_STORE; else milvus when $RAGTUNE_MILVUS_URI is set; "
                        "else milvus-lite in the output folder)")
    p.add_argument("--generate", action=argparse.BooleanOptionalAction, default=True,
                   help="answer every question with the setup that finds the most and score the answers: with the "
                        "chat model from RAGTUNE_CHAT_* when set, else the extractive baseline (default: on)")
    p.add_argument("--judge", metavar="MODEL",
                   help="judge answers with this chat model (on RAGTUNE_JUDGE_BASE_URL or the chat endpoint)")
    p.add_argument("--rank-by", choices=["doc", "page", "evidence"], help="grain to rank setups by (default: finest labelled)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--fail-under", action="append", metavar="METRIC=V",
                   help="exit 4 when the chosen setup's METRIC (found@k, recall@k, precision@k, ndcg@k, mrr; at the "
                        "rank grain) is under V, e.g. --fail-under found@5=0.8 (repeatable)")
    p.add_argument("--setup", default="finds_the_most",
                   help="the setup the gate checks: a pick (finds_the_most, best_for_balance, best_for_time) or a "
                        "setup name (default finds_the_most)")
    p.add_argument("--baseline", metavar="RUN|latest",
                   help="exit 4 when the chosen setup finds significantly fewer questions than in this stored run "
                        "on the same golden file (exact McNemar test, alpha 0.05); latest: the newest such run")
    p.set_defaults(func=cmd_evaluate)

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
    p.add_argument("--metric", help="objective (default unitxt.answer_correctness, or mrr without reference answers)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--judge", metavar="MODEL", help="judge answers with this chat model")
    p.add_argument("--vector-store", choices=["milvus-lite", "milvus", "pgvector"])
    p.add_argument("--resume", metavar="EXPERIMENT_ID", help="continue a stopped experiment")
    p.add_argument("--out", help=f"output folder (default $RAGTUNE_OUT_DIR or {DEFAULT_OUT})")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_optimize)

    p = sub.add_parser("report", help="print a stored retrieval report or experiment report")
    p.add_argument("run", nargs="?", default="latest",
                   help="an evaluate run id, 'latest' (default: the newest evaluate run, else the newest experiment), or an optimize experiment id")
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

    p = sub.add_parser("serve", help="serve the pages of every report in a store (127.0.0.1 by default)")
    p.add_argument("--out", help=f"report store: a folder, s3://bucket/prefix or a Blob URL (default $RAGTUNE_OUT_DIR "
                                 f"or {DEFAULT_OUT})")
    p.add_argument("--host", default=serve_defaults.DEFAULT_HOST,
                   help=f"address to listen on (default {serve_defaults.DEFAULT_HOST}: this machine only)")
    p.add_argument("--port", type=int, default=serve_defaults.DEFAULT_PORT,
                   help=f"TCP port (default {serve_defaults.DEFAULT_PORT})")
    p.set_defaults(func=cmd_serve)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``ragtune`` command; returns the exit code."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        return int(args.func(args))
    except RagtuneError as exc:
        print(f"ragtune {args.command}: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # a path that cannot be read or written: say which, without a traceback
        where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
        print(f"ragtune {args.command}: {exc.strerror or exc}{where}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
