"""A small hand-made corpus of three one-topic documents and six labelled questions, for the
end-to-end tests of compare-chunking, cutoff and sweep (counts in those tests are worked out
by hand from it)."""

from __future__ import annotations

import json
from pathlib import Path

DOCS = {
    "dental.txt": "Dental cover pays eighty percent of routine check-ups. Orthodontic braces are not covered.",
    "travel.txt": "Flights are booked through the travel portal. Economy class is used for trips under six hours.",
    "leave.txt": "Employees receive twenty-five days of paid leave. Unused leave days expire at the end of March.",
}
#: ``(id, question, expected document, evidence)``: each question's evidence is in one sentence.
QUESTIONS = [
    ("q1", "What share of check-ups does dental cover pay?", "dental.txt", "eighty percent of routine check-ups"),
    ("q2", "Are orthodontic braces covered?", "dental.txt", "Orthodontic braces are not covered"),
    ("q3", "Where are flights booked?", "travel.txt", "booked through the travel portal"),
    ("q4", "Which class is used for short trips?", "travel.txt", "Economy class is used"),
    ("q5", "How many days of paid leave do employees get?", "leave.txt", "twenty-five days of paid leave"),
    ("q6", "When do unused leave days expire?", "leave.txt", "expire at the end of March"),
]


def write_topic_corpus(root: Path) -> tuple[Path, Path]:
    """Write :data:`DOCS` to ``root/docs`` and :data:`QUESTIONS` to ``root/golden.jsonl``.

    Returns:
        ``(docs folder, golden file)``.
    """
    docs = root / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text + "\n", encoding="utf-8")
    golden = root / "golden.jsonl"
    golden.write_text("".join(json.dumps({"id": i, "question": q, "expected": [d], "evidence": [e]}) + "\n"
                              for i, q, d, e in QUESTIONS), encoding="utf-8")
    return docs, golden


def first_questions(golden: Path, n: int, folder: Path) -> Path:
    """Write the first ``n`` lines of the golden file ``golden`` to ``folder/golden.jsonl``.

    Returns:
        The new golden file's path.
    """
    lines = golden.read_text(encoding="utf-8").splitlines()[:n]
    path = folder / "golden.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
