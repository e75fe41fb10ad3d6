"""The golden file's warnings reach standard error whatever the format of standard output: with
``--json`` the report goes to stdout and its warnings, also in the report, to stderr, as
``optimize --json`` does."""

from __future__ import annotations

import json

import pytest

from core.cli import main

pytestmark = [pytest.mark.integration]


def test_evaluate_json_prints_the_golden_warnings_to_stderr(tmp_path, capsys):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "tea.txt").write_text("Green tea is brewed at 80 degrees Celsius for two minutes.", encoding="utf-8")
    (docs / "bread.txt").write_text("Sourdough bread rises with wild yeast and lactic acid bacteria.", encoding="utf-8")
    golden = tmp_path / "golden.jsonl"
    rows = [{"id": "tea", "question": "How hot is green tea brewed?", "expected": ["tea.txt"]},
            {"id": "gone", "question": "What is in the lost report?", "expected": ["lost.txt"]}]
    golden.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert main(["evaluate", "--docs", str(docs), "--golden", str(golden), "--out", str(tmp_path / "o"),
                 "--no-generate", "--skip", "*+rerank", "--json"]) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    shown = [f"{golden}:{w['line']}: field '{w['field']}': {w['message']}" for w in report["golden"]["warnings"]]
    assert any("lost.txt" in line for line in shown)
    assert captured.err.splitlines()[-len(shown):] == [f"  {line}" for line in shown]
