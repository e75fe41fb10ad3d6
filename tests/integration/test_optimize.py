"""A short experiment end to end on squad-mini: the real local model, Milvus Lite, the
extractive baseline; then the same experiment again, which must build no collection and
embed nothing (counters, not time)."""

from __future__ import annotations

import dataclasses
import json
import logging

import pytest

from core.models import LOCAL_MODEL_ID, LocalEmbeddingModel
from core.cli.formats import format_experiment
from core.experiment.runner import ExperimentOptions, run_experiment
from tests.support.corpora import first_questions

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def golden(squad_dir, tmp_path_factory):
    path = first_questions(squad_dir / "golden.jsonl", 15, tmp_path_factory.mktemp("g"))
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


def test_the_space_can_compare_vector_stores(squad_dir, golden, tmp_path):
    """With ``vector_store`` listing Milvus Lite and PostgreSQL, both are evaluated and every
    configuration records which store and collection it used, never credentials."""
    from core.vectorstores import PGVectorConfig, get_vector_store
    from tests.support.services import service

    pg = PGVectorConfig(dsn=service("RAGTUNE_TEST_PG_DSN", "postgres.sh"))
    model = LocalEmbeddingModel()
    options = ExperimentOptions(
        optimizer="random", max_evals=4, seed=1, show_progress=False,
        overrides={"vector_store": ("milvus-lite", "pgvector"), "chunk_size": (128,), "chunking_method": ("recursive",),
                   "chunk_overlap": (32,), "search_mode": ("vector",), "number_of_chunks": (3, 5)},
    )
    report = run_experiment(squad_dir / "docs", golden, out_dir=tmp_path, embedding_models={LOCAL_MODEL_ID: model},
                            vector_store_configs={"pgvector": pg}, options=options)
    assert report["space"]["n_valid"] == 4 and report["counts"]["evaluations"] == 4 and report["counts"]["failed"] == 0
    results = [json.loads(p.read_text()) for p in (tmp_path / "experiments" / report["experiment_id"] / "results").glob("*.json")]
    bindings = {r["configuration"]["vector_store"]: r["store_binding"] for r in results}
    assert set(bindings) == {"milvus-lite", "pgvector"}
    assert bindings["pgvector"]["backend"] == "pgvector" and bindings["milvus-lite"]["location"].endswith("milvus.db")
    # the same chunks and embeddings in both stores: the same retrieval at the same k
    by = {(r["configuration"]["vector_store"], r["configuration"]["number_of_chunks"]): r["metrics"]["mrr"] for r in results}
    for k in (3, 5):
        assert by[("pgvector", k)] == pytest.approx(by[("milvus-lite", k)], abs=0.01)
    get_vector_store(model, pg, bindings["pgvector"]["collection"]).delete_collection()


def _two_of_three(squad_dir, golden, tmp_path):
    """(model, options, report) of a random search that evaluated 2 of a 3-configuration space."""
    model = LocalEmbeddingModel()
    options = ExperimentOptions(optimizer="random", max_evals=2, seed=4, show_progress=False,
                                overrides={"chunk_size": (128,), "chunking_method": ("recursive",), "chunk_overlap": (0,),
                                           "search_mode": ("vector",), "number_of_chunks": (3, 5, 10)})
    first = run_experiment(squad_dir / "docs", golden, out_dir=tmp_path, embedding_models={LOCAL_MODEL_ID: model},
                           options=options)
    return model, options, first


def test_resume_keeps_its_data_settings_and_costs(squad_dir, golden, tmp_path):
    """A resumed experiment refuses other data, keeps its optimizer, and its costs add up."""
    import dataclasses

    from core.errors import ConfigError

    model, options, first = _two_of_three(squad_dir, golden, tmp_path)
    assert first["counts"]["collections_built"] == 1 and first["counts"]["texts_embedded"] > 0
    other = tmp_path / "other.jsonl"
    other.write_text(golden.read_text(encoding="utf-8").split("\n", 1)[1], encoding="utf-8")  # one question less
    resume = dataclasses.replace(options, experiment_id=first["experiment_id"], optimizer="gam", seed=99)
    with pytest.raises(ConfigError, match="was run on other data: golden_sha256"):
        run_experiment(squad_dir / "docs", other, out_dir=tmp_path, embedding_models={LOCAL_MODEL_ID: model},
                       options=dataclasses.replace(resume))
    again = run_experiment(squad_dir / "docs", golden, out_dir=tmp_path, embedding_models={LOCAL_MODEL_ID: model},
                           options=dataclasses.replace(resume))
    assert again["optimizer"]["name"] == "random" and again["optimizer"]["seed"] == 4
    assert again["started_at"] == first["started_at"]
    # Nothing new was built or embedded: the costs are the first run's.
    assert again["counts"]["collections_built"] == first["counts"]["collections_built"]
    assert again["counts"]["texts_embedded"] == first["counts"]["texts_embedded"]
    assert again["counts"]["evaluations"] == 2
    assert (first["counts"]["runs"], again["counts"]["runs"]) == (1, 2)
    # Each run's distinct texts are summed: the resumed run read from the cache what the first embedded.
    assert again["counts"]["texts_unique"] == again["counts"]["texts_embedded"] + again["counts"]["texts_from_cache"]
    # A larger budget on resume: the third and last configuration of the space is evaluated.
    wider = run_experiment(squad_dir / "docs", golden, out_dir=tmp_path, embedding_models={LOCAL_MODEL_ID: model},
                           options=dataclasses.replace(resume, resume_budget=5))
    assert wider["optimizer"]["max_evals"] == 3 and wider["counts"]["evaluations"] == 3
    assert wider["counts"]["runs"] == 3
    assert "(distinct within each of 3 runs, summed)" in format_experiment(wider)


def test_a_resumed_experiment_keeps_its_own_notes_and_says_which_options_it_ignores(squad_dir, golden, tmp_path):
    """The notes of a resumed experiment are the ones it started with (not a plan of the resume
    command's options), and --metric / --set / --space that the stored experiment overrules are
    named in a warning."""
    model = LocalEmbeddingModel()
    options = ExperimentOptions(optimizer="random", max_evals=4, seed=4, show_progress=False, objective="mrr",
                                overrides={"chunk_size": (128,), "chunking_method": ("recursive",), "chunk_overlap": (0,),
                                           "search_mode": ("vector",), "number_of_chunks": (3, 5, 10)})
    first = run_experiment(squad_dir / "docs", golden, out_dir=tmp_path, embedding_models={LOCAL_MODEL_ID: model},
                           options=options)
    assert first["notes"] and "3" in first["notes"][0]  # the space holds fewer configurations than the budget
    warnings = []

    class Recorder:
        def on_status_change(self, level, message, step=None):
            if level == "warning":
                warnings.append(message)

        def on_pattern_creation(self, payload, evaluation_results):
            pass

    space_file = tmp_path / "space.json"
    space_file.write_text('{"number_of_chunks": [5]}', encoding="utf-8")
    again = run_experiment(squad_dir / "docs", golden, out_dir=tmp_path, embedding_models={LOCAL_MODEL_ID: model},
                           options=ExperimentOptions(experiment_id=first["experiment_id"], show_progress=False,
                                                     objective="ndcg@10", space_file=str(space_file),
                                                     overrides={"number_of_chunks": (10,)}),
                           handlers=[Recorder()])
    assert again["notes"] == first["notes"] and again["objective"] == "mrr"
    ignored = [w for w in warnings if w.startswith("resuming with the experiment's own space and objective (mrr)")]
    assert len(ignored) == 1
    assert f"--metric ndcg@10; --space {space_file}; --set number_of_chunks" in ignored[0]


def test_resume_budget_is_the_total_and_an_asked_configuration_waits_for_room(squad_dir, golden, tmp_path):
    """A stop between ask and tell leaves a pending trial; --max-evals on resume is the total."""
    import dataclasses

    from core.optimization import RandomSampler, Study

    model, options, first = _two_of_three(squad_dir, golden, tmp_path)
    (tmp_path / "experiments" / first["experiment_id"] / "report.json").unlink()  # stopped before its report
    study_file = tmp_path / "experiments" / first["experiment_id"] / "study.json"
    study = Study.from_json(study_file.read_text(encoding="utf-8"), sampler=RandomSampler())
    study.set_budget(3)
    (asked,) = study.ask(1)  # asked, then the process stopped before telling
    study_file.write_text(study.to_json(), encoding="utf-8")
    heard = []

    class Recorder:
        def on_status_change(self, level, message, step=None):
            heard.append((level, message))

        def on_pattern_creation(self, payload, evaluation_results):
            heard.append(("pattern", payload["iteration"], payload["max_evals"], payload["key"]))

    resume = dataclasses.replace(options, experiment_id=first["experiment_id"])
    same = run_experiment(squad_dir / "docs", golden, out_dir=tmp_path, embedding_models={LOCAL_MODEL_ID: model},
                          options=dataclasses.replace(resume, resume_budget=2), handlers=[Recorder()])
    assert same["counts"]["evaluations"] == 2 and len(same["leaderboard"]) == 2
    assert ("info", f"resuming experiment {first['experiment_id']}: 2 evaluations done, 1 asked but not evaluated "
                    "(evaluated first)") in heard
    assert any(level == "warning" and "leaves 1 asked configuration(s) unevaluated" in message
               for level, message in heard if level != "pattern")
    assert not [h for h in heard if h[0] == "pattern"]
    heard.clear()
    wider = run_experiment(squad_dir / "docs", golden, out_dir=tmp_path, embedding_models={LOCAL_MODEL_ID: model},
                           options=dataclasses.replace(resume, resume_budget=3), handlers=[Recorder()])
    assert wider["counts"]["evaluations"] == 3
    assert [h for h in heard if h[0] == "pattern"] == [("pattern", 3, 3, asked.key)]
    # the first run's start and costs come from progress.json (it has no report): nothing new was embedded
    assert wider["started_at"] == first["started_at"]
    assert wider["counts"]["texts_embedded"] == first["counts"]["texts_embedded"] > 0
    assert wider["counts"]["collections_built"] == first["counts"]["collections_built"] == 1
    # a budget below the evaluations made stays at them
    heard.clear()
    below = run_experiment(squad_dir / "docs", golden, out_dir=tmp_path, embedding_models={LOCAL_MODEL_ID: model},
                           options=dataclasses.replace(resume, resume_budget=1), handlers=[Recorder()])
    assert below["optimizer"]["max_evals"] == 3 and below["counts"]["evaluations"] == 3
    assert any(h[0] == "warning" and "--max-evals 1 is below the 3 evaluations already made" in h[1] for h in heard)


def test_an_interrupted_experiment_says_how_to_resume(squad_dir, golden, tmp_path):
    heard = []

    class StopAfterOne:
        def on_status_change(self, level, message, step=None):
            heard.append((level, step, message))

        def on_pattern_creation(self, payload, evaluation_results):
            raise KeyboardInterrupt

    options = ExperimentOptions(optimizer="random", max_evals=2, seed=0, show_progress=False,
                                overrides={"chunk_size": (128,), "chunking_method": ("recursive",), "chunk_overlap": (0,),
                                           "search_mode": ("vector",), "number_of_chunks": (3,)})
    import pymilvus  # noqa: F401 - it sets its own logger's level on import

    levels = [logging.getLogger(n).level for n in ("pymilvus", "core.evaluation.single")]
    with pytest.raises(KeyboardInterrupt):
        run_experiment(squad_dir / "docs", golden, out_dir=tmp_path, embedding_models={LOCAL_MODEL_ID: LocalEmbeddingModel()},
                       options=options, handlers=[StopAfterOne()])
    (stopped,) = [m for level, step, m in heard if step == "stopped"]
    (experiment,) = (tmp_path / "experiments").iterdir()
    assert stopped == (f"experiment {experiment.name} stopped after 1 evaluation; continue it with "
                       f"--resume {experiment.name} and the same --docs, --golden and --out")
    assert (experiment / "progress.json").exists() and not (experiment / "report.json").exists()
    # the loggers quieted while the run closed are as they were once it has
    assert [logging.getLogger(n).level for n in ("pymilvus", "core.evaluation.single")] == levels


def test_an_interrupted_experiment_counts_what_the_evaluation_still_running_built(squad_dir, golden, tmp_path):
    class StopAtSecondStart:
        started = 0

        def on_status_change(self, level, message, step=None):
            if message.startswith("evaluating configuration"):
                self.started += 1
                if self.started == 2:  # the first is running: no evaluation has ended yet
                    raise KeyboardInterrupt

        def on_pattern_creation(self, payload, evaluation_results):
            pass

    model = LocalEmbeddingModel()
    # two configurations a round, each with its own collection
    options = ExperimentOptions(optimizer="random", max_evals=2, seed=0, show_progress=False, workers=2,
                                overrides={"chunk_size": (128, 256), "chunking_method": ("recursive",),
                                           "chunk_overlap": (0,), "search_mode": ("vector",), "number_of_chunks": (3,)})
    with pytest.raises(KeyboardInterrupt):
        run_experiment(squad_dir / "docs", golden, out_dir=tmp_path, embedding_models={LOCAL_MODEL_ID: model},
                       options=options, handlers=[StopAtSecondStart()])
    (experiment,) = (tmp_path / "experiments").iterdir()
    progress = json.loads((experiment / "progress.json").read_text(encoding="utf-8"))
    assert progress["evaluations"] == 0 and progress["counts"]["collections_built"] == 1
    assert progress["counts"]["texts_embedded"] > 0
    # the resume evaluates both configurations, the first on the collection already built
    done = run_experiment(squad_dir / "docs", golden, out_dir=tmp_path, embedding_models={LOCAL_MODEL_ID: model},
                          options=dataclasses.replace(options, experiment_id=experiment.name))
    assert done["counts"]["evaluations"] == 2 and done["counts"]["collections_built"] == 2


def test_an_experiment_stopped_before_its_first_evaluation_resumes(squad_dir, golden, tmp_path):
    import dataclasses

    class StopAtFirstEvaluation:
        def on_status_change(self, level, message, step=None):
            if message.startswith("evaluating configuration"):
                raise KeyboardInterrupt

        def on_pattern_creation(self, payload, evaluation_results):
            pass

    model = LocalEmbeddingModel()
    options = ExperimentOptions(optimizer="random", max_evals=1, seed=0, show_progress=False,
                                overrides={"chunk_size": (128,), "chunking_method": ("recursive",), "chunk_overlap": (0,),
                                           "search_mode": ("vector",), "number_of_chunks": (3,)})
    with pytest.raises(KeyboardInterrupt):
        run_experiment(squad_dir / "docs", golden, out_dir=tmp_path, embedding_models={LOCAL_MODEL_ID: model},
                       options=options, handlers=[StopAtFirstEvaluation()])
    (experiment,) = (tmp_path / "experiments").iterdir()
    assert {p.name for p in experiment.iterdir()} >= {"spec.json", "study.json", "progress.json"}
    done = run_experiment(squad_dir / "docs", golden, out_dir=tmp_path, embedding_models={LOCAL_MODEL_ID: model},
                          options=dataclasses.replace(options, experiment_id=experiment.name))
    assert done["experiment_id"] == experiment.name and done["counts"]["evaluations"] == 1


def test_a_judge_objective_needs_a_judge(squad_dir, golden, tmp_path):
    from core.errors import ConfigError

    options = ExperimentOptions(max_evals=1, objective="judge.correctness", show_progress=False)
    with pytest.raises(ConfigError, match="needs a judge model"):
        run_experiment(squad_dir / "docs", golden, out_dir=tmp_path,
                       embedding_models={LOCAL_MODEL_ID: LocalEmbeddingModel()}, options=options)


def test_skipped_documents_are_reported_as_they_happen(squad_dir, golden, tmp_path):
    import shutil

    docs = tmp_path / "docs"
    docs.mkdir()
    for path in sorted((squad_dir / "docs").iterdir())[:3]:
        shutil.copy(path, docs / path.name)
    (docs / "empty.txt").write_text("")
    heard = []

    class Recorder:
        def on_status_change(self, level, message, step=None):
            heard.append((level, step, message))

        def on_pattern_creation(self, payload, evaluation_results):
            pass

    options = ExperimentOptions(optimizer="random", max_evals=1, seed=0, show_progress=False,
                                overrides={"chunk_size": (128,), "chunking_method": ("recursive",)})
    report = run_experiment(docs, golden, out_dir=tmp_path / "out", embedding_models={LOCAL_MODEL_ID: LocalEmbeddingModel()},
                            options=options, handlers=[Recorder()])
    skipped = [m for level, step, m in heard if step == "documents"]
    assert len(skipped) == 1 and skipped[0].startswith("document empty.txt skipped: ")
    assert [s["document_id"] for s in report["corpus"]["skipped"]] == ["empty.txt"]


def test_workers_evaluate_in_threads_and_the_costs_add_up(squad_dir, golden, tmp_path):
    """Two worker threads over one Milvus Lite database; each distinct text is embedded once
    (texts embedded + texts from the cache = distinct texts), each chunking indexed once, and
    the budget note says the space is smaller than --max-evals."""
    model = LocalEmbeddingModel()
    options = ExperimentOptions(optimizer="random", max_evals=8, seed=1, workers=2, show_progress=False,
                                overrides={"chunking_method": ("recursive",), "chunk_size": (128, 256),
                                           "chunk_overlap": (0,), "search_mode": ("vector",),
                                           "number_of_chunks": (3, 5)})
    first = run_experiment(squad_dir / "docs", golden, out_dir=tmp_path, embedding_models={LOCAL_MODEL_ID: model},
                           options=options)
    c = first["counts"]
    assert first["workers"] == 2 and c["evaluations"] == 4 and c["failed"] == 0 and c["pending"] == 0
    assert c["collections_built"] == 2
    assert c["texts_embedded"] == c["texts_unique"] > 0 and c["texts_from_cache"] == 0
    assert first["notes"] == ["the space holds 4 valid configurations, fewer than the budget of 8: 4 will be evaluated"]
    # the model's load (weights read and checked), wherever it happened, is the start-up's
    assert model.load_s > 0 and first["timings_s"]["startup_s"] >= model.load_s
    # Asked two at a time: two rounds of two. Each distinct text was sent by exactly one
    # evaluation, so the evaluations' own counts add up to the run's; no chat model, no tokens.
    board = first["leaderboard"]
    assert sorted(r["round"] for r in board) == [1, 1, 2, 2]
    assert sum(r["cost"]["texts_embedded"] for r in board) == c["texts_embedded"]
    assert all(r["cost"]["tokens"] == 0 and r["cost"]["chat_requests"] == 0 for r in board)
    assert all(r["cost"]["seconds"] == r["duration_s"] for r in board)
    # A new experiment on the same data: every result is stored, nothing is embedded.
    again = run_experiment(squad_dir / "docs", golden, out_dir=tmp_path, embedding_models={LOCAL_MODEL_ID: model},
                           options=options)
    assert again["counts"]["stored"] == 4 and again["counts"]["texts_embedded"] == 0


def test_with_rungs_each_evaluation_says_which_configuration_on_how_many_questions(squad_dir, golden, tmp_path,
                                                                                    capsys):
    """``screen`` on a retrieval objective, rungs of 5 and 15 questions: every evaluation's
    payload names its configuration and its rung's decision, the printed lines follow them,
    and the lines' best is the best score on every question (never a rung-0 score)."""
    from core.experiment.events import ProgressBarHandler

    seen = []

    class Recorder:
        def on_status_change(self, level, message, step=None):
            pass

        def on_pattern_creation(self, payload, evaluation_results):
            seen.append(payload)

    options = ExperimentOptions(optimizer="screen", objective="mrr", max_evals=3, seed=2, show_progress=False,
                                multi_fidelity=True, promotion="incumbent", min_questions=5,
                                overrides={"chunking_method": ("recursive",), "chunk_size": (128,),
                                           "chunk_overlap": (0,)})
    bar = ProgressBarHandler(3, "mrr", lines=True)
    report = run_experiment(squad_dir / "docs", golden, out_dir=tmp_path,
                            embedding_models={LOCAL_MODEL_ID: LocalEmbeddingModel()}, options=options,
                            handlers=[Recorder(), bar])
    bar.close()
    assert report["fidelity"]["sizes"] == [5, 15]
    held = {p["name"]: p["values"] for p in report["space"]["parameters"]["parameters"]}["number_of_chunks"]
    assert held == [10]  # held for the retrieval objective
    assert report["notes"][0].startswith("number_of_chunks is held at 10 (the space holds 3,5,10)")
    assert [p["iteration"] for p in seen] == list(range(1, len(seen) + 1)) and len(seen) > report["counts"]["evaluations"]
    board = {row["key"]: row for row in report["leaderboard"]}
    trial_of = {row["key"]: row["trial"] for row in report["leaderboard"]}
    for payload in seen:
        assert payload["trial"] == trial_of[payload["key"]] and 1 <= payload["configurations"] <= 3
        assert payload["fidelity"]["n_questions"] in (5, 15) and payload["fidelity"]["n_questions_total"] == 15
    last = {p["key"]: p for p in seen}  # each configuration's last rung is what the report holds
    assert {k: p["fidelity"]["verdict"] for k, p in last.items()} == {k: r["fidelity"]["verdict"]
                                                                      for k, r in board.items()}
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("evaluation ")]
    assert len(lines) == len(seen)
    best = None
    for payload, line in zip(seen, lines):
        n, value = payload["fidelity"]["n_questions"], payload["objective"]["value"]
        assert line.startswith(f"evaluation {payload['iteration']} (configuration {payload['trial'] + 1}/3, "
                               f"{n} of 15 questions): mrr {value:.3f}")
        if payload["fidelity"]["verdict"] == "complete":
            best = value if best is None else max(best, value)
        assert (f"(best on every question {best:.3f})" in line) if best is not None else "best" not in line
        # the seconds are this evaluation's own (a promotion's, not its rungs' sum)
        assert line.endswith(f", {payload['duration_seconds']:.1f} s")
    assert best == max(r["score"] for r in report["leaderboard"] if r["fully_evaluated"])
    # a promoted configuration's leaderboard seconds are the sum of its rungs' evaluations
    for key, row in board.items():
        own = [p["duration_seconds"] for p in seen if p["key"] == key]
        assert row["duration_s"] == pytest.approx(sum(own), abs=0.002 * len(own))

    # Resumed with a larger budget: the evaluations count on from the first run's, and the
    # best on every question is the first run's too until beaten.
    capsys.readouterr()
    heard = []

    class Listener(Recorder):
        def on_status_change(self, level, message, step=None):
            heard.append(message)

    seen.clear()
    again = run_experiment(squad_dir / "docs", golden, out_dir=tmp_path,
                           embedding_models={LOCAL_MODEL_ID: LocalEmbeddingModel()},
                           options=dataclasses.replace(options, experiment_id=report["experiment_id"], resume_budget=4),
                           handlers=[Listener(), ProgressBarHandler(4, "mrr", lines=True)])
    n_before = len(lines)
    assert f"resuming experiment {report['experiment_id']}: {n_before} evaluations of 3 configurations done" in heard
    assert seen and [p["iteration"] for p in seen] == list(range(n_before + 1, n_before + 1 + len(seen)))
    first_best = report["best"]["score"]
    resumed = [line for line in capsys.readouterr().err.splitlines() if line.startswith("evaluation ")]
    best_now = seen[0]["best_score"]
    assert best_now >= first_best and f"(best on every question {best_now:.3f})" in resumed[0]
    assert again["best"]["score"] == max(r["score"] for r in again["leaderboard"] if r["fully_evaluated"])
