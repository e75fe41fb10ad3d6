"""What a run over several targets shows (pure: no I/O, no templates): each target's
description side by side, and every setup method's numbers side by side across the targets."""

from __future__ import annotations

from typing import Any

from core.reports.tables import interval

#: Most missing documents a target's column lists (the report keeps them all).
MOST_MISSING = 10
#: The measures the side-by-side table shows, at the run's rank grain.
SIDE_BY_SIDE = ("found@10", "mrr")


def targets_view(report: dict[str, Any]) -> dict[str, Any] | None:
    """The context of the targets section of a run's page, or None for a run without targets.

    Returns:
        ``{columns: [one per target: name, status, error, engine, index, location, counts,
        fingerprint, inferred, unavailable, missing (first MOST_MISSING), n_missing], measures,
        rows: [{setup, cells: [per target: {value, low, high, mrr, picks} or None]}], grain}``.
    """
    targets = [t for t in report.get("targets") or [] if isinstance(t, dict)]
    if not targets:
        return None
    grain = (report.get("evaluation") or {}).get("rank_grain")
    picks = report.get("picks") or {}
    columns = []
    for t in targets:
        d = t.get("description") or {}
        missing = [str(m) for m in t.get("missing_documents") or []]
        columns.append({"name": t.get("name"), "status": t.get("status"), "error": t.get("error"),
                        "engine": d.get("engine"), "index": d.get("index"), "location": d.get("location"),
                        "n_chunks": d.get("n_chunks"), "n_documents": d.get("n_documents"),
                        "fingerprint": d.get("fingerprint"), "basis": d.get("fingerprint_basis"),
                        "inferred": d.get("inferred") or [], "notes": d.get("notes") or [],
                        "unavailable": d.get("unavailable") or [], "missing": missing[:MOST_MISSING],
                        "n_missing": len(missing), "n_expected": t.get("n_expected_documents"),
                        "best": (t.get("picks") or {}).get("finds_the_most")})
    by_target: dict[str, dict[str, dict[str, Any]]] = {}
    order: list[str] = []
    for s in report.get("setups") or []:
        name = str(s.get("name") or "")
        target, _, key = name.partition("/")
        if s.get("target") is None or not key:
            continue
        by_target.setdefault(target, {})[key] = s
        if key not in order:
            order.append(key)
    rows = []
    for key in order:
        cells = []
        for t in targets:
            s = by_target.get(str(t.get("name")), {}).get(key)
            if s is None:
                cells.append(None)
                continue
            block = (s.get("metrics") or {}).get(grain) or {}
            means = block.get("means") or {}
            low, high = interval(block, SIDE_BY_SIDE[0]) if block else (None, None)
            cells.append({"value": means.get(SIDE_BY_SIDE[0]), "low": low, "high": high,
                          "mrr": means.get(SIDE_BY_SIDE[1]), "error": s.get("error"), "tied": s.get("tied_with_best"),
                          "picks": [p for p in ("finds_the_most", "best_for_balance", "best_for_time")
                                    if picks.get(p) == s.get("name")]})
        rows.append({"setup": key, "cells": cells})
    return {"columns": columns, "rows": rows, "grain": grain, "measures": list(SIDE_BY_SIDE)}


__all__ = ["targets_view"]
