"""``ProblemLog``: which problems are one kind, and what is kept within the limits (hand-counted)."""

from __future__ import annotations

from core.golden import CheckLimits, Problem
from core.golden.problems import ProblemLog, format_ranges, safe_text


def test_quoted_text_numbers_and_list_indices_do_not_make_new_kinds():
    log = ProblemLog(CheckLimits(per_kind=2))
    for i in range(1, 6):
        log.add(Problem("error", f"duplicate id 'q{i}': lines {i} and {i + 10}", i + 10, "id"))
        log.add(Problem("warning", f"document 'd{i}.pdf' is not in the corpus", i + 10, f"expected[{i}]"))
    assert [(p.severity, p.line) for p in log.listed] == [("error", 11), ("warning", 11), ("error", 12), ("warning", 12)]
    assert [(o.severity, o.count, o.lines) for o in log.omitted()] == [("error", 3, "13-15"), ("warning", 3, "13-15")]
    assert (log.n_errors, log.n_warnings) == (5, 5)


def test_kinds_past_the_limit_are_counted_together():
    log = ProblemLog(CheckLimits(per_kind=1, max_kinds=2))
    for i, message in enumerate(["not valid JSON: x", "missing", "is empty", "must be a string"], start=1):
        log.add(Problem("error", message, i))
    # the first two kinds are tracked; the third opens "(other kinds)", which the fourth joins
    assert [p.message for p in log.listed] == ["not valid JSON: x", "missing", "is empty"]
    [other] = log.omitted()
    assert (other.count, other.lines, other.example) == (1, "4", "must be a string")


def test_file_level_problems_are_always_listed_and_long_text_is_shortened():
    log = ProblemLog(CheckLimits(per_kind=0, message_chars=10, field_chars=4))
    log.add(Problem("error", "nothing ready to score: none of the rows"))
    log.add(Problem("error", "x" * 50, 1, "abcdefgh"))
    assert [p.message for p in log.listed] == ["nothing r…"]  # 9 characters and the ellipsis
    [rest] = log.omitted()
    # the problem becomes "field 'abc…': xxxxxxxxx…", and its example is cut to 10 characters too
    assert rest.example == "field 'ab…"


def test_unbounded_keeps_everything_in_full():
    log = ProblemLog(CheckLimits.unbounded())
    for i in range(300):
        log.add(Problem("error", "m" * 1000, i + 1, "f"))
    assert len(log.listed) == 300 and log.omitted() == [] and len(log.listed[0].message) == 1000


def test_ranges_and_safe_text():
    assert format_ranges([(1, 3), (7, 7), (9, 12)], 4) == "1-3, 7, 9-12 and 4 more lines"
    assert safe_text("a\ud800b") == "a\\ud800b" and safe_text("café") == "café"
