"""``--docs .`` with the default ``--out ragtune-out``: the output folder sits inside the documents
folder, and a second run must not read the first run's reports, golden copy and caches as
documents. The same command twice gives the same corpus and the same scores."""

from __future__ import annotations

import json

import pytest

from core.cli import main

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SKIPPED = {"document_id": "ragtune-out/", "reason": "ragtune's output folder (it holds .ragtune-output): not searched"}


def _corpus(tmp_path):
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "paris.txt").write_text("Paris is the capital and largest city of France, on the Seine.", encoding="utf-8")
    (docs / "sub" / "tokyo.md").write_text("# Tokyo\n\nTokyo is the capital of Japan and its largest city.",
                                           encoding="utf-8")
    (docs / "bread.txt").write_text("Sourdough bread rises with wild yeast and lactic acid bacteria.", encoding="utf-8")
    golden = tmp_path / "golden.jsonl"
    rows = [
        {"id": "fr", "question": "What is the capital of France?", "expected": ["paris.txt"]},
        {"id": "jp", "question": "Which city is the capital of Japan?", "expected": ["sub/tokyo.md"]},
        {"id": "br", "question": "What makes sourdough rise?", "expected": ["bread.txt"]},
    ]
    golden.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return docs, golden


def _evaluate(golden, capsys) -> dict:
    assert main(["evaluate", "--docs", ".", "--golden", str(golden), "--no-generate", "--skip", "*+rerank",
                 "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _scores(report: dict) -> dict:
    return {s["key"]: {grain: m["means"] for grain, m in s["metrics"].items() if m and "means" in m}
            for s in report["setups"]}


def test_evaluate_twice_with_the_output_folder_inside_the_documents(tmp_path, monkeypatch, capsys):
    docs, golden = _corpus(tmp_path)
    monkeypatch.delenv("RAGTUNE_OUT_DIR", raising=False)
    monkeypatch.chdir(docs)
    first = _evaluate(golden, capsys)
    assert list((docs / "ragtune-out" / "retrieval" / "runs").glob("*/report.json"))  # a .json the loader reads
    second = _evaluate(golden, capsys)
    corpus = second["corpus"]
    assert (corpus["n_documents"], corpus["n_chunks"]) == (first["corpus"]["n_documents"],
                                                           first["corpus"]["n_chunks"]) == (3, 3)
    assert corpus["fingerprint"] == first["corpus"]["fingerprint"]
    assert _scores(second) == _scores(first)
    assert _scores(first)["keyword"]["doc"]["found@1"] == 1.0  # each question names its document's words
    assert first["corpus"]["skipped"] == corpus["skipped"] == [SKIPPED]  # the folder once, not each of its files
    assert (docs / "ragtune-out" / ".ragtune-output").is_file()

