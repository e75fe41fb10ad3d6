"""A short experiment end to end on squad-mini: the real local model, Milvus Lite, the
extractive baseline; then the same experiment again, which must build no collection and
embed nothing (counters, not time)."""

from __future__ import annotations

import json

import pytest

from core.models import LOCAL_MODEL_ID, LocalEmbeddingModel
from core.optimization.runner import ExperimentOptions, run_experiment

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def golden(squad_dir, tmp_path_factory):
    lines = (squad_dir / "golden.jsonl").read_text(encoding="utf-8").splitlines()[:15]
    path = tmp_path_factory.mktemp("g") / "golden.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_experiment_then_a_free_rerun(squad_dir, golden, tmp_path):
    model = LocalEmbeddingModel()
    options = ExperimentOptions(max_evals=5, seed=3, n_random_nodes=3, show_progress=False,
                                overrides={"chunk_size": (128,), "chunking_method": ("recursive",)})
    seen = []

    class Recorder:
        def on_status_change(self, level, message, step=None):
            pass

        def on_pattern_creation(self, payload, evaluation_results):
            seen.append((payload, len(evaluation_results)))

    first = run_experiment(squad_dir / "docs", golden, out_dir=tmp_path, embedding_models={LOCAL_MODEL_ID: model},
                           options=options, handlers=[Recorder()])
    json.dumps(first, allow_nan=False)
    assert first["counts"]["evaluations"] == 5 and first["counts"]["failed"] == 0
    board = first["leaderboard"]
    # one collection per distinct chunking (only chunk_overlap varies here: 0 or 32 at size 128)
    assert first["counts"]["collections_built"] == len({r["parameters"]["chunk_overlap"] for r in board})
    assert [r["rank"] for r in board] == [1, 2, 3, 4, 5]
    assert [r["score"] for r in board] == sorted((r["score"] for r in board), reverse=True)
    assert first["best"]["score"] == board[0]["score"]
    assert [p["iteration"] for p, _ in seen] == [1, 2, 3, 4, 5] and all(n == 15 for _, n in seen)
    assert seen[0][0]["settings"]["vector_store"]["backend"] == "milvus-lite"
    assert (tmp_path / "experiments" / first["experiment_id"] / "report.json").is_file()
    from core.cli import main

    assert main(["report", first["experiment_id"], "--out", str(tmp_path), "--json"]) == 0

    again = run_experiment(squad_dir / "docs", golden, out_dir=tmp_path, embedding_models={LOCAL_MODEL_ID: model},
                           options=options)
    # same seed, same data: the same configurations in the same order, all from stored results
    assert [t["configuration"] for t in again["study"]["trials"]] == [t["configuration"] for t in first["study"]["trials"]]
    assert again["counts"]["stored"] == 5
    assert again["counts"]["collections_built"] == 0 and again["counts"]["texts_embedded"] == 0
