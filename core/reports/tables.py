"""Rows of a stored report, as the pages, the CSV export and the DataFrame show them.

A retrieval (``ragtune evaluate``) report gives one row per setup and grain, or one row per
question and setup; an experiment (``ragtune optimize``) report one row per configuration
tried. Fields a newer report adds (per setup ``tied_with_best`` and metric intervals
``ci_low`` / ``ci_high``, per question ``top``) are read when present and left empty when an
older report lacks them.
"""

from __future__ import annotations

from typing import Any

from core.errors import ConfigError

#: The grains a retrieval report scores, finest last.
GRAINS = ("doc", "page", "evidence")
#: The names of the three picks, in the order reports and pages show them.
PICKS = ("finds_the_most", "best_for_balance", "best_for_time")


def report_kind(report: Any) -> str:
    """``"retrieval"``, ``"experiment"``, ``"chunking"`` or ``"app"`` (``ragtune evaluate-app``):
    what a stored report is.

    Raises:
        ConfigError: ``report`` is not a dict, or not a report this version knows.
    """
    if not isinstance(report, dict):
        raise ConfigError(f"a report is a JSON object, got {type(report).__name__}")
    kind = report.get("kind")
    if kind in ("retrieval", "experiment", "chunking", "app"):
        return kind
    if "leaderboard" in report:
        return "experiment"
    if "setups" in report:
        return "retrieval"
    raise ConfigError(f"not a ragtune report (kind {kind!r}): expected a retrieval, experiment or chunking report")


def metric_label(name: str) -> str:
    """The user's word for a metric: ``found@k`` (success@k, the hit rate); ``success@k`` of
    reports written before the rename is shown as ``found@k`` too."""
    return "found@" + name.split("@", 1)[1] if name.startswith("success@") else name


def metric_key(label: str) -> str:
    """The report's key for a metric a person names: lower-cased, ``success@5`` -> ``found@5``;
    other names unchanged."""
    return metric_label(label.strip().lower())


def upgrade_metric_names(value: Any) -> Any:
    """``value`` with every mapping key ``success@k`` renamed ``found@k``, at any depth: reports
    written before the rename read like current ones. Other values are returned as they are."""
    if isinstance(value, dict):
        return {metric_label(k) if isinstance(k, str) else k: upgrade_metric_names(v) for k, v in value.items()}
    if isinstance(value, list):
        return [upgrade_metric_names(v) for v in value]
    return value


def metric_names(report: dict[str, Any]) -> list[str]:
    """The retrieval metrics a report holds, in a stable order: found@k (success@k),
    recall@k, precision@k, nDCG@k for each cut-off, then MRR."""
    ks = (report.get("evaluation") or {}).get("ks") or []
    present: set[str] = set()
    for setup in report.get("setups") or []:
        for block in (setup.get("metrics") or {}).values():
            present.update((block or {}).get("means") or {})
    ordered = [f"{m}@{k}" for m in ("found", "recall", "precision", "ndcg") for k in ks] + ["mrr"]
    rest = sorted(present - set(ordered))
    return [m for m in ordered if m in present] + rest


def interval(block: dict[str, Any], metric: str) -> tuple[float | None, float | None]:
    """The 95 % interval of ``metric`` in a setup's grain block, when the report has one.

    Accepts ``ci_low`` / ``ci_high`` as dicts by metric name, or ``intervals`` as
    ``{metric: {ci_low, ci_high}}``; ``(None, None)`` otherwise.
    """
    low, high = block.get("ci_low"), block.get("ci_high")
    if isinstance(low, dict) and isinstance(high, dict):
        return low.get(metric), high.get(metric)
    intervals = block.get("intervals")
    if isinstance(intervals, dict) and isinstance(intervals.get(metric), dict):
        return intervals[metric].get("ci_low"), intervals[metric].get("ci_high")
    return None, None


def picks_of(report: dict[str, Any], setup_name: str) -> list[str]:
    """The picks (``finds_the_most`` ...) that name ``setup_name``."""
    picks = report.get("picks") or {}
    return [p for p in PICKS if picks.get(p) == setup_name]


def setup_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per setup and grain of a retrieval report (grains with no block are left out).

    Each row: ``run_id, setup, grain, ranked_by`` (this grain ranks the setups), ``picks``
    (space-separated), ``tied_with_best`` (None when the report does not say), ``n_scored,
    n_unscorable, n_fallback``, every metric mean by its report name with ``<metric>_ci_low``
    / ``<metric>_ci_high`` when the report has intervals, ``median_ms, p95_ms``, the setup's
    parameters as ``search_mode`` and the rest.
    """
    rows = []
    names = metric_names(report)
    rank_grain = (report.get("evaluation") or {}).get("rank_grain")
    for setup in report.get("setups") or []:
        for grain, block in (setup.get("metrics") or {}).items():
            if not isinstance(block, dict):
                continue
            means = block.get("means") or {}
            row: dict[str, Any] = {
                "run_id": report.get("run_id"), "setup": setup.get("name"), "grain": grain,
                "ranked_by": grain == rank_grain, "picks": " ".join(picks_of(report, setup.get("name"))),
                "tied_with_best": setup.get("tied_with_best"),
                "n_scored": block.get("n_scored"), "n_unscorable": block.get("n_unscorable"),
                "n_fallback": block.get("n_fallback"),
            }
            for name in names:
                row[name] = means.get(name)
                low, high = interval(block, name)
                if low is not None or high is not None:
                    row[f"{name}_ci_low"], row[f"{name}_ci_high"] = low, high
            timings = setup.get("timings_ms") or {}
            row["median_ms"], row["p95_ms"] = timings.get("median"), timings.get("p95")
            for key, value in (setup.get("setup") or {}).items():
                row.setdefault(key, value)
            if setup.get("error"):
                row["error"] = setup["error"]
            rows.append(row)
    return rows


def _answers_by_question(report: dict[str, Any]) -> tuple[str | None, dict[str, dict[str, Any]]]:
    answers = report.get("answers") or {}
    setup = (answers.get("generator") or {}).get("setup")
    by_id = {}
    for q in answers.get("questions") or []:
        by_id[str(q.get("question_id"))] = q
    return setup, by_id


def top_text(top: Any) -> str:
    """A per-question ``top`` list as one line: ``document#page (score, relevant)`` joined by
    ``; ``; a chunk spanning pages shows ``#page=first-last``."""
    if not isinstance(top, list):
        return ""
    parts = []
    for hit in top:
        if not isinstance(hit, dict):
            continue
        where = str(hit.get("document", ""))
        pages = hit.get("pages") if isinstance(hit.get("pages"), list) else []
        if len(pages) > 1:  # a chunk across a page break: its first and last page
            where += f"#page={pages[0]}-{pages[-1]}"
        elif hit.get("page") is not None:
            where += f"#page={hit['page']}"
        marks = []
        if isinstance(hit.get("score"), (int, float)):
            marks.append(f"{hit['score']:.3f}")
        if hit.get("relevant"):
            marks.append("relevant")
        parts.append(where + (f" ({', '.join(marks)})" if marks else ""))
    return "; ".join(parts)


def question_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per question and setup of a retrieval report.

    Each row: ``run_id, question_id, line, question, expected`` (joined by `` | ``), ``setup,
    first_relevant_rank`` (at the rank grain; None when not in the top k), ``found``, ``top``
    (what came back, when the report keeps it), and on the row of the setup that answered:
    ``answer, answer_error`` and one column per answer metric.
    """
    rows = []
    answer_setup, answers = _answers_by_question(report)
    setups = [s.get("name") for s in report.get("setups") or []]
    for q in report.get("questions") or []:
        ranks = q.get("first_relevant_rank") or {}
        tops = q.get("top") if isinstance(q.get("top"), dict) else {}
        for name in setups or list(ranks):
            rank = ranks.get(name)
            row: dict[str, Any] = {
                "run_id": report.get("run_id"), "question_id": q.get("id"), "line": q.get("line"),
                "question": q.get("question"), "expected": " | ".join(map(str, q.get("expected") or [])),
                "setup": name, "first_relevant_rank": rank, "found": rank is not None,
                "top": top_text(tops.get(name)) if tops else "",
            }
            answer = answers.get(str(q.get("id")))
            if answer is not None and name == answer_setup:
                row["answer"], row["answer_error"] = answer.get("answer"), answer.get("error")
                for m in answer.get("metrics") or []:
                    if isinstance(m, dict) and m.get("name"):
                        row[m["name"]] = m.get("score")
            rows.append(row)
    return rows


def experiment_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per configuration of an experiment report's leaderboard, best first.

    Each row: ``experiment_id, rank, trial, round, key, status, score, ci_low, ci_high,
    duration_s, n_questions, fully_evaluated, verdict, texts_embedded, texts_from_cache,
    tokens, stored, error`` (``round`` and the costs None when the report does not record
    them; ``tokens`` also when an endpoint did not say; ``n_questions`` the questions the score
    is over, ``fully_evaluated`` False and ``verdict`` ``stop`` or ``promote`` for a
    configuration rungs left on a subset, None in reports without rungs) and every parameter
    of the configuration by its name.
    """
    rows = []
    for entry in report.get("leaderboard") or []:
        row = {"experiment_id": report.get("experiment_id"), "objective": report.get("objective")}
        cost = entry.get("cost") or {}
        for key in ("rank", "trial", "round", "key", "status", "score", "ci_low", "ci_high", "duration_s",
                    "n_questions", "fully_evaluated"):
            row[key] = entry.get(key)
        row["verdict"] = (entry.get("fidelity") or {}).get("verdict")
        for key in ("texts_embedded", "texts_from_cache", "tokens"):
            row[key] = cost.get(key)
        for key in ("stored", "error"):
            row[key] = entry.get(key)
        for name, value in (entry.get("parameters") or {}).items():
            row.setdefault(name, value)
        rows.append(row)
    return rows


def rows(report: dict[str, Any], *, per_question: bool = False) -> list[dict[str, Any]]:
    """The export rows of any report: :func:`setup_rows` or :func:`question_rows` for a
    retrieval report, :func:`experiment_rows` for an experiment.

    Raises:
        ConfigError: not a known report, ``per_question`` for an experiment, or a chunking report.
    """
    kind = report_kind(report)
    if kind == "experiment":
        if per_question:
            raise ConfigError("--per-question applies to evaluate runs; an experiment has one row per configuration")
        return experiment_rows(report)
    if kind == "chunking":
        raise ConfigError("exports cover evaluate runs and experiments; a chunking report is shown as a page")
    return question_rows(report) if per_question else setup_rows(report)


def columns(table: list[dict[str, Any]]) -> list[str]:
    """Every column of ``table``, in the order first seen."""
    seen: dict[str, None] = {}
    for row in table:
        for key in row:
            seen.setdefault(key, None)
    return list(seen)

#: The parts of the time a user waits for one question's results, as ``timings_ms`` names them,
#: with their short labels (``embedding``: embedding the question).
WAIT_PARTS = (("query_embedding", "embedding"), ("search", "search"), ("rerank", "rerank"))


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def wait_of(timings: Any) -> dict[str, Any]:
    """The time a user waits for one question's results, as the picks use it, read from a
    setup's ``timings_ms`` (never recomputed).

    Reports from ``evaluate`` hold ``total`` (per question: query embedding + search +
    rerank; its median over questions is what :func:`core.evaluation.retrieval.pick_setups`
    compares) and each part's own statistics (``query_embedding`` and ``rerank`` None where the
    setup has no such step). A report written before the split holds the search alone, at the
    top level of ``timings_ms``, and its picks used that.

    Returns:
        ``{median, p95, parts, split}``: milliseconds (None when unknown); ``parts`` maps each
        of :data:`WAIT_PARTS` to ``{label, median}`` (median None: no such step);
        ``split`` is False for a report that predates the parts.
    """
    timings = timings if isinstance(timings, dict) else {}
    total = timings.get("total")
    if not isinstance(total, dict):
        parts = {"search": {"label": "search", "median": _number(timings.get("median"))}}
        return {"median": _number(timings.get("median")), "p95": _number(timings.get("p95")), "parts": parts,
                "split": False}
    parts = {}
    for key, label in WAIT_PARTS:
        block = timings.get(key)
        parts[key] = {"label": label, "median": _number(block.get("median")) if isinstance(block, dict) else None}
    return {"median": _number(total.get("median")), "p95": _number(total.get("p95")), "parts": parts, "split": True}


def scorable_at(question: dict[str, Any], grain: str | None) -> bool:
    """Whether a report's question has a right item at ``grain``, read from its ``expected``
    as :func:`core.metrics.retrieval.judge` decides it: at the doc and evidence grains a
    question that names a document (evidence falls back to the documents), at the page grain
    one with a page label (``"x.pdf#page=2"``). A question row without ``expected`` (a report
    that does not keep it), or a grain the report does not name, is taken as scorable.
    """
    expected = question.get("expected")
    if not isinstance(expected, list) or grain not in GRAINS:
        return True
    if grain == "page":
        return any("#page=" in str(e) for e in expected)
    return bool(expected)


def found_by_question(report: dict[str, Any], setup: str, k: int) -> dict[str, bool]:
    """Question id -> whether ``setup`` found a right item within the first ``k`` (its
    ``first_relevant_rank`` at the run's rank grain is at most ``k``), for the questions the
    report ranks with ``setup`` and can score at that grain: what found@k counts, per
    question, for paired tests between runs (the gate's baseline, the compare page, the
    comparison of two app runs).

    A question not scorable at the rank grain (:func:`scorable_at`: at the page grain, one
    with document labels only) is left out, not counted as not found: its
    ``first_relevant_rank`` is None whatever came back, and found@k's mean leaves it out too.

    Args:
        report: an ``evaluate`` or ``evaluate-app`` report (its ``questions``).
        setup: a setup's name.
        k: the cut-off (``core.metrics.retrieval.TOP_K`` for found@10).
    """
    grain = (report.get("evaluation") or {}).get("rank_grain")
    out = {}
    for q in report.get("questions") or []:
        ranks = q.get("first_relevant_rank") or {}
        if setup in ranks:
            rank = ranks[setup]
            found = isinstance(rank, int) and 1 <= rank <= k
            if isinstance(rank, int) or scorable_at(q, grain):
                out[str(q.get("id"))] = found
    return out
