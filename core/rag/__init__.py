"""Retrieval-augmented generation: the ``SimpleRAG`` template (retrieve, render three prompt
templates, ask a chat model), an extractive baseline that needs no LLM, and answering a golden
set in a bounded thread pool."""

from core.rag.extractive import NO_ANSWER, ExtractiveGenerator, split_sentences
from core.rag.generate import answer_one, generate_answers
from core.rag.records import AnswerRecord, Context, contexts_from
from core.rag.template import (
    DEFAULT_CONTEXT_TEMPLATE,
    DEFAULT_SYSTEM_MESSAGE,
    DEFAULT_USER_MESSAGE,
    PassageAnswerer,
    SimpleRAG,
    check_template,
)

__all__ = [
    "DEFAULT_CONTEXT_TEMPLATE",
    "DEFAULT_SYSTEM_MESSAGE",
    "DEFAULT_USER_MESSAGE",
    "NO_ANSWER",
    "AnswerRecord",
    "Context",
    "ExtractiveGenerator",
    "PassageAnswerer",
    "SimpleRAG",
    "answer_one",
    "check_template",
    "contexts_from",
    "generate_answers",
    "split_sentences",
]
