"""``check --target``: what a golden file expects that a target does not hold.

For each target: the expected documents it lacks (a warning on the first line that expects each,
with how many questions do), and evidence quotes none of the target's own chunks of the expected
documents holds (``core.golden.stale``, run on the chunks the target returns). A target that
cannot be reached is an error: the check could not be made.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Sequence

from core.errors import ConfigError, RagtuneError
from core.golden.reader import _check
from core.golden.stale import pieces_from_chunks, stale_evidence_warnings
from core.golden.types import Problem
from core.targets.open import open_target

if TYPE_CHECKING:
    from core.golden.types import GoldenCheck, GoldenQuestion
    from core.settings import Settings
    from core.targets.base import Target
    from core.targets.spec import TargetSpec


def target_problems(questions: Sequence[GoldenQuestion], target: Target) -> list[Problem]:
    """The warnings about ``questions`` against one open target.

    Args:
        questions: the golden questions.
        target: an open :class:`core.targets.base.Target`.

    Returns:
        ``Problem`` warnings: one per expected document the target lacks (line of the first
        question expecting it, field ``expected``), then stale evidence quotes (line and field
        ``evidence[i]``), each prefixed with the target's name; when the target cannot select a
        document's chunks, one file-level warning saying why evidence was not checked.
    """
    expecting: dict[str, list[GoldenQuestion]] = {}
    for q in questions:
        for document in dict.fromkeys(t.document_id for t in q.expected):
            expecting.setdefault(document, []).append(q)
    out = []
    missing = target.missing(expecting)
    for document in missing:
        first = expecting[document][0]
        out.append(Problem("warning", f"target {target.name} lacks expected document {document} "
                                      f"({len(expecting[document])} question(s) expect it)",
                           line=first.line, field="expected"))
    with_evidence = sorted({d for q in questions if q.usable_evidence for d in q.document_ids} - set(missing))
    if not with_evidence:
        return out
    try:
        chunks = [h.retrieved(1).chunk for hits in target.chunks_of(with_evidence).values() for h in hits]
    except RagtuneError as exc:
        return out + [Problem("warning", f"target {target.name}: evidence not checked against its chunks: {exc}")]
    for p in stale_evidence_warnings(questions, pieces_from_chunks(chunks)):
        out.append(Problem("warning", f"target {target.name}: {p.message}", line=p.line, field=p.field))
    return out


def add_target_problems(check: GoldenCheck, golden_path: str | os.PathLike[str], specs: Sequence[TargetSpec],
                        settings: Settings) -> int:
    """Add each target's warnings (:func:`target_problems`) to a ``GoldenCheck`` of a file
    without errors; a target that cannot be opened adds an error naming it and why.

    Args:
        check: the file's ``GoldenCheck`` (problems appended, then sorted by line).
        golden_path: the golden file (read again).
        specs: the targets (``TargetSpec``).
        settings: ``core.settings.Settings``.

    Returns:
        The number of problems added.

    Raises:
        ConfigError: a bad field mapping of a target.
    """
    if not check.ok:
        return 0
    _, found = _check(golden_path, None)
    added: list[Problem] = []
    for spec in specs:
        try:
            target = open_target(spec, settings, None)
        except ConfigError:
            raise
        except RagtuneError as exc:
            added.append(Problem("error", f"target {spec.name} could not be checked: {exc}"))
            continue
        try:
            added += target_problems(found.questions, target)
        except RagtuneError as exc:
            added.append(Problem("error", f"target {spec.name} could not be checked: {exc}"))
        finally:
            target.close()
    check.problems.extend(added)
    check.problems.sort(key=lambda p: (p.line is None, p.line or 0))
    return len(added)


__all__ = ["add_target_problems", "target_problems"]
