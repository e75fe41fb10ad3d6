"""Benchmark numbers live in ``bench/`` output and the README, not in docstrings: no docstring of
``core`` or ``functions`` states a measured time or ratio, and the samplers' docstrings stay short."""

import ast
import re
from pathlib import Path

import core

ROOT = Path(core.__file__).parent.parent
#: A number with a unit of time or a ratio, on a line that speaks of speed or of a measurement.
MEASURED = re.compile(r"\d+(?:\.\d+)?\s*(?:x|×|times|%|s|ms|seconds|minutes)\b")
SPEED = re.compile(r"faster|slower|\bslow\b|speed-?up|took|measured|benchmark|bench/", re.IGNORECASE)


def _docstrings():
    for package in ("core", "functions"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                    text = ast.get_docstring(node)
                    if text:
                        yield f"{path.relative_to(ROOT)}:{getattr(node, 'name', '<module>')}", text


def measured_lines(text: str) -> list[str]:
    """The lines of ``text`` that state a measured time or ratio."""
    return [line.strip() for line in text.splitlines() if MEASURED.search(line) and SPEED.search(line)]


def test_the_pattern_finds_benchmark_numbers_by_hand():
    assert measured_lines("GAM reaches the best in 3.2x fewer evaluations (bench/optimizer.py)") != []
    assert measured_lines("loading took 5 s on the bundled corpus") != []
    assert measured_lines("import the backends (slow: about 5 s)") != []
    assert measured_lines("retries wait 1 s, doubling, capped at 20 s") == []
    assert measured_lines("faster on long texts: blocks of min_len // 2 characters") == []


def test_no_docstring_states_a_benchmark_number():
    found = {where: lines for where, text in _docstrings() if (lines := measured_lines(text))}
    assert found == {}


def test_the_sampler_docstrings_are_short():
    from core.optimization import GAMSampler, RandomSampler

    assert len(GAMSampler.__doc__.splitlines()) <= 50
    assert len(RandomSampler.__doc__.splitlines()) <= 50
