"""``ragtune optimize``'s options for parallel evaluations and fresh replies."""

from __future__ import annotations

from core.cli import build_parser, main


def test_workers_and_no_cache_are_parsed():
    args = build_parser().parse_args(["optimize", "--docs", "d", "--golden", "g", "--workers", "3", "--no-cache"])
    assert (args.workers, args.no_cache) == (3, True)
    args = build_parser().parse_args(["optimize", "--docs", "d", "--golden", "g"])
    assert (args.workers, args.no_cache) == (None, False)


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
