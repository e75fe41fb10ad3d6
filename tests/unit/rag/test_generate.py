"""generate_answers: a bounded pool, answers in question order, a failed question recorded
as failed (through the real ``openai`` client against the local test server)."""

from __future__ import annotations

import threading
import time

import pytest

from core.errors import ConfigError
from core.golden import GoldenQuestion, Target
from core.models import OpenAIChatModel
from core.rag import SimpleRAG, generate_answers
from tests.support.openai_app import ChatReply, last_user_text
from tests.unit.rag.helpers import FakeStore

TEXTS = [("a.txt", "Alpha is first."), ("b.txt", "Beta is second.")]


def q(qid: str, text: str, history=()) -> GoldenQuestion:
    return GoldenQuestion(qid, text, (Target("a.txt"),), reference="Alpha", history=tuple(history))


def responder(body):
    text = last_user_text(body)
    if "FAIL" in text:
        return ChatReply(status=400)
    return "answer to " + text.rsplit("Question: ", 1)[-1].removesuffix("\nAnswer:")


def test_one_failed_question_is_recorded_and_the_rest_answered(app):
    app.responder = responder
    rag = SimpleRAG(FakeStore(TEXTS), OpenAIChatModel("gen", base_url=app.base_url, retry_wait_s=0.01, max_attempts=2))
    questions = [q("1", "first?"), q("2", "FAIL please"), q("3", "third?")]
    progress = []
    records = generate_answers(rag, questions, max_workers=3, on_answer=lambda d, t: progress.append((d, t)))
    assert [r.question_id for r in records] == ["1", "2", "3"]
    assert [r.ok for r in records] == [True, False, True]
    # The failed question keeps what was retrieved for it.
    assert [c.text for c in records[1].contexts] == [c.text for c in records[0].contexts] != []
    assert records[0].answer == "answer to first?" and records[2].answer == "answer to third?"
    failed = records[1]
    assert failed.answer is None and failed.error.startswith("GenerationError: ") and "BadRequestError" in failed.error
    assert [c.document_id for c in records[0].contexts] == ["a.txt", "b.txt"]
    assert records[0].contexts[0].score == 1.0
    assert all(r.generator_id.endswith("/gen") for r in records)
    assert sorted(progress) == [(1, 3), (2, 3), (3, 3)]
    assert len(app.chat_requests) == 3  # the 400 is not retried


def test_a_retrieval_failure_is_recorded_too(app):
    app.responder = responder
    rag = SimpleRAG(FakeStore(TEXTS, fail_on="broken"), OpenAIChatModel("gen", base_url=app.base_url))
    records = generate_answers(rag, [q("1", "broken search"), q("2", "fine")])
    assert records[0].error == "StoreError: search failed on purpose" and records[1].ok


def test_history_is_forwarded(app):
    app.responder = responder
    rag = SimpleRAG(FakeStore(TEXTS), OpenAIChatModel("gen", base_url=app.base_url))
    history = (("user", "Which is first?"), ("assistant", "Alpha."))
    generate_answers(rag, [q("t2", "And second?", history)])
    sent = app.chat_requests[0]["messages"]
    assert sent[1:3] == [{"role": "user", "content": "Which is first?"}, {"role": "assistant", "content": "Alpha."}]


class SlowRag:
    """Counts how many generate() calls run at once."""

    model_id = "slow"

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running = 0
        self.peak = 0

    def generate(self, question, history=()):
        with self.lock:
            self.running += 1
            self.peak = max(self.peak, self.running)
        time.sleep(0.05)
        with self.lock:
            self.running -= 1
        return {"question": question, "answer": question.upper(), "reference_documents": []}


def test_pool_is_bounded():
    rag = SlowRag()
    records = generate_answers(rag, [q(str(i), f"q{i}") for i in range(8)], max_workers=2)
    assert rag.peak == 2
    assert [r.answer for r in records] == [f"Q{i}" for i in range(8)]


def test_bad_arguments():
    with pytest.raises(ConfigError, match="max_workers"):
        generate_answers(SlowRag(), [q("1", "a")], max_workers=0)
    with pytest.raises(ConfigError, match="duplicate"):
        generate_answers(SlowRag(), [q("1", "a"), q("1", "b")])
    assert generate_answers(SlowRag(), []) == []


def test_a_dead_endpoint_stops_being_called_after_consecutive_failures(app):
    """Every call answers 503: with one worker, 3 questions fail through their retries
    (2 attempts each: 6 requests), then the other 5 are recorded as skipped without a call."""
    app.responder = lambda body: ChatReply(status=503)
    rag = SimpleRAG(FakeStore(TEXTS), OpenAIChatModel("gen", base_url=app.base_url, retry_wait_s=0.0, max_attempts=2))
    questions = [q(str(i), f"question {i}?") for i in range(8)]
    records = generate_answers(rag, questions, max_workers=1, max_consecutive_failures=3)
    assert len(app.chat_requests) == 6
    assert [r.ok for r in records] == [False] * 8
    assert all("GenerationError" in r.error for r in records[:3])
    assert all(r.error.startswith(f"skipped: generator {rag.model_id} failed 3 times in a row "
                                  "(last error: GenerationError") for r in records[3:])


def test_a_success_resets_the_failure_count(app):
    app.responder = responder
    rag = SimpleRAG(FakeStore(TEXTS), OpenAIChatModel("gen", base_url=app.base_url, retry_wait_s=0.0, max_attempts=1))
    questions = [q("1", "FAIL a"), q("2", "FAIL b"), q("3", "fine?"), q("4", "FAIL c"), q("5", "FAIL d"), q("6", "ok?")]
    records = generate_answers(rag, questions, max_workers=1, max_consecutive_failures=3)
    assert [r.ok for r in records] == [False, False, True, False, False, True]
    assert len(app.chat_requests) == 6
    with pytest.raises(ConfigError, match="at least 1"):
        generate_answers(rag, questions, max_consecutive_failures=0)
