"""Types of golden files: targets, questions, problems and check results."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from core.documents.base import normalize_id

if TYPE_CHECKING:
    from core.golden.problems import OmittedProblems

_PAGE_RE = re.compile(r"^(?P<doc>.+)#page=(?P<page>[^#]*)$", re.IGNORECASE)
_ANCHOR_RE = re.compile(r"#(?P<name>[A-Za-z][A-Za-z_-]*)=[^#/]*$")
#: Most digits of a page number (``#page=N``); a longer one is "page number too large".
MAX_PAGE_DIGITS = 9


#: Evidence quotes with fewer words than this are not used for matching (too ambiguous).
MIN_EVIDENCE_WORDS = 3


@dataclass(frozen=True)
class Target:
    """One expected source: a whole document, or one 1-based page of it.

    Attributes:
        document_id: the document's id (its path relative to the corpus folder).
        page: 1-based page number, or None for the whole document.
    """

    document_id: str
    page: int | None = None

    @classmethod
    def parse(cls, value: str) -> "Target":
        """Parse ``"name.pdf"`` or ``"name.pdf#page=N"`` (N a positive integer).

        The anchor is case-insensitive (``#PAGE=2`` is page 2); the id is NFC-normalised
        (:func:`normalize_id`) and a leading ``./`` is dropped (``./policy.txt`` is
        ``policy.txt``, the id the loader gives the file).

        Raises:
            ValueError: the page part is not a positive integer (or has more than
                :data:`MAX_PAGE_DIGITS` digits), the id is empty, or it ends
                with another anchor (``name.pdf#section=2``), which would silently become part
                of the document's name.
        """
        value = normalize_id(value)
        while value.startswith("./"):  # the folder itself: "./policy.txt" is the document "policy.txt"
            value = value[2:].lstrip("/")
        match = _PAGE_RE.match(value)
        if match is None:
            if not value.strip():
                raise ValueError("document id is empty")
            anchor = _ANCHOR_RE.search(value)
            if anchor is not None:
                raise ValueError(f"unknown anchor '#{anchor.group('name')}=' in {value!r}: "
                                 "the only anchor read is '#page=N'")
            return cls(value)
        doc, page = match.group("doc"), match.group("page")
        if re.fullmatch(r"[0-9]+", page) and len(page.lstrip("0")) > MAX_PAGE_DIGITS:
            raise ValueError(f"page number too large in {doc!r}: {len(page):,} digits (pages count from 1)")
        if not re.fullmatch(r"[0-9]+", page) or int(page) < 1:
            raise ValueError(f"page {page!r} in {value!r} is not a positive integer (pages count from 1)")
        return cls(doc, int(page))

    def __str__(self) -> str:
        return self.document_id if self.page is None else f"{self.document_id}#page={self.page}"


@dataclass(frozen=True)
class GoldenQuestion:
    """One question of a golden file, ready to score.

    Attributes:
        id: the line's ``id``, or ``"line-N"`` when the line has none.
        question: the question text (non-empty).
        expected: the expected sources, in file order.
        reference: an answer a person accepts, or None.
        evidence: verbatim quotes from the expected sources, as given (short ones included).
        line: 1-based line number in the golden file.
        hint: free text for whoever fills the row in, or None.
        draft: True when the row is an unchecked draft.
        history: earlier turns of the conversation the question belongs to, oldest first, as
            ``(role, content)`` pairs with role ``"user"`` or ``"assistant"``; empty for a
            standalone question. Set for later turns of multi-turn Amazon Bedrock records.
        metadata: the line's ``metadata`` object, as given (free-form JSON, never scored);
            empty when the line has none. Left out of the question's hash.
        grades: a person's grade of the answer per judge metric (``{"judge.correctness":
            1.0}``), on the judge's own scale; empty when none. Left out of the hash.
    """

    id: str
    question: str
    expected: tuple[Target, ...]
    reference: str | None = None
    evidence: tuple[str, ...] = ()
    line: int = 0
    hint: str | None = None
    draft: bool = False
    history: tuple[tuple[str, str], ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict, hash=False)
    grades: dict[str, float] = field(default_factory=dict, hash=False)

    @property
    def document_ids(self) -> list[str]:
        """Distinct expected document ids, in file order."""
        return list(dict.fromkeys(t.document_id for t in self.expected))

    @property
    def pages(self) -> list[tuple[str, int]]:
        """Distinct expected ``(document_id, page)`` pairs, in file order."""
        return list(dict.fromkeys((t.document_id, t.page) for t in self.expected if t.page is not None))

    @property
    def history_messages(self) -> list[dict[str, str]]:
        """:attr:`history` as chat messages, ``[{"role": ..., "content": ...}, ...]``."""
        return [{"role": role, "content": content} for role, content in self.history]

    @property
    def usable_evidence(self) -> list[str]:
        """Distinct evidence quotes of at least :data:`MIN_EVIDENCE_WORDS` words."""
        return list(dict.fromkeys(q for q in self.evidence if len(q.split()) >= MIN_EVIDENCE_WORDS))

    def to_dict(self) -> dict[str, Any]:
        """Return the question as a golden-file line (JSON-serialisable)."""
        out: dict[str, Any] = {"id": self.id, "question": self.question, "expected": [str(t) for t in self.expected]}
        if self.reference is not None:
            out["reference"] = self.reference
        if self.evidence:
            out["evidence"] = list(self.evidence)
        if self.grades:
            out["grades"] = dict(self.grades)
        if self.metadata:
            out["metadata"] = dict(self.metadata)
        return out


Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Problem:
    """One problem found in a golden file.

    Attributes:
        severity: ``"error"`` (the file cannot be run as it is) or ``"warning"``.
        message: what is wrong, in words a person reads.
        line: 1-based line number, or None for the file as a whole.
        field: the field concerned (for example ``"expected"`` or ``"expected[1]"``), or None.
    """

    severity: Severity
    message: str
    line: int | None = None
    field: str | None = None

    def format(self, path: str = "", *, severity: bool = True) -> str:
        """Return ``"path:line: severity: field 'x': message"`` (parts that are None omitted;
        without ``severity: `` when ``severity`` is False, for a caller that says it itself)."""
        where = path
        if self.line is not None:
            where = f"{where}:{self.line}" if where else f"line {self.line}"
        head = f"{where}: " if where else ""
        fld = f"field '{self.field}': " if self.field else ""
        return f"{head}{self.severity + ': ' if severity else ''}{fld}{self.message}"

    def to_dict(self) -> dict[str, Any]:
        """Return ``{severity, line, field, message}``."""
        return {"severity": self.severity, "line": self.line, "field": self.field, "message": self.message}


@dataclass
class GoldenCheck:
    """The result of checking a golden file.

    Attributes:
        path: the file checked, as given (a remote address without its query string).
        sha256: hex sha256 of the file's bytes, or None when it could not be read.
        problems: the problems listed, in line order (file-level problems last): every one, or
            the first of each kind when the check was bounded.
        n_lines: non-blank lines read.
        n_ready: questions ready to score.
        n_templates: template rows (empty question with a hint).
        n_drafts: unchecked draft rows (not scored).
        format: the file's format: ``"ragtune"`` (the native golden format), ``"bedrock"``
            (an Amazon Bedrock RAG-evaluation prompt dataset) or ``"bedrock-byoi"`` (the same
            with bring-your-own-inference answers and passages).
        omitted: the problems counted but not listed, one
            :class:`~core.golden.problems.OmittedProblems` per kind (empty when every problem is
            listed; see :class:`~core.golden.problems.CheckLimits`).
    """

    path: str
    sha256: str | None
    problems: list[Problem] = field(default_factory=list)
    n_lines: int = 0
    n_ready: int = 0
    n_templates: int = 0
    n_drafts: int = 0
    format: str = "ragtune"
    omitted: list["OmittedProblems"] = field(default_factory=list)

    @property
    def errors(self) -> list[Problem]:
        """The listed problems with severity ``"error"``."""
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        """The listed problems with severity ``"warning"``."""
        return [p for p in self.problems if p.severity == "warning"]

    @property
    def n_errors(self) -> int:
        """Errors found, listed or omitted."""
        return len(self.errors) + sum(o.count for o in self.omitted if o.severity == "error")

    @property
    def n_warnings(self) -> int:
        """Warnings found, listed or omitted."""
        return len(self.warnings) + sum(o.count for o in self.omitted if o.severity == "warning")

    @property
    def ok(self) -> bool:
        """True when the file has no errors (it can be run)."""
        return self.n_errors == 0

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serialisable summary: the listed problems, the total counts and the
        problems left out per kind (``omitted``: ``[{severity, count, lines, example}]``, empty
        when every problem is listed)."""
        return {
            "path": self.path,
            "sha256": self.sha256,
            "ok": self.ok,
            "n_lines": self.n_lines,
            "n_ready": self.n_ready,
            "n_templates": self.n_templates,
            "n_drafts": self.n_drafts,
            "format": self.format,
            "n_errors": self.n_errors,
            "n_warnings": self.n_warnings,
            "errors": [p.to_dict() for p in self.errors],
            "warnings": [p.to_dict() for p in self.warnings],
            "omitted": [o.to_dict() for o in self.omitted],
        }


@dataclass
class GoldenSet:
    """A golden file read and checked.

    Attributes:
        path: the file read, as given (a remote address without its query string).
        sha256: hex sha256 of the file's bytes.
        questions: the questions ready to score, in file order.
        n_templates: template rows skipped.
        n_drafts: unchecked drafts skipped.
        warnings: the check's warnings.
        raw: the file's bytes (kept so reports can store the file once per sha256).
        format: the file's format, as :attr:`GoldenCheck.format`.
    """

    path: str
    sha256: str
    questions: list[GoldenQuestion]
    n_templates: int = 0
    n_drafts: int = 0
    warnings: list[Problem] = field(default_factory=list)
    raw: bytes = b""
    format: str = "ragtune"
