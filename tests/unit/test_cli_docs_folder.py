"""Every command that reads a documents folder says when ``--docs`` is no folder, before any work."""

from __future__ import annotations

import pytest

from core.cli import main


@pytest.mark.parametrize("command", [
    ["evaluate"], ["optimize"], ["compare-chunking"], ["sweep"],
])
def test_a_missing_or_file_docs_is_named(command, tmp_path, capsys):
    golden = tmp_path / "golden.jsonl"
    golden.write_text('{"question": "Where?", "expected": ["a.md"]}\n', encoding="utf-8")
    assert main([*command, "--docs", str(tmp_path / "nosuch"), "--golden", str(golden), "--out", str(tmp_path / "o")]) == 1
    assert f"ragtune {command[0]}: --docs {tmp_path / 'nosuch'} does not exist" in capsys.readouterr().err
    assert main([*command, "--docs", str(golden), "--golden", str(golden), "--out", str(tmp_path / "o")]) == 1
    assert f"--docs {golden} is not a folder" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()  # nothing was written


def test_check_names_a_missing_docs_folder(tmp_path, capsys):
    golden = tmp_path / "golden.jsonl"
    golden.write_text('{"question": "Where?", "expected": ["a.md"]}\n', encoding="utf-8")
    assert main(["check", str(golden), "--docs", str(tmp_path / "nosuch")]) == 1
    assert "--docs" in capsys.readouterr().err
