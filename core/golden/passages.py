"""Documents seen as the units a golden file labels: pages of paged documents, whole documents
otherwise, each with the text, the heading above it and the page number as printed.

Templates (:mod:`core.golden.template`), suggested labels (:mod:`core.golden.suggest`), drafted
questions (:mod:`core.golden.draft`) and the stale-evidence check (:mod:`core.golden.stale`)
read documents through :func:`document_units`.

Rules:

- A PDF gives one :class:`Unit` per page (``page`` 1-based), with every page, empty or not;
  any other document gives one unit for the whole document (``page`` None).
- Headings: docling's title and section-header items; in a PDF (whose text items carry no
  labels) a paragraph of at most :data:`HEADING_MAX_WORDS` words that starts with a capital
  letter or a digit and does not end in sentence punctuation. A unit's ``heading`` is the
  last heading at or before its first paragraph (possibly from an earlier page).
- The printed page number is read from the first or last paragraph of a page when it is only
  a page number: ``7``, ``Page 7``, ``7 of 104``, ``- 7 -`` or a roman numeral (``iv``).
- Running headers and footers (:func:`running_lines`): in a PDF of at least
  :data:`REPEAT_MIN_PAGES` pages, a paragraph among the first or last :data:`EDGE_PARAGRAPHS`
  of a page is a running header or footer when the same line, compared casefolded, with
  whitespace collapsed and every run of digits read as one digit (so ``Apple Inc. | Q3 2023
  Form 10-Q | 13`` on page 13 is the line on page 14 too), is among the edge paragraphs of at
  least :data:`REPEAT_MIN_SHARE` of the document's pages with text, and on at least
  :data:`REPEAT_MIN_PAGES` of them. Those paragraphs, and a page number alone at a page's
  edge, are not the page's body: they are never its heading, and hints and the near-empty
  rule read the body only (the unit's ``text`` keeps every paragraph, for quotes).
- A unit is near empty (a cover, a divider, a blank page) when its body has fewer than
  :data:`MIN_UNIT_WORDS` words.

Sections (:func:`section_passages`, the passages drafted questions are written from):

- A section starts at each heading: the title and section-header items, with the heading
  paths the chunkers use (``core.chunking.spans.document_text``); in a PDF without labelled
  headings, at each paragraph that looks like a heading (the rule above). Text before the
  first heading is a section of its own.
- A section is cut at page breaks, so each passage lies on one page (``target`` is that page,
  or the document when it has no pages). Running headers, footers and page numbers are left
  out of passages (and so never start a section).
- A passage of fewer than :data:`MIN_UNIT_WORDS` words takes in the passages after it on the
  same page (or document) until it has enough; one still short at the page's end joins the
  passage before it; one alone on its page stays near empty.
- :func:`spread_across_sections` picks passages one section at a time: every section's first
  passage before any section's second, evenly through the corpus from a start the seed picks.

Passages fit to be a comparison's second passage (:func:`second_passage_reason` says why one is
not): not a cover (the first page of a PDF of :data:`REPEAT_MIN_PAGES` pages or more), not a
table of contents (a heading or first paragraph ``Contents`` / ``Table of Contents``, or at least
:data:`TOC_SHARE` of three or more paragraphs ending in a page number), not boilerplate (the same
text, casefolded and with whitespace collapsed, in another document: a disclaimer or a notice
every document repeats), and with at least :data:`MIN_UNIT_WORDS` words in paragraphs of at least
:data:`SUBSTANTIVE_MIN_WORDS` words (prose, not a list of short lines).
"""

from __future__ import annotations

import math
import random
import re
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable

from core.chunking.spans import document_text
from core.errors import ConfigError

if TYPE_CHECKING:
    from docling_core.types.doc import DoclingDocument

    from core.documents.base import LoadedDocument

#: A page or document with fewer words than this is near empty (covers, dividers, blank pages).
MIN_UNIT_WORDS = 25
#: A PDF paragraph of at most this many words may be a heading (see the module's rules).
HEADING_MAX_WORDS = 10
#: Characters of a unit's start shown in hints.
START_CHARS = 160
#: Paragraphs at each end of a page where running headers and footers are looked for.
EDGE_PARAGRAPHS = 2
#: A line at a page's edge on at least this share of a document's pages with text is running.
REPEAT_MIN_SHARE = 0.4
#: ... and on at least this many pages (a document needs as many for any line to be running).
REPEAT_MIN_PAGES = 3
#: Most characters of a page's substantive text in a template hint: a few hundred, enough to
#: write a question from.
HINT_CHARS = 400
#: A paragraph of at least this many words is substantive: a hint's excerpt starts at the first.
SUBSTANTIVE_MIN_WORDS = 8

_PRINTED_PAGE = re.compile(
    r"^\W{0,3}(?:page\s+)?(?P<n>[0-9]{1,4}|[ivxlcdm]{1,7})(?:\s*(?:of|/)\s*[0-9]{1,4})?\W{0,3}$", re.IGNORECASE
)
_SENTENCE_END = (".", ",", ";", ":", "!", "?")


@dataclass(frozen=True)
class Unit:
    """One page of a paged document, or one whole document.

    Attributes:
        document_id: the document's id (its path relative to the corpus folder).
        page: 1-based page number, or None for a whole document.
        paragraphs: the unit's text items, in reading order (headings included).
        heading: the heading the unit's start sits under, or None.
        printed_page: the page number as printed on the page, or None when none is found.
        body_paragraphs: the paragraphs without running headers, footers and page numbers
            (see the module's rules), or None when there are none to leave out.
    """

    document_id: str
    page: int | None
    paragraphs: tuple[str, ...]
    heading: str | None = None
    printed_page: str | None = None
    body_paragraphs: tuple[str, ...] | None = None

    @property
    def target(self) -> str:
        """The unit as an ``expected`` value: ``doc`` or ``doc#page=N``."""
        return self.document_id if self.page is None else f"{self.document_id}#page={self.page}"

    @property
    def text(self) -> str:
        """The paragraphs joined by newlines."""
        return "\n".join(self.paragraphs)

    @property
    def body(self) -> tuple[str, ...]:
        """The paragraphs without running headers, footers and page numbers."""
        return self.paragraphs if self.body_paragraphs is None else self.body_paragraphs

    @property
    def n_words(self) -> int:
        """Words in the unit's body (whitespace-separated)."""
        return sum(len(p.split()) for p in self.body)

    @property
    def near_empty(self) -> bool:
        """True when the unit has fewer than :data:`MIN_UNIT_WORDS` words."""
        return self.n_words < MIN_UNIT_WORDS

    def start(self, n_chars: int = START_CHARS) -> str:
        """The first ``n_chars`` characters of the body, whitespace collapsed, cut at a word
        boundary with ``...`` when longer."""
        return _cut(" ".join(" ".join(self.body).split()), n_chars)

    def excerpt(self, n_chars: int = HINT_CHARS) -> str:
        """Up to ``n_chars`` characters of the body's substantive text: from its first
        paragraph of at least :data:`SUBSTANTIVE_MIN_WORDS` words (the whole body when none
        is that long), whitespace collapsed, cut at a word boundary with ``...``."""
        body = self.body
        first = next((i for i, p in enumerate(body) if len(p.split()) >= SUBSTANTIVE_MIN_WORDS), 0)
        return _cut(" ".join(" ".join(body[first:]).split()), n_chars)


def _cut(text: str, n_chars: int) -> str:
    if len(text) <= n_chars:
        return text
    cut = text[:n_chars].rsplit(" ", 1)[0]
    return f"{cut or text[:n_chars]}..."


def line_key(paragraph: str) -> str:
    """A paragraph as running headers and footers are compared: casefolded, whitespace
    collapsed, every run of digits one ``0`` (``Form 10-Q | 13`` and ``Form 10-Q | 9`` match)."""
    return re.sub(r"[0-9]+", "0", " ".join(paragraph.casefold().split()))


def running_lines(pages: list[list[str]] | list[tuple[str, ...]]) -> frozenset[str]:
    """The running headers and footers of a paged document, as :func:`line_key` keys (see the
    module's rules).

    Args:
        pages: each page's paragraphs in reading order (empty pages too).

    Returns:
        The keys of lines at the edges of at least :data:`REPEAT_MIN_SHARE` of the pages with
        text, and of at least :data:`REPEAT_MIN_PAGES` pages; empty for shorter documents.
    """
    with_text = [p for p in pages if p]
    if len(with_text) < REPEAT_MIN_PAGES:
        return frozenset()
    seen: dict[str, int] = {}
    for paragraphs in with_text:
        for key in {line_key(t) for t in _edges(paragraphs)}:
            seen[key] = seen.get(key, 0) + 1
    need = max(REPEAT_MIN_PAGES, math.ceil(REPEAT_MIN_SHARE * len(with_text)))
    return frozenset(k for k, n in seen.items() if n >= need and k)


def _edges(paragraphs: list[str] | tuple[str, ...]) -> list[str]:
    n = len(paragraphs)
    return [paragraphs[i] for i in sorted(set(range(min(EDGE_PARAGRAPHS, n))) | set(range(max(0, n - EDGE_PARAGRAPHS), n)))]


def page_body(paragraphs: list[str] | tuple[str, ...], running: frozenset[str]) -> list[bool]:
    """Per paragraph of a page, whether it is body: not among the page's edge paragraphs with a
    running key (:func:`running_lines`) or a page number alone."""
    n = len(paragraphs)
    edge = set(range(min(EDGE_PARAGRAPHS, n))) | set(range(max(0, n - EDGE_PARAGRAPHS), n))
    return [not (i in edge and (line_key(t) in running or _PRINTED_PAGE.match(t.strip())))
            for i, t in enumerate(paragraphs)]


def spread_indices(n_items: int, n: int, seed: int) -> list[int]:
    """Indices of ``n`` items spread evenly through ``n_items``, from a start the seed picks.

    With ``step = n_items / n`` the indices are ``floor(start + i * step)`` for ``i < n``, with
    ``start`` drawn uniformly from ``[0, step)`` by ``random.Random(seed)``. All indices when
    ``n >= n_items``.

    Args:
        n_items: how many items there are (>= 0).
        n: how many to take (>= 1).
        seed: the seed of the start.

    Returns:
        Distinct indices in increasing order.

    Raises:
        ConfigError: ``n`` is below 1.
    """
    if n < 1:
        raise ConfigError(f"the number of rows must be at least 1, got {n}")
    if n >= n_items:
        return list(range(n_items))
    step = n_items / n
    start = random.Random(seed).random() * step
    return [min(n_items - 1, math.floor(start + i * step)) for i in range(n)]


def looks_like_heading(paragraph: str) -> bool:
    """True when a PDF paragraph looks like a heading (see the module's rules)."""
    text = paragraph.strip()
    words = text.split()
    if not words or len(words) > HEADING_MAX_WORDS or text.endswith(_SENTENCE_END):
        return False
    if _PRINTED_PAGE.match(text):
        return False
    return text[0].isupper() or text[0].isdigit()


def printed_page_number(paragraphs: tuple[str, ...] | list[str]) -> str | None:
    """The page number printed on a page: its first or last paragraph when that is only a page
    number (``7``, ``Page 7``, ``7 of 104``, ``- 7 -``, ``iv``), else None."""
    for paragraph in (paragraphs[-1:] + paragraphs[:1]) if paragraphs else ():
        match = _PRINTED_PAGE.match(paragraph.strip())
        if match:
            return match.group("n")
    return None


def _items(doc: DoclingDocument) -> list[tuple[str, int | None, bool]]:
    """``(text, page_no, is_heading)`` for every text item of a ``DoclingDocument``."""
    from docling_core.types.doc import DocItemLabel, TableItem, TextItem

    labelled = {DocItemLabel.TITLE, DocItemLabel.SECTION_HEADER}
    out: list[tuple[str, int | None, bool]] = []
    for item, _ in doc.iterate_items():
        page = item.prov[0].page_no if getattr(item, "prov", None) else None
        if isinstance(item, TextItem):
            text = item.text.strip()
            if text:
                out.append((text, page, item.label in labelled))
        elif isinstance(item, TableItem):
            cells = " | ".join(c.text.strip() for c in item.data.table_cells if c.text.strip())
            if cells:
                out.append((cells, page, False))
    return out


def document_units(document: LoadedDocument) -> list[Unit]:
    """Split a loaded document into units: one per page of a PDF, else one.

    Args:
        document: a ``core.documents.LoadedDocument``.

    Returns:
        The units in page order; a PDF gives exactly ``n_pages`` units (blank pages too).
    """
    items = _items(document.document)
    paged = document.n_pages > 0
    if not paged:
        heading = None
        for text, _, is_heading in items:
            if is_heading:
                heading = text
                break
        return [Unit(document.document_id, None, tuple(t for t, _, _ in items), heading)]
    by_page: dict[int, list[tuple[str, bool]]] = {p: [] for p in range(1, document.n_pages + 1)}
    for text, page, is_heading in items:
        by_page.setdefault(page or 1, []).append((text, is_heading))
    running = running_lines([[t for t, _ in by_page[p]] for p in sorted(by_page)])
    units = []
    heading: str | None = None
    for page in sorted(by_page):
        paragraphs = tuple(t for t, _ in by_page[page])
        body = page_body(paragraphs, running)
        at_start: str | None = None
        started = False
        for (text, is_heading), in_body in zip(by_page[page], body):
            if in_body and (is_heading or looks_like_heading(text)):
                heading = text
            if in_body and not started:
                at_start, started = heading, True
        kept = tuple(t for t, b in zip(paragraphs, body) if b)
        units.append(Unit(document.document_id, page, paragraphs, at_start if started else heading,
                          printed_page_number(paragraphs), kept if len(kept) < len(paragraphs) else None))
    return units


def corpus_units(documents: Iterable[LoadedDocument], *, by: str = "page") -> list[Unit]:
    """Every unit of a corpus, at the grain ``by``.

    Args:
        documents: ``LoadedDocument`` objects (their order is kept; sort them for stable output).
        by: ``"page"`` (one unit per PDF page, one per other document) or ``"doc"`` (one unit per
            document: a PDF's pages joined, its heading the first page's).

    Returns:
        The units, documents in the given order, pages in order.

    Raises:
        ConfigError: ``by`` is neither ``"page"`` nor ``"doc"``.
    """
    if by not in GRAINS:
        raise ConfigError(f"by must be one of {', '.join(GRAINS)}, got {by!r}")
    out: list[Unit] = []
    for document in documents:
        units = document_units(document)
        if by == "doc" and document.n_pages > 0:
            paragraphs = tuple(p for u in units for p in u.paragraphs)
            body = tuple(p for u in units for p in u.body)
            heading = next((u.heading for u in units if u.heading), None)
            out.append(Unit(document.document_id, None, paragraphs, heading, None,
                            body if len(body) < len(paragraphs) else None))
        else:
            out.extend(units)
    return out


@dataclass(frozen=True)
class Passage:
    """One passage of a section (see the module's rules on sections).

    Attributes:
        unit: the passage as a :class:`Unit`: its document, page (None without pages), text,
            heading path (joined with `` > ``; None before the first heading) and printed page.
        section: the section's number in its document (0-based, in reading order).
        part: the passage's number in its section (0-based; a section over three pages has
            parts 0, 1 and 2).
    """

    unit: Unit
    section: int
    part: int


def section_passages(document: LoadedDocument) -> list[Passage]:
    """Split a loaded document into section passages (see the module's rules on sections).

    Args:
        document: a ``core.documents.LoadedDocument``.

    Returns:
        The passages in reading order, near-empty ones included (``passage.unit.near_empty``).
    """
    text = document_text(document.document)
    paged = document.n_pages > 0
    labelled = any(text.is_heading)
    units = document_units(document) if paged else []
    printed = {u.page: u.printed_page for u in units}
    # running headers, footers and page numbers are no part of any passage
    left_out = {u.page: Counter(u.paragraphs) - Counter(u.body) for u in units}
    # (section, path, page, paragraphs) runs of items: a heading or a page break starts a new one
    runs: list[tuple[int, tuple[str, ...], int | None, list[str]]] = []
    section, path = -1, ()
    for i, start in enumerate(text.starts):
        paragraph = text.text[start:text.ends[i]]
        page = (min(text.pages[i]) if text.pages[i] else (runs[-1][2] if runs else 1)) if paged else None
        if left_out.get(page, {}).get(paragraph):
            left_out[page][paragraph] -= 1
            continue
        if labelled:
            starts_section, path = text.is_heading[i], text.headings[i]
        else:
            starts_section = paged and looks_like_heading(paragraph)
            path = (paragraph,) if starts_section else path
        if starts_section or section < 0:
            section += 1
        if runs and runs[-1][0] == section and runs[-1][2] == page:
            runs[-1][3].append(paragraph)
        else:
            runs.append((section, path, page, [paragraph]))
    merged: list[list[Any]] = []
    for run in runs:  # a short passage takes in what follows it on the same page
        last = merged[-1] if merged else None
        if last is not None and last[2] == run[2] and sum(len(p.split()) for p in last[3]) < MIN_UNIT_WORDS:
            last[3] = last[3] + run[3]
        else:
            merged.append([run[0], run[1], run[2], list(run[3])])
    kept: list[list[Any]] = []
    for item in merged:  # one still short at the page's end joins the passage before it
        if kept and kept[-1][2] == item[2] and sum(len(p.split()) for p in item[3]) < MIN_UNIT_WORDS:
            kept[-1][3] += item[3]
        else:
            kept.append(item)
    out: list[Passage] = []
    parts: dict[int, int] = {}
    for number, heads, page, paragraphs in kept:
        unit = Unit(document.document_id, page, tuple(paragraphs), " > ".join(heads) or None, printed.get(page))
        out.append(Passage(unit, number, parts.get(number, 0)))
        parts[number] = parts.get(number, 0) + 1
    return out


def spread_across_sections(passages: list[Passage], n: int, seed: int) -> list[Passage]:
    """``n`` passages spread across the sections: first every section's part 0, then every
    part 1, and so on; the first layer that cannot be taken whole gives ``n`` minus what was
    taken, spread evenly through it from a start the seed picks
    (:func:`spread_indices`).

    Args:
        passages: the corpus's passages in corpus order (documents in order, each in reading
            order), near-empty ones already left out.
        n: how many (>= 1).
        seed: picks the start of the spread.

    Returns:
        The chosen passages in corpus order (all of them when there are at most ``n``).

    Raises:
        ConfigError: ``n`` is below 1.
    """
    if n < 1:
        raise ConfigError(f"the number of passages must be at least 1, got {n}")
    layers: dict[int, list[int]] = {}
    rank: dict[tuple[str, int], int] = {}
    for i, p in enumerate(passages):  # layer = how many passages of its section came before (near-empty ones left out)
        key = (p.unit.document_id, p.section)
        layers.setdefault(rank.get(key, 0), []).append(i)
        rank[key] = rank.get(key, 0) + 1
    chosen: list[int] = []
    for depth in sorted(layers):
        layer = layers[depth]
        room = n - len(chosen)
        if room <= 0:
            break
        chosen += layer if len(layer) <= room else [layer[j] for j in spread_indices(len(layer), room, seed)]
    return [passages[i] for i in sorted(chosen)]


#: A passage where at least this share of three or more paragraphs end in a page number is a
#: table of contents.
TOC_SHARE = 1 / 3
_TOC_HEADING = re.compile(r"^(?:table of )?contents$", re.IGNORECASE)
_ENDS_IN_PAGE = re.compile(r"(?:\s|\.)[0-9]{1,4}$")


def second_passage_reason(unit: Unit, n_pages: int, shared: frozenset[str] = frozenset()) -> str | None:
    """Why a passage cannot be a comparison's second passage (see the module's rules), or None.

    Args:
        unit: the passage.
        n_pages: the page count of its document (0 without pages).
        shared: :func:`boilerplate_keys` of the corpus.

    Returns:
        ``"cover"``, ``"table of contents"``, ``"boilerplate"``, ``"not prose"`` or None.
    """
    body = [p.strip() for p in unit.body if p.strip()]
    if unit.page == 1 and n_pages >= REPEAT_MIN_PAGES:
        return "cover"
    first = (unit.heading or "").split(" > ")[-1].strip()
    if _TOC_HEADING.match(first) or (body and _TOC_HEADING.match(body[0])):
        return "table of contents"
    if len(body) >= 3 and sum(1 for p in body if _ENDS_IN_PAGE.search(p)) >= TOC_SHARE * len(body):
        return "table of contents"
    if _text_key(unit) in shared:
        return "boilerplate"
    if sum(len(p.split()) for p in body if len(p.split()) >= SUBSTANTIVE_MIN_WORDS) < MIN_UNIT_WORDS:
        return "not prose"
    return None


def boilerplate_keys(units: Iterable[Unit]) -> frozenset[str]:
    """The texts (casefolded, whitespace collapsed) that passages of two documents or more share."""
    documents: dict[str, set[str]] = {}
    for unit in units:
        documents.setdefault(_text_key(unit), set()).add(unit.document_id)
    return frozenset(k for k, docs in documents.items() if len(docs) > 1)


def _text_key(unit: Unit) -> str:
    return " ".join(" ".join(unit.body).casefold().split())


#: The grains templates and suggestions work at.
GRAINS: tuple[str, ...] = ("doc", "page")
