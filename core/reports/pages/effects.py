"""Each parameter's effect on an experiment's objective, for its page: the partial dependence
of a GAM fitted on the successful evaluations, with its 95 % band; None when no model can
be fitted (too few evaluations, or pygam fails), so the page shows per-value means instead.

pygam is imported when effects are computed, never at import time.

References:
    Servén D., Brummitt C. (2018). pyGAM: Generalized Additive Models in Python.
    ``LinearGAM`` with one factor term ``f(i)`` per parameter; ``partial_dependence(term, X,
    width=0.95)`` gives each term's effect and its confidence band.
"""

from __future__ import annotations

import logging
import warnings
from typing import Any, Callable

logger = logging.getLogger(__name__)

#: Fewest successful evaluations a GAM is fitted on, and per varying parameter beyond one.
MIN_ROWS = 6
#: pygam's GCV is valid only while ``n > GCV_GAMMA * edof``; a fit past that is not shown.
GCV_GAMMA = 1.4


def gam_effects(trials: list[dict[str, Any]], parameters: list[str],
                order: Callable[[Any], Any]) -> dict[str, list[dict[str, Any]]] | None:
    """Partial dependence of each parameter, from a ``LinearGAM`` with a factor per parameter.

    Args:
        trials: ``{score, parameters}`` per successful evaluation (score on the objective's scale).
        parameters: the parameters that vary among them.
        order: sort key of a parameter's values (the page's display order).

    Returns:
        ``{parameter: [{value, effect, low, high}, ...]}``: the effect on the objective
        relative to the model's mean, with the 95 % band, per value in display order; or None
        when fewer than ``MIN_ROWS`` (plus one per parameter beyond the first) evaluations
        succeeded, the fit is past pygam's valid range, or pygam is missing or fails.
    """
    rows = [t for t in trials if isinstance(t.get("score"), (int, float))]
    if not parameters or len(rows) < MIN_ROWS + len(parameters) - 1:
        return None
    try:
        import numpy as np
        from pygam import LinearGAM, f
    except ImportError:
        return None
    levels = {p: sorted({t["parameters"].get(p) for t in rows}, key=order) for p in parameters}
    X = np.array([[levels[p].index(t["parameters"].get(p)) for p in parameters] for t in rows], dtype=float)
    y = np.array([float(t["score"]) for t in rows])
    spec = f(0)
    for i in range(1, len(parameters)):
        spec = spec + f(i)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            gam = LinearGAM(spec).fit(X, y)
            if not y.size > GCV_GAMMA * float(gam.statistics_["edof"]):
                return None
            out = {}
            for i, p in enumerate(parameters):
                grid = np.repeat(X[:1], len(levels[p]), axis=0)
                grid[:, i] = np.arange(len(levels[p]), dtype=float)
                effect, band = gam.partial_dependence(term=i, X=grid, width=0.95)
                out[p] = [{"value": str(v), "effect": float(e), "low": float(b[0]), "high": float(b[1])}
                          for v, e, b in zip(levels[p], effect, band)]
    except (ValueError, ArithmeticError, np.linalg.LinAlgError) as exc:
        logger.info("no GAM for the experiment page (%s: %s); per-value means instead", type(exc).__name__, exc)
        return None
    if not all(np.isfinite([x[k] for rows_ in out.values() for x in rows_ for k in ("effect", "low", "high")])):
        return None
    return out
