"""StoredExperiment: an experiment's steps over a Files store (local folder here)."""

from __future__ import annotations

import hashlib
import json

import pytest

from core.errors import ConfigError
from core.optimization import Configuration
from core.optimization.stored import (StoredExperiment, evaluated_event, failed_outcome, golden_instance_id,
                                      parse_evaluation_message, parse_experiment_request)
from core.reports import LocalFiles

GOLDEN = b'{"question": "What is the deductible?", "expected": ["plan.md"]}\n'


class FakeEmbedding:
    model_id = "fake-embedding"
    max_input_tokens = 256


class FakeSettings:
    """What ``prepare`` and ``evaluate`` read from ``Settings``."""

    vector_store = "milvus-lite"

    def __init__(self, out_dir):
        self.out_dir = str(out_dir)

    def embedding_model(self):
        return FakeEmbedding()

    def embedding_models(self):
        model = FakeEmbedding()
        return {model.model_id: model}

    def reranker(self):
        return None

    def chat_model(self):
        return None

    def judge_model(self):
        return None


@pytest.fixture
def experiment(tmp_path):
    golden = tmp_path / "golden.jsonl"
    golden.write_bytes(GOLDEN)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "plan.md").write_text("The deductible is 500 dollars.")
    request, errors = parse_experiment_request({
        "golden": str(golden), "documents": str(tmp_path / "docs"),
        "optimizer": "random", "max_evals": 2, "objective": "mrr",
        "space": {"chunking_method": ["recursive"], "chunk_size": [256], "chunk_overlap": [0],
                  "search_mode": ["vector"], "number_of_chunks": [3, 5]}})
    assert errors == []
    stored = StoredExperiment(LocalFiles(tmp_path / "reports"), "exp-1")
    assert stored.prepare(request, FakeSettings(tmp_path / "out")) == {"objective": "mrr", "n_valid": 2, "max_evals": 2}
    return stored


def test_golden_instance_id_is_deterministic():
    sha = hashlib.sha256(GOLDEN).hexdigest()
    expected = f"golden-{hashlib.sha256(b'hr/g.jsonl').hexdigest()[:16]}-{sha[:16]}"
    assert golden_instance_id("hr/g.jsonl", sha) == expected
    assert golden_instance_id("hr/g.jsonl", "0" * 64) != expected
    assert evaluated_event("abc") == "evaluated-abc"


def test_message_round_trip_and_errors(experiment):
    (configuration,) = experiment.ask()
    message = experiment.evaluation_message("inst-1", configuration)
    assert parse_evaluation_message(json.dumps(message).encode()) == message
    assert message["golden"]["sha256"] == hashlib.sha256(GOLDEN).hexdigest()
    assert message["key"] == Configuration(configuration).key
    for broken, where in [({**message, "v": 2}, "version"), ({**message, "instance_id": ""}, "instance_id"),
                          ({**message, "experiment_id": "../x"}, "experiment_id"),
                          ({**message, "golden": {"address": "g"}}, "'golden'"),
                          ({**message, "configuration": {**configuration, "chunk_size": 512}}, "does not match")]:
        with pytest.raises(ConfigError, match=where):
            parse_evaluation_message(json.dumps(broken))


def test_a_changed_golden_file_fails_the_evaluation_and_is_stored(experiment, tmp_path):
    (configuration,) = experiment.ask()
    message = experiment.evaluation_message("inst-1", configuration)
    (tmp_path / "golden.jsonl").write_bytes(GOLDEN + GOLDEN.replace(b"deductible", b"copay"))
    outcome = experiment.evaluate(message, FakeSettings(tmp_path / "out"))
    assert outcome["score"] is None and outcome["stored"] is False
    assert "changed since the experiment started" in outcome["error"]
    assert experiment.results()[message["key"]]["status"] == "failed"
    # Delivered again: the stored failure is returned, not evaluated anew.
    again = experiment.evaluate(message, FakeSettings(tmp_path / "out"))
    assert again["stored"] is True and again["error"] == outcome["error"]


def test_tell_is_idempotent_and_the_report_hides_query_strings(experiment):
    # A request read from an older state, with a SAS on the documents' address.
    request = experiment.request()
    request["documents"] = "https://acct.blob.core.windows.net/docs/hr?sv=1&sig=SECRET"
    experiment.files.write_bytes("experiments/exp-1/request.json", json.dumps(request).encode())
    (first,) = experiment.ask()
    assert experiment.ask() == [first]  # pending comes back first
    outcome = {**failed_outcome(first, ""), "score": 0.25, "error": None}
    assert experiment.tell([outcome]) == {"evaluated": 1, "failed": 0, "best_score": 0.25,
                                          "best_key": Configuration(first).key}
    assert experiment.tell([outcome])["evaluated"] == 1  # a retried tell changes nothing
    report = experiment.build_report()
    assert report["complete"] is False and report["counts"] == {"evaluations": 1, "failed": 0, "pending": 0}
    assert report["corpus"]["path"] == "https://acct.blob.core.windows.net/docs/hr"
    assert "SECRET" not in json.dumps(report)


def test_bad_experiment_ids_are_refused(tmp_path):
    for bad in ("", "..", "a/b", "x" * 201):
        with pytest.raises(ConfigError, match="experiment id"):
            StoredExperiment(LocalFiles(tmp_path), bad)


def test_request_validation_lists_every_problem():
    request, errors = parse_experiment_request({"documents": "", "max_evals": True, "vector_store": "faiss"})
    assert request is None
    assert len(errors) == 4  # golden missing, documents empty, max_evals a bool, vector_store unknown
    request, errors = parse_experiment_request({"documents": "d"}, golden_required=False)
    assert errors == [] and request["golden"] is None and request["max_evals"] == 12


@pytest.mark.parametrize("body, message", [
    ({"golden": "/etc/passwd", "documents": "s3://b/docs"}, "'golden' must be an s3:// or Blob storage URL"),
    ({"golden": "s3://b/g.jsonl", "documents": "file:///srv"}, "'documents' must be an s3:// or Blob storage URL"),
    ({"golden": "https://a.blob.core.windows.net/c/g.jsonl?sv=1&sig=S", "documents": "s3://b/d"},
     "must not carry a query string"),
    ({"golden": "s3://b/g\x00.jsonl", "documents": "s3://b/d"}, "without control characters"),
    ({"golden": "s3://b/" + "g" * 3000, "documents": "s3://b/d"}, "at most 2048 characters"),
    ({"golden": "s3://b/g", "documents": "s3://b/d", "space": {"system_message_text": ["x" * 40000]}},
     "at most 32768 are accepted"),
    ({"golden": "s3://b/g", "documents": "s3://b/d", "objective": "mrr@5"}, "unknown objective metric 'mrr@5'"),
    ({"golden": "s3://b/g", "documents": "s3://b/d", "seed": 2**70}, "'seed' must be an integer from 0 to 4294967295"),
    ({"golden": "s3://b/g", "documents": "s3://b/d", "space": []}, "'space' must be an object"),
])
def test_requests_from_the_network(body, message):
    request, errors = parse_experiment_request(body, remote_only=True, blob_endpoint=OWN)
    assert request is None and any(message in e for e in errors), errors


OWN = "https://ragtunedata.blob.core.windows.net"


@pytest.mark.parametrize("address", [
    "https://attacker.blob.evil.example/c/golden.jsonl",       # ".blob." in another domain
    "https://other.blob.core.windows.net/c/golden.jsonl",      # another storage account
    "https://ragtunedata.blob.core.windows.net.evil.example/c/g.jsonl",
    "http://ragtunedata.blob.core.windows.net/c/g.jsonl",      # not the endpoint's scheme
    "https://ragtunedata.blob.core.windows.net/",              # no container or key
    "https://user:pass@ragtunedata.blob.core.windows.net/c/g.jsonl",
    "s3://AKIA:secret@bucket/g.jsonl",
    "s3://bucket",
])
def test_network_requests_reach_only_the_apps_own_storage(address):
    request, errors = parse_experiment_request({"golden": address, "documents": "s3://b/docs"}, remote_only=True,
                                               blob_endpoint=OWN)
    assert request is None and len(errors) == 1 and errors[0].startswith("'golden' must")


def test_without_blob_storage_only_s3_is_accepted():
    request, errors = parse_experiment_request({"golden": f"{OWN}/c/g.jsonl", "documents": "s3://b/docs"},
                                               remote_only=True, blob_endpoint=None)
    assert request is None and "no Blob storage is configured" in errors[0]


def test_remote_requests_that_pass():
    request, errors = parse_experiment_request(
        {"golden": "http://127.0.0.1:10000/devstoreaccount1/golden/g.jsonl", "documents": "s3://bucket/docs",
         "objective": "judge.correctness", "space": None}, remote_only=True,
        blob_endpoint="http://127.0.0.1:10000/devstoreaccount1")
    assert errors == [] and request["space"] == {} and request["objective"] == "judge.correctness"
    request, errors = parse_experiment_request({"golden": f"{OWN}/golden/hr/g.jsonl", "documents": f"{OWN}/docs/hr"},
                                               remote_only=True, blob_endpoint=OWN)
    assert errors == []


def test_unknown_experiments_are_not_evaluated(tmp_path):
    stored = StoredExperiment(LocalFiles(tmp_path), "missing")
    with pytest.raises(ConfigError, match="no experiment 'missing' is stored"):
        stored.evaluate({"key": "k", "configuration": {}}, FakeSettings(tmp_path))
    assert list(tmp_path.rglob("*.json")) == []


def test_prepare_refuses_empty_documents_and_unknown_objectives(tmp_path):
    golden = tmp_path / "golden.jsonl"
    golden.write_bytes(GOLDEN)
    (tmp_path / "empty").mkdir()
    stored = StoredExperiment(LocalFiles(tmp_path / "reports"), "exp-2")
    base = {"golden": str(golden), "documents": str(tmp_path / "empty"), "optimizer": "random", "max_evals": 2,
            "seed": 0, "objective": None, "space": {}, "vector_store": None}
    with pytest.raises(ConfigError, match="holds no documents"):
        stored.prepare(base, FakeSettings(tmp_path / "out"))
    with pytest.raises(ConfigError, match="needs a judge model"):
        stored.prepare({**base, "documents": str(tmp_path), "objective": "judge.correctness"},
                       FakeSettings(tmp_path / "out"))
    with pytest.raises(ConfigError, match="unknown objective metric 'ndcg@7'; did you mean 'ndcg@"):
        stored.prepare({**base, "objective": "ndcg@7"}, FakeSettings(tmp_path / "out"))
    assert not stored.exists()
