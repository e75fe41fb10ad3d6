"""The built-in event handlers: what reaches stderr and the log, and the pattern files."""

from __future__ import annotations

import json
import logging

from core.optimization.events import LoggingHandler, PatternFileHandler, ProgressBarHandler


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


def test_a_quiet_logging_handler_logs_at_debug(caplog):
    caplog.set_level(logging.DEBUG, logger="core.optimization.events")
    LoggingHandler(quiet=True).on_status_change("warning", "shown elsewhere", "golden")
    LoggingHandler().on_status_change("warning", "logged", "golden")
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.DEBUG, "[golden] shown elsewhere"), (logging.WARNING, "[golden] logged")]


def test_pattern_files(tmp_path):
    handler = PatternFileHandler(tmp_path)
    handler.on_pattern_creation({"name": "Pattern1", "iteration": 1}, [{"question_id": "q1"}])
    assert json.loads((tmp_path / "Pattern1.json").read_text()) == {
        "payload": {"name": "Pattern1", "iteration": 1}, "evaluation_results": [{"question_id": "q1"}]}
