"""``ragtune report`` over experiments: latest, stopped ones, and what an unknown id lists."""

from __future__ import annotations

import json

from core.cli import main


def _experiment(out, experiment_id: str, *, finished: bool) -> None:
    folder = out / "experiments" / experiment_id
    folder.mkdir(parents=True)
    (folder / "study.json").write_text("{}")
    if finished:
        (folder / "report.json").write_text(json.dumps({
            "experiment_id": experiment_id, "golden": {"n_questions": 3}, "corpus": {"n_documents": 2},
            "space": {"n_valid": 4}, "optimizer": {"name": "gam", "seed": 0, "max_evals": 2}, "objective": "mrr",
            "leaderboard": [], "best": None,
            "counts": {"evaluations": 0, "failed": 0, "stored": 0, "collections_built": 0, "texts_embedded": 0},
            "timings_s": {"total_s": 1.0}}))


def test_latest_falls_back_to_the_newest_finished_experiment(tmp_path, capsys):
    _experiment(tmp_path, "20260101T000000Z-aaaaaa", finished=True)
    _experiment(tmp_path, "20260102T000000Z-bbbbbb", finished=False)
    assert main(["report", "--out", str(tmp_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["experiment_id"] == "20260101T000000Z-aaaaaa"


def test_a_stopped_experiment_says_how_to_resume(tmp_path, capsys):
    _experiment(tmp_path, "20260102T000000Z-bbbbbb", finished=False)
    assert main(["report", "20260102T000000Z-bbbbbb", "--out", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "has no report yet" in err and "ragtune optimize --resume 20260102T000000Z-bbbbbb" in err


def test_an_unknown_id_lists_the_experiments(tmp_path, capsys):
    _experiment(tmp_path, "20260101T000000Z-aaaaaa", finished=True)
    assert main(["report", "nope", "--out", str(tmp_path)]) == 1
    assert "experiments: 20260101T000000Z-aaaaaa" in capsys.readouterr().err
