"""``ragtune evaluate-app`` checks what it can before it asks the app anything: a gate on a
measure the run will not compute, a malformed threshold, a baseline of another golden file,
``--judge-repeat`` without a judge each stop with exit 2 and a message naming the problem, and
the scripted app (real HTTP) receives no request. What can only be found after the run fails
the gate with the report written."""

from __future__ import annotations

import json

import pytest

from core.cli import main
from core.errors import ConfigError
from tests.support.app_server import DeployedApp, demo_reply

QUESTIONS = ["What is rule 0?", "What is rule 1?"]
CITING = """
request: {messages: '${messages}'}
response: {answer: message.content}
citations_in_answer: '\\[([^\\]]+)\\]'
"""
NOT_CITING = """
request: {messages: '${messages}'}
response: {answer: message.content}
"""


def reply(body, request):
    i = QUESTIONS.index(body["messages"][-1]["content"])
    return demo_reply(f"rule {i} says {i} [rules.pdf#page={i + 1}]")


@pytest.fixture()
def files(tmp_path, monkeypatch):
    monkeypatch.delenv("RAGTUNE_JUDGE_MODEL", raising=False)
    monkeypatch.setenv("RAGTUNE_CHAT_BASE_URL", "http://127.0.0.1:9/v1")  # never contacted
    golden = tmp_path / "golden.jsonl"
    golden.write_text("".join(json.dumps({"id": f"r{i}", "question": q, "expected": [f"rules.pdf#page={i + 1}"],
                                          "reference": f"rule {i} says {i}"}) + "\n" for i, q in enumerate(QUESTIONS)),
                      encoding="utf-8")
    citing, not_citing = tmp_path / "citing.yaml", tmp_path / "plain.yaml"
    citing.write_text(CITING, encoding="utf-8")
    not_citing.write_text(NOT_CITING, encoding="utf-8")
    return golden, citing, not_citing


def _runs(out):
    folder = out / "app" / "runs"
    return sorted(folder.iterdir()) if folder.exists() else []


@pytest.mark.parametrize(("config", "flags", "message"), [
    ("citing", ["--fail-under", "judge.correctness=0.5"],
     "--fail-under judge.correctness: this run will not compute judge.correctness: it needs a judge: give --judge MODEL"),
    ("plain", ["--fail-under", "found@5=0.5"],
     "--fail-under found@5: found@k and the like measure the cited sources, and the app config reads no citations"),
    ("citing", ["--fail-under", "found@5=2"], "--fail-under 'found@5=2': the value must be from 0 to 1"),
    ("citing", ["--fail-under", "answered=1.5"], "--fail-under 'answered=1.5': the value must be from 0 to 1"),
    ("plain", ["--fail-under", "unitxt.faithfulness=0.5"],
     "--fail-under unitxt.faithfulness: this run will not compute unitxt.faithfulness: it reads the passages, and "
     "the app config reads no contexts"),
    ("citing", ["--judge-repeat", "3"], "--judge-repeat 3 repeats the judge's calls, and there is no judge"),
])
def test_a_gate_the_run_cannot_check_stops_before_any_request(tmp_path, files, capsys, config, flags, message):
    golden, citing, plain = files
    out = tmp_path / "out"
    with DeployedApp(reply) as app:
        code = main(["evaluate-app", "--golden", str(golden), "--config", str(citing if config == "citing" else plain),
                     "--url", app.url, "--out", str(out), *flags])
        err = capsys.readouterr().err
        assert app.requests == []
    assert code == 2 and f"ragtune evaluate-app: {message}" in err, err
    assert _runs(out) == [] and not (out / "cache").exists()


def test_a_baseline_of_another_golden_file_stops_before_any_request(tmp_path, files, capsys):
    golden, citing, _ = files
    out = tmp_path / "out"
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"id": "r0", "question": QUESTIONS[0], "expected": ["rules.pdf#page=1"]}) + "\n",
                     encoding="utf-8")
    with DeployedApp(reply) as app:
        assert main(["evaluate-app", "--golden", str(other), "--config", str(citing), "--url", app.url,
                     "--out", str(out)]) == 0
        baseline = _runs(out)[0].name
        capsys.readouterr()
        code = main(["evaluate-app", "--golden", str(golden), "--config", str(citing), "--url", app.url,
                     "--out", str(out), "--baseline", baseline])
        err = capsys.readouterr().err
        assert len(app.requests) == 1  # the baseline's own question only
    assert code == 2 and f"ragtune evaluate-app: --baseline {baseline} was asked another golden file" in err, err
    assert len(_runs(out)) == 1


def test_a_gate_problem_found_after_the_run_keeps_the_report(tmp_path, files, capsys, monkeypatch):
    import core.evaluation.app_report as app_report

    def refuse(report, **kwargs):
        raise ConfigError("--fail-under found@5: the citations setup went missing")

    monkeypatch.setattr(app_report, "app_gate", refuse)
    golden, citing, _ = files
    out = tmp_path / "out"
    with DeployedApp(reply) as app:
        code = main(["evaluate-app", "--golden", str(golden), "--config", str(citing), "--url", app.url,
                     "--out", str(out), "--fail-under", "found@5=0.5"])
        err = capsys.readouterr().err
        assert len(app.requests) == 2
    assert code == 2 and "gate: error: --fail-under found@5: the citations setup went missing" in err
    (run,) = _runs(out)
    gate = json.loads((run / "report.json").read_text())["gate"]
    assert gate["passed"] is False and gate["exit_code"] == 2
    assert gate["lines"] == ["error: --fail-under found@5: the citations setup went missing"]
