"""The golden files bundled under examples/data pass the check (counts from each SOURCE.md / wc -l)."""

from __future__ import annotations

from pathlib import Path

from core.golden import CheckLimits, Target, check_golden, format_check, read_golden


def _docs(folder: Path) -> list[str]:
    return sorted(p.name for p in (folder / "docs").iterdir() if p.is_file())


def test_northwind_documents(northwind_dir):
    check = check_golden(northwind_dir / "golden.jsonl", documents=_docs(northwind_dir))
    assert check.problems == []
    assert (check.n_lines, check.n_ready) == (49, 49)
    assert format_check(check) == f"{northwind_dir / 'golden.jsonl'}: OK — 49 questions ready to score"
    golden = read_golden(northwind_dir / "golden.jsonl")
    assert golden.questions[0].id == "northwind-001"
    assert golden.questions[0].expected == (Target("Northwind_Standard_Benefits_Details.pdf"),)


def test_northwind_pages(northwind_dir):
    path = northwind_dir / "golden_pages.jsonl"
    check = check_golden(path, documents=_docs(northwind_dir))
    assert check.problems == []
    golden = read_golden(path)
    assert len(golden.questions) == 49
    assert golden.questions[0].expected == (Target("Northwind_Standard_Benefits_Details.pdf", 7),)
    assert golden.questions[1].expected == (Target("Northwind_Standard_Benefits_Details.pdf", 8),)
    assert all(t.page is not None and t.page >= 1 for q in golden.questions for t in q.expected)


def test_squad_mini(squad_dir):
    check = check_golden(squad_dir / "golden.jsonl", documents=_docs(squad_dir))
    assert check.ok and check.n_ready == 293
    # only short-evidence warnings; no expected document is missing from docs/
    assert {p.field for p in check.warnings} == {"evidence"}
    assert golden_ids_unique(read_golden(squad_dir / "golden.jsonl").questions)


def golden_ids_unique(questions) -> bool:
    return len({q.id for q in questions}) == len(questions) == 293


def test_squad_unanswerable_one_error_per_line(squad_dir):
    # Every one of the 333 lines lacks "expected" (counted by hand: 333 lines, none has it).
    check = check_golden(squad_dir / "unanswerable.jsonl", limits=CheckLimits.unbounded())
    line_errors = [p for p in check.errors if p.line is not None]
    assert len(line_errors) == 333
    assert [p.line for p in line_errors] == list(range(1, 334))
    assert {(p.field, p.message) for p in line_errors} == {
        ("expected", "missing: give at least one document id, or one page as 'name.pdf#page=N'")
    }
    # and, for the file, the reason it cannot run at all
    assert [p.message for p in check.errors if p.line is None] == [
        "nothing ready to score: none of the 333 rows is ready (333 with errors)"
    ]


def test_squad_unanswerable_bounded_lists_the_first_100_and_counts_the_rest(squad_dir):
    check = check_golden(squad_dir / "unanswerable.jsonl")
    line_errors = [p for p in check.errors if p.line is not None]
    assert [p.line for p in line_errors] == list(range(1, 101))
    assert check.n_errors == 334  # 333 lines + the file-level "nothing ready"
    [rest] = check.omitted
    assert (rest.severity, rest.count, rest.lines) == ("error", 233, "101-333")
    assert rest.example.startswith("field 'expected': missing")
    assert not check.ok
