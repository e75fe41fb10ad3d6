"""EvaluationContext.embed_questions_early: the golden questions are embedded in the background,
once per model and question set, through the embedding cache; an evaluation asking for them
meanwhile waits for that request instead of sending its own; a model not configured is
skipped and a failing one is left to the evaluations."""

from __future__ import annotations

import logging
import threading
import time

import numpy as np
import pytest

from core.errors import EmbeddingError
from core.evaluation.single import EvaluationContext
from core.models.embeddings import query_text

QUESTIONS = ["Who wrote it?", "When?", "Who wrote it?", "Où est la gare ?"]


class Slow:
    """An embedding model that takes ``delay_s`` per call and counts the texts it is sent; a
    query instruction, as bge models have, so the texts embedded are ``query_text``'s."""

    query_instruction = "query: "
    max_input_tokens = None
    embedding_dimension = 3

    def __init__(self, model_id: str = "slow", delay_s: float = 0.0, fail: bool = False) -> None:
        self.model_id = model_id
        self.delay_s = delay_s
        self.fail = fail
        self.sent: list[str] = []
        self.calls = 0
        self.started = threading.Event()

    def embed_documents(self, texts):
        self.calls += 1
        self.started.set()
        time.sleep(self.delay_s)
        if self.fail:
            raise EmbeddingError("the endpoint is down")
        self.sent.extend(texts)
        return np.asarray([[len(t), 1.0, 0.0] for t in texts], dtype=np.float32)

    def embed_query(self, text):
        return self.embed_documents([query_text(self, text)])[0]


def _context(tmp_path, **models) -> EvaluationContext:
    return EvaluationContext(out_dir=tmp_path, embedding_models=models)


def _join(context: EvaluationContext) -> None:
    for thread in list(context._early_embeddings.values()):
        thread.join(timeout=30)


def test_each_distinct_question_is_embedded_once_with_the_query_instruction(tmp_path):
    model = Slow()
    context = _context(tmp_path, slow=model)
    context.embed_questions_early(QUESTIONS, ["slow"])
    context.embed_questions_early(QUESTIONS, ["slow", "slow"])  # the same questions again: not started twice
    _join(context)
    assert model.calls == 1
    assert model.sent == ["query: Who wrote it?", "query: When?", "query: Où est la gare ?"]
    cached = context.embedding_model("slow")
    before = cached.n_embedded
    cached.embed_documents([query_text(cached, q) for q in QUESTIONS])  # what an evaluation asks
    assert cached.n_embedded == before == 3 and model.calls == 1


def test_an_evaluation_asking_meanwhile_waits_for_the_early_request(tmp_path):
    model = Slow(delay_s=0.3)
    context = _context(tmp_path, slow=model)
    context.embed_questions_early(QUESTIONS, ["slow"])
    assert model.started.wait(10)  # the early request is under way
    cached = context.embedding_model("slow")
    vectors = cached.embed_documents([query_text(cached, q) for q in QUESTIONS])
    _join(context)
    assert model.calls == 1 and len(model.sent) == 3  # nothing sent twice
    assert vectors[:, 0].tolist() == [len("query: " + q) for q in QUESTIONS]
    stats = cached.stats()
    assert (stats["texts_embedded"], stats["texts_unique"]) == (3, 3)


def test_only_a_space_of_one_configured_model_is_embedded_early(tmp_path):
    """With several models the budget or a pre-selection may never evaluate some of them, so
    nothing is sent early; a model that is not configured is skipped."""
    a, b = Slow("a"), Slow("b")
    context = _context(tmp_path, a=a, b=b)
    context.embed_questions_early(QUESTIONS, ["b", "a"])
    context.embed_questions_early(QUESTIONS, ["missing"])
    _join(context)
    assert (a.calls, b.calls) == (0, 0) and not context._early_embeddings
    context.embed_questions_early([], ["a"])  # no questions: nothing to start
    context.embed_questions_early(QUESTIONS, ["a", "a"])  # one model, named twice
    _join(context)
    assert (a.calls, b.calls) == (1, 0)


def test_a_failure_is_logged_and_the_evaluation_embeds_them_itself(tmp_path, caplog):
    model = Slow(fail=True)
    context = _context(tmp_path, slow=model)
    with caplog.at_level(logging.INFO, logger="core.evaluation.single"):
        context.embed_questions_early(QUESTIONS, ["slow"])
        _join(context)
    assert "embedding the questions early with slow failed" in caplog.text
    cached = context.embedding_model("slow")
    with pytest.raises(EmbeddingError, match="down"):  # the evaluation's own call raises its own error
        cached.embed_documents([query_text(cached, q) for q in QUESTIONS])
    model.fail = False
    assert cached.embed_documents([query_text(cached, q) for q in QUESTIONS]).shape == (4, 3)
    assert model.sent == ["query: Who wrote it?", "query: When?", "query: Où est la gare ?"]


def test_the_texts_are_charged_to_the_first_evaluation_that_asks_for_them(tmp_path):
    """Per-evaluation costs still add up to what the model was sent: the first evaluation's
    spend counts the early texts as embedded, the next one's as found in the cache."""
    from core.models.spend import spending

    model = Slow(delay_s=0.2)
    context = _context(tmp_path, slow=model)
    context.embed_questions_early(QUESTIONS, ["slow"])
    assert model.started.wait(10)
    cached = context.embedding_model("slow")
    texts = [query_text(cached, q) for q in QUESTIONS] + ["query: a new one"]
    with spending() as first:
        cached.embed_documents(texts)  # waits for the early request, then sends the new text
    with spending() as second:
        cached.embed_documents(texts)
    assert model.calls == 2 and len(model.sent) == 4
    assert (first.to_dict()["texts_embedded"], first.to_dict()["texts_from_cache"]) == (4, 0)
    assert (second.to_dict()["texts_embedded"], second.to_dict()["texts_from_cache"]) == (0, 4)
    assert first.texts_embedded + second.texts_embedded == cached.stats()["texts_embedded"] == 4


def test_texts_stored_but_not_yet_recorded_are_never_seen(tmp_path):
    """The early texts are recorded as not yet charged before they can be found in the cache:
    an evaluation reading them while the early thread is still storing them is charged."""
    from core.models import CachedEmbeddingModel, EmbeddingCache
    from core.models.spend import spending

    model = Slow()
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    stored = threading.Event()
    go_on = threading.Event()
    real_put = cache.put_many

    def put_many(model_id, items):
        real_put(model_id, items)
        stored.set()  # found in the cache from now on
        go_on.wait(10)

    cache.put_many = put_many
    cached = CachedEmbeddingModel(model, cache)
    texts = [query_text(cached, q) for q in QUESTIONS]
    early = threading.Thread(target=cached.embed_documents, args=(texts,))
    early.start()
    assert stored.wait(10)
    try:
        with spending() as first:
            cached.embed_documents(texts)
    finally:
        go_on.set()
        early.join(10)
    with spending() as second:
        cached.embed_documents(texts)
    assert (first.texts_embedded, second.texts_embedded, model.calls) == (3, 0, 1)


def test_a_local_model_loads_once_when_threads_ask_at_once(monkeypatch):
    """The question thread and an evaluation may ask for the local model at once: it loads
    once, the other waits."""
    from core.models.embeddings import LocalEmbeddingModel

    loads = []

    def load_now(self):
        loads.append(threading.current_thread().name)
        time.sleep(0.2)
        return object()

    monkeypatch.setattr(LocalEmbeddingModel, "_load_now", load_now)
    model = LocalEmbeddingModel()
    got = []
    threads = [threading.Thread(target=lambda: got.append(model._load())) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert len(loads) == 1 and len(got) == 4 and len({id(g) for g in got}) == 1
