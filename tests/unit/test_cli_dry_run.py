"""``--dry-run`` on the commands that call chat models or judges: each prints its calls and
tokens and sends nothing (the endpoints named are never contacted: nothing listens there)."""

from __future__ import annotations

import json

import pytest

from core.cli import main

NOWHERE = "http://127.0.0.1:9/v1"


@pytest.fixture()
def corpus(tmp_path, monkeypatch):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("Paris is the capital of France.", encoding="utf-8")
    golden = tmp_path / "golden.jsonl"
    golden.write_text(json.dumps({"id": "q", "question": "What is the capital of France?", "expected": ["a.txt"],
                                  "reference": "Paris"}) + "\n", encoding="utf-8")
    monkeypatch.setenv("RAGTUNE_CHAT_PROVIDER", "openai")
    monkeypatch.setenv("RAGTUNE_CHAT_MODEL", "gen-model")
    monkeypatch.setenv("RAGTUNE_CHAT_BASE_URL", NOWHERE)
    monkeypatch.setenv("RAGTUNE_PRICES", json.dumps({"gen-model": {"input": 1, "output": 1}}))
    return docs, golden


def test_optimize_dry_run(corpus, tmp_path, capsys):
    docs, golden = corpus
    assert main(["optimize", "--docs", str(docs), "--golden", str(golden), "--out", str(tmp_path / "o"),
                 "--max-evals", "4", "--judge", "judge-model", "--dry-run", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    groups = {g["purpose"]: g for g in plan["groups"]}
    assert groups["answers"]["calls"] == 4 and groups["judge"]["calls"] == 4 * 5
    assert plan["unpriced"] == [groups["judge"]["model_id"]]
    assert not (tmp_path / "o" / "experiments").exists()


def test_optimize_dry_run_says_what_the_space_leaves_unused(corpus, tmp_path, capsys):
    """The plan's notes, as the run shows them: a --set parameter no configuration uses."""
    docs, golden = corpus
    assert main(["optimize", "--docs", str(docs), "--golden", str(golden), "--out", str(tmp_path / "o"),
                 "--set", "reranker=none", "--set", "retrieval_depth=5", "--dry-run"]) == 0
    captured = capsys.readouterr()
    assert captured.err.splitlines() == ["warning: --set: retrieval_depth=5 is used by no configuration: "
                                         "retrieval_depth applies only when reranker is not none"]
    assert "dry run: nothing is sent" in captured.out


def test_compare_chunking_dry_run(corpus, tmp_path, capsys):
    docs, golden = corpus
    assert main(["compare-chunking", "--docs", str(docs), "--golden", str(golden), "--out", str(tmp_path / "o"),
                 "--techniques", "recursive,sentence", "--sizes", "64,128", "--judge", "judge-model",
                 "--dry-run"]) == 0
    text = capsys.readouterr().out
    assert "dry run: nothing is sent" in text and "4 builds (techniques x sizes) x 1 questions" in text
    answers = next(line for line in text.splitlines() if "gen-model" in line and "answers" in line)
    assert answers.split()[2:5] == ["4", "0", "4"]


def test_draft_dry_run_counts_the_replies_already_kept(corpus, tmp_path, capsys):
    docs, _ = corpus
    output = tmp_path / "drafted.jsonl"
    (tmp_path / "drafted.jsonl.replies.jsonl").write_text('{"key": "a"}\n{"key": "b"}\n', encoding="utf-8")
    assert main(["draft", "--docs", str(docs), "-o", str(output), "--n", "2", "--tries", "3", "--dry-run"]) == 0
    text = capsys.readouterr().out
    writer = next(line for line in text.splitlines() if "writer" in line)
    assert writer.split()[2] == "6"  # 2 rows x 3 tries at most
    assert "already holds 2 replies" in text and not output.exists()


@pytest.mark.parametrize(("flags", "message"), [
    (["--metric", "nope"], "ragtune optimize: unknown objective metric 'nope' (known: mrr, "),
    (["--resume", "../../etc"], "ragtune optimize: experiment id may only hold letters, digits, '_', '.' and '-', "
                                "got '../../etc'"),
    (["--resume", "20260101T000000Z-abcdef"], "ragtune optimize: no experiment '20260101T000000Z-abcdef' to resume"),
    (["--set", "chunk_size=0"], "ragtune optimize: --set: chunk_size: 0 must be at least 1"),
    (["--min-questions", "0"], "ragtune optimize: --min-questions must be at least 1, got 0"),
])
@pytest.mark.parametrize("dry_run", [True, False])
def test_optimize_checks_the_same_with_and_without_dry_run(corpus, tmp_path, capsys, flags, message, dry_run):
    """The same exit 1 and message either way, before any work: nothing is stored, and the
    chat endpoint (where nothing listens) is never asked."""
    docs, golden = corpus
    code = main(["optimize", "--docs", str(docs), "--golden", str(golden), "--out", str(tmp_path / "o"), *flags]
                + (["--dry-run"] if dry_run else []))
    captured = capsys.readouterr()
    assert code == 1 and captured.err.startswith(message), captured.err
    assert "calls" not in captured.out  # no cost table
    assert not (tmp_path / "o" / "experiments").exists()
