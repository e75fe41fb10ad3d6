"""MilvusVectorStore with a LegMemo on Milvus Lite: the results are those of a store without
it, a second evaluation over the same collection asks Milvus nothing, a rebuilt collection
never answers from its former lists, and the bound holds.

The reference is the same collection searched by a store without a memo (whose rankings
``test_milvus_search_many`` and the vector-store contract check); requests are counted by a
thin wrapper around the real client. The collection holds 150 chunks with table vectors
(``tests/support/vectors.TableModel``), so hybrid windows (66 to 80 candidates) cut the legs;
five chunks share one vector and many texts score alike in BM25, so both legs have ties.
"""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from core.chunking.base import Chunk, make_chunk_id
from core.vectorstores import MilvusLiteConfig
from core.vectorstores.legs import LegMemo
from core.vectorstores.milvus import MilvusVectorStore, open_client
from tests.support.vectors import TableModel

pytestmark = pytest.mark.integration

DIM = 8
WORDS = ["zebra", "lion", "market", "river", "stone", "cloud", "apple", "tiger"]
#: Plain queries: vectors with nothing on the last axis, where the five tied chunks lie, so
#: their dense top lists have distinct scores. "tied" points at those five (cosine 1 each,
#: and 0 for every other chunk).
QUERIES = ["zebra lion", "market river stone", "cloud", "apple tiger zebra", "lion lion river"]
TIED = "tied"
SETUPS = [
    {"search_mode": "vector"},
    {"search_mode": "keyword"},
    {"search_mode": "hybrid", "ranker_strategy": "rrf", "ranker_k": 60},
    {"search_mode": "hybrid", "ranker_strategy": "weighted", "ranker_alpha": 0.3},
]


def corpus(seed: int = 7, n: int = 150) -> tuple[list[Chunk], dict[str, list[float]]]:
    """``n`` chunks and the table of their vectors and the queries'. A chunk's text is 3 to 6
    of :data:`WORDS` and its own number: many chunks have the same length and the same counts
    of a query's words, hence equal BM25 scores."""
    rng = np.random.default_rng(seed)
    table: dict[str, list[float]] = {}
    out = []
    for i in range(n):
        text = " ".join(rng.choice(WORDS, size=int(rng.integers(3, 7)))) + f" n{i}"
        if i < 5:
            vector = [0.0] * (DIM - 1) + [1.0]  # five chunks, one vector: tied dense scores
        else:
            vector = list(rng.normal(size=DIM - 1)) + [0.0]
        out.append(Chunk(text, make_chunk_id(f"d{i}.txt", 0, text),
                         {"document_id": f"d{i}.txt", "sequence_number": 0, "pages": [1], "headings": []}))
        table[text] = vector
    for q in QUERIES:
        table[q] = list(rng.normal(size=DIM - 1)) + [0.0]
    table[TIED] = [0.0] * (DIM - 1) + [1.0]
    return out, table


class Counting:
    """The real client, with its ``search`` and ``get`` requests counted (and the ids asked)."""

    def __init__(self, client):
        self._client = client
        self.searches: list[tuple[str, int, int]] = []  # (leg, limit, queries)
        self.got: list[str] = []

    def __getattr__(self, name):
        return getattr(self._client, name)

    def search(self, collection_name, data, anns_field, limit, **kwargs):
        self.searches.append((anns_field, limit, len(data)))
        return self._client.search(collection_name, data=data, anns_field=anns_field, limit=limit, **kwargs)

    def get(self, collection_name, ids, **kwargs):
        self.got.extend(ids)
        return self._client.get(collection_name, ids=ids, **kwargs)

    def reset(self):
        self.searches, self.got = [], []


class CountingModel(TableModel):
    """A table model counting the texts it embeds."""

    embedded = 0

    def embed_documents(self, texts):
        self.embedded += len(texts)
        return super().embed_documents(texts)

    def embed_query(self, text):
        self.embedded += 1
        return super().embed_query(text)


@pytest.fixture()
def setting(tmp_path):
    chunks, table = corpus()
    config = MilvusLiteConfig(str(tmp_path / "m.db"))
    client = Counting(open_client(config))
    name = f"ragtune_legs_{uuid.uuid4().hex[:8]}"
    model = CountingModel(table)
    plain = MilvusVectorStore(model, config, name, client=client)
    plain.add_documents(chunks)
    plain.flush()
    memo = LegMemo()

    def store(legs=memo):
        return MilvusVectorStore(model, config, name, client=client, legs=legs)

    yield plain, store, memo, client, model
    plain.delete_collection()
    client._client.close()


def plain_hits(found):
    return [[(h.chunk.chunk_id, h.chunk.text, h.chunk.metadata, h.rank, h.score) for h in hits] for hits in found]


@pytest.mark.parametrize("setup", SETUPS, ids=lambda s: "-".join(str(v) for v in s.values()))
def test_results_with_the_memo_equal_results_without(setting, setup):
    plain, store, memo, client, model = setting
    queries = [*QUERIES, TIED, QUERIES[0]]
    remembering = store()
    for k in (10, 3, 5, 1, 10, 20):  # shallower after deeper (prefixes), deeper after shallower
        assert plain_hits(remembering.search_many(queries, k=k, **setup)) == \
            plain_hits(plain.search_many(queries, k=k, **setup)), k
    assert memo.stats()["leg_hits"] > 0


def test_a_shallower_search_uses_the_prefix_and_a_deeper_one_searches_again(setting):
    plain, store, memo, client, model = setting
    s = store()
    s.search_many(QUERIES, k=10, search_mode="vector")
    client.reset()
    assert plain_hits(s.search_many(QUERIES, k=3, search_mode="vector")) == \
        plain_hits(plain.search_many(QUERIES, k=3, search_mode="vector"))[:len(QUERIES)]
    assert [leg for leg, _, _ in client.searches] == ["dense"]  # only the plain store's own search
    client.reset()
    s.search_many(QUERIES, k=20, search_mode="vector")
    assert client.searches == [("dense", 20, len(QUERIES))]  # deeper than remembered: all searched again
    # "tied": five chunks at cosine 1, then 145 at 0; a prefix would pick tied chunks Milvus's
    # search at that depth may not, so every other depth is searched
    s.search_many([TIED], k=10, search_mode="vector")
    client.reset()
    s.search_many([TIED], k=3, search_mode="vector")
    s.search_many([TIED], k=10, search_mode="vector")  # the same depth again: remembered
    assert client.searches == [("dense", 3, 1)]


def test_a_second_evaluation_asks_milvus_nothing(setting):
    plain, store, memo, client, model = setting
    first = store()
    expected = {}
    for setup in SETUPS:
        for k in (3, 10):
            expected[(str(setup), k)] = plain_hits(first.search_many(QUERIES, k=k, **setup))
    read_before = set(client.got)
    client.reset()
    embedded = model.embedded
    second = store()  # another evaluation of the run: a new store, the run's memo
    for setup in SETUPS:
        for k in (3, 10):
            assert plain_hits(second.search_many(QUERIES, k=k, **setup)) == expected[(str(setup), k)]
    assert client.searches == [] and client.got == []
    assert model.embedded == embedded  # no query embedded for legs the memo holds
    # rrf at k = 5 fetches the window 70 once; weighted at k = 5 then reuses both legs, and reads
    # only chunks no search kept before
    second.search_many(QUERIES, k=5, search_mode="hybrid", ranker_strategy="rrf")
    assert sorted(leg for leg, _, _ in client.searches) == ["dense", "sparse"]
    client.reset()
    seen = read_before | set(client.got)
    weighted = second.search_many(QUERIES, k=5, search_mode="hybrid", ranker_strategy="weighted", ranker_alpha=0.8)
    assert client.searches == [] and not set(client.got) & seen
    assert plain_hits(weighted) == plain_hits(plain.search_many(QUERIES, k=5, search_mode="hybrid",
                                                                ranker_strategy="weighted", ranker_alpha=0.8))


def test_a_rebuilt_collection_never_answers_from_its_former_lists(setting):
    plain, store, memo, client, model = setting
    s = store()
    before = plain_hits(s.search_many(QUERIES, k=5, search_mode="hybrid"))
    kept = memo.stats()["leg_pairs"]
    again = store()  # reused unchanged (exists, count): the entries stay
    assert again.exists() and again.count() == 150 and memo.stats()["leg_pairs"] == kept > 0
    # rebuilt with other contents by a store holding the memo (as core.evaluation.single does)
    chunks, table = corpus(seed=8)
    model.table.update({t: np.asarray(v, dtype=np.float32) for t, v in table.items() if t not in QUERIES})
    again.delete_collection()
    assert memo.stats()["leg_pairs"] == 0 and memo.stats()["chunks"] == 0
    again.add_documents(chunks)
    again.flush()
    after = plain_hits(again.search_many(QUERIES, k=5, search_mode="hybrid"))
    assert after == plain_hits(plain.search_many(QUERIES, k=5, search_mode="hybrid")) != before


def test_the_bound_holds_and_the_least_recently_used_goes_first(setting):
    plain, store, memo, client, model = setting
    small = LegMemo(max_pairs=3 * 10)  # three dense lists of 10
    s = store(small)
    for q in QUERIES[:3]:
        s.search_many([q], k=10, search_mode="vector")
    s.search_many([QUERIES[0]], k=10, search_mode="vector")  # used again: the most recent
    s.search_many([QUERIES[3]], k=10, search_mode="vector")  # QUERIES[1], the oldest, goes
    assert small.stats()["leg_pairs"] == 30
    client.reset()
    for q in (QUERIES[0], QUERIES[2], QUERIES[3]):
        s.search_many([q], k=10, search_mode="vector")
    assert client.searches == []
    found = s.search_many([QUERIES[1]], k=10, search_mode="vector")
    assert client.searches == [("dense", 10, 1)]
    assert plain_hits(found) == plain_hits(plain.search_many([QUERIES[1]], k=10, search_mode="vector"))


@pytest.mark.parametrize("setup", SETUPS, ids=lambda s: "-".join(str(v) for v in s.values()))
def test_a_miss_is_fetched_at_the_fetch_depth_and_answers_shallower_searches(setting, setup):
    plain, store, memo, client, model = setting
    memo.fetch_depth = 80
    s = store()
    queries = [*QUERIES, TIED]
    expected = {k: plain_hits(plain.search_many(queries, k=k, **setup)) for k in (3, 10, 5)}
    client.reset()
    for k in (3, 10, 5):
        assert plain_hits(s.search_many(queries, k=k, **setup)) == expected[k], k
    # the first search of each leg fetched 80 for every query, and no later one fetched that
    # deep again: a later request only for the queries whose lists have tied scores at its cut
    # (this corpus has many), at the depth that search asks for
    legs = {"vector": ["dense"], "keyword": ["sparse"], "hybrid": ["dense", "sparse"]}[setup["search_mode"]]
    asked = {"vector": {3, 10, 5}, "keyword": {3, 10, 5}, "hybrid": {66, 80, 70}}[setup["search_mode"]]
    assert [(leg, n) for leg, limit, n in client.searches if limit == 80] == [(leg, len(queries)) for leg in legs]
    assert all(limit in asked and n < len(queries) for _, limit, n in client.searches if limit != 80), client.searches


def test_leg_depth_of_each_kind_of_configuration():
    from core.evaluation.single import leg_depth, widest_leg

    assert leg_depth({"search_mode": "vector", "number_of_chunks": 5}) == 5
    assert leg_depth({"search_mode": "keyword", "number_of_chunks": 3}) == 3
    # hybrid: ranker_k + 2k (weighted fusion uses the default RRF constant, 60)
    assert leg_depth({"search_mode": "hybrid", "ranker_strategy": "rrf", "ranker_k": 40, "number_of_chunks": 10}) == 60
    assert leg_depth({"search_mode": "hybrid", "ranker_strategy": "weighted", "ranker_alpha": 0.5,
                      "number_of_chunks": 3}) == 66
    # a reranker's first stage: retrieval_depth, else 20
    assert leg_depth({"search_mode": "vector", "number_of_chunks": 5, "reranker": "local:x"}) == 20
    assert leg_depth({"search_mode": "hybrid", "ranker_strategy": "rrf", "ranker_k": 60, "number_of_chunks": 5,
                      "reranker": "local:x", "retrieval_depth": 30}) == 120
    assert leg_depth({"search_mode": "vector", "number_of_chunks": 5, "reranker": "none"}) == 5
    assert widest_leg([]) == 0
    assert widest_leg([{"search_mode": "vector", "number_of_chunks": 5},
                       {"search_mode": "hybrid", "ranker_strategy": "rrf", "ranker_k": -1, "number_of_chunks": 5},
                       {"search_mode": "keyword", "number_of_chunks": 10}]) == 10


def test_a_fetch_depth_past_milvus_limit_does_not_fail_the_searches_within_it(setting):
    # one configuration of a run asking for more than Milvus's largest limit (16384) fails its
    # own evaluation; the others' searches, fetched at the run's widest leg, must not fail too
    plain, store, memo, client, model = setting
    memo.fetch_depth = 20_000
    s = store()
    for setup in SETUPS:
        assert plain_hits(s.search_many(QUERIES, k=5, **setup)) == plain_hits(plain.search_many(QUERIES, k=5, **setup))
    # and the widening stops at MAX_WIDENED_DEPTH: no search of k = 5 fetches thousands
    from core.vectorstores.milvus import MAX_WIDENED_DEPTH

    assert {limit for _, limit, _ in client.searches} <= {5, 66, 70, MAX_WIDENED_DEPTH}
    assert MAX_WIDENED_DEPTH in {limit for _, limit, _ in client.searches}


class Slow(Counting):
    """A counting client whose searches and reads take ``delay_s`` longer: long enough for
    every thread of a test to ask while the first one's request is under way."""

    def __init__(self, client, delay_s):
        super().__init__(client)
        self.delay_s = delay_s

    def search(self, *args, **kwargs):
        import time

        time.sleep(self.delay_s)
        return super().search(*args, **kwargs)

    def get(self, *args, **kwargs):
        import time

        time.sleep(self.delay_s)
        return super().get(*args, **kwargs)


@pytest.mark.parametrize("setup", SETUPS[::2], ids=lambda s: s["search_mode"])
def test_evaluations_missing_the_same_leg_at_once_search_it_once(setting, setup):
    """Four stores (four evaluations of a run's first wave) search the same questions at the
    same moment: each leg is searched once and each chunk read once, and every store gets the
    plain store's results."""
    import threading

    plain, store, memo, client, model = setting
    expected = plain_hits(plain.search_many(QUERIES, k=5, **setup))
    slow = Slow(client._client, 0.2)
    stores = [MilvusVectorStore(model, plain.config, plain.collection_name, client=slow, legs=memo)
              for _ in range(4)]
    start = threading.Barrier(len(stores))
    found: dict[int, list] = {}

    def search(i):
        start.wait()
        found[i] = plain_hits(stores[i].search_many(QUERIES, k=5, **setup))

    threads = [threading.Thread(target=search, args=(i,)) for i in range(len(stores))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert [found[i] for i in range(len(stores))] == [expected] * len(stores)
    legs = ["dense"] if setup["search_mode"] == "vector" else ["dense", "sparse"]
    assert sorted(leg for leg, _, _ in slow.searches) == legs  # each leg once, not once per store
    assert len(slow.got) == len(set(slow.got))  # each chunk read once
    # every store's first look missed; the second look of those that waited is not counted
    assert (memo.stats()["leg_misses"], memo.stats()["leg_hits"]) == (len(stores) * len(legs) * len(QUERIES), 0)
