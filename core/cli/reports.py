"""Stored reports: ``ragtune report`` (text, JSON, page, CSV, MLflow) and ``ragtune serve``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.cli.common import _output, _print_json, _print_report, _write_output, _write_page
from core.cli.formats import format_experiment, format_report
from core.errors import ConfigError, DamagedFileError, StoreError
from core.reports.files import read_json, shown_key
from core.text import plural

if TYPE_CHECKING:
    from core.reports.files import Files


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
    from core.reports import ReportStore
    from core.reports.keys import EXPERIMENTS_PREFIX
    from core.settings import Settings

    settings = Settings.from_env()
    _, files, where = _output(args.out, settings)
    if _report_chunking(args, files, where):
        return 0
    experiment_key = f"{EXPERIMENTS_PREFIX}/{args.run}/report.json"
    if args.run != "latest" and "/" not in args.run and ".." not in args.run and files.exists(experiment_key):
        experiment = read_json(files, experiment_key, dict)
        if experiment.get("kind", "experiment") != "experiment" or not isinstance(experiment.get("leaderboard"), list):
            raise DamagedFileError(f"{shown_key(files, experiment_key)} is not an experiment report (kind "
                                   f"{experiment.get('kind')!r}, leaderboard {type(experiment.get('leaderboard')).__name__})")
        experiment["location"] = f"{where}/{experiment_key}"
        experiment.setdefault("kind", "experiment")  # reports stored before the field
        try:
            if not _write_exports(args, experiment):
                _print_report(args, experiment, format_experiment)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:  # a field of the wrong shape
            raise DamagedFileError(f"{shown_key(files, experiment_key)} holds a field ragtune cannot show "
                                   f"({type(exc).__name__}: {exc})") from None
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
            from core.experiment.engine import report_so_far
            from core.reports.pages.site import load_experiment

            report, running = load_experiment(files, args.run, report_so_far)
            _write_exports(args, dict(report, status="running" if running else report.get("status")))
            return 0
        raise StoreError(f"experiment {args.run} has no report yet (it stopped before its end): continue it with "
                         f"'ragtune optimize --resume {args.run}' and the same --docs, --golden and --out")
    if args.run == "latest" and not store.run_ids():
        finished = [e for e in experiments if files.exists(f"{EXPERIMENTS_PREFIX}/{e}/report.json")]
        if finished:
            args.run = finished[0]
            return cmd_report(args)
        from core.reports.app_runs import app_run_ids

        apps = app_run_ids(files)
        if apps:  # only evaluate-app runs here: the newest of them
            args.run = apps[0]
            return cmd_report(args)
    try:
        report = store.load_run(args.run)
    except StoreError as exc:
        if experiments:
            raise StoreError(f"{exc}; experiments: {', '.join(experiments[:5])}") from None
        raise
    report["location"] = f"{where}/retrieval/runs/{report.get('run_id', args.run)}/report.json"
    if not _write_exports(args, report):
        _print_report(args, report, format_report)
    return 0


def _report_chunking(args: argparse.Namespace, files: Files, where: str) -> bool:
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
        report = read_json(files, key)
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
    if args.per_question and not args.csv:
        raise ConfigError("--per-question shapes the --csv export; give --csv FILE too")
    wrote = False
    if args.html:
        from core.reports.pages import render_report

        _write_page(args.html, render_report(report))
        wrote = True
    if args.csv:
        from core.reports.exports import to_csv

        _write_output(args.csv, to_csv(report, per_question=args.per_question).encode("utf-8"))
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
    report in a store until interrupted; says where once it listens.

    Raises:
        ConfigError: a local ``--out`` that is not a folder, or an address that cannot be
            listened on (taken, not this machine's): one line, exit 1, nothing served.
    """
    from core.inputs import is_remote
    from core.reports import ReportStore
    from core.reports.serve import serve
    from core.settings import Settings

    settings = Settings.from_env()
    local = args.out or settings.out_dir
    if not is_remote(local) and not Path(local).is_dir():
        what = "is not a folder" if Path(local).exists() else "does not exist"
        raise ConfigError(f"report store {local} {what}: give --out the folder evaluate and optimize wrote "
                          "(or an s3:// or Blob address)")
    _, files, where = _output(args.out, settings)

    def listening(url: str) -> None:
        print(f"serving the reports in {where} on {url} (Ctrl-C stops)", file=sys.stderr)

    serve(ReportStore(files), where=where, host=args.host, port=args.port, on_listening=listening)
    return 0
