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
    assert captured.err.splitlines() == [
        # the new study's note first, as the run shows it (the golden file's reference answers
        # make overall_score the objective)
        "warning: screen scores every configuration on every question with overall_score (rungs of questions need "
        "a retrieval objective's per-question scores)",
        "warning: --set: retrieval_depth=5 is used by no configuration: retrieval_depth applies only when reranker "
        "is not none"]
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


@pytest.mark.parametrize("dry_run", [True, False])
def test_optimize_checks_the_expected_documents_with_and_without_dry_run(corpus, tmp_path, capsys, dry_run):
    """A golden file none of whose expected documents is in --docs stops both, before any work."""
    docs, _ = corpus
    golden = tmp_path / "elsewhere.jsonl"
    golden.write_text(json.dumps({"id": "q", "question": "What is the capital of Peru?", "expected": ["b.txt"]})
                      + "\n", encoding="utf-8")
    code = main(["optimize", "--docs", str(docs), "--golden", str(golden), "--out", str(tmp_path / "o")]
                + (["--dry-run"] if dry_run else []))
    captured = capsys.readouterr()
    assert code == 1 and captured.err.startswith(
        f"ragtune optimize: the golden file expects 1 document and none is in {docs}"), captured.err
    assert "every score would be 0" in captured.err and "calls" not in captured.out
    assert not (tmp_path / "o" / "experiments").exists()


#: A space of 2 configurations, counted by hand: chunk_overlap 0 or 32, one value of the rest
#: (the foundation model is the configured chat model).
TWO = ["--set", "chunking_method=recursive", "--set", "chunk_size=128", "--set", "chunk_overlap=0,32",
       "--set", "number_of_chunks=3", "--set", "search_mode=vector"]


def test_optimize_dry_run_caps_the_budget_at_the_space(corpus, tmp_path, capsys):
    """A budget above the space's valid configurations plans as many evaluations as the space
    holds, with the note the run shows."""
    docs, golden = corpus
    assert main(["optimize", "--docs", str(docs), "--golden", str(golden), "--out", str(tmp_path / "o"), *TWO,
                 "--max-evals", "99999999999999999999", "--dry-run", "--json"]) == 0
    captured = capsys.readouterr()
    assert captured.err.splitlines()[0] == ("warning: the space holds 2 valid configurations, fewer than the budget "
                                            "of 99999999999999999999: 2 will be evaluated")
    plan = json.loads(captured.out)
    assert plan["groups"][0]["calls"] == 2  # one answer per evaluation, one question
    assert plan["notes"][-1].startswith("at most 2 configurations")


def test_optimize_dry_run_says_what_the_overrides_remove(corpus, tmp_path, capsys):
    """The notes the run shows for values --set leaves without a valid configuration: the
    packaged model's 512 tokens bound the chunk sizes (512) without loading it, so an overlap of
    600 removes every recursive configuration, as in the run."""
    docs, golden = corpus
    assert main(["optimize", "--docs", str(docs), "--golden", str(golden), "--out", str(tmp_path / "o"),
                 "--set", "chunk_overlap=600", "--dry-run"]) == 0
    warnings = capsys.readouterr().err.splitlines()
    rule = "rule overlap_below_half_chunk (chunk_size > 2 * chunk_overlap) fails"
    assert f"warning: --set removed every configuration with chunk_overlap=600: {rule}" in warnings
    assert f"warning: --set removed every configuration with chunking_method='recursive': {rule}" in warnings


@pytest.mark.parametrize("dry_run", [True, False])
def test_optimize_bounds_chunk_sizes_by_the_packaged_model_with_and_without_dry_run(corpus, tmp_path, capsys,
                                                                                     dry_run):
    """A chunk size over the packaged model's 512 tokens leaves no valid configuration: exit 1
    either way, the dry run loading no model."""
    docs, golden = corpus
    code = main(["optimize", "--docs", str(docs), "--golden", str(golden), "--out", str(tmp_path / "o"),
                 "--set", "chunk_size=99999999999999999999999"] + (["--dry-run"] if dry_run else []))
    captured = capsys.readouterr()
    assert code == 1 and captured.err.startswith(
        "ragtune optimize: --set: the search space has no valid configuration: rule chunk_fits_embedding_model"), \
        captured.err
    assert "{local:bge-small-en-v1.5: 512}" in captured.err
    assert not (tmp_path / "o" / "experiments").exists()


def test_optimize_dry_run_says_which_context_length_the_run_checks(corpus, tmp_path, capsys, monkeypatch):
    """A model that reads its context length only once loaded (sentence-transformers) is not
    loaded by the dry run, which says the run checks the chunk sizes against it."""
    from core.models.local import installed_local_embedding_models

    if "local:all-MiniLM-L6-v2" not in installed_local_embedding_models():
        pytest.skip("the minilm extra is not installed")
    docs, golden = corpus
    monkeypatch.setenv("RAGTUNE_EMBEDDING_MODEL", "local:all-MiniLM-L6-v2")
    assert main(["optimize", "--docs", str(docs), "--golden", str(golden), "--out", str(tmp_path / "o"),
                 "--set", "chunk_size=99999999999999999999999", "--dry-run"]) == 0
    assert ("chunk sizes are checked against the context length of local:all-MiniLM-L6-v2 by the run, which loads "
            "the model to read it") in capsys.readouterr().out
