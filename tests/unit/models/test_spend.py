"""What one piece of work spent: texts embedded through the cache, chat requests and the
tokens the endpoint reported, tallied per ``spending()`` block also across pool threads.
Tokens are checked against the test server's counts (words of the messages and of the reply)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from core.models import CachedChatModel, CachedEmbeddingModel, EmbeddingCache, OpenAIChatModel
from core.models.spend import carry_spend, current_spend, spending
from tests.support.openai_app import ChatReply
from tests.unit.models.test_cache import CountingModel

USER = [{"role": "user", "content": "What is RAG?"}]  # 3 words


def test_texts_embedded_per_block_and_across_pool_threads(tmp_path):
    cached = CachedEmbeddingModel(CountingModel(), EmbeddingCache(tmp_path / "cache.sqlite"))
    texts = [f"text {i}" for i in range(10)]
    with spending() as first:
        cached.embed_documents(texts[:6])
        cached.embed_documents(texts[:3])  # repeats: nothing sent, nothing new asked
    with spending() as second:
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(carry_spend(cached.embed_documents), [texts[4:7], texts[7:10]]))
    # by hand: the first block sends texts 0-5; the second asks 4-9 and sends 6-9 (4 and 5 are cached)
    assert first.to_dict()["texts_embedded"] == 6 and first.to_dict()["texts_from_cache"] == 0
    assert second.to_dict()["texts_embedded"] == 4 and second.to_dict()["texts_from_cache"] == 2
    assert current_spend() is None
    cached.embed_documents(["outside"])  # no block open: nothing tallied, nothing fails


def test_tokens_come_from_the_replies_usage_and_cached_replies_cost_none(app, tmp_path):
    chat = OpenAIChatModel("gpt-test", base_url=app.base_url, api_key="k", retry_wait_s=0.01)
    cached = CachedChatModel(chat, EmbeddingCache(tmp_path / "cache.sqlite"))
    app.reply("two words", "three words here")
    with spending() as spend:
        cached.chat(USER)
        cached.chat([{"role": "user", "content": "What is a chunk?"}])  # 4 words
        cached.chat(USER)  # from the cache
    assert spend.to_dict() == {"texts_embedded": 0, "texts_from_cache": 0, "chat_requests": 2,
                               "replies_from_cache": 1, "prompt_tokens": 3 + 4, "completion_tokens": 2 + 3,
                               "tokens": 12}


def test_a_reply_without_usage_makes_the_tokens_unknown(app):
    chat = OpenAIChatModel("gpt-test", base_url=app.base_url, api_key="k", retry_wait_s=0.01)
    app.reply("counted", ChatReply("not counted", usage=False))
    with spending() as spend:
        with ThreadPoolExecutor(1) as pool:
            list(pool.map(carry_spend(chat.chat), [USER, USER]))
    out = spend.to_dict()
    assert out["chat_requests"] == 2 and out["tokens"] is None and out["prompt_tokens"] is None
    with spending() as none_sent:
        pass
    assert none_sent.to_dict()["tokens"] == 0  # no request: nothing spent, known
