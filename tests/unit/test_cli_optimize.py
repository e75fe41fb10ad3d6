"""``ragtune optimize``'s options for parallel evaluations and fresh replies."""

from __future__ import annotations

from core.cli import build_parser, main


def test_workers_and_no_cache_are_parsed():
    args = build_parser().parse_args(["optimize", "--docs", "d", "--golden", "g", "--workers", "3", "--no-cache"])
    assert (args.workers, args.no_cache) == (3, True)
    args = build_parser().parse_args(["optimize", "--docs", "d", "--golden", "g"])
    assert (args.workers, args.no_cache) == (None, False)


def test_the_default_optimizer_is_screen_and_the_samplers_stay():
    args = build_parser().parse_args(["optimize", "--docs", "d", "--golden", "g"])
    assert (args.optimizer, args.multi_fidelity) == ("screen", False)
    args = build_parser().parse_args(["optimize", "--docs", "d", "--golden", "g", "--optimizer", "gam",
                                      "--multi-fidelity"])
    assert (args.optimizer, args.multi_fidelity) == ("gam", True)


def test_workers_below_one_is_a_clear_error(capsys, tmp_path):
    code = main(["optimize", "--docs", str(tmp_path), "--golden", str(tmp_path / "g.jsonl"), "--workers", "0",
                 "--out", str(tmp_path / "out")])
    assert code == 1
    assert capsys.readouterr().err.strip() == "ragtune optimize: --workers must be at least 1, got 0"


def test_a_set_that_removes_a_chunker_says_which_and_why():
    """``--set chunk_overlap=128`` over the default space of a 256-token model (chunkers
    recursive and hybrid, chunk sizes 128 and 256). By hand: recursive needs chunk_size > 2 * 128
    = 256, so neither size is left for it; hybrid takes no overlap and keeps both sizes. So
    recursive and chunk_overlap=128 lose every configuration, chunk_size 128 and 256 do not."""
    from types import SimpleNamespace

    from core.experiment.prepare import build_space
    from core.optimization.overrides import parse_overrides

    model = SimpleNamespace(model_id="emb", max_input_tokens=256)
    space, notes = build_space(embedding_models={"emb": model}, foundation_models=["extractive"],
                               overrides=parse_overrides(["chunk_overlap=128"]), overrides_source="--set")
    rule = "rule overlap_below_half_chunk (chunk_size > 2 * chunk_overlap) fails"
    assert notes == [f"--set removed every configuration with chunking_method='recursive': {rule}",
                     f"--set removed every configuration with chunk_overlap=128: {rule}"]
    assert {c["chunking_method"] for c in space.valid_configurations()} == {"hybrid"}
    assert {c["chunk_size"] for c in space.valid_configurations()} == {128, 256}


def test_golden_warnings_are_shown_once_each_and_at_most_ten(tmp_path, capsys):
    """Twelve of thirteen questions expect documents that are not in --docs: ten warnings are
    printed, each with the file, line and field and one "warning:", then a count of the rest."""
    import json

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "tea.txt").write_text("Green tea is brewed at 80 degrees. " * 20, encoding="utf-8")
    golden = tmp_path / "golden.jsonl"
    rows = [{"id": "q0", "question": "How hot is green tea brewed?", "expected": ["tea.txt"]}]
    rows += [{"id": f"q{i}", "question": f"What is in report {i}?", "expected": [f"gone-{i}.txt"]} for i in range(1, 13)]
    golden.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    main(["optimize", "--docs", str(docs), "--golden", str(golden), "--out", str(tmp_path / "out"),
          "--max-evals", "1", "--set", "chunking_method=recursive", "--set", "chunk_size=128",
          "--set", "search_mode=keyword", "--set", "number_of_chunks=3"])
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "golden.jsonl:" in line and "gone-" in line]
    assert len(lines) == 10, err
    assert all(line.count("warning:") == 1 for line in lines), lines
    assert "golden.jsonl:2: field 'expected': " in lines[0]
    assert "... and 2 more like these about" in err
