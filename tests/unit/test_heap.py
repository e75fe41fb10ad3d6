"""core.heap.freeze_loaded_heap: the heap is frozen once per process, and the Functions'
evaluation freezes it after its first evaluation; later collections skip what was frozen."""

from __future__ import annotations

import gc

import pytest

import core.heap as heap


@pytest.fixture
def unfrozen(monkeypatch):
    """A process whose heap was never frozen by ragtune; thawed again afterwards."""
    monkeypatch.setattr(heap, "_frozen", False)
    gc.unfreeze()
    yield
    gc.unfreeze()


def test_the_first_call_freezes_every_object_and_later_calls_do_nothing(unfrozen):
    alive = [[i] for i in range(1000)]  # tracked objects alive now
    assert gc.get_freeze_count() == 0
    assert heap.freeze_loaded_heap() is True
    frozen = gc.get_freeze_count()
    assert frozen >= len(alive)
    more = [[i] for i in range(1000)]
    assert heap.freeze_loaded_heap() is False and gc.get_freeze_count() == frozen  # not again
    assert more


def test_an_evaluation_from_the_queue_freezes_the_heap_once_done(unfrozen, tmp_path):
    from core.experiment import Experiment
    from core.experiment.prepare import evaluate_request
    from tests.unit.experiment.test_engine import ok, prepared  # noqa: F401 - the engine tests' helpers
    from tests.support.experiment_settings import GOLDEN

    (tmp_path / "golden.jsonl").write_bytes(GOLDEN)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "plan.md").write_text("The deductible is 500 dollars.")
    experiment, _ = prepared(tmp_path)
    (config,) = experiment.ask(1)

    class Evaluator:
        def __call__(self, spec, configuration):
            assert gc.get_freeze_count() == 0  # not during the evaluation
            return ok(0.5)(configuration)

    outcome = evaluate_request(experiment, experiment.evaluation_request(config), Evaluator(), 30)
    assert outcome.status == "ok" and isinstance(experiment, Experiment)
    assert gc.get_freeze_count() > 0 and heap._frozen
