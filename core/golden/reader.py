"""Reading and checking golden files.

A golden file is JSON Lines (UTF-8; a leading byte order mark is accepted and ignored): one JSON
object per line, blank lines ignored but counted in line numbers. Each object follows
``golden.schema.json`` (see :func:`load_schema`)::

    {"id": "q1", "question": "Who pays?", "expected": ["handbook.pdf#page=3"], "reference": "...",
     "evidence": ["the employer pays half"]}

Rules beyond the schema, checked by :func:`check_golden`:

- ``id`` (string or integer; an integer is read as its decimal string) is unique; a line without
  one gets ``line-N``.
- ``question`` holds non-whitespace text and is unique, ignoring case and whitespace.
- ``expected`` holds at least one source: a document id, or ``name.pdf#page=N`` with N >= 1.
- A row with an empty or missing question and a ``hint`` is a template: not an error, not scored.
- A row with ``"draft": true`` is checked but not scored.
- ``metadata`` (any JSON object) is kept with the question and never scored; one key is read:
  ``metadata.bedrock.history`` (the earlier turns of a Bedrock conversation, as ``ragtune
  suggest`` writes them: ``[{"role": "user" | "assistant", "content": text}, ...]``, oldest
  first) becomes the question's ``history``, so a converted Bedrock file is answered with the
  same conversation as the Bedrock file itself.
- Evidence quotes under :data:`~core.golden.types.MIN_EVIDENCE_WORDS` words are kept but not
  used for evidence matching.
- Free text has a length limit per field, in characters (:mod:`core.limits`, with the reasons):
  ``id`` 200, ``question`` 4,000, each ``expected`` source 4,096, ``reference`` 20,000, each
  ``evidence`` quote 10,000, ``hint`` 10,000, each ``metadata.bedrock.history`` turn 20,000. A
  longer value is an error on its line naming its field (the row is not scored).

Amazon Bedrock RAG-evaluation prompt datasets (lines with ``conversationTurns``, and their
bring-your-own-inference variant) are recognised automatically and read by
:mod:`core.golden.bedrock`: one question per turn, no expected documents.

References:
    JSON Lines: https://jsonlines.org/ ; JSON Schema draft 2020-12:
    https://json-schema.org/draft/2020-12/json-schema-core
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Iterable
from functools import lru_cache
from importlib import resources
from os import PathLike
from typing import TYPE_CHECKING, Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from core import inputs
from core.documents.base import normalize_id
from core.errors import ConfigError, GoldenError, StoreError
from core.golden import bedrock
from core.golden.lines import FIELDS, json_type, nearest, parse_line_object, too_long
from core.golden.problems import DEFAULT_LIMITS, CheckLimits, ProblemLog, format_ranges
from core.golden.types import (
    MIN_EVIDENCE_WORDS,
    GoldenCheck,
    GoldenQuestion,
    GoldenSet,
    Problem,
    Target,
)
from core.limits import GOLDEN_FILE_MAX_BYTES
from core.text import plural

if TYPE_CHECKING:
    from core.rag.records import AnswerRecord
    from core.reports.blob import StorageCredential

logger = logging.getLogger(__name__)

__all__ = [
    "FIELDS",
    "check_golden",
    "format_check",
    "load_schema",
    "parse_line_object",
    "read_bedrock_answers",
    "read_bytes",
    "read_golden",
]

_SCHEMA_FILE = "golden.schema.json"
_BOM = b"\xef\xbb\xbf"
#: An unknown field on at least this many lines is reported once, with its count and lines.
MIN_LINES_TO_GROUP_UNKNOWN = 3
#: Lines named in a grouped unknown-field error of a bounded check.
_GROUPED_LINES_SHOWN = 5
#: Distinct unknown field names tracked for grouping in a bounded check; further ones are
#: reported per line.
_MAX_UNKNOWN_NAMES = 1000
_TYPE_WORDS = {
    "string": "a string",
    "integer": "an integer",
    "boolean": "a boolean (true or false)",
    "array": "an array",
    "object": "an object",
    "number": "a number",
    "null": "null",
}
_NOT_A_FILE = "is a directory, not a golden file (a .jsonl file, one JSON object per line)"
_EXPECTED_HELP = "give at least one document id, or one page as 'name.pdf#page=N'"

PathLikeStr = str | PathLike[str]


@lru_cache(maxsize=1)
def _schema_text() -> str:
    return resources.files("core.golden").joinpath(_SCHEMA_FILE).read_text(encoding="utf-8")


def load_schema() -> dict[str, Any]:
    """Return the JSON Schema (draft 2020-12) of one golden line.

    The schema ships inside the package as ``core/golden/golden.schema.json``. Each call returns a
    fresh dict, so callers may change it.

    Returns:
        The schema as a dict (``{"$schema": ..., "type": "object", "properties": {...}, ...}``).
    """
    return json.loads(_schema_text())


@lru_cache(maxsize=1)
def _validator() -> Draft202012Validator:
    return Draft202012Validator(load_schema())


def read_bytes(
    path: PathLikeStr,
    *,
    connection_string: str | None = None,
    credential: StorageCredential | None = None,
    endpoint_url: str | None = None,
) -> bytes:
    """Return the bytes of a golden file, local or remote.

    Args:
        path: a local file path (``str`` or ``pathlib.Path``), a ``file://`` URL,
            ``s3://<bucket>/<key>``, ``https://<account>.blob.core.windows.net/<container>/<key>``
            (optionally with a SAS query string) or a path-style Azurite URL (see
            :mod:`core.inputs`). A remote file is read into memory; no local copy is made.
        connection_string: Azure Storage connection string for Blob addresses (default
            ``Settings.storage_connection``).
        credential: Azure credential for Blob addresses without a connection string (default
            from ``Settings``).
        endpoint_url: S3-compatible server for ``s3://`` addresses (default boto3's, which
            honours ``AWS_ENDPOINT_URL``).

    Returns:
        The file's bytes, unchanged (so its sha256 is the same wherever it lives).

    Raises:
        GoldenError: the address cannot be read (unknown scheme, no key), or the file is
            missing, is a directory (or a remote folder), is not a regular file (a device
            such as ``/dev/zero``, a FIFO, a socket, ``/dev/stdin``: refused before a byte is
            read), holds more than :data:`core.limits.GOLDEN_FILE_MAX_BYTES` bytes (read no
            further) or cannot be read. ``.problems``
            holds one file-level :class:`Problem`; the message names the path, or the address
            without its query string, and never a credential.
    """
    shown = inputs.shown_address(path)
    try:
        local = inputs.local_path(path)
    except ConfigError as exc:
        raise _file_error(shown, str(exc)) from None
    if local is None:
        try:
            return inputs.read_input_bytes(
                path, connection_string=connection_string, credential=credential, endpoint_url=endpoint_url,
                max_bytes=GOLDEN_FILE_MAX_BYTES,
            )
        except inputs.InputTooLargeError:
            raise _file_error(shown, _too_large()) from None
        except inputs.InputNotFoundError as exc:
            if exc.is_folder:
                raise _file_error(shown, _NOT_A_FILE) from None
            raise _file_error(shown, "file not found" + (f" ({exc.reason})" if exc.reason else "")) from None
        except (StoreError, ConfigError) as exc:
            raise _file_error(shown, f"cannot read the file: {exc}") from None
    p = local
    try:
        return inputs.read_local_file(p, GOLDEN_FILE_MAX_BYTES)
    except inputs.NotAFileError as exc:
        message = _NOT_A_FILE if exc.kind == "a directory" else (
            f"is {exc.kind}, not a golden file: ragtune reads a golden file only from a regular file "
            "(save it to a file and give its path)")
        raise _file_error(shown, message) from None
    except inputs.InputTooLargeError:
        raise _file_error(shown, _too_large()) from None
    except FileNotFoundError:
        raise _file_error(shown, "file not found") from None
    except IsADirectoryError:
        raise _file_error(shown, _NOT_A_FILE) from None
    except PermissionError:
        raise _file_error(shown, "cannot read the file: permission denied") from None
    except OSError as exc:
        message = _NOT_A_FILE if p.is_dir() else f"cannot read the file: {exc.strerror or exc}"
        raise _file_error(shown, message) from None


def _too_large() -> str:
    return (f"file larger than {GOLDEN_FILE_MAX_BYTES:,} bytes, the most a golden file may hold "
            "(not read further): split it into several files")


def _file_error(path: str, message: str) -> GoldenError:
    problem = Problem("error", message)
    return GoldenError(problem.format(path), [problem])


def check_golden(
    path: PathLikeStr,
    documents: Iterable[str] | None = None,
    *,
    connection_string: str | None = None,
    credential: StorageCredential | None = None,
    endpoint_url: str | None = None,
    data: bytes | None = None,
    limits: CheckLimits = DEFAULT_LIMITS,
) -> GoldenCheck:
    """Check a golden file and report its problems, each with its 1-based line number.

    The whole file is checked in one pass; nothing stops at the first problem and nothing is
    raised for a bad file, however hostile (see :mod:`core.golden.lines`). With the default
    ``limits`` the result is bounded: the first 100 problems of each kind are listed and the
    rest counted with their lines (``GoldenCheck.omitted``), so its JSON stays under
    :data:`~core.golden.problems.MAX_CHECK_BYTES` for any input.

    Errors (the file cannot be run): a line that is not JSON (with the column of the JSON error),
    a line that is not an object, an unknown field (with the nearest known field; a field
    unknown on :data:`MIN_LINES_TO_GROUP_UNKNOWN` or more lines is one error naming its count
    and first lines, suggesting ``metadata``), a missing or
    empty ``question`` or ``expected`` (except in template rows), a field of the wrong type, a page
    that is not a positive integer (``x.pdf#page=0``), a duplicate ``id`` or question (naming both
    lines), a field given twice on one line, free text longer than its field's limit (see the
    module docstring), no row ready to score; and, as one file-level problem,
    a file that is missing, a directory, not UTF-8, empty or only blank lines.

    Warnings: template rows, draft rows, expected documents missing from ``documents`` (with the
    nearest corpus id), evidence quotes under :data:`MIN_EVIDENCE_WORDS` words.

    An Amazon Bedrock prompt dataset (the first line that parses holds ``conversationTurns``)
    is checked by :func:`core.golden.bedrock.check_bedrock_text` instead, with the same
    reporting (``GoldenCheck.format`` says which format was read).

    Args:
        path: the golden file: a local path (``str`` or ``pathlib.Path``) or an address
            (``s3://...``, a Blob URL; see :func:`read_bytes`). ``GoldenCheck.path`` and every
            problem name it as given, a remote address without its query string.
        documents: the corpus's document ids; when given, expected documents not among them are
            reported as warnings. None skips that check.
        connection_string, credential, endpoint_url: how to reach a remote file (see
            :func:`read_bytes`; defaults from ``core.settings.Settings``).
        data: the file's bytes when they were read already (``GoldenSet.raw``): nothing is
            read then, and ``path`` only names the file in problems.
        limits: how many problems are kept (:class:`~core.golden.problems.CheckLimits`;
            ``CheckLimits.unbounded()`` keeps every one in full).

    Returns:
        A :class:`GoldenCheck`: problems sorted by line (file-level problems last), counts of
        non-blank lines, ready questions, templates and drafts, and the file's sha256 (None when
        it could not be read; the same for a remote file as for a local copy of it).
    """
    check, _ = _check(path, documents, data=data, limits=limits, connection_string=connection_string,
                      credential=credential, endpoint_url=endpoint_url)
    return check


def read_golden(
    path: PathLikeStr,
    *,
    documents: Iterable[str] | None = None,
    connection_string: str | None = None,
    credential: StorageCredential | None = None,
    endpoint_url: str | None = None,
) -> GoldenSet:
    """Read a golden file, refusing it when :func:`check_golden` finds any error.

    Args:
        path: the golden file: a local path (``str`` or ``pathlib.Path``) or an address
            (``s3://...``, a Blob URL; see :func:`read_bytes`).
        documents: optional corpus document ids, passed to :func:`check_golden` (missing
            documents are warnings, kept in ``GoldenSet.warnings``).
        connection_string, credential, endpoint_url: how to reach a remote file (see
            :func:`read_bytes`; defaults from ``core.settings.Settings``).

    Returns:
        A :class:`GoldenSet` with the questions ready to score in file order (templates and
        drafts skipped and counted), the sha256 of the file's bytes, the warnings and the bytes.
        ``GoldenSet.path`` is the path as given, a remote address without its query string.

    Raises:
        GoldenError: the file cannot be read or has errors. The message lists the errors as
            ``path:line: error: field 'x': message``, bounded as :func:`check_golden` bounds
            them (the first of each kind, then a count and the lines of the rest);
            ``.problems`` holds the listed error problems.
    """
    check, found = _check(path, documents, connection_string=connection_string, credential=credential,
                          endpoint_url=endpoint_url)
    _raise_errors(check)
    return GoldenSet(
        path=check.path,
        sha256=check.sha256 or "",
        questions=found.questions,
        n_templates=check.n_templates,
        n_drafts=check.n_drafts,
        warnings=check.warnings,
        raw=found.raw,
        format=check.format,
    )


def read_bedrock_answers(path: PathLikeStr) -> list[AnswerRecord]:
    """Read the answers and passages of a bring-your-own-inference Bedrock file, for scoring
    without generating.

    Args:
        path: the file (a local path or an address, as for :func:`read_golden`).

    Returns:
        One ``core.rag.AnswerRecord`` per question of ``read_golden(path)``, in the same
        order, with ``generator_id`` ``"external:<modelIdentifier>"`` (``"external"`` when the
        file names none) and contexts ``Context(text, document_id=name)``.

    Raises:
        GoldenError: the file has errors, or it carries no outputs (it is not a
            bring-your-own-inference file).
    """
    from core.rag.records import AnswerRecord, Context  # core.rag's package imports the vector stores

    check, found = _check(path, None)
    _raise_errors(check)
    if check.format != bedrock.BYOI_FORMAT:
        problem = Problem("error", "no turn carries an 'output': this is not a bring-your-own-inference file")
        raise GoldenError(problem.format(check.path), [problem])
    records = []
    for q in found.questions:
        out = found.outputs[q.id]
        generator = f"external:{out.model_identifier}" if out.model_identifier else "external"
        records.append(AnswerRecord(
            question_id=q.id, question=q.question, answer=out.text,
            contexts=tuple(Context(text=t, document_id=name) for t, name in out.passages),
            generator_id=generator,
        ))
    return records


def _raise_errors(check: GoldenCheck) -> None:
    """Raise GoldenError listing the check's errors (bounded as the check is), if it has any."""
    if check.ok:
        return
    shown = check.path
    errors = check.errors
    head = f"{shown}: {plural(check.n_errors, 'error')} — cannot run"
    omitted = [o.format(shown) for o in check.omitted if o.severity == "error"]
    raise GoldenError("\n".join([head, *(p.format(shown) for p in errors), *omitted]), errors)


def format_check(check: GoldenCheck) -> str:
    """Return a check's result as a person reads it in a terminal.

    The first line is a verdict, for example ``golden.jsonl: OK — 49 questions ready to score``
    or ``golden.jsonl: 3 errors, 1 warning — cannot run``, followed by template and draft counts
    when there are any. Then the listed problems, one per line, sorted by line (file-level
    problems last), as ``path:line: error: field 'expected': ...``; then, for a bounded check,
    one line per kind of problem left out, with its count and lines
    (``path: error: more like this (9,900 in all), on lines 101-10000: ...``).

    Args:
        check: the result of :func:`check_golden`.

    Returns:
        The text, lines separated by ``\\n``, without a trailing newline.
    """
    n_err, n_warn = check.n_errors, check.n_warnings
    if n_err:
        counts = plural(n_err, "error") + (f", {plural(n_warn, 'warning')}" if n_warn else "")
        verdict = f"{check.path}: {counts} — cannot run"
    else:
        verdict = f"{check.path}: OK — {plural(check.n_ready, 'question')} ready to score"
        if n_warn:
            verdict += f", {plural(n_warn, 'warning')}"
    skipped = _skipped(check)
    if skipped:
        verdict += f" ({skipped} not scored)"
    if check.format != "ragtune":
        verdict += f" [{_FORMAT_NAMES.get(check.format, check.format)}]"
    ordered = sorted(check.problems, key=_line_key)
    omitted = [o.format(check.path) for o in check.omitted]
    return "\n".join([verdict, *(p.format(check.path) for p in ordered), *omitted])


# --- internals ---------------------------------------------------------------------------------


class _Found:
    """What :func:`_check` found besides the check itself."""

    def __init__(self) -> None:
        self.questions: list[GoldenQuestion] = []
        self.raw: bytes = b""
        self.outputs: dict = {}  # question id -> bedrock.BedrockOutput (bring-your-own-inference files)


_FORMAT_NAMES = {"bedrock": "Amazon Bedrock prompt dataset", "bedrock-byoi": "Amazon Bedrock prompt dataset with outputs"}


def _skipped(check: GoldenCheck) -> str:
    parts = []
    if check.n_templates:
        parts.append(plural(check.n_templates, "template"))
    if check.n_drafts:
        parts.append(plural(check.n_drafts, "draft"))
    return ", ".join(parts)


def _line_key(problem: Problem) -> tuple[bool, int]:
    return (problem.line is None, problem.line or 0)


def _error_order(err: ValidationError) -> tuple[int, list[int]]:
    path = list(err.absolute_path)
    first = FIELDS.index(path[0]) if path and path[0] in FIELDS else -1
    return (first, [p for p in path[1:] if isinstance(p, int)])


_FIELD_RE = re.compile(r"^(?P<name>[^\[]*)(?:\[(?P<index>\d+)\])?")
_NON_BLANK = re.compile(r"\S")
_CANONICAL = {type(None): None, bool: False, int: 0, float: 0.5, str: "x"}


def _canonical(value: Any, text: bool = False) -> Any:
    """A stand-in with the same JSON type, and for strings the same blankness when ``text``."""
    if isinstance(value, str):
        return "x" if not text or _NON_BLANK.search(value) else ""
    if isinstance(value, bool):
        return value
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    if isinstance(value, dict):
        return {}
    return _CANONICAL.get(type(value), value)


def _schema_errors(obj: dict[str, Any]) -> list[ValidationError]:
    """The schema's errors for a line, in field order, found on a canonical copy.

    The schema looks at a value's type, whether ``question`` holds non-whitespace text, the
    length and item types of ``expected`` and ``evidence``, and which keys are present (the
    pattern of ``expected`` items is checked by ``_Row._targets`` and its schema error
    ignored; unknown keys are reported apart). A copy with every other detail replaced
    (:func:`_canonical`) gets the same errors, so lines of one shape are validated once.
    """
    canonical = {key: _canonical(value, key == "question") for key, value in obj.items() if key in FIELDS}
    return _validate_shape(json.dumps(canonical))


@lru_cache(maxsize=1024)
def _validate_shape(canonical: str) -> list[ValidationError]:
    return sorted(_validator().iter_errors(json.loads(canonical)), key=_error_order)


def _field_order(problem: Problem) -> tuple[int, int]:
    """Order of a line's problems: the line itself, unknown fields, then fields in schema order."""
    if problem.field is None:
        return (-1, 0)
    match = _FIELD_RE.match(problem.field)
    name, index = (match.group("name"), match.group("index")) if match else (problem.field, None)
    rank = FIELDS.index(name) + 1 if name in FIELDS else 0
    return (rank, int(index) if index is not None else -1)


def _field_name(path: Iterable[Any]) -> str | None:
    name = ""
    for part in path:
        name += f"[{part}]" if isinstance(part, int) else (f".{part}" if name else str(part))
    return name or None


def _check(path: PathLikeStr, documents: Iterable[str] | None, data: bytes | None = None,
           limits: CheckLimits = DEFAULT_LIMITS, *, connection_string: str | None = None,
           credential: StorageCredential | None = None,
           endpoint_url: str | None = None) -> tuple[GoldenCheck, _Found]:
    shown = inputs.shown_address(path)
    found = _Found()
    if data is None:
        try:
            data = read_bytes(path, connection_string=connection_string, credential=credential,
                              endpoint_url=endpoint_url)
        except GoldenError as exc:
            return GoldenCheck(path=shown, sha256=None, problems=list(exc.problems)), found
    found.raw = data
    check = GoldenCheck(path=shown, sha256=hashlib.sha256(data).hexdigest())

    text = _decode(data, check)
    if text is None:
        return check, found
    if not text.strip():
        message = "file is empty" if not text else "file holds only blank lines"
        check.problems.append(Problem("error", f"{message}: a golden file holds one JSON object per line"))
        return check, found
    if _is_json_array(text):
        check.problems.append(
            Problem(
                "error",
                "the file is one JSON array; a golden file holds one JSON object per line (JSON Lines)",
            )
        )
        return check, found

    log = ProblemLog(limits)
    if bedrock.looks_like_bedrock(text):
        found.questions, found.outputs = bedrock.check_bedrock_text(text, check, log)
        _finish(check, log)
        return check, found

    corpus = None if documents is None else {normalize_id(str(d)) for d in documents}
    pool = tuple(sorted(corpus or ()))
    ids: dict[str, int] = {}
    questions: dict[str, int] = {}
    unknown = _UnknownFields(limits)
    n_with_errors = 0
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        check.n_lines += 1
        row = _Row(number, pool)
        question = row.check(line, corpus, ids, questions)
        log.extend(sorted(row.problems, key=_field_order))
        for key in row.unknown:
            unknown.add(key, number, log)
        if row.errors:
            n_with_errors += 1
        elif row.template:
            check.n_templates += 1
        elif row.draft:
            check.n_drafts += 1
        elif question is not None:
            found.questions.append(question)
    unknown.flush(log)
    check.n_ready = len(found.questions)
    if check.n_ready == 0:
        parts = [f"{n_with_errors} with errors"] if n_with_errors else []
        if check.n_templates:
            parts.append(plural(check.n_templates, "template"))
        if check.n_drafts:
            parts.append(plural(check.n_drafts, "draft"))
        log.add(
            Problem(
                "error",
                f"nothing ready to score: none of the {plural(check.n_lines, 'row')} is ready ({', '.join(parts)})",
            )
        )
    _finish(check, log)
    logger.debug("checked %s: %d ready, %d errors, %d warnings", shown, check.n_ready, check.n_errors,
                 check.n_warnings)
    return check, found


def _finish(check: GoldenCheck, log: ProblemLog) -> None:
    """Move the log's problems into ``check``: by line, then by field within a line."""
    check.problems = sorted(log.listed, key=lambda p: (*_line_key(p), _field_order(p)))
    check.omitted = log.omitted()


class _UnknownFields:
    """Unknown top-level fields, gathered so that one repeated on many lines is one error."""

    def __init__(self, limits: CheckLimits) -> None:
        self.limits = limits
        self.names: dict[str, list[Any]] = {}  # name -> [count, lines kept]

    def add(self, name: str, line: int, log: ProblemLog) -> None:
        entry = self.names.get(name)
        if entry is None:
            if self.limits.bounded and len(self.names) >= _MAX_UNKNOWN_NAMES:
                log.add(_unknown_problem(name, line))
                return
            entry = self.names[name] = [0, []]
        entry[0] += 1
        if not self.limits.bounded or len(entry[1]) < max(_GROUPED_LINES_SHOWN, MIN_LINES_TO_GROUP_UNKNOWN):
            entry[1].append(line)

    def flush(self, log: ProblemLog) -> None:
        problems = []
        for name, (count, lines) in self.names.items():
            if count < MIN_LINES_TO_GROUP_UNKNOWN:
                problems.extend(_unknown_problem(name, line) for line in lines)
                continue
            if self.limits.bounded:
                shown = ", ".join(str(n) for n in lines[:_GROUPED_LINES_SHOWN]) + (", ..." if count > _GROUPED_LINES_SHOWN else "")
            else:
                shown = format_ranges(_ranges(lines))
            near = nearest(name, FIELDS)
            advice = (f"did you mean '{near}'? Else put it under \"metadata\"" if near
                      else 'put it under "metadata"')
            problems.append(Problem("error", f"is unknown on {count:,} lines ({shown}): {advice}", lines[0], name))
        problems.sort(key=lambda p: p.line or 0)
        log.extend(problems)
        self.names.clear()


def _unknown_problem(name: str, line: int) -> Problem:
    near = nearest(name, FIELDS)
    tail = f"; did you mean '{near}'?" if near else f"; known fields: {', '.join(FIELDS)}"
    return Problem("error", f"unknown field{tail}", line, name)


def _ranges(lines: list[int]) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for n in lines:
        if out and n <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], n)
        else:
            out.append([n, n])
    return [(a, b) for a, b in out]


def _decode(data: bytes, check: GoldenCheck) -> str | None:
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        hint = ""
        if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
            hint = " (it looks like UTF-16)"
        check.problems.append(
            Problem(
                "error",
                f"the file is not UTF-8{hint}: byte 0x{data[exc.start]:02x} at offset {exc.start} "
                f"(line {line}) cannot be decoded; save it as UTF-8",
            )
        )
        return None


def _is_json_array(text: str) -> bool:
    if not text.lstrip().startswith("["):
        return False
    try:
        return isinstance(json.loads(text), list)
    except (ValueError, RecursionError):
        return False


class _Row:
    """Checks one non-blank line and collects its problems."""

    def __init__(self, number: int, pool: tuple[str, ...] = ()) -> None:
        self.number = number
        self.pool = pool  # the corpus's ids, sorted, for "did you mean"
        self.problems: list[Problem] = []
        self.errors = 0
        self.template = False
        self.draft = False
        self.unknown: list[str] = []
        self._seen: set[tuple[str | None, str]] = set()

    def error(self, message: str, field: str | None = None) -> None:
        if (field, message) in self._seen:
            return
        self._seen.add((field, message))
        self.errors += 1
        self.problems.append(Problem("error", message, self.number, field))

    def warning(self, message: str, field: str | None = None) -> None:
        self.problems.append(Problem("warning", message, self.number, field))

    def check(
        self,
        line: str,
        corpus: set[str] | None,
        ids: dict[str, int],
        questions: dict[str, int],
    ) -> GoldenQuestion | None:
        obj = parse_line_object(line, self.error, "one object")
        if obj is None:
            return None

        unknown = [key for key in obj if key not in FIELDS]
        self.unknown = unknown  # reported by _UnknownFields, grouped when repeated on many lines
        self.errors += len(unknown)

        question = obj.get("question")
        self.template = "hint" in obj and (question is None or (isinstance(question, str) and not question.strip()))
        self.draft = obj.get("draft") is True

        for err in _schema_errors(obj):
            self._schema_error(err, obj, unknown)
        self._lengths(obj)

        targets = self._targets(obj.get("expected"), corpus)
        evidence = self._evidence(obj.get("evidence"))
        qid = self._id(obj, ids)
        self._duplicate_question(question, questions)

        if self.template:
            self.warning("template row (a hint with an empty question): fill it in; not scored")
        elif self.draft:
            self.warning("unchecked draft, not scored (set it to false or remove it once checked)", "draft")
        history = self._history(obj.get("metadata"))
        grades = self._grades(obj.get("grades"))
        if self.errors or self.template or targets is None or qid is None or not isinstance(question, str):
            return None
        reference, hint, metadata = obj.get("reference"), obj.get("hint"), obj.get("metadata")
        return GoldenQuestion(
            id=qid,
            question=question,
            expected=targets,
            reference=reference if isinstance(reference, str) else None,
            evidence=evidence,
            line=self.number,
            hint=hint if isinstance(hint, str) else None,
            draft=self.draft,
            history=history,
            metadata=metadata if isinstance(metadata, dict) else {},
            grades=grades,
        )

    def _lengths(self, obj: dict[str, Any]) -> None:
        """An error for each free-text value longer than its field's limit (``core.limits``);
        values of the wrong type are the schema's errors."""
        def check(value: Any, kind: str, field: str) -> None:
            if isinstance(value, int) and not isinstance(value, bool) and kind == "id":
                value = str(value)
            if isinstance(value, str) and (message := too_long(value, kind)):
                self.error(message, field)

        for name, kind in (("id", "id"), ("question", "question"), ("reference", "reference"), ("hint", "hint")):
            check(obj.get(name), kind, name)
        for name, kind in (("expected", "source"), ("evidence", "evidence")):
            items = obj.get(name)
            for i, item in enumerate(items if isinstance(items, list) else ()):
                check(item, kind, f"{name}[{i}]")

    def _grades(self, grades: Any) -> dict[str, float]:
        """People's grades (``{"judge.<metric>": value}``), each on its judge metric's scale; a
        grade that is not is an error naming the metric and its scale."""
        if not isinstance(grades, dict):
            return {}  # a wrong type is the schema's error
        from core.metrics.scales import JUDGE_SCALES as JUDGE_METRICS  # core.metrics' package imports core.golden

        out = {}
        known = ", ".join(f"judge.{m}" for m in JUDGE_METRICS)
        for name, value in grades.items():
            metric = JUDGE_METRICS.get(name.removeprefix("judge.")) if name.startswith("judge.") else None
            if metric is None:
                near = nearest(name, tuple(f"judge.{m}" for m in JUDGE_METRICS))
                tail = f"; did you mean '{near}'?" if near else ""
                self.error(f"is not a judge metric{tail} (known: {known})", f"grades.{name}")
                continue
            scale = (f"a whole number from {metric.low:g} to {metric.high:g}" if metric.integer
                     else f"from {metric.low:g} to {metric.high:g}")
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not metric.low <= value <= metric.high \
                    or (metric.integer and not float(value).is_integer()):
                self.error(f"must be {scale} (the judge's scale), got {value!r}", f"grades.{name}")
                continue
            out[name] = float(value)
        return out

    def _history(self, metadata: Any) -> tuple[tuple[str, str], ...]:
        """The conversation kept under ``metadata.bedrock.history`` (see the module's rules),
        or ``()``; a malformed one is an error naming the turn."""
        bedrock = metadata.get("bedrock") if isinstance(metadata, dict) else None
        if not isinstance(bedrock, dict) or "history" not in bedrock:
            return ()
        turns = bedrock["history"]
        where = "metadata.bedrock.history"
        if not isinstance(turns, list):
            self.error(f"must be a list of earlier turns {{\"role\", \"content\"}}, got {json_type(turns)}", where)
            return ()
        out = []
        for i, turn in enumerate(turns):
            role = turn.get("role") if isinstance(turn, dict) else None
            content = turn.get("content") if isinstance(turn, dict) else None
            if role not in ("user", "assistant") or not isinstance(content, str):
                self.error('must be {"role": "user" or "assistant", "content": text}, as ragtune suggest writes it',
                           f"{where}[{i}]")
                return ()
            if message := too_long(content, "reference"):
                self.error(message, f"{where}[{i}].content")
                return ()
            out.append((role, content))
        return tuple(out)

    def _schema_error(self, err: ValidationError, obj: dict[str, Any], unknown: list[str]) -> None:
        path = list(err.absolute_path)
        field = _field_name(path)
        kind = err.validator
        if kind == "additionalProperties":
            return  # reported per field, with a suggestion
        if kind == "pattern" and path[:1] == ["expected"]:
            return  # pages are checked by _targets, with a precise message
        if kind == "required":
            for name in err.validator_value:
                if name in obj:
                    continue
                typo = [u for u in unknown if nearest(u, (name,)) == name]
                tail = f" (is '{typo[0]}' a typo?)" if typo else ""
                if name == "question":
                    self.error(f"missing: every row needs a question (or a hint, to mark it a template){tail}", name)
                elif name == "expected":
                    self.error(f"missing: {_EXPECTED_HELP}{tail}", name)
                else:
                    self.error(f"missing{tail}", name)
            return
        if kind == "type":
            wanted = err.validator_value
            wanted = wanted if isinstance(wanted, list) else [wanted]
            words = " or ".join(_TYPE_WORDS.get(w, w) for w in wanted)
            if not path:
                return  # the line is an object here; cannot happen
            self.error(f"must be {words}, got {json_type(err.instance)}", field)
            return
        if kind == "pattern" and field == "question":
            self.error("is empty: write the question (or add a hint to mark the row a template)", field)
            return
        if kind == "minItems" and field == "expected":
            self.error(f"is empty: {_EXPECTED_HELP}", field)
            return
        self.error(err.message, field)

    def _targets(self, expected: Any, corpus: set[str] | None) -> tuple[Target, ...] | None:
        if not isinstance(expected, list):
            return None
        targets: list[Target] = []
        ok = True
        for i, value in enumerate(expected):
            if not isinstance(value, str):
                ok = False
                continue
            try:
                targets.append(Target.parse(value))
            except ValueError as exc:
                ok = False
                self.error(str(exc), f"expected[{i}]")
                continue
            doc = targets[-1].document_id
            if corpus is not None and doc not in corpus:
                near = nearest(doc, self.pool)
                tail = f"; did you mean '{near}'?" if near else ""
                self.warning(f"document '{doc}' is not in the corpus{tail}", f"expected[{i}]")
        return tuple(targets) if ok else None

    def _evidence(self, evidence: Any) -> tuple[str, ...]:
        if not isinstance(evidence, list) or not all(isinstance(q, str) for q in evidence):
            return ()
        short = [q for q in evidence if len(q.split()) < MIN_EVIDENCE_WORDS]
        if short:
            quotes = ", ".join(json.dumps(q, ensure_ascii=False) for q in short)
            self.warning(
                f"{plural(len(short), 'quote')} under {MIN_EVIDENCE_WORDS} words, not used for evidence matching: {quotes}",
                "evidence",
            )
        return tuple(evidence)

    def _id(self, obj: dict[str, Any], ids: dict[str, int]) -> str | None:
        given = "id" in obj
        value = obj.get("id")
        if not given:
            qid = f"line-{self.number}"
        elif isinstance(value, str):
            qid = value
        elif isinstance(value, int) and not isinstance(value, bool):
            qid = str(value)
        elif isinstance(value, float) and value.is_integer():
            qid = str(int(value))
        else:
            return None
        first = ids.get(qid)
        if first is None:
            ids[qid] = self.number
            return qid
        note = "" if given else " (a line without an id gets 'line-N')"
        self.error(f"duplicate id '{qid}': lines {first} and {self.number}{note}", "id")
        return qid

    def _duplicate_question(self, question: Any, questions: dict[str, int]) -> None:
        if not isinstance(question, str) or not question.strip():
            return
        key = " ".join(question.casefold().split())
        first = questions.get(key)
        if first is None:
            questions[key] = self.number
            return
        self.error(f"duplicate question: lines {first} and {self.number} ask the same (ignoring case and spaces)", "question")


class _UnanswerableRow(_Row):
    """A line of an unanswerable file: a golden line whose ``expected`` is absent or empty."""

    def _schema_error(self, err: ValidationError, obj: dict[str, Any], unknown: list[str]) -> None:
        if err.validator == "required" and "expected" not in obj:
            obj = {**obj, "expected": []}  # no expected is what an unanswerable row has
        elif err.validator == "minItems" and _field_name(list(err.absolute_path)) == "expected":
            return
        super()._schema_error(err, obj, unknown)

    def _targets(self, expected: Any, corpus: set[str] | None) -> tuple[Target, ...] | None:
        if expected is None or expected == []:
            return ()
        if isinstance(expected, list):
            self.error("holds a labelled question (expected is not empty): an unanswerable file holds questions "
                       "no document answers; put it in the golden file", "expected")
            return None
        return super()._targets(expected, corpus)


def check_unanswerable(
    data: bytes, shown: str, golden_ids: dict[str, int] | None = None, limits: CheckLimits = DEFAULT_LIMITS
) -> tuple[list[GoldenQuestion], GoldenCheck]:
    """Check a file of unanswerable questions with the golden file's line checks.

    Every line is checked as a golden line (JSON, lone surrogates, NaN, huge integers, unknown
    fields with a suggestion, field types, duplicate ids and questions) except that
    ``expected`` is absent or empty: a non-empty one is a labelled question, an error. An id
    that is also in the golden file is an error too.

    Args:
        data: the file's bytes.
        shown: the file's address as shown in messages.
        golden_ids: the golden file's ids -> their line there, or None.
        limits: caps on the problems kept.

    Returns:
        ``(questions, check)``: the questions of lines without errors (``expected`` empty)
        and the check with every problem (file, line, field).
    """
    check = GoldenCheck(path=shown, sha256=hashlib.sha256(data).hexdigest())
    text = _decode(data, check)
    if text is None:
        return [], check
    log = ProblemLog(limits)
    ids: dict[str, int] = {}
    questions_seen: dict[str, int] = {}
    unknown = _UnknownFields(limits)
    out: list[GoldenQuestion] = []
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        check.n_lines += 1
        row = _UnanswerableRow(number)
        question = row.check(line, None, ids, questions_seen)
        qid = question.id if question is not None else None
        if qid is not None and golden_ids and qid in golden_ids:
            row.error(f"duplicate id '{qid}': also on line {golden_ids[qid]} of the golden file", "id")
        log.extend(sorted(row.problems, key=_field_order))
        for key in row.unknown:
            unknown.add(key, number, log)
        if question is not None and not row.errors:
            out.append(question)
    unknown.flush(log)
    check.n_ready = len(out)
    _finish(check, log)
    return out, check
