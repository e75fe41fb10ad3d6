"""The built-in event handlers: what reaches stderr and the log, and the pattern files."""

from __future__ import annotations

import json
import logging

from core.experiment.events import LoggingHandler, PatternFileHandler, ProgressBarHandler


def test_progress_handler_shows_the_start_lines_and_warnings_once(capsys):
    bar = ProgressBarHandler(3, "mrr", enabled=False)
    bar.on_status_change("info", "experiment e1: 84 valid configurations; evaluating up to 3 with gam", "space")
    bar.on_status_change("info", "evaluating configuration abc", "random")
    bar.on_status_change("warning", "question 'q1' can only score 0", "golden")
    bar.on_pattern_creation({"objective": {"value": 0.5}}, [])
    bar.on_pattern_creation({"objective": {"value": 0.25}}, [])
    bar.close()
    err = capsys.readouterr().err.splitlines()
    assert err == ["experiment e1: 84 valid configurations; evaluating up to 3 with gam",
                   "warning: question 'q1' can only score 0"]
    assert bar.best == 0.5


def test_without_a_terminal_each_evaluation_gets_a_line(capsys):
    bar = ProgressBarHandler(3, "mrr")  # pytest's stderr is no terminal: the bar hides itself
    assert bar.bar.disable and bar.lines
    bar.on_status_change("info", "experiment e1: 84 valid configurations; evaluating up to 3 with gam", "space")
    bar.on_pattern_creation({"objective": {"value": 0.5}, "duration_seconds": 12.34}, [])
    bar.on_pattern_creation({"objective": {"value": None}, "error": "chat endpoint: HTTP 500", "duration_seconds": 1}, [])
    bar.on_pattern_creation({"objective": {"value": 0.25}}, [])
    bar.close()
    assert capsys.readouterr().err.splitlines() == [
        "experiment e1: 84 valid configurations; evaluating up to 3 with gam",
        "evaluation 1/3: mrr 0.500 (best 0.500), 12.3 s",
        "evaluation 2/3: failed: chat endpoint: HTTP 500, 1.0 s",
        "evaluation 3/3: mrr 0.250 (best 0.500)",
    ]
    unknown = ProgressBarHandler(0, "mrr", lines=True)
    unknown.on_pattern_creation({"objective": {"value": None}}, [])
    assert capsys.readouterr().err == "evaluation 1: failed: no mrr score\n"


def test_the_lines_follow_the_payloads_count_budget_and_metric(capsys):
    """A resumed experiment goes on from its own count; a space smaller than --max-evals, or a
    budget changed on resume, shows the experiment's budget, not the handler's guess."""
    bar = ProgressBarHandler(12, "objective", lines=True)
    bar.on_pattern_creation({"iteration": 3, "max_evals": 6, "objective": {"name": "mrr", "value": 0.8}}, [])
    bar.on_pattern_creation({"iteration": 4, "max_evals": 6, "objective": {"name": "mrr", "value": 0.7}}, [])
    assert capsys.readouterr().err.splitlines() == ["evaluation 3/6: mrr 0.800 (best 0.800)",
                                                    "evaluation 4/6: mrr 0.700 (best 0.800)"]
    assert bar.bar.n == 4 and bar.bar.total == 6


def test_an_evaluation_past_the_budget_names_its_configuration(capsys):
    """A resume evaluates again a configuration whose result was deleted: the count of
    evaluations passes the budget, so the line names the configuration against it."""
    bar = ProgressBarHandler(3, "mrr", lines=True)
    bar.on_pattern_creation({"iteration": 4, "max_evals": 3, "trial": 0,
                             "objective": {"name": "mrr", "value": 0.5}}, [])
    assert capsys.readouterr().err.splitlines() == ["evaluation 4 (configuration 1/3): mrr 0.500 (best 0.500)"]


def _rung(iteration, trial, value, verdict, n, reason=""):
    return {"iteration": iteration, "max_evals": 3, "trial": trial, "configurations": trial + 1,
            "objective": {"name": "mrr", "value": value}, "duration_seconds": 0.5,
            "fidelity": {"verdict": verdict, "rung": 0, "n_questions": n, "n_questions_total": 50, "reason": reason}}


def test_with_rungs_a_line_names_the_configuration_its_questions_and_its_rungs_decision(capsys):
    """The budget counts configurations while each may be evaluated once per rung, so the line
    counts evaluations without a total, names the configuration against the budget, and the
    best is only ever a score on every question (0.9 on 16 questions is no best)."""
    bar = ProgressBarHandler(3, "mrr", lines=True)
    bar.on_pattern_creation(_rung(1, 0, 0.9, "promote", 16), [])
    bar.on_pattern_creation(_rung(2, 0, 0.8, "complete", 50), [])
    bar.on_pattern_creation(_rung(3, 1, 0.95, "promote", 16), [])
    bar.on_pattern_creation(_rung(4, 2, 0.5, "stop", 16, "worse than k0 on 9 of 16 questions"), [])
    failed = dict(_rung(5, 1, None, "promote", 16), error="HTTP 500")
    bar.on_pattern_creation(failed, [])
    assert capsys.readouterr().err.splitlines() == [
        "evaluation 1 (configuration 1/3, 16 of 50 questions): mrr 0.900, promoted to the next rung, 0.5 s",
        "evaluation 2 (configuration 1/3, 50 of 50 questions): mrr 0.800, scored on every question "
        "(best on every question 0.800), 0.5 s",
        "evaluation 3 (configuration 2/3, 16 of 50 questions): mrr 0.950, promoted to the next rung "
        "(best on every question 0.800), 0.5 s",
        "evaluation 4 (configuration 3/3, 16 of 50 questions): mrr 0.500, stopped: worse than k0 on 9 of 16 "
        "questions (best on every question 0.800), 0.5 s",
        "evaluation 5 (configuration 2/3, 16 of 50 questions): failed: HTTP 500, 0.5 s",
    ]
    assert bar.best == 0.8 and bar.bar.n == 2 and bar.bar.total == 3  # configurations, not evaluations


def test_the_payloads_best_score_wins_over_what_the_handler_heard(capsys):
    """A resumed experiment's best was scored by an earlier run the handler never heard of."""
    bar = ProgressBarHandler(6, "mrr", lines=True)
    bar.on_pattern_creation(dict(_rung(5, 1, 0.85, "complete", 50), best_score=0.9), [])
    assert capsys.readouterr().err.splitlines() == [
        "evaluation 5 (configuration 2/3, 50 of 50 questions): mrr 0.850, scored on every question "
        "(best on every question 0.900), 0.5 s"]


def test_a_quiet_logging_handler_logs_at_debug(caplog):
    caplog.set_level(logging.DEBUG, logger="core.experiment.events")
    LoggingHandler(quiet=True).on_status_change("warning", "shown elsewhere", "golden")
    LoggingHandler().on_status_change("warning", "logged", "golden")
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.DEBUG, "[golden] shown elsewhere"), (logging.WARNING, "[golden] logged")]


def test_pattern_files(tmp_path):
    handler = PatternFileHandler(tmp_path)
    handler.on_pattern_creation({"name": "Pattern1", "iteration": 1}, [{"question_id": "q1"}])
    assert json.loads((tmp_path / "Pattern1.json").read_text()) == {
        "payload": {"name": "Pattern1", "iteration": 1}, "evaluation_results": [{"question_id": "q1"}]}
