"""An extractive answer baseline that needs no LLM.

:class:`ExtractiveGenerator` splits the retrieved passages into sentences, embeds them and the
question with an embedding model, and answers with the ``max_sentences`` sentences of highest
cosine similarity to the question. It shows what retrieval alone gives an answer metric, and
lets the whole answer pipeline run offline. Its ``model_id`` starts with ``extractive:`` so a
report never mistakes it for an LLM.
"""

from __future__ import annotations

import functools
import logging
import re
from typing import TYPE_CHECKING, Mapping, Sequence

import numpy as np

from core.errors import ConfigError, GenerationError
from core.models.chat import check_messages

if TYPE_CHECKING:
    from core.models.embeddings import EmbeddingModel

logger = logging.getLogger(__name__)

#: The answer when the passages hold no sentence at all (nothing was retrieved).
NO_ANSWER = "The retrieved documents do not contain an answer."
#: Longest sentence kept whole, in characters; longer runs are cut at a space.
MAX_SENTENCE_CHARS = 500

# Words that end with a period without ending a sentence (compared lower-cased, without the
# final period).
_ABBREVIATIONS = frozenset({
    "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "mt", "vs", "etc", "e.g", "i.e", "cf", "al",
    "no", "nos", "fig", "figs", "inc", "ltd", "co", "corp", "dept", "approx", "est", "vol", "pp", "p",
    "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
    "u.s", "u.k", "a.m", "p.m", "ph.d", "gen", "gov", "rev", "sgt", "capt", "col", "lt",
})
_BOUNDARY = re.compile(r"[.!?\u2026]+[\"'\u201d\u2019)\]]*\s+")
_PARAGRAPH = re.compile(r"\n[ \t]*\n+|\n(?=[ \t]*(?:[-*\u2022\u25aa\u2013]|\d+[.)])\s)")
_SPACES = re.compile(r"\s+")
#: Characters of a candidate sentence end that :func:`_ends_with_abbreviation` looks at: more
#: than the longest abbreviation with its quotes and brackets.
_TAIL_CHARS = 40
#: Passages whose sentences :class:`ExtractiveGenerator` keeps split (least recently used
#: dropped first), so a passage retrieved for many questions or evaluations is split once.
SPLIT_MEMO_PASSAGES = 2048
_OPENERS = "\"'\u201c\u2018([\u00bf\u00a1"


def _ends_with_abbreviation(text: str) -> bool:
    # the last word only: a tail longer than any abbreviation is enough, and searching the whole
    # text from its start would make a long paragraph quadratic
    match = re.search(r"(\S+)$", text[-_TAIL_CHARS:])
    if not match:
        return False
    word = match.group(1).rstrip(".!?\u2026\"'\u201d\u2019)]").lstrip(_OPENERS).lower()
    if word in _ABBREVIATIONS:
        return True
    return len(word) == 1 and word.isalpha()  # an initial: "J. Smith"


def _starts_sentence(text: str) -> bool:
    stripped = text.lstrip(_OPENERS)
    return bool(stripped) and (stripped[0].isupper() or stripped[0].isdigit())


def _cut(sentence: str, max_chars: int) -> list[str]:
    pieces = []
    while len(sentence) > max_chars:
        cut = sentence.rfind(" ", 0, max_chars + 1)
        if cut <= 0:
            cut = max_chars
        pieces.append(sentence[:cut].strip())
        sentence = sentence[cut:].strip()
    if sentence:
        pieces.append(sentence)
    return pieces


def split_sentences(text: str, max_chars: int = MAX_SENTENCE_CHARS) -> list[str]:
    """Split text into sentences, simply and robustly.

    Rules: blank lines and list items (lines starting with ``-``, ``*``, ``•`` or ``1.``)
    always separate; other line breaks are spaces (PDF text breaks lines mid-sentence). Inside
    a paragraph a sentence ends at ``.``, ``!``, ``?`` or ``…`` (with any closing quotes or
    brackets) followed by whitespace and a capital letter, a digit or an opening quote, unless
    the word before is a common abbreviation (``Dr.``, ``e.g.``, ``etc.``, ...) or a single
    letter (an initial). Runs longer than ``max_chars`` are cut at a space. Pieces without a
    letter or digit are dropped.

    Args:
        text: any text (possibly empty).
        max_chars: longest piece returned, in characters (>= 1).

    Returns:
        The sentences in text order, whitespace collapsed, none empty.

    Raises:
        ConfigError: ``max_chars`` below 1.
    """
    if max_chars < 1:
        raise ConfigError(f"max_chars must be at least 1, got {max_chars}")
    out: list[str] = []
    for paragraph in _PARAGRAPH.split(text.replace("\r\n", "\n").replace("\r", "\n")):
        paragraph = _SPACES.sub(" ", paragraph).strip()
        if not paragraph:
            continue
        start = 0
        pieces = []
        for match in _BOUNDARY.finditer(paragraph):
            end = match.end()
            if end >= len(paragraph) or not _starts_sentence(paragraph[end:]):
                continue
            if _ends_with_abbreviation(paragraph[start : match.start() + 1]):
                continue
            pieces.append(paragraph[start:end])
            start = end
        pieces.append(paragraph[start:])
        for piece in pieces:
            for part in _cut(piece.strip(), max_chars):
                if any(ch.isalnum() for ch in part):
                    out.append(part)
    return out


@functools.lru_cache(maxsize=SPLIT_MEMO_PASSAGES)
def _passage_sentences(passage: str, max_chars: int) -> tuple[str, ...]:
    """:func:`split_sentences` of one passage, remembered (bounded by ``SPLIT_MEMO_PASSAGES``)."""
    return tuple(split_sentences(passage, max_chars))


def _unit_rows(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)


class ExtractiveGenerator:
    """Answer with the retrieved sentences most similar to the question (no LLM).

    Sentences come from :func:`split_sentences` over every passage; repeats (overlapping
    chunks) are kept once. Each is scored by the cosine similarity of its embedding to the
    question's (both L2-normalised here, so any embedding model works). The answer is the
    ``max_sentences`` best, most similar first (ties keep passage order), joined by spaces.

    It is a :class:`~core.rag.template.PassageAnswerer` (``SimpleRAG`` hands it the chunk texts)
    and a :class:`~core.models.chat.ChatModel` (``chat`` answers the last user message from the
    text of the earlier non-system messages).

    Args:
        embedding_model: a ``core.models.EmbeddingModel`` (the local model works offline;
            wrap it in ``CachedEmbeddingModel`` to embed each sentence once across questions).
        max_sentences: sentences in an answer (>= 1).
        max_sentence_chars: longest sentence, in characters (see :func:`split_sentences`).
        no_answer_text: the answer when the passages hold no sentence.

    Attributes:
        model_id: ``"extractive:<embedding model id>"``.

    Raises:
        ConfigError: ``max_sentences`` or ``max_sentence_chars`` below 1.
    """

    def __init__(
        self,
        embedding_model: EmbeddingModel,
        max_sentences: int = 3,
        *,
        max_sentence_chars: int = MAX_SENTENCE_CHARS,
        no_answer_text: str = NO_ANSWER,
    ) -> None:
        if int(max_sentences) < 1:
            raise ConfigError(f"max_sentences must be at least 1, got {max_sentences}")
        if int(max_sentence_chars) < 1:
            raise ConfigError(f"max_sentence_chars must be at least 1, got {max_sentence_chars}")
        self.embedding_model = embedding_model
        self.max_sentences = int(max_sentences)
        self.max_sentence_chars = int(max_sentence_chars)
        self.no_answer_text = no_answer_text
        self.model_id = f"extractive:{embedding_model.model_id}"

    def __repr__(self) -> str:
        return f"ExtractiveGenerator({self.model_id!r}, max_sentences={self.max_sentences})"

    def rank_sentences(self, question: str, passages: Sequence[str]) -> list[tuple[str, float]]:
        """Return every distinct sentence of ``passages`` with its cosine similarity to
        ``question`` (in [-1, 1]), most similar first; ties keep passage order.

        Raises:
            ConfigError: an empty question.
            EmbeddingError: the embedding model failed.
        """
        if not isinstance(question, str) or not question.strip():
            raise ConfigError("the question is empty")
        sentences = list(dict.fromkeys(
            s for passage in passages for s in _passage_sentences(passage, self.max_sentence_chars)
        ))
        if not sentences:
            return []
        query = _unit_rows(self.embedding_model.embed_query(question)[None, :])[0]
        rows = _unit_rows(self.embedding_model.embed_documents(sentences))
        scores = rows @ query
        order = sorted(range(len(sentences)), key=lambda i: (-float(scores[i]), i))
        return [(sentences[i], float(scores[i])) for i in order]

    def answer_from_passages(self, question: str, passages: Sequence[str]) -> str:
        """Return the ``max_sentences`` sentences of ``passages`` most similar to ``question``,
        joined by spaces, or ``no_answer_text`` when the passages hold no sentence.

        Raises:
            ConfigError: an empty question.
            EmbeddingError: the embedding model failed.
        """
        ranked = self.rank_sentences(question, passages)
        if not ranked:
            return self.no_answer_text
        return " ".join(s for s, _ in ranked[: self.max_sentences])

    def chat(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        max_completion_tokens: int | None = None,
        temperature: float | None = None,
    ) -> str:
        """Answer the last user message from the text of the earlier non-system messages.

        ``max_completion_tokens`` and ``temperature`` are accepted for compatibility and ignored.

        Raises:
            ConfigError: malformed messages, or a last message that is not the user's.
            GenerationError: wraps an embedding failure, naming this model.
        """
        checked = check_messages(messages)
        if checked[-1]["role"] != "user":
            raise ConfigError(f"the last message must be the user's, got role {checked[-1]['role']!r}")
        passages = [m["content"] for m in checked[:-1] if m["role"] != "system"]
        try:
            return self.answer_from_passages(checked[-1]["content"], passages)
        except ConfigError:
            raise
        except Exception as exc:  # embedding models raise EmbeddingError, but wrappers may raise others
            raise GenerationError(f"{self.model_id} failed: {type(exc).__name__}: {exc}") from exc
