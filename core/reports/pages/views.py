"""What each page shows, built from stored reports (pure: no I/O, no templates)."""

from __future__ import annotations

from typing import Any

import core.reports.pages.plots as plots
from core.reports.tables import PICKS, interval, metric_label, metric_names, picks_of, top_text

#: Columns of a setups table, when the report holds them (report names).
SETUP_COLUMNS = ("found@1", "found@3", "found@5", "found@10", "recall@5", "recall@10", "mrr", "ndcg@10")
#: Most golden-file warnings a page lists (the report keeps them all).
MOST_WARNINGS = 100


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _ranked_metric(grain_block: dict[str, Any]) -> str:
    means = grain_block.get("means") or {}
    return "found@10" if "found@10" in means else next(iter(means), "mrr")


def chunking_text(chunking: Any) -> str:
    """A report's chunking parameters as one line: ``recursive, chunk_size 256, chunk_overlap 32``."""
    if not isinstance(chunking, dict):
        return "" if chunking is None else str(chunking)
    rest = [f"{k} {v}" for k, v in chunking.items()
            if k not in ("method", "separators", "version") and v is not None and not isinstance(v, (dict, list))]
    return ", ".join([str(chunking.get("method") or "?")] + rest)


def run_view(report: dict[str, Any]) -> dict[str, Any]:
    """The context of an evaluate run's page (see ``run.html.j2``)."""
    evaluation = report.get("evaluation") or {}
    setups = [s for s in report.get("setups") or [] if isinstance(s, dict)]
    rank_grain = evaluation.get("rank_grain")
    names = metric_names(report)
    columns = [m for m in SETUP_COLUMNS if m in names] or names[:8]
    grains = []
    for grain in evaluation.get("grains") or []:
        blocks = {s.get("name"): (s.get("metrics") or {}).get(grain) for s in setups}
        first = next((b for b in blocks.values() if isinstance(b, dict)), None)
        view: dict[str, Any] = {"name": grain, "id": f"grain-{grain}", "ranked_by": grain == rank_grain,
                                "scorable": bool(first and first.get("n_scored")), "rows": [], "figures": []}
        if first is None:
            view["reason"] = "no setup was scored at this grain"
            grains.append(view)
            continue
        view.update(n_scored=first.get("n_scored"), n_unscorable=first.get("n_unscorable"),
                    n_fallback=first.get("n_fallback"), reason=first.get("reason"))
        if not view["scorable"]:
            grains.append(view)
            continue
        for s in setups:
            block = blocks.get(s.get("name"))
            timings = s.get("timings_ms") or {}
            row = {"name": s.get("name"), "picks": picks_of(report, s.get("name")),
                   "tied": s.get("tied_with_best"), "error": s.get("error"),
                   "median_ms": timings.get("median"), "p95_ms": timings.get("p95"), "cells": []}
            if isinstance(block, dict):
                means = block.get("means") or {}
                for m in columns:
                    low, high = interval(block, m)
                    row["cells"].append({"value": means.get(m), "low": low, "high": high})
            elif not row["error"]:
                row["error"] = "no scores at this grain"
            view["rows"].append(row)
        curves = {}
        for s in setups:
            block = blocks.get(s.get("name"))
            if not isinstance(block, dict) or not block.get("n_scored"):
                continue
            means = block.get("means") or {}  # the report's found@k, never computed again here
            ks = sorted(int(m.split("@")[1]) for m in means if m.startswith("found@"))
            curves[s.get("name")] = (ks, [means[f"found@{k}"] for k in ks])
        if curves:
            view["figures"].append(("found", plots.found_curves(curves, f"found@k per setup [{grain}]")))
        metric = _ranked_metric(first)
        points = []
        for s in setups:
            block = blocks.get(s.get("name"))
            value = _num(((block or {}).get("means") or {}).get(metric)) if isinstance(block, dict) else None
            median = _num((s.get("timings_ms") or {}).get("median"))
            if value is not None and median is not None:
                points.append({"name": s.get("name"), "median_ms": median, "value": value,
                               "label": ", ".join(picks_of(report, s.get("name")))})
        if points:
            view["figures"].append(("time", plots.quality_vs_time(points, metric_label(metric))))
        grains.append(view)
    picks = report.get("picks") or {}
    return {
        "report": report,
        "run_id": report.get("run_id") or "",
        "golden": report.get("golden") or {},
        "corpus": report.get("corpus") or {},
        "indexing": report.get("indexing") or {},
        "chunking": chunking_text((report.get("indexing") or {}).get("chunking")),
        "columns": [metric_label(m) for m in columns],
        "grains": grains,
        "picks": [{"name": p, "setup": picks.get(p), "rule": (picks.get("rules") or {}).get(p)} for p in PICKS],
        "picks_reason": picks.get("reason"),
        "failed_setups": [s for s in setups if s.get("error")],
        "questions": questions_view(report, setups, rank_grain),
        "answers": answers_view(report.get("answers")),
        "warnings": ((report.get("golden") or {}).get("warnings") or [])[:MOST_WARNINGS],
        "n_warnings": len((report.get("golden") or {}).get("warnings") or []),
        "timings": report.get("timings_s") or {},
        "versions": report.get("versions") or {},
    }


def questions_view(report: dict[str, Any], setups: list[dict[str, Any]], grain: str | None) -> dict[str, Any]:
    """Per question: each setup's rank of the first right result, and what came back instead
    when the report keeps it (``top``)."""
    names = [s.get("name") for s in setups]
    rows = []
    has_top = False
    for q in report.get("questions") or []:
        if not isinstance(q, dict):
            continue
        ranks = q.get("first_relevant_rank") or {}
        tops = q.get("top") if isinstance(q.get("top"), dict) else {}
        cells = []
        for name in names:
            rank = ranks.get(name)
            instead = top_text(tops.get(name)) if tops and rank != 1 else ""
            has_top = has_top or bool(tops)
            cells.append({"rank": rank, "instead": instead})
        rows.append({"id": q.get("id"), "line": q.get("line"), "question": q.get("question"),
                     "expected": [str(e) for e in q.get("expected") or []], "cells": cells,
                     "missed": any(c["rank"] is None for c in cells)})
    return {"setups": names, "rows": rows, "grain": grain, "has_top": has_top,
            "n_missed": sum(1 for r in rows if r["missed"])}


def answers_view(answers: Any) -> dict[str, Any] | None:
    """The answers section: the generator, each metric with its interval, and per question
    the answer, its scores and the judge's reasons when a judge gave them."""
    if not isinstance(answers, dict):
        return None
    metrics = [m for m in answers.get("metrics") or [] if isinstance(m, dict)]
    names = [m.get("name") for m in metrics]
    rows = []
    for q in answers.get("questions") or []:
        by_name = {m.get("name"): m for m in q.get("metrics") or [] if isinstance(m, dict)}
        scores, reasons = [], []
        for name in names:
            m = by_name.get(name) or {}
            scores.append(m.get("score"))
            why = m.get("explanation") or m.get("judge_reason") or m.get("reason")
            if why:
                reasons.append(f"{name}: {why}")
        rows.append({"id": q.get("question_id"), "question": q.get("question"), "answer": q.get("answer"),
                     "reference": q.get("reference"), "error": q.get("error"), "scores": scores, "reasons": reasons})
    return {"generator": answers.get("generator") or {}, "metrics": metrics, "names": names, "rows": rows,
            "n_questions": answers.get("n_questions"), "n_answered": answers.get("n_answered"),
            "n_failed": answers.get("n_failed"), "overall_score": answers.get("overall_score"),
            "overall_metrics": answers.get("overall_metrics") or []}


def _value_order(value: Any) -> tuple[int, float, str]:
    """Numbers first in numeric order, then text, then None."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (0, float(value), "")
    return (2, 0.0, "") if value is None else (1, 0.0, str(value))


def _best_row(board: list[dict[str, Any]]) -> dict[str, Any] | None:
    """``{key, score}`` of the best-scored leaderboard row, for a report that does not say."""
    scored = [r for r in board if isinstance(r.get("score"), (int, float))]
    if not scored:
        return None
    top = max(scored, key=lambda r: r["score"])
    return {"key": top.get("key"), "score": top["score"]}


def _trial_label(row: dict[str, Any]) -> str:
    p = row.get("parameters") or {}
    bits = [str(p.get(k)) for k in ("chunking_method", "chunk_size", "number_of_chunks", "search_mode") if p.get(k) is not None]
    return f"#{row.get('trial')} " + " ".join(bits)


def parallel_rounds(rows: list[dict[str, Any]]) -> bool:
    """Whether any round (a leaderboard row's ``round``, see ``Trial.round``) held more than
    one evaluation; False for reports that predate rounds (no row has one)."""
    rounds = [r.get("round") for r in rows if isinstance(r.get("round"), int) and not isinstance(r.get("round"), bool)]
    return len(set(rounds)) < len(rounds)


def experiment_view(report: dict[str, Any], running: bool = False) -> dict[str, Any]:
    """The context of an experiment's page (see ``experiment.html.j2``)."""
    objective = report.get("objective") or "score"
    board = [r for r in report.get("leaderboard") or [] if isinstance(r, dict)]
    by_trial = sorted(board, key=lambda r: (r.get("trial") is None, r.get("trial") or 0))
    parameters = sorted({k for r in board for k in (r.get("parameters") or {})})
    varying = [p for p in parameters if len({str((r.get("parameters") or {}).get(p)) for r in board}) > 1]
    shown = [p for p in ("chunking_method", "chunk_size", "chunk_overlap", "embedding_model", "number_of_chunks",
                         "search_mode", "ranker_strategy", "ranker_alpha", "foundation_model", "vector_store")
             if p in parameters]
    ok = [r for r in by_trial if r.get("score") is not None]
    trials = [{"x": r.get("trial") or 0, "score": r.get("score"), "label": _trial_label(r),
               "parameters": r.get("parameters") or {}} for r in by_trial]
    figures = []
    if ok:
        figures.append(("best", plots.best_so_far(trials, objective)))
        if parallel_rounds(by_trial):
            in_rounds = sorted(((r["round"], t) for t, r in zip(trials, by_trial) if isinstance(r.get("round"), int)),
                               key=lambda pair: pair[0])
            figures.append(("rounds", plots.best_so_far([dict(t, x=n) for n, t in in_rounds], objective,
                                                        by_round=True)))
        if varying:
            figures.append(("colour", plots.scores_by_parameter([t for t in trials if t["score"] is not None],
                                                               varying, objective)))
        figures.append(("cost", plots.cost_bars([_trial_label(r) for r in by_trial],
                                                [r.get("duration_s") for r in by_trial],
                                                [(r.get("cost") or {}).get("texts_embedded") for r in by_trial],
                                                [(r.get("cost") or {}).get("tokens") for r in by_trial])))
    from core.reports.pages.effects import gam_effects

    effects = []
    fitted = gam_effects(ok, varying, _value_order) if ok else None
    for name in (varying if fitted else []):
        effects.append((f"effect-{name}", plots.partial_dependence(name, fitted[name], objective)))
    for name in ([] if fitted else varying):
        groups: dict[Any, list[float]] = {}
        for r in ok:
            groups.setdefault((r.get("parameters") or {}).get(name), []).append(r["score"])
        ordered = [{"value": str(v), "scores": s, "mean": sum(s) / len(s)}
                   for v, s in sorted(groups.items(), key=lambda item: _value_order(item[0]))]
        effects.append((f"effect-{name}", plots.parameter_effect(name, ordered, objective)))
    return {"report": report, "experiment_id": report.get("experiment_id") or "", "objective": objective,
            "running": running, "leaderboard": board, "shown": shown, "figures": figures, "effects": effects,
            "effects_model": "gam" if fitted else "means",
            "golden": report.get("golden") or {}, "corpus": report.get("corpus") or {},
            "optimizer": report.get("optimizer") or {}, "counts": report.get("counts") or {},
            "best": report.get("best") or _best_row(board), "timings": report.get("timings_s") or {},
            "n_failed": sum(1 for r in board if r.get("status") == "failed")}
