"""Pages read from a report store: what each page needs, loaded through the store, rendered.

Every function that takes a store raises :class:`~core.errors.NotStoredError` when the
thing asked for is not stored (the message says what is), so a server answers 404 with it,
and :class:`~core.errors.StoreError` when the store cannot be read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable
from urllib.parse import quote

from core.errors import NotStoredError, StoreError
from core.metrics.paired import ALPHA, paired_outcomes
from core.metrics.retrieval import TOP_K
from core.reports.app_runs import app_run_ids
from core.reports.files import is_safe_id, read_json
from core.reports.keys import CHUNKING_RUNS_PREFIX, EXPERIMENTS_PREFIX, SWEEP_RUNS_PREFIX
import core.reports.pages.plots as plots
from core.reports.pages.app_page import render_app
from core.reports.pages.render import plotly_src, render
from core.reports.pages.views import chunking_view, experiment_view, run_view
from core.reports.tables import found_by_question, metric_label, report_kind

if TYPE_CHECKING:
    from core.reports.files import Files
    from core.reports.store import ReportStore

#: Most runs the index lists and the history page draws (newest first); the rest are counted.
MOST_RUNS = 5000
#: The metrics the history page draws, at each run's rank grain.
HISTORY_METRICS = ("found@10", "found@1", "mrr")


@dataclass(frozen=True)
class Links:
    """The URLs a page links to (``{id}`` and ``{golden}`` are filled in); an empty template
    leaves that link out.

    Attributes:
        index: the index of runs.
        run: one evaluate run's page.
        experiment: one experiment's page.
        chunking: one chunking run's or sweep's page (``{kind}`` is ``runs`` or ``sweeps``).
        history: the history page of one golden file.
        compare: the compare page (takes ``?a=RUN&b=RUN``).
        asset: the shared plotly.js (``{file}``: :attr:`~core.reports.pages.render.PageAsset.name`),
            which the pages then reference instead of holding their own copy; empty: every
            page inlines it.
        app: one ``evaluate-app`` run's page.
    """

    index: str = "/"
    run: str = "/runs/{id}"
    experiment: str = "/experiments/{id}"
    chunking: str = "/chunking/{kind}/{id}"
    history: str = "/history?golden={golden}"
    compare: str = "/compare"
    asset: str = "/assets/{file}"
    app: str = "/apps/{id}"

    def url(self, name: str, **values: str) -> str:
        """The URL ``name`` with ``values`` filled in (URL-encoded), or ``""``."""
        template = getattr(self, name)
        return template.format(**{k: quote(str(v), safe="") for k, v in values.items()}) if template else ""


#: The links of the pages the Functions app serves (it has no index page, chunking page or
#: compare page of its own).
FUNCTION_LINKS = Links(index="", run="/api/runs/{id}/page", experiment="/api/experiments/{id}/page", chunking="",
                       history="/api/history/page?golden={golden}", compare="", asset="/api/assets/{file}", app="")


def function_links(code: str | None = None) -> Links:
    """:data:`FUNCTION_LINKS` carrying the function key a page was fetched with, so its links
    open for the same reader: ``?code=K`` (``&code=K`` after a query) with ``K`` URL-encoded;
    without a key (none given, or empty: the key came in the ``x-functions-key`` header), the
    links as they are.

    References:
        Azure Functions HTTP trigger, API key authorization (the ``code`` query parameter):
        https://learn.microsoft.com/azure/azure-functions/functions-bindings-http-webhook-trigger#api-key-authorization
    """
    if not code:
        return FUNCTION_LINKS
    key = quote(str(code), safe="")
    values = {}
    for name in ("index", "run", "experiment", "chunking", "history", "compare", "app"):
        template = getattr(FUNCTION_LINKS, name)
        values[name] = f"{template}{'&' if '?' in template else '?'}code={key}" if template else ""
    return Links(**values, asset=FUNCTION_LINKS.asset)  # the asset route takes no key


def error_page(status: int, message: str, links: Links | None = None) -> str:
    """A short page for an error answer: what went wrong, never a trace."""
    heading = {400: "Bad request", 404: "Not found"}.get(status, "The report store could not be read")
    return render("error.html.j2", plots=False, status=status, heading=heading, message=message, links=_links(links))


def _links(links: Links | None, **extra: str) -> dict[str, str] | None:
    if links is None or not links.index:
        return {k: v for k, v in extra.items()} or None
    return {"index": links.index, **{k: v for k, v in extra.items()}}


def render_run(report: dict[str, Any], links: Links | None = None) -> str:
    """The page of an evaluate run's report (``links`` None: a standalone file without
    navigation)."""
    sha = (report.get("golden") or {}).get("sha256")
    context = run_view(report)
    context["links"] = _links(links, history=links.url("history", golden=sha) if links and sha else "")
    return render("run.html.j2", plotly_src=plotly_src(links), **context)


def render_experiment(report: dict[str, Any], running: bool = False, links: Links | None = None) -> str:
    """The page of an experiment report; ``running``: the experiment has not finished."""
    return render("experiment.html.j2", plotly_src=plotly_src(links), links=_links(links),
                  **experiment_view(report, running))


#: The ``kind`` of a chunking comparison's report (``ragtune compare-chunking``).
COMPARISON_KIND = "chunking-comparison"
#: The ``kind`` of a sweep's report (``ragtune sweep``).
SWEEP_KIND = "sweep"
#: A sweep's columns on its page, as ``ragtune sweep`` prints them (report names).
SWEEP_COLUMNS = ("rank", "method", "chunk_size", "chunk_overlap", "embed_headings", "search", "ndcg@10", "mrr",
                 "recall@5", "recall@10", "n_chunks", "build_s", "median_ms")
#: Most rows a chunking page's bar chart draws (the table lists every one).
MOST_BARS = 30


def render_chunking(report: dict[str, Any], kind: str = "chunking run", links: Links | None = None) -> str:
    """The page of a chunking run or a sweep.

    A chunking comparison (``kind`` :data:`COMPARISON_KIND`) shows the best build, the ties,
    the McNemar counts against the best and charts, as ``compare-chunking`` prints them (see
    :func:`~core.reports.pages.views.chunking_view`). Any other report is read loosely: its
    first list of objects is the rows (each with a ``name``/``technique``/``method``, a
    found-like score, ``tied_with_best`` when given).
    """
    if report.get("kind") == COMPARISON_KIND:
        return render("comparison.html.j2", plotly_src=plotly_src(links), links=_links(links), **chunking_view(report))
    rows = []
    listing = next((v for v in report.values() if isinstance(v, list) and v and all(isinstance(x, dict) for x in v)), [])
    columns: list[str] = []
    for item in listing:
        for key, value in item.items():
            if key not in columns and (value is None or isinstance(value, (str, int, float, bool))):
                columns.append(key)
    metric = next((c for c in columns if c.startswith(("found", "recall", "mrr", "score"))), None)
    sweep = report.get("kind") == SWEEP_KIND and isinstance(report.get("rows"), list)
    if sweep:  # the columns `ragtune sweep` prints, ranked as it ranks them
        listing = [r for r in report["rows"] if isinstance(r, dict)]
        columns = [c for c in SWEEP_COLUMNS if any(c in r for r in listing)]
        metric = "ndcg@10"
    for item in listing:
        label = str(item.get("name") or item.get("technique") or item.get("method") or item.get("chunking_method") or "?")
        detail = label
        if sweep:
            label, detail = str(item.get("build")), f"#{item.get('rank')} {item.get('build')} {item.get('search')}"
        rows.append({"label": label, "detail": detail, "short": f"#{item.get('rank')}" if sweep else label,
                     "cells": [item.get(c) for c in columns], "value": item.get(metric) if metric else None,
                     "tied": bool(item.get("tied_with_best"))})
    figure = None
    drawn = rows[:MOST_BARS]
    if metric and any(isinstance(r["value"], (int, float)) for r in drawn):
        figure = plots.technique_bars([r["short"] for r in drawn], [r["value"] for r in drawn],
                                      [r["tied"] for r in drawn], metric_label(metric), [r["detail"] for r in drawn],
                                      title=(f"{metric_label(metric)} of each build and search, by rank"
                                             + (f" (the first {MOST_BARS})" if len(rows) > MOST_BARS else ""))
                                      if sweep else None)
    scalars = {k: v for k, v in report.items() if v is None or isinstance(v, (str, int, float, bool))}
    return render("chunking.html.j2", plotly_src=plotly_src(links), links=_links(links), kind=kind, report=report,
                  rows=rows, columns=columns, label_name="build" if sweep else "technique",
                  figure=figure, scalars=scalars, title=str(report.get("run_id") or report.get("id") or kind))


def render_report(report: dict[str, Any], links: Links | None = None) -> str:
    """The page of any stored report, by its kind: an evaluate run, an experiment, a chunking
    comparison or a sweep.

    Raises:
        ConfigError: not a report this version knows.
    """
    if isinstance(report, dict) and report.get("kind") in (COMPARISON_KIND, SWEEP_KIND):
        return render_chunking(report, kind="sweep" if report["kind"] == SWEEP_KIND else "chunking run", links=links)
    kind = report_kind(report)
    if kind == "experiment":
        return render_experiment(report, running=report.get("status") == "running", links=links)
    if kind == "chunking":
        return render_chunking(report, links=links)
    if kind == "app":
        return render_app(report, links)
    return render_run(report, links)


# Pages read from a store ------------------------------------------------------------------

def run_page(store: ReportStore, run_id: str, links: Links | None = None) -> str:
    """The page of a stored evaluate run (``latest``: the newest). Raises StoreError as
    ``ReportStore.load_run``."""
    return render_run(store.load_run(run_id), links)


#: Builds a running experiment's report so far from its stored state, or None when no
#: experiment has that id (``core.experiment.engine.report_so_far``, given by the servers).
ReportSoFar = Callable[["Files", str], "dict[str, Any] | None"]


def load_experiment(files: Files, experiment_id: str, so_far: ReportSoFar | None = None) -> tuple[dict[str, Any], bool]:
    """``(report, running)``: the experiment's final report, or while it runs the report so far
    that ``so_far`` builds (the pages render reports; the experiment's engine builds them, so
    the caller hands it in).

    Raises:
        StoreError: no experiment has that id, or it has no final report and no ``so_far``
            was given.
    """
    if not is_safe_id(experiment_id):
        raise NotStoredError(f"no experiment {experiment_id!r}")
    prefix = f"{EXPERIMENTS_PREFIX}/{experiment_id}"
    if files.exists(f"{prefix}/report.json"):
        return read_json(files, f"{prefix}/report.json"), False
    report = so_far(files, experiment_id) if so_far is not None else None
    if report is None:
        raise NotStoredError(f"no experiment {experiment_id!r}" if so_far is not None
                             else f"experiment {experiment_id!r} has no report yet")
    return report, True


def experiment_page(files: Files, experiment_id: str, links: Links | None = None,
                    so_far: ReportSoFar | None = None) -> str:
    """The page of a stored experiment: finished, or running when ``so_far`` is given (see
    :func:`load_experiment`). Raises StoreError when unknown."""
    report, running = load_experiment(files, experiment_id, so_far)
    return render_experiment(report, running, links)


def chunking_prefixes() -> dict[str, str]:
    """Where chunking comparisons (``runs``) and sweeps (``sweeps``) keep their reports in a
    report store (:mod:`core.reports.keys`)."""
    return {"runs": CHUNKING_RUNS_PREFIX, "sweeps": SWEEP_RUNS_PREFIX}


def chunking_page(files: Files, kind: str, report_id: str, links: Links | None = None) -> str:
    """The page of a stored chunking run (``kind`` ``runs``) or sweep (``sweeps``).

    Raises:
        StoreError: nothing stored under that id, or not valid JSON.
    """
    prefix = chunking_prefixes().get(kind)
    if prefix is None or not is_safe_id(report_id):
        raise NotStoredError(f"no chunking {kind} {report_id!r}")
    key = f"{prefix}/{report_id}/report.json"
    if not files.exists(key):
        raise NotStoredError(f"no chunking {kind[:-1]} {report_id!r}")
    report = read_json(files, key)
    if not isinstance(report, dict):
        raise StoreError(f"{key} is not a report (a JSON object)")
    return render_chunking(report, "sweep" if kind == "sweeps" else "chunking run", links)


def _summaries(store: ReportStore, most: int = MOST_RUNS) -> tuple[list[dict[str, Any]], int]:
    ids = store.run_ids()
    out = []
    for run_id in ids[:most]:
        try:
            out.append(store.load_summary(run_id))
        except StoreError as exc:
            out.append({"run_id": run_id, "error": str(exc), "golden": {}, "setups": []})
    return out, len(ids)


def history_entries(store: ReportStore, golden: str) -> list[dict[str, Any]]:
    """Summaries of every run on one golden file (by its sha256, or by its path), oldest first."""
    summaries, _ = _summaries(store)
    chosen = [s for s in summaries if golden and golden in ((s.get("golden") or {}).get("sha256"),
                                                            (s.get("golden") or {}).get("path"))]
    return sorted(chosen, key=lambda s: (s.get("started_at") or "", s.get("run_id") or ""))


def _indexing_text(summary: dict[str, Any]) -> str:
    if summary.get("targets"):
        return "targets " + ", ".join(str(t.get("name")) for t in summary["targets"])
    ix = summary.get("indexing") or {}
    chunking = ix.get("chunking")
    if isinstance(chunking, dict):
        chunking = " ".join(str(v) for v in (chunking.get("method"), chunking.get("chunk_size"), chunking.get("chunk_overlap"))
                            if v is not None)
    return f"{chunking or '-'} · {ix.get('embedding_model') or '-'} · {ix.get('vector_store') or '-'}"


def target_changes(seen: dict[str, str], targets: list[dict[str, Any]]) -> list[str]:
    """The names of ``targets`` (a run summary's) whose fingerprint differs from the one last
    ``seen`` for the same name; ``seen`` is updated to these."""
    changed = []
    for t in targets:
        name, fingerprint = str(t.get("name")), t.get("fingerprint")
        if fingerprint is None:
            continue
        if name in seen and seen[name] != fingerprint:
            changed.append(name)
        seen[name] = fingerprint
    return changed


def render_history(entries: list[dict[str, Any]], golden: str, links: Links | None = None) -> str:
    """The history page: for one golden file, every run's numbers per setup as lines over
    time, and a table of the runs with changes of indexing marked, and the targets whose
    description (fingerprint) changed since the run before that searched them.

    Args:
        entries: run summaries (:func:`core.reports.summary.run_summary`), oldest first.
        golden: the golden file's sha256 or path, as asked.
    """
    figures = []
    for metric in HISTORY_METRICS:
        series: dict[str, dict[str, list[Any]]] = {}
        for e in entries:
            grain = e.get("rank_grain")
            for s in e.get("setups") or []:
                value = (((s.get("metrics") or {}).get(grain) or {}).get("means") or {}).get(metric)
                if value is None:
                    continue
                line = series.setdefault(s.get("name"), {"x": [], "y": [], "text": []})
                line["x"].append(e.get("started_at"))
                line["y"].append(value)
                line["text"].append(f"{e.get('run_id')}<br>{_indexing_text(e)}")
        if series:
            figures.append((metric, plots.history_lines(series, metric_label(metric))))
    rows, previous = [], None
    fingerprints: dict[str, str] = {}
    for e in entries:
        text = _indexing_text(e)
        changed_targets = target_changes(fingerprints, e.get("targets") or [])
        grain = e.get("rank_grain")
        best = None
        for s in e.get("setups") or []:
            if s.get("name") == e.get("finds_the_most"):
                best = (((s.get("metrics") or {}).get(grain) or {}).get("means") or {}).get("found@10")
        rows.append({"run_id": e.get("run_id"), "started_at": e.get("started_at"), "indexing": text,
                     "changed": previous is not None and text != previous, "grain": grain,
                     "changed_targets": changed_targets,
                     "finds_the_most": e.get("finds_the_most"), "found10": best,
                     "url": links.url("run", id=e.get("run_id")) if links else ""})
        previous = text
    path = next(((e.get("golden") or {}).get("path") for e in reversed(entries)), None)
    return render("history.html.j2", plotly_src=plotly_src(links), links=_links(links), golden=golden, path=path,
                  figures=figures,
                  rows=list(reversed(rows)), n_runs=len(entries))


def history_page(store: ReportStore, golden: str, links: Links | None = None) -> str:
    """The history page of one golden file (sha256 or path) in a store; an empty history
    says so."""
    return render_history(history_entries(store, golden), golden, links)


def compare_view(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    """Per setup both runs have: the questions only one run found (in the top k at each run's
    rank grain), with the exact McNemar test."""
    texts = {str(q.get("id")): q.get("question") for r in (first, second) for q in r.get("questions") or []}
    names_a = [s.get("name") for s in first.get("setups") or []]
    names_b = {s.get("name") for s in second.get("setups") or []}
    setups = []
    for name in names_a:
        if name not in names_b:
            continue
        result = paired_outcomes(found_by_question(first, name, TOP_K), found_by_question(second, name, TOP_K))
        setups.append({"name": name, "n": result.n, "p_value": result.p_value, "significant": result.significant,
                       "only_first": [(q, texts.get(q)) for q in result.only_first],
                       "only_second": [(q, texts.get(q)) for q in result.only_second]})

    def metric(report: dict[str, Any], name: str) -> float | None:
        grain = (report.get("evaluation") or {}).get("rank_grain")
        for s in report.get("setups") or []:
            if s.get("name") == name:
                return (((s.get("metrics") or {}).get(grain) or {}).get("means") or {}).get("found@10")
        return None

    names = [s["name"] for s in setups]
    figure = plots.compare_bars(names, [metric(first, n) for n in names], [metric(second, n) for n in names],
                                (str(first.get("run_id")), str(second.get("run_id"))), "found@10") if names else None
    same_golden = (first.get("golden") or {}).get("sha256") == (second.get("golden") or {}).get("sha256")
    grains = ((first.get("evaluation") or {}).get("rank_grain"), (second.get("evaluation") or {}).get("rank_grain"))
    return {"first": first, "second": second, "setups": setups, "figure": figure, "alpha": ALPHA,
            "same_golden": same_golden, "grains": grains}


def render_compare(first: dict[str, Any], second: dict[str, Any], links: Links | None = None) -> str:
    """The page comparing two evaluate runs (see :func:`compare_view`)."""
    return render("compare.html.j2", plotly_src=plotly_src(links), links=_links(links), **compare_view(first, second))


def compare_page(store: ReportStore, first: str, second: str, links: Links | None = None) -> str:
    """The compare page of two stored runs. Raises StoreError as ``ReportStore.load_run``."""
    return render_compare(store.load_run(first), store.load_run(second), links)


def experiment_ids(files: Files) -> list[tuple[str, bool]]:
    """``(experiment id, finished)`` for every stored experiment, newest first."""
    ids: dict[str, bool] = {}
    for key in files.list(EXPERIMENTS_PREFIX):
        parts = key.split("/")
        if len(parts) == 3 and parts[2] in ("study.json", "report.json"):
            ids[parts[1]] = ids.get(parts[1], False) or parts[2] == "report.json"
    return sorted(ids.items(), reverse=True)


def chunking_ids(files: Files) -> list[tuple[str, str]]:
    """``(kind, id)`` of every stored chunking run (``runs``) and sweep (``sweeps``), newest first."""
    out = []
    for kind, prefix in chunking_prefixes().items():
        for key in files.list(prefix):
            parts = key[len(prefix) + 1:].split("/")
            if len(parts) == 2 and parts[1] == "report.json":
                out.append((kind, parts[0]))
    return sorted(out, key=lambda x: x[1], reverse=True)


def index_page(store: ReportStore, links: Links | None = None, where: str = "") -> str:
    """The index of a report store: evaluate runs newest first (with their golden file's
    history), experiments, chunking runs and sweeps, and a form to compare two runs."""
    links = links or Links()
    summaries, n_runs = _summaries(store)
    runs = []
    goldens: dict[str, dict[str, Any]] = {}
    for s in summaries:
        g = s.get("golden") or {}
        grain = s.get("rank_grain")
        best = next(((((x.get("metrics") or {}).get(grain) or {}).get("means") or {}).get("found@10")
                     for x in s.get("setups") or [] if x.get("name") == s.get("finds_the_most")), None)
        runs.append({"run_id": s.get("run_id"), "started_at": s.get("started_at"), "golden": g.get("path"),
                     "n_questions": g.get("n_questions"), "finds_the_most": s.get("finds_the_most"), "found10": best,
                     "grain": grain, "error": s.get("error"), "url": links.url("run", id=s.get("run_id")),
                     "history": links.url("history", golden=g["sha256"]) if g.get("sha256") else ""})
        if g.get("sha256"):
            entry = goldens.setdefault(g["sha256"], {"path": g.get("path"), "n": 0,
                                                     "url": links.url("history", golden=g["sha256"])})
            entry["n"] += 1
    experiments = [{"id": e, "finished": done, "url": links.url("experiment", id=e)}
                   for e, done in experiment_ids(store.files)]
    chunking = [{"kind": k, "id": i, "url": links.url("chunking", kind=k, id=i)} for k, i in chunking_ids(store.files)]
    apps = [{"id": i, "url": links.url("app", id=i)} for i in app_run_ids(store.files)[:MOST_RUNS]]
    return render("index.html.j2", plots=False, links=_links(links), where=where, runs=runs, n_runs=n_runs, goldens=goldens,
                  experiments=experiments, chunking=chunking, compare=links.compare, apps=apps)
