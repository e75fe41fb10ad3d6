"""What the commands of ``ragtune`` share: printing, the output folder and report store, the
branch, chunk sizes, the comma-separated options, and the check of a golden file's expected
documents against ``--docs``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from core.errors import ConfigError
from core.text import plural

if TYPE_CHECKING:
    from core.golden.types import GoldenSet
    from core.models.costs import CostPlan
    from core.settings import Settings


DEFAULT_OUT = "ragtune-out"


#: ``optimize``'s exit code when the experiment ran but no evaluation succeeded.
EXIT_ALL_FAILED = 3


def _print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False))


def _print_report(args: argparse.Namespace, report: dict[str, Any], text_of: Callable[[dict[str, Any]], str]) -> None:
    """Print ``report`` as JSON with ``--json``, else as ``text_of(report)``."""
    if getattr(args, "json", False):
        _print_json(report)
    else:
        print(text_of(report))


#: The output file name that means standard output (for text: a page, CSV, JSON Lines).
STDOUT = "-"


def _write_output(path: str, data: bytes, what: str = "") -> None:
    """Write ``data`` to the file ``path`` atomically (never half-written; only a regular file
    is replaced, see :func:`core.reports.files.write_atomic`) and say so on stderr as
    ``wrote {what}{path}``; ``-`` writes it to standard output instead.

    Raises:
        ConfigError: something other than a regular file is at ``path``.
        OSError: the file cannot be written.
    """
    from core.reports.files import write_atomic

    if path == STDOUT:
        sys.stdout.write(data.decode("utf-8"))  # text: a page, CSV, JSON Lines
        sys.stdout.flush()
        return
    write_atomic(Path(path), data)
    print(f"wrote {what}{path}", file=sys.stderr)


def _check_output(path: str | None) -> None:
    """Refuse, before any work, an output ``path`` that :func:`_write_output` would refuse
    after it (a folder, a FIFO, a device); None and ``-`` pass.

    Raises:
        ConfigError: what is at ``path`` is not a regular file.
    """
    from core.reports.files import replaceable

    if path and path != STDOUT:
        replaceable(Path(path))


def _write_page(path: str, html: str) -> None:
    """Write a page atomically (never half-written) and say where on stderr; ``-``: stdout."""
    _write_output(path, html.encode("utf-8"), "page ")


def _print_plan(args: argparse.Namespace, plan: CostPlan, settings: Settings) -> int:
    """Print a ``--dry-run`` plan (as JSON with ``--json`` when the command has it); 0."""
    if getattr(args, "json", False):
        _print_json(plan.to_dict(settings.prices))
    else:
        print(plan.format(settings.prices))
    return 0


def _print_warnings(warnings: list[dict[str, Any]], path: str, most: int = 10) -> None:
    """Print the golden file's warnings to stderr, at most ``most`` of them."""
    if not warnings:
        return
    print(f"\n{plural(len(warnings), 'warning')} about {path}:", file=sys.stderr)
    for w in warnings[:most]:
        line = f":{w['line']}" if w.get("line") is not None else ""
        field = f"field '{w['field']}': " if w.get("field") else ""
        print(f"  {path}{line}: {field}{w['message']}", file=sys.stderr)
    if len(warnings) > most:
        print(f"  ... and {len(warnings) - most} more in the report", file=sys.stderr)


def _output(address: str | None, settings: Settings) -> tuple[Path, Any, str]:
    """``(working folder, report store Files, where as shown)`` for ``--out``: a folder is
    both; an ``s3://`` or Blob address holds the reports while caches and Milvus Lite stay in
    the local ``$RAGTUNE_OUT_DIR`` (or ``ragtune-out``)."""
    from core.inputs import is_remote, shown_address
    from core.reports import LocalFiles

    target = address or settings.out_dir
    if not is_remote(target):
        return Path(target), LocalFiles(target), str(Path(target))
    return _working_folder(address, settings), settings.files(target), shown_address(target).rstrip("/")


def _working_folder(address: str | None, settings: Settings) -> Path:
    """The local working folder of ``--out`` (``address``, None when not given), as
    :func:`_output` takes it: a local ``--out`` itself, else the local ``$RAGTUNE_OUT_DIR``, else
    ``ragtune-out``."""
    from core.inputs import is_remote

    if address and not is_remote(address):
        return Path(address)
    return Path(settings.out_dir if not is_remote(settings.out_dir) else DEFAULT_OUT)


def _check_out_apart(args: argparse.Namespace) -> None:
    """Refuse, before any work, a command whose output folder (``--out``, else
    ``$RAGTUNE_OUT_DIR``, else ``ragtune-out``) is its local ``--docs`` folder: its reports,
    caches and index would be written among the documents it reads. An output folder inside
    ``--docs`` is fine (it is never read as documents, see ``core.documents.load_documents``),
    and so are documents inside the output folder. Commands without both options pass.

    Raises:
        ConfigError: naming both options and the folder.
    """
    import os

    from core.inputs import is_remote, shown_address

    docs = getattr(args, "docs", None)
    if not hasattr(args, "out") or not isinstance(docs, str) or not docs or is_remote(docs):
        return
    if args.out and not is_remote(args.out):
        out, named = Path(args.out), f"--out {args.out}"
    else:
        from core.settings import Settings

        out = _working_folder(args.out, Settings.from_env())
        source = "$RAGTUNE_OUT_DIR" if os.environ.get("RAGTUNE_OUT_DIR") and not is_remote(os.environ["RAGTUNE_OUT_DIR"]) \
            else f"the default {DEFAULT_OUT}"
        named = (f"the working folder {out} ({source}: its caches and index; "
                 f"--out {shown_address(args.out)} holds the reports)" if args.out else
                 f"the output folder {out} ({source}, as --out is not given)")
    try:
        same = out.is_dir() and os.path.samefile(out, docs)
    except OSError:
        same = False
    if same:
        raise ConfigError(f"{named} is the --docs folder {docs}: ragtune would write its reports, caches and "
                          "index among the documents; give --out a folder of its own (inside --docs is fine: "
                          "it is never read as documents)")


def _branch(args: argparse.Namespace) -> str | None:
    """The run's branch: ``--branch``, else the CI's (:func:`core.settings.ci_branch`), else None."""
    from core.settings import branch_name, ci_branch

    return branch_name(args.branch, "--branch") if args.branch is not None else ci_branch()


def _chunk_size(args: argparse.Namespace) -> int:
    """``--chunk-size``, else :data:`core.chunking._common.DEFAULT_CHUNK_SIZE`."""
    from core.chunking._common import DEFAULT_CHUNK_SIZE

    return DEFAULT_CHUNK_SIZE if args.chunk_size is None else args.chunk_size


def _chunk_overlap(args: argparse.Namespace) -> int:
    """``--chunk-overlap``, else the default that fits the size
    (:func:`core.chunking._common.default_overlap`); a given overlap is checked by the chunker."""
    from core.chunking._common import default_overlap

    return default_overlap(_chunk_size(args)) if args.chunk_overlap is None else args.chunk_overlap


def _check_expected_documents(golden: GoldenSet, docs: str) -> None:
    """Stop before any work when none of the golden file's expected documents is in ``docs``.

    Raises:
        ConfigError: with the reason (``core.evaluation.gate.missing_documents_reason``).
    """
    from core.documents import list_document_ids
    from core.evaluation.gate import golden_documents_reason
    from core.inputs import shown_address

    if not any(q.expected for q in golden.questions):  # nothing to look for: the folder is not listed
        return
    reason = golden_documents_reason(golden, list_document_ids(docs), shown_address(docs))
    if reason:
        raise ConfigError(reason)


def _csv(text: str | None, option: str = "") -> list[str]:
    """The comma-separated values of an option, stripped, duplicates dropped (first kept);
    ``[]`` when the option is not given.

    Raises:
        ConfigError: the option is given (``option`` names it) but lists nothing (``","``).
    """
    values = list(dict.fromkeys(p.strip() for p in (text or "").split(",") if p.strip()))
    if text is not None and option and not values:
        raise ConfigError(f"{option} lists nothing (got {text!r}): give at least one value, or leave it out")
    return values


def _csv_ints(text: str | None, option: str) -> list[int]:
    try:
        return list(dict.fromkeys(int(p) for p in _csv(text, option)))
    except ValueError:
        raise ConfigError(f"{option} takes whole numbers separated by commas, got {text!r}") from None

