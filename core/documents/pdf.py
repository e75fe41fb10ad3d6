"""Reading PDFs with pypdfium2 into a ``DoclingDocument``, one text item per paragraph.

docling's own PDF pipeline needs layout-model weights; this reader needs only the PDF's text
layer. A scanned PDF without a text layer gives no text (the loader reports it as skipped).

Paragraph rule (applied per page, to the lines pdfium reports, in pdfium's reading order):

* a blank line ends a paragraph;
* a line whose vertical pitch from the previous line (distance between their baselines) is more
  than ``PARAGRAPH_PITCH_RATIO`` times the page's typical line pitch starts a new paragraph
  (the "layout gap" of a paragraph break or a heading);
* a line that sits higher on the page than the previous one starts a new paragraph (a new
  column or text box);
* a line whose font height differs from the previous line's by more than
  ``FONT_HEIGHT_RATIO`` starts a new paragraph (headings);
* a line starting with a bullet (``•``, ``◦``, ``▪``, ``- ``, ``* ``) or a list number
  (``1.``, ``2)``) starts a new paragraph, so each list item is its own text item.

Lines inside a paragraph are joined with one space. A line ending with a hyphen is joined to
the next without a space and keeps the hyphen (``in-`` + ``network`` -> ``in-network``): the
hyphen was printed and may belong to the word. A soft hyphen (U+00AD, or pdfium's U+0002)
at a line end is dropped. pdfium's U+FFFE (a hyphen it merged across a line break) becomes
``-``.

The typical pitch is the median pitch of consecutive lines on the page when the page has at
least ``MIN_PITCH_SAMPLES`` of them, else the document's median, else 1.5 font heights.
The rule is tuned on the bundled northwind PDFs (single-spaced body text with about
1.7-line gaps between paragraphs) and holds for double-spaced text too, because the
threshold is relative to the page's own spacing.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.documents.limits import check_chars, check_pages
from core.limits import DocumentLimits

if TYPE_CHECKING:
    from pypdfium2 import PdfTextPage

#: A line starts a new paragraph when its pitch exceeds this multiple of the typical pitch.
PARAGRAPH_PITCH_RATIO = 1.3
#: A line starts a new paragraph when its font height differs by more than this factor.
FONT_HEIGHT_RATIO = 1.2
#: Pages with fewer consecutive-line pitches than this use the document's median pitch.
MIN_PITCH_SAMPLES = 5

_LIST_START = re.compile(r"^(?:[\u2022\u25e6\u25aa\u25ab\u25cf\u25cb\u25a0\u25a1\u2023\u2043]|[-*]\s|\d{1,2}[.)]\s)")
_SOFT_HYPHENS = ("\u00ad", "\x02")


@dataclass
class _Line:
    """One text line of a page, in PDF points with the origin at the bottom left."""

    text: str
    left: float
    right: float
    top: float  # top of the first character's font box
    first_bottom: float  # bottom of the first character's font box
    last_bottom: float  # bottom of the last character's font box (lower when pdfium merged lines)
    height: float  # font box height of the first character (a proxy for the font size)
    last_height: float


@dataclass
class PdfParagraph:
    """A paragraph of a PDF page.

    Attributes:
        text: the paragraph's text, lines joined (see the module docstring).
        page_no: 1-based page number.
        bbox: ``(left, top, right, bottom)`` in PDF points, origin at the bottom left.
    """

    text: str
    page_no: int
    bbox: tuple[float, float, float, float]


def _page_lines(textpage: PdfTextPage) -> list[_Line | None]:
    """Return the page's lines in pdfium order; ``None`` stands for a blank line."""
    text = textpage.get_text_range()
    lines: list[_Line | None] = []
    pos = 0
    for raw in text.split("\n"):
        line = raw.rstrip("\r")
        idx = [pos + i for i, ch in enumerate(line) if not ch.isspace()]
        pos += len(raw) + 1
        if not idx:
            lines.append(None)
            continue
        first = textpage.get_charbox(idx[0], loose=True)  # (left, bottom, right, top)
        last = textpage.get_charbox(idx[-1], loose=True)
        lines.append(
            _Line(
                text=line.strip(),
                left=min(first[0], last[0]),
                right=max(first[2], last[2]),
                top=max(first[3], last[3]),
                first_bottom=first[1],
                last_bottom=last[1],
                height=max(first[3] - first[1], 1e-3),
                last_height=max(last[3] - last[1], 1e-3),
            )
        )
    return lines


def _pitches(lines: list[_Line | None]) -> list[float]:
    """Baseline distances (points) between consecutive non-blank lines going down the page."""
    out = []
    for prev, cur in zip(lines, lines[1:]):
        if prev is None or cur is None:
            continue
        pitch = prev.last_bottom - cur.first_bottom
        if 0 < pitch < 4 * cur.height:
            out.append(pitch)
    return out


def _join(lines: list[str]) -> str:
    """Join a paragraph's lines (see the module docstring for the hyphen rules)."""
    out = ""
    for line in lines:
        line = line.replace("\ufffe", "-")
        if not out:
            out = line
        elif out.endswith(_SOFT_HYPHENS):
            out = out[:-1] + line
        elif out.endswith("-"):
            out += line
        else:
            out += " " + line
    for soft in _SOFT_HYPHENS:
        out = out.replace(soft, "")
    return re.sub(r"[ \t]+", " ", out).strip()


def _paragraphs(lines: list[_Line | None], typical_pitch: float | None, page_no: int) -> list[PdfParagraph]:
    """Group one page's lines into paragraphs (see the module docstring)."""
    out: list[PdfParagraph] = []
    current: list[_Line] = []

    def flush() -> None:
        if current:
            text = _join([ln.text for ln in current])
            if text:
                bbox = (
                    min(ln.left for ln in current),
                    max(ln.top for ln in current),
                    max(ln.right for ln in current),
                    min(ln.last_bottom for ln in current),
                )
                out.append(PdfParagraph(text=text, page_no=page_no, bbox=bbox))
            current.clear()

    prev: _Line | None = None
    for line in lines:
        if line is None:
            flush()
            prev = None
            continue
        if prev is not None:
            pitch = prev.last_bottom - line.first_bottom
            heights = (prev.last_height, line.height)
            expected = typical_pitch if typical_pitch else 1.5 * min(heights)
            new_paragraph = (
                line.first_bottom > prev.last_bottom + 0.5 * line.height  # moved up: new column or box
                or pitch > PARAGRAPH_PITCH_RATIO * expected  # layout gap
                or max(heights) / min(heights) > FONT_HEIGHT_RATIO  # font size change
                or bool(_LIST_START.match(line.text))  # list item
            )
            if new_paragraph:
                flush()
        current.append(line)
        prev = line
    flush()
    return out


def read_pdf(
    data: bytes, *, max_pages: int | None = None, max_chars: int | None = None
) -> tuple[list[PdfParagraph], list[tuple[float, float]]]:
    """Read a PDF's text layer into paragraphs.

    Args:
        data: the PDF file's bytes.
        max_pages: most pages: the page count is read from the document's page tree before
            any page is, and a PDF with more is refused. None: no limit.
        max_chars: most characters of text (pdfium's, counted page by page as the pages are
            read, so reading stops at the page that passes it). None: no limit.

    Returns:
        ``(paragraphs, page_sizes)``: paragraphs in page order (``page_no`` 1-based) and each
        page's ``(width, height)`` in PDF points (one entry per page, text or not).

    Raises:
        pypdfium2.PdfiumError: the bytes are not a readable PDF (corrupt, encrypted, ...).
        core.documents.limits.DocumentTooLarge: more pages or characters than allowed.
    """
    import pypdfium2 as pdfium

    limits = DocumentLimits(**{k: v for k, v in (("max_pages", max_pages), ("max_chars", max_chars)) if v})
    pdf = pdfium.PdfDocument(data)
    try:
        n_pages = len(pdf)
        if max_pages is not None:
            check_pages(n_pages, limits)
        page_lines: list[list[_Line | None]] = []
        sizes: list[tuple[float, float]] = []
        n_chars = 0
        for index in range(n_pages):
            page = pdf[index]
            try:
                sizes.append(tuple(page.get_size()))  # type: ignore[arg-type]
                textpage = page.get_textpage()
                try:
                    if max_chars is not None:
                        n_chars += textpage.count_chars()
                        check_chars(n_chars, limits)
                    page_lines.append(_page_lines(textpage))
                finally:
                    textpage.close()
            finally:
                page.close()
    finally:
        pdf.close()

    all_pitches = [p for lines in page_lines for p in _pitches(lines)]
    doc_pitch = statistics.median(all_pitches) if all_pitches else None
    paragraphs: list[PdfParagraph] = []
    for page_no, lines in enumerate(page_lines, start=1):
        pitches = _pitches(lines)
        pitch = statistics.median(pitches) if len(pitches) >= MIN_PITCH_SAMPLES else doc_pitch
        paragraphs.extend(_paragraphs(lines, pitch, page_no))
    return paragraphs, sizes
