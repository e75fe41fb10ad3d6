"""The figures of the pages, as plotly.js figure specifications (``{"data": [...], "layout": {...}}``).

Figures are plain JSON-ready dicts, drawn in the browser by the inlined plotly.js; nothing
here imports the plotly Python package.

References:
    plotly.js figure reference, https://plotly.com/javascript/reference/
"""

from __future__ import annotations

from typing import Any


def _layout(title: str, x: str, y: str, **extra: Any) -> dict[str, Any]:
    layout = {
        "title": {"text": title, "font": {"size": 14}, "x": 0.01, "xanchor": "left"},
        "xaxis": {"title": {"text": x}, "automargin": True},
        "yaxis": {"title": {"text": y}, "automargin": True},
        "margin": {"l": 50, "r": 16, "t": 40, "b": 44},
        "legend": {"orientation": "h", "y": -0.25},
        "hovermode": "closest",
        "paper_bgcolor": "#ffffff", "plot_bgcolor": "#ffffff",
    }
    layout.update(extra)
    return layout


def found_curves(curves: dict[str, tuple[list[int], list[float | None]]], title: str) -> dict[str, Any]:
    """One line per setup: found@k against k, at the cut-offs the report holds.

    Args:
        curves: setup name -> (cut-offs, found@k at each).
        title: the figure's title.
    """
    data = [{"type": "scatter", "mode": "lines+markers", "name": name, "x": ks, "y": ys,
             "hovertemplate": f"{name}<br>found@%{{x}} = %{{y:.3f}}<extra></extra>"}
            for name, (ks, ys) in curves.items()]
    return {"data": data, "layout": _layout(title, "k (chunks returned)", "found@k", yaxis={
        "title": {"text": "found@k"}, "range": [0, 1.02], "automargin": True}, xaxis={
        "title": {"text": "k (chunks returned)"}, "dtick": 1, "automargin": True})}


def quality_vs_time(points: list[dict[str, Any]], metric: str) -> dict[str, Any]:
    """One point per setup: ``metric`` against the median search time, picks labelled.

    Args:
        points: ``{name, median_ms, value, label}`` per setup (``label``: the picks naming it).
        metric: the y axis' metric label.
    """
    data = [{
        "type": "scatter", "mode": "markers+text", "name": "setups",
        "x": [p["median_ms"] for p in points], "y": [p["value"] for p in points],
        "text": [p["name"] + (f" ({p['label']})" if p["label"] else "") for p in points],
        "textposition": "top center", "marker": {"size": 11}, "cliponaxis": False,
        "hovertemplate": "%{text}<br>median %{x:.2f} ms<br>" + metric + " %{y:.3f}<extra></extra>",
    }]
    xs = [p["median_ms"] for p in points]
    ys = [p["value"] for p in points]
    pad_x = (max(xs) - min(xs)) * 0.25 or max(abs(xs[0]) * 0.25, 1.0)
    pad_y = (max(ys) - min(ys)) * 0.25 or 0.05
    return {"data": data, "layout": _layout(
        f"{metric} against the time a user waits", "median search time (ms)", metric, showlegend=False,
        xaxis={"title": {"text": "median search time (ms)"}, "range": [min(xs) - pad_x, max(xs) + pad_x], "automargin": True},
        yaxis={"title": {"text": metric}, "range": [min(ys) - pad_y, max(ys) + pad_y], "automargin": True})}


def best_so_far(trials: list[dict[str, Any]], objective: str, by_round: bool = False) -> dict[str, Any]:
    """Each evaluation's score and the best score so far, against the evaluation number (or
    the round, when evaluations ran in parallel).

    Args:
        trials: ``{x, score, label}`` in the order evaluated (``score`` None for a failed one).
        objective: the objective's name (maximised).
        by_round: whether ``x`` is a round number: then the best-so-far line has one point
            per round (the best after that round's evaluations), and the scores sit at their
            round.
    """
    xs, ys, labels, best_x, best, running = [], [], [], [], [], None
    for t in trials:
        if t["score"] is None:
            continue
        running = t["score"] if running is None else max(running, t["score"])
        xs.append(t["x"])
        ys.append(t["score"])
        labels.append(t["label"])
        if by_round and best_x and best_x[-1] == t["x"]:
            best[-1] = running
        else:
            best_x.append(t["x"])
            best.append(running)
    axis = "round" if by_round else "evaluation (#)"
    data = [
        {"type": "scatter", "mode": "markers", "name": "score", "x": xs, "y": ys, "text": labels,
         "hovertemplate": "%{text}<br>" + objective + " %{y:.3f}<extra></extra>"},
        {"type": "scatter", "mode": "lines+markers" if by_round else "lines", "name": "best so far",
         "x": best_x, "y": best, "line": {"shape": "hv"}},
    ]
    extra = {"xaxis": {"title": {"text": axis}, "dtick": 1, "automargin": True}} if by_round else {}
    return {"data": data, "layout": _layout(f"best {objective} so far, by {axis}", axis, objective, **extra)}


def scores_by_parameter(trials: list[dict[str, Any]], parameters: list[str], objective: str) -> dict[str, Any]:
    """Each evaluation's score against its number, coloured by one parameter's value; a menu
    switches the parameter.

    Args:
        trials: ``{x, score, parameters}`` per successful evaluation.
        parameters: the parameters that vary, in menu order (the first is shown).
        objective: the objective's name.
    """
    data, groups = [], []
    for i, name in enumerate(parameters):
        values = sorted({str(t["parameters"].get(name)) for t in trials})
        start = len(data)
        for value in values:
            chosen = [t for t in trials if str(t["parameters"].get(name)) == value]
            data.append({"type": "scatter", "mode": "markers", "name": f"{name}={value}",
                         "x": [t["x"] for t in chosen], "y": [t["score"] for t in chosen],
                         "marker": {"size": 10}, "visible": i == 0,
                         "hovertemplate": f"{name}={value}<br>evaluation %{{x}}<br>{objective} %{{y:.3f}}<extra></extra>"})
        groups.append((name, start, len(data)))
    buttons = [{"label": name, "method": "update",
                "args": [{"visible": [start <= j < end for j in range(len(data))]}]}
               for name, start, end in groups]
    extra: dict[str, Any] = {}
    if len(buttons) > 1:
        extra["updatemenus"] = [{"buttons": buttons, "direction": "down", "x": 1, "xanchor": "right", "y": 1.02,
                                 "yanchor": "bottom", "pad": {"t": 0, "b": 4}}]
        extra["margin"] = {"l": 50, "r": 16, "t": 70, "b": 44}
    return {"data": data, "layout": _layout(f"{objective} by evaluation, coloured by parameter",
                                            "evaluation", objective, **extra)}


def parameter_effect(name: str, groups: list[dict[str, Any]], objective: str) -> dict[str, Any]:
    """One parameter's effect: each evaluation's score per value, and the per-value mean.

    Args:
        name: the parameter.
        groups: ``{value, scores, mean}`` per value, in display order.
        objective: the objective's name.
    """
    xs, ys = [], []
    for g in groups:
        xs += [g["value"]] * len(g["scores"])
        ys += g["scores"]
    data = [
        {"type": "scatter", "mode": "markers", "name": "evaluations", "x": xs, "y": ys, "opacity": 0.6,
         "marker": {"size": 8}},
        {"type": "scatter", "mode": "markers+lines", "name": "mean per value", "x": [g["value"] for g in groups],
         "y": [g["mean"] for g in groups], "marker": {"size": 12, "symbol": "diamond"}},
    ]
    return {"data": data, "layout": _layout(f"{name}: per-value means", name, objective,
                                            xaxis={"title": {"text": name}, "type": "category", "automargin": True})}


def partial_dependence(name: str, points: list[dict[str, Any]], objective: str) -> dict[str, Any]:
    """One parameter's GAM partial dependence: the effect per value with its 95 % band.

    Args:
        name: the parameter.
        points: ``{value, effect, low, high}`` per value, in display order.
        objective: the objective's name.
    """
    data = [{"type": "scatter", "mode": "markers+lines", "name": "partial dependence",
             "x": [p["value"] for p in points], "y": [p["effect"] for p in points],
             "error_y": {"type": "data", "symmetric": False,
                         "array": [p["high"] - p["effect"] for p in points],
                         "arrayminus": [p["effect"] - p["low"] for p in points]},
             "marker": {"size": 10},
             "hovertemplate": name + "=%{x}<br>effect %{y:.3f}<extra></extra>"}]
    return {"data": data, "layout": _layout(f"{name}: GAM partial dependence (95% band)", name,
                                            f"effect on {objective}", showlegend=False,
                                            xaxis={"title": {"text": name}, "type": "category", "automargin": True})}


def cost_bars(labels: list[str], seconds: list[float | None], texts_embedded: list[int | None] | None = None,
              tokens: list[int | None] | None = None) -> dict[str, Any]:
    """Cost per configuration: seconds as bars, texts embedded (and chat and judge tokens,
    where known) as markers on a second axis; None values are left out of the plot, and a
    count that is zero or unknown for every configuration draws no markers.

    Args:
        labels: one label per configuration.
        seconds: the evaluation's time in seconds, per configuration.
        texts_embedded: distinct texts the evaluation sent to the embedding model, or None.
        tokens: prompt plus completion tokens of its chat and judge requests, None when
            unknown.
    """
    data: list[dict[str, Any]] = [{"type": "bar", "name": "seconds", "x": labels, "y": seconds,
                                   "hovertemplate": "%{x}<br>%{y:.1f} s<extra></extra>"}]
    for name, values in (("texts embedded", texts_embedded), ("tokens", tokens)):
        if values and any(isinstance(v, (int, float)) and v > 0 for v in values):  # all zero or unknown: no trace
            data.append({"type": "scatter", "mode": "markers", "name": name, "x": labels, "y": values,
                         "yaxis": "y2", "hovertemplate": "%{x}<br>%{y} " + name + "<extra></extra>"})
    extra: dict[str, Any] = {"xaxis": {"type": "category", "automargin": True}, "showlegend": len(data) > 1}
    if len(data) > 1:
        extra["yaxis2"] = {"title": {"text": "count"}, "overlaying": "y", "side": "right", "rangemode": "tozero",
                           "automargin": True}
    return {"data": data, "layout": _layout("cost per configuration", "configuration", "seconds", **extra)}


def history_lines(series: dict[str, dict[str, list[Any]]], metric: str) -> dict[str, Any]:
    """One line per setup: ``metric`` of each run over time.

    Args:
        series: setup name -> ``{x: [ISO times], y: [values], text: [hover lines]}``.
        metric: the metric's label.
    """
    data = [{"type": "scatter", "mode": "lines+markers", "name": name, "x": s["x"], "y": s["y"], "text": s["text"],
             "hovertemplate": "%{text}<br>" + metric + " %{y:.3f}<extra>" + name + "</extra>",
             "line": {"shape": "hv"}, "marker": {"size": 5}}
            for name, s in series.items()]
    return {"data": data, "layout": _layout(f"{metric} per run", "run start (UTC)", metric,
                                            xaxis={"title": {"text": "run start (UTC)"}, "type": "date",
                                                   "automargin": True},
                                            yaxis={"title": {"text": metric}, "range": [0, 1.02], "automargin": True})}


def compare_bars(setups: list[str], first: list[float | None], second: list[float | None],
                 names: tuple[str, str], metric: str) -> dict[str, Any]:
    """``metric`` per setup in two runs, side by side."""
    data = [{"type": "bar", "name": names[0], "x": setups, "y": first},
            {"type": "bar", "name": names[1], "x": setups, "y": second}]
    return {"data": data, "layout": _layout(f"{metric} per setup", "setup", metric, barmode="group",
                                            xaxis={"type": "category", "automargin": True})}


def technique_bars(labels: list[str], values: list[float | None], tied: list[bool], metric: str) -> dict[str, Any]:
    """``metric`` of each chunking technique at its best; ties with the best drawn apart."""
    colours = ["#d99a00" if t else "#2b59c3" for t in tied]
    data = [{"type": "bar", "name": metric, "x": labels, "y": values, "marker": {"color": colours},
             "hovertemplate": "%{x}<br>" + metric + " %{y:.3f}<extra></extra>"}]
    return {"data": data, "layout": _layout(f"{metric} per technique at its best", "technique", metric,
                                            xaxis={"type": "category", "automargin": True}, showlegend=False)}
