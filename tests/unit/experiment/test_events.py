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
