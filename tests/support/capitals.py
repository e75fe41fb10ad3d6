"""Two questions on capitals and a scripted UMBRELA grader, for the tests of
``--label-unjudged`` over documents and over a target."""

from __future__ import annotations

import re

from tests.support.openai_app import last_user_text

#: The golden rows: one document expected per question.
ROWS = [{"id": "fr", "question": "What is the capital of France?", "expected": ["paris.txt"]},
        {"id": "jp", "question": "Which city is the capital of Japan?", "expected": ["tokyo.txt"]}]


def grader(body):
    """Relevant (3): the page on France's capital for the question on France; else 0."""
    text = last_user_text(body)
    query, passage = re.search(r"Query: (.*)\nPassage: (.*?)\n\nSplit this problem", text, re.DOTALL).groups()
    return "##final score: 3" if "France" in query and "France's capital city is Paris" in passage else "##final score: 0"
