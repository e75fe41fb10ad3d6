"""Answers end to end on bedrock-sample: the real local embedding model served over HTTP by
the OpenAI-compatible test server, real Milvus Lite, SimpleRAG with a scripted chat model and
with the extractive baseline, then unitxt and judge metrics."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from core.chunking import get_chunker
from core.documents import load_documents
from core.golden import read_golden
from core.metrics.answers import JUDGE_SYSTEM_MESSAGE, answer_report
from core.models import LocalEmbeddingModel, OpenAIChatModel, OpenAIEmbeddingModel
from core.rag import ExtractiveGenerator, SimpleRAG, generate_answers
from core.vectorstores import MilvusLiteConfig, MilvusVectorStore
from tests.support.openai_app import ChatReply, OpenAITestApp, last_user_text

pytestmark = [pytest.mark.integration, pytest.mark.slow]

FAILING = "Who is Liverpool's captain?"
DOC = re.compile(r"<doc>(.*?)</doc>", re.DOTALL)


def respond(body):
    """A scripted LLM: judges give top marks; the generator copies the first 12 words of the
    first document it was given; one question fails with a 400."""
    messages = body["messages"]
    prompt = last_user_text(body)
    if messages[0]["content"] == JUDGE_SYSTEM_MESSAGE:
        return "5" if "from 1 to 5" in prompt else "Score: 1"
    if FAILING in prompt:
        return ChatReply(status=400)
    docs = DOC.findall(prompt)
    return " ".join(docs[0].split()[:12]) if docs else "The documents do not say."


@pytest.fixture(scope="module")
def local_model():
    return LocalEmbeddingModel()


@pytest.fixture(scope="module")
def app(local_model):
    with OpenAITestApp(respond, embedding_model=local_model) as server:
        yield server


@pytest.fixture(scope="module")
def store(app, bedrock_dir, tmp_path_factory):
    model = OpenAIEmbeddingModel("all-MiniLM-L6-v2", base_url=app.base_url, api_key="k", embedding_dimension=384,
                                 batch_size=64)  # short requests: each well inside the read timeout on a busy machine
    docs = load_documents(bedrock_dir / "docs").documents
    chunks = get_chunker("recursive", 256, 32).chunk(docs)
    store = MilvusVectorStore(model, MilvusLiteConfig(str(tmp_path_factory.mktemp("milvus") / "answers.db")), "answers_it")
    store.add_documents(chunks)
    store.flush()
    return store


@pytest.fixture(scope="module")
def bedrock_dir(request):
    from pathlib import Path

    return Path(request.config.rootpath) / "examples" / "data" / "bedrock-sample"


def test_embeddings_endpoint_serves_the_real_local_model(app, local_model):
    texts = ["Iker Casillas is Spain's goalkeeper.", "Gianluigi Buffon"]
    remote = OpenAIEmbeddingModel("all-MiniLM-L6-v2", base_url=app.base_url, api_key="k").embed_documents(texts)
    assert remote.shape == (2, 384)
    np.testing.assert_allclose(remote, local_model.embed_documents(texts), rtol=1e-5, atol=1e-6)


def test_rag_answers_and_metrics_on_the_derived_golden_file(app, store, bedrock_dir):
    golden = read_golden(bedrock_dir / "golden_derived.jsonl")
    chat = OpenAIChatModel("scripted-llm", base_url=app.base_url, api_key="k", max_attempts=2, retry_wait_s=0.01)
    rag = SimpleRAG(store, chat, k=3, context_template_text="<doc>{document}</doc>\n")
    answers = generate_answers(rag, golden.questions, max_workers=4)
    failed = [a for a in answers if not a.ok]
    assert [a.question for a in failed] == [FAILING] and "BadRequestError" in failed[0].error
    assert all(len(a.contexts) == 3 for a in answers if a.ok)

    judge = OpenAIChatModel("scripted-judge", base_url=app.base_url, api_key="k")
    report = answer_report(golden.questions, answers, judge)
    json.dumps(report.to_dict(), allow_nan=False)
    for result in report.metrics:
        assert result.n_failed == 1 and result.n_scored == 14, result.name
    # Each answer is a whitespace-word prefix of passage 1, so its SQuAD-normalised tokens are
    # a sub-multiset of that passage's: token precision (faithfulness) is exactly 1.
    assert report.metric("unitxt.faithfulness").mean == 1.0
    assert report.metric("unitxt.faithfulness").ci_method == "all scores equal"
    context = report.metric("unitxt.context_correctness")
    assert 0.0 < context.mean <= 1.0 and context.n_unscorable == 0
    for name in ("judge.answer_relevance", "judge.correctness", "judge.faithfulness"):
        assert (report.metric(name).mean, report.metric(name).ci_low) == (1.0, 1.0)
    failed_record = next(r for r in report.questions if r["question"] == FAILING)
    assert all(m["status"] == "failed" for m in failed_record["metrics"])


def test_bedrock_prompts_get_answer_metrics_but_no_context_metric(app, store, bedrock_dir):
    golden = read_golden(bedrock_dir / "bedrock_prompts.jsonl")
    chat = OpenAIChatModel("scripted-llm", base_url=app.base_url, api_key="k", max_attempts=1)
    rag = SimpleRAG(store, chat, k=3, context_template_text="<doc>{document}</doc>\n")
    report = answer_report(golden.questions, generate_answers(rag, golden.questions))
    assert report.metric("unitxt.faithfulness").n_scored == 14
    assert report.metric("unitxt.answer_correctness").n_scored == 14
    context = report.metric("unitxt.context_correctness")
    assert context.mean is None and context.n_unscorable == 15 and context.n_failed == 0


def test_extractive_baseline_needs_no_llm(app, store, bedrock_dir, local_model):
    golden = read_golden(bedrock_dir / "golden_derived.jsonl")
    before = len(app.chat_requests)
    rag = SimpleRAG(store, ExtractiveGenerator(local_model, max_sentences=2), k=5)
    answers = generate_answers(rag, golden.questions, max_workers=2)
    assert all(a.ok and a.answer for a in answers)
    assert all(a.generator_id == "extractive:local:all-MiniLM-L6-v2" for a in answers)
    assert len(app.chat_requests) == before
    report = answer_report(golden.questions, answers)
    faith = report.metric("unitxt.faithfulness")
    assert faith.n_scored == 15 and 0.0 < faith.mean <= 1.0
    assert faith.ci_low is None or faith.ci_low <= faith.mean <= faith.ci_high
