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


def test_the_printed_leaderboard_shows_each_configurations_texts_and_tokens(tmp_path, capsys):
    """Three rows: costs recorded with tokens, recorded with tokens unknown (an endpoint
    without ``usage``), and not recorded (an older report): ``—`` where unknown."""
    def row(rank, cost):
        return {"rank": rank, "trial": rank - 1, "key": f"k{rank}", "status": "complete", "score": 0.9 - rank / 10,
                "ci_low": None, "ci_high": None, "error": None, "duration_s": 2.5,
                "parameters": {"chunking_method": "recursive", "chunk_size": 256, "number_of_chunks": 5,
                               "search_mode": "vector", "foundation_model": "gpt"}, **({"cost": cost} if cost else {})}

    experiment_id = "20260101T000000Z-cccccc"
    folder = tmp_path / "experiments" / experiment_id
    folder.mkdir(parents=True)
    (folder / "study.json").write_text("{}")
    (folder / "report.json").write_text(json.dumps({
        "experiment_id": experiment_id, "golden": {"n_questions": 3}, "corpus": {"n_documents": 2},
        "space": {"n_valid": 4}, "optimizer": {"name": "gam", "seed": 0, "max_evals": 3}, "objective": "mrr",
        "leaderboard": [row(1, {"texts_embedded": 120, "tokens": 3456}), row(2, {"texts_embedded": 0, "tokens": None}),
                        row(3, None)],
        "best": None, "counts": {"evaluations": 3, "failed": 0, "stored": 0, "collections_built": 1,
                                 "texts_embedded": 120}, "timings_s": {"total_s": 9.0}}))
    assert main(["report", experiment_id, "--out", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = next(line for line in lines if line.startswith("rank"))
    assert header.split()[-3:] == ["seconds", "embedded", "tokens"]
    rows = [line.split() for line in lines if line.strip()[:1].isdigit()]
    assert [r[-3:] for r in rows] == [["2.5", "120", "3456"], ["2.5", "0", "—"], ["2.5", "—", "—"]]


def test_with_rungs_the_printed_leaderboard_marks_configurations_not_scored_on_every_question():
    """A configuration stopped on a rung, one waiting for its next rung and one promoted when
    the budget ran out each get a line under their row; the header names the rungs and the
    budget in configurations, and the stop reason closes the output."""
    from core.cli.formats import format_experiment

    def row(rank, full, n, fidelity):
        return {"rank": rank, "trial": rank - 1, "key": f"k{rank}", "status": "complete", "score": 0.9 - rank / 10,
                "ci_low": None, "ci_high": None, "error": None, "duration_s": 1.0, "fully_evaluated": full,
                "n_questions": n, "fidelity": fidelity,
                "parameters": {"chunking_method": "recursive", "chunk_size": 256, "number_of_chunks": 10,
                               "search_mode": "vector", "foundation_model": "extractive"}}

    report = {
        "experiment_id": "e1", "golden": {"n_questions": 50}, "corpus": {"n_documents": 2}, "space": {"n_valid": 9},
        "optimizer": {"name": "screen", "seed": 0, "max_evals": 4}, "objective": "mrr",
        "fidelity": {"sizes": [16, 50]}, "stop": {"reason": "budget", "text": "the budget of configurations ran out"},
        "leaderboard": [row(1, True, 50, {"verdict": "complete"}),
                        row(2, False, 16, {"verdict": "stop", "reason": "worse than k1 (p = 0.01)"}),
                        row(3, False, 16, {"verdict": "promote", "waiting": True}),
                        row(4, False, 16, {"verdict": "promote", "waiting": False})],
        "best": None, "counts": {"evaluations": 4, "failed": 0, "stored": 0, "collections_built": 1,
                                 "texts_embedded": 10}, "timings_s": {"total_s": 3.0}}
    lines = format_experiment(report).splitlines()
    assert "optimizer screen (seed 0, up to 4 configurations on rungs of 16, 50 questions)" in lines[0]
    under = [line.strip() for line in lines if line.startswith("     scored on")]
    assert under == [
        "scored on 16 of 50 questions: stopped, worse than k1 (p = 0.01)",
        "scored on 16 of 50 questions: waiting: on the questions both saw it scored below the best configuration "
        "scored on every question",
        "scored on 16 of 50 questions: promoted, not scored further before the search ended"]
    assert any(line.startswith("cost: 4 configurations (0 failed") for line in lines)
    assert "stopped: the budget of configurations ran out" in lines
    # one rung (a first rung at least as large as the golden file): every question at once
    one = dict(report, fidelity={"sizes": [50]}, leaderboard=report["leaderboard"][:1])
    assert "optimizer screen (seed 0, up to 4 evaluations)" in format_experiment(one).splitlines()[0]
    assert not any("also" in line or "reranker=" in line for line in lines)  # nothing else differs


def test_the_best_line_says_how_many_configurations_its_interval_does_not_tell_apart():
    """By hand: the best's interval is 0.60-0.80; k2 (0.55-0.75) and k3 (0.40-0.60, touching)
    overlap it, k4 (0.20-0.39) does not, k5 was stopped on a rung (not counted) and k6 failed."""
    from core.cli.formats import format_experiment

    def row(rank, score, ci, full=True, status="complete"):
        return {"rank": rank, "trial": rank, "key": f"k{rank}", "status": status, "score": score,
                "ci_low": ci[0], "ci_high": ci[1], "error": "boom" if status == "failed" else None, "duration_s": 1.0,
                "fully_evaluated": full, "n_questions": 30 if full else 10, "fidelity": None,
                "parameters": {"chunking_method": "recursive", "chunk_size": 256, "number_of_chunks": 10,
                               "search_mode": "vector", "foundation_model": "extractive"}}

    board = [row(1, 0.7, (0.6, 0.8)), row(2, 0.65, (0.55, 0.75)), row(3, 0.5, (0.4, 0.6)), row(4, 0.3, (0.2, 0.39)),
             row(5, 0.7, (0.5, 0.9), full=False), row(6, None, (None, None), status="failed")]
    report = {
        "experiment_id": "e1", "golden": {"n_questions": 30}, "corpus": {"n_documents": 2}, "space": {"n_valid": 9},
        "optimizer": {"name": "random", "seed": 0, "max_evals": 6}, "objective": "mrr", "leaderboard": board,
        "best": {"key": "k1", "score": 0.7, "configuration": board[0]["parameters"]},
        "counts": {"evaluations": 6, "failed": 1, "stored": 0, "collections_built": 1, "texts_embedded": 10},
        "timings_s": {"total_s": 3.0}}
    lines = format_experiment(report).splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("best: mrr = 0.700"))
    assert lines[at + 1].strip() == ("the 95% intervals of 2 other configurations scored on every question overlap "
                                     "the best's: these questions do not tell them apart")
    alone = dict(report, leaderboard=[board[0], board[3]])
    assert not any("do not tell them apart" in line for line in format_experiment(alone).splitlines())


def test_the_printed_leaderboard_names_the_reranker_depth_and_model_where_they_differ():
    """The rows' reranker, retrieval depth and embedding model have no column of their own:
    where they differ between rows an ``also`` column names them; a parameter every row shares
    (the vector store) is left to the best line."""
    from core.cli.formats import format_experiment

    def row(rank, reranker, depth, model):
        return {"rank": rank, "trial": rank - 1, "key": f"k{rank}", "status": "complete", "score": 0.9 - rank / 10,
                "ci_low": None, "ci_high": None, "error": None, "duration_s": 1.0,
                "parameters": {"chunking_method": "recursive", "chunk_size": 256, "number_of_chunks": 10,
                               "search_mode": "vector", "foundation_model": "extractive", "reranker": reranker,
                               "retrieval_depth": depth, "embedding_model": model, "vector_store": "milvus-lite"}}

    report = {
        "experiment_id": "e1", "golden": {"n_questions": 50}, "corpus": {"n_documents": 2}, "space": {"n_valid": 9},
        "optimizer": {"name": "screen", "seed": 0, "max_evals": 3}, "objective": "mrr",
        "leaderboard": [row(1, "local:ms-marco-MiniLM-L-12-v2", 40, "local:bge-small-en-v1.5"),
                        row(2, "none", None, "local:bge-small-en-v1.5"),
                        row(3, "local:ms-marco-MiniLM-L-12-v2", 20, "local:bge-small-en-v1.5")],
        "best": None, "counts": {"evaluations": 3, "failed": 0, "stored": 0, "collections_built": 1,
                                 "texts_embedded": 10}, "timings_s": {"total_s": 3.0}}
    lines = format_experiment(report).splitlines()
    header = next(line for line in lines if line.startswith("rank"))
    assert header.endswith("  also")
    rows = [line for line in lines if line.lstrip().startswith(("1 ", "2 ", "3 "))]
    assert rows[0].endswith("  reranker=local:ms-marco-MiniLM-L-12-v2 depth=40")
    assert rows[1].endswith("  reranker=none depth=-")
    assert rows[2].endswith("  reranker=local:ms-marco-MiniLM-L-12-v2 depth=20")
    # one depth among the reranked rows (none where nothing is reranked): the depth is no difference
    report["leaderboard"] = report["leaderboard"][:2]
    rows = [line for line in format_experiment(report).splitlines() if line.lstrip().startswith(("1 ", "2 "))]
    assert rows[0].endswith("  reranker=local:ms-marco-MiniLM-L-12-v2") and rows[1].endswith("  reranker=none")


def test_a_chunking_comparison_is_printed_and_written_as_a_page(tmp_path, capsys):
    """``report ID`` finds a stored compare-chunking run: text as compare-chunking prints it,
    ``--html`` its page (best, ties, McNemar counts), ``--csv`` refused with what to use."""
    from tests.support.reports import comparison_report

    report = comparison_report("20260103T000000Z-cccccc")
    folder = tmp_path / "chunking" / "runs" / report["run_id"]
    folder.mkdir(parents=True)
    (folder / "report.json").write_text(json.dumps(report))
    assert main(["report", report["run_id"], "--out", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "best: recursive-64-8-plain (found 15 of 20); ties" in text and "recursive, sentence" in text
    page = tmp_path / "chunking.html"
    assert main(["report", report["run_id"], "--out", str(tmp_path), "--html", str(page)]) == 0
    html = page.read_text(encoding="utf-8")
    assert "Chunking comparison 20260103T000000Z-cccccc" in html and "<b>recursive-64-8-plain</b>" in html
    assert main(["report", report["run_id"], "--out", str(tmp_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["best"]["counted"] == 15
    assert main(["report", report["run_id"], "--out", str(tmp_path), "--csv", str(tmp_path / "x.csv")]) == 1
    assert "write it with --html FILE" in capsys.readouterr().err and not (tmp_path / "x.csv").exists()
