"""Small helpers for the messages ragtune prints."""

from __future__ import annotations


def plural(n: int, word: str) -> str:
    """``"1 question"``, ``"2 questions"``: ``n`` and ``word``, with an ``s`` unless ``n`` is 1."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


__all__ = ["plural"]
