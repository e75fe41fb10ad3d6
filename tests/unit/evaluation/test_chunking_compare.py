"""The chunking comparison's pieces, offline: the builds, the budget rule, the paired counts,
the technique names."""

from __future__ import annotations

import pytest

from core.chunking import Chunk
from core.errors import ConfigError
from core.evaluation.chunking import Build, builds_for, check_methods, compare_pair, within_budget
from core.vectorstores.base import RetrievedChunk


def test_builds_cover_every_combination_once():
    builds, left_out = builds_for(["recursive", "hierarchical", "sentence"], [64, 128], (True, False))
    assert [b.key for b in builds] == [
        "recursive-64-8-headings", "recursive-64-8-plain", "recursive-128-16-headings", "recursive-128-16-plain",
        "hierarchical-headings", "hierarchical-plain",
        "sentence-64-headings", "sentence-64-plain", "sentence-128-headings", "sentence-128-plain",
    ]
    assert left_out == []


def test_overlaps_not_smaller_than_the_size_are_left_out_and_listed():
    builds, left_out = builds_for(["fixed"], [16, 32], (False,), overlaps=[0, 16])
    assert [b.key for b in builds] == ["fixed-16-0-plain", "fixed-32-0-plain", "fixed-32-16-plain"]
    assert left_out == [{"method": "fixed", "chunk_size": 16, "chunk_overlap": 16,
                         "reason": "overlap 16 is not smaller than the size 16"}]


def test_unknown_technique_lists_the_known_ones():
    with pytest.raises(ConfigError, match="unknown chunking technique 'paragraphs'; known: recursive, hierarchical, "
                                          "hybrid, sentence, fixed, semantic, parent-child, markdown, llm, contextual"):
        check_methods(["recursive", "paragraphs"])
    with pytest.raises(ConfigError, match="the llm technique needs a chat model"):
        check_methods(["llm"])
    with pytest.raises(ConfigError, match="late chunking is not offered"):
        check_methods(["late"])
    assert check_methods([" sentence", "sentence", "fixed "]) == ("sentence", "fixed")


def _hit(cid: str, text: str, rank: int, **meta) -> RetrievedChunk:
    return RetrievedChunk(Chunk(text=text, chunk_id=cid, metadata={"document_id": "d", **meta}), 1.0 / rank, rank)


def test_budget_hands_over_whole_results_best_first_passing_over_what_does_not_fit():
    hits = [_hit("a", "x" * 40, 1), _hit("b", "y" * 70, 2), _hit("c", "z" * 50, 3), _hit("d", "w" * 10, 4)]
    # budget 100: a (40) fits; b (70) would make 110: passed over; c (50) makes 90; d (10) makes 100
    got = within_budget(hits, {}, 100)
    assert [c.chunk_id for c in got] == ["a", "c", "d"]
    assert sum(len(c.text) for c in got) == 100
    assert within_budget(hits, {}, 9) == []


def test_budget_hands_over_a_parent_once():
    parent = "P" * 60
    by_id = {cid: Chunk(text=t, chunk_id=cid, metadata={"document_id": "d", "parent_id": pid, "parent_text": pt})
             for cid, t, pid, pt in [("a", "aa", "p1", parent), ("b", "bb", "p1", parent), ("c", "cc", "p2", "Q" * 30)]}
    hits = [_hit("a", "aa", 1), _hit("b", "bb", 2), _hit("c", "cc", 3)]
    got = within_budget(hits, by_id, 100)
    assert [c.text for c in got] == [parent, "Q" * 30]  # 60 + 30 characters; b's parent already handed


def test_paired_counts_by_hand():
    a = [True, True, False, None, True, False]
    b = [False, True, True, True, False, False]
    # only a: questions 0 and 4; only b: question 2; question 3 is not scored for a
    assert compare_pair(a, b) == {"only_first": 2, "only_second": 1, "p_value": 1.0}


def test_build_key_names_every_setting():
    assert Build("fixed", 128, 16, False).key == "fixed-128-16-plain"
    assert Build("hierarchical", None, None, True).key == "hierarchical-headings"


def test_parent_handing_store_hands_each_parent_once():
    from core.evaluation.handing import ParentHandingStore

    made = [Chunk(text=t, chunk_id=cid, metadata={"document_id": "d", "parent_id": pid, "parent_text": pt})
            for cid, t, pid, pt in [("a", "aa", "p1", "Parent one."), ("b", "bb", "p1", "Parent one."),
                                    ("c", "cc", "p2", "Parent two.")]]

    class Store:
        collection_name = "x"

        def search(self, query, k=10, **setup):
            return [_hit("b", "bb", 1), _hit("a", "aa", 2), _hit("c", "cc", 3), _hit("z", "plain chunk", 4)]

    hits = ParentHandingStore(Store(), made).search("q", k=4, search_mode="vector")
    assert [(h.chunk.text, h.rank) for h in hits] == [("Parent one.", 1), ("Parent two.", 2), ("plain chunk", 3)]
    assert ParentHandingStore(Store(), made).collection_name == "x"
