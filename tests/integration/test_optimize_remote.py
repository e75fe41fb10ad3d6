"""``ragtune optimize --out`` on an S3 bucket (moto's server) and a Blob container (Azurite):
the experiment's spec, study, results and report go to the store, the caches and Milvus Lite
stay in the local working folder, ``report`` and ``--resume`` find the experiment there.
Squad-mini's first 10 questions, the real local model, a space of two configurations."""

from __future__ import annotations

import json
import uuid

import pytest

from core.cli import main
from core.reports import open_files
from tests.support.services import delete_bucket, new_s3_bucket, service
from tests.support.corpora import first_questions

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SPACE = ["--set", "chunking_method=recursive", "--set", "chunk_size=256", "--set", "chunk_overlap=0",
         "--set", "search_mode=vector", "--set", "number_of_chunks=3,5"]


@pytest.fixture(scope="module")
def golden(squad_dir, tmp_path_factory):
    path = first_questions(squad_dir / "golden.jsonl", 10, tmp_path_factory.mktemp("g"))
    return path


@pytest.fixture(params=["s3", "blob"])
def address(request, monkeypatch):
    """An empty remote store's address, with the environment the CLI reaches it through."""
    if request.param == "s3":
        endpoint, bucket, client = new_s3_bucket(monkeypatch)
        request.addfinalizer(lambda: delete_bucket(client, bucket))
        return f"s3://{bucket}/reports", {"endpoint_url": endpoint}
    from azure.storage.blob import BlobServiceClient

    connection = service("RAGTUNE_TEST_AZURITE_CONNECTION_STRING", "azurite.sh")
    monkeypatch.setenv("RAGTUNE_STORAGE_CONNECTION", connection)
    blob = BlobServiceClient.from_connection_string(connection)
    container = f"ragtune-{uuid.uuid4().hex[:16]}"
    blob.create_container(container)
    request.addfinalizer(lambda: blob.delete_container(container))
    return f"{blob.url.rstrip('/')}/{container}/reports", {"connection_string": connection}


def test_optimize_out_on_a_remote_store_then_report_and_resume(address, squad_dir, golden, tmp_path, monkeypatch,
                                                               capsys):
    where, access = address
    work = tmp_path / "work"
    monkeypatch.setenv("RAGTUNE_OUT_DIR", str(work))
    args = ["optimize", "--docs", str(squad_dir / "docs"), "--golden", str(golden), "--optimizer", "random",
            "--out", where, "--json", *SPACE]
    assert main([*args, "--max-evals", "1"]) == 0
    first = json.loads(capsys.readouterr().out)
    experiment_id = first["experiment_id"]
    assert first["location"] == f"{where}/experiments/{experiment_id}/report.json"
    files = open_files(where, **access)
    keys = files.list(f"experiments/{experiment_id}")
    assert {f"experiments/{experiment_id}/{name}" for name in ("spec.json", "study.json", "report.json")} <= set(keys)
    assert sum(1 for k in keys if "/results/" in k) == 1
    stored = json.loads(files.read_bytes(f"experiments/{experiment_id}/report.json"))
    assert stored["leaderboard"][0]["key"] == first["leaderboard"][0]["key"]
    assert (work / "milvus.db").exists() and not (work / "experiments").exists()  # only caches stay local

    page = tmp_path / "experiment.html"
    assert main(["report", experiment_id, "--out", where, "--html", str(page)]) == 0
    assert f"Experiment {experiment_id}" in page.read_text(encoding="utf-8")
    capsys.readouterr()

    # Resuming with a budget of 2 evaluates the other configuration, read from and written to the store.
    assert main([*args, "--resume", experiment_id, "--max-evals", "2"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["counts"]["evaluations"] == 2 and len(again["leaderboard"]) == 2
    assert sum(1 for k in files.list(f"experiments/{experiment_id}") if "/results/" in k) == 2
    assert [r["round"] for r in again["leaderboard"] if r["key"] != first["leaderboard"][0]["key"]] == [2]


def test_resume_of_an_unknown_experiment_names_the_store(address, squad_dir, golden, tmp_path, monkeypatch, capsys):
    where, _ = address
    monkeypatch.setenv("RAGTUNE_OUT_DIR", str(tmp_path / "work"))
    assert main(["optimize", "--docs", str(squad_dir / "docs"), "--golden", str(golden), "--out", where,
                 "--resume", "20990101T000000Z-000000", *SPACE]) == 1
    err = capsys.readouterr().err
    assert "no experiment '20990101T000000Z-000000' to resume in" in err and "AccountKey" not in err
