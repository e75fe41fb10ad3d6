"""Running headers and footers in a real multi-page PDF (written here with placed text lines,
read back by the real loader, pypdfium2): they are found by the documented rule, never read as
a page's heading, left out of hints and passages, and hints give a few hundred characters of
the page's body. Expected headings, excerpts and keys are worked out by hand from the pages
below."""

from __future__ import annotations

import json

import pytest

from core.documents import load_documents
from core.golden.passages import (HINT_CHARS, document_units, line_key, running_lines, section_passages)
from core.golden.template import template_rows
from tests.support.pdf import write_pdf

HEADER = "Table of Contents"


def footer(page: int) -> str:
    return f"Apple Inc. | Q3 2023 Form 10-Q | {page}"


def body(topic: str, n_lines: int) -> list[str]:
    """``n_lines`` lines of a paragraph about ``topic`` (12 words a line)."""
    return [f"The {topic} line {i} says the company reported results for the quarter as planned." for i in range(n_lines)]


def page(number: int, heading: str | None, paragraphs: list[list[str]]) -> list[tuple[float, float, float, str]]:
    """A page: the running header at the top, an optional heading, paragraphs of 10 pt lines
    (14 pt apart, 28 pt between paragraphs), the running footer at the bottom."""
    lines = [(72, 760, 9, HEADER)]
    y = 720
    if heading:
        lines.append((72, y, 14, heading))
        y -= 30
    for paragraph in paragraphs:
        for text in paragraph:
            lines.append((72, y, 10, text))
            y -= 14
        y -= 14
    lines.append((72, 40, 9, footer(number)))
    return lines


@pytest.fixture(scope="module")
def filing(tmp_path_factory):
    """A five-page 10-Q-like PDF: page 1 a cover (header and footer only, a few words), pages
    2-5 body text; "Liquidity and Capital Resources" opens page 3; page 4 continues it."""
    pages = [
        [(72, 760, 9, HEADER), (72, 600, 20, "Quarterly Report"), (72, 40, 9, footer(1))],
        page(2, "Results of Operations", [body("revenue", 4), body("margin", 3)]),
        page(3, "Liquidity and Capital Resources", [body("cash", 5), body("debt", 3)]),
        page(4, None, [body("buyback", 4), body("dividend", 4)]),
        page(5, "Risk Factors", [body("risk", 6)]),
    ]
    folder = tmp_path_factory.mktemp("filing")
    (folder / "aapl-10q.pdf").write_bytes(write_pdf(pages))
    (document,) = load_documents(folder).documents
    return document


def test_running_header_and_footer_are_found_by_the_rule(filing):
    units = document_units(filing)
    pages = [list(u.paragraphs) for u in units]
    assert pages[1][0] == HEADER and pages[1][-1] == footer(2)  # the loader keeps them as paragraphs
    # the header is at the edge of 5 of 5 pages, the footer (digits read as one) of 5 of 5
    assert line_key(footer(13)) == line_key(footer(9)) == "apple inc. | q0 0 form 0-q | 0"
    assert running_lines(pages) == {line_key(HEADER), line_key(footer(1))}
    assert running_lines(pages[:2]) == frozenset()  # two pages are too few for any line to be running


def test_running_lines_are_never_a_heading_and_not_in_the_body(filing):
    units = document_units(filing)
    assert [u.heading for u in units] == [
        "Quarterly Report", "Results of Operations", "Liquidity and Capital Resources",
        "Liquidity and Capital Resources", "Risk Factors"]
    for u in units:
        assert HEADER not in u.body and not any(p.startswith("Apple Inc.") for p in u.body)
        assert u.paragraphs[0] == HEADER  # the text keeps every paragraph, for quotes
    assert units[0].near_empty and units[0].n_words == 2  # the cover's body: "Quarterly Report"
    assert not units[3].near_empty


def test_hints_give_a_few_hundred_characters_of_the_page_body(filing):
    rows = {r["expected"][0]: r["hint"] for r in template_rows([filing], n=10)}
    assert "aapl-10q.pdf#page=1" not in rows  # the cover is near empty once its header and footer are left out
    hint = rows["aapl-10q.pdf#page=3"]
    assert hint.startswith('page 3 of aapl-10q.pdf, under "Liquidity and Capital Resources": reads "The cash line 0')
    assert HEADER not in hint and "Apple Inc." not in hint
    excerpt = json.loads(hint.split(": reads ", 1)[1].rsplit("; write a question", 1)[0])
    # the body after the heading: 8 lines of 79-81 characters, far more than HINT_CHARS, cut at a word
    assert HINT_CHARS - 20 <= len(excerpt) <= HINT_CHARS + 3 and excerpt.endswith("...")
    page4 = rows["aapl-10q.pdf#page=4"]
    assert 'under "Liquidity and Capital Resources": reads "The buyback line 0' in page4


def test_passages_leave_running_lines_out(filing):
    passages = section_passages(filing)
    texts = [p.unit.text for p in passages]
    assert not any(HEADER in t or "Apple Inc." in t for t in texts)
    assert [p.unit.heading for p in passages if p.unit.page == 3] == ["Liquidity and Capital Resources"]
