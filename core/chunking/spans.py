"""A document as one text with per-item spans, and chunks made from character spans.

The model-free chunkers (sentence, fixed, markdown, semantic, parent-child, LLM-cut) all work
the same way: a document's items are joined in reading order into one text, a technique picks
character spans ``[start, end)`` of that text, and :func:`spans_to_chunks` turns the spans
into :class:`Chunk` objects with the pages and headings of the items each span overlaps. As
long as the spans cover every non-blank character, no text is dropped (the chunkers' tests
check it on every document).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from core.chunking._common import item_pages
from core.chunking.base import Chunk, make_chunk_id

if TYPE_CHECKING:
    from docling_core.types.doc import DoclingDocument

#: What joins consecutive items of a document in its text.
ITEM_JOINER = "\n\n"
#: Share of a chunk's size that the heading path put in front of its text may take; longer
#: headings are shortened (ending in "...") in the embedded text and kept whole in the metadata.
HEADING_SHARE = 0.5
#: What ends a shortened heading.
SHORTENED_MARK = "..."
_SPACE = re.compile(r"\s")


@dataclass(frozen=True)
class DocumentText:
    """A document's text in reading order, with each item's span, pages and heading path.

    Attributes:
        text: the items' texts (tables as Markdown) joined with :data:`ITEM_JOINER`.
        starts: per item, the start offset of its text in ``text`` (ascending).
        ends: per item, the end offset (exclusive).
        pages: per item, its 1-based pages (empty set when the source has no pages).
        headings: per item, the heading path in effect at it (outermost first; a heading's
            own path ends with itself).
        is_heading: per item, True for a title or section heading.
    """

    text: str
    starts: tuple[int, ...]
    ends: tuple[int, ...]
    pages: tuple[frozenset[int], ...]
    headings: tuple[tuple[str, ...], ...]
    is_heading: tuple[bool, ...]

    def items_in(self, start: int, end: int) -> range:
        """Indexes of the items whose span overlaps ``[start, end)``."""
        first = max(bisect.bisect_right(self.starts, start) - 1, 0)
        last = bisect.bisect_left(self.starts, end)
        while first < last and self.ends[first] <= start:
            first += 1
        return range(first, last)

    def pages_of(self, start: int, end: int) -> list[int]:
        """Sorted distinct pages of the items overlapping ``[start, end)``."""
        out: set[int] = set()
        for i in self.items_in(start, end):
            out |= self.pages[i]
        return sorted(out)

    def headings_at(self, start: int, end: int) -> list[str]:
        """Heading path of the first item overlapping ``[start, end)`` (empty when none)."""
        for i in self.items_in(start, end):
            return list(self.headings[i])
        return []


def document_text(doc: DoclingDocument) -> DocumentText:
    """Return a ``DoclingDocument``'s :class:`DocumentText`.

    Text items (titles, headings, paragraphs, list items, captions) are taken stripped, tables
    as Markdown; blank items are skipped. The recursive chunker splits this text too.
    """
    from docling_core.types.doc import SectionHeaderItem, TableItem, TextItem, TitleItem

    parts: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    pages: list[frozenset[int]] = []
    headings: list[tuple[str, ...]] = []
    is_heading: list[bool] = []
    path: dict[int, str] = {}
    offset = 0
    for item, _ in doc.iterate_items():
        if isinstance(item, TextItem):
            text = item.text.strip()
        elif isinstance(item, TableItem):
            text = item.export_to_markdown(doc=doc).strip()
        else:
            continue
        if not text:
            continue
        heading = isinstance(item, (TitleItem, SectionHeaderItem))
        if heading:
            level = 0 if isinstance(item, TitleItem) else int(item.level)
            path = {lvl: h for lvl, h in path.items() if lvl < level}
            path[level] = text
        if parts:
            offset += len(ITEM_JOINER)
        parts.append(text)
        starts.append(offset)
        ends.append(offset + len(text))
        pages.append(frozenset(item_pages(item)))
        headings.append(tuple(path[lvl] for lvl in sorted(path)))
        is_heading.append(heading)
        offset += len(text)
    return DocumentText(ITEM_JOINER.join(parts), tuple(starts), tuple(ends), tuple(pages), tuple(headings),
                        tuple(is_heading))


def trim_span(text: str, start: int, end: int) -> tuple[int, int]:
    """Shrink ``[start, end)`` so it neither starts nor ends with whitespace (empty: ``start == end``)."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def split_span(text: str, start: int, end: int, max_chars: int, overlap_chars: int = 0) -> list[tuple[int, int]]:
    """Cut ``text[start:end]`` into spans of at most ``max_chars`` characters, at whitespace.

    Each span ends at the last whitespace inside its window, or exactly at ``max_chars`` when
    the window has none (text without spaces is cut by characters, never dropped). With
    ``overlap_chars`` each span after the first starts up to that many characters before the
    previous one's end, at a whitespace boundary when there is one.

    Args:
        text: the whole text.
        start: first character (inclusive).
        end: last character (exclusive).
        max_chars: largest span length (> 0).
        overlap_chars: characters shared by consecutive spans (0 <= overlap < max_chars).

    Returns:
        Trimmed, non-empty spans in text order; together they cover every non-blank
        character of ``text[start:end]``.
    """
    start, end = trim_span(text, start, end)
    spans: list[tuple[int, int]] = []
    pos = start
    while pos < end:
        limit = min(pos + max_chars, end)
        cut = limit
        if limit < end and not text[limit].isspace():
            space = max(text.rfind(" ", pos + 1, limit), text.rfind("\n", pos + 1, limit))
            if space > pos:
                cut = space
        s, e = trim_span(text, pos, cut)
        if e > s:
            spans.append((s, e))
        if cut >= end:
            break
        nxt = cut
        if overlap_chars:
            back = max(cut - overlap_chars, pos + 1)
            space = text.find(" ", back, cut)
            nxt = space + 1 if space != -1 and space + 1 < cut else back
        while nxt < end and text[nxt].isspace():
            nxt += 1
        pos = max(nxt, pos + 1)
    return spans


#: A sentence ends at ., ! or ? (optionally followed by closing quotes or brackets) before
#: whitespace, or at a blank line.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"'\u201d\u2019)\]]*(?=\s)|\n\s*\n")


def sentence_spans(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """Split ``text[start:end]`` into sentence spans (trimmed, non-empty, in order).

    Rule: a sentence ends after ``.``, ``!`` or ``?`` (and any closing quotes or brackets)
    followed by whitespace, and at every blank line (item boundaries included). No
    abbreviation list: "e.g. this" is two sentences, which only makes chunks a little smaller.
    Every non-blank character falls in exactly one span.
    """
    end = len(text) if end is None else end
    spans = []
    pos = start
    for match in _SENTENCE_END.finditer(text, start, end):
        s, e = trim_span(text, pos, match.end())
        if e > s:
            spans.append((s, e))
        pos = match.end()
    s, e = trim_span(text, pos, end)
    if e > s:
        spans.append((s, e))
    return spans


def pack_spans(units: Sequence[tuple[int, int]], max_chars: int, text: str) -> list[tuple[int, int]]:
    """Pack consecutive unit spans (sentences) into spans of at most ``max_chars`` characters.

    Units are added while the packed span stays within ``max_chars``; a unit longer than
    ``max_chars`` on its own is cut with :func:`split_span`.
    """
    out: list[tuple[int, int]] = []
    cur: tuple[int, int] | None = None
    for s, e in units:
        if e - s > max_chars:
            if cur:
                out.append(cur)
                cur = None
            out.extend(split_span(text, s, e, max_chars))
            continue
        if cur is None:
            cur = (s, e)
        elif e - cur[0] <= max_chars:
            cur = (cur[0], e)
        else:
            out.append(cur)
            cur = (s, e)
    if cur:
        out.append(cur)
    return out


def shorten_headings(headings: Sequence[str], max_chars: int) -> list[str]:
    """The heading path shortened so that its lines, joined by newlines, take at most
    ``max_chars`` characters.

    Each heading gets an equal share of ``max_chars`` (less one character for its newline); a
    longer one is cut at a space when there is one in its share, else by characters, and ends
    in ``"..."``. When the shares would be under 8 characters, the outermost headings are left
    out until they are not (the innermost heading is always kept).

    Args:
        headings: the heading path, outermost first.
        max_chars: the characters the whole path may take (> 0).

    Returns:
        The shortened path (the same list's values when it already fits).
    """
    path = list(headings)
    if sum(len(h) + 1 for h in path) <= max_chars:
        return path
    while len(path) > 1 and max_chars // len(path) < 8:
        path.pop(0)
    share = max(len(SHORTENED_MARK) + 1, max_chars // len(path) - 1)
    out = []
    for h in path:
        if len(h) > share:
            keep = share - len(SHORTENED_MARK)
            cut = h.rfind(" ", 0, keep + 1)
            h = (h[:cut] if cut > 0 else h[:keep]).rstrip() + SHORTENED_MARK
        out.append(h)
    return out


def with_headings_prefix(body: str, headings: Sequence[str], max_chars: int | None = None) -> str:
    """``body`` with its heading path in front, one heading a line (headings the body already
    starts with are not repeated).

    Args:
        body: the chunk's text.
        headings: the heading path, outermost first.
        max_chars: the characters the heading lines may take (see :func:`shorten_headings`);
            None: whole headings.
    """
    path = list(headings)
    while path and body.startswith(path[-1]):
        path.pop()
    if path and max_chars is not None:
        path = shorten_headings(path, max_chars)
    return "\n".join([*path, body]) if path else body


def headings_budget(chunk_size_chars: int) -> int:
    """The characters a chunk's heading path may take in front of its text:
    :data:`HEADING_SHARE` of the chunk's size in characters (at least 16)."""
    return max(16, int(HEADING_SHARE * chunk_size_chars))


def spans_to_chunks(
    document_id: str,
    doc_text: DocumentText,
    spans: Iterable[tuple[int, int]],
    *,
    embed_headings: bool = False,
    extra: Sequence[dict[str, Any]] | None = None,
    headings_chars: int | None = None,
) -> list[Chunk]:
    """Turn character spans of one document into chunks.

    Args:
        document_id: the document's id.
        doc_text: the document's :class:`DocumentText`.
        spans: ``[start, end)`` spans of ``doc_text.text``, in text order.
        embed_headings: put the heading path in front of each chunk's text (the text that is
            embedded and searched); the path is in ``metadata["headings"]`` either way.
        extra: per span, more metadata to add (same length as ``spans``), or None.
        headings_chars: the characters the heading path in front may take (longer headings
            are shortened, see :func:`shorten_headings`); None: whole headings.

    Returns:
        One chunk per non-blank span: ``metadata`` holds ``document_id``, ``sequence_number``,
        ``pages`` (of the items the span overlaps), ``headings`` (the path in effect where
        the span starts; absent when none) and ``span`` (``[start, end]`` in the document
        text).
    """
    out: list[Chunk] = []
    for i, (start, end) in enumerate(spans):
        start, end = trim_span(doc_text.text, start, end)
        if end <= start:
            continue
        body = doc_text.text[start:end]
        headings = doc_text.headings_at(start, end)
        text = with_headings_prefix(body, headings, headings_chars) if embed_headings else body
        seq = len(out)
        metadata: dict[str, Any] = {"document_id": document_id, "sequence_number": seq,
                                    "pages": doc_text.pages_of(start, end), "span": [start, end]}
        if headings:
            metadata["headings"] = headings
        if extra is not None:
            metadata.update(extra[i])
        out.append(Chunk(text=text, chunk_id=make_chunk_id(document_id, seq, text), metadata=metadata))
    return out


def uncovered(text: str, spans: Iterable[tuple[int, int]]) -> list[int]:
    """Offsets of the non-blank characters of ``text`` that no span covers (for checks)."""
    covered = bytearray(len(text))
    for s, e in spans:
        covered[max(s, 0):max(min(e, len(text)), 0)] = b"\1" * (max(min(e, len(text)), 0) - max(s, 0))
    return [i for i, ch in enumerate(text) if not covered[i] and not _SPACE.match(ch)]
