"""The gate of ``evaluate``: ``--fail-under`` thresholds, the ``--baseline`` run, the exit code."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any, Sequence

from core.errors import ConfigError

if TYPE_CHECKING:
    from core.evaluation.gate import GateVerdict
    from core.reports.store import ReportStore


def _threshold(text: str) -> Any:
    """argparse ``type`` of ``--fail-under``: one :class:`core.evaluation.gate.Threshold`, or
    ``argparse.ArgumentTypeError`` with the gate's message (so a malformed value is exit 2)."""
    from core.evaluation.gate import parse_thresholds

    try:
        return parse_thresholds([text])[0]
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--fail-under ")) from None


def _gate_exit(verdict: GateVerdict | None) -> int:
    """Print the gate's findings (a :class:`core.evaluation.gate.GateVerdict`, or None for no
    gate) and return the exit code: 0 without a gate."""
    if verdict is None:
        return 0
    for line in verdict.lines:
        print(f"gate: {line}", file=sys.stderr)
    print(f"gate: {'passed' if verdict.passed else 'failed'} (exit {verdict.exit_code}); the verdict is in the "
          "report's 'gate'", file=sys.stderr)
    return verdict.exit_code


def _gate_setup(args: argparse.Namespace, *, setups: Sequence[str] = (), targets: Sequence[str] = ()) -> str:
    """The ``--setup`` the gate checks (default the pick ``finds_the_most``), checked before
    any work against what the run will have: a pick, or one of ``setups`` (a run over
    documents: every setup it evaluates), or for a run over targets (``targets``: their names)
    ``TARGET/PICK`` or ``TARGET/SETUP`` of one of them. Given without a gate, it is said to be
    ignored.

    Raises:
        ConfigError: a name the run cannot have (the message lists what it may be).
    """
    from core.evaluation.gate import DEFAULT_SETUP
    from core.reports.tables import PICKS

    key = DEFAULT_SETUP if args.setup is None else args.setup
    if key not in PICKS:
        if targets:
            if not any(key.startswith(f"{t}/") for t in targets):
                raise ConfigError(f"--setup {key!r} is neither a pick ({', '.join(PICKS)}) nor TARGET/PICK or "
                                  f"TARGET/SETUP of a target of this run ({', '.join(targets)})")
        elif key not in setups:
            raise ConfigError(f"--setup {key!r} is neither a pick ({', '.join(PICKS)}) nor a setup this run "
                              f"evaluates ({', '.join(setups)})")
    if args.setup is not None and not (args.fail_under or args.baseline):
        print(f"ragtune {args.command}: --setup chooses the setup the gate checks; without --fail-under or --baseline "
              "it is ignored", file=sys.stderr)
    return key


def _baseline(args: argparse.Namespace, store: ReportStore, golden_sha256: str, branch: str | None,
              targets: tuple[str, ...] | None = None) -> tuple[Any, str | None]:
    """``(baseline or None, note)`` for ``--baseline`` (:mod:`core.evaluation.gate`'s rules),
    found before any work so a bad name stops the run at once; ``targets``: the sorted names
    of a run over targets (a ``latest`` baseline searched the same ones).

    Raises:
        NotStoredError / ConfigError: a named baseline that is not stored, not a report, or
            on another golden file.
    """
    from core.evaluation.gate import BaselineRule, find_baseline, named_baseline
    from core.inputs import shown_address
    from core.settings import branch_name

    if args.any_branch and args.baseline_branch is not None:
        raise ConfigError("--any-branch and --baseline-branch contradict each other: give one")
    if not args.baseline:
        if args.any_branch or args.baseline_branch is not None:
            raise ConfigError("--any-branch and --baseline-branch choose a --baseline latest: give --baseline latest")
        return None, None
    if args.baseline != "latest":
        if args.any_branch or args.baseline_branch is not None:
            raise ConfigError("--any-branch and --baseline-branch choose a --baseline latest, not a named one")
        return named_baseline(store, args.baseline, golden_sha256), None
    wanted = branch_name(args.baseline_branch, "--baseline-branch") if args.baseline_branch is not None else branch
    rule = BaselineRule(golden_sha256, shown_address(args.docs) if targets is None else None, wanted,
                        any_branch=args.any_branch, targets=targets)
    return find_baseline(store, rule)

