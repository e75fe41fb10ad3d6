"""Chunkers: split loaded documents into :class:`Chunk` objects.

``get_chunker(method, chunk_size, chunk_overlap)`` builds one by name (sizes in tokens):

* ``recursive`` -- :class:`RecursiveChunker`, split on paragraphs, lines, words, characters,
  4 characters per token, with overlap;
* ``hierarchical`` -- :class:`HierarchicalChunker`, one chunk per document element (sizes
  ignored);
* ``hybrid`` -- :class:`HybridChunker`, elements split/merged to at most ``chunk_size`` tokens
  of the packaged all-MiniLM-L6-v2 tokenizer (overlap ignored);
* ``sentence`` -- :class:`SentenceChunker`, whole sentences up to the size;
* ``fixed`` -- :class:`FixedChunker`, every ``4 * chunk_size`` characters at a space, with overlap;
* ``semantic`` -- :class:`SemanticChunker`, a new chunk where consecutive sentences'
  embeddings drift apart (the percentile breakpoint rule of :mod:`core.chunking.semantic`);
* ``parent-child`` -- :class:`ParentChildChunker`, small chunks searched, their section handed
  to the generator (:func:`handed_text`);
* ``markdown`` -- :class:`MarkdownChunker`, structure-aware: at headings, then long sections;
* ``llm`` -- :class:`LLMChunker`, a chat model says where each topic starts;
* ``contextual`` -- :class:`ContextualChunker`, recursive chunks with a model-written note in
  front (contextual retrieval).

Every technique keeps page provenance and the heading path, and no text is dropped.

Late chunking (embedding the whole document once and pooling token vectors per chunk) is not
offered: it needs a long-context embedding model that returns token vectors. The packaged
models read 256 (all-MiniLM-L6-v2) and 512 (bge-small-en) tokens, fewer than most documents,
and OpenAI-compatible endpoints return one pooled vector per text, so the document would not
fit the window nor its token vectors come back; ``get_chunker("late", ...)`` says so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

from core.chunking.base import Chunk, Chunker, document_title, make_chunk_id
from core.chunking.docling_chunkers import MAX_CHUNK_CHARS, HierarchicalChunker, HybridChunker
from core.chunking.llm import ContextualChunker, LLMChunker
from core.chunking.recursive import RecursiveChunker
from core.chunking.semantic import SemanticChunker
from core.chunking.spans import headings_budget, with_headings_prefix
from core.chunking.techniques import FixedChunker, MarkdownChunker, ParentChildChunker, SentenceChunker
from core.errors import ConfigError

if TYPE_CHECKING:
    from docling_core.types.doc import DoclingDocument

    from core.documents.base import LoadedDocument
    from core.models.chat import ChatModel
    from core.models.embeddings import EmbeddingModel

#: Chunking methods ``get_chunker`` knows (the one home of the list).
CHUNKING_METHODS: tuple[str, ...] = (
    "recursive", "hierarchical", "hybrid", "sentence", "fixed", "semantic", "parent-child", "markdown",
    "llm", "contextual",
)
#: Methods that take a ``chunk_size`` (all but ``hierarchical``).
SIZED_METHODS: tuple[str, ...] = tuple(m for m in CHUNKING_METHODS if m != "hierarchical")
#: Methods that take a ``chunk_overlap``.
OVERLAP_METHODS: tuple[str, ...] = ("recursive", "fixed", "contextual")
#: Methods that need a chat model.
CHAT_METHODS: tuple[str, ...] = ("llm", "contextual")
#: Methods that need no chat model (``semantic`` uses an embedding model).
MODEL_FREE_METHODS: tuple[str, ...] = tuple(m for m in CHUNKING_METHODS if m not in CHAT_METHODS)
#: Why ``late`` chunking is not among them.
LATE_CHUNKING_REASON = (
    "late chunking is not offered: it embeds a whole document at once and pools token vectors per chunk, which "
    "needs an embedding model with a window longer than the documents that returns token vectors; the packaged "
    "models read 256 and 512 tokens and OpenAI-compatible endpoints return one vector per text"
)


def get_chunker(method: str, chunk_size: int, chunk_overlap: int, *, embed_headings: bool | None = None,
                embed_title: bool = True, embedding_model: EmbeddingModel | None = None,
                chat_model: ChatModel | None = None) -> Chunker:
    """Return the chunker for ``method``.

    Args:
        method: one of :data:`CHUNKING_METHODS`.
        chunk_size: maximum chunk size in tokens (``hybrid``: tokens of the tokenizer; the
            others: 4 characters per token; ignored by ``hierarchical``).
        chunk_overlap: overlap in tokens (used by :data:`OVERLAP_METHODS`, ignored by the others).
        embed_headings: put each chunk's heading path in front of its text; None keeps the
            method's default (on for ``hierarchical`` and ``hybrid``, off for the others).
        embed_title: put the document's title (:func:`core.chunking.base.document_title`)
            in front of each chunk's text (:class:`TitleInText`); on by default.
        embedding_model: the ``EmbeddingModel`` of ``semantic`` (None: the local default).
        chat_model: the ``ChatModel`` of ``llm`` and ``contextual`` (required by them).

    Returns:
        A :class:`Chunker` with ``name`` and ``params()``. ``params()`` only holds what
        determines the chunks, so ignored sizes do not split caches.

    Raises:
        ConfigError: unknown method (the message lists the valid ones), ``late`` (with the
            reason), invalid sizes for the method, or no chat model for ``llm``/``contextual``.
    """
    chunker = _method_chunker(method, chunk_size, chunk_overlap, embed_headings, embedding_model, chat_model)
    return TitleInText(chunker) if embed_title else chunker


def _method_chunker(method: str, chunk_size: int, chunk_overlap: int, embed_headings: bool | None,
                    embedding_model: EmbeddingModel | None, chat_model: ChatModel | None) -> Chunker:
    if method == "hierarchical":
        return HierarchicalChunker(embed_headings=True if embed_headings is None else embed_headings)
    if method == "hybrid":
        return HybridChunker(chunk_size=chunk_size, embed_headings=True if embed_headings is None else embed_headings)
    headings = bool(embed_headings)
    if method == "recursive":
        chunker: Chunker = RecursiveChunker(chunk_size=chunk_size, chunk_overlap=chunk_overlap)
        return HeadingsInText(chunker) if headings else chunker
    if method == "sentence":
        return SentenceChunker(chunk_size, embed_headings=headings)
    if method == "fixed":
        return FixedChunker(chunk_size, chunk_overlap, embed_headings=headings)
    if method == "semantic":
        return SemanticChunker(chunk_size, embedding_model=embedding_model, embed_headings=headings)
    if method == "parent-child":
        return ParentChildChunker(chunk_size, embed_headings=headings)
    if method == "markdown":
        return MarkdownChunker(chunk_size, embed_headings=headings)
    if method == "llm":
        return LLMChunker(chunk_size, chat_model=chat_model, embed_headings=headings)
    if method == "contextual":
        return ContextualChunker(chunk_size, chunk_overlap, chat_model=chat_model, embed_headings=headings)
    if method == "late":
        raise ConfigError(LATE_CHUNKING_REASON)
    raise ConfigError(f"unknown chunking method {method!r}; valid methods: {', '.join(CHUNKING_METHODS)}")


class HeadingsInText:
    """A chunker whose chunks get their heading path in front of their text, shortened to
    :func:`core.chunking.spans.headings_budget` of the inner chunker's size in characters
    (``chunk_size_chars``) when longer; the metadata keeps the whole path.

    Args:
        inner: a chunker whose chunks carry ``metadata["headings"]`` but not in their text.
    """

    def __init__(self, inner: Chunker) -> None:
        self.inner = inner
        self.name = inner.name

    def params(self) -> dict[str, Any]:
        """The inner chunker's parameters with ``embed_headings: true``."""
        return {**self.inner.params(), "embed_headings": True}

    def chunk(self, documents: Iterable[LoadedDocument | DoclingDocument]) -> list[Chunk]:
        """The inner chunker's chunks, headings in front of each text (ids follow the text)."""
        budget = headings_budget(int(getattr(self.inner, "chunk_size_chars", MAX_CHUNK_CHARS)))
        out = []
        for c in self.inner.chunk(documents):
            text = with_headings_prefix(c.text, c.headings, budget)
            out.append(Chunk(text=text, chunk_id=make_chunk_id(c.document_id, c.sequence_number, text),
                             metadata=dict(c.metadata)))
        return out


class TitleInText:
    """A chunker whose chunks get their document's title in front of their text: the line
    :func:`core.chunking.base.document_title` gives, unless the text already starts with it.

    "Starts with it" means the title's words, in any case, followed by a non-alphanumeric
    character or the end: ``park.txt`` starting "Parking garage B" still gets ``park`` in front.
    A chunk cut out of a document no longer says which document it is from; two documents
    that share most of their wording (two editions, two plans, two products) then give chunks
    that only their titles tell apart. The title line is part of the text that is embedded,
    searched, reranked and handed to a generator, as LlamaIndex embeds a node's ``file_name``
    metadata with its text by default and contextual retrieval puts a note on the document in
    front of each chunk. The metadata keeps the title (``metadata["title"]``); chunk ids follow
    the text. Documents whose name gives no title (no letter in it, or a hex id) are left as
    they are.

    Args:
        inner: any chunker.

    References:
        LlamaIndex, "Metadata extraction / customizing documents" (``MetadataMode.EMBED``
        includes document metadata such as ``file_name`` in the embedded text); Anthropic
        (2024), "Introducing Contextual Retrieval".
    """

    def __init__(self, inner: Chunker) -> None:
        self.inner = inner
        self.name = inner.name

    def __getattr__(self, name: str) -> Any:  # chunk_size, chunk_size_chars, ... of the inner chunker
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def params(self) -> dict[str, Any]:
        """The inner chunker's parameters with ``embed_title: true``."""
        return {**self.inner.params(), "embed_title": True}

    def chunk(self, documents: Iterable[LoadedDocument | DoclingDocument]) -> list[Chunk]:
        """The inner chunker's chunks, each text led by its document's title line."""
        out = []
        titles: dict[str, str] = {}
        for c in self.inner.chunk(documents):
            doc = c.document_id
            if doc not in titles:
                titles[doc] = document_title(doc)
            title = titles[doc]
            head = c.text[:len(title) + 1]
            if not title or (head[:len(title)].casefold() == title.casefold()
                             and not head[len(title):].isalnum()):  # the text starts with the title as words
                out.append(c)
                continue
            text = f"{title}\n{c.text}"
            out.append(Chunk(text=text, chunk_id=make_chunk_id(doc, c.sequence_number, text),
                             metadata={**c.metadata, "title": title}))
        return out


def handed_text(chunk: Chunk) -> str:
    """The text a generator is handed for a retrieved chunk: its parent section's text for a
    parent-child chunk (``metadata["parent_text"]``), else the chunk's own text."""
    parent = chunk.metadata.get("parent_text")
    return str(parent) if parent else chunk.text


__all__ = [
    "CHAT_METHODS",
    "CHUNKING_METHODS",
    "Chunk",
    "Chunker",
    "ContextualChunker",
    "FixedChunker",
    "HeadingsInText",
    "HierarchicalChunker",
    "HybridChunker",
    "LATE_CHUNKING_REASON",
    "LLMChunker",
    "TitleInText",
    "MODEL_FREE_METHODS",
    "MarkdownChunker",
    "OVERLAP_METHODS",
    "ParentChildChunker",
    "RecursiveChunker",
    "SIZED_METHODS",
    "SemanticChunker",
    "SentenceChunker",
    "get_chunker",
    "handed_text",
    "make_chunk_id",
]
