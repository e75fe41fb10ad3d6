"""Which passages may be a comparison's second passage (the rules of core.golden.passages),
on hand-made passages whose reasons are read off their text."""

from __future__ import annotations

from core.golden.passages import Unit, boilerplate_keys, second_passage_reason

PROSE = ("The dental plan pays eighty percent of routine check-ups and cleanings twice a year, and braces for adults "
         "are not covered by it at all.")  # 27 words, one paragraph


def unit(doc: str, page: int | None, *paragraphs: str, heading: str | None = None) -> Unit:
    return Unit(doc, page, tuple(paragraphs), heading)


def test_cover_contents_boilerplate_and_lists_are_not_fit():
    assert second_passage_reason(unit("a.pdf", 1, PROSE), n_pages=4) == "cover"
    assert second_passage_reason(unit("a.pdf", 1, PROSE), n_pages=2) is None  # a two-page note has no cover
    assert second_passage_reason(unit("a.pdf", 2, PROSE, heading="Annual report > Table of Contents"), 4) == \
        "table of contents"
    toc = unit("a.pdf", 2, "Part I", "Item 1. Financial Statements 3", "Item 2. Management's Discussion 17",
               "Item 3. Market Risk 29")
    assert second_passage_reason(toc, 4) == "table of contents"  # 3 of 4 paragraphs end in a page number
    bullets = unit("a.pdf", 3, *[f"- benefit number {i} applies" for i in range(12)])
    assert second_passage_reason(bullets, 4) == "not prose"  # 48 words, none in a paragraph of 8 or more
    disclaimer = unit("a.pdf", 2, PROSE)
    shared = boilerplate_keys([disclaimer, unit("b.pdf", 2, "  " + PROSE.upper()), unit("c.md", None, "Other text.")])
    assert second_passage_reason(disclaimer, 4, shared) == "boilerplate"
    assert second_passage_reason(unit("a.pdf", 3, PROSE), 4) is None
    assert boilerplate_keys([unit("a.pdf", 2, PROSE), unit("a.pdf", 3, PROSE)]) == frozenset()  # one document
