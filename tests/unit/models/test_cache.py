"""The caches under threads: each distinct text embedded once, each chat request sent once."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from core.models import CachedChatModel, CachedEmbeddingModel, EmbeddingCache
from core.models.cache import reply_key


class CountingModel:
    """Embeds slowly (so threads overlap) and counts every text it is sent."""

    model_id = "counting"
    embedding_dimension = 4
    max_input_tokens = None

    def __init__(self) -> None:
        self.sent: list[str] = []
        self.lock = threading.Lock()

    def embed_documents(self, texts):
        time.sleep(0.02)
        with self.lock:
            self.sent.extend(texts)
        return np.array([[len(t), t.count("a"), 1.0, 0.0] for t in texts], dtype=np.float32)


def test_threads_embed_each_distinct_text_once_and_the_counts_add_up(tmp_path):
    model = CountingModel()
    cached = CachedEmbeddingModel(model, EmbeddingCache(tmp_path / "cache.sqlite"))
    # 10 threads, each asking for 30 texts out of 40 distinct ones (overlapping windows).
    texts = [f"text {i} {'a' * (i % 5)}" for i in range(40)]
    batches = [texts[i: i + 30] for i in range(10)]
    with ThreadPoolExecutor(10) as pool:
        outs = list(pool.map(cached.embed_documents, batches))
    distinct = {t for b in batches for t in b}
    assert sorted(model.sent) == sorted(distinct)  # each distinct text sent once
    for batch, out in zip(batches, outs):  # every thread got its own texts' vectors, in order
        assert out.tolist() == [[len(t), t.count("a"), 1.0, 0.0] for t in batch]
    stats = cached.stats()
    assert (stats["texts_unique"], stats["texts_embedded"], stats["texts_from_cache"]) == (39, 39, 0)
    assert stats["n_texts"] == 300 and stats["n_cache_hits"] == 300 - 39
    # A second run over the same cache asks for all 40: only the one never asked (text 39) is sent.
    again = CachedEmbeddingModel(model, EmbeddingCache(tmp_path / "cache.sqlite"))
    again.embed_documents(texts)
    assert len(model.sent) == 40 and model.sent[-1] == texts[39]
    assert (again.stats()["texts_unique"], again.stats()["texts_embedded"], again.stats()["texts_from_cache"]) == (
        40, 1, 39)


class LateCache(EmbeddingCache):
    """A cache another thread fills between a caller's first look-up and its claim: the first
    ``get_many`` answers from before the other thread's write, then the write lands."""

    def __init__(self, path, late):
        super().__init__(path)
        self.late, self.looked = late, 0

    def get_many(self, model_id, keys):
        found = super().get_many(model_id, keys)
        self.looked += 1
        if self.looked == 1:
            self.put_many(model_id, self.late.items())
        return found


def test_a_text_another_thread_cached_after_the_look_up_is_not_embedded_again(tmp_path):
    from core.models.cache import text_sha256

    vector = np.array([9.0, 9.0, 1.0, 0.0], dtype=np.float32)
    model = CountingModel()
    cached = CachedEmbeddingModel(model, LateCache(tmp_path / "cache.sqlite", {text_sha256("done"): vector}))
    out = cached.embed_documents(["done", "new a"])
    assert model.sent == ["new a"]  # "done" came from the cache, as the other thread left it
    np.testing.assert_array_equal(out[0], vector)
    np.testing.assert_array_equal(out[1], [5.0, 1.0, 1.0, 0.0])  # CountingModel's vector of "new a"
    stats = cached.stats()
    assert (stats["texts_embedded"], stats["texts_from_cache"], stats["texts_unique"]) == (1, 1, 2)


class Echo:
    model_id = "echo"
    temperature = 0.0
    max_completion_tokens = 64

    def __init__(self) -> None:
        self.calls = 0
        self.usage = {"requests": 0}

    def chat(self, messages, *, max_completion_tokens=None, temperature=None):
        self.calls += 1
        return f"reply {self.calls} to {messages[-1]['content']}"


def test_chat_replies_are_cached_by_model_messages_and_parameters(tmp_path):
    cache = EmbeddingCache(tmp_path / "cache.sqlite")
    model = Echo()
    chat = CachedChatModel(model, cache)
    question = [{"role": "user", "content": "Où est la gare ?"}]
    first = chat.chat(question)
    assert chat.chat(question) == first and model.calls == 1
    assert chat.chat(question, temperature=0.7) != first and model.calls == 2  # other parameters: asked again
    # another process, the same cache file: no call
    again = CachedChatModel(Echo(), EmbeddingCache(tmp_path / "cache.sqlite"))
    assert again.chat(question) == first and again.stats() == {"chat_calls": 0, "replies_from_cache": 1}
    assert chat.usage == {"requests": 0}  # the wrapped model's attributes show through
    # The key is the sha256 of the canonical JSON of model, messages and parameters (hand-built here).
    import hashlib
    import json

    text = json.dumps({"model": "echo", "messages": question, "parameters": {"max_completion_tokens": 64,
                                                                          "temperature": 0.0}},
                      sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert reply_key("echo", question, {"max_completion_tokens": 64, "temperature": 0.0}) == \
        hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_threads_asking_the_same_question_make_one_call(tmp_path):
    class Slow(Echo):
        def chat(self, messages, *, max_completion_tokens=None, temperature=None):
            time.sleep(0.05)
            return super().chat(messages)

    model = Slow()
    chat = CachedChatModel(model, EmbeddingCache(tmp_path / "cache.sqlite"))
    question = [{"role": "user", "content": "same"}]
    with ThreadPoolExecutor(8) as pool:
        replies = list(pool.map(lambda _: chat.chat(question), range(8)))
    assert model.calls == 1 and set(replies) == {"reply 1 to same"}
    assert chat.stats() == {"chat_calls": 1, "replies_from_cache": 7}


class InstructedModel(CountingModel):
    """A ``CountingModel`` whose queries carry an instruction, as bge's do."""

    model_id = "instructed"
    query_instruction = "Q: "

    def embed_query(self, text):
        return self.embed_documents([self.query_instruction + text])[0]


def test_a_query_is_cached_apart_from_the_same_words_as_a_passage(tmp_path):
    model = InstructedModel()
    cached = CachedEmbeddingModel(model, EmbeddingCache(tmp_path / "c.sqlite"))
    passage = cached.embed_documents(["banana"])[0]
    query = cached.embed_query("banana")
    # the vectors the counting model gives by hand: [len, count of "a", 1, 0]
    np.testing.assert_array_equal(passage, [6, 3, 1, 0])
    np.testing.assert_array_equal(query, [9, 3, 1, 0])  # "Q: banana"
    assert model.sent == ["banana", "Q: banana"]
    np.testing.assert_array_equal(cached.embed_query("banana"), query)  # from the cache
    assert model.sent == ["banana", "Q: banana"] and cached.query_instruction == "Q: "
    # a model without an instruction embeds a query as a passage, through the same entry
    plain = CachedEmbeddingModel(CountingModel(), EmbeddingCache(tmp_path / "p.sqlite"))
    np.testing.assert_array_equal(plain.embed_query("banana"), plain.embed_documents(["banana"])[0])
    assert plain.model.sent == ["banana"]


def test_vectors_in_memory_are_bounded_and_equal_to_the_file(tmp_path):
    model = CountingModel()
    from core.models.cache import ENTRY_OVERHEAD_BYTES

    # room for 3 vectors of 4 float32s in memory, each counted with its overhead
    entry = 16 + ENTRY_OVERHEAD_BYTES
    cache = EmbeddingCache(tmp_path / "cache.sqlite", memory_bytes=3 * entry + entry - 1)
    cached = CachedEmbeddingModel(model, cache)
    texts = ["a", "aa", "aaa", "b", "bb"]
    first = cached.embed_documents(texts)
    assert cache._memory_bytes == 3 * entry and len(cache._memory) == 3
    # the two least recently used are gone from memory, still in the file
    assert [k for _, k in cache._memory] == [cache_key("aaa"), cache_key("b"), cache_key("bb")]
    again = cached.embed_documents(texts)
    np.testing.assert_array_equal(first, again)
    assert model.sent == texts  # nothing embedded twice
    # a fresh cache over the same file (memory empty) reads the same vectors
    other = EmbeddingCache(tmp_path / "cache.sqlite", memory_bytes=0)
    found = other.get_many("counting", [cache_key(t) for t in texts])
    np.testing.assert_array_equal(np.stack([found[cache_key(t)] for t in texts]), first)
    assert other._memory_bytes == 0
    # a vector handed out is a copy: changing it changes neither the memory nor later answers
    again[0, 0] = -1.0
    np.testing.assert_array_equal(cached.embed_documents(["a"])[0], first[0])


def cache_key(text):
    from core.models.embeddings import text_sha256

    return text_sha256(text)


def test_the_cache_file_is_in_wal_mode_and_commits_without_waiting_for_a_sync(tmp_path):
    import sqlite3

    cache = EmbeddingCache(tmp_path / "cache.sqlite")
    assert cache._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert cache._conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    cache.put_many("m", [("k", np.ones(4, dtype=np.float32))])
    # what a second process (a second connection) reads back
    other = sqlite3.connect(tmp_path / "cache.sqlite")
    assert other.execute("SELECT count(*) FROM embeddings").fetchone()[0] == 1
