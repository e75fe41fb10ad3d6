"""App reports: where they are kept, how they read as text, their gate, two app versions compared.

Layout under a report store's :class:`~core.reports.files.Files` root (next to the retrieval
runs of :mod:`core.reports.store`)::

    app/runs/<run id>/report.json     one ``ragtune evaluate-app`` run (written atomically)

The gate (``--fail-under``, ``--baseline``): thresholds on the citations' retrieval measures
(``found@5=0.8``, at the report's rank grain) are checked by :func:`core.evaluation.gate.run_gate`
on the report's ``citations`` setup, as ``evaluate`` checks a search setup; thresholds on an
answer metric (``judge.correctness=0.7``) or on ``answered`` (the share of questions the app
answered) are checked here. Against a baseline run on the same golden file: the citations'
questions found are compared by the exact McNemar test (``run_gate``), and so are the
questions answered; each answer metric's per-question difference gets a 95 % bootstrap
interval (:func:`core.metrics.bootstrap.bootstrap_interval`), and the gate fails when that
interval lies wholly below 0.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from core.errors import ConfigError
from core.evaluation.gate import is_retrieval_metric, parse_thresholds, run_gate
from core.metrics.answers import ALL_METRICS
from core.metrics.bootstrap import bootstrap_interval
from core.metrics.llm_judge import LOST_KINDS
from core.metrics.paired import ALPHA, paired_outcomes
from core.metrics.retrieval import TOP_K, found_name
from core.reports.tables import found_by_question
from core.text import plural

__all__ = [
    "APP_RUNS_PREFIX", "AppThreshold", "app_gate", "app_run_ids", "check_app_gate", "compare_apps", "format_app_comparison",
    "format_app_report", "latest_app_baseline", "load_app_run", "parse_app_thresholds", "save_app_run",
]

from core.reports.app_runs import APP_RUNS_PREFIX, app_run_ids, is_app_run, load_app_run, save_app_run

if TYPE_CHECKING:
    from core.reports.store import ReportStore

#: The share of questions answered, as a threshold's name.
ANSWERED = "answered"


def latest_app_baseline(store: ReportStore, golden_sha256: str, *, branch: str | None = None) -> dict[str, Any] | None:
    """The newest stored app run that can be a ``--baseline latest``, or None: asked the golden
    file with this sha256, on the same branch (a run that recorded none matches ``branch``
    None), and passed its gate (its report's ``gate.passed``). A run that failed its gate, or
    had none, is never a baseline, so a regression pushed twice fails twice. The app's URL is
    not compared: a release is often deployed at a URL of its own.
    """
    for run_id in app_run_ids(store.files):
        report = load_app_run(store, run_id)
        if (report.get("golden") or {}).get("sha256") != golden_sha256:
            continue
        if (report.get("branch") or None) != branch:
            continue
        if (report.get("gate") or {}).get("passed") is True:
            return report
    return None


# ------------------------------------------------------------------------------------ text


def _fmt(value: Any, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def answer_metric_lines(answers: dict[str, Any]) -> list[str]:
    """The answer metrics as text: mean, interval, counts, and what was lost to the judge (by
    why), how repeated judge calls differed, and the judge's agreement with people."""
    lines = []
    header = (f"{'metric':<28} {'mean':>6} {'95% CI':>15} {'scored':>7} {'failed':>7} {'invalid':>8} "
              f"{'judge lost':>10}")
    lines += [header, "-" * len(header)]
    for m in answers.get("metrics") or []:
        sc = m["scores"]
        ci = f"{_fmt(sc['ci_low'])}-{_fmt(sc['ci_high'])}" if sc["ci_low"] is not None else "-"
        lost = m.get("lost")
        lost_n = "-" if lost is None else str(sum(lost.values()))
        lines.append(f"{m['name']:<28} {_fmt(sc['mean']):>6} {ci:>15} {m['n_scored']:>7} {m['n_failed']:>7} "
                     f"{m.get('n_invalid', 0):>8} {lost_n:>10}")
    for m in answers.get("metrics") or []:
        lost = m.get("lost") or {}
        if sum(lost.values()):
            parts = ", ".join(f"{lost[k]} {k.replace('_', ' ')}" for k in LOST_KINDS if lost.get(k))
            lines.append(f"{m['name']}: {plural(sum(lost.values()), 'judge call')} lost ({parts}); left out of the "
                         "mean, never counted as 0")
        rep = m.get("repeats")
        if rep:
            by = ", ".join(_fmt(v) for v in rep.get("mean_by_repeat") or [])
            lines.append(f"{m['name']}: {rep['n']} judge calls per answer: mean sd {_fmt(rep.get('mean_sd'))}, largest "
                         f"range {_fmt(rep.get('max_range'))}; {rep['n_changed']} of {rep['n_items']} answers scored "
                         f"differently, {rep['n_verdict_changed']} changed pass/fail at 0.5; mean per call {by}")
        ag = m.get("agreement")
        if ag:
            ppi = ag.get("ppi")
            tail = (f"; {ppi['method']} {_fmt(ppi['mean'])} ({_fmt(ppi['ci_low'])}-{_fmt(ppi['ci_high'])}) from "
                    f"{ppi['n_labeled']} graded and {ppi['n_unlabeled']} ungraded answers" if ppi else "")
            lines.append(f"{m['name']}: agreement with people on {ag['n']} answers: weighted kappa "
                         f"{_fmt(ag.get('kappa'))}, Spearman {_fmt(ag.get('spearman'))}, judge minus people "
                         f"{_fmt(ag.get('mean_difference'))}{tail}")
    for m in answers.get("metrics") or []:
        if m["scores"]["mean"] is None and m.get("reason"):
            lines.append(f"{m['name']}: no score: {m['reason']}")
    return lines


def format_app_report(report: dict[str, Any]) -> str:
    """An app report as text a person reads: requests and failures, latency, refusals, the
    citations' measures per grain, the answer metrics, per turn, and where it is stored."""
    g, app, req = report["golden"], report["app"], report["requests"]
    lines = [f"app {app['url']}: {plural(g['n_questions'], 'question')} of {g['path']} (sha256 {g['sha256'][:12]}); "
             f"{req['n_answered']} answered, {req['n_failed']} failed; {req['n_sent']} requests sent, "
             f"{req['n_from_cache']} replies from the cache"]
    if req.get("failures"):
        lines.append("failed: " + ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in sorted(req["failures"].items())))
    if req.get("stopped_early"):
        s = req["stopped_early"]
        why = (f"no credentials ({s['reason']})" if s.get("reason")
               else f"{s['after_failures_in_a_row']} failures in a row")
        lines.append(f"stopped early: {why}; {s['n_not_sent']} questions not sent (what was answered is scored)")
    lat = report["latency_ms"]
    lines.append(f"latency ms: p50 {_fmt(lat['p50'], 1)}, p95 {_fmt(lat['p95'], 1)} over {lat['n']} replies")
    ref = report["refusals"]
    share = "-" if ref["share"] is None else f"{ref['share']:.1%}"
    text = f"refusals: {ref['n_refused']} of {ref['n_answered']} answers ({share})"
    if ref.get("unanswerable"):
        text += (f"; {ref['unanswerable']['n_refused']} of {ref['unanswerable']['n']} unanswerable questions, "
                 f"{ref['answerable']['n_refused']} of {ref['answerable']['n']} answerable ones")
    lines.append(text)
    grain = report["evaluation"]["rank_grain"]
    for s in report.get("setups") or []:
        grains = grain if grain == "doc" else f"{grain} and doc"
        lines.append(f"\n[{s['name']}] ranked as cited, at grain {grains}")
        header = f"{'grain':<9} {'scored':>7} {'found@1':>8} {'found@5':>8} {'found@10':>9} {'95% CI':>11} {'mrr':>6}"
        lines += [header, "-" * len(header)]
        for gname in ("page", "doc", "evidence"):
            agg = s["metrics"].get(gname)
            if not agg:
                continue
            if not agg["n_scored"]:
                why = (f"{agg['n_unscorable']} questions without labels" if agg["n_unscorable"]
                       else "no question answered")
                lines.append(f"{gname:<9} {0:>7} not scorable ({why})")
                continue
            m, low, high = agg["means"], agg["ci_low"], agg["ci_high"]
            ci = f"{_fmt(found_name(low, 10), 2)}-{_fmt(found_name(high, 10), 2)}"
            lines.append(f"{gname:<9} {agg['n_scored']:>7} {_fmt(found_name(m, 1)):>8} {_fmt(found_name(m, 5)):>8} "
                         f"{_fmt(found_name(m, 10)):>9} {ci:>11} {_fmt(m.get('mrr')):>6}")
    answers = report.get("answers") or {}
    if answers.get("metrics"):
        lines.append("")
        lines += answer_metric_lines(answers)
    if answers.get("left_out"):
        lines.append(f"not computed: {', '.join(answers['left_out']['metrics'])} ({answers['left_out']['reason']})")
    turns = report.get("turns") or []
    if len(turns) > 1:
        lines.append("\nper turn: " + "; ".join(
            f"turn {t['turn']}: {t['n_answered']}/{t['n_questions']} answered"
            + (f", cited right {t['n_found']}/{t['n_scorable']}" if t["n_scorable"] else "") for t in turns))
    if report.get("location"):
        lines.append(f"\nreport: {report['location']}")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------ gate


@dataclass(frozen=True)
class AppThreshold:
    """``metric >= value`` for an app run: an answer metric's mean, or ``answered``.

    Attributes:
        metric: ``answered`` or an answer metric's name (``judge.correctness``).
        value: the lowest passing value, in [0, 1].
    """

    metric: str
    value: float


def parse_app_thresholds(items: Iterable[str]) -> tuple[list[Any], list[AppThreshold]]:
    """Split ``--fail-under`` values into the citations' retrieval thresholds
    (``core.evaluation.gate.Threshold``) and the app's own (answer metrics, ``answered``).

    Raises:
        ConfigError: an item that is neither (the message names both kinds).
    """
    retrieval, own = [], []
    for item in items:
        name, sep, raw = item.partition("=")
        name = name.strip()
        if sep and (name in ALL_METRICS or name == ANSWERED):
            try:
                value = float(raw)
            except ValueError:
                raise ConfigError(f"--fail-under {item!r}: {raw.strip()!r} is not a number") from None
            if not 0.0 <= value <= 1.0:
                raise ConfigError(f"--fail-under {item!r}: the value must be from 0 to 1")
            own.append(AppThreshold(name, value))
            continue
        if sep and is_retrieval_metric(name):
            retrieval.extend(parse_thresholds([item]))  # its own message: a k no run reports, a value out of range
            continue
        raise ConfigError(f"--fail-under {item!r}: use METRIC=VALUE with METRIC a measure of the citations "
                          f"(found@k, recall@k, precision@k, ndcg@k, mrr), an answer metric "
                          f"({', '.join(ALL_METRICS)}) or {ANSWERED}")
    return retrieval, own


def check_app_gate(thresholds: Iterable[str], *, has_citations: bool, metrics: Sequence[str],
                   baseline: dict[str, Any] | None = None, golden_sha256: str | None = None,
                   has_judge: bool = True) -> None:
    """Check ``--fail-under`` values and a baseline before an app run sends anything: every
    threshold parses and names a measure the run will compute, and the baseline asked the same
    golden file.

    Args:
        thresholds: the ``--fail-under`` values.
        has_citations: whether the replies are read for citations (the retrieval measures).
        metrics: the answer metrics the run will compute (``core.evaluation.app``'s choice).
        baseline: the baseline app run, or None.
        golden_sha256: the golden file of this run.
        has_judge: whether a judge is configured (to say so when a judge metric is missing).

    Raises:
        ConfigError: a malformed threshold, one on a measure the run will not compute (the
            message says what it needs), or a baseline of another golden file.
    """
    from core.evaluation.app import CONTEXT_METRICS

    retrieval, own = parse_app_thresholds(thresholds)
    if retrieval and not has_citations:
        names = ", ".join(dict.fromkeys(t.label for t in retrieval))
        raise ConfigError(f"--fail-under {names}: found@k and the like measure the cited sources, and the app config "
                          "reads no citations (give response.citations or citations_in_answer)")
    for t in own:
        if t.metric == ANSWERED or t.metric in metrics:
            continue
        if t.metric.startswith("judge.") and not has_judge:
            why = "it needs a judge: give --judge MODEL or set RAGTUNE_JUDGE_MODEL"
        elif t.metric in CONTEXT_METRICS:
            why = "it reads the passages, and the app config reads no contexts (response.contexts)"
        else:
            why = f"the run computes {', '.join(metrics) or 'no answer metric'}"
        raise ConfigError(f"--fail-under {t.metric}: this run will not compute {t.metric}: {why}")
    if baseline is not None and golden_sha256 is not None and \
            (baseline.get("golden") or {}).get("sha256") != golden_sha256:
        raise ConfigError(f"--baseline {baseline.get('run_id') or ''} was asked another golden file "
                          f"({(baseline.get('golden') or {}).get('path')}); the paired tests need the same questions "
                          "(use --baseline latest for the newest run on this one)")


def _metric_mean(report: dict[str, Any], name: str) -> float | None:
    if name == ANSWERED:
        return (report.get("requests") or {}).get("answered_share")
    for m in (report.get("answers") or {}).get("metrics") or []:
        if m["name"] == name:
            return m["scores"]["mean"]
    raise ConfigError(f"--fail-under {name}: the run did not compute {name}")


def app_gate(report: dict[str, Any], *, thresholds: Sequence[str] = (), baseline: dict[str, Any] | None = None,
             alpha: float | None = None) -> tuple[list[str], bool]:
    """Check an app run against ``--fail-under`` values and a baseline app run. A run that
    answered no question fails; one with neither thresholds nor a baseline (a first
    ``--baseline latest``) passes, so it can be the next run's baseline.

    Returns:
        ``(lines, failed)``: one line per finding, and whether the gate fails.

    Raises:
        ConfigError: a malformed threshold, a measure the run lacks, citation thresholds on a
            run whose replies are not read for citations, or a baseline on another golden file.
    """
    alpha = ALPHA if alpha is None else alpha
    retrieval, own = parse_app_thresholds(thresholds)
    has_citations = any(s.get("name") == "citations" for s in report.get("setups") or [])
    if retrieval and not has_citations:
        raise ConfigError("--fail-under on found@k and the like needs the replies read for citations "
                          "(response.citations or citations_in_answer in the app config)")
    lines, failed = [], False
    requests = report.get("requests") or {}
    if requests.get("n_questions") and not requests.get("n_answered"):
        lines.append("failed: the app answered no question")
        failed = True
    if baseline is not None and (baseline.get("golden") or {}).get("sha256") != (report.get("golden") or {}).get("sha256"):
        raise ConfigError(f"--baseline {baseline.get('run_id') or ''} was asked another golden file; the paired "
                          "tests need the same questions (use --baseline latest for the newest run on this one)")
    if has_citations and (retrieval or (baseline is not None and any(
            s.get("name") == "citations" for s in baseline.get("setups") or []))):
        found, bad = run_gate(report, setup="citations", thresholds=retrieval,
                              baseline=baseline if baseline is not None and any(
                                  s.get("name") == "citations" for s in baseline.get("setups") or []) else None)
        lines += found
        failed = failed or bad
    for t in own:
        value = _metric_mean(report, t.metric)
        if value is None:
            lines.append(f"failed: {t.metric} has no score (nothing was scored), under {t.value:g}")
            failed = True
        elif value < t.value:
            lines.append(f"failed: {t.metric} is {value:.3f}, under {t.value:g}")
            failed = True
        else:
            lines.append(f"passed: {t.metric} is {value:.3f} >= {t.value:g}")
    if baseline is None and not thresholds and not failed:
        lines.append("passed: nothing to compare with yet; this run can be the baseline of the next")
    if baseline is not None:
        comparison = compare_apps(baseline, report, alpha=alpha)
        a = comparison["answered"]
        worse = len(a["only_first"]) > len(a["only_second"]) and a["p_value"] < alpha
        lines.append(("failed: " if worse else "passed: ") + f"answered: {len(a['only_first'])} questions answered "
                     f"only by {comparison['first']}, {len(a['only_second'])} only now (exact McNemar p = "
                     f"{a['p_value']:.4f})")
        failed = failed or worse
        for m in comparison["metrics"]:
            if m["ci_high"] is not None and m["ci_high"] < 0:
                lines.append(f"failed: {m['name']} is lower than in {comparison['first']} by {-m['mean_difference']:.3f} "
                             f"on {m['n']} paired answers (95% interval of the difference {m['ci_low']:.3f} to "
                             f"{m['ci_high']:.3f}): significantly worse")
                failed = True
            elif m["n"]:
                lines.append(f"passed: {m['name']} changes by {_fmt(m['mean_difference'])} on {m['n']} paired answers "
                             f"(interval {_fmt(m['ci_low'])} to {_fmt(m['ci_high'])}): not significantly worse")
    return lines, failed


# ------------------------------------------------------------------------------------ compare


def _scores(report: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Metric name -> question id -> score, for the scored ones."""
    out: dict[str, dict[str, float]] = {}
    for q in (report.get("answers") or {}).get("questions") or []:
        for m in q.get("metrics") or []:
            if m.get("score") is not None and m.get("status", "scored") == "scored":
                out.setdefault(m["name"], {})[str(q["question_id"])] = float(m["score"])
    return out


def compare_apps(first: dict[str, Any], second: dict[str, Any], *, alpha: float | None = None) -> dict[str, Any]:
    """Two app runs question by question: the exact McNemar test on the questions each
    answered and each cited right (in the top 10, at the first run's rank grain), and per
    answer metric the mean of the per-question differences (second minus first) with its 95 %
    percentile bootstrap interval and McNemar's test on passing (a score of 0.5 or more).

    Returns:
        ``{first, second, same_golden, n_paired, answered, citations, metrics[], latency}``;
        ``answered`` and ``citations`` are ``{n, only_first[], only_second[], p_value}``
        (``citations`` None when either run lacks them); each metric is ``{name, n,
        first_mean, second_mean, mean_difference, ci_low, ci_high, pass_only_first,
        pass_only_second, p_value, verdict}``.
    """
    alpha = ALPHA if alpha is None else alpha

    def answered(report: dict[str, Any]) -> dict[str, bool]:
        return {str(q["id"]): q.get("error") is None for q in report.get("questions") or []}

    def outcome(result: Any) -> dict[str, Any]:
        return {"n": result.n, "only_first": list(result.only_first), "only_second": list(result.only_second),
                "p_value": result.p_value}

    a, b = answered(first), answered(second)
    cites = None
    if all(any(s.get("name") == "citations" for s in r.get("setups") or []) for r in (first, second)):
        cites = outcome(paired_outcomes(found_by_question(first, "citations", TOP_K),
                                       found_by_question(second, "citations", TOP_K)))
    metrics = []
    s1, s2 = _scores(first), _scores(second)
    for name in [n for n in s1 if n in s2]:
        common = sorted(set(s1[name]) & set(s2[name]))
        diffs = [s2[name][q] - s1[name][q] for q in common]
        low = high = None
        if len(diffs) >= 2:
            low, high = bootstrap_interval(diffs)
        passes = paired_outcomes({q: s1[name][q] >= 0.5 for q in common}, {q: s2[name][q] >= 0.5 for q in common})
        mean = sum(diffs) / len(diffs) if diffs else None
        verdict = ("better" if low is not None and low > 0 else "worse" if high is not None and high < 0
                   else "no significant difference")
        metrics.append({"name": name, "n": len(common),
                        "first_mean": sum(s1[name][q] for q in common) / len(common) if common else None,
                        "second_mean": sum(s2[name][q] for q in common) / len(common) if common else None,
                        "mean_difference": mean, "ci_low": low, "ci_high": high,
                        "pass_only_first": len(passes.only_first), "pass_only_second": len(passes.only_second),
                        "p_value": passes.p_value, "verdict": verdict})
    return {"first": first.get("run_id") or first.get("app", {}).get("url"),
            "second": second.get("run_id") or second.get("app", {}).get("url"),
            "first_url": (first.get("app") or {}).get("url"), "second_url": (second.get("app") or {}).get("url"),
            "same_golden": (first.get("golden") or {}).get("sha256") == (second.get("golden") or {}).get("sha256"),
            "n_paired": len(set(a) & set(b)), "alpha": alpha,
            "answered": outcome(paired_outcomes(a, b)), "citations": cites, "metrics": metrics,
            "latency": {"first": first.get("latency_ms"), "second": second.get("latency_ms")}}


def format_app_comparison(c: dict[str, Any]) -> str:
    """A comparison of two app runs (:func:`compare_apps`) as text."""
    lines = [f"{c['first']} ({c['first_url']}) against {c['second']} ({c['second_url']}): "
             f"{c['n_paired']} paired questions" + ("" if c["same_golden"] else " (different golden files: "
                                                    "questions paired by id)")]
    for what in ("answered", "citations"):
        r = c[what]
        if r is None:
            continue
        label = "answered" if what == "answered" else "cited right in the top 10"
        lines.append(f"{label}: only first {len(r['only_first'])}, only second {len(r['only_second'])} "
                     f"(exact McNemar p = {r['p_value']:.4f})")
    if c["metrics"]:
        header = (f"{'metric':<28} {'n':>4} {'first':>6} {'second':>7} {'diff':>7} {'95% CI':>15} "
                  f"{'p (pass)':>9}  verdict")
        lines += ["", header, "-" * len(header)]
        for m in c["metrics"]:
            ci = "-" if m["ci_low"] is None else f"{m['ci_low']:+.3f}..{m['ci_high']:+.3f}"
            diff = "-" if m["mean_difference"] is None else f"{m['mean_difference']:+.3f}"
            lines.append(f"{m['name']:<28} {m['n']:>4} {_fmt(m['first_mean']):>6} {_fmt(m['second_mean']):>7} "
                         f"{diff:>7} {ci:>15} {m['p_value']:>9.4f}  {m['verdict']}")
    lat = c["latency"]
    lines.append(f"latency p95 ms: {_fmt((lat['first'] or {}).get('p95'), 1)} -> {_fmt((lat['second'] or {}).get('p95'), 1)}")
    return "\n".join(lines)
