"""The ``ragtune`` command's entry: :func:`main` runs a command and returns its exit code;
:func:`run` is the process (the ``ragtune`` script and ``python -m core.cli``)."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Sequence

from core.cli.parser import build_parser
from core.errors import RagtuneError


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``ragtune`` command; returns the exit code."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # said by the command's own parser: its usage, not the top-level one
        commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
        commands[args.command].error(f"unrecognized arguments: {' '.join(extra)}")
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    from core.inputs import is_remote

    empty = _empty_path(args)
    if empty:
        print(f"ragtune {args.command}: {empty} is empty: give a path", file=sys.stderr)
        return 1
    docs = getattr(args, "docs", None)
    if isinstance(docs, str) and docs and not is_remote(docs) and not Path(docs).is_dir():
        # every command that reads a documents folder: say so before any work, not that no
        # expected document is in it
        what = "is not a folder" if Path(docs).exists() else "does not exist"
        print(f"ragtune {args.command}: --docs {docs} {what}", file=sys.stderr)
        return 1
    try:
        from core.cli.common import _check_out_apart

        _check_out_apart(args)  # every command that reads a documents folder and writes an output folder
        return int(args.func(args))
    except RagtuneError as exc:
        print(f"ragtune {args.command}: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # the reader of stdout left (``ragtune check ... | head``): stop quietly
        import os

        devnull = os.open(os.devnull, os.O_WRONLY)  # as the Python docs advise, so the exit flush is quiet too
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except OSError as exc:  # a path that cannot be read or written: say which, without a traceback
        where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
        print(f"ragtune {args.command}: {exc.strerror or exc}{where}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


#: The options that name a file, folder or address: an empty one is an error, never the
#: current folder or a default (``check ''`` would read the folder ``.``).
PATH_OPTIONS = ("golden", "golden_option", "docs", "out", "targets", "space", "output", "html", "csv",
                "unanswerable", "examples", "cache", "unanswerable_output", "config", "baseline")


def _empty_path(args: argparse.Namespace) -> str | None:
    """The first option of :data:`PATH_OPTIONS` given as an empty (or blank) string, as the
    user wrote it (``--golden``; ``GOLDEN`` for ``check``'s argument), else None."""
    for name in PATH_OPTIONS:
        value = getattr(args, name, None)
        if isinstance(value, str) and not value.strip():
            positional = args.command == "check" and name == "golden"
            if name == "golden_option":  # check's --golden
                return "--golden"
            return "GOLDEN" if positional else "--" + name.replace("_", "-")
    return None


#: How many collections of the collector's middle generation come before one of the oldest
#: (Python's default is 10) in the ``ragtune`` command's process; see :func:`run`.
FULL_COLLECTION_EVERY = 100


def run() -> None:
    """The ``ragtune`` command's process: :func:`main`, then exit with its code.

    Two settings of the garbage collector, for this process only. A run imports large
    libraries (unitxt, transformers, the models' runtimes) whose objects live until it ends,
    and every full collection walks all of them: full collections therefore come
    :data:`FULL_COLLECTION_EVERY` middle-generation collections apart instead of 10 (young
    objects are collected as often as before, and Python's other condition for a full
    collection, that long-lived objects grew by a quarter since the last one, still holds).
    And once the command is done, every object still held is moved to the collector's
    permanent generation (``gc.freeze``), which no collection examines, so the collection
    Python runs as it exits does not walk them all once more to free what the end of the
    process frees anyway (objects are still released by reference counting as modules are
    torn down, and ``atexit`` handlers run; finalisers of objects left in reference cycles do
    not, which is why ``core.vectorstores.milvus`` stops the Milvus Lite servers it started
    from an ``atexit`` handler). Not in :func:`main`, which tests and other programs call in a
    process that goes on.
    """
    import gc

    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_COLLECTION_EVERY)
    _quit_on_second_interrupt()
    code = main()
    gc.freeze()
    if code == EXIT_INTERRUPTED and _threads_left():
        _quit_now(code)
    sys.exit(code)


#: The exit code of an interrupted command (Ctrl-C, SIGINT): 128 + the signal's number.
EXIT_INTERRUPTED = 130


def _quit_on_second_interrupt() -> None:
    """Make Ctrl-C (SIGINT) raise ``KeyboardInterrupt`` the first time, as Python's own handler
    does (a command then stops, saying so), and end the process at once with
    :data:`EXIT_INTERRUPTED` the next time (:func:`_quit_now`), wherever the command is in its
    stopping (``optimize`` waiting for an evaluation to end). Nothing changes when SIGINT is
    not Python's own handler (ignored, as in a job a non-interactive shell starts in the
    background, or handled by the embedding program)."""
    import signal

    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return
    seen: list[bool] = []

    def on_interrupt(signum: int, frame: object) -> None:
        if seen:
            _quit_now(EXIT_INTERRUPTED)
        seen.append(True)
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_interrupt)


def _threads_left() -> bool:
    """Whether a thread other than this one, and not a daemon, is still running: work an
    interrupted command left behind (an evaluation interrupted twice), which Python's exit
    would wait for."""
    import threading

    return any(t is not threading.current_thread() and not t.daemon and t.is_alive() for t in threading.enumerate())


def _quit_now(code: int) -> None:
    """End the process with ``code`` at once, without waiting for the threads left running (their
    work is abandoned; what was finished is saved): the ``atexit`` handlers run first (they stop
    the Milvus Lite servers this process started), then the output is flushed and the process
    ends (``os._exit``), so no thread is torn down in the middle of native code (which aborts)."""
    import atexit
    import os

    try:
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)

