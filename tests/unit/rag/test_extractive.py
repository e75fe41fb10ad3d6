"""The extractive baseline: sentence splitting, ranking by cosine, and (slow) the real local
embedding model on a tiny corpus."""

from __future__ import annotations

import pytest

from core.errors import ConfigError
from core.models import ChatModel
from core.rag import NO_ANSWER, ExtractiveGenerator, split_sentences
from tests.unit.rag.helpers import BagOfWords


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("One. Two! Three? Four", ["One.", "Two!", "Three?", "Four"]),
        ("Dr. Smith met J. R. R. Tolkien. They talked.", ["Dr. Smith met J. R. R. Tolkien.", "They talked."]),
        ("Use e.g. this, i.e. that. Then stop.", ["Use e.g. this, i.e. that.", "Then stop."]),
        ("It costs 3.5 million. 2020 was hard.", ["It costs 3.5 million.", "2020 was hard."]),
        ('He said "Stop." Then left.', ['He said "Stop."', "Then left."]),
        ("lowercase. after a period stays", ["lowercase. after a period stays"]),
        ("A line broken\nmid sentence. Next one.", ["A line broken mid sentence.", "Next one."]),
        ("Title\n\nBody text", ["Title", "Body text"]),
        ("Items:\n- first item\n- second item", ["Items:", "- first item", "- second item"]),
        ("", []),
        ("  ...  \n\n ---", []),
    ],
)
def test_split_sentences(text, expected):
    assert split_sentences(text) == expected


def test_long_runs_are_cut_at_spaces():
    text = " ".join(["word"] * 300)  # 1499 characters, no sentence end
    pieces = split_sentences(text, max_chars=100)
    assert all(len(p) <= 100 for p in pieces) and " ".join(pieces) == text
    assert split_sentences("x" * 250, max_chars=100) == ["x" * 100, "x" * 100, "x" * 50]
    with pytest.raises(ConfigError):
        split_sentences("a", max_chars=0)


def test_ranks_by_cosine_with_hand_computed_scores():
    # Bag-of-words vectors: q = {who, wrote, hamlet}; "Shakespeare wrote Hamlet." shares
    # {wrote, hamlet}: cos = 2 / (sqrt(3) * sqrt(3)) = 2/3. "Who is Hamlet?" shares {who, hamlet}:
    # 2/3 too (tie: passage order decides). "The sky is blue." shares nothing: 0.
    gen = ExtractiveGenerator(BagOfWords(), max_sentences=2)
    passages = ["The sky is blue. Shakespeare wrote Hamlet.", "Who is Hamlet?"]
    ranked = gen.rank_sentences("Who wrote Hamlet", passages)
    assert [s for s, _ in ranked] == ["Shakespeare wrote Hamlet.", "Who is Hamlet?", "The sky is blue."]
    assert ranked[0][1] == pytest.approx(2 / 3) and ranked[1][1] == pytest.approx(2 / 3)
    assert ranked[2][1] == pytest.approx(0.0)
    assert gen.answer_from_passages("Who wrote Hamlet", passages) == "Shakespeare wrote Hamlet. Who is Hamlet?"


def test_repeated_sentences_from_overlapping_chunks_count_once():
    gen = ExtractiveGenerator(BagOfWords(), max_sentences=3)
    answer = gen.answer_from_passages("blue sky", ["The sky is blue. Grass.", "The sky is blue. Trees."])
    assert answer.count("The sky is blue.") == 1


def test_no_passages_give_the_no_answer_text():
    gen = ExtractiveGenerator(BagOfWords())
    assert gen.answer_from_passages("anything?", []) == NO_ANSWER
    assert gen.answer_from_passages("anything?", ["", "  \n"]) == NO_ANSWER


def test_model_id_and_chat_protocol():
    gen = ExtractiveGenerator(BagOfWords(), max_sentences=1)
    assert gen.model_id == "extractive:test:bag-of-words"
    assert isinstance(gen, ChatModel)
    messages = [
        {"role": "system", "content": "ignored: Hamlet Hamlet Hamlet."},
        {"role": "user", "content": "Shakespeare wrote Hamlet. The sky is blue."},
        {"role": "user", "content": "Who wrote Hamlet?"},
    ]
    assert gen.chat(messages) == "Shakespeare wrote Hamlet."
    with pytest.raises(ConfigError):
        gen.chat([{"role": "assistant", "content": "x"}])
    with pytest.raises(ConfigError):
        ExtractiveGenerator(BagOfWords(), max_sentences=0)


CORPUS = [
    "Paris is the capital of France. The city lies on the Seine. It has many museums.",
    "The Amazon is the largest rainforest on Earth. It spans nine countries.",
    "Photosynthesis turns light into chemical energy. Plants release oxygen.",
]


@pytest.mark.slow
def test_real_local_model_on_a_tiny_corpus():
    from core.models import LocalEmbeddingModel

    gen = ExtractiveGenerator(LocalEmbeddingModel(), max_sentences=1)
    assert gen.model_id == "extractive:local:all-MiniLM-L6-v2"
    assert gen.answer_from_passages("What is the capital city of France?", CORPUS) == "Paris is the capital of France."
    assert gen.answer_from_passages("Which gas do plants give off?", CORPUS) == "Plants release oxygen."
    # The two sentences about the rainforest outrank every other one.
    ranked = gen.rank_sentences("How many countries does the rainforest cover?", CORPUS)
    assert {s for s, _ in ranked[:2]} == {"The Amazon is the largest rainforest on Earth.", "It spans nine countries."}
    assert all(-1.0 <= s <= 1.0 for _, s in ranked) and len(ranked) == 7
