"""Keeping a golden check's problems bounded, whatever the input.

A golden file with an error on every line must not give a check result as large as the file:
:class:`ProblemLog` lists the first :attr:`CheckLimits.per_kind` problems of each kind and, for
the rest, one :class:`OmittedProblems` per kind with their count and the lines they are on,
compressed as ranges (``101-250, 300``). Listed problems also share a byte budget, long
messages and field names are shortened, and the kinds tracked are capped, so the JSON of a
check stays under :data:`MAX_CHECK_BYTES` for any input. ``CheckLimits.unbounded()`` keeps
everything (``ragtune check --all``).

A problem's kind is its severity, its field without list indices (``expected[3]`` ->
``expected``) and its message with quoted text and numbers masked, so ``duplicate id 'q7':
lines 3 and 9`` and ``duplicate id 'q8': lines 4 and 10`` are one kind.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from typing import Any, Iterable

from core.golden.types import Problem
from core.text import plural

__all__ = [
    "DEFAULT_LIMITS",
    "MAX_CHECK_BYTES",
    "CheckLimits",
    "OmittedProblems",
    "ProblemLog",
    "format_ranges",
    "safe_text",
]

#: Upper bound, in bytes, of a bounded check result's JSON (``GoldenCheck.to_dict()``,
#: ``json.dumps`` with or without ``ensure_ascii``), for any input.
MAX_CHECK_BYTES = 1_000_000


@dataclass(frozen=True)
class CheckLimits:
    """How much of a golden check's problems is kept.

    Attributes:
        per_kind: problems listed per kind; the rest are counted with their lines. None lists
            every problem (and ignores the other limits).
        listed_bytes: budget, in bytes of JSON (ASCII-escaped), of all listed line problems
            together; problems past it are counted like the rest of their kind.
        message_chars: longest message kept, in characters; longer ones end with ``…``.
        field_chars: longest field name kept, in characters.
        max_kinds: kinds tracked; problems of further kinds are counted under one last kind.
        max_ranges: line ranges kept per omitted kind; further lines are only counted.
    """

    per_kind: int | None = 100
    listed_bytes: int = 400_000
    message_chars: int = 300
    field_chars: int = 100
    max_kinds: int = 100
    max_ranges: int = 10

    @classmethod
    def unbounded(cls) -> "CheckLimits":
        """Limits that keep every problem in full (``ragtune check --all``)."""
        return cls(per_kind=None)

    @property
    def bounded(self) -> bool:
        """False when every problem is kept."""
        return self.per_kind is not None


#: The limits of ``check_golden``, the ``check`` command, the HTTP route and the blob trigger.
DEFAULT_LIMITS = CheckLimits()


@dataclass(frozen=True)
class OmittedProblems:
    """Problems of one kind that were counted but not listed.

    Attributes:
        severity: ``"error"`` or ``"warning"``.
        count: how many were left out (at least 1).
        example: the first one left out, as ``field 'x': message`` (shortened); its line is the
            first of ``ranges``.
        ranges: the lines they are on, as ``(first, last)`` pairs in order, at most
            :attr:`CheckLimits.max_ranges` of them.
        more_lines: lines beyond ``ranges`` (counted, not kept).
    """

    severity: str
    count: int
    example: str
    ranges: tuple[tuple[int, int], ...] = ()
    more_lines: int = 0

    @property
    def lines(self) -> str:
        """The lines as text, for example ``"101-250, 300 and 12 more lines"``."""
        return format_ranges(self.ranges, self.more_lines)

    def format(self, path: str = "") -> str:
        """Return ``"path: error: 9,900 more like this, on lines 101-10000: <example>"``."""
        head = f"{path}: " if path else ""
        where = f", on lines {self.lines}" if self.ranges else ""
        return f"{head}{self.severity}: {self.count:,} more like this{where}: {self.example}"

    def to_dict(self) -> dict[str, Any]:
        """Return ``{severity, count, lines, example}`` (``lines`` as :attr:`lines`)."""
        return {"severity": self.severity, "count": self.count, "lines": self.lines, "example": self.example}


def format_ranges(ranges: Iterable[tuple[int, int]], more_lines: int = 0) -> str:
    """Write line ranges as ``"1-3, 7, 9-12"``, adding ``" and N more lines"`` when counted.

    Args:
        ranges: ``(first, last)`` pairs, in order, ``first <= last``.
        more_lines: lines left out of ``ranges``.
    """
    text = ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in ranges)
    if more_lines:
        text += f" and {plural(more_lines, 'more line')}"
    return text


def safe_text(text: str) -> str:
    """Return ``text`` with lone surrogates written as ``\\udXXX`` escapes, so it encodes as UTF-8.

    A JSON string may hold a lone surrogate escape (``"\\ud800"``); Python reads it, but it
    cannot be written as UTF-8, printed to a UTF-8 terminal or stored. Other text is returned
    unchanged.
    """
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


_MASK_RE = re.compile(r"'[^']*'|\"[^\"]*\"|\d+")
_INDEX_RE = re.compile(r"\[\d+\]")


def _kind(problem: Problem) -> tuple[str, str, str]:
    fld = problem.field or ""
    if problem.message.startswith(("unknown ", "is unknown ")):
        fld = "*"  # the field is the unknown name itself: one kind for all of them
    else:
        fld = _INDEX_RE.sub("", fld)[:40]
    return (problem.severity, fld, _MASK_RE.sub("_", problem.message[:200]))


def _shorten(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


class _Kind:
    __slots__ = ("listed", "count", "example", "ranges", "more_lines", "last_line")

    def __init__(self) -> None:
        self.listed = 0
        self.count = 0
        self.example = ""
        self.ranges: list[list[int]] = []
        self.more_lines = 0
        self.last_line = 0

    def omit(self, problem: Problem, limits: CheckLimits) -> None:
        if not self.count:
            self.example = f"field '{problem.field}': {problem.message}" if problem.field else problem.message
        self.count += 1
        line = problem.line
        if line is None:
            return
        last = self.ranges[-1] if self.ranges else None
        if last is not None and last[0] <= line <= last[1]:
            return
        if last is not None and line == last[1] + 1 and not self.more_lines:
            last[1] = line
        elif len(self.ranges) < limits.max_ranges:
            self.ranges.append([line, line])
        elif line != self.last_line:
            self.more_lines += 1
        self.last_line = line


@dataclass
class ProblemLog:
    """Collects a check's problems within :class:`CheckLimits`.

    Problems are added in line order (file-level problems, ``line`` None, are always listed).
    Memory stays bounded by the limits, not by the number of problems added.

    Args:
        limits: what to keep (default :data:`DEFAULT_LIMITS`).

    Attributes:
        listed: the problems kept, in the order added (messages and fields shortened and made
            encodable, see :func:`safe_text`).
        n_errors, n_warnings: every problem added, listed or not.
    """

    limits: CheckLimits = DEFAULT_LIMITS
    listed: list[Problem] = field(default_factory=list, init=False)
    n_errors: int = field(default=0, init=False)
    n_warnings: int = field(default=0, init=False)
    _kinds: dict[tuple[str, str, str], _Kind] = field(default_factory=dict, init=False, repr=False)
    _order: list[tuple[str, str, str]] = field(default_factory=list, init=False, repr=False)
    _bytes: int = field(default=0, init=False, repr=False)

    def add(self, problem: Problem) -> None:
        """Count ``problem`` and list it, or count it with its kind's omitted ones."""
        if problem.severity == "error":
            self.n_errors += 1
        else:
            self.n_warnings += 1
        problem = self._clean(problem)
        limits = self.limits
        if not limits.bounded or problem.line is None:
            self.listed.append(problem)
            return
        key = _kind(problem)
        kind = self._kinds.get(key)
        if kind is None:
            if len(self._kinds) >= limits.max_kinds:
                key = (problem.severity, "", "(other kinds)")
                kind = self._kinds.get(key)
            if kind is None:
                kind = self._kinds[key] = _Kind()
                self._order.append(key)
        if kind.count == 0 and kind.listed < limits.per_kind:
            size = len(json.dumps(problem.to_dict()))
            if self._bytes + size <= limits.listed_bytes:
                kind.listed += 1
                self._bytes += size
                self.listed.append(problem)
                return
        kind.omit(problem, limits)

    def extend(self, problems: Iterable[Problem]) -> None:
        """:meth:`add` each problem, in order."""
        for problem in problems:
            self.add(problem)

    def omitted(self) -> list[OmittedProblems]:
        """The kinds with problems left out, in the order their kinds first appeared."""
        out = []
        for key in self._order:
            kind = self._kinds[key]
            if kind.count:
                out.append(OmittedProblems(
                    severity=key[0], count=kind.count, example=_shorten(kind.example, self.limits.message_chars),
                    ranges=tuple((a, b) for a, b in kind.ranges), more_lines=kind.more_lines,
                ))
        return out

    def _clean(self, problem: Problem) -> Problem:
        message, fld = safe_text(problem.message), problem.field
        if fld is not None:
            fld = safe_text(fld)
        if self.limits.bounded:
            message = _shorten(message, self.limits.message_chars)
            fld = None if fld is None else _shorten(fld, self.limits.field_chars)
        if message is problem.message and fld is problem.field:
            return problem
        return replace(problem, message=message, field=fld)
