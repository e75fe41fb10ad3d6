"""A gate for CI: fail a run whose chosen setup is below a threshold, or significantly worse
than a baseline run on the same golden file, and refuse a golden file whose expected
documents are all missing.

References:
    The baseline comparison is the exact McNemar test (:mod:`core.metrics.paired`) on the
    questions found in the top k by one run and not the other.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable

from core.errors import ConfigError
from core.metrics.paired import ALPHA, paired_outcomes
from core.reports.tables import PICKS, metric_key, metric_label
from core.text import plural

#: The exit code of ``ragtune evaluate`` when the gate fails.
EXIT_GATE = 4
#: The pick the gate checks unless ``--setup`` names another pick or a setup.
DEFAULT_SETUP = "finds_the_most"
_METRIC = re.compile(r"^(?:(?:found|success|recall|precision|ndcg)@[1-9][0-9]*|mrr)$")


@dataclass(frozen=True)
class Threshold:
    """``metric >= value`` for the chosen setup at the run's rank grain.

    Attributes:
        metric: the report's name (``found@5``; ``success@5`` is read as ``found@5``).
        value: the lowest passing value, in [0, 1].
    """

    metric: str
    value: float

    @property
    def label(self) -> str:
        """The metric as a person writes it (``found@5``)."""
        return metric_label(self.metric)


def parse_thresholds(items: Iterable[str]) -> list[Threshold]:
    """Parse ``--fail-under METRIC=V`` values (``found@5=0.8``, ``mrr=0.6``).

    Raises:
        ConfigError: naming the item that is not ``METRIC=V`` with a known retrieval metric
            (found@k, success@k, recall@k, precision@k, ndcg@k, mrr), k one of the cut-offs a
            run reports (:data:`core.metrics.retrieval.DEFAULT_KS`), and V in [0, 1].
    """
    from core.metrics.retrieval import DEFAULT_KS

    out = []
    for item in items:
        name, sep, raw = item.partition("=")
        name = name.strip().lower()
        if not sep or not _METRIC.match(name):
            raise ConfigError(f"--fail-under {item!r}: use METRIC=VALUE with METRIC one of found@k, recall@k, "
                              "precision@k, ndcg@k, mrr (for example found@5=0.8)")
        _, at, k = name.partition("@")
        if at and int(k) not in DEFAULT_KS:
            raise ConfigError(f"--fail-under {item!r}: a run reports k = {', '.join(map(str, DEFAULT_KS))} only")
        try:
            value = float(raw)
        except ValueError:
            raise ConfigError(f"--fail-under {item!r}: {raw.strip()!r} is not a number") from None
        if not 0.0 <= value <= 1.0:
            raise ConfigError(f"--fail-under {item!r}: the value must be from 0 to 1")
        out.append(Threshold(metric_key(name), value))
    return out


def chosen_setup(report: dict[str, Any], key: str = DEFAULT_SETUP) -> str:
    """The setup the gate checks: the one a pick names (``finds_the_most``,
    ``best_for_balance``, ``best_for_time``), or a setup by its name.

    Raises:
        ConfigError: ``key`` is neither a pick nor a setup of the run, or the pick names no
            setup (the reason is the report's).
    """
    picks = report.get("picks") or {}
    names = [s.get("name") for s in report.get("setups") or []]
    if key in PICKS:
        name = picks.get(key)
        if not name:
            raise ConfigError(f"--setup {key}: the run made no pick ({picks.get('reason') or 'no setup found anything'})")
        return str(name)
    if key in names:
        return key
    raise ConfigError(f"--setup {key!r} is neither a pick ({', '.join(PICKS)}) nor a setup of this run "
                      f"({', '.join(map(str, names))})")


def _means(report: dict[str, Any], setup: str) -> tuple[str, dict[str, Any]]:
    grain = (report.get("evaluation") or {}).get("rank_grain")
    for s in report.get("setups") or []:
        if s.get("name") == setup:
            return grain, (((s.get("metrics") or {}).get(grain) or {}).get("means") or {})
    return grain, {}


def check_thresholds(report: dict[str, Any], setup: str, thresholds: Iterable[Threshold]) -> list[str]:
    """Which thresholds ``setup`` fails at the run's rank grain, one line each (empty: all pass).

    Raises:
        ConfigError: a threshold's metric is not in the report (the message lists those that are).
    """
    grain, means = _means(report, setup)
    failures = []
    for t in thresholds:
        if t.metric not in means or means[t.metric] is None:
            known = ", ".join(metric_label(m) for m in means) or "none"
            raise ConfigError(f"--fail-under {t.label}: the run has no {t.label} for {setup} at grain {grain} "
                              f"(it has: {known})")
        value = float(means[t.metric])
        if value < t.value:
            failures.append(f"{setup} has {t.label} {value:.3f} at grain {grain}, under {t.value:g}")
    return failures


def found_by_question(report: dict[str, Any], setup: str) -> dict[str, bool]:
    """Question id -> whether ``setup`` found a right chunk in the top k (at the run's rank grain)."""
    out = {}
    for q in report.get("questions") or []:
        ranks = q.get("first_relevant_rank") or {}
        if setup in ranks:
            out[str(q.get("id"))] = ranks[setup] is not None
    return out


@dataclass(frozen=True)
class BaselineFinding:
    """The chosen setup against the baseline run.

    Attributes:
        worse: significantly fewer questions found than in the baseline (the gate fails).
        message: one line saying by how many questions, with the test's p-value.
    """

    worse: bool
    message: str


def check_baseline(baseline: dict[str, Any], golden_sha256: str) -> None:
    """Refuse, before any work, a baseline run on another golden file.

    Raises:
        ConfigError: the baseline's golden sha256 is not ``golden_sha256``.
    """
    if (baseline.get("golden") or {}).get("sha256") != golden_sha256:
        raise ConfigError(f"--baseline {baseline.get('run_id') or ''} was run on another golden file; the paired "
                          "test needs the same questions (use --baseline latest for the newest run on this one)")


def compare_with_baseline(report: dict[str, Any], baseline: dict[str, Any], setup: str,
                          alpha: float = ALPHA) -> BaselineFinding:
    """Whether ``setup`` finds significantly fewer questions than in ``baseline``.

    Pairs the questions by id; worse when the baseline alone found more of them than this
    run alone and the exact McNemar p-value is under ``alpha``.

    Raises:
        ConfigError: the baseline used another golden file, ranked at another grain (its
            questions were found or not at that grain, so the pairs would not be alike), or
            has no setup ``setup``.
    """
    base_id = baseline.get("run_id") or "the baseline"
    if (report.get("golden") or {}).get("sha256") != (baseline.get("golden") or {}).get("sha256"):
        raise ConfigError(f"--baseline {base_id} was run on another golden file; the paired test needs the same questions")
    grain = (report.get("evaluation") or {}).get("rank_grain")
    base_grain = (baseline.get("evaluation") or {}).get("rank_grain")
    if grain != base_grain:
        raise ConfigError(f"--baseline {base_id} ranked at the {base_grain} grain and this run at the {grain} grain: "
                          f"the paired test needs one grain (run with --rank-by {base_grain}, or choose another "
                          "baseline)")
    if setup not in [s.get("name") for s in baseline.get("setups") or []]:
        raise ConfigError(f"--baseline {base_id} has no setup {setup!r} to compare with")
    result = paired_outcomes(found_by_question(baseline, setup), found_by_question(report, setup))
    lost, gained = len(result.only_first), len(result.only_second)
    worse = lost > gained and result.p_value < alpha
    if lost > gained:
        change = f"finds {lost - gained} fewer of {result.n} questions than in {base_id}"
    elif gained > lost:
        change = f"finds {gained - lost} more of {result.n} questions than in {base_id}"
    else:
        change = f"finds as many of {result.n} questions as in {base_id}"
    verdict = "significantly worse" if worse else "not significantly worse"
    message = (f"{setup} {change} (found only in the baseline: {lost}, only now: {gained}; exact McNemar "
               f"p = {result.p_value:.4f}, alpha {alpha:g}): {verdict}")
    return BaselineFinding(worse, message)


def golden_documents_reason(golden: Any, document_ids: Iterable[str], docs: str) -> str | None:
    """:func:`missing_documents_reason` for the documents ``golden``'s questions expect."""
    return missing_documents_reason({t.document_id for q in golden.questions for t in q.expected}, document_ids,
                                    docs)


def missing_documents_reason(expected: Iterable[str], document_ids: Iterable[str], docs: str) -> str | None:
    """Why a run would score nothing: none of the documents the golden file expects is in
    the corpus (None when at least one is there, or when the file expects no document, as
    Bedrock prompt datasets do).

    Args:
        expected: the document ids the golden file expects.
        document_ids: the documents the corpus folder holds.
        docs: the folder as the message shows it.
    """
    wanted = sorted(set(expected))
    held = sorted(set(document_ids))
    if not wanted or set(wanted) & set(held):
        return None
    example = ", ".join(repr(w) for w in wanted[:3])
    holds = ", ".join(repr(h) for h in held[:3]) if held else "no document"
    more = f" (and {len(held) - 3} more)" if len(held) > 3 else ""
    return (f"the golden file expects {plural(len(wanted), 'document')} and none is in {docs} (it expects {example}"
            f"{'...' if len(wanted) > 3 else ''}; the folder holds {holds}{more}): every score would be 0; "
            "check --docs and the ids in 'expected' (paths relative to the documents folder)")


def run_gate(report: dict[str, Any], *, setup: str = DEFAULT_SETUP, thresholds: Iterable[Threshold] = (),
             baseline: dict[str, Any] | None = None) -> tuple[list[str], bool]:
    """Check a finished run against the thresholds and the baseline.

    Args:
        report: the run's report.
        setup: a pick or a setup name (:func:`chosen_setup`).
        thresholds: from :func:`parse_thresholds`.
        baseline: the baseline run's report, or None.

    Returns:
        ``(lines, failed)``: one line per finding, and whether the gate fails.

    Raises:
        ConfigError: as :func:`chosen_setup`, :func:`check_thresholds` and
            :func:`compare_with_baseline`.
    """
    thresholds = list(thresholds)
    name = chosen_setup(report, setup)
    failures = check_thresholds(report, name, thresholds)
    lines = [f"failed: {f}" for f in failures]
    if thresholds and not failures:
        lines.append(f"passed: {name} meets " + ", ".join(f"{t.label} >= {t.value:g}" for t in thresholds))
    failed = bool(failures)
    if baseline is not None:
        finding = compare_with_baseline(report, baseline, name)
        lines.append(("failed: " if finding.worse else "passed: ") + finding.message)
        failed = failed or finding.worse
    return lines, failed


def latest_baseline(store: Any, golden_sha256: str) -> dict[str, Any] | None:
    """The newest stored run on the golden file with this sha256, or None.

    Args:
        store: a :class:`~core.reports.store.ReportStore`.
        golden_sha256: the golden file's sha256.
    """
    for run_id in store.run_ids():
        if (store.load_summary(run_id).get("golden") or {}).get("sha256") == golden_sha256:
            return store.load_run(run_id)
    return None
