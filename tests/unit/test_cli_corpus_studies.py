"""compare-chunking, sweep, cutoff and optimize stop before any work, with the reason, when
none of the golden file's expected documents is in --docs (as evaluate does)."""

from __future__ import annotations

import json

import pytest

from core.cli import main


@pytest.mark.parametrize("command", [["compare-chunking", "--techniques", "sentence", "--sizes", "64"], ["sweep"],
                                     ["cutoff", "--unanswerable", "UNANSWERABLE"], ["optimize", "--max-evals", "1"]])
def test_golden_whose_documents_are_all_missing_is_exit_1(command, tmp_path, capsys):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "tea.txt").write_text("Green tea is brewed at 80 degrees.", encoding="utf-8")
    golden = tmp_path / "golden.jsonl"
    golden.write_text("\n".join(json.dumps({"id": f"q{i}", "question": f"Where {i}?", "expected": [name]})
                                for i, name in enumerate(["a.pdf", "b.txt", "c.md"])) + "\n", encoding="utf-8")
    unanswerable = tmp_path / "u.jsonl"
    unanswerable.write_text(json.dumps({"id": "u1", "question": "Who won in 2090?"}) + "\n", encoding="utf-8")
    command = [str(unanswerable) if c == "UNANSWERABLE" else c for c in command]
    out = tmp_path / "out"
    assert main([*command, "--docs", str(docs), "--golden", str(golden), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "the golden file expects 3 documents and none is in" in err
    assert "'a.pdf', 'b.txt', 'c.md'" in err and "'tea.txt'" in err
    assert not out.exists() or not any(out.rglob("report.json"))


def test_default_overlap_fits_the_size():
    from core.chunking._common import default_overlap

    # min(32, size // 8), worked by hand
    assert [default_overlap(n) for n in (256, 1024, 128, 16, 7, 1)] == [32, 32, 16, 2, 0, 0]


def _tea(tmp_path):
    """A one-document corpus and a one-question golden file that expects it."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "tea.txt").write_text("Green tea is brewed at 80 degrees.", encoding="utf-8")
    golden = tmp_path / "golden.jsonl"
    golden.write_text(json.dumps({"question": "How hot?", "expected": ["tea.txt"]}) + "\n", encoding="utf-8")
    return docs, golden


def test_a_small_chunk_size_without_an_overlap_runs_and_a_given_one_too_big_is_an_error(tmp_path, capsys):
    from core.cli import _chunk_overlap, build_parser

    args = build_parser().parse_args(["evaluate", "--docs", "d", "--golden", "g", "--chunk-size", "16"])
    assert _chunk_overlap(args) == 2
    args = build_parser().parse_args(["cutoff", "--docs", "d", "--golden", "g", "--unanswerable", "u",
                                      "--chunk-size", "16"])
    assert _chunk_overlap(args) == 2
    docs, golden = _tea(tmp_path)
    assert main(["evaluate", "--docs", str(docs), "--golden", str(golden), "--out", str(tmp_path / "out"),
                 "--no-generate", "--chunk-size", "16", "--chunk-overlap", "32"]) == 1
    assert "chunk_overlap (32 tokens) must be smaller than chunk_size (16 tokens)" in capsys.readouterr().err


def test_lists_drop_duplicates_keeping_order_and_an_empty_one_is_an_error():
    from core.cli import _csv, _csv_ints, _search_setups
    from core.errors import ConfigError
    from core.vectorstores import SearchSetup

    assert _csv("keyword, vector,keyword", "--search") == ["keyword", "vector"]
    assert _csv_ints("256,128,256", "--sizes") == [256, 128]
    assert _csv(None, "--search") == []
    # hybrid-rrf is hybrid-rrf-k60: one setup
    assert _search_setups(["keyword", "vector", "keyword", "hybrid-rrf", "hybrid-rrf-k60"]) == [
        SearchSetup("keyword"), SearchSetup("vector"), SearchSetup("hybrid", "rrf", ranker_k=60)]
    for text in (",", " , ", ""):
        with pytest.raises(ConfigError, match="--techniques lists nothing"):
            _csv(text, "--techniques")


def test_compare_chunking_with_no_technique_is_exit_1(tmp_path, capsys):
    docs, golden = _tea(tmp_path)
    assert main(["compare-chunking", "--docs", str(docs), "--golden", str(golden), "--out", str(tmp_path / "out"),
                 "--techniques", ","]) == 1
    assert "--techniques lists nothing (got ',')" in capsys.readouterr().err
