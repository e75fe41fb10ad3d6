"""The pieces of ``ragtune draft`` that need no model: reply parsing, refusals, the visiting
order, the reply cache and the options' checks (expected values by hand)."""

from __future__ import annotations

import json

import pytest

from core.errors import ConfigError
from core.golden.draft import (DraftOptions, DraftSummary, ReplyCache, is_refusal, parse_json_reply, request_key,
                               unanswerable_path, visiting_order)


def test_json_replies_with_fences_and_text_around():
    assert parse_json_reply('{"score": 0.5}') == {"score": 0.5}
    assert parse_json_reply('```json\n{"question": "Q?"}\n```') == {"question": "Q?"}
    assert parse_json_reply('Here it is: {"a": 1} hope it helps') == {"a": 1}
    assert parse_json_reply("[1, 2]") is None and parse_json_reply("no json") is None


@pytest.mark.parametrize("reply, refused", [
    ("I'm sorry, but I can't help with that.", True),
    ("I cannot do this.", True),
    ("As an AI, I must decline.", True),
    ('{"question": "I cannot find the reason?", "reference": "x"}', False),
    ("The passage is fine.", False),
])
def test_refusals(reply, refused):
    assert is_refusal(reply) is refused


def test_visiting_order_covers_the_corpus_first():
    # 9 candidates, 3 rows wanted: stride 3
    assert visiting_order(9, 3) == [0, 3, 6, 1, 4, 7, 2, 5, 8]
    assert visiting_order(4, 10) == [0, 1, 2, 3]
    assert visiting_order(0, 3) == []


def test_reply_cache_keeps_replies_and_skips_a_line_cut_short(tmp_path):
    path = tmp_path / "replies.jsonl"
    cache = ReplyCache(path)
    key = request_key("m", [{"role": "user", "content": "hi"}])
    assert key != request_key("m2", [{"role": "user", "content": "hi"}])
    cache.put(key, "m", "hello")
    with open(path, "a", encoding="utf-8") as fh:
        fh.write('{"key": "cut', )  # a crash in the middle of a line
    again = ReplyCache(path)
    assert again.get(key) == "hello" and len(again) == 1
    assert json.loads(path.read_text(encoding="utf-8").splitlines()[0]) == {"key": key, "model": "m", "reply": "hello"}


@pytest.mark.parametrize("kwargs", [{"n": 0}, {"tries": 0}, {"max_unusable": 0}, {"kinds": ()}, {"kinds": ("factual", "factual")},
                                    {"kinds": ("trivia",)}, {"grade_min_score": 1.5}, {"duplicate_cosine": 2}])
def test_options_out_of_range_are_refused(kwargs):
    with pytest.raises(ConfigError):
        DraftOptions(**kwargs)


def test_unanswerable_questions_go_beside_the_output():
    assert str(unanswerable_path("out/golden.jsonl")) == "out/golden.unanswerable.jsonl"
    assert str(unanswerable_path("drafts")) == "drafts.unanswerable.jsonl"


def test_why_short_says_why_by_hand():
    done = DraftSummary(n_wanted=2)
    done.written["factual"] = 2
    assert done.why_short() is None
    stopped = DraftSummary(n_wanted=5, stopped="the writer model m refused: 'no'")
    stopped.written["factual"] = 1
    assert stopped.why_short() == ("4 of the 5 rows asked for are missing: the run stopped (the writer model m "
                                   "refused: 'no')")


def test_the_stop_rule_is_no_part_of_a_runs_key(tmp_path):
    from core.documents import load_documents
    from core.golden.draft import run_key

    (tmp_path / "a.md").write_text("# A\n\nSome text about a thing.\n", encoding="utf-8")
    docs = load_documents(tmp_path).documents
    assert run_key(docs, DraftOptions(max_unusable=3), "w", "c") == run_key(docs, DraftOptions(), "w", "c")
    assert run_key(docs, DraftOptions(tries=2), "w", "c") != run_key(docs, DraftOptions(), "w", "c")
