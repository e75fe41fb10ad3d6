"""Section passages (what drafted questions are written from) on a Markdown document with
known sections, read by the real loader (docling's Markdown backend), and the spread across
sections, checked by hand."""

from __future__ import annotations

import random

from core.documents import load_documents
from core.golden.passages import MIN_UNIT_WORDS, Passage, Unit, section_passages, spread_across_sections


def words(topic: str, n: int = 30) -> str:
    return " ".join(f"{topic}{i}" for i in range(n)) + "."


HANDBOOK = f"""# Handbook

{words("intro")}

## Leave

{words("leave")}

### Sick leave

{words("sick")}

## Pay

Paid monthly by transfer.

## Travel

{words("travel")}
"""


def test_a_document_splits_at_its_headings_and_short_sections_join_the_next(tmp_path):
    (tmp_path / "handbook.md").write_text(HANDBOOK, encoding="utf-8")
    (document,) = load_documents(tmp_path).documents
    passages = section_passages(document)
    # by hand: five headings give five sections; "Pay" (1 + 4 words) is under MIN_UNIT_WORDS
    # and takes in "Travel" after it, so four passages remain
    assert 5 < MIN_UNIT_WORDS
    assert [(p.section, p.part, p.unit.heading) for p in passages] == [
        (0, 0, "Handbook"), (1, 0, "Handbook > Leave"), (2, 0, "Handbook > Leave > Sick leave"),
        (3, 0, "Handbook > Pay")]
    assert [p.unit.n_words for p in passages] == [1 + 30, 1 + 30, 2 + 30, 1 + 4 + 1 + 30]
    assert passages[3].unit.paragraphs == ("Pay", "Paid monthly by transfer.", "Travel", words("travel"))
    assert all(p.unit.target == "handbook.md" and p.unit.page is None for p in passages)


def _passage(doc: str, section: int, part: int) -> Passage:
    return Passage(Unit(doc, part + 1, (f"{doc} {section} {part}",)), section, part)


def test_spread_takes_every_section_once_before_any_twice():
    # a.pdf: section 0 over three pages, section 1 on one; b.pdf: section 0 over two pages
    passages = [_passage("a.pdf", 0, 0), _passage("a.pdf", 0, 1), _passage("a.pdf", 0, 2), _passage("a.pdf", 1, 0),
                _passage("b.pdf", 0, 0), _passage("b.pdf", 0, 1)]
    key = [(p.unit.document_id, p.section, p.part) for p in passages]

    def picked(n, seed=0):
        return [key[passages.index(p)] for p in spread_across_sections(passages, n, seed)]

    assert picked(3) == [("a.pdf", 0, 0), ("a.pdf", 1, 0), ("b.pdf", 0, 0)]  # layer 0 whole
    # n = 4: layer 0 and one of layer 1 (a.0.1, b.0.1): spread_indices(2, 1, seed 0) takes
    # floor(random.Random(0).random() * 2) = floor(1.69) = 1, so b's second page
    assert int(random.Random(0).random() * 2) == 1
    assert picked(4) == [("a.pdf", 0, 0), ("a.pdf", 1, 0), ("b.pdf", 0, 0), ("b.pdf", 0, 1)]
    # n = 2: two of layer 0's three: step 1.5, start 0.844 * 1.5 = 1.27, indices 1 and 2
    assert picked(2) == [("a.pdf", 1, 0), ("b.pdf", 0, 0)]
    assert picked(10) == key  # all, in corpus order
