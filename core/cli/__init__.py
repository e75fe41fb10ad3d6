"""The ``ragtune`` command: check golden files, evaluate retrieval, show reports.

The parser is in :mod:`core.cli.parser`, the entry in :mod:`core.cli.command`, and each group
of commands in its own module (:mod:`~core.cli.golden`, :mod:`~core.cli.evaluate`,
:mod:`~core.cli.studies`, :mod:`~core.cli.targets`, :mod:`~core.cli.app`,
:mod:`~core.cli.optimize`, :mod:`~core.cli.reports`). Importing the package imports no heavy
library and none of the workflows: each command imports what it needs when it runs (the
workflows and what they import take seconds, ``ragtune --help`` a fraction of one), so those
imports stay inside the command functions.

Exit codes: 0 success; 1 the input has errors (a golden file that cannot be run, a missing
report); 2 bad command-line usage (argparse's own); 3 ``optimize`` finished but every
evaluation failed (the report is written and lists each error); 4 ``evaluate``'s gate failed
(``--fail-under``, ``--baseline``); 130 interrupted.
"""

from __future__ import annotations

# the helpers with a leading underscore stay importable from here, as before the package
from core.cli.command import FULL_COLLECTION_EVERY, main, run
from core.cli.common import DEFAULT_OUT, EXIT_ALL_FAILED, _chunk_overlap, _chunk_size, _csv, _csv_ints
from core.cli.formats import format_experiment, format_report, found_name
from core.cli.models import evaluation_models
from core.cli.parser import build_parser
from core.cli.studies import _search_setups
from core.cli.targets import target_specs

__all__ = ["DEFAULT_OUT", "EXIT_ALL_FAILED", "FULL_COLLECTION_EVERY", "build_parser", "evaluation_models",
           "format_experiment", "format_report", "found_name", "main", "run", "target_specs"]
