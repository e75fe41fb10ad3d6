"""A stored experiment whose files were changed or cut short outside ragtune: ``optimize
--resume`` (with and without ``--dry-run``) and ``report`` exit 1 naming the damaged file,
never with a traceback, and the experiment's files are left as they were (but for the cost a
resume records of its own run).

One real experiment (the local embedding model, Milvus Lite, multi-fidelity off and on) is
run once per module; each case damages a copy of it.
"""

from __future__ import annotations

import json
import shutil

import pytest

from core.cli import main

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SPACE = ["--set", "search_mode=vector", "--set", "chunk_overlap=0", "--set", "chunk_size=128",
         "--set", "number_of_chunks=3", "--set", "ranker_k=20"]  # ranker_k: a note stored with the experiment


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """``(docs, golden, out, experiment id)`` of a finished one-configuration experiment
    scored through rungs (so ``fidelity.json`` is stored too)."""
    root = tmp_path_factory.mktemp("damaged")
    docs = root / "docs"
    docs.mkdir()
    rows = []
    for i, (city, country) in enumerate([("Paris", "France"), ("Tokyo", "Japan"), ("Lima", "Peru"),
                                         ("Oslo", "Norway"), ("Cairo", "Egypt"), ("Quito", "Ecuador")]):
        (docs / f"{city.lower()}.txt").write_text(f"{city} is the capital city of {country}.", encoding="utf-8")
        rows.append({"id": f"q{i}", "question": f"What is the capital of {country}?", "expected": [f"{city.lower()}.txt"]})
    golden = root / "golden.jsonl"
    golden.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = root / "out"
    assert main(["optimize", "--docs", str(docs), "--golden", str(golden), "--out", str(out), "--max-evals", "1",
                 "--metric", "mrr", "--optimizer", "screen", "--min-questions", "2", *SPACE]) == 0
    (experiment,) = (out / "experiments").iterdir()
    assert {"spec.json", "study.json", "notes.json", "progress.json", "fidelity.json", "report.json"} <= {
        p.name for p in experiment.iterdir()}
    return docs, golden, out, experiment.name


def _result_name(folder):
    (result,) = (folder / "results").iterdir()
    return f"results/{result.name}"


@pytest.mark.parametrize(("name", "content", "commands"), [
    ("spec.json", '{"version": 1,', ("resume", "dry-run")),
    ("spec.json", "SPEC:n_questions=5", ("resume", "dry-run")),
    ("study.json", '"x"', ("resume", "dry-run")),
    ("study.json", "STUDY:trials={}", ("resume", "dry-run")),
    ("notes.json", "null", ("resume", "dry-run")),
    ("notes.json", '[{"a": 1}]', ("resume", "dry-run")),
    ("progress.json", "[]", ("resume", "dry-run")),
    ("progress.json", '{"counts": {"evaluations": "two"}}', ("resume", "dry-run")),
    ("fidelity.json", '{"question_ids": "x", "state": {}}', ("resume", "dry-run")),
    ("fidelity.json", '{"question_ids": ["q0"], "state": []}', ("resume", "dry-run")),
    ("RESULT", "[]", ("resume", "dry-run")),
    ("RESULT", "RESULT:answers=x", ("resume", "dry-run")),
    ("report.json", "[1, 2]", ("report", "report-html")),
    ("report.json", "{}", ("report", "report-html")),
    ("report.json", "REPORT:leaderboard=x", ("report",)),
])
def test_a_damaged_file_is_named_and_nothing_else_changes(stored, tmp_path, capsys, name, content, commands):
    docs, golden, out, experiment_id = stored
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    folder = copy / "experiments" / experiment_id
    name = _result_name(folder) if name == "RESULT" else name
    if ":" in content and content.split(":")[0] in ("SPEC", "STUDY", "RESULT", "REPORT"):  # one field of the wrong type
        field, value = content.split(":", 1)[1].split("=")
        data = json.loads((folder / name).read_text())
        data[field] = {"5": "5", "{}": {}, "x": "x"}[value]
        content = json.dumps(data)
    (folder / name).write_text(content, encoding="utf-8")
    before = {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    runs = {
        "resume": ["optimize", "--docs", str(docs), "--golden", str(golden), "--out", str(copy), "--resume",
                   experiment_id],
        "dry-run": ["optimize", "--docs", str(docs), "--golden", str(golden), "--out", str(copy), "--resume",
                    experiment_id, "--dry-run"],
        "report": ["report", experiment_id, "--out", str(copy)],
        "report-html": ["report", experiment_id, "--out", str(copy), "--html", str(tmp_path / "page.html")],
    }
    for command in commands:
        code = main(runs[command])
        err = capsys.readouterr().err
        assert code == 1, (command, err)
        assert f"{folder / name}" in err and "Traceback" not in err, (command, err)
        assert not (tmp_path / "page.html").exists()
    after = {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    # nothing rewritten, nothing lost (a resume that got as far as its report records its run's cost)
    assert set(after) == set(before)
    assert {k: v for k, v in after.items() if k.name != "progress.json" or name == "progress.json"} == {
        k: v for k, v in before.items() if k.name != "progress.json" or name == "progress.json"}


def test_a_dry_run_resume_shows_the_stored_notes_and_budget(stored, tmp_path, capsys):
    """What the resume itself would keep: the experiment's own notes and budget, not a plan of
    the command's --set (which the resume ignores)."""
    docs, golden, out, experiment_id = stored
    notes = json.loads((out / "experiments" / experiment_id / "notes.json").read_text())
    assert notes == ["--set: ranker_k=20 is used by no configuration: ranker_k applies only when search_mode is "
                     "hybrid and ranker_strategy is rrf"]
    assert main(["optimize", "--docs", str(docs), "--golden", str(golden), "--out", str(out), "--resume",
                 experiment_id, "--dry-run", "--set", "ranker_alpha=0.3"]) == 0
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [f"warning: {note}" for note in notes]
    assert "at most 1 configuration" in captured.out
    assert main(["optimize", "--docs", str(docs), "--golden", str(golden), "--out", str(out), "--resume",
                 experiment_id, "--dry-run", "--max-evals", "2"]) == 0
    assert "at most 2 configurations" in capsys.readouterr().out
    # a budget above the space's 2 valid configurations is capped, as the run caps it, and said
    assert main(["optimize", "--docs", str(docs), "--golden", str(golden), "--out", str(out), "--resume",
                 experiment_id, "--dry-run", "--max-evals", "99999999999999999999"]) == 0
    captured = capsys.readouterr()
    assert "at most 2 configurations" in captured.out
    assert captured.err.splitlines()[-1] == ("warning: the space holds 2 valid configurations, fewer than the budget "
                                             "of 99999999999999999999: 2 will be evaluated")


def _runs(docs, golden, out, experiment_id, *flags):
    """``optimize --resume`` with ``flags``, then the same with ``--dry-run``: their commands."""
    resume = ["optimize", "--docs", str(docs), "--golden", str(golden), "--out", str(out), "--resume", experiment_id,
              *flags]
    return resume, [*resume, "--dry-run"]


@pytest.mark.parametrize("content", ["[1,2", "[]", "RESULT:metrics=x"])
def test_a_damaged_result_stops_a_resume_before_any_evaluation(stored, tmp_path, capsys, content):
    """A resume with room for more evaluations reads every stored result first: a damaged one
    stops it (and its dry run) at once, with exit 1, the file's name and what to do; nothing
    is evaluated, nothing stored changes (not even progress.json)."""
    docs, golden, out, experiment_id = stored
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    folder = copy / "experiments" / experiment_id
    name = _result_name(folder)
    if content.startswith("RESULT:"):
        data = json.loads((folder / name).read_text())
        data["metrics"] = "x"
        content = json.dumps(data)
    (folder / name).write_text(content, encoding="utf-8")
    before = {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    for command in _runs(docs, golden, copy, experiment_id, "--max-evals", "2"):
        code = main(command)
        captured = capsys.readouterr()
        assert code == 1, captured.err
        assert captured.err.startswith(f"ragtune optimize: {folder / name} is not "), captured.err
        assert "delete it to evaluate that configuration again" in captured.err and "Traceback" not in captured.err
        assert len(captured.err.splitlines()) == 1 and "calls" not in captured.out  # nothing evaluated or planned
        after = {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
        assert after == before


def test_a_deleted_result_is_evaluated_again(stored, tmp_path, capsys):
    """Deleting a result, as the message about a damaged one says, has the resume (and its dry
    run) say so and evaluate that configuration again, first, within the budget: the report
    then has its interval and seconds again, not a score with nothing behind it."""
    docs, golden, out, experiment_id = stored
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    folder = copy / "experiments" / experiment_id
    name = _result_name(folder)
    key = name.removeprefix("results/").removesuffix(".json")
    stored_result = json.loads((folder / name).read_text())
    (folder / name).unlink()
    said = (f"warning: configuration {key} has no stored result ({folder / name} is missing): it is evaluated "
            "again")
    resume, dry_run = _runs(docs, golden, copy, experiment_id)
    assert main(dry_run) == 0
    captured = capsys.readouterr()
    assert said in captured.err.splitlines() and "at most 1 configuration" in captured.out
    assert not (folder / name).exists()  # a dry run stores nothing
    assert main(resume) == 0
    assert said in capsys.readouterr().err.splitlines()
    report = json.loads((folder / "report.json").read_text())
    assert json.loads((folder / name).read_text())["configuration"] == stored_result["configuration"]
    (row,) = report["leaderboard"]
    assert row["key"] == key and row["ci_low"] is not None and row["ci_high"] is not None
    assert row["duration_s"] is not None and row["fully_evaluated"]
    assert report["counts"]["evaluations"] == 1 and report["counts"]["pending"] == 0


def test_a_report_that_cannot_be_built_says_the_stored_one_is_stale(stored, tmp_path, capsys, monkeypatch):
    """A file damaged while the experiment runs is found when its report is built, after the
    evaluations: the error says the report.json there is an earlier run's, and how to write it."""
    import core.experiment.runner as runner
    from core.errors import DamagedFileError

    docs, golden, out, experiment_id = stored
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    folder = copy / "experiments" / experiment_id
    report = (folder / "report.json").read_bytes()

    def damaged(run, spent):
        raise DamagedFileError(f"{folder / 'notes.json'} is not valid JSON (cut short)")

    monkeypatch.setattr(runner, "_build_report", damaged)
    resume, _ = _runs(docs, golden, copy, experiment_id)
    assert main(resume) == 1
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == (
        f"ragtune optimize: {folder / 'notes.json'} is not valid JSON (cut short); {folder / 'report.json'} still "
        f"holds the report of an earlier run, not this one's (the evaluations are stored: once the file is fixed, or "
        f"deleted if it is a result, which is then evaluated again, --resume {experiment_id} writes the report)")
    assert (folder / "report.json").read_bytes() == report
