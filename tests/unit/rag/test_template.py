"""SimpleRAG: retrieval, the three prompt templates, generate() and chat(), through the real
``openai`` client against the local test server."""

from __future__ import annotations

import pytest

from core.errors import ConfigError, GenerationError
from core.models import OpenAIChatModel
from core.rag import DEFAULT_SYSTEM_MESSAGE, ExtractiveGenerator, SimpleRAG
from core.vectorstores.base import SearchSetup
from tests.support.openai_app import ChatReply
from tests.unit.rag.helpers import BagOfWords, FakeStore

TEXTS = [("a.txt", "Alpha is first."), ("b.txt", "Beta is second."), ("c.txt", "Gamma is third.")]


def chat_model(app) -> OpenAIChatModel:
    return OpenAIChatModel("gen", base_url=app.base_url, api_key="k", retry_wait_s=0.01, max_attempts=2)


def test_generate_renders_the_three_templates(app):
    app.reply("Alpha.")
    store = FakeStore(TEXTS)
    rag = SimpleRAG(store, chat_model(app), k=2)
    result = rag.generate("Which is first?")
    assert result["question"] == "Which is first?"
    assert result["answer"] == "Alpha."
    assert [c.chunk.document_id for c in result["reference_documents"]] == ["a.txt", "b.txt"]
    assert store.calls == [("Which is first?", 2, {"search_mode": "vector"})]
    # context template "{document}\n" per chunk, then "{reference_documents}\n\nQuestion: {question}\nAnswer:"
    assert app.chat_requests[0]["messages"] == [
        {"role": "system", "content": DEFAULT_SYSTEM_MESSAGE},
        {"role": "user", "content": "Alpha is first.\nBeta is second.\n\n\nQuestion: Which is first?\nAnswer:"},
    ]


def test_custom_templates_and_search_setup(app):
    app.reply("ok")
    store = FakeStore(TEXTS)
    rag = SimpleRAG(
        store, chat_model(app), k=3, search=SearchSetup("hybrid", "weighted", ranker_alpha=0.3),
        system_message_text="Be brief.", context_template_text="[{doc_number}] {document}\n",
        user_message_text="Q: {question}\nDocs:\n{reference_documents}",
    )
    rag.generate("q?")
    assert store.calls[0][2] == {"search_mode": "hybrid", "ranker_strategy": "weighted", "ranker_alpha": 0.3}
    assert app.chat_requests[0]["messages"][1]["content"] == (
        "Q: q?\nDocs:\n[1] Alpha is first.\n[2] Beta is second.\n[3] Gamma is third.\n"
    )
    assert app.chat_requests[0]["messages"][0]["content"] == "Be brief."


def test_chat_retrieves_with_the_last_turn_and_forwards_history(app):
    app.reply("Beta.")
    store = FakeStore(TEXTS)
    rag = SimpleRAG(store, chat_model(app), k=1)
    history = [
        {"role": "user", "content": "Which is first?"},
        {"role": "assistant", "content": "Alpha."},
    ]
    result = rag.chat([*history, {"role": "user", "content": "And the second?"}])
    assert result["question"] == "And the second?" and result["answer"] == "Beta."
    assert store.calls[0][0] == "And the second?"
    sent = app.chat_requests[0]["messages"]
    assert sent[0] == {"role": "system", "content": DEFAULT_SYSTEM_MESSAGE}
    assert sent[1:3] == history
    assert sent[3]["content"].endswith("Question: And the second?\nAnswer:")


def test_a_system_message_of_the_callers_own_is_kept(app):
    app.reply("ok")
    rag = SimpleRAG(FakeStore(TEXTS), chat_model(app), k=1)
    rag.chat([{"role": "system", "content": "Mine."}, {"role": "user", "content": "q"}])
    sent = app.chat_requests[0]["messages"]
    assert [m["role"] for m in sent] == ["system", "user"] and sent[0]["content"] == "Mine."


def test_chat_needs_a_last_user_turn(app):
    rag = SimpleRAG(FakeStore(TEXTS), chat_model(app))
    with pytest.raises(ConfigError, match="last message"):
        rag.chat([{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}])
    with pytest.raises(ConfigError):
        rag.chat([])


def test_no_chunks_still_asks_with_empty_documents(app):
    app.reply("The documents do not say.")
    rag = SimpleRAG(FakeStore([]), chat_model(app))
    result = rag.generate("q?")
    assert result["reference_documents"] == []
    assert app.chat_requests[0]["messages"][1]["content"] == "\n\nQuestion: q?\nAnswer:"


def test_generation_errors_propagate(app):
    app.reply(ChatReply(status=400))
    rag = SimpleRAG(FakeStore(TEXTS), chat_model(app))
    with pytest.raises(GenerationError, match="gen failed"):
        rag.generate("q?")


def test_passage_answerers_get_the_chunk_texts_not_a_prompt(app):
    rag = SimpleRAG(FakeStore(TEXTS), ExtractiveGenerator(BagOfWords(), max_sentences=1), k=3)
    result = rag.generate("Which is second?")
    assert result["answer"] == "Beta is second."
    assert app.requests == []  # no LLM call
    assert rag.model_id == "extractive:test:bag-of-words"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"user_message_text": "{reference_documents}"}, r"\{question\} exactly 1"),
        ({"user_message_text": "{question} {question} {reference_documents}"}, "found 2"),
        ({"user_message_text": "{question} {reference_documents} {extra}"}, r"unknown placeholder \{extra\}"),
        ({"context_template_text": "no document"}, r"\{document\} exactly 1"),
        ({"context_template_text": "{document} {doc_number} {doc_number}"}, r"\{doc_number\} at most 1"),
        ({"context_template_text": "{document} }"}, "literal braces"),
        ({"k": 0}, "k must be"),
    ],
)
def test_bad_settings_are_refused(app, kwargs, message):
    with pytest.raises(ConfigError, match=message):
        SimpleRAG(FakeStore(TEXTS), chat_model(app), **kwargs)


def test_empty_question_is_refused(app):
    with pytest.raises(ConfigError, match="empty"):
        SimpleRAG(FakeStore(TEXTS), chat_model(app)).generate("  ")


def test_params_are_json_ready(app):
    import json

    rag = SimpleRAG(FakeStore(TEXTS), chat_model(app), k=4)
    params = json.loads(json.dumps(rag.params()))
    assert params["k"] == 4 and params["generator"].endswith("/gen") and params["search"] == {"search_mode": "vector"}
