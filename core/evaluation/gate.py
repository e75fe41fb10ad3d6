"""A gate for CI: fail a run whose gated setup is below a threshold, or significantly worse
than a baseline run on the same golden file, and refuse a golden file whose expected
documents are all missing.

Rules that keep the gate from being fooled:

- The baseline is named (a run id, or a stored ``report.json`` file), or ``latest``: the
  newest stored run that *passed its gate* (its report's ``gate.passed``) on the same golden
  file (sha256), the same corpus (the folder as given to ``--docs``) and the same branch (the
  run's ``branch``; ``--baseline-branch`` takes another, ``--any-branch`` any). A run that
  failed its gate, or had none, is never a ``latest`` baseline, so a regression pushed twice
  is compared with the last good run both times.
- The gated setup is fixed by the baseline: the setup the baseline gated (its
  ``gate.setup``), else the baseline's pick; only ``--setup NAME`` (a setup, not a pick)
  names another. Without a baseline it is this run's pick.
- The verdict (:class:`GateVerdict`: thresholds with their values, the baseline and why it
  was chosen, the gated setup and why, the questions found only by one run, pass or fail and
  the exit code) is saved in the run's report as ``gate``, and shown on the run's page.

References:
    The baseline comparison is the exact McNemar test (:mod:`core.metrics.paired`) on the
    questions found in the top k by one run and not the other.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable

from core.errors import ConfigError
from core.inputs import is_remote, read_input_bytes, shown_address
from core.metrics.paired import ALPHA, paired_outcomes
from core.metrics.retrieval import DEFAULT_KS, TOP_K
from core.reports.store import REPORT_SCHEMA_VERSION
from core.reports.tables import PICKS, found_by_question, metric_key, metric_label, upgrade_metric_names
from core.text import plural

if TYPE_CHECKING:
    from core.golden.types import GoldenSet
    from core.reports.store import ReportStore

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


def is_retrieval_metric(name: str) -> bool:
    """Whether ``name`` is a retrieval measure a threshold may name (found@k, success@k,
    recall@k, precision@k, ndcg@k, mrr; any k)."""
    return bool(_METRIC.match(name.strip().lower()))


def parse_thresholds(items: Iterable[str]) -> list[Threshold]:
    """Parse ``--fail-under METRIC=V`` values (``found@5=0.8``, ``mrr=0.6``).

    Raises:
        ConfigError: naming the item that is not ``METRIC=V`` with a known retrieval metric
            (found@k, success@k, recall@k, precision@k, ndcg@k, mrr), k one of the cut-offs a
            run reports (:data:`core.metrics.retrieval.DEFAULT_KS`), and V in [0, 1].
    """
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


@dataclass(frozen=True)
class ThresholdResult:
    """One ``--fail-under`` threshold checked on the gated setup.

    Attributes:
        metric: the report's name (``found@5``).
        threshold: the lowest passing value, in [0, 1].
        value: the setup's mean at the run's rank grain, in [0, 1].
        grain: the run's rank grain.
        passed: ``value >= threshold``.
    """

    metric: str
    threshold: float
    value: float
    grain: str
    passed: bool

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable fields (one of the report's ``gate.thresholds``)."""
        return {"metric": self.metric, "threshold": self.threshold, "value": self.value, "grain": self.grain,
                "passed": self.passed}


def threshold_results(report: dict[str, Any], setup: str, thresholds: Iterable[Threshold]) -> list[ThresholdResult]:
    """Each threshold checked on ``setup`` at the run's rank grain.

    Raises:
        ConfigError: a threshold's metric is not in the report (the message lists those that are).
    """
    grain, means = _means(report, setup)
    out = []
    for t in thresholds:
        if t.metric not in means or means[t.metric] is None:
            known = ", ".join(metric_label(m) for m in means) or "none"
            raise ConfigError(f"--fail-under {t.label}: the run has no {t.label} for {setup} at grain {grain} "
                              f"(it has: {known})")
        value = float(means[t.metric])
        out.append(ThresholdResult(t.metric, t.value, value, str(grain), value >= t.value))
    return out


def check_thresholds(report: dict[str, Any], setup: str, thresholds: Iterable[Threshold]) -> list[str]:
    """Which thresholds ``setup`` fails at the run's rank grain, one line each (empty: all pass).

    Raises:
        ConfigError: a threshold's metric is not in the report (the message lists those that are).
    """
    return [f"{setup} has {metric_label(r.metric)} {r.value:.3f} at grain {r.grain}, under {r.threshold:g}"
            for r in threshold_results(report, setup, thresholds) if not r.passed]


@dataclass(frozen=True)
class BaselineFinding:
    """The gated setup against the baseline run.

    Attributes:
        worse: significantly fewer questions found than in the baseline (the gate fails).
        message: one line saying by how many questions, with the test's p-value.
        baseline_id: the baseline's run id (or how it was named).
        n: questions both runs scored.
        lost: ids of the questions the baseline found in the top k and this run did not.
        gained: ids of the questions this run found and the baseline did not.
        p_value: the exact McNemar p-value of ``len(lost)`` against ``len(gained)``.
        alpha: the significance level.
    """

    worse: bool
    message: str
    baseline_id: str = ""
    n: int = 0
    lost: tuple[str, ...] = ()
    gained: tuple[str, ...] = ()
    p_value: float = 1.0
    alpha: float = ALPHA

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable fields (the report's ``gate.comparison``)."""
        return {"baseline_id": self.baseline_id, "n": self.n, "lost": list(self.lost), "gained": list(self.gained),
                "p_value": self.p_value, "alpha": self.alpha, "worse": self.worse, "message": self.message}


def check_baseline(baseline: dict[str, Any], golden_sha256: str) -> None:
    """Refuse, before any work, a baseline run on another golden file.

    Raises:
        ConfigError: the baseline's golden sha256 is not ``golden_sha256``.
    """
    if (baseline.get("golden") or {}).get("sha256") != golden_sha256:
        raise ConfigError(f"--baseline {baseline.get('run_id') or ''} was run on another golden file; the paired "
                          "test needs the same questions (use --baseline latest for the newest run that passed its "
                          "gate on this one)")


def compare_with_baseline(report: dict[str, Any], baseline: dict[str, Any], setup: str,
                          alpha: float = ALPHA) -> BaselineFinding:
    """Whether ``setup`` finds significantly fewer questions than in ``baseline``.

    Pairs the questions by id; worse when the baseline alone found more of them than this
    run alone and the exact McNemar p-value is under ``alpha``.

    Raises:
        ConfigError: the baseline used another golden file, ranked at another grain (its
            questions were found or not at that grain, so the pairs would not be alike), or
            either run has no setup ``setup``.
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
    if setup not in _setup_names(baseline):
        raise ConfigError(f"--baseline {base_id} has no setup {setup!r} to compare with")
    if setup not in _setup_names(report):
        raise ConfigError(f"this run has no setup {setup!r}, the setup the gate compares with {base_id}: evaluate it "
                          "(check --only and --skip), or name another with --setup")
    result = paired_outcomes(found_by_question(baseline, setup, TOP_K), found_by_question(report, setup, TOP_K))
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
    return BaselineFinding(worse, message, str(base_id), result.n, tuple(map(str, result.only_first)),
                           tuple(map(str, result.only_second)), result.p_value, alpha)


def _setup_names(report: dict[str, Any]) -> list[str]:
    return [str(s.get("name")) for s in report.get("setups") or [] if isinstance(s, dict)]


def golden_documents_reason(golden: GoldenSet, document_ids: Iterable[str], docs: str) -> str | None:
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


#: Runs passed over on the way to a ``latest`` baseline that a verdict names (the rest are counted).
PASSED_OVER_SHOWN = 5


def corpus_key(path: Any) -> str:
    """A corpus folder as the gate compares it: the address as shown, without a trailing
    ``/`` or a leading ``./`` (``docs``, ``./docs`` and ``docs/`` are one corpus)."""
    text = str(path or "").strip().rstrip("/")
    while text.startswith("./"):
        text = text[2:]
    return text


def summary_targets(summary: dict[str, Any]) -> tuple[str, ...] | None:
    """The sorted names of the targets a stored run's summary (or report) searched, or None
    for a run without targets."""
    targets = summary.get("targets")
    if not isinstance(targets, list) or not targets:
        return None
    return tuple(sorted(str(t.get("name")) for t in targets if isinstance(t, dict)))


@dataclass(frozen=True)
class BaselineRule:
    """Which stored runs may be a ``latest`` baseline (see the module's rules).

    Attributes:
        golden_sha256: the golden file's sha256.
        corpus: the corpus folder as shown (:func:`corpus_key`), or None to take any.
        branch: the branch baselines come from (None: runs that recorded no branch).
        any_branch: take a baseline from any branch.
        targets: the names of the run's targets, sorted (a run over targets, ``evaluate
            --target``), or None for a run over ``--docs`` alone: a baseline searched the same
            targets, or none.
    """

    golden_sha256: str
    corpus: str | None
    branch: str | None
    any_branch: bool = False
    targets: tuple[str, ...] | None = None

    def describe(self) -> str:
        """The rule in words: ``on this golden file, corpus docs and branch main``."""
        parts = ["this golden file"]
        if self.corpus is not None:
            parts.append(f"corpus {self.corpus}")
        if self.targets is not None:
            parts.append(f"targets {', '.join(self.targets)}")
        if not self.any_branch:
            parts.append(f"branch {self.branch}" if self.branch else "no branch")
        return "on " + (", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0])

    def passed_over(self, summary: dict[str, Any]) -> str | None:
        """Why a run on this golden file (its summary) cannot be the baseline, or None when it can."""
        gate = summary.get("gate")
        if self.corpus is not None and corpus_key((summary.get("corpus") or {}).get("path")) != corpus_key(self.corpus):
            return f"corpus {(summary.get('corpus') or {}).get('path')}"
        ran = summary_targets(summary)
        if ran != self.targets:
            return f"targets {', '.join(ran)}" if ran else "no targets"
        if not self.any_branch and (summary.get("branch") or None) != self.branch:
            return f"branch {summary.get('branch')}" if summary.get("branch") else "no branch recorded"
        if not isinstance(gate, dict):
            return "no gate"
        if gate.get("passed") is not True:
            return "failed its gate"
        return None


@dataclass(frozen=True)
class Baseline:
    """The run the gate compares with.

    Attributes:
        report: the baseline's report.
        run_id: its run id, or the file it was read from.
        how: why it is the baseline, in words.
        passed_over: newer runs on the golden file that could not be the baseline, as
            ``"<run id>: <why>"`` (at most :data:`PASSED_OVER_SHOWN`).
        n_passed_over: how many there were.
    """

    report: dict[str, Any]
    run_id: str
    how: str
    passed_over: tuple[str, ...] = ()
    n_passed_over: int = 0


def find_baseline(store: ReportStore, rule: BaselineRule) -> tuple[Baseline | None, str]:
    """The newest stored run ``rule`` allows (``--baseline latest``).

    Args:
        store: a :class:`~core.reports.store.ReportStore`.
        rule: which runs may be the baseline.

    Returns:
        ``(baseline or None, note)``: the note says which newer runs on the golden file were
        passed over and why, or why there is no baseline.
    """
    passed_over: list[str] = []
    for run_id in store.run_ids():
        summary = store.load_summary(run_id)
        if (summary.get("golden") or {}).get("sha256") != rule.golden_sha256:
            continue
        why = rule.passed_over(summary)
        if why is not None:
            passed_over.append(f"{run_id}: {why}")
            continue
        note = _passed_over_note(passed_over)
        baseline = Baseline(store.load_run(run_id), run_id, f"the newest run that passed its gate {rule.describe()}",
                            tuple(passed_over[:PASSED_OVER_SHOWN]), len(passed_over))
        return baseline, note
    note = f"no earlier run passed its gate {rule.describe()}: nothing to compare with"
    if passed_over:
        note += f" ({_passed_over_note(passed_over)})"
    return None, note


def _passed_over_note(passed_over: list[str]) -> str:
    if not passed_over:
        return ""
    shown = "; ".join(passed_over[:PASSED_OVER_SHOWN])
    more = f"; and {len(passed_over) - PASSED_OVER_SHOWN} more" if len(passed_over) > PASSED_OVER_SHOWN else ""
    return f"passed over {len(passed_over)} newer run{'s' if len(passed_over) != 1 else ''} on this golden file: " \
           f"{shown}{more}"


def named_baseline(store: ReportStore, name: str, golden_sha256: str) -> Baseline:
    """The baseline ``--baseline NAME`` names: a stored run's id, or a retrieval report file
    (a path ending in ``.json``, an existing file, or an ``s3://`` or Blob address).

    Raises:
        NotStoredError: no stored run has that id (the message lists recent ones).
        ConfigError: the file is not a retrieval report, or the run was on another golden file.
        OSError: a local file that cannot be read.
    """
    from pathlib import Path

    if name.endswith(".json") or is_remote(name) or Path(name).is_file():
        report = read_report_file(name)
        baseline = Baseline(report, str(report.get("run_id") or name), f"named with --baseline (the file {name})")
    else:
        baseline = Baseline(store.load_run(name), name, "named with --baseline")
    check_baseline(baseline.report, golden_sha256)
    return baseline


def read_report_file(address: str) -> dict[str, Any]:
    """A retrieval report read from a file (a local path or a storage address).

    Raises:
        ConfigError: the file is not JSON, not a retrieval report, or of another major schema version.
        OSError: a local file that cannot be read.
    """
    import json

    shown = shown_address(address)
    try:
        report = json.loads(read_input_bytes(address))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(f"--baseline {shown} is not a JSON report: {exc}") from None
    if not isinstance(report, dict) or report.get("kind", "retrieval") != "retrieval" or "setups" not in report:
        raise ConfigError(f"--baseline {shown} is not an evaluate run's report.json")
    version = str(report.get("schema_version", ""))
    if version.split(".")[0] != REPORT_SCHEMA_VERSION.split(".")[0]:
        raise ConfigError(f"--baseline {shown} has report schema version {version or 'none'}; this ragtune reads "
                          f"version {REPORT_SCHEMA_VERSION}")
    return upgrade_metric_names(report)


def gated_setup(report: dict[str, Any], key: str, baseline: Baseline | None) -> tuple[str, str]:
    """``(setup, why)``: the setup the gate checks, and why that one (see the module's rules).

    Args:
        report: this run's report.
        key: ``--setup``: a pick (:data:`~core.reports.tables.PICKS`), a setup name, or in a
            run over targets ``TARGET/PICK`` (resolved in this run, :func:`target_pick`).
        baseline: the baseline, or None.

    Raises:
        ConfigError: ``key`` is neither a pick nor a setup of this run, or the pick names no
            setup (or its target failed).
    """
    if key not in PICKS:
        target, pick = _target_and_pick(report, key)
        if target is not None and pick is not None:
            return target_pick(report, key), f"this run's pick {pick} of target {target}"
        return chosen_setup(report, key), "named with --setup"
    if baseline is None:
        return chosen_setup(report, key), f"this run's pick {key}"
    gate = baseline.report.get("gate") if isinstance(baseline.report.get("gate"), dict) else {}
    if gate.get("setup") and gate.get("setup_key", DEFAULT_SETUP) == key:
        return str(gate["setup"]), f"the setup baseline {baseline.run_id} gated"
    name = (baseline.report.get("picks") or {}).get(key)
    if not name:
        raise ConfigError(f"--setup {key}: baseline {baseline.run_id} made no such pick; name a setup with --setup")
    return str(name), f"baseline {baseline.run_id}'s pick {key}"


def _targets(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [t for t in report.get("targets") or [] if isinstance(t, dict)]


def _target_named(report: dict[str, Any], name: str) -> dict[str, Any] | None:
    """The target of a run over targets that ``name`` (a setup's name, ``TARGET/PICK`` or
    ``TARGET/SETUP``) belongs to: the setup's own ``target``, else the longest target name
    followed by ``/`` that starts it; None for a run without targets or a name of none."""
    targets = _targets(report)
    for s in report.get("setups") or []:
        if isinstance(s, dict) and s.get("name") == name and s.get("target") is not None:
            return next((t for t in targets if t.get("name") == s["target"]), None)
    owners = [t for t in targets if name.startswith(f"{t.get('name')}/")]
    return max(owners, key=lambda t: len(str(t.get("name"))), default=None)


def _target_and_pick(report: dict[str, Any], key: str) -> tuple[str | None, str | None]:
    """``(target, pick)`` for a ``--setup TARGET/PICK`` of one of the run's targets, else
    ``(target or None, None)``."""
    target = _target_named(report, key)
    if target is None:
        return None, None
    rest = key[len(str(target.get("name"))) + 1:]
    return str(target.get("name")), rest if rest in PICKS else None


def _target_reason(target: dict[str, Any]) -> str:
    """A failed target's error without its own ``target NAME:`` prefix."""
    error = str(target.get("error") or "no reason recorded")
    return error.removeprefix(f"target {target.get('name')}: ")


def target_pick(report: dict[str, Any], key: str) -> str:
    """The setup ``--setup TARGET/PICK`` (``prod/finds_the_most``) names in a run over
    targets: the one that pick names among that target's setups.

    Raises:
        ConfigError: ``key`` names no target of the run, the target failed (its reason), or its
            pick names no setup (the reason).
    """
    name, _, pick = key.rpartition("/")
    target = _target_named(report, key)
    if target is None or str(target.get("name")) != name:
        shown = ", ".join(str(t.get("name")) for t in _targets(report)) or "none"
        raise ConfigError(f"--setup {key}: no target {name!r} in this run ({shown})")
    if target.get("status") == "failed":
        raise ConfigError(f"--setup {key}: the gated target {name} failed: {_target_reason(target)}")
    chosen = (target.get("picks") or {}).get(pick)
    if not chosen:
        why = (target.get("picks") or {}).get("reason") or "no setup found anything"
        raise ConfigError(f"--setup {key}: target {name} made no pick {pick} ({why})")
    return str(chosen)


def failed_search_reason(report: dict[str, Any], name: str) -> str | None:
    """Why the gate cannot judge ``name`` because what it searched failed, or None.

    ``name`` is ``--setup`` as given or the gated setup: in a run over targets, the target it
    belongs to (a setup's ``target``, or ``TARGET/...``) failed (``the gated target T failed:
    REASON``), or, for a pick across targets, every target failed (``every target of this run
    failed (T: REASON; ...)``, or the first form for a run of one target); in any run, the
    setup itself failed (``the gated setup S failed: REASON``). Said before any other reason,
    so a run whose target could not be searched is not blamed on a metric, a pick or the grain
    it could not produce.
    """
    targets = _targets(report)
    if targets:
        target = _target_named(report, name)
        if target is not None and target.get("status") == "failed":
            return f"the gated target {target.get('name')} failed: {_target_reason(target)}"
        if name in PICKS and all(t.get("status") == "failed" for t in targets):
            if len(targets) == 1:
                return f"the gated target {targets[0].get('name')} failed: {_target_reason(targets[0])}"
            return "every target of this run failed (" + "; ".join(
                f"{t.get('name')}: {_target_reason(t)}" for t in targets) + ")"
    for s in report.get("setups") or []:
        if isinstance(s, dict) and s.get("name") == name and s.get("status") == "failed":
            return f"the gated setup {name} failed: {s.get('error') or 'no reason recorded'}"
    return None


@dataclass(frozen=True)
class GateVerdict:
    """What the gate decided about a run (the report's ``gate``).

    Attributes:
        passed: every threshold met and not significantly worse than the baseline.
        exit_code: 0 passed, :data:`EXIT_GATE` failed, 1 the gate could not be judged (``error``).
        setup: the gated setup (None when it could not be chosen).
        setup_key: ``--setup`` as given (a pick or a setup name).
        setup_from: why that setup (:func:`gated_setup`).
        branch: the run's branch, or None.
        thresholds: each threshold with the setup's value.
        baseline_id: the baseline's run id, or None.
        baseline_how: why it is the baseline, or None.
        baseline_branch: the branch the baseline recorded, or None.
        comparison: the paired test against the baseline, or None.
        note: what else a reader should know (runs passed over, no baseline found), or None.
        error: why the gate could not be judged, or None.
        lines: the verdict as printed, one finding a line.
    """

    passed: bool
    exit_code: int
    setup: str | None
    setup_key: str
    setup_from: str
    branch: str | None = None
    thresholds: tuple[ThresholdResult, ...] = ()
    baseline_id: str | None = None
    baseline_how: str | None = None
    baseline_branch: str | None = None
    comparison: BaselineFinding | None = None
    note: str | None = None
    error: str | None = None
    lines: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable fields (the report's ``gate``)."""
        return {"passed": self.passed, "exit_code": self.exit_code, "setup": self.setup, "setup_key": self.setup_key,
                "setup_from": self.setup_from, "branch": self.branch,
                "thresholds": [t.to_dict() for t in self.thresholds],
                "baseline": None if self.baseline_id is None else {
                    "run_id": self.baseline_id, "how": self.baseline_how, "branch": self.baseline_branch},
                "comparison": None if self.comparison is None else self.comparison.to_dict(),
                "note": self.note, "error": self.error, "lines": list(self.lines)}


def judge_gate(report: dict[str, Any], *, setup: str = DEFAULT_SETUP, thresholds: Iterable[Threshold] = (),
               baseline: Baseline | None = None, branch: str | None = None, note: str | None = None) -> GateVerdict:
    """Judge a finished run against the thresholds and the baseline.

    Never raises for a run the gate cannot judge (a gated target or setup that failed, a
    metric it lacks, a baseline ranked at another grain, a gated setup it did not evaluate):
    the verdict then fails with exit code 1 and says why in ``error``, so the run's report
    still records it. A failed target or setup is the reason given first
    (:func:`failed_search_reason`).

    Args:
        report: the run's report.
        setup: ``--setup``: a pick, a setup name, or in a run over targets ``TARGET/PICK``
            (:func:`gated_setup`).
        thresholds: from :func:`parse_thresholds`.
        baseline: from :func:`find_baseline` or :func:`named_baseline`, or None.
        branch: the run's branch, or None.
        note: said with the verdict (for example :func:`find_baseline`'s note).

    Returns:
        The :class:`GateVerdict`.
    """
    thresholds = list(thresholds)
    base = {"setup_key": setup, "branch": branch, "note": note or None,
            "baseline_id": baseline.run_id if baseline else None, "baseline_how": baseline.how if baseline else None,
            "baseline_branch": baseline.report.get("branch") if baseline else None}
    lines = []
    if baseline is not None:
        lines.append(f"baseline {baseline.run_id}: {baseline.how}")
    if note:
        lines.append(note)
    name, why = None, ""
    try:
        # a pick or TARGET/... whose target failed has no setup to name: said before choosing one
        failed = None if setup in _setup_names(report) else failed_search_reason(report, setup)
        if failed is not None:
            raise ConfigError(failed)
        name, why = gated_setup(report, setup, baseline)
        lines.append(f"gated setup {name} ({why})")
        failed = failed_search_reason(report, name)
        if failed is not None:
            raise ConfigError(failed)
        results = threshold_results(report, name, thresholds)
        finding = compare_with_baseline(report, baseline.report, name) if baseline is not None else None
    except ConfigError as exc:
        lines.append(f"failed: the gate cannot judge this run: {exc}")
        return GateVerdict(False, 1, name, setup_from=why, error=str(exc), lines=tuple(lines), **base)
    failed = [r for r in results if not r.passed]
    lines += [f"failed: {name} has {metric_label(r.metric)} {r.value:.3f} at grain {r.grain}, under {r.threshold:g}"
              for r in failed]
    if results and not failed:
        lines.append(f"passed: {name} meets " + ", ".join(f"{metric_label(r.metric)} >= {r.threshold:g}"
                                                          for r in results))
    if finding is not None:
        lines.append(("failed: " if finding.worse else "passed: ") + finding.message)
    passed = not failed and not (finding is not None and finding.worse)
    return GateVerdict(passed, 0 if passed else EXIT_GATE, name, setup_from=why, thresholds=tuple(results),
                       comparison=finding, lines=tuple(lines), **base)


def run_gate(report: dict[str, Any], *, setup: str = DEFAULT_SETUP, thresholds: Iterable[Threshold] = (),
             baseline: dict[str, Any] | None = None) -> tuple[list[str], bool]:
    """Check a finished run against the thresholds and a baseline report (:func:`judge_gate`
    with the baseline named).

    Returns:
        ``(lines, failed)``: the findings (``passed: ...`` / ``failed: ...``), and whether the gate fails.

    Raises:
        ConfigError: the gate cannot judge the run (:attr:`GateVerdict.error`).
    """
    named = None if baseline is None else Baseline(baseline, str(baseline.get("run_id") or "the baseline"), "named")
    verdict = judge_gate(report, setup=setup, thresholds=thresholds, baseline=named)
    if verdict.error is not None:
        raise ConfigError(verdict.error)
    return [line for line in verdict.lines if line.startswith(("passed: ", "failed: "))], not verdict.passed
