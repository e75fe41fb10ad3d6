"""When a golden file cannot tell the setups apart: every setup tied with the pick.

A golden file with document labels only (the usual first one) often finds the right document
with every setup: ``evaluate`` then ties every setup with the one that finds the most, and
``compare-chunking`` every technique with the best. The pick is kept in the report, flagged
``tied_with_all``, and the report's ``undecided`` says so in words, with what would separate
them: finer labels (pages, evidence quotes) or more questions.

"Tied" is the McNemar tie the picks already compute (:func:`core.evaluation.retrieval.pick_setups`'s
``tied_with_best``; the chunking comparison's ``tie``): the exact test on the questions only
one of the two found does not tell them apart at alpha 0.05.
"""

from __future__ import annotations

from typing import Any, Iterable

#: What would separate the setups, by the grain they were ranked at.
NEXT_LABELS = {
    "doc": "add page or evidence labels, for example with `template --by page` or `draft`",
    "page": "add evidence quotes or more questions, for example with `draft`",
    "evidence": "add more questions, for example with `draft`",
}


def tied_with_all(ties: Iterable[bool]) -> bool:
    """True when at least two were compared and every one is tied with the pick (the pick's
    own entry counts as tied)."""
    values = list(ties)
    return len(values) >= 2 and all(values)


def undecided(what: str, pick: str, n_tied: int, grain: str, alpha: float) -> dict[str, Any]:
    """The report's ``undecided`` block.

    Args:
        what: what was compared, plural (``setups``, ``chunking techniques``).
        pick: the pick every other one is tied with.
        n_tied: how many were compared (the pick included).
        grain: the grain they were ranked at (``doc``, ``page``, ``evidence``).
        alpha: the significance level of the tie test.

    Returns:
        ``{"message", "pick", "n_tied", "grain"}``; the message starts ``these questions
        cannot tell the <what> apart: `` and says what to add.
    """
    advice = NEXT_LABELS.get(grain, NEXT_LABELS["evidence"])
    message = (f"these questions cannot tell the {what} apart: {advice} (all {n_tied} {what} are tied with {pick} "
               f"at the {grain} grain: McNemar's exact test, alpha {alpha:g}; {pick} is kept as the pick but is not "
               "a winner)")
    return {"message": message, "pick": pick, "n_tied": n_tied, "grain": grain}
