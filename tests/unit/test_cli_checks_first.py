"""Arguments and the golden file are checked before any slow work: a bad ``--n``, a missing
or broken golden file, or a ``--setup`` the run cannot have stop the command before the
documents are read. The documents here are in an S3 bucket that does not exist on the test
S3 server: reaching them would fail with the bucket's error instead of the one expected."""

from __future__ import annotations

import uuid

import pytest

from core.cli import main
from tests.support.services import service


@pytest.fixture
def unreachable_docs(monkeypatch):
    """``s3://<missing bucket>/docs`` on the test S3 server (moto), with the environment the
    CLI reaches it through."""
    for name, value in {"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s", "AWS_DEFAULT_REGION": "us-east-1",
                        "AWS_ENDPOINT_URL": service("RAGTUNE_TEST_S3_ENDPOINT", "moto.sh")}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    return f"s3://ragtune-missing-{uuid.uuid4().hex[:12]}/docs"


def test_the_bucket_is_really_unreachable(tmp_path, unreachable_docs, capsys):
    """The fixture's premise: with a valid --n, template does try the documents and fails on them."""
    assert main(["template", "--docs", unreachable_docs, "-o", str(tmp_path / "t.jsonl")]) == 1
    assert "ragtune-missing-" in capsys.readouterr().err


def test_template_n_0_fails_before_reading_the_documents(tmp_path, unreachable_docs, capsys):
    assert main(["template", "--docs", unreachable_docs, "--n", "0", "-o", str(tmp_path / "t.jsonl")]) == 1
    assert capsys.readouterr().err.strip() == "ragtune template: --n must be at least 1, got 0"


def test_suggest_with_a_missing_golden_file_fails_before_indexing(tmp_path, unreachable_docs, capsys):
    missing = tmp_path / "nonexistent.jsonl"
    code = main(["suggest", "--docs", unreachable_docs, "--golden", str(missing), "-o", str(tmp_path / "s.jsonl"),
                 "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 1 and str(missing) in err and "not found" in err and "ragtune-missing-" not in err
    assert not (tmp_path / "out").exists() and not (tmp_path / "s.jsonl").exists()


def test_suggest_with_a_broken_golden_file_fails_before_indexing(tmp_path, unreachable_docs, capsys):
    golden = tmp_path / "golden.jsonl"
    golden.write_text('{"question": 3, "reference": "x"}\nnot json\n', encoding="utf-8")
    code = main(["suggest", "--docs", unreachable_docs, "--golden", str(golden), "-o", str(tmp_path / "s.jsonl"),
                 "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 1
    assert f"{golden}:1: error: field 'question': must be a string" in err
    assert f"{golden}:2: error: not valid JSON" in err and "ragtune-missing-" not in err


def _golden(tmp_path):
    path = tmp_path / "golden.jsonl"
    path.write_text('{"id": "q1", "question": "What is alpha?", "expected": ["a.md"]}\n', encoding="utf-8")
    return str(path)


def test_a_gated_setup_the_run_cannot_have_stops_before_the_run(tmp_path, unreachable_docs, capsys, monkeypatch):
    monkeypatch.setenv("RAGTUNE_RERANK_PROVIDER", "none")
    code = main(["evaluate", "--docs", unreachable_docs, "--golden", _golden(tmp_path), "--setup", "nope",
                 "--fail-under", "found@5=0.5", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip()
    assert code == 1
    # the setups of a run over documents without a reranker (core.evaluation.retrieval.default_search_setups)
    assert err == ("ragtune evaluate: --setup 'nope' is neither a pick (finds_the_most, best_for_balance, "
                   "best_for_time) nor a setup this run evaluates (keyword, dense, hybrid-rrf-k60, "
                   "hybrid-weighted-a0.5)")
    assert not (tmp_path / "out").exists()


def test_only_narrows_the_setups_a_gate_may_name(tmp_path, unreachable_docs, capsys, monkeypatch):
    monkeypatch.setenv("RAGTUNE_RERANK_PROVIDER", "none")
    code = main(["evaluate", "--docs", unreachable_docs, "--golden", _golden(tmp_path), "--only", "dense",
                 "--setup", "keyword", "--fail-under", "found@5=0.5", "--out", str(tmp_path / "out")])
    assert code == 1 and "nor a setup this run evaluates (dense)" in capsys.readouterr().err


def test_a_setup_over_targets_must_name_one_of_them(tmp_path, capsys):
    code = main(["evaluate", "--golden", _golden(tmp_path), "--target", f"milvus:{tmp_path / 'x.db'}#docs",
                 "--setup", "other/dense", "--fail-under", "found@5=0.5", "--out", str(tmp_path / "out")])
    assert code == 1
    assert capsys.readouterr().err.strip() == (
        "ragtune evaluate: --setup 'other/dense' is neither a pick (finds_the_most, best_for_balance, best_for_time) "
        "nor TARGET/PICK or TARGET/SETUP of a target of this run (milvus:docs)")
    assert not (tmp_path / "out").exists()


def test_a_setup_without_a_gate_is_said_to_be_ignored(tmp_path, capsys):
    code = main(["evaluate", "--golden", _golden(tmp_path), "--target", f"milvus:{tmp_path / 'x.db'}#docs",
                 "--setup", "milvus:docs/dense", "--out", str(tmp_path / "out"), "--json"])
    assert code == 3  # the target does not exist: nothing evaluated (README's exit codes)
    assert ("ragtune evaluate: --setup chooses the setup the gate checks; without --fail-under or --baseline it "
            "is ignored") in capsys.readouterr().err
