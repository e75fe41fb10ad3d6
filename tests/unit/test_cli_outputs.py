"""The files the ``ragtune`` command writes where the user says (``report --csv/--html``,
``template -o``): only a regular file is replaced, ``-`` is standard output, and what is in
the way is refused with a clear message and left as it was."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

from core.cli import main

EXPERIMENT = "20260101T000000Z-cccccc"


def _store(tmp_path):
    """A store with one finished experiment of one configuration (score 0.5)."""
    folder = tmp_path / "st" / "experiments" / EXPERIMENT
    folder.mkdir(parents=True)
    (folder / "study.json").write_text("{}")
    row = {"rank": 1, "trial": 0, "key": "k1", "status": "complete", "score": 0.5, "ci_low": None, "ci_high": None,
           "error": None, "duration_s": 2.5,
           "parameters": {"chunking_method": "recursive", "chunk_size": 256, "number_of_chunks": 5,
                          "search_mode": "vector", "foundation_model": "gpt"}}
    (folder / "report.json").write_text(json.dumps({
        "experiment_id": EXPERIMENT, "golden": {"n_questions": 3}, "corpus": {"n_documents": 2},
        "space": {"n_valid": 4}, "optimizer": {"name": "gam", "seed": 0, "max_evals": 1}, "objective": "mrr",
        "leaderboard": [row], "best": None,
        "counts": {"evaluations": 1, "failed": 0, "stored": 0, "collections_built": 1, "texts_embedded": 120},
        "timings_s": {"total_s": 9.0}}))
    return str(tmp_path / "st")


def _ragtune(*args, cwd):
    return subprocess.run([sys.executable, "-m", "core.cli", *args], capture_output=True, text=True, timeout=120,
                          cwd=cwd, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})


def test_csv_to_a_fifo_is_refused_in_a_real_process_and_the_fifo_stays(tmp_path):
    out = _store(tmp_path)
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    done = _ragtune("report", EXPERIMENT, "--out", out, "--csv", str(fifo), cwd=tmp_path)
    assert done.returncode == 1  # as other bad input: README's exit codes
    assert done.stderr.strip() == (f"ragtune report: {fifo} is not a regular file: it is never replaced; "
                                   "give the name of a file to write")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_csv_to_dash_is_standard_output(tmp_path, capsys):
    assert main(["report", EXPERIMENT, "--out", _store(tmp_path), "--csv", "-"]) == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert lines[0].startswith("experiment_id,objective,rank,trial,")
    assert lines[1].startswith(f"{EXPERIMENT},mrr,1,0,,k1,complete,0.5,")
    assert captured.err == "" and not (tmp_path / "-").exists()


def test_html_through_a_link_writes_the_linked_file(tmp_path):
    out = _store(tmp_path)
    real = tmp_path / "pages" / "run.html"
    real.parent.mkdir()
    real.write_text("old")
    link = tmp_path / "run.html"
    link.symlink_to(real)
    assert main(["report", EXPERIMENT, "--out", out, "--html", str(link)]) == 0
    assert link.is_symlink() and real.read_text().lstrip().lower().startswith("<!doctype html>")


def test_template_refuses_a_fifo_before_reading_the_documents(tmp_path, capsys):
    fifo = tmp_path / "golden.jsonl"
    os.mkfifo(fifo)
    # --docs names an empty folder: the refusal comes first, so no document is needed
    (tmp_path / "docs").mkdir()
    assert main(["template", "--docs", str(tmp_path / "docs"), "-o", str(fifo)]) == 1
    assert "exists already: it is never overwritten" in capsys.readouterr().err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_template_to_dash_prints_the_rows(tmp_path, capsys):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Alpha\n\n" + " ".join(f"Sentence {i} of the alpha document is about alpha plans."
                                                    for i in range(20)) + "\n")
    assert main(["template", "--docs", str(docs), "--by", "doc", "--n", "1", "-o", "-"]) == 0
    captured = capsys.readouterr()
    rows = [json.loads(line) for line in captured.out.splitlines()]
    assert len(rows) == 1 and rows[0]["expected"] == ["a.md"]
    assert "wrote 1 template row to -" in captured.err and not (tmp_path / "-").exists()


def test_draft_to_dash_is_refused_before_anything(tmp_path, capsys):
    """draft resumes from its output file, so standard output cannot hold it; no file '-' appears."""
    (tmp_path / "docs").mkdir()
    assert main(["draft", "--docs", str(tmp_path / "docs"), "-o", "-", "--writer", "w"]) == 1
    assert "give -o FILE, not -" in capsys.readouterr().err and not os.path.lexists("-")


def test_template_says_which_rows_are_pages_and_which_whole_documents(tmp_path, capsys):
    from tests.support.pdf import write_pdf

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Alpha\n\n" + " ".join(f"Sentence {i} of the alpha document is about alpha plans."
                                                    for i in range(20)) + "\n")
    assert main(["template", "--docs", str(docs), "-o", str(tmp_path / "md.jsonl")]) == 0  # --by page, no pages
    assert "wrote 1 template row to " in (out := capsys.readouterr().out) and "(one document each)" in out
    page = [(72, 700 - 14 * i, 11, f"Line {i} of the benefits page says how leave is planned.") for i in range(20)]
    (docs / "b.pdf").write_bytes(write_pdf([page, page]))
    assert main(["template", "--docs", str(docs), "-o", str(tmp_path / "mixed.jsonl")]) == 0
    rows = [json.loads(line) for line in (tmp_path / "mixed.jsonl").read_text().splitlines()]
    assert sorted(r["expected"][0] for r in rows) == ["a.md", "b.pdf#page=1", "b.pdf#page=2"]
    assert "wrote 3 template rows to " in (out := capsys.readouterr().out)
    assert "(one page each, 1 whole document without pages)" in out
