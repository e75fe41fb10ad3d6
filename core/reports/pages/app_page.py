"""The pages of ``ragtune evaluate-app`` runs: one run, and two app versions compared.

Rendered from ``app.html.j2`` and ``app_compare.html.j2`` like the other pages (autoescape on,
plotly.js inlined, or the shared asset referenced when served); every value comes from the stored report (:mod:`core.evaluation.app`) or
the comparison (:func:`core.evaluation.app_report.compare_apps`), nothing is computed again
but what the plots draw.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import core.reports.pages.plots as plots
from core.reports.pages.render import plotly_src, render

if TYPE_CHECKING:
    from core.reports.pages.site import Links

__all__ = ["render_app", "render_app_compare"]


def _links(links: Links | None) -> dict[str, str] | None:
    return {"index": links.index} if links is not None and getattr(links, "index", "") else None


def render_app(report: dict[str, Any], links: Links | None = None) -> str:
    """The page of an app run: requests and failures, latency, refusals, the citations'
    measures per grain with a found@k curve, the answer metrics (with the judge's lost calls,
    repeats and agreement), per turn, and every question."""
    grain = (report.get("evaluation") or {}).get("rank_grain") or "doc"
    curves = {}
    for s in report.get("setups") or []:
        agg = (s.get("metrics") or {}).get(grain) or {}
        if agg.get("n_scored"):
            curves[s["name"]] = plots.found_at_k(agg.get("means") or {})
    figure = plots.found_curves(curves, f"cited right in the top k ({grain} grain)") if curves else None
    return render("app.html.j2", plotly_src=plotly_src(links), links=_links(links), report=report, grain=grain,
                  figure=figure,
                  answers=report.get("answers") or {}, requests=report.get("requests") or {},
                  latency=report.get("latency_ms") or {}, refusals=report.get("refusals") or {})


def render_app_compare(comparison: dict[str, Any], links: Links | None = None) -> str:
    """The page comparing two app runs (:func:`core.evaluation.app_report.compare_apps`)."""
    names = [m["name"] for m in comparison.get("metrics") or []]
    figure = plots.compare_bars(names, [m["first_mean"] for m in comparison["metrics"]],
                                [m["second_mean"] for m in comparison["metrics"]],
                                (str(comparison["first"]), str(comparison["second"])), "mean score") if names else None
    return render("app_compare.html.j2", plotly_src=plotly_src(links), links=_links(links), c=comparison,
                  figure=figure)
