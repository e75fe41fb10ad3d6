"""Golden files: ``ragtune check``, and writing them: ``template``, ``suggest``, ``draft``."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from core.cli.common import STDOUT, _print_json, _print_plan
from core.cli.models import _settings
from core.cli.targets import target_specs
from core.errors import ConfigError
from core.text import plural
from core.workspace import Workspace


def cmd_check(args: argparse.Namespace) -> int:
    """``ragtune check GOLDEN [--docs DIR] [--target T] [--targets FILE] [--json] [--all]``: 0 when the
    file can be run, 1 when not (or when a target cannot be reached).

    GOLDEN and DIR may be local paths or addresses (``s3://...``, Blob URLs; see
    ``core.inputs``); a remote folder is listed, not downloaded. The problems shown are bounded
    (the first 100 of each kind, then a count and the lines of the rest) unless ``--all``."""
    from core.golden import DEFAULT_LIMITS, CheckLimits, check_golden, format_check
    from core.inputs import is_remote, shown_address

    given = [g for g in (args.golden, getattr(args, "golden_option", None)) if g is not None]
    if len(given) != 1:
        raise ConfigError("check takes one golden file: give it first (ragtune check FILE) or as --golden FILE"
                          if not given else "check takes one golden file: give it first or as --golden, not both")
    args.golden = given[0]
    documents = None
    if args.docs:
        from core.documents import list_document_ids

        if is_remote(args.docs):
            documents = list_document_ids(args.docs)
            if not documents:
                print(f"ragtune check: --docs {shown_address(args.docs)} holds no documents", file=sys.stderr)
                return 1
        else:  # main() has checked that a local --docs is a folder
            documents = list_document_ids(Path(args.docs))
    check = check_golden(args.golden, documents=documents,
                         limits=CheckLimits.unbounded() if args.all else DEFAULT_LIMITS)
    if args.docs:  # stale evidence and pages past the end need the documents themselves
        from core.golden.corpus_check import add_corpus_problems

        add_corpus_problems(check, args.golden, args.docs, document_ids=documents)
    if args.target or args.targets:  # expected documents and evidence against indexes searched in place
        from core.settings import Settings
        from core.targets.check import add_target_problems

        add_target_problems(check, args.golden, target_specs(args), Settings.from_env())
    if args.json:
        _print_json(check.to_dict())
    else:
        print(format_check(check))
        if check.omitted:
            print(f"(some problems shown as counts with their lines; ragtune check --all {args.golden} lists every one)")
    return 0 if check.ok else 1


def _load_corpus(docs: str, out: Path, *, writes: bool) -> Any:
    """Load the documents of ``docs`` (a remote folder is downloaded to ``<out>/inputs``);
    skipped files are reported on stderr. When the command writes in ``out`` (``writes``: its
    caches and index) or ``docs`` is downloaded there, ``out`` is created first with its marker
    (``core.workspace.Workspace.create``), so no later ``--docs`` reads it as documents."""
    from core.documents import load_documents
    from core.inputs import is_remote

    workspace = Workspace.at(out)
    if writes or is_remote(docs):
        workspace.create()
    loaded = load_documents(docs, cache_dir=workspace.inputs)
    for skipped in loaded.skipped:
        print(f"skipped {skipped.document_id}: {skipped.reason}", file=sys.stderr)
    return loaded


def _check_new_output(path: str) -> None:
    """Stop before any work when ``-o FILE`` names something that is there already (a file is
    never overwritten; a FIFO or device is never replaced); ``-`` (stdout) passes.

    Raises:
        ConfigError: ``path`` exists (or is a link), naming it.
    """
    if path != STDOUT and os.path.lexists(path):
        raise ConfigError(f"{path} exists already: it is never overwritten; choose another name")


def _write_new_output(path: str, data: bytes) -> None:
    """Write ``data`` to the new file ``path`` (:func:`core.golden.template.write_new_file`),
    or to standard output when ``path`` is ``-``."""
    from core.golden.template import write_new_file

    if path == STDOUT:
        text = data.decode("utf-8")
        sys.stdout.write(text if not text or text.endswith("\n") else text + "\n")  # JSON Lines
        sys.stdout.flush()
    else:
        write_new_file(path, data)


def cmd_template(args: argparse.Namespace) -> int:
    """``ragtune template --docs DIR -o FILE``: write template rows to fill in (never over a file)."""
    from core.golden.template import rows_to_jsonl, template_rows
    from core.settings import Settings

    _check_new_output(args.output)
    if args.n < 1:  # before the documents are loaded
        raise ConfigError(f"--n must be at least 1, got {args.n}")
    loaded = _load_corpus(args.docs, Path(Settings.from_env().out_dir), writes=False)
    rows = template_rows(loaded.documents, by=args.by, n=args.n, seed=args.seed)
    _write_new_output(args.output, rows_to_jsonl(rows))
    pages = sum("#page=" in r["expected"][0] for r in rows)
    each = ("one page each" if pages == len(rows) else "one document each" if not pages else
            f"one page each, {plural(len(rows) - pages, 'whole document')} without pages")
    print(f"wrote {plural(len(rows), 'template row')} to {args.output} ({each}): write a question in "
          f"each, keep or fix its expected id, then " + ("save it and run 'ragtune check FILE'" if args.output == STDOUT
                                                         else f"run 'ragtune check {args.output}'"),
          file=sys.stderr if args.output == STDOUT else sys.stdout)
    return 0


def _read_suggest_golden(path: str) -> bytes:
    """The bytes of ``suggest``'s golden file, read and checked as ``suggest_labels`` checks
    them (rows without ``expected`` are what it fills in) before any slow work.

    Raises:
        GoldenError: the file cannot be read, or has errors other than rows without ``expected``.
    """
    from core.golden.reader import read_bytes
    from core.golden.suggest import suggest_rows
    from core.inputs import shown_address

    data = read_bytes(path)
    suggest_rows(shown_address(path), data)
    return data


def cmd_suggest(args: argparse.Namespace) -> int:
    """``ragtune suggest --docs DIR --golden FILE -o FILE``: propose draft labels from reference answers."""
    from core.golden.suggest import build_index, suggest_labels
    from core.golden.template import rows_to_jsonl
    from core.models import CachedEmbeddingModel, EmbeddingCache

    _check_new_output(args.output)
    if args.top < 1:
        raise ConfigError(f"--top must be at least 1, got {args.top}")
    data = _read_suggest_golden(args.golden)  # a missing or broken file stops here, before the corpus is indexed
    settings = _settings(args)
    out = Path(args.out or settings.out_dir)
    loaded = _load_corpus(args.docs, out, writes=True)
    model = CachedEmbeddingModel(settings.embedding_model(), EmbeddingCache(Workspace.at(out).embedding_cache))
    with build_index(loaded.documents, model, settings.vector_store_config(out, args.vector_store)) as index:
        result = suggest_labels(args.golden, loaded.documents, index=index, top=args.top, by=args.by, data=data)
    _write_new_output(args.output, rows_to_jsonl(result.rows))
    print(f"wrote {args.output}: {result.summary()}", file=sys.stderr if args.output == STDOUT else sys.stdout)
    return 0


def _kept(n_written: int, output: str, side: Path) -> str:
    """``3 rows written so far, kept in FILE (and SIDE)``: only the files that exist."""
    kept = [str(p) for p in (Path(output), side) if p.exists()]
    return (f"{plural(n_written, 'row')} written so far, kept in {' and '.join(kept)}" if kept
            else "no row written yet")


def cmd_draft(args: argparse.Namespace) -> int:
    """``ragtune draft --docs DIR -o FILE``: draft questions with a writer and a critic chat model.

    Prints a line per row written; exits 1 when the run wrote no row or a model stopped it
    (refused, stopped answering, or kept ignoring the reply format: the message shows the
    reply expected), 130 when interrupted (saying how to resume); says why fewer rows than
    asked were written."""
    from core.golden.draft import (DraftInterrupted, DraftOptions, DraftStopped, draft_to_file, read_examples,
                                   unanswerable_path)
    from core.models import CachedEmbeddingModel, EmbeddingCache

    if args.output == STDOUT:
        raise ConfigError("draft writes each row to its file as it comes, and a stopped run resumes from that file: "
                          "give -o FILE, not -")
    settings = _settings(args)
    writer = settings.chat_model_named(args.writer) if args.writer else settings.chat_model()
    if writer is None:
        raise ConfigError("drafting needs a chat model: set RAGTUNE_CHAT_PROVIDER and RAGTUNE_CHAT_MODEL "
                          "(and RAGTUNE_CHAT_BASE_URL), or give --writer MODEL")
    critic = settings.chat_model_named(args.critic) if args.critic else None
    kinds = tuple(k.strip() for k in args.kinds.split(",") if k.strip()) if args.kinds else None
    options = DraftOptions(n=args.n, seed=args.seed, tries=args.tries, max_unusable=args.max_unusable,
                           examples=read_examples(args.examples) if args.examples else (),
                           **({"kinds": kinds} if kinds is not None else {}))
    if args.dry_run:
        from core.golden.draft import plan_draft

        cache_file = Path(args.cache or f"{args.output}.replies.jsonl")
        n_cached = sum(1 for line in cache_file.read_text(encoding="utf-8").splitlines() if line.strip()) \
            if cache_file.is_file() else 0
        return _print_plan(args, plan_draft(writer=writer, critic=critic, n=options.n, tries=options.tries,
                                            n_cached=n_cached), settings)
    out = Path(args.out or settings.out_dir)
    loaded = _load_corpus(args.docs, out, writes=True)
    model = CachedEmbeddingModel(settings.embedding_model(), EmbeddingCache(Workspace.at(out).embedding_cache))
    side = Path(args.unanswerable_output) if args.unanswerable_output else unanswerable_path(args.output)
    files = f"{args.output}" + (f" and {side}" if "unanswerable" in options.kinds else "")
    print(f"drafting {plural(options.n, 'row')} from {plural(len(loaded.documents), 'document')} "
          f"(writer {writer.model_id}, critic {(critic or writer).model_id}) into {files}", file=sys.stderr)

    def progress(row: dict[str, Any], path: Path) -> None:
        print(f"  {row['id']} ({row['metadata']['kind']}) -> {path}", file=sys.stderr)

    resume = (f"run the same command again to resume: the rows written are kept and the replies so far are cached "
              f"in {args.cache or args.output + '.replies.jsonl'}")
    try:
        summary = draft_to_file(loaded.documents, args.output, writer=writer, critic=critic, embedding_model=model,
                                options=options, cache_path=args.cache, unanswerable_output=side, on_row=progress)
    except DraftStopped as exc:
        print(exc.summary.format(), file=sys.stderr)
        print(f"ragtune draft: {exc}; {_kept(exc.summary.n_written, args.output, side)}; {resume}", file=sys.stderr)
        return 1
    except DraftInterrupted as exc:
        print(exc.summary.format(), file=sys.stderr)
        print(f"ragtune draft: interrupted; {_kept(exc.summary.n_written, args.output, side)}; {resume}",
              file=sys.stderr)
        return 130
    print(summary.format())
    if not summary.n_written:
        print("ragtune draft: no row was written (see above why)", file=sys.stderr)
        return 1
    print(f"written to {files}: every row is a draft; check each, then remove 'draft'"
          + (f" (unanswerable questions go to {side}, for 'ragtune cutoff --unanswerable')"
             if summary.written.get("unanswerable") else ""))
    return 0

