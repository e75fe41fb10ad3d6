"""Golden-file templates: rows for a person to fill in, one sampled document or page each.

``ragtune template --docs DIR [--by doc|page] [--n 50] [--seed 0] -o FILE`` writes rows such as::

    {"id": "template-001", "question": "", "expected": ["handbook.pdf#page=12"],
     "hint": "page 12 of handbook.pdf (printed 10), under \\"Leave\\": reads \\"Employees may take...\\""}

A row with an empty question and a ``hint`` is a template: ``check`` counts it as waiting and
``read_golden`` skips it, so a half-filled file evaluates on the rows that are filled in.

Sampling: the units (pages of PDFs, whole other documents; whole documents with ``by="doc"``;
see :mod:`core.golden.passages`) of the documents sorted by id, without the near-empty ones,
are taken at an even step ``len(units) / n`` from a start in ``[0, step)`` that the seed picks,
so the rows spread through the corpus. Every unit is taken when there are at most ``n``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from core.errors import ConfigError
from core.golden.passages import Unit, corpus_units, spread_indices

if TYPE_CHECKING:
    from core.documents.base import LoadedDocument

#: Rows a template holds by default.
DEFAULT_TEMPLATE_ROWS = 50
#: Id prefix of template rows (``template-001``).
TEMPLATE_ID_PREFIX = "template-"


def unit_hint(unit: Unit) -> str:
    """The hint of a template row: where the unit is, the heading above it, and up to
    :data:`~core.golden.passages.HINT_CHARS` characters of its substantive text
    (:meth:`~core.golden.passages.Unit.excerpt`: running headers, footers and page numbers
    left out, from the first paragraph of a sentence's length), enough to write a question.

    Example: ``page 12 of handbook.pdf (printed 10), under "Leave": reads "Employees may..."``.
    """
    where = unit.document_id if unit.page is None else f"page {unit.page} of {unit.document_id}"
    if unit.printed_page is not None and unit.printed_page != str(unit.page):
        where += f" (printed {unit.printed_page})"
    parts = [where]
    if unit.heading:
        parts.append(f"under {json.dumps(unit.heading, ensure_ascii=False)}")
    hint = ", ".join(parts)
    excerpt = unit.excerpt()
    if excerpt:
        hint += f": reads {json.dumps(excerpt, ensure_ascii=False)}"
    return hint + "; write a question this answers"


def template_rows(documents: Iterable[LoadedDocument], *, by: str = "page", n: int = DEFAULT_TEMPLATE_ROWS,
                  seed: int = 0) -> list[dict[str, Any]]:
    """Template rows for a corpus.

    Args:
        documents: ``core.documents.LoadedDocument`` objects (sorted by id here).
        by: ``"page"`` (a PDF page per row, ``name.pdf#page=N``; other documents whole) or
            ``"doc"`` (a document per row).
        n: rows wanted (>= 1); fewer when the corpus has fewer units that are not near empty.
        seed: picks the start of the even spread (see the module's docstring).

    Returns:
        Rows ``{"id", "question": "", "expected": [target], "hint"}``, in corpus order; the
        same documents and seed give the same rows.

    Raises:
        ConfigError: a bad ``by`` or ``n``.
    """
    ordered = sorted(documents, key=lambda d: d.document_id)
    units = [u for u in corpus_units(ordered, by=by) if not u.near_empty]
    picked = [units[i] for i in spread_indices(len(units), n, seed)]
    width = max(3, len(str(len(picked))))
    return [
        {"id": f"{TEMPLATE_ID_PREFIX}{i:0{width}d}", "question": "", "expected": [u.target], "hint": unit_hint(u)}
        for i, u in enumerate(picked, start=1)
    ]


def rows_to_jsonl(rows: Sequence[dict[str, Any]]) -> bytes:
    """Golden rows as JSON Lines bytes (UTF-8, one object per line, a final newline)."""
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")


def write_new_file(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to a file that must not exist yet (a file is never overwritten).

    Args:
        path: the file to create; its folder is created when missing.
        data: the bytes.

    Returns:
        The path written.

    Raises:
        ConfigError: the file exists already (nothing is written), or the path is a folder.
    """
    target = Path(path)
    if target.is_dir():
        raise ConfigError(f"{target} is a folder: give a file name to write")
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        with open(target, "xb") as fh:
            fh.write(data)
    except FileExistsError:
        raise ConfigError(f"{target} exists already: it is never overwritten; choose another name") from None
    return target
