"""The experiment report on the one report envelope (``core.experiment.report.build_report`` over
``core.evaluation.envelope.envelope``): the experiment's own schema version, ``experiment_id`` and
``complete`` at its head, the golden file and the documents before its body, the caller's extra
fields after it, every field in the order the report always had. A real study over a search space
of two configurations is asked and told; expected values are read off it and computed by hand."""

from __future__ import annotations

from core.experiment.report import EXPERIMENT_SCHEMA_VERSION, build_report
from core.experiment.spec import ExperimentSpec
from core.optimization import RandomSampler, Study, default_space

#: The experiment report's fields, in their order (as written before the report moved onto the
#: envelope: ``schema_version`` and ``kind``, the head, ``golden``, ``corpus``, the body).
ORDER = ["schema_version", "kind", "experiment_id", "complete", "golden", "corpus", "space", "optimizer",
         "objective", "leaderboard", "best", "counts", "results", "study", "models", "stop", "fidelity", "front"]


def _study(max_evals):
    # 2 valid configurations: one chunk size, no overlap, number_of_chunks 3 or 5
    space = default_space({"m": 200}, ["f"]).with_overrides({
        "chunk_size": [128], "chunk_overlap": [0], "number_of_chunks": [3, 5], "search_mode": ["vector"]})
    return Study(space, RandomSampler(), objective_metric="mrr", seed=7, max_evals=max_evals)


def _spec():
    return ExperimentSpec(experiment_id="exp-7", golden="https://acct.blob.core.windows.net/c/golden.jsonl?sig=secret",
                          documents="/data/docs", objective="mrr", optimizer="random", max_evals=2, seed=7,
                          golden_sha256="ab" * 32, n_questions=4, corpus_fingerprint="cd" * 32)


def test_the_report_keeps_its_head_golden_corpus_and_body_in_order():
    study = _study(max_evals=2)
    first, second = study.ask(2)
    study.tell(first, {"mrr": 0.25})
    results = {first.key: {"status": "ok", "error": None, "metrics": {"mrr": 0.25}, "stored": False}}
    spec = _spec()
    report = build_report(spec, study, results)
    assert list(report) == ORDER
    assert report["schema_version"] == EXPERIMENT_SCHEMA_VERSION and report["kind"] == "experiment"
    # one of two asked configurations is told: the study is not finished
    assert (report["experiment_id"], report["complete"]) == ("exp-7", False)
    # the Blob URL loses its query string (the SAS token); the rest comes from the spec
    assert report["golden"] == {"path": "https://acct.blob.core.windows.net/c/golden.jsonl", "sha256": "ab" * 32,
                                "format": "ragtune", "n_questions": 4}
    assert report["corpus"] == {"path": "/data/docs", "fingerprint": "cd" * 32}
    assert report["counts"] == {"evaluations": 1, "failed": 0, "stored": 0, "pending": 1}
    assert report["best"] == {"key": first.key, "score": 0.25, "configuration": dict(first)}

    study.tell(second, {"mrr": 0.5})
    report = build_report(spec, study, results, {"timings_s": {"total_s": 1.0}, "counts": {"workers": 2},
                                                 "golden": {"n_labelled": 4}})
    # extra fields: a new one goes last, counts and golden are merged key by key in place
    assert list(report) == [*ORDER, "timings_s"]
    assert report["complete"] is True  # both configurations of the budget of 2 are told
    assert report["counts"] == {"evaluations": 2, "failed": 0, "stored": 0, "pending": 0, "workers": 2}
    assert list(report["golden"]) == ["path", "sha256", "format", "n_questions", "n_labelled"]
    assert report["best"]["key"] == second.key and report["best"]["score"] == 0.5
