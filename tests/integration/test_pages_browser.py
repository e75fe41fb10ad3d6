"""Every page kind from real runs on squad-mini (the real local model, Milvus Lite, the
extractive baseline), loaded in headless Chromium (Debian's package, driven by Playwright):
no console error, every plot drawn with data, a screenshot that is not blank; a question
holding ``<script>`` stays text; ``ragtune serve`` is started for real and fetched over HTTP.
Each page kind at 1,280 and 390 px wide: no sideways scroll, tables within their box, no row
taller than its content, no plot label overlapping another or clipped
(:data:`tests.support.browser.LAYOUT_JS`), and the plots hold the numbers of the report
(plotly's data read from the DOM). Screenshots of each kind at both widths are kept in the
``page-shots`` folder of pytest's temporary directory.
"""

from __future__ import annotations

import copy
import json
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from core.experiment.engine import report_so_far
from core.reports import LocalFiles, ReportStore
from core.reports.pages import PAGE_CSP, experiment_page, history_page, run_page
from core.reports.serve import SHUTDOWN_GRACE_S
from tests.support.browser import check_page, full_screenshot, launch, layout_problems

pytestmark = [pytest.mark.integration, pytest.mark.slow]

XSS = "<script>window.__pwned = 1</script> In what country is Normandy located?"


@pytest.fixture(scope="module")
def site(squad_dir, tmp_path_factory):
    """A report store with two evaluate runs (with and without answers), a run with a failed
    setup, a finished and a running experiment; and a second store with 1,000 runs."""
    from core.cli import main
    from core.models import LOCAL_MODEL_ID, LocalEmbeddingModel
    from core.experiment.runner import ExperimentOptions, run_experiment

    base = tmp_path_factory.mktemp("site")
    lines = (squad_dir / "golden.jsonl").read_text(encoding="utf-8").splitlines()[:20]
    lines.append(json.dumps({"id": "xss-1", "question": XSS, "expected": ["Normans_p00.txt"], "reference": "France"}))
    golden = base / "golden.jsonl"
    golden.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = base / "out"
    docs = str(squad_dir / "docs")
    assert main(["evaluate", "--docs", docs, "--golden", str(golden), "--out", str(out), "--json"]) == 0
    assert main(["evaluate", "--docs", docs, "--golden", str(golden), "--out", str(out), "--json",
                 "--no-generate", "--chunk-size", "128"]) == 0
    store = ReportStore(LocalFiles(out))
    newest, oldest = store.run_ids()
    answered = store.load_run(oldest)
    failed = copy.deepcopy(answered)
    failed["run_id"] = "20200101T000000Z-fa11ed"
    broken = failed["setups"][-1]
    broken["error"] = "search failed: the collection could not be loaded"
    broken["metrics"] = {}
    store.save_run(failed["run_id"], failed)

    assert main(["compare-chunking", "--docs", docs, "--golden", str(golden), "--out", str(out), "--json",
                 "--techniques", "recursive,fixed", "--sizes", "256"]) == 0
    assert main(["sweep", "--docs", docs, "--golden", str(golden), "--out", str(out), "--json",
                 "--chunking", "recursive", "--chunk-size", "256", "--chunk-overlap", "32", "--search", "vector"]) == 0
    options = ExperimentOptions(max_evals=3, seed=1, n_random_nodes=2, show_progress=False,
                                overrides={"chunk_size": (128,), "chunking_method": ("recursive",)})
    experiment = run_experiment(squad_dir / "docs", golden, out_dir=out,
                                embedding_models={LOCAL_MODEL_ID: LocalEmbeddingModel()}, options=options)
    running_id = experiment["experiment_id"] + "-running"
    shutil.copytree(out / "experiments" / experiment["experiment_id"], out / "experiments" / running_id)
    (out / "experiments" / running_id / "report.json").unlink()

    many = base / "many"
    many_store = ReportStore(LocalFiles(many))
    slim = copy.deepcopy(answered)
    slim.pop("answers", None)
    for i in range(1000):
        slim["run_id"] = f"2025{(i // 28) % 12 + 1:02d}{i % 28 + 1:02d}T{i % 24:02d}0000Z-{i:06x}"
        slim["started_at"] = f"2025-{(i // 28) % 12 + 1:02d}-{i % 28 + 1:02d}T{i % 24:02d}:00:00+00:00"
        many_store.save_run(slim["run_id"], slim)
    from core.reports.pages.site import chunking_ids

    stored = dict((kind, report_id) for kind, report_id in chunking_ids(store.files))
    return {"out": out, "store": store, "answered": oldest, "unanswered": newest, "failed": failed["run_id"],
            "experiment": experiment["experiment_id"], "running": running_id, "many": many_store,
            "sha": answered["golden"]["sha256"], "base": base, "comparison": stored["runs"], "sweep": stored["sweeps"]}


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        context = launch(p, tmp_path_factory.mktemp("chromium-profile"))
        yield context
        context.close()


def _assert_page_ok(result, min_plots):
    assert result["errors"] == []
    plots = result["plots"]
    assert len(plots) >= min_plots
    for plot in plots:
        assert plot["rendered"] == "1", plot
        assert plot["svgs"] >= 1 and plot["marks"] >= 1, plot
    # a blank page has one colour; a page with tables and plots has many, and ink on a good share of it
    assert result["colours"] > 50 and result["ink"] > 0.05, (result["colours"], result["ink"])


def _file_page(tmp_path, name, html):
    path = tmp_path / f"{name}.html"
    path.write_text(html, encoding="utf-8")
    return path.as_uri()


@pytest.mark.parametrize("kind", ["answered", "unanswered", "failed"])
def test_run_pages_render(site, browser, tmp_path, kind):
    url = _file_page(tmp_path, kind, run_page(site["store"], site[kind]))
    result = check_page(browser, url, tmp_path / f"{kind}.png")
    _assert_page_ok(result, min_plots=2)  # found@k curves and quality against time at the ranked grain
    page = result["page"]
    text = page.inner_text("body")
    if kind == "unanswered":
        assert "No answers in this run" in text
    if kind == "failed":
        assert "search failed: the collection could not be loaded" in text
    # the question holding a script tag is shown as text and never runs
    assert page.evaluate("() => window.__pwned") is None
    assert XSS in page.inner_text("#questions-table")


def test_experiment_pages_render_finished_and_running(site, browser, tmp_path):
    files = LocalFiles(site["out"])
    done = check_page(browser, _file_page(tmp_path, "exp", experiment_page(files, site["experiment"])),
                      tmp_path / "exp.png")
    _assert_page_ok(done, min_plots=3)
    assert done["page"].locator("#leaderboard tbody tr").count() == 3
    running = check_page(browser, _file_page(tmp_path, "running", experiment_page(files, site["running"], None, report_so_far)),
                         tmp_path / "running.png")
    _assert_page_ok(running, min_plots=3)
    assert "has not finished" in running["page"].inner_text("body")


def test_history_page_of_1000_runs_renders(site, browser, tmp_path):
    html = history_page(site["many"], site["sha"])
    result = check_page(browser, _file_page(tmp_path, "history", html), tmp_path / "history.png")
    _assert_page_ok(result, min_plots=3)  # found@10, found@1 and MRR over time
    assert result["page"].locator("#history-runs tbody tr").count() == 1000
    # one line per setup, one point per run on each
    points = result["page"].evaluate(
        "() => document.getElementById('history-found-10').data.map(t => t.x.length)")
    n_setups = len([x for x in site["many"].load_run(site["many"].latest_run_id())["setups"]
                    if x.get("status", "ok") == "ok"])
    assert points == [1000] * n_setups


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(site, tmp_path_factory):
    port = _free_port()
    # the log goes to a file: a pipe nobody reads would fill up and stall the server
    log_path = tmp_path_factory.mktemp("serve") / "serve.log"
    log = open(log_path, "wb")
    proc = subprocess.Popen([sys.executable, "-m", "core.cli", "serve", "--out", str(site["out"]), "--port", str(port)],
                            stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(url + "/", timeout=5).read()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                log.close()
                raise RuntimeError(f"ragtune serve did not start: {log_path.read_text(errors='replace')}")
            time.sleep(0.3)
    yield url
    proc.terminate()
    try:
        # uvicorn gives requests in flight SHUTDOWN_GRACE_S seconds, then closes what is left
        proc.wait(timeout=SHUTDOWN_GRACE_S + 15)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError(f"ragtune serve did not stop on SIGTERM: {log_path.read_text(errors='replace')[-4000:]}")
    finally:
        log.close()


def test_serve_answers_over_http_with_the_csp(site, server):
    with urllib.request.urlopen(server + "/", timeout=30) as response:
        assert response.status == 200
        assert response.headers["Content-Type"] == "text/html; charset=utf-8"
        assert response.headers["Content-Security-Policy"].startswith(PAGE_CSP)
        index = response.read().decode("utf-8")
    runs = site["store"].run_ids()  # newest first
    positions = [index.index(f'href="/runs/{r}"') for r in runs]
    assert positions == sorted(positions)
    assert f'href="/experiments/{site["running"]}"' in index
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(server + "/runs/20000101T000000Z-000000", timeout=30)
    assert missing.value.code == 404
    with pytest.raises(urllib.error.HTTPError) as bad:
        urllib.request.urlopen(server + "/runs/..%2F..%2Fetc", timeout=30)
    assert bad.value.code in (400, 404)
    with urllib.request.urlopen(server + f"/runs/{site['answered']}/report.json", timeout=30) as response:
        assert json.loads(response.read())["run_id"] == site["answered"]


@pytest.mark.parametrize("path,plots", [
    ("/", 0),
    ("/runs/latest", 2),
    ("/experiments/{experiment}", 3),
    ("/history?golden={sha}", 3),
    ("/compare?a={answered}&b={unanswered}", 1),
])
def test_served_pages_render_in_the_browser(site, server, browser, tmp_path, path, plots):
    url = server + path.format(**{k: v for k, v in site.items() if isinstance(v, str)})
    result = check_page(browser, url, tmp_path / "served.png")
    if plots:
        _assert_page_ok(result, min_plots=plots)
    else:
        assert result["errors"] == [] and result["colours"] > 20
    assert result["headers"]["content-security-policy"].startswith(PAGE_CSP)


def test_experiment_page_with_gam_effects_renders(browser, tmp_path):
    import itertools

    from core.reports.pages import render_experiment

    board = []
    for i, (rep, (size, k)) in enumerate(itertools.product(range(2), itertools.product((128, 256), (3, 5)))):
        board.append({"rank": None, "trial": i, "key": str(i), "status": "complete",
                      "score": 0.5 + 0.2 * (size == 256) + 0.1 * (k == 5) + 0.01 * rep, "ci_low": None, "ci_high": None,
                      "parameters": {"chunk_size": size, "number_of_chunks": k}, "duration_s": 5.0 + i})
    html = render_experiment({"objective": "mrr", "experiment_id": "gam", "leaderboard": board})
    assert "GAM partial dependence" in html
    result = check_page(browser, _file_page(tmp_path, "gam", html), tmp_path / "gam.png")
    _assert_page_ok(result, min_plots=5)  # best so far, coloured scores, cost, two partial dependences


def test_experiment_page_by_rounds_with_costs_renders(browser, tmp_path):
    """Eight evaluations in four rounds of two, with costs (one with unknown tokens): the
    rounds plot and the cost plot's second axis render with the others."""
    from core.reports.pages import render_experiment

    board = []
    for i in range(8):
        board.append({"rank": None, "trial": i, "key": str(i), "status": "complete", "score": 0.4 + 0.05 * (i % 3),
                      "ci_low": None, "ci_high": None, "parameters": {"chunk_size": 128 * (1 + i % 2)},
                      "duration_s": 2.0 + i, "round": 1 + i // 2,
                      "cost": {"seconds": 2.0 + i, "texts_embedded": 10 * i, "texts_from_cache": i,
                               "tokens": None if i == 3 else 100 * i}})
    html = render_experiment({"objective": "mrr", "experiment_id": "rounds", "leaderboard": board})
    assert 'id="fig-rounds"' in html
    result = check_page(browser, _file_page(tmp_path, "rounds", html), tmp_path / "rounds.png")
    _assert_page_ok(result, min_plots=4)  # best so far by evaluation and by round, coloured scores, cost


#: Page kind -> (served path, the tables that must fit, the least plots drawn).
KINDS = {
    "evaluate": ("/runs/{answered}", ["#picks", "#questions-table", "#answer-metrics"], 2),
    "evaluate-failed-setup": ("/runs/{failed}", ["#picks", "#questions-table"], 2),
    "experiment": ("/experiments/{experiment}", ["#leaderboard"], 3),
    "experiment-running": ("/experiments/{running}", ["#leaderboard"], 3),
    "chunking-comparison": ("/chunking/runs/{comparison}", ["#techniques"], 2),
    "sweep": ("/chunking/sweeps/{sweep}", ["#techniques"], 1),
    "history": ("/history?golden={sha}", ["#history-runs"], 3),
    "compare": ("/compare?a={answered}&b={unanswered}", ["#compare-setups"], 1),
    "index": ("/", ["#runs-table"], 0),
}


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    return tmp_path_factory.mktemp("page-shots")


def _rank_tables(page):
    """The setups table of every grain tab, each shown in turn (its tab clicked)."""
    return page.evaluate("() => Array.from(document.querySelectorAll('.tabs button[data-tab]')).map(b => b.dataset.tab)")


@pytest.mark.parametrize("kind", list(KINDS))
def test_each_page_kind_fits_1280_and_390_px(site, server, browser, shots, kind):
    """No sideways scroll, every table within its box, no row taller than its content, no plot
    label overlapping or clipped, at 1,280 and at 390 px (the evaluate page: at each grain)."""
    path, tables, least = KINDS[kind]
    result = check_page(browser, server + path.format(**{k: v for k, v in site.items() if isinstance(v, str)}),
                        shots / f"{kind}.png")
    page = result["page"]
    assert result["errors"] == [] and len(result["plots"]) >= least
    problems = []
    for width in (1280, 390):
        tabs = _rank_tables(page) or [None]
        for tab in tabs:
            if tab is not None:
                page.click(f'.tabs button[data-tab="{tab}"]')
            setups = [f"#{tab}-setups"] if tab and page.locator(f"#{tab}-setups").count() else []
            problems += [f"{width} px{' ' + tab if tab else ''}: {p}" for p in layout_problems(page, tables + setups, width)]
        full_screenshot(page, shots / f"{kind}-{width}.png")
    page.close()
    assert problems == []


def _data(page, plot_id):
    """The traces plotly drew in ``plot_id`` (its ``data``, read from the DOM), by name."""
    return {t["name"]: t for t in page.evaluate(f"() => document.getElementById('{plot_id}').data")}


def test_the_plots_hold_the_numbers_of_the_reports(site, server, browser, tmp_path):
    """Each page's plotly data, read in the browser, against the stored report's JSON: the
    wait the picks use (``timings_ms.total`` median) and found@10 with its interval per setup;
    found@k at 1, 3, 5 and 10 against the report's means; the experiment's scores and their
    intervals; the chunking comparison's counts; history and compare per setup."""
    store = site["store"]
    report = store.load_run(site["answered"])
    grain = report["evaluation"]["rank_grain"]
    page = check_page(browser, f"{server}/runs/{site['answered']}", tmp_path / "run.png")["page"]
    time = _data(page, f"grain-{grain}-time")
    found = _data(page, f"grain-{grain}-found")
    ok = [s for s in report["setups"] if s.get("status", "ok") == "ok"]
    assert set(time) == {s["name"] for s in ok} and any(s["timings_ms"].get("rerank") for s in ok)
    for s in ok:
        block = s["metrics"][grain]
        assert time[s["name"]]["x"] == [s["timings_ms"]["total"]["median"]]
        assert time[s["name"]]["y"] == [block["means"]["found@10"]]
        err = time[s["name"]]["error_y"]
        assert err["array"][0] == pytest.approx(block["ci_high"]["found@10"] - block["means"]["found@10"])
        assert err["arrayminus"][0] == pytest.approx(block["means"]["found@10"] - block["ci_low"]["found@10"])
        curve = dict(zip(found[s["name"]]["x"], found[s["name"]]["y"]))
        assert [curve[k] for k in (1, 3, 5, 10)] == pytest.approx([block["means"][f"found@{k}"] for k in (1, 3, 5, 10)])
        # the table shows the same wait, formatted to three figures
        cell = page.locator(f"#grain-{grain}-setups tbody tr", has_text=s["name"]).first.locator("td.wait")
        assert cell.inner_text().startswith(_ms(s["timings_ms"]["total"]["median"]))
    page.close()

    experiment = json.loads((site["out"] / "experiments" / site["experiment"] / "report.json").read_text())
    page = check_page(browser, f"{server}/experiments/{site['experiment']}", tmp_path / "exp.png")["page"]
    scored = sorted((r for r in experiment["leaderboard"] if r["score"] is not None and r.get("fully_evaluated", True)),
                    key=lambda r: r["trial"])
    partial = sorted((r for r in experiment["leaderboard"] if r["score"] is not None and not r.get("fully_evaluated", True)),
                     key=lambda r: r["trial"])
    traces = _data(page, "fig-best")
    score = traces["score"]
    assert score["y"] == [r["score"] for r in scored]
    assert traces.get("score on a subset of the questions", {"y": []})["y"] == [r["score"] for r in partial]
    if all(r["ci_low"] is not None for r in scored):  # mrr: the bootstrap interval at the rank grain
        assert score["error_y"]["arrayminus"] == pytest.approx([r["score"] - r["ci_low"] for r in scored])
    page.close()

    comparison = json.loads((site["out"] / "chunking" / "runs" / site["comparison"] / "report.json").read_text())
    page = check_page(browser, f"{server}/chunking/runs/{site['comparison']}", tmp_path / "cmp.png")["page"]
    bars = {x: y for t in _data(page, "chunking-techniques").values() for x, y in zip(t["x"], t["y"])}
    assert bars == {t["method"]: t["counted"] for t in comparison["techniques"] if t["best_build"]}
    assert f"best: {comparison['best']['best_build']}" in page.inner_text("#verdict")
    page.close()

    page = check_page(browser, f"{server}/compare?a={site['answered']}&b={site['unanswered']}", tmp_path / "c.png")["page"]
    other = store.load_run(site["unanswered"])
    bars = _data(page, "compare-found")
    for run, trace in ((report, bars[site["answered"]]), (other, bars[site["unanswered"]])):
        means = {s["name"]: s["metrics"][run["evaluation"]["rank_grain"]]["means"]["found@10"]
                 for s in run["setups"] if s.get("status", "ok") == "ok"}
        assert dict(zip(trace["x"], trace["y"])) == {n: means[n] for n in trace["x"]}
    page.close()


def _ms(value):
    from core.reports.pages.render import fmt_ms

    return fmt_ms(value)


def test_experiment_page_with_rungs_front_and_stop_reason_renders(browser, tmp_path):
    """A multi-fidelity experiment: the leaderboard marks a configuration stopped on a subset,
    the front table holds the picks, and the stop reason shows; rendered in Chromium."""
    from core.experiment.front import front
    from core.reports.pages import render_experiment

    board = [
        {"rank": 1, "trial": 0, "key": "k0", "status": "complete", "score": 0.8, "ci_low": 0.7, "ci_high": 0.9,
         "parameters": {"chunk_size": 128}, "duration_s": 3.0, "n_questions": 48, "fully_evaluated": True,
         "fidelity": {"verdict": "complete", "rung": 1, "n_questions": 48, "best_key": None, "p_value": None,
                      "reason": "scored on all 48 questions"}},
        {"rank": 2, "trial": 1, "key": "k1", "status": "complete", "score": 0.78, "ci_low": 0.68, "ci_high": 0.88,
         "parameters": {"chunk_size": 256}, "duration_s": 2.0, "n_questions": 48, "fully_evaluated": True,
         "fidelity": None},
        {"rank": 3, "trial": 2, "key": "k2", "status": "complete", "score": 0.3, "ci_low": None, "ci_high": None,
         "parameters": {"chunk_size": 512}, "duration_s": 1.0, "n_questions": 16, "fully_evaluated": False,
         "fidelity": {"verdict": "stop", "rung": 0, "n_questions": 16, "best_key": "k0", "p_value": 0.002,
                      "reason": "worse than k0 on 10 of 16 questions and better on 0 (exact sign test p = 0.002 < 0.05)"}},
        {"rank": 4, "trial": 3, "key": "k3", "status": "complete", "score": 0.7, "ci_low": None, "ci_high": None,
         "parameters": {"chunk_size": 64}, "duration_s": 1.0, "n_questions": 16, "fully_evaluated": False,
         "fidelity": {"verdict": "promote", "rung": 0, "n_questions": 16, "best_key": "k0", "p_value": 0.5,
                      "reason": "not told apart from k0 on 16 questions", "waiting": True}},
    ]
    results = {"k0": {"timings": {"retrieve_s": 2.4, "index_s": 3.0}, "collection": "c0", "n_embedded": 40},
               "k1": {"timings": {"retrieve_s": 0.48, "index_s": 2.0}, "collection": "c1", "n_embedded": 30}}
    report = {"objective": "mrr", "experiment_id": "mf", "leaderboard": board,
              "optimizer": {"name": "screen", "seed": 0, "max_evals": 4},
              "counts": {"evaluations": 4, "failed": 0, "stored": 0, "collections_built": 4, "texts_embedded": 9},
              "stop": {"reason": "separated", "text": "the best configuration is separated from the rest"},
              "fidelity": {"sizes": [16, 48], "alpha": 0.05, "rule": "successive halving <b>"},
              "front": front(board, results, 48)}
    html = render_experiment(report)
    assert 'id="front"' in html and 'id="stop-reason"' in html and "partial" in html
    assert "successive halving &lt;b&gt;" in html  # escaped
    assert "best_for_balance" in html and "exact sign test p = 0.002" in html
    assert "waiting<div class=\"note\">not told apart from k0" in html  # held back by screen's rule
    result = check_page(browser, _file_page(tmp_path, "mf", html), tmp_path / "mf.png")
    _assert_page_ok(result, min_plots=2)
    # the scores on a subset of the questions are drawn apart and never set the best so far
    traces = _data(result["page"], "fig-best")
    assert traces["score"]["y"] == [0.8, 0.78] and traces["best so far"]["y"] == [0.8, 0.8]
    assert traces["score on a subset of the questions"]["y"] == [0.3, 0.7]
    assert "stopped<div class=\"note\">worse than k0" in html
    # the budget counts configurations (a configuration may be evaluated once per rung)
    assert "up to 4 configurations" in html and "4 configurations (0 failed" in html
