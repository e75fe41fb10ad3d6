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


@pytest.mark.parametrize("command", [
    ["evaluate", "--golden", "g.jsonl"], ["optimize", "--golden", "g.jsonl"],
    ["compare-chunking", "--golden", "g.jsonl"], ["sweep", "--golden", "g.jsonl"],
    ["cutoff", "--golden", "g.jsonl", "--unanswerable", "u.jsonl"], ["suggest", "--golden", "g.jsonl", "-o", "s.jsonl"],
    ["draft", "-o", "d.jsonl"],
])
def test_the_docs_folder_as_output_folder_is_refused_before_any_work(command, tmp_path, monkeypatch, capsys):
    """Its reports, caches and index would be written among the documents: each command that reads
    ``--docs`` and writes an output folder names both options (or the variable) and writes nothing."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nText.", encoding="utf-8")
    (tmp_path / "g.jsonl").write_text('{"question": "Where?", "expected": ["a.md"]}\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main([*command, "--docs", str(docs), "--out", str(docs)]) == 1
    assert f"ragtune {command[0]}: --out {docs} is the --docs folder {docs}: " in capsys.readouterr().err
    monkeypatch.setenv("RAGTUNE_OUT_DIR", str(docs))
    monkeypatch.chdir(docs)
    assert main([*command, "--docs", "."]) == 1
    assert (f"ragtune {command[0]}: the output folder {docs} ($RAGTUNE_OUT_DIR, as --out is not "
            "given) is the --docs folder .: ") in capsys.readouterr().err
    monkeypatch.delenv("RAGTUNE_OUT_DIR")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ragtune-out").mkdir()
    assert main([*command, "--docs", "ragtune-out"]) == 1
    assert (f"ragtune {command[0]}: the output folder ragtune-out (the default ragtune-out, as --out is not "
            "given) is the --docs folder ragtune-out: ") in capsys.readouterr().err
    (tmp_path / "ragtune-out").rmdir()
    assert [p.name for p in docs.iterdir()] == ["a.md"]  # nothing written
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs", "g.jsonl"]


def test_an_output_folder_inside_the_docs_folder_is_not_refused(tmp_path, capsys):
    """``--out docs/out`` passes the check (the loader leaves it out); only the same folder is refused."""
    from core.cli.common import _check_out_apart
    from core.cli.parser import build_parser

    docs = tmp_path / "docs"
    (docs / "out").mkdir(parents=True)
    for out in (docs / "out", tmp_path):  # inside --docs, and --docs inside it (as <out>/inputs is)
        _check_out_apart(build_parser().parse_args(["evaluate", "--docs", str(docs), "--golden", "g.jsonl",
                                                    "--out", str(out)]))
