"""``ragtune evaluate-app`` and ``compare-apps`` end to end: a scripted deployed app and the
scripted OpenAI-compatible judge, both over real HTTP; the report stored, its page, the gate
(thresholds and a baseline), ``--dry-run`` (which sends nothing) and ``report`` of an app run.
Expected values are computed by hand from the scripts."""

from __future__ import annotations

import json
import shutil
import re

import pytest

from core.cli import main
from tests.support.app_server import DeployedApp, demo_reply
from tests.support.openai_app import OpenAITestApp, last_user_text

QUESTIONS = [f"What is rule {i}?" for i in range(6)]
CONFIG = """
request:
  messages: ${messages}
  context:
    overrides: ${overrides}
overrides: {top: 3}
response:
  answer: message.content
  contexts: context.data_points.text
citations_in_answer: '\\[([^\\]]+)\\]'
"""


@pytest.fixture()
def files(tmp_path):
    golden = tmp_path / "golden.jsonl"
    rows = [{"id": f"r{i}", "question": q, "expected": [f"rules.pdf#page={i + 1}"], "reference": f"rule {i} says {i}",
             **({"grades": {"judge.correctness": 1}} if i < 2 else {})} for i, q in enumerate(QUESTIONS)]
    golden.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    config = tmp_path / "app.yaml"
    config.write_text(CONFIG, encoding="utf-8")
    return golden, config


def app_citing(right: bool):
    def respond(body, request):
        q = body["messages"][-1]["content"]
        i = QUESTIONS.index(q)
        page = i + 1 if right else i + 20
        return demo_reply(f"rule {i} says {i} [rules.pdf#page={page}]", [f"rules.pdf#page={page}: rule {i} says {i}"])
    return respond


def judge(body):
    text = last_user_text(body)
    answer = re.search(r"\[ANSWER\]\n(.*)\n", text).group(1)
    if text.startswith("Rate how relevant"):
        return "5"
    return "1" if "#page=2]" in answer or "#page=1]" in answer or re.search(r"page=[3-6]\]", answer) else "0"


def test_evaluate_app_reports_gates_compares_and_dry_runs(tmp_path, files, monkeypatch, capsys):
    golden, config = files
    out = tmp_path / "out"
    with OpenAITestApp(judge) as judge_app:
        monkeypatch.setenv("RAGTUNE_CHAT_BASE_URL", judge_app.base_url)
        monkeypatch.setenv("RAGTUNE_APP_API_KEY", "app-key")
        monkeypatch.setenv("RAGTUNE_PRICES", json.dumps({"judge-model": {"input": 1.0, "output": 2.0}}))
        with DeployedApp(app_citing(right=True)) as app:
            code = main(["evaluate-app", "--golden", str(golden), "--config", str(config), "--url", app.url,
                         "--judge", "judge-model", "--out", str(out), "--html", str(tmp_path / "app.html"),
                         "--fail-under", "found@1=0.9", "--fail-under", "judge.correctness=0.5"])
            printed = capsys.readouterr()
            assert code == 0, printed.err
            assert len(app.requests) == 6
            assert all(r["headers"]["api-key"] == "app-key" for r in app.requests)
            assert app.requests[0]["body"]["context"] == {"overrides": {"top": 3}}
            n_judge = len(judge_app.chat_requests)
            # unitxt's faithfulness and context correctness read the contexts; five judge metrics
            assert n_judge == 6 * 5
            assert "gate: passed: citations meets found@1 >= 0.9" in printed.err
            assert "gate: passed: judge.correctness is 1.000 >= 0.5" in printed.err
            assert "6 answered, 0 failed" in printed.out
            runs = sorted((out / "app" / "runs").iterdir())
            report = json.loads((runs[0] / "report.json").read_text())
            agreement = next(m for m in report["answers"]["metrics"] if m["name"] == "judge.correctness")["agreement"]
            assert agreement["n"] == 2 and agreement["mean_difference"] == 0.0
            page = (tmp_path / "app.html").read_text()
            assert "judge calls lost" in page and "The judge against people" in page and "rules.pdf#page=1" in page

            # a dry run sends nothing and knows every reply is cached
            code = main(["evaluate-app", "--golden", str(golden), "--config", str(config), "--url", app.url,
                         "--judge", "judge-model", "--out", str(out), "--dry-run", "--json"])
            plan = json.loads(capsys.readouterr().out)
            assert code == 0 and len(app.requests) == 6 and len(judge_app.chat_requests) == n_judge
            groups = {g["purpose"]: g for g in plan["groups"]}
            assert (groups["app"]["calls"], groups["app"]["cached"]) == (6, 6)
            assert (groups["judge"]["calls"], groups["judge"]["cached"]) == (30, 30)
            assert groups["judge"]["cost_usd"] == 0.0 and plan["unpriced"] == []

        # version 2 of the app cites the wrong page every time
        with DeployedApp(app_citing(right=False)) as app2:
            code = main(["evaluate-app", "--golden", str(golden), "--config", str(config), "--url", app2.url,
                         "--judge", "judge-model", "--out", str(out), "--baseline", "latest"])
            printed = capsys.readouterr()
        assert code == 4
        # found by the baseline only: 6 of 6; exact McNemar p = 2 * (1/2)^6 = 0.03125
        assert "finds 6 fewer of 6 questions" in printed.err and "p = 0.0312" in printed.err
        assert "failed: judge.correctness is lower than in" in printed.err
        # pushed again, the regression fails again: a run that failed its gate is no baseline
        with DeployedApp(app_citing(right=False)) as app3:
            code = main(["evaluate-app", "--golden", str(golden), "--config", str(config), "--url", app3.url,
                         "--judge", "judge-model", "--out", str(out), "--baseline", "latest"])
            printed = capsys.readouterr()
        assert code == 4 and "finds 6 fewer of 6 questions" in printed.err
    verdicts = {r: json.loads((r / "report.json").read_text())["gate"] for r in (out / "app" / "runs").iterdir()}
    passed = [r for r, v in verdicts.items() if v["passed"]]
    failed = [r for r, v in verdicts.items() if not v["passed"]]
    assert len(passed) == 1 and len(failed) == 2
    assert all(verdicts[r]["baseline"] == passed[0].name and verdicts[r]["exit_code"] == 4 for r in failed)
    shutil.rmtree(failed[1])  # the two failed runs are alike: keep one for the comparison below
    # the passing run first: run ids made in the same second do not sort by time
    first, second = passed[0].name, next(r.name for r in failed if r.exists())
    assert main(["compare-apps", first, second, "--out", str(out), "--html", str(tmp_path / "cmp.html")]) == 0
    text = capsys.readouterr().out
    assert "cited right in the top 10: only first 6, only second 0 (exact McNemar p = 0.0312)" in text
    assert re.search(r"judge\.correctness\s+6\s+1\.000\s+0\.000\s+-1\.000", text) and "worse" in text
    assert "worse" in (tmp_path / "cmp.html").read_text()
    assert main(["report", second, "--out", str(out)]) == 0
    assert "app http://127.0.0.1" in capsys.readouterr().out


def test_a_missing_price_gives_tokens_without_a_cost_said_once(tmp_path, files, monkeypatch, capsys):
    golden, config = files
    monkeypatch.setenv("RAGTUNE_CHAT_BASE_URL", "http://127.0.0.1:9/v1")  # never contacted
    monkeypatch.delenv("RAGTUNE_PRICES", raising=False)
    code = main(["evaluate-app", "--golden", str(golden), "--config", str(config), "--url", "http://127.0.0.1:9/chat",
                 "--judge", "judge-model", "--out", str(tmp_path / "out"), "--dry-run"])
    text = capsys.readouterr().out
    assert code == 0
    assert text.count("no price for openai:127.0.0.1:9/judge-model") == 1
    row = next(line for line in text.splitlines() if line.startswith("openai:127.0.0.1:9/judge-model"))
    cells = row.split()
    assert cells[-1] == "-" and cells[-3].startswith("~") and int(cells[-3][1:]) > 0


def test_a_dry_run_writes_nothing_and_says_what_has_no_price(tmp_path, files, monkeypatch, capsys):
    golden, config = files
    out = tmp_path / "out"
    with OpenAITestApp(judge) as judge_app, DeployedApp(app_citing(right=True)) as app:
        monkeypatch.setenv("RAGTUNE_CHAT_BASE_URL", judge_app.base_url)
        monkeypatch.delenv("RAGTUNE_PRICES", raising=False)
        monkeypatch.delenv("RAGTUNE_JUDGE_MODEL", raising=False)
        code = main(["evaluate-app", "--golden", str(golden), "--config", str(config), "--url", app.url,
                     "--out", str(out), "--dry-run"])
        no_judge = capsys.readouterr().out
        code_judged = main(["evaluate-app", "--golden", str(golden), "--config", str(config), "--url", app.url,
                            "--judge", "judge-model", "--judge-repeat", "2", "--out", str(out), "--dry-run"])
        judged = capsys.readouterr().out
        sent = len(app.requests) + len(judge_app.chat_requests)
    assert code == code_judged == 0 and sent == 0
    assert not out.exists()  # no cache file, no folder: a dry run writes nothing
    assert "no chat model or judge tokens to send: nothing to price" in no_judge
    assert "no judge: the answers are scored by unitxt only" in no_judge
    assert "total cost" not in judged and "no cost: no model here has a price" in judged
    assert judged.count("no price for ") == 1
    # six questions, two repeats, five judge metrics (the config reads contexts), none cached
    row = next(line for line in judged.splitlines() if line.split()[1:2] == ["judge"])
    assert row.split()[2:5] == ["60", "0", "60"]


def test_baseline_latest_alone_makes_the_first_run_the_baseline_of_the_next(tmp_path, files, capsys):
    golden, config = files
    out = tmp_path / "out"
    with DeployedApp(app_citing(right=True)) as app:
        first = main(["evaluate-app", "--golden", str(golden), "--config", str(config), "--url", app.url,
                      "--out", str(out), "--baseline", "latest"])
        printed = capsys.readouterr()
    assert first == 0
    assert "gate: passed: nothing to compare with yet; this run can be the baseline of the next" in printed.err
    with DeployedApp(app_citing(right=False)) as app2:
        second = main(["evaluate-app", "--golden", str(golden), "--config", str(config), "--url", app2.url,
                       "--out", str(out), "--baseline", "latest"])
        printed = capsys.readouterr()
    # compared with the first run: it cited the right page for 6 of 6, this one for none
    assert second == 4 and "finds 6 fewer of 6 questions" in printed.err
    reports = [json.loads((p / "report.json").read_text()) for p in sorted((out / "app" / "runs").iterdir())]
    gates = sorted((r["gate"]["passed"], r["gate"]["baseline"]) for r in reports)
    first_id = next(r["run_id"] for r in reports if r["gate"]["passed"])
    assert gates == [(False, first_id), (True, None)]
    # only app runs stored: 'report latest' shows the newest of them
    assert main(["report", "latest", "--out", str(out)]) == 0
    newest = max(r["run_id"] for r in reports)
    assert f"app {app2.url}: 6 questions" in capsys.readouterr().out and newest != first_id


def test_an_app_that_answers_nothing_fails_its_gate_and_is_never_a_baseline(tmp_path, files, capsys):
    from tests.support.app_server import AppResponse

    golden, config = files
    out = tmp_path / "out"
    with DeployedApp(lambda body, request: AppResponse({"error": "down"}, status=500)) as app:
        code = main(["evaluate-app", "--golden", str(golden), "--config", str(config), "--url", app.url,
                     "--out", str(out), "--baseline", "latest"])
        printed = capsys.readouterr()
    assert code == 4 and "gate: failed: the app answered no question" in printed.err
    assert "[citations] ranked as cited, at grain page and doc" in printed.out
    assert "not scorable (no question answered)" in printed.out


def test_outputs_and_overrides_are_checked_before_anything_is_sent(tmp_path, files, capsys):
    golden, config = files
    folder = tmp_path / "a-folder"
    folder.mkdir()
    bare = tmp_path / "bare.yaml"
    bare.write_text("request: {question: '${question}'}\nresponse: {answer: answer}\n", encoding="utf-8")
    with DeployedApp(app_citing(right=True)) as app:
        html = main(["evaluate-app", "--golden", str(golden), "--config", str(config), "--url", app.url,
                     "--out", str(tmp_path / "out"), "--html", str(folder)])
        html_err = capsys.readouterr().err
        override = main(["evaluate-app", "--golden", str(golden), "--config", str(bare), "--url", app.url,
                         "--out", str(tmp_path / "out"), "--override", "top=3"])
        override_err = capsys.readouterr().err
        sent = len(app.requests)
    assert sent == 0 and html == 1 and override == 1
    assert f"{folder} is a folder: it is never replaced" in html_err
    assert "--override top: the request template has no ${overrides}" in override_err
