"""The figures of the pages, as plotly.js figure specifications (``{"data": [...], "layout": {...}}``).

Figures are plain JSON-ready dicts, drawn in the browser by the inlined plotly.js; nothing
here imports the plotly Python package.

References:
    plotly.js figure reference, https://plotly.com/javascript/reference/
"""

from __future__ import annotations

import math

from typing import Any


#: A legend under the plot, placed against the figure's bottom edge: plotly then widens the
#: bottom margin to hold it, so it never covers the x axis' title or ticks (``yref`` container,
#: plotly.js 2.23 and later).
LEGEND_BELOW = {"orientation": "h", "x": 0, "xanchor": "left", "y": 0, "yanchor": "bottom", "yref": "container"}
#: Wait ratios (slowest over fastest) from which the time axis is logarithmic.
LOG_AXIS_RATIO = 20.0


def _figure(data: list[dict[str, Any]], title: str, x: str, y: str, **extra: Any) -> dict[str, Any]:
    """``{title, data, layout}``: the title is the page's caption of the plot (HTML, so it
    wraps on a narrow screen instead of being clipped), not drawn by plotly."""
    return {"title": title, "data": data, "layout": _layout(x, y, **extra)}


def _layout(x: str, y: str, **extra: Any) -> dict[str, Any]:
    layout = {
        "xaxis": {"title": {"text": x}, "automargin": True},
        "yaxis": {"title": {"text": y}, "automargin": True},
        "margin": {"l": 50, "r": 16, "t": 12, "b": 44},
        "legend": dict(LEGEND_BELOW),
        "hovermode": "closest",
        "paper_bgcolor": "#ffffff", "plot_bgcolor": "#ffffff",
    }
    layout.update(extra)
    return layout


def found_at_k(means: dict[str, Any]) -> tuple[list[int], list[float | None]]:
    """The found@k a report holds, as a curve: (cut-offs ascending, found@k at each).

    Args:
        means: a metrics block's ``means`` (metric name -> mean); keys other than
            ``found@<int>`` are ignored, so nothing is computed again here.
    """
    ks = sorted(int(m.split("@", 1)[1]) for m in means
                if m.startswith("found@") and m.split("@", 1)[1].isdigit())
    return ks, [means[f"found@{k}"] for k in ks]


def found_curves(curves: dict[str, tuple[list[int], list[float | None]]], title: str) -> dict[str, Any]:
    """One line per setup: found@k against k, at the cut-offs the report holds.

    Args:
        curves: setup name -> (cut-offs, found@k at each).
        title: the figure's title.
    """
    data = [{"type": "scatter", "mode": "lines+markers", "name": name, "x": ks, "y": ys,
             "hovertemplate": f"{name}<br>found@%{{x}} = %{{y:.3f}}<extra></extra>"}
            for name, (ks, ys) in curves.items()]
    return _figure(data, title, "k (chunks returned)", "found@k", yaxis={
        "title": {"text": "found@k"}, "range": [0, 1.02], "automargin": True}, xaxis={
        "title": {"text": "k (chunks returned)"}, "dtick": 1, "automargin": True})


def _ms_text(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}" if value >= 10 else f"{value:.2f}"


#: The least room, as a share of a log axis' length, between either end and a decade's tick:
#: at 390 px a tick label closer to the left end runs into the y axis' lowest label.
TICK_ROOM = 0.08


def log_range(low: float, high: float) -> list[float]:
    """A log axis' range (log10 units, as plotly's) from ``low`` to ``high`` (> 0), with a
    fifth of a decade of room at each end, widened further where a decade's tick (``dtick``
    1) would fall within :data:`TICK_ROOM` of the axis' length from an end, so no tick label
    sits on the corner where the y axis' lowest label is drawn."""
    lo, hi = math.log10(low) - 0.2, math.log10(high) + 0.2
    for _ in range(12):  # widening one end lengthens the axis, and so the room, by TICK_ROOM of it: this settles
        room = TICK_ROOM * (hi - lo)
        if math.ceil(lo) - lo < room:
            lo = math.ceil(lo) - room
        if hi - math.floor(hi) < room:
            hi = math.floor(hi) + room
    return [lo, hi]


def quality_vs_time(points: list[dict[str, Any]], metric: str) -> dict[str, Any]:
    """One trace per setup: ``metric`` (with its 95 % interval as an error bar) against the
    median time a user waits for one question's results; the picks drawn as stars. The
    names are in the legend, never written on the plot (they would overlap). The x axis is
    logarithmic when the slowest wait is :data:`LOG_AXIS_RATIO` times the fastest or more.

    Args:
        points: per setup ``{name, wait_ms, parts, value, low, high, picks}``: ``wait_ms`` the
            median wait (ms; the picks' measure), ``parts`` each part's ``{label, median}``
            (see :func:`core.reports.pages.views.wait_of`), ``low`` / ``high`` the interval
            or None, ``picks`` the picks naming the setup.
        metric: the y axis' metric label.
    """
    data = []
    for p in points:
        parts = " + ".join(f"{part['label']} {_ms_text(part['median'])}" for part in p["parts"].values()
                           if part["median"] is not None)
        interval = f" [{p['low']:.3f}, {p['high']:.3f}]" if p["low"] is not None and p["high"] is not None else ""
        text = (f"{p['name']}<br>waits {_ms_text(p['wait_ms'])} ms (median)<br>median of each part: {parts} ms"
                f"<br>{metric} {p['value']:.3f}{interval}")
        if p["picks"]:
            text += f"<br>pick: {', '.join(p['picks'])}"
        trace: dict[str, Any] = {
            "type": "scatter", "mode": "markers", "name": p["name"], "x": [p["wait_ms"]], "y": [p["value"]],
            "text": [text], "hovertemplate": "%{text}<extra></extra>",
            "marker": {"size": 15 if p["picks"] else 10, "symbol": "star" if p["picks"] else "circle",
                       "line": {"width": 1, "color": "#1d2433"} if p["picks"] else {"width": 0}},
        }
        if p["low"] is not None and p["high"] is not None:
            trace["error_y"] = {"type": "data", "symmetric": False, "array": [p["high"] - p["value"]],
                                "arrayminus": [p["value"] - p["low"]], "thickness": 1, "width": 3}
        data.append(trace)
    xs = [p["wait_ms"] for p in points]
    log = min(xs) > 0 and max(xs) / min(xs) >= LOG_AXIS_RATIO
    title = "median wait per question (ms" + (", log scale)" if log else ")")
    xaxis: dict[str, Any] = {"title": {"text": title}, "automargin": True, "rangemode": "tozero"}
    if log:
        xaxis = {"title": {"text": title}, "automargin": True, "type": "log", "dtick": 1,
                 "range": log_range(min(xs), max(xs))}
    return _figure(data, f"{metric} against the time a user waits (query embedding + search + rerank; stars: picks)",
                   title, metric, xaxis=xaxis)


def best_so_far(trials: list[dict[str, Any]], objective: str, by_round: bool = False) -> dict[str, Any]:
    """Each evaluation's score and the best score so far, against the evaluation number (or
    the round, when evaluations ran in parallel).

    Args:
        trials: ``{x, score, label, low?, high?, partial?}`` in the order evaluated (``score``
            None for a failed one; ``low`` / ``high`` its 95 % interval, drawn as an error bar,
            or None; ``partial`` True for a score on a subset of the questions, drawn as an
            open marker of its own trace and never the best so far: a mean over fewer questions
            is no rival to one over all of them).
        objective: the objective's name (maximised).
        by_round: whether ``x`` is a round number: then the best-so-far line has one point
            per round (the best after that round's evaluations), and the scores sit at their
            round.
    """
    xs, ys, labels, best_x, best, running = [], [], [], [], [], None
    above, below = [], []
    partial: dict[str, list[Any]] = {"x": [], "y": [], "text": []}
    for t in trials:
        if t["score"] is None:
            continue
        if t.get("partial"):
            partial["x"].append(t["x"])
            partial["y"].append(t["score"])
            partial["text"].append(t["label"])
            continue
        running = t["score"] if running is None else max(running, t["score"])
        xs.append(t["x"])
        ys.append(t["score"])
        labels.append(t["label"])
        low, high = t.get("low"), t.get("high")
        known = low is not None and high is not None
        above.append(high - t["score"] if known else None)
        below.append(t["score"] - low if known else None)
        if by_round and best_x and best_x[-1] == t["x"]:
            best[-1] = running
        else:
            best_x.append(t["x"])
            best.append(running)
    axis = "round" if by_round else "evaluation (#)"
    if any(v is not None for v in above):  # each score's 95 % interval, where the report has one
        data_error = {"type": "data", "symmetric": False, "array": above, "arrayminus": below, "thickness": 1,
                      "width": 3}
    else:
        data_error = None
    data: list[dict[str, Any]] = [
        {"type": "scatter", "mode": "markers", "name": "score", "x": xs, "y": ys, "text": labels,
         "hovertemplate": "%{text}<br>" + objective + " %{y:.3f}<extra></extra>"},
        {"type": "scatter", "mode": "lines+markers" if by_round else "lines", "name": "best so far",
         "x": best_x, "y": best, "line": {"shape": "hv"}},
    ]
    if data_error:
        data[0]["error_y"] = data_error
    if partial["x"]:
        data.append({"type": "scatter", "mode": "markers", "name": "score on a subset of the questions", **partial,
                     "marker": {"symbol": "circle-open"},
                     "hovertemplate": "%{text}<br>" + objective + " %{y:.3f} (partial)<extra></extra>"})
    extra = {"xaxis": {"title": {"text": axis}, "dtick": 1, "automargin": True}} if by_round else {}
    return _figure(data, f"best {objective} so far, by {axis}", axis, objective, **extra)


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
        extra["margin"] = {"l": 50, "r": 16, "t": 40, "b": 44}
    return _figure(data, f"{objective} by evaluation, coloured by parameter",
                   "evaluation", objective, **extra)


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
    return _figure(data, f"{name}: per-value means", name, objective,
                   xaxis={"title": {"text": name}, "type": "category", "automargin": True})


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
    return _figure(data, f"{name}: GAM partial dependence (95% band)", name,
                   f"effect on {objective}", showlegend=False,
                   xaxis={"title": {"text": name}, "type": "category", "automargin": True})


def cost_bars(labels: list[str], seconds: list[float | None], texts_embedded: list[int | None] | None = None,
              tokens: list[int | None] | None = None, details: list[str] | None = None) -> dict[str, Any]:
    """Cost per configuration: seconds as bars, texts embedded (and chat and judge tokens,
    where known) as markers on a second axis; None values are left out of the plot, and a
    count that is zero or unknown for every configuration draws no markers.

    Args:
        labels: one short label per configuration (the x axis: ``#3``).
        seconds: the evaluation's time in seconds, per configuration.
        texts_embedded: distinct texts the evaluation sent to the embedding model, or None.
        tokens: prompt plus completion tokens of its chat and judge requests, None when
            unknown.
        details: one longer text per configuration, shown on hover (default the labels).
    """
    text = details or labels
    data: list[dict[str, Any]] = [{"type": "bar", "name": "seconds", "x": labels, "y": seconds, "text": text,
                                   "textposition": "none", "hovertemplate": "%{text}<br>%{y:.1f} s<extra></extra>"}]
    for name, values in (("texts embedded", texts_embedded), ("tokens", tokens)):
        if values and any(isinstance(v, (int, float)) and v > 0 for v in values):  # all zero or unknown: no trace
            data.append({"type": "scatter", "mode": "markers", "name": name, "x": labels, "y": values, "text": text,
                         "yaxis": "y2", "hovertemplate": "%{text}<br>%{y} " + name + "<extra></extra>"})
    extra: dict[str, Any] = {"xaxis": {"type": "category", "automargin": True}, "showlegend": len(data) > 1}
    if len(data) > 1:
        extra["yaxis2"] = {"title": {"text": "count"}, "overlaying": "y", "side": "right", "rangemode": "tozero",
                           "automargin": True}
    return _figure(data, "cost per configuration", "configuration", "seconds", **extra)


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
    return _figure(data, f"{metric} per run", "run start (UTC)", metric,
                   xaxis={"title": {"text": "run start (UTC)"}, "type": "date", "automargin": True},
                   yaxis={"title": {"text": metric}, "range": [-0.05, 1.05], "automargin": True})


def compare_bars(setups: list[str], first: list[float | None], second: list[float | None],
                 names: tuple[str, str], metric: str) -> dict[str, Any]:
    """``metric`` per setup in two runs, side by side."""
    data = [{"type": "bar", "name": names[0], "x": setups, "y": first},
            {"type": "bar", "name": names[1], "x": setups, "y": second}]
    return _figure(data, f"{metric} per setup", "setup", metric, barmode="group",
                   xaxis={"type": "category", "automargin": True})


def technique_bars(labels: list[str], values: list[float | None], tied: list[bool], metric: str,
                   details: list[str] | None = None, title: str | None = None) -> dict[str, Any]:
    """``metric`` of each row of a chunking report (a technique, a sweep's build and search);
    ties with the best drawn apart; ``details``: a longer text per row, shown on hover;
    ``title``: the caption (default: per technique at its best)."""
    colours = ["#d99a00" if t else "#2b59c3" for t in tied]
    data = [{"type": "bar", "name": metric, "x": labels, "y": values, "marker": {"color": colours},
             "text": details or labels, "textposition": "none",
             "hovertemplate": "%{text}<br>" + metric + " %{y:.3f}<extra></extra>"}]
    return _figure(data, title or f"{metric} per technique at its best", "rank" if title else "technique", metric,
                   xaxis={"type": "category", "automargin": True}, showlegend=False)


def chunking_bars(rows: list[dict[str, Any]], counting: str, n_questions: int | None) -> dict[str, Any]:
    """Questions counted (``found`` or ``answered``) per chunking technique at its best build,
    as the chunking comparison reports them: the best, the ties (not significantly worse,
    exact McNemar) and the techniques significantly worse drawn apart.

    Args:
        rows: per technique ``{method, best_build, counted, n_scored, status, only_best,
            only_this, p_value}`` (``status`` ``best``, ``tie`` or ``worse``), best first.
        counting: what was counted (``found`` or ``answered``).
        n_questions: the questions scored (the y axis' top), or None.
    """
    colours = {"best": "#067647", "tie": "#d99a00", "worse": "#2b59c3"}
    data = []
    for status, name in (("best", "best"), ("tie", "tied with the best"), ("worse", "significantly worse")):
        chosen = [r for r in rows if r["status"] == status]
        if not chosen:
            continue
        text = [f"{r['method']}: {r['best_build']}<br>{counting} {r['counted']} of {r['n_scored']}"
                + ("" if r["p_value"] is None else f"<br>only the best {r['only_best']}, only this {r['only_this']}, "
                                                   f"exact McNemar p {r['p_value']:.3g}")
                for r in chosen]
        data.append({"type": "bar", "name": name, "x": [r["method"] for r in chosen],
                     "y": [r["counted"] for r in chosen], "text": text, "textposition": "none",
                     "marker": {"color": colours[status]}, "hovertemplate": "%{text}<extra></extra>"})
    yaxis: dict[str, Any] = {"title": {"text": f"questions {counting}"}, "automargin": True, "rangemode": "tozero"}
    if n_questions:
        yaxis["range"] = [0, n_questions * 1.02]
    return _figure(data, f"questions {counting} per technique at its best build (of {n_questions or '?'})",
                   "technique", f"questions {counting}", yaxis=yaxis,
                   xaxis={"type": "category", "automargin": True, "categoryorder": "array",
                          "categoryarray": [r["method"] for r in rows]})


def builds_by_size(builds: list[dict[str, Any]], counting: str) -> dict[str, Any]:
    """Questions counted by every build of the comparison: one line per technique and heading
    setting, against the chunk size (``-`` for a technique without a size).

    Args:
        builds: the report's ``builds`` rows that were searched (``status`` ok), in build order.
        counting: what was counted.
    """
    lines: dict[str, dict[str, list[Any]]] = {}
    sizes: list[str] = []
    for b in builds:
        size = "-" if b.get("chunk_size") is None else str(b["chunk_size"])
        if size not in sizes:
            sizes.append(size)
        name = f"{b.get('method')}" + (" + headings" if b.get("embed_headings") else "")
        line = lines.setdefault(name, {"x": [], "y": [], "text": []})
        line["x"].append(size)
        line["y"].append(b.get("counted"))
        line["text"].append(f"{b.get('key')}<br>{counting} {b.get('counted')} of {b.get('n_scored')}"
                            f"<br>{b.get('n_chunks')} chunks")
    data = [{"type": "scatter", "mode": "lines+markers", "name": name, "x": s["x"], "y": s["y"], "text": s["text"],
             "hovertemplate": "%{text}<extra></extra>"} for name, s in lines.items()]
    order = sorted(sizes, key=lambda v: (v == "-", int(v) if v.isdigit() else 0))
    return _figure(data, f"questions {counting} by every build, by chunk size", "chunk size (tokens)",
                   f"questions {counting}",
                   yaxis={"title": {"text": f"questions {counting}"}, "rangemode": "tozero", "automargin": True},
                   xaxis={"title": {"text": "chunk size (tokens)"}, "type": "category", "categoryorder": "array",
                          "categoryarray": order, "automargin": True})
