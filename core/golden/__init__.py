"""Golden files: the questions a RAG setup is scored on, with the sources it should find.

A golden file is JSON Lines, one question per line (see ``golden.schema.json``). Check one with
:func:`check_golden` (every problem, with its line), read one with :func:`read_golden`.
"""

from core.golden.problems import DEFAULT_LIMITS, MAX_CHECK_BYTES, CheckLimits, OmittedProblems
from core.golden.reader import FIELDS, check_golden, format_check, load_schema, read_bytes, read_golden
from core.golden.types import MIN_EVIDENCE_WORDS, GoldenCheck, GoldenQuestion, GoldenSet, Problem, Target

__all__ = [
    "DEFAULT_LIMITS",
    "FIELDS",
    "MAX_CHECK_BYTES",
    "CheckLimits",
    "OmittedProblems",
    "MIN_EVIDENCE_WORDS",
    "GoldenCheck",
    "GoldenQuestion",
    "GoldenSet",
    "Problem",
    "Target",
    "check_golden",
    "format_check",
    "load_schema",
    "read_bytes",
    "read_golden",
]
