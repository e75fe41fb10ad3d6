"""PDF paragraphs and pages: synthetic PDFs with known line positions, and PerksPlus.pdf."""

from __future__ import annotations

import pytest

from core.documents.pdf import read_pdf


def test_paragraphs_split_on_layout_gaps_font_size_and_bullets(make_pdf):
    # Body lines 14 pt apart, paragraphs 32 pt apart, a larger heading, two bullets.
    data = make_pdf(
        [
            [
                (72, 700, 18, "Annual Leave"),
                (72, 660, 11, "Employees get twenty-five days of in-"),
                (72, 646, 11, "network leave per year, booked through"),
                (72, 632, 11, "the HR portal."),
                (72, 600, 11, "Unused days expire in March."),
                (72, 586, 11, "Ask your manager for exceptions."),
                (72, 554, 11, "• Carry over up to five days"),
                (72, 540, 11, "• Sell back up to two days"),
            ]
        ]
    )
    paragraphs, sizes = read_pdf(data)
    assert sizes == [(612.0, 792.0)]
    assert [p.text for p in paragraphs] == [
        "Annual Leave",
        # the line-end hyphen is kept and joined without a space; other breaks become spaces
        "Employees get twenty-five days of in-network leave per year, booked through the HR portal.",
        "Unused days expire in March. Ask your manager for exceptions.",
        "• Carry over up to five days",
        "• Sell back up to two days",
    ]
    assert all(p.page_no == 1 for p in paragraphs)
    left, top, right, bottom = paragraphs[1].bbox
    assert left == pytest.approx(72, abs=1) and top > 660 > 632 > bottom and right > left


def test_double_spaced_lines_stay_one_paragraph(make_pdf):
    # Lines 28 pt apart (double spacing), paragraphs 56 pt apart: the rule is relative to the page.
    lines = [(72, 700 - 28 * i, 11, f"first paragraph line {i}") for i in range(4)]
    lines += [(72, 588 - 56 - 28 * i, 11, f"second paragraph line {i}") for i in range(3)]
    paragraphs, _ = read_pdf(make_pdf([lines]))
    assert [p.text for p in paragraphs] == [
        "first paragraph line 0 first paragraph line 1 first paragraph line 2 first paragraph line 3",
        "second paragraph line 0 second paragraph line 1 second paragraph line 2",
    ]


def test_pages_are_one_based_and_blank_pages_count(make_pdf):
    data = make_pdf([[(72, 700, 11, "On page one.")], [], [(72, 700, 11, "On page three.")]])
    paragraphs, sizes = read_pdf(data)
    assert len(sizes) == 3
    assert [(p.page_no, p.text) for p in paragraphs] == [(1, "On page one."), (3, "On page three.")]


def test_perksplus_phrases_land_on_their_pages(perks_pdf):
    # Expected pages read from pdfium's raw text of each page (before any paragraph logic):
    # the title is on page 1, the disclaimer on page 2, the lessons list on page 3 and the
    # last list item, "Food and supplements", on page 4.
    paragraphs, sizes = read_pdf(perks_pdf.read_bytes())
    assert len(sizes) == 4

    def page_of(phrase: str) -> int:
        (page,) = {p.page_no for p in paragraphs if phrase in p.text}
        return page

    assert page_of("PerksPlus Health and Wellness") == 1
    assert page_of("All rights reserved to Microsoft") == 2
    assert page_of("Skiing and snowboarding lessons") == 3
    assert page_of("Food and supplements") == 4
    # list items are paragraphs of their own
    assert "• Scuba diving lessons" in [p.text for p in paragraphs]
