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
