"""Chunking with a chat model: the model says where each topic starts (``llm``), or writes a
short note situating every chunk in its document (``contextual``).

``llm``: a document's sentences (see :func:`core.chunking.spans.sentence_spans`) are numbered
and sent in windows of at most :data:`WINDOW_SENTENCES` sentences and
:data:`WINDOW_CHARS` characters; the model replies with the numbers of the sentences that
begin a new topic (for example ``1, 4, 9``). A chunk starts at each of them and at each window
start; groups longer than the size are packed sentence by sentence, so the size is a ceiling.
A reply without any valid sentence number raises :class:`GenerationError` for that document.

``contextual``: the document is cut by the recursive chunker; for every chunk the model is
shown the document (its first :data:`CONTEXT_DOCUMENT_CHARS` characters) and the chunk, and
asked for a short note; the chunk's text becomes ``note + blank line + chunk`` and the note is
kept in ``metadata["note"]``. The chunk itself is unchanged, so no text is lost.

References:
    Anthropic, "Introducing Contextual Retrieval" (2024), the prompt of its cookbook;
    LumberChunker (Duarte et al., 2024) for asking a model where the topic changes.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any, Iterable

from core.chunking._common import check_sizes, iter_documents
from core.chunking.base import Chunk, make_chunk_id
from core.chunking.recursive import RecursiveChunker
from core.chunking.spans import (
    DocumentText, document_text, headings_budget, pack_spans, sentence_spans, with_headings_prefix,
)
from core.chunking.techniques import SpanChunker
from core.errors import ConfigError, GenerationError

if TYPE_CHECKING:
    from core.models.chat import ChatModel

logger = logging.getLogger(__name__)

#: Most sentences shown to the model in one ``llm`` chunking call.
WINDOW_SENTENCES = 60
#: Most characters of sentences shown in one ``llm`` chunking call.
WINDOW_CHARS = 12_000
#: Characters of the document shown with each chunk for a contextual note.
CONTEXT_DOCUMENT_CHARS = 20_000
#: Largest reply for one note or one list of topic starts, in tokens.
NOTE_MAX_TOKENS = 120

LLM_CHUNKING_PROMPT = (
    "Below are the numbered sentences of a document. Say where each new topic starts: reply with "
    "the numbers of the sentences that begin a new topic, separated by commas, and nothing else.\n\n{sentences}"
)
CONTEXT_NOTE_PROMPT = (
    "<document>\n{document}\n</document>\nHere is the chunk we want to situate within the whole document\n"
    "<chunk>\n{chunk}\n</chunk>\nPlease give a short succinct context to situate this chunk within the overall "
    "document for the purposes of improving search retrieval of the chunk. Answer only with the succinct "
    "context and nothing else."
)
_NUMBER = re.compile(r"\d+")


def _need_chat(method: str, chat_model: ChatModel | None) -> ChatModel:
    if chat_model is None:
        raise ConfigError(f"{method} chunking needs a chat model: set RAGTUNE_CHAT_PROVIDER and RAGTUNE_CHAT_MODEL "
                          "(no chat model runs offline here)")
    return chat_model


def parse_topic_starts(reply: str, n: int) -> list[int]:
    """Sentence numbers (1-based, 1..n) in a model's reply, sorted and distinct.

    Raises:
        GenerationError: the reply holds no number between 1 and ``n``.
    """
    numbers = sorted({int(m) for m in _NUMBER.findall(reply) if 1 <= int(m) <= n})
    if not numbers:
        raise GenerationError(f"the chat model's reply names no sentence between 1 and {n}: {reply[:200]!r}")
    return numbers


class LLMChunker(SpanChunker):
    """Chunks start where the chat model says a topic starts (module docstring).

    Args:
        chunk_size: largest chunk in tokens (> 0), as 4 characters each.
        chat_model: a ``ChatModel``.
        embed_headings: put the heading path in front of each chunk's text.

    Raises:
        ConfigError: no chat model, or a bad size.
    """

    name = "llm"

    def __init__(self, chunk_size: int = 256, *, chat_model: ChatModel | None = None,
                 embed_headings: bool = False) -> None:
        super().__init__(chunk_size, embed_headings=embed_headings)
        self.chat_model = _need_chat("llm", chat_model)

    def params(self) -> dict[str, Any]:
        """Return the parameters that determine the chunks (JSON-serialisable)."""
        return {**super().params(), "chat_model": str(self.chat_model.model_id), "window_sentences": WINDOW_SENTENCES}

    def spans(self, doc_text: DocumentText) -> tuple[list[tuple[int, int]], None]:
        """Topic groups the model names, packed to the size.

        Raises:
            GenerationError: the model failed or named no sentence.
        """
        text = doc_text.text
        sentences = sentence_spans(text)
        starts: set[int] = set()
        i = 0
        while i < len(sentences):
            j, chars = i, 0
            while j < len(sentences) and j - i < WINDOW_SENTENCES and (j == i or chars + sentences[j][1] - sentences[j][0] <= WINDOW_CHARS):
                chars += sentences[j][1] - sentences[j][0]
                j += 1
            window = sentences[i:j]
            if len(window) > 1:
                numbered = "\n".join(f"{n}. {text[s:e]}" for n, (s, e) in enumerate(window, start=1))
                reply = self.chat_model.chat([{"role": "user", "content": LLM_CHUNKING_PROMPT.format(sentences=numbered)}],
                                             max_completion_tokens=NOTE_MAX_TOKENS, temperature=0.0)
                starts |= {i + n - 1 for n in parse_topic_starts(reply, len(window))}
            starts.add(i)
            i = j
        out: list[tuple[int, int]] = []
        bounds = sorted(starts) + [len(sentences)]
        for a, b in zip(bounds, bounds[1:]):
            out.extend(pack_spans(sentences[a:b], self.chunk_size_chars, text))
        return out, None


class ContextualChunker:
    """Recursive chunks, each with a short model-written note in front (module docstring).

    Args:
        chunk_size: tokens (> 0), as 4 characters each.
        chunk_overlap: tokens (0 <= overlap < size).
        chat_model: a ``ChatModel``.
        embed_headings: put the heading path in front of each chunk (after the note).

    Raises:
        ConfigError: no chat model, or bad sizes.
    """

    name = "contextual"

    def __init__(self, chunk_size: int = 256, chunk_overlap: int = 0, *, chat_model: ChatModel | None = None,
                 embed_headings: bool = False) -> None:
        self.chunk_size, self.chunk_overlap = check_sizes(chunk_size, chunk_overlap)
        self.chat_model = _need_chat("contextual", chat_model)
        self.embed_headings = bool(embed_headings)
        self._base = RecursiveChunker(chunk_size, chunk_overlap)

    def params(self) -> dict[str, Any]:
        """Return the parameters that determine the chunks (JSON-serialisable)."""
        return {"method": self.name, "base": self._base.params(), "chat_model": str(self.chat_model.model_id),
                "document_chars": CONTEXT_DOCUMENT_CHARS, "embed_headings": self.embed_headings, "version": 1}

    def chunk(self, documents: Iterable[Any]) -> list[Chunk]:
        """Cut documents and put a note in front of every chunk.

        Raises:
            GenerationError: the chat model failed for a chunk.
        """
        out: list[Chunk] = []
        for document_id, doc in iter_documents(documents):
            whole = document_text(doc).text[:CONTEXT_DOCUMENT_CHARS]
            for c in self._base.chunk([doc]):
                prompt = CONTEXT_NOTE_PROMPT.format(document=whole, chunk=c.text)
                note = self.chat_model.chat([{"role": "user", "content": prompt}],
                                            max_completion_tokens=NOTE_MAX_TOKENS, temperature=0.0).strip()
                body = (with_headings_prefix(c.text, c.headings, headings_budget(self._base.chunk_size_chars))
                        if self.embed_headings else c.text)
                text = f"{note}\n\n{body}" if note else body
                metadata = {**c.metadata, "document_id": document_id, "note": note}
                out.append(Chunk(text=text, chunk_id=make_chunk_id(document_id, c.sequence_number, text),
                                 metadata=metadata))
        return out
