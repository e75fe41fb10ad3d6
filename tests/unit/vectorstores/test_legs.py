"""LegMemo: which remembered leg lists answer a search at another depth, invalidation by
writes, and the bounds (least recently used dropped first).

The lists are written by hand; a list answers depth ``d`` when it is the same request, or its
first ``d + 1`` scores are strictly decreasing (then any exact search must return that
prefix), as the module docstring argues.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from core.errors import ConfigError
from core.vectorstores.legs import FIELD_OVERHEAD_CHARS, LegMemo

A = ("/db", "coll_a")
B = ("/db", "coll_b")
#: Five candidates with distinct scores, best first.
DISTINCT = [("c1", 0.9), ("c2", 0.8), ("c3", 0.7), ("c4", 0.6), ("c5", 0.5)]
#: c2 and c3 tie.
TIED = [("c1", 0.9), ("c2", 0.8), ("c3", 0.8), ("c4", 0.6), ("c5", 0.5)]


def remember(memo, pairs, depth, binding=A, leg="dense", query="q"):
    memo.remember_leg(binding, memo.generation(binding), leg, query, depth, pairs)


def test_a_deeper_list_answers_shallower_searches_by_its_prefix():
    memo = LegMemo()
    remember(memo, DISTINCT, 5)
    assert memo.leg(A, "dense", "q", 5) == DISTINCT
    assert memo.leg(A, "dense", "q", 3) == DISTINCT[:3]
    assert memo.leg(A, "dense", "q", 1) == DISTINCT[:1]
    # a full list (5 of depth 5) may have more past it: a deeper search is not answered
    assert memo.leg(A, "dense", "q", 6) is None
    # other leg, query or collection: nothing
    assert memo.leg(A, "sparse", "q", 3) is None and memo.leg(A, "dense", "other", 3) is None
    assert memo.leg(B, "dense", "q", 3) is None
    assert memo.stats()["leg_hits"] == 3 and memo.stats()["leg_misses"] == 4


def test_ties_reaching_the_cut_are_not_answered_from_a_prefix():
    memo = LegMemo()
    remember(memo, TIED, 5)
    assert memo.leg(A, "dense", "q", 5) == TIED  # the same request: the same list, tie order included
    assert memo.leg(A, "dense", "q", 1) == TIED[:1]  # scores 0.9 > 0.8: c1 alone is first
    # depth 2 cuts the tie c2 = c3 (which one comes second is Milvus's choice); depth 3 holds
    # both, but their order is Milvus's choice again
    assert memo.leg(A, "dense", "q", 2) is None and memo.leg(A, "dense", "q", 3) is None
    # fetched again at depth 3, that list is kept beside the deeper one and answers depth 3
    remember(memo, [("c1", 0.9), ("c3", 0.8), ("c2", 0.8)], 3)
    assert memo.leg(A, "dense", "q", 3) == [("c1", 0.9), ("c3", 0.8), ("c2", 0.8)]
    assert memo.leg(A, "dense", "q", 5) == TIED and memo.stats()["leg_lists"] == 2


def test_a_list_shorter_than_its_depth_answers_every_depth():
    # 3 results at depth 10: the leg has no more candidates (a small collection, or BM25 matching
    # three chunks), so any depth gets the same three
    memo = LegMemo()
    remember(memo, DISTINCT[:3], 10, leg="sparse")
    assert memo.leg(A, "sparse", "q", 80) == DISTINCT[:3]
    assert memo.leg(A, "sparse", "q", 2) == DISTINCT[:2]
    remember(memo, [], 10, query="nothing")  # no candidate at all
    assert memo.leg(A, "dense", "nothing", 66) == []
    remember(memo, TIED[:3], 10, query="tied")  # ... unless ties leave the order to Milvus
    assert memo.leg(A, "dense", "tied", 80) is None and memo.leg(A, "dense", "tied", 10) == TIED[:3]


def test_a_deeper_list_replaces_the_shallower_ones_it_answers():
    memo = LegMemo()
    remember(memo, DISTINCT[:3], 3)
    assert memo.leg(A, "dense", "q", 5) is None  # deeper than fetched: searched again
    remember(memo, DISTINCT, 5)
    assert memo.stats()["leg_lists"] == 1 and memo.stats()["leg_pairs"] == 5
    assert memo.leg(A, "dense", "q", 3) == DISTINCT[:3]
    returned = memo.leg(A, "dense", "q", 5)
    returned.pop()  # a caller changing its list changes nothing remembered
    assert memo.leg(A, "dense", "q", 5) == DISTINCT


def test_a_write_drops_the_collections_entries_and_what_searches_started_before_fetched():
    memo = LegMemo()
    remember(memo, DISTINCT, 5)
    remember(memo, DISTINCT, 5, binding=B)
    memo.remember_fields(A, memo.generation(A), {"c1": {"text": "one"}})
    before = memo.generation(A)  # a search starts
    with memo.changing(A):  # the collection is rebuilt
        assert memo.leg(A, "dense", "q", 5) is None
        memo.remember_leg(A, memo.generation(A), "dense", "q", 5, DISTINCT)  # read mid-write ...
    assert memo.leg(A, "dense", "q", 5) is None  # ... is dropped on the way out
    memo.remember_leg(A, before, "dense", "q", 5, DISTINCT)  # the search started before ends
    memo.remember_fields(A, before, {"c1": {"text": "old"}})
    assert memo.leg(A, "dense", "q", 5) is None and memo.fields(A, ["c1"]) == {}
    assert memo.leg(B, "dense", "q", 5) == DISTINCT  # another collection keeps its entries
    remember(memo, DISTINCT, 5)  # a search after the write is kept
    assert memo.leg(A, "dense", "q", 5) == DISTINCT
    memo.clear()  # the database closed: nothing kept, nothing in flight kept either
    generation = memo.generation(B)
    assert memo.leg(B, "dense", "q", 5) is None and memo.stats()["leg_pairs"] == 0
    memo.remember_leg(B, generation, "dense", "q", 5, DISTINCT)
    assert memo.leg(B, "dense", "q", 5) == DISTINCT


def test_fields_are_kept_by_collection_and_id():
    memo = LegMemo()
    memo.remember_fields(A, memo.generation(A), {"c1": {"text": "one", "document_id": "d"}, "c2": {"text": "two"}})
    assert memo.fields(A, ["c1", "c3"]) == {"c1": {"text": "one", "document_id": "d"}}
    assert memo.fields(B, ["c1"]) == {}
    assert memo.stats()["field_chars"] == 3 + 3 + 2 * FIELD_OVERHEAD_CHARS
    assert (memo.stats()["field_hits"], memo.stats()["field_misses"]) == (1, 2)


def test_the_bounds_drop_the_least_recently_used_first():
    memo = LegMemo(max_pairs=10, max_field_chars=3 * (FIELD_OVERHEAD_CHARS + 1))
    remember(memo, DISTINCT, 5, query="first")
    remember(memo, DISTINCT, 5, query="second")
    assert memo.leg(A, "dense", "first", 5) == DISTINCT  # used: now the most recent
    remember(memo, DISTINCT[:1], 5, query="third")  # 11 pairs > 10: "second" goes
    assert memo.leg(A, "dense", "second", 5) is None
    assert memo.leg(A, "dense", "first", 5) == DISTINCT and memo.leg(A, "dense", "third", 5) == DISTINCT[:1]
    assert memo.stats()["leg_pairs"] == 6
    remember(memo, [(f"x{i}", 1.0 - i / 100) for i in range(11)], 11, query="huge")  # larger than the bound
    assert memo.leg(A, "dense", "huge", 11) is None and memo.stats()["leg_pairs"] == 0

    generation = memo.generation(A)
    memo.remember_fields(A, generation, {"a": {"text": "1"}, "b": {"text": "2"}, "c": {"text": "3"}})
    assert set(memo.fields(A, ["a"])) == {"a"}  # "a" used: "b" is now the oldest
    memo.remember_fields(A, generation, {"d": {"text": "4"}})
    assert set(memo.fields(A, ["a", "b", "c", "d"])) == {"a", "c", "d"}
    assert memo.stats()["field_chars"] == 3 * (FIELD_OVERHEAD_CHARS + 1)


def test_bad_arguments_are_config_errors():
    with pytest.raises(ConfigError, match="bounds"):
        LegMemo(max_pairs=-1)
    memo = LegMemo()
    with pytest.raises(ConfigError, match="leg must be one of dense, sparse"):
        memo.remember_leg(A, memo.generation(A), "bm25", "q", 3, DISTINCT)
    with pytest.raises(ConfigError, match="depth"):
        memo.remember_leg(A, memo.generation(A), "dense", "q", 0, DISTINCT)


def test_threads_share_it_within_the_bound():
    memo = LegMemo(max_pairs=50)

    def work(i):
        query = f"q{i % 20}"
        remember(memo, DISTINCT, 5, query=query)
        found = memo.leg(A, "dense", query, 3)
        assert found is None or found == DISTINCT[:3]

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(work, range(400)))
    assert memo.stats()["leg_pairs"] <= 50
