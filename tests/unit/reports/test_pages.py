"""Page rendering without a browser: escaping, the CSP, the plots' data (checked against
hand computations on tests/support/reports.py), newer and older report fields, and the pages
read from a real local store. The browser checks are in tests/integration/test_pages_browser.py."""

import math
import json
import re

import pytest

from core.errors import NotStoredError
from core.reports import LocalFiles, ReportStore
from core.reports.pages import (
    PAGE_CSP,
    Links,
    compare_page,
    experiment_page,
    history_page,
    index_page,
    render_experiment,
    render_run,
    run_page,
)
from tests.support.reports import experiment_report, retrieval_report, with_answers

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def figures(html: str) -> dict[str, dict]:
    """Every plot's figure, by its element id."""
    found = re.findall(r'<script type="application/json" id="([^"]+)-data">(.*?)</script>', html, re.S)
    return {key: json.loads(text) for key, text in found}


def test_run_page_plots_hold_the_report_numbers():
    html = render_run(retrieval_report())
    figs = figures(html)
    # the curves are the report's own found@k (never computed again from the ranks), by hand
    # from tests/support/reports.py: A finds q1 at 1, q4 at 2, q2 at 3; B q4 at 1, q1 at 2
    curve = {t["name"]: (t["x"], t["y"]) for t in figs["grain-doc-found"]["data"]}
    assert curve["A"] == ([1, 3, 5, 10], [0.25, 0.75, 0.75, 0.75])
    assert curve["B"] == ([1, 3, 5, 10], [0.25, 0.5, 0.5, 0.5])
    time = {t["name"]: t for t in figs["grain-doc-time"]["data"]}  # one trace per setup
    # a report from before the wait was split: the median search time is the wait
    assert (time["A"]["x"], time["A"]["y"], time["B"]["x"], time["B"]["y"]) == ([5.0], [0.75], [2.0], [0.5])
    assert time["A"]["marker"]["symbol"] == "star" and "pick: finds_the_most" in time["A"]["text"][0]
    assert "pick: best_for_balance, best_for_time" in time["B"]["text"][0]
    assert "the search alone (this report predates the split" in html
    assert "grain-page-found" not in figs  # no page labels: no curve, a note instead
    assert "[page] not scorable: no page labels" in html


def test_run_page_plots_and_tabulates_the_wait_the_picks_use():
    """A reranked setup waits 905 ms (its ``timings_ms.total`` median, what the picks compare)
    though its search alone takes 5 ms: the table and the plot show 905, with the median of
    each part (embedding 20, search 5, rerank 880); B has no rerank part."""
    report = retrieval_report()
    a, b = report["setups"]
    a["timings_ms"].update(search={"median": 5.0, "p95": 10.0, "mean": 5.0}, query_embedding={"median": 20.0, "p95": 30.0,
                           "mean": 20.0}, rerank={"median": 880.0, "p95": 1500.0, "mean": 900.0},
                           total={"median": 905.0, "p95": 1540.0, "mean": 925.0})
    b["timings_ms"].update(search={"median": 2.0, "p95": 4.0, "mean": 2.0}, query_embedding={"median": 20.0, "p95": 30.0,
                           "mean": 20.0}, rerank=None, total={"median": 22.0, "p95": 34.0, "mean": 22.0})
    a["mcnemar_vs_best"], b["mcnemar_vs_best"] = None, {"only_a": 1, "only_b": 0, "p_value": 1.0}
    b["tied_with_best"] = True
    html = render_run(report)
    time = {t["name"]: t for t in figures(html)["grain-doc-time"]["data"]}
    assert time["A"]["x"] == [905.0] and time["B"]["x"] == [22.0]
    assert "waits 905 ms (median)" in time["A"]["text"][0]
    assert "embedding 20.0 + search 5.00 + rerank 880 ms" in time["A"]["text"][0]
    assert "embedding 20.0 + search 2.00 ms" in time["B"]["text"][0]
    assert figures(html)["grain-doc-time"]["layout"]["xaxis"]["type"] == "log"  # 905 / 22 > 20
    table = html[html.index('id="grain-doc-setups"'):]
    table = table[:table.index("</table>")]
    assert ">905<span class=\"sub\">embedding 20.0 + search 5.00 + rerank 880</span>" in table
    assert ">1,540<" in table and ">34.0<" in table  # p95 of the wait
    assert "only best 1, only this 0, p 1.000" in table
    assert "the time a user waits for one question's results, as the picks measure it" in html


def test_page_is_self_contained_with_its_csp():
    html = render_run(retrieval_report())
    assert f'<meta http-equiv="Content-Security-Policy" content="{PAGE_CSP.replace(chr(39), "&#39;")}">' in html
    from core.reports.pages.render import plotly_js

    assert "plotly.js v" in plotly_js()[:200] and plotly_js() in html  # the bundle is inlined
    ours = html.replace(plotly_js(), "")  # plotly.js names CDNs for features the pages never use
    assert not re.search(r'<script[^>]+src=|<link[^>]+href=|https?://', ours)
    assert "Plotly.newPlot" in ours


def test_user_values_are_escaped_everywhere():
    report = with_answers(retrieval_report())
    report["questions"][0]["question"] = HOSTILE
    report["questions"][0]["id"] = HOSTILE
    report["answers"]["questions"][0]["answer"] = HOSTILE
    report["golden"]["path"] = HOSTILE
    report["setups"][0]["name"] = "</script><script>alert(2)</script>"
    report["questions"][0]["first_relevant_rank"]["</script><script>alert(2)</script>"] = 1
    html = render_run(report)
    assert HOSTILE not in html and "<script>alert" not in html
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in html
    # inside the plots' JSON the name is a string whose '<' cannot close the script element
    assert "\\u003c/script\\u003e\\u003cscript\\u003ealert(2)" in html
    assert figures(html)["grain-doc-found"]["data"][0]["name"] == "</script><script>alert(2)</script>"


def test_newer_fields_are_shown_and_older_reports_render():
    report = with_answers(retrieval_report())
    block = report["setups"][1]["metrics"]["doc"]
    block["ci_low"], block["ci_high"] = {"found@1": 0.05}, {"found@1": 0.6}
    report["setups"][1]["tied_with_best"] = True
    report["questions"][2]["top"] = {"A": [{"document": "other.txt", "page": None, "chunk_id": "x", "score": 0.5,
                                            "relevant": False}]}
    html = render_run(report)
    assert "tied with best" in html and '[0.050, 0.600]' in html
    assert "other.txt (0.500)" in html and "came back instead" in html
    assert "half supported" in html  # the judge's (or evaluator's) reason
    bare = {k: v for k, v in retrieval_report().items() if k not in ("questions", "answers", "picks")}
    html = render_run(bare)
    assert "No answers in this run" in html and "Setups per grain" in html


def test_experiment_page_plots_and_escaping():
    report = experiment_report()
    html = render_experiment(report, running=True)
    assert "running" in html and "boom &lt;b&gt;" in html
    figs = figures(html)
    best = figs["fig-best"]["data"]
    # evaluations in order, counted from 1 as the CLI prints them: #1 0.5, #2 0.7 (#3 failed and
    # is left out); best so far 0.5 then 0.7
    assert best[0]["x"] == [1, 2] and best[0]["y"] == [0.5, 0.7] and best[1]["y"] == [0.5, 0.7]
    # each score's interval (score -/+ 0.1 in the report) as its error bar; the best's shown with it
    assert [round(v, 9) for v in best[0]["error_y"]["array"] + best[0]["error_y"]["arrayminus"]] == [0.1] * 4
    assert "<b>0.700</b> <span class=\"ci\">95% CI [0.600, 0.800]</span> (k1)" in html
    effect = figs["effect-chunk_size"]["data"][1]
    assert effect["x"] == ["128", "256"] and effect["y"] == [0.5, 0.7]  # numeric order, failed left out
    assert figs["fig-cost"]["data"][0]["y"] == [10.0, 11.0, 12.0]


def test_experiment_page_says_over_how_many_runs_the_costs_add_up():
    """A resumed experiment's costs are summed over its runs, and the page says how many."""
    report = experiment_report()
    assert "30 texts embedded" in render_experiment(report) and " runs" not in render_experiment(report)
    report["counts"]["runs"] = 1
    assert " runs" not in render_experiment(report)
    report["counts"]["runs"] = 3
    assert "30 texts embedded over 3 runs" in render_experiment(report)


def test_experiment_page_names_each_rows_reranker_and_depth():
    """Two rows alike but for the reranker: the configuration column tells them apart."""
    report = experiment_report()
    for row, (reranker, depth) in zip(report["leaderboard"], [("none", None), ("local:ms-marco-MiniLM-L-12-v2", 40),
                                                               ("none", None)]):
        row["parameters"] = dict(row["parameters"], reranker=reranker, retrieval_depth=depth)
    html = render_experiment(report)
    table = html[html.index('id="leaderboard"'):html.index("</table>")]
    assert table.count("reranker <b>local:ms-marco-MiniLM-L-12-v2</b>") == 1 and table.count("reranker <b>none</b>") == 2
    assert table.count("retrieval_depth <b>40</b>") == 1 and table.count("retrieval_depth <b>-</b>") == 2


def test_experiment_page_by_rounds_and_costs():
    """Four evaluations asked in two rounds of two; best so far by hand: round 1 holds 0.5 and
    0.7 -> 0.7, round 2 holds 0.6 and 0.9 -> 0.9."""
    report = experiment_report()
    scores = {0: 0.5, 1: 0.7, 2: 0.6, 3: 0.9}
    board = []
    for trial, score in scores.items():
        board.append({"rank": None, "trial": trial, "key": f"k{trial}", "status": "complete", "score": score,
                      "ci_low": None, "ci_high": None, "duration_s": 1.0 + trial, "error": None, "stored": False,
                      "parameters": {"chunk_size": 128 * (trial + 1)}, "round": 1 + trial // 2,
                      "cost": {"seconds": 1.0 + trial, "texts_embedded": 10 * trial, "texts_from_cache": 0,
                               "tokens": None if trial == 3 else 100 + trial}})
    report["leaderboard"] = board
    html = render_experiment(report)
    figs = figures(html)
    assert figs["fig-best"]["data"][1]["y"] == [0.5, 0.7, 0.7, 0.9]  # by evaluation
    rounds = figs["fig-rounds"]["data"]
    assert rounds[0]["x"] == [1, 1, 2, 2] and rounds[0]["y"] == [0.5, 0.7, 0.6, 0.9]
    assert rounds[1]["x"] == [1, 2] and rounds[1]["y"] == [0.7, 0.9]
    cost = {trace["name"]: trace["y"] for trace in figs["fig-cost"]["data"]}
    assert cost == {"seconds": [1.0, 2.0, 3.0, 4.0], "texts embedded": [0, 10, 20, 30],
                    "tokens": [100, 101, 102, None]}
    table = html[html.index('id="leaderboard"'):html.index("</table>")]
    assert table.count("—") == 1 and ">102<" in table  # trial 3's tokens are unknown
    # the "#" column and the cost bars count evaluations from 1, as the CLI's "evaluation 1/4"
    import re

    numbers = re.findall(r'<tr>\s*<td class="n">[^<]*</td><td class="n">([^<]*)</td>', table)
    assert numbers == ["1", "2", "3", "4"]
    assert figs["fig-cost"]["data"][0]["x"] == ["#1", "#2", "#3", "#4"]


def test_experiment_page_without_rounds_or_costs():
    """A report from before rounds and costs were kept: one evaluation per round (or none
    recorded) draws no rounds plot, and the table shows — for what is unknown."""
    report = experiment_report()
    html = render_experiment(report)
    assert "fig-rounds" not in figures(html)
    cost = figures(html)["fig-cost"]["data"]
    assert [trace["name"] for trace in cost] == ["seconds"]
    for row, n in zip(report["leaderboard"], (1, 2, 3)):
        row["round"] = n  # sequential: one evaluation per round
        row["cost"] = {"texts_embedded": 5, "tokens": 0}  # no chat model: nothing spent on tokens
    figs = figures(render_experiment(report))
    assert "fig-rounds" not in figs
    assert [trace["name"] for trace in figs["fig-cost"]["data"]] == ["seconds", "texts embedded"]


def test_pages_from_a_local_store(tmp_path):
    store = ReportStore(LocalFiles(tmp_path))
    first = retrieval_report("20260101T000000Z-aaaaaa")
    second = retrieval_report("20260102T000000Z-bbbbbb", ranks={
        "q1": {"A": None, "B": 2}, "q2": {"A": 1, "B": None}, "q3": {"A": 1, "B": 1}, "q4": {"A": 2, "B": 1}})
    second["started_at"] = "2026-01-02T00:00:00+00:00"
    store.save_run(first["run_id"], first)
    store.save_run(second["run_id"], second)
    assert json.loads((tmp_path / "retrieval/summaries/20260101T000000Z-aaaaaa.json").read_text())["run_id"] == first["run_id"]
    index = index_page(store)
    assert index.index("20260102T000000Z-bbbbbb") < index.index("20260101T000000Z-aaaaaa")  # newest first
    assert 'href="/history?golden=' + "ab" * 32 + '"' in index
    assert "Compare two runs" in index
    history = history_page(store, "ab" * 32)
    lines = {t["name"]: t["y"] for t in figures(history)["history-found-10"]["data"]}
    assert lines == {"A": [0.75, 0.75], "B": [0.5, 0.75]}
    assert figures(history_page(store, "golden.jsonl")) == figures(history)  # by path too
    assert "No stored run used this golden file" in history_page(store, "ef" * 32)
    compare = compare_page(store, first["run_id"], second["run_id"])
    # A: q1 only in the first run, q3 only in the second; B: q3 only in the second
    assert "question q1?" in compare and "question q3?" in compare
    assert run_page(store, "latest", Links()).count("20260102T000000Z-bbbbbb") >= 1
    with pytest.raises(NotStoredError):
        run_page(store, "20990101T000000Z-000000")


def test_experiment_page_from_a_store(tmp_path):
    files = LocalFiles(tmp_path)
    files.write_bytes("experiments/e1/report.json", json.dumps(experiment_report("e1")).encode())
    assert "Experiment e1" in experiment_page(files, "e1")
    with pytest.raises(NotStoredError):
        experiment_page(files, "e2")
    with pytest.raises(NotStoredError):
        experiment_page(files, "../e1")


def test_a_running_experiment_page_is_the_report_so_far_the_server_hands_in(tmp_path):
    files = LocalFiles(tmp_path)
    files.write_bytes("experiments/e1/study.json", b"{}")
    built = []

    def so_far(f, experiment_id):
        built.append(experiment_id)
        return {**experiment_report(experiment_id), "status": "running"} if experiment_id == "e1" else None

    # without a builder the pages cannot make the report of a running experiment: they say so
    with pytest.raises(NotStoredError, match="has no report yet"):
        experiment_page(files, "e1")
    assert "has not finished" in experiment_page(files, "e1", None, so_far)
    with pytest.raises(NotStoredError, match="no experiment 'e2'"):
        experiment_page(files, "e2", None, so_far)
    assert built == ["e1", "e2"]


def test_chunking_comparison_page_shows_the_best_the_ties_and_the_mcnemar_counts():
    """From tests/support/reports.comparison_report (worked by hand there): the best build,
    the ties, per technique the questions only the best / only it found and the exact p, and
    the charts hold the report's counts."""
    from core.reports.pages import render_report
    from tests.support.reports import comparison_report

    report = comparison_report()
    report["failures"][0]["reason"] = HOSTILE
    html = render_report(report)
    assert "best: <b>recursive-64-8-plain</b> (found 15 of 20)" in html
    assert '<span class="badge tie">recursive</span><span class="badge tie">sentence</span>' in html
    table = html[html.index('id="techniques"'):]
    table = table[:table.index("</table>")]
    cells = re.findall(r'<td class="n" data-label="[^"]+"><div>([^<]*)</div>', table)
    # found, only the best, only this, p: per technique best first
    assert cells == ["15/20", "-", "-", "-", "13/20", "3", "1", "0.625", "8/20", "7", "0", "0.0156"]
    assert "current fixed-64-8-plain: <b>switch</b> to recursive-64-8-plain" in html
    figs = figures(html)
    bars = {t["name"]: (t["x"], t["y"]) for t in figs["chunking-techniques"]["data"]}
    assert bars == {"best": (["recursive"], [15]), "tied with the best": (["sentence"], [13]),
                    "significantly worse": (["fixed"], [8])}
    lines = {t["name"]: (t["x"], t["y"]) for t in figs["chunking-builds"]["data"]}
    assert lines == {"recursive": (["64", "128"], [15, 12]), "sentence": (["64", "128"], [13, 11]),
                     "fixed": (["64", "128"], [8, 6])}
    assert HOSTILE not in html and "&lt;script&gt;alert(&#34;x&#34;)" in html


@pytest.mark.parametrize(("low", "high"), [(1.3, 300.0), (1.0, 1000.0), (9.5, 410.0), (0.7, 31.0), (2.0, 4000.0)])
def test_no_decade_tick_of_the_log_wait_axis_sits_near_a_corner(low, high):
    """The failing wait axis had its '1' tick 0.086 decades in from the left end (a 1.3 ms
    setup): at 390 px it ran into the y axis' lowest label."""
    from core.reports.pages.plots import TICK_ROOM, log_range

    lo, hi = log_range(low, high)
    assert lo <= math.log10(low) - 0.2 and hi >= math.log10(high) + 0.2  # every point inside, with room
    ticks = [t for t in range(math.floor(lo), math.ceil(hi) + 1) if lo <= t <= hi]
    assert ticks and all(min(t - lo, hi - t) >= TICK_ROOM * (hi - lo) - 1e-6 for t in ticks), (lo, hi, ticks)
    assert hi - lo < math.log10(high / low) + 0.4 + 2 * TICK_ROOM * 3  # and not much wider than asked
