"""Experiment requests: validation of what the network sends, and the names that follow from them."""

from __future__ import annotations

import hashlib
import json

import pytest

from core.errors import ConfigError
from core.optimization import Configuration
from core.experiment import EvaluationRequest, Experiment
from core.experiment.types import evaluated_event
from core.experiment.requests import golden_instance_id, parse_experiment_request
from core.reports import LocalFiles

from tests.support.experiment_settings import GOLDEN, FakeEmbedding, FakeSettings  # noqa: F401


def test_golden_instance_id_is_deterministic():
    sha = hashlib.sha256(GOLDEN).hexdigest()
    expected = f"golden-{hashlib.sha256(b'hr/g.jsonl').hexdigest()[:16]}-{sha[:16]}"
    assert golden_instance_id("hr/g.jsonl", sha) == expected
    assert golden_instance_id("hr/g.jsonl", "0" * 64) != expected
    assert evaluated_event("abc") == "evaluated-abc"


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
    stored = Experiment(LocalFiles(tmp_path), "missing")
    request = EvaluationRequest("missing", Configuration({"chunk_size": 1}).key, {"chunk_size": 1})
    with pytest.raises(ConfigError, match="no experiment 'missing' is stored"):
        stored.evaluate(request, lambda configuration: {})
    assert list(tmp_path.rglob("*.json")) == []


def test_bad_experiment_ids_are_refused(tmp_path):
    for bad in ("", "..", "a/b", "x" * 201):
        with pytest.raises(ConfigError, match="experiment id"):
            Experiment(LocalFiles(tmp_path), bad)


def test_prepare_refuses_empty_documents_and_unknown_objectives(tmp_path):
    from core.experiment.prepare import prepare_request

    golden = tmp_path / "golden.jsonl"
    golden.write_bytes(GOLDEN)
    (tmp_path / "empty").mkdir()
    files = LocalFiles(tmp_path / "reports")
    base = {"golden": str(golden), "documents": str(tmp_path / "empty"), "optimizer": "random", "max_evals": 2,
            "seed": 0, "objective": None, "space": {}, "vector_store": None}
    with pytest.raises(ConfigError, match="holds no documents"):
        prepare_request(files, "exp-2", base, FakeSettings(tmp_path / "out"))
    with pytest.raises(ConfigError, match="needs a judge model"):
        prepare_request(files, "exp-2", {**base, "documents": str(tmp_path), "objective": "judge.correctness"},
                        FakeSettings(tmp_path / "out"))
    with pytest.raises(ConfigError, match="unknown objective metric 'ndcg@7'; did you mean 'ndcg@"):
        prepare_request(files, "exp-2", {**base, "objective": "ndcg@7"}, FakeSettings(tmp_path / "out"))
    assert not Experiment(files, "exp-2").exists()


@pytest.mark.parametrize("body, message", [
    ({"golden": "s3://b/g\ud800", "documents": "s3://b/d"}, "the body.golden holds a lone surrogate (\\ud800 at character 8), which is not Unicode text"),
    ({"golden": "s3://b/g", "documents": "s3://b/d", "space": {"chunk_size": [10**5000]}},
     "the body.space.chunk_size[0] holds an integer of more than 30 digits"),
    ({"golden": "s3://b/g", "documents": "s3://b/d", "\udfff": 1}, "the body: a field name holds a lone surrogate"),
])
def test_hostile_but_parseable_requests_are_reported(body, message):
    """Surrogates and huge integers come from ``json.loads`` of ``"\\ud800"`` and from code;
    they are reported as one error, never raised."""
    request, errors = parse_experiment_request(body)
    assert request is None and len(errors) == 1 and errors[0].startswith(message)


def test_integers_written_as_strings_are_converted():
    request, errors = parse_experiment_request({"golden": "g", "documents": "d", "max_evals": "20", "seed": "7",
                                                "space": {"chunk_size": ["1000", 200.0], "search_mode": ["vector"]}})
    assert errors == [] and request["max_evals"] == 20 and request["seed"] == 7
    assert request["space"]["chunk_size"] == [1000, 200] and request["space"]["search_mode"] == ["vector"]
    _, errors = parse_experiment_request({"golden": "g", "documents": "d", "max_evals": "2.5"})
    assert errors == ["'max_evals' must be an integer from 1 to 1000, got '2.5'"]
