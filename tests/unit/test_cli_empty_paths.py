"""An empty or missing path or model name is an error that says so, never the current folder or a
default: ``check ''`` used to say "is a directory" (it read ``.``), and ``--embedding-model ''``
ran with the configured model."""

from __future__ import annotations

import pytest

from core.cli import main


def test_check_with_an_empty_path_says_it_is_empty(capsys):
    assert main(["check", ""]) == 1
    err = capsys.readouterr().err
    assert err.strip() == "ragtune check: GOLDEN is empty: give a path" and "directory" not in err


@pytest.mark.parametrize(("flag", "shown"), [("--golden", "--golden"), ("--docs", "--docs"), ("--out", "--out"),
                                             ("--targets", "--targets")])
def test_an_empty_option_path_is_named(tmp_path, capsys, flag, shown):
    golden = tmp_path / "golden.jsonl"
    golden.write_text('{"id": "q1", "question": "What is alpha?", "expected": ["a.md"]}\n', encoding="utf-8")
    args = {"--golden": str(golden), "--docs": str(tmp_path), "--out": str(tmp_path / "out")}
    args[flag] = ""
    assert main(["evaluate", *[x for kv in args.items() for x in kv]]) == 1
    assert capsys.readouterr().err.strip() == f"ragtune evaluate: {shown} is empty: give a path"
    assert not (tmp_path / "out").exists()


def test_an_empty_embedding_model_is_an_error_not_the_default(tmp_path, capsys):
    golden = tmp_path / "golden.jsonl"
    golden.write_text('{"id": "q1", "question": "What is alpha?", "expected": ["a.md"]}\n', encoding="utf-8")
    code = main(["evaluate", "--docs", str(tmp_path), "--golden", str(golden), "--embedding-model", "",
                 "--out", str(tmp_path / "out")])
    assert code == 1
    assert capsys.readouterr().err.strip() == ("ragtune evaluate: --embedding-model lists nothing (got ''): give at "
                                               "least one value, or leave it out")
    assert not (tmp_path / "out").exists()


def test_check_takes_the_golden_file_first_or_as_golden(tmp_path, capsys):
    golden = tmp_path / "golden.jsonl"
    golden.write_text('{"id": "q1", "question": "What is alpha?", "expected": ["a.md"]}\n', encoding="utf-8")
    assert main(["check", str(golden)]) == 0
    first = capsys.readouterr().out
    assert main(["check", "--golden", str(golden)]) == 0
    assert capsys.readouterr().out == first
    assert main(["check"]) == 1
    assert "give it first (ragtune check FILE) or as --golden FILE" in capsys.readouterr().err
    assert main(["check", str(golden), "--golden", str(golden)]) == 1
    assert "not both" in capsys.readouterr().err
    assert main(["check", "--golden", ""]) == 1
    assert capsys.readouterr().err.strip() == "ragtune check: --golden is empty: give a path"


def test_an_unknown_option_is_said_with_the_commands_own_usage(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["evaluate", "--golden", "g.jsonl", "--html", "page.html"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert err.startswith("usage: ragtune evaluate ")
    assert err.rstrip().endswith("ragtune evaluate: error: unrecognized arguments: --html page.html")


def test_an_embedding_model_folder_that_is_not_there_names_the_option(tmp_path, capsys):
    golden = tmp_path / "golden.jsonl"
    golden.write_text('{"id": "q1", "question": "What is alpha?", "expected": ["a.md"]}\n', encoding="utf-8")
    missing = tmp_path / "gone"
    assert main(["evaluate", "--docs", str(tmp_path), "--golden", str(golden), "--embedding-model",
                 f"onnx:{missing}", "--out", str(tmp_path / "out")]) == 1
    assert capsys.readouterr().err.strip() == (f"ragtune evaluate: --embedding-model: onnx:{missing}: {missing} "
                                               "is not a folder")
    assert not (tmp_path / "out").exists()
