"""What each page shows, built from stored reports (pure: no I/O, no templates)."""

from __future__ import annotations

from typing import Any

import core.reports.pages.plots as plots
from core.reports.pages.effects import gam_effects
from core.reports.pages.targets import targets_view
from core.reports.tables import (PICKS, WAIT_PARTS, interval, metric_label, metric_names, picks_of,  # noqa: F401
                                 top_text, wait_of)

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


#: Most results listed per setup as what "came back instead" of a question's first right one.
MOST_INSTEAD = 3


def _setup_row(report: dict[str, Any], setup: dict[str, Any], block: Any, key: str, others: list[str],
               ranked: bool) -> dict[str, Any]:
    """One row of a grain's setups table: the key metric with its interval, picks and (at the
    rank grain) the tie with the best and its McNemar counts, the wait with its parts, then
    the other metrics."""
    name = setup.get("name")
    vs_best = setup.get("mcnemar_vs_best") if ranked and isinstance(setup.get("mcnemar_vs_best"), dict) else None
    row: dict[str, Any] = {"name": name, "picks": picks_of(report, name), "error": setup.get("error"),
                           "tied": bool(setup.get("tied_with_best")) if ranked else False, "vs_best": vs_best,
                           "wait": wait_of(setup.get("timings_ms")), "key": None, "cells": []}
    if isinstance(block, dict):
        means = block.get("means") or {}
        low, high = interval(block, key)
        row["key"] = {"value": means.get(key), "low": low, "high": high}
        for m in others:
            low, high = interval(block, m)
            row["cells"].append({"value": means.get(m), "low": low, "high": high})
    elif not row["error"]:
        row["error"] = "no scores at this grain"
    return row


def _grain_figures(report: dict[str, Any], setups: list[dict[str, Any]], blocks: dict[Any, Any], grain: str,
                   metric: str) -> list[tuple[str, Any]]:
    """A grain's plots: found@k per setup and the key metric against the time a user waits."""
    figures: list[tuple[str, Any]] = []
    curves = {}
    for s in setups:
        block = blocks.get(s.get("name"))
        if not isinstance(block, dict) or not block.get("n_scored"):
            continue
        curves[s.get("name")] = plots.found_at_k(block.get("means") or {})
    if curves:
        figures.append(("found", plots.found_curves(curves, f"found@k per setup [{grain}]")))
    points = []
    for s in setups:
        block = blocks.get(s.get("name"))
        value = _num(((block or {}).get("means") or {}).get(metric)) if isinstance(block, dict) else None
        wait = wait_of(s.get("timings_ms"))
        if value is not None and wait["median"] is not None:
            low, high = interval(block, metric)
            points.append({"name": s.get("name"), "wait_ms": wait["median"], "parts": wait["parts"],
                           "value": value, "low": _num(low), "high": _num(high),
                           "picks": picks_of(report, s.get("name"))})
    if points:
        figures.append(("time", plots.quality_vs_time(points, metric_label(metric))))
    return figures


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
        key = _ranked_metric(first)
        others = [m for m in columns if m != key]
        view.update(key=metric_label(key), others=[metric_label(m) for m in others])
        view["rows"] = [_setup_row(report, s, blocks.get(s.get("name")), key, others, grain == rank_grain)
                        for s in setups]
        view["figures"] = _grain_figures(report, setups, blocks, grain, key)
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
        "wait_rule": (picks.get("rules") or {}).get("latency"),
        "wait_split": any(wait_of(s.get("timings_ms"))["split"] for s in setups),
        "failed_setups": [s for s in setups if s.get("error")],
        "questions": questions_view(report, setups, rank_grain),
        "answers": answers_view(report.get("answers")),
        "warnings": ((report.get("golden") or {}).get("warnings") or [])[:MOST_WARNINGS],
        "n_warnings": len((report.get("golden") or {}).get("warnings") or []),
        "timings": report.get("timings_s") or {},
        "versions": report.get("versions") or {},
        "targets": targets_view(report),
    }


def instead_of(top: Any, rank: Any, most: int = MOST_INSTEAD) -> list[str]:
    """What a setup returned before a question's first right result (all of it, at most
    ``most``, when no right result came back), one ``document#page (score)`` text each; ``[]``
    when the first result was right or the report keeps no ``top``."""
    if not isinstance(top, list) or rank == 1:
        return []
    above = top[:rank - 1] if isinstance(rank, int) and not isinstance(rank, bool) and rank > 1 else top
    return [top_text([hit]) for hit in above[:most] if isinstance(hit, dict)]


def questions_view(report: dict[str, Any], setups: list[dict[str, Any]], grain: str | None) -> dict[str, Any]:
    """Per question: each setup's rank of the first right result, and, when the report keeps
    it (``top``), what came back instead: the results above the first right one (at most
    :data:`MOST_INSTEAD` per setup), setups that returned the same listed together."""
    names = [s.get("name") for s in setups]
    rows = []
    has_top = False
    for q in report.get("questions") or []:
        if not isinstance(q, dict):
            continue
        ranks = q.get("first_relevant_rank") or {}
        tops = q.get("top") if isinstance(q.get("top"), dict) else {}
        has_top = has_top or bool(tops)
        cells, instead = [], {}
        for name in names:
            rank = ranks.get(name)
            cells.append({"rank": rank})
            hits = instead_of(tops.get(name), rank) if tops else []
            if hits:
                instead.setdefault(tuple(hits), []).append(str(name))
        rows.append({"id": q.get("id"), "line": q.get("line"), "question": q.get("question"),
                     "expected": [str(e) for e in q.get("expected") or []], "cells": cells,
                     "instead": [{"setups": who, "hits": list(hits)} for hits, who in instead.items()],
                     "n_instead": sum(len(who) for who in instead.values()),
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


def _with_interval(best: Any, board: list[dict[str, Any]]) -> Any:
    """The best configuration with its leaderboard row's interval (``ci_low`` / ``ci_high``)."""
    if not isinstance(best, dict):
        return best
    row = next((r for r in board if r.get("key") == best.get("key") and r.get("score") is not None), {})
    return {**best, "ci_low": row.get("ci_low"), "ci_high": row.get("ci_high")}


def evaluation_number(row: dict[str, Any]) -> int | None:
    """The evaluation's number as people count it and the CLI prints it (``evaluation 1/12``):
    the leaderboard row's ``trial`` (counted from 0, as the study stores it) plus one; None
    when the row has no trial."""
    trial = row.get("trial")
    return trial + 1 if isinstance(trial, int) and not isinstance(trial, bool) else None


def _trial_label(row: dict[str, Any]) -> str:
    p = row.get("parameters") or {}
    bits = [str(p.get(k)) for k in ("chunking_method", "chunk_size", "number_of_chunks", "search_mode") if p.get(k) is not None]
    return f"#{evaluation_number(row)} " + " ".join(bits)


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
                         "search_mode", "ranker_strategy", "ranker_k", "ranker_alpha", "reranker", "retrieval_depth",
                         "foundation_model", "vector_store")
             if p in parameters]
    ok = [r for r in by_trial if r.get("score") is not None]
    trials = [{"x": evaluation_number(r) or 0, "score": r.get("score"), "label": _trial_label(r),
               "low": _num(r.get("ci_low")), "high": _num(r.get("ci_high")),
               "partial": r.get("fully_evaluated") is False, "parameters": r.get("parameters") or {}}
              for r in by_trial]
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
        figures.append(("cost", plots.cost_bars([f"#{evaluation_number(r)}" for r in by_trial],
                                                [r.get("duration_s") for r in by_trial],
                                                [(r.get("cost") or {}).get("texts_embedded") for r in by_trial],
                                                [(r.get("cost") or {}).get("tokens") for r in by_trial],
                                                [_trial_label(r) for r in by_trial])))
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
            "running": running, "leaderboard": board, "shown": [p for p in shown if p in varying],
            "same": {p: (board[0].get("parameters") or {}).get(p) for p in shown if p not in varying} if board else {},
            "figures": figures, "effects": effects,
            "n_partial": sum(1 for t in trials if t["partial"] and t["score"] is not None),
            "effects_model": "gam" if fitted else "means",
            "golden": report.get("golden") or {}, "corpus": report.get("corpus") or {},
            "optimizer": report.get("optimizer") or {}, "counts": report.get("counts") or {},
            "best": _with_interval(report.get("best") or _best_row(board), board),
            "timings": report.get("timings_s") or {},
            "n_failed": sum(1 for r in board if r.get("status") == "failed"),
            "stop": report.get("stop") if isinstance(report.get("stop"), dict) else {},
            "fidelity": report.get("fidelity") if isinstance(report.get("fidelity"), dict) else None,
            "front": _front_view(report.get("front"))}


def _front_view(front: Any) -> dict[str, Any] | None:
    """The experiment report's ``front`` (``core.experiment.front``) as the page lists it: the
    rows on the front first (best quality first), then the others; None when absent or empty."""
    if not isinstance(front, dict) or not front.get("rows"):
        return None
    rows = [r for r in front["rows"] if isinstance(r, dict)]
    rows.sort(key=lambda r: (not r.get("on_front"), -(_num(r.get("quality")) or 0.0)))
    picks: dict[str, list[str]] = {}
    for name in ("best_for_balance", "best_for_time"):
        if front.get(name):
            picks.setdefault(front[name], []).append(name)
    return {"rows": rows, "picks": picks,
            "balance": front.get("best_for_balance"), "time": front.get("best_for_time"),
            "rules": front.get("rules") or {}}


def _technique_status(t: dict[str, Any]) -> str:
    if not t.get("best_build"):
        return "none"
    if t.get("vs_best") is None and t.get("tie"):
        return "best"
    return "tie" if t.get("tie") else "worse"


def chunking_view(report: dict[str, Any]) -> dict[str, Any]:
    """The context of a chunking comparison's page (``compare-chunking``; see
    ``chunking.html.j2``), as :func:`core.evaluation.chunking.format_comparison` prints it:
    each technique at its best build with what it counted, the paired exact McNemar test
    against the best and whether it ties; the best and the ties; what ``--current`` decided;
    every pair of techniques, every build, and what failed. Read from the report, never
    computed again."""
    settings = report.get("settings") or {}
    counting = str(settings.get("counting") or "found")
    order = {m: i for i, m in enumerate(report.get("ranking") or [])}
    techniques = sorted((t for t in report.get("techniques") or [] if isinstance(t, dict)),
                        key=lambda t: order.get(t.get("method"), len(order)))
    rows = []
    for t in techniques:
        vs = t.get("vs_best") if isinstance(t.get("vs_best"), dict) else {}
        rows.append({"method": t.get("method"), "best_build": t.get("best_build"), "counted": t.get("counted"),
                     "n_scored": t.get("n_scored"), "status": _technique_status(t), "reason": t.get("reason"),
                     "only_best": vs.get("only_best"), "only_this": vs.get("only_this"), "p_value": vs.get("p_value")})
    scored = [r for r in rows if r["status"] != "none"]
    builds = [b for b in report.get("builds") or [] if isinstance(b, dict)]
    n_questions = (report.get("golden") or {}).get("n_questions")
    figures = []
    if scored:
        figures.append(("techniques", plots.chunking_bars(scored, counting, n_questions)))
    searched = [b for b in builds if b.get("status") == "ok" and isinstance(b.get("counted"), int)]
    if searched:
        figures.append(("builds", plots.builds_by_size(searched, counting)))
    return {"report": report, "title": str(report.get("run_id") or "chunking comparison"), "settings": settings,
            "counting": counting, "golden": report.get("golden") or {}, "corpus": report.get("corpus") or {},
            "best": report.get("best") if isinstance(report.get("best"), dict) else None,
            "ties": [str(t) for t in report.get("ties") or []], "rows": rows, "figures": figures,
            "pairs": [p for p in report.get("pairs") or [] if isinstance(p, dict)], "builds": builds,
            "current": report.get("current") if isinstance(report.get("current"), dict) else None,
            "failures": report.get("failures") or [], "n_failures": report.get("n_failures") or 0,
            "answer_errors": report.get("answer_errors") or [], "n_answer_errors": report.get("n_answer_errors") or 0,
            "left_out": report.get("left_out") or [], "timings": report.get("timings_s") or {}}
