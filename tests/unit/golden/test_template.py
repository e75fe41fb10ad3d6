"""Golden templates (``ragtune template``) on the bundled squad-mini and northwind documents.

Ids and pages are checked against the documents themselves (their page counts and page
texts read with ``core.documents``); the spread is checked against a hand computation.
"""

from __future__ import annotations

import json

import pytest

from core.cli import main
from core.documents import load_documents
from core.errors import ConfigError
from core.golden import check_golden, read_golden
from core.golden.passages import MIN_UNIT_WORDS, document_units, printed_page_number
from core.golden.passages import spread_indices
from core.golden.template import template_rows, write_new_file


@pytest.fixture(scope="module")
def squad_docs(squad_dir):
    return load_documents(squad_dir / "docs").documents


@pytest.fixture(scope="module")
def northwind_docs(northwind_dir):
    return load_documents(northwind_dir / "docs").documents


def test_spread_is_even_from_a_seeded_start():
    import random

    start = random.Random(3).random() * 2.5  # 10 items, 4 rows: step 2.5
    assert spread_indices(10, 4, 3) == [int(start + i * 2.5) for i in range(4)]
    assert spread_indices(3, 5, 0) == [0, 1, 2]
    with pytest.raises(ConfigError):
        spread_indices(3, 0, 0)


def test_squad_rows_name_documents_and_start_like_them(squad_docs):
    rows = template_rows(squad_docs, n=7, seed=0)
    assert len(rows) == 7 and len({r["expected"][0] for r in rows}) == 7
    texts = {d.document_id: " ".join(document_units(d)[0].text.split()) for d in squad_docs}
    for row in rows:
        assert row["question"] == "" and row["id"].startswith("template-")
        doc = row["expected"][0]
        start = row["hint"].split('reads "', 1)[1].split("...", 1)[0]
        assert texts[doc].startswith(start[:60])
    assert [r["expected"] for r in rows] == [r["expected"] for r in template_rows(squad_docs, n=7, seed=0)]
    assert [r["expected"] for r in rows] != [r["expected"] for r in template_rows(squad_docs, n=7, seed=5)]


@pytest.mark.slow
def test_northwind_pages_exist_and_are_not_near_empty(northwind_docs):
    rows = template_rows(northwind_docs, by="page", n=20, seed=1)
    pages = {d.document_id: d.n_pages for d in northwind_docs}
    units = {u.target: u for d in northwind_docs for u in document_units(d)}
    assert len(rows) == 20
    for row in rows:
        target = row["expected"][0]
        doc, _, page = target.partition("#page=")
        if pages[doc]:
            assert 1 <= int(page) <= pages[doc]
        assert units[target].n_words >= MIN_UNIT_WORDS
    # every PDF page of Benefit_Options.pdf's cover (6 words) is left out
    assert "Benefit_Options.pdf#page=1" not in [r["expected"][0] for r in template_rows(northwind_docs, n=1000)]
    by_doc = template_rows(northwind_docs, by="doc", n=50)
    assert sorted(r["expected"][0] for r in by_doc) == sorted(pages)


def test_printed_page_numbers():
    assert printed_page_number(["Intro text here", "Page 7"]) == "7"
    assert printed_page_number(["12", "body"]) == "12"
    assert printed_page_number(["body", "- iv -"]) == "iv"
    assert printed_page_number(["body", "3 of 104"]) == "3"
    assert printed_page_number(["body text", "more body"]) is None


def test_cli_writes_once_and_a_half_filled_file_evaluates_on_its_filled_half(squad_dir, tmp_path, capsys):
    out = tmp_path / "t.jsonl"
    assert main(["template", "--docs", str(squad_dir / "docs"), "--n", "4", "-o", str(out)]) == 0
    before = out.read_bytes()
    assert main(["template", "--docs", str(squad_dir / "docs"), "--n", "2", "-o", str(out)]) == 1
    assert "never overwritten" in capsys.readouterr().err and out.read_bytes() == before
    check = check_golden(out)
    assert check.n_templates == 4 and check.n_ready == 0 and not check.ok
    rows = [json.loads(line) for line in before.decode().splitlines()]
    rows[0]["question"], rows[2]["question"] = "What is the first one about?", "What is the third one about?"
    out.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    golden = read_golden(out)
    assert [q.id for q in golden.questions] == [rows[0]["id"], rows[2]["id"]] and golden.n_templates == 2


def test_write_new_file_refuses_existing(tmp_path):
    write_new_file(tmp_path / "a" / "x.jsonl", b"{}\n")
    with pytest.raises(ConfigError, match="never overwritten"):
        write_new_file(tmp_path / "a" / "x.jsonl", b"")
    assert (tmp_path / "a" / "x.jsonl").read_bytes() == b"{}\n"
