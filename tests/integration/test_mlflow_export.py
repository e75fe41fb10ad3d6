"""Reports logged to a real local MLflow tracking store (SQLite and artifacts in a temporary
folder), read back with MLflow's own client."""

from __future__ import annotations

import json

import pytest

from core.reports.mlflow_export import log_report, metric_name
from tests.support.reports import experiment_report, retrieval_report

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_metric_names_are_mlflow_safe():
    assert metric_name("success@5") == "found_at_5" and metric_name("ndcg@10") == "ndcg_at_10"
    assert metric_name("unitxt.answer_correctness") == "unitxt.answer_correctness"


def test_retrieval_and_experiment_reports_logged_once(tmp_path, monkeypatch):
    from mlflow.tracking import MlflowClient

    monkeypatch.chdir(tmp_path)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    report = retrieval_report()
    ids = log_report(report, tracking_uri=uri)
    assert len(ids) == 3  # the report's parent run, then setups A and B
    client = MlflowClient(uri)
    parent = client.get_run(ids[0])
    assert parent.data.tags["ragtune.report_id"] == f"retrieval/{report['run_id']}"
    artifact = client.download_artifacts(ids[0], "report.json", str(tmp_path))
    assert json.loads(open(artifact, encoding="utf-8").read())["run_id"] == report["run_id"]
    a = client.get_run(ids[1])
    assert a.data.tags["mlflow.parentRunId"] == ids[0]
    assert a.data.params["setup"] == "A" and a.data.params["chunk_size"] == "256"
    assert a.data.metrics["doc.found_at_3"] == 0.75  # by hand: q1, q2, q4 within 3
    assert a.data.metrics["doc.mrr"] == pytest.approx((1 + 1 / 3 + 1 / 2) / 4)
    assert a.data.metrics["search_median_ms"] == 5.0
    again = log_report(report, tracking_uri=uri)  # nothing twice
    assert again[0] == ids[0] and sorted(again) == sorted(ids)

    exp_ids = log_report(experiment_report(), tracking_uri=uri)
    assert len(exp_ids) == 4
    best = client.get_run(exp_ids[1])
    assert best.data.metrics["mrr"] == 0.7 and best.data.params["chunk_size"] == "256"
    assert client.get_run(exp_ids[3]).data.params["status"] == "failed"
    assert "n_questions" not in best.data.params  # a report without rungs

    rungs = experiment_report("20260101T000000Z-ffffff")  # with rungs: which scores are over a subset
    rungs["leaderboard"][0].update(n_questions=4, fully_evaluated=True)
    rungs["leaderboard"][1].update(n_questions=2, fully_evaluated=False)
    ids = log_report(rungs, tracking_uri=uri)
    assert [(client.get_run(i).data.params["n_questions"], client.get_run(i).data.params["fully_evaluated"])
            for i in ids[1:3]] == [("4", "True"), ("2", "False")]


def test_cli_logs_to_the_default_local_store(tmp_path, monkeypatch):
    from mlflow.tracking import MlflowClient

    from core.cli import main
    from core.reports import LocalFiles, ReportStore

    monkeypatch.chdir(tmp_path)
    store = ReportStore(LocalFiles(tmp_path / "out"))
    store.save_run("20260101T000000Z-aaaaaa", retrieval_report())
    assert main(["report", "latest", "--out", str(tmp_path / "out"), "--mlflow"]) == 0
    assert (tmp_path / "mlruns" / "mlflow.db").is_file()
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("ragtune golden.jsonl").experiment_id])
    assert len(runs) == 3
    assert (tmp_path / "mlruns" / "artifacts").is_dir()
