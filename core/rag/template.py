"""A retrieve-then-generate RAG template with three prompt templates, after IBM ai4rag.

:class:`SimpleRAG` searches a vector store with the question, renders each retrieved chunk with
``context_template_text``, joins them into ``{reference_documents}``, fills
``user_message_text`` and asks the chat model, after ``system_message_text``::

    [{"role": "system", "content": system_message_text},
     *history,                                     # earlier turns, unchanged
     {"role": "user", "content": user_message_text.format(reference_documents=..., question=...)}]

Placeholders (``str.format`` fields; write ``{{`` and ``}}`` for literal braces):

- ``context_template_text``: ``{document}`` exactly once (the chunk's text), ``{doc_number}``
  at most once (its 1-based rank).
- ``user_message_text``: ``{reference_documents}`` and ``{question}``, each exactly once.

References:
    IBM ai4rag, ``SimpleRAG`` template and its ``system_message_text`` /
    ``context_template_text`` / ``user_message_text`` prompt settings:
    https://github.com/IBM/ai4rag ; https://ibm.github.io/ai4rag/
"""

from __future__ import annotations

import logging
from collections import Counter
from string import Formatter
from typing import Any, Mapping, Protocol, Sequence, runtime_checkable

from core.errors import ConfigError
from core.models.chat import ChatModel, check_messages
from core.vectorstores.base import RetrievedChunk, SearchSetup, VectorStore

logger = logging.getLogger(__name__)

#: The default system message: answer from the documents only, and say when they do not hold
#: the answer.
DEFAULT_SYSTEM_MESSAGE = (
    "You answer questions using only the documents given with the question. "
    "Do not use any other knowledge. If the documents do not contain the answer, "
    "say that they do not contain it instead of guessing. Keep the answer short."
)
#: The default context template: each chunk's text on its own line.
DEFAULT_CONTEXT_TEMPLATE = "{document}\n"
#: The default user message: the documents, then the question.
DEFAULT_USER_MESSAGE = "{reference_documents}\n\nQuestion: {question}\nAnswer:"
#: Chunks handed to the generator per question when nothing says how many (ai4rag's
#: ``number_of_chunks`` default): a configuration without ``number_of_chunks``, ``evaluate``'s
#: answers, :class:`SimpleRAG`.
NUMBER_OF_CHUNKS = 5

_CONTEXT_FIELDS = {"document": (1, 1), "doc_number": (0, 1)}
_USER_FIELDS = {"reference_documents": (1, 1), "question": (1, 1)}


@runtime_checkable
class PassageAnswerer(Protocol):
    """A generator that answers from the passages themselves instead of a rendered prompt
    (for example :class:`~core.rag.extractive.ExtractiveGenerator`). :class:`SimpleRAG` calls
    :meth:`answer_from_passages` on such a model instead of ``chat``."""

    model_id: str

    def answer_from_passages(self, question: str, passages: Sequence[str]) -> str:
        """Return an answer to ``question`` built from ``passages`` (best first)."""
        ...


def check_template(template: str, name: str, fields: Mapping[str, tuple[int, int]]) -> str:
    """Check that ``template`` uses exactly the allowed ``str.format`` fields.

    Args:
        template: the template text.
        name: the setting's name, for messages (``"user_message_text"``).
        fields: allowed field -> (min count, max count).

    Returns:
        ``template``, unchanged.

    Raises:
        ConfigError: not a string, malformed braces, an unknown field, or a field used too
            few or too many times.
    """
    if not isinstance(template, str):
        raise ConfigError(f"{name} must be a string, got {type(template).__name__}")
    try:
        counts = Counter(f for _, f, _, _ in Formatter().parse(template) if f is not None)
    except ValueError as exc:
        raise ConfigError(f"{name} is not a valid template ({exc}); write '{{{{' and '}}}}' for literal braces") from None
    allowed = ", ".join("{" + f + "}" for f in fields)
    for field in counts:
        if field not in fields:
            raise ConfigError(f"{name} has an unknown placeholder {{{field}}}; allowed: {allowed}")
    for field, (low, high) in fields.items():
        n = counts.get(field, 0)
        if not low <= n <= high:
            want = f"exactly {low}" if low == high else f"at most {high}"
            raise ConfigError(f"{name} must use {{{field}}} {want} time(s), found {n}")
    return template


class SimpleRAG:
    """Retrieve chunks for a question and generate an answer from them.

    Args:
        store: a vector store (``core.vectorstores.VectorStore``); searched with
            ``store.search(question, k, **search.to_dict())``.
        chat_model: a :class:`~core.models.chat.ChatModel`, or a :class:`PassageAnswerer`
            (such as the extractive baseline), which gets the chunk texts directly.
        k: chunks retrieved per question (>= 1).
        search: search mode and fusion (``core.vectorstores.SearchSetup``).
        system_message_text: the system message.
        context_template_text: how one chunk is rendered (``{document}``, optional
            ``{doc_number}``).
        user_message_text: the user message (``{reference_documents}``, ``{question}``).
        max_completion_tokens: passed to ``chat_model.chat``; None keeps the model's setting.
        temperature: passed to ``chat_model.chat``; None keeps the model's setting.

    Raises:
        ConfigError: ``k`` below 1 or a template with wrong placeholders.

    References:
        IBM ai4rag ``SimpleRAG``: https://github.com/IBM/ai4rag
    """

    def __init__(
        self,
        store: VectorStore | None,
        chat_model: ChatModel | PassageAnswerer,
        *,
        k: int = NUMBER_OF_CHUNKS,
        search: SearchSetup = SearchSetup(),
        system_message_text: str = DEFAULT_SYSTEM_MESSAGE,
        context_template_text: str = DEFAULT_CONTEXT_TEMPLATE,
        user_message_text: str = DEFAULT_USER_MESSAGE,
        max_completion_tokens: int | None = None,
        temperature: float | None = None,
    ) -> None:
        if int(k) < 1:
            raise ConfigError(f"k must be at least 1, got {k}")
        if not isinstance(search, SearchSetup):
            raise ConfigError(f"search must be a SearchSetup, got {type(search).__name__}")
        if not isinstance(system_message_text, str):
            raise ConfigError("system_message_text must be a string")
        self.store = store
        self.chat_model = chat_model
        self.k = int(k)
        self.search = search
        self.system_message_text = system_message_text
        self.context_template_text = check_template(context_template_text, "context_template_text", _CONTEXT_FIELDS)
        self.user_message_text = check_template(user_message_text, "user_message_text", _USER_FIELDS)
        self.max_completion_tokens = max_completion_tokens
        self.temperature = temperature

    @property
    def model_id(self) -> str:
        """The ``model_id`` of the chat model (or baseline) that generates the answers."""
        return str(getattr(self.chat_model, "model_id", type(self.chat_model).__name__))

    def params(self) -> dict[str, Any]:
        """Return the JSON-serialisable settings that determine the answers (for reports)."""
        return {
            "generator": self.model_id,
            "k": self.k,
            "search": self.search.to_dict(),
            "system_message_text": self.system_message_text,
            "context_template_text": self.context_template_text,
            "user_message_text": self.user_message_text,
        }

    def retrieve(self, query: str) -> list[RetrievedChunk]:
        """Return at most ``k`` chunks for ``query``, best first.

        Raises:
            StoreError / EmbeddingError: the search failed.
        """
        return list(self.store.search(query, self.k, **self.search.to_dict()))

    def reference_documents(self, chunks: Sequence[RetrievedChunk]) -> str:
        """Render ``chunks`` with ``context_template_text`` and join them ("" when none)."""
        return "".join(
            self.context_template_text.format(document=c.chunk.text, doc_number=i)
            for i, c in enumerate(chunks, start=1)
        )

    def build_messages(
        self,
        question: str,
        chunks: Sequence[RetrievedChunk],
        history: Sequence[Mapping[str, str]] = (),
    ) -> list[dict[str, str]]:
        """Return the messages sent to the chat model.

        The template's system message comes first unless ``history`` starts with a system
        message of its own (then that one is kept). Earlier turns follow unchanged, then the
        rendered user message.

        Raises:
            ConfigError: malformed ``history`` messages.
        """
        earlier = check_messages(history) if history else []
        user = self.user_message_text.format(reference_documents=self.reference_documents(chunks), question=question)
        head = [] if earlier and earlier[0]["role"] == "system" else [{"role": "system", "content": self.system_message_text}]
        return [*head, *earlier, {"role": "user", "content": user}]

    def generate(self, question: str, *, history: Sequence[Mapping[str, str]] = ()) -> dict[str, Any]:
        """Retrieve with ``question`` and answer it.

        Args:
            question: the question (non-empty); also the search query.
            history: earlier turns of the conversation, oldest first, forwarded unchanged
                (``{"role", "content"}`` dicts).

        Returns:
            ``{"question": str, "answer": str, "reference_documents": [RetrievedChunk, ...]}``.

        Raises:
            ConfigError: an empty question or malformed history.
            GenerationError: the chat model failed; the exception's ``reference_documents``
                holds the chunks retrieved for it.
            StoreError / EmbeddingError: retrieval failed.
        """
        if not isinstance(question, str) or not question.strip():
            raise ConfigError("the question is empty")
        chunks = self.retrieve(question)
        try:
            if isinstance(self.chat_model, PassageAnswerer):
                answer = self.chat_model.answer_from_passages(question, [c.chunk.text for c in chunks])
            else:
                messages = self.build_messages(question, chunks, history)
                answer = self.chat_model.chat(
                    messages, max_completion_tokens=self.max_completion_tokens, temperature=self.temperature
                )
        except Exception as exc:
            exc.reference_documents = chunks  # what was retrieved stays with the failure
            raise
        return {"question": question, "answer": answer, "reference_documents": chunks}

    def chat(self, messages: Sequence[Mapping[str, str]]) -> dict[str, Any]:
        """Answer the last user turn of a conversation.

        Retrieval uses the last message's content alone; every earlier message is forwarded
        unchanged (see :meth:`build_messages`), and the last one is replaced by the rendered
        user message.

        Args:
            messages: the conversation, oldest first; the last message must be the user's.

        Returns:
            The same dict as :meth:`generate`, ``question`` being the last user turn.

        Raises:
            ConfigError: no messages, malformed ones, or a last message that is not the user's.
            GenerationError / StoreError / EmbeddingError: as for :meth:`generate`.
        """
        checked = check_messages(messages)
        if checked[-1]["role"] != "user":
            raise ConfigError(f"the last message must be the user's, got role {checked[-1]['role']!r}")
        return self.generate(checked[-1]["content"], history=checked[:-1])
