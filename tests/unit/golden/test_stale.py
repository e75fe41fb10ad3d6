"""Stale evidence and pages past the end (``check --docs`` and ``evaluate``).

The documents are written by the tests or are the bundled northwind PDFs; which quotes are on
which page is read off the texts (hand computation).
"""

from __future__ import annotations

import json

import pytest

from core.cli import main
from core.golden import GoldenQuestion, Target
from core.golden.stale import pieces_from_chunks, stale_evidence_warnings
from core.chunking.base import Chunk


def q(expected, evidence, line=1):
    return GoldenQuestion(id=f"q{line}", question="?", expected=tuple(Target.parse(e) for e in expected),
                          evidence=tuple(evidence), line=line)


PIECES = {
    "r.pdf": [("the employer pays half of the premium", [1]), ("dental care is covered twice a year", [2])],
    "n.md": [("a note without pages about parking rules", [])],
}


def test_quotes_checked_on_their_pages_or_documents():
    questions = [
        q(["r.pdf#page=1"], ["the employer pays half"], 1),          # on page 1: fine
        q(["r.pdf#page=1"], ["dental care is covered"], 2),          # on page 2, not page 1: stale
        q(["r.pdf"], ["dental care is covered"], 3),                 # anywhere in r.pdf: fine
        q(["n.md"], ["parking rules changed last year", "no"], 4),   # stale; "no" too short to check
        q(["gone.pdf"], ["whatever is quoted here"], 5),             # document missing: not checked
    ]
    warnings = stale_evidence_warnings(questions, PIECES)
    assert [(w.line, w.field) for w in warnings] == [(2, "evidence[0]"), (4, "evidence[0]")]
    assert warnings[0].message == 'stale evidence: quote "dental care is covered" is not on r.pdf#page=1'
    assert warnings[0].severity == "warning"


def test_pieces_from_chunks_keep_pages():
    chunks = [Chunk("t1", "c1", {"document_id": "a", "pages": [1, 2]}), Chunk("t2", "c2", {"document_id": "a"})]
    assert pieces_from_chunks(chunks) == {"a": [("t1", [1, 2]), ("t2", [])]}


@pytest.mark.slow
def test_check_docs_warns_on_northwind(northwind_dir, tmp_path, capsys):
    doc = "Northwind_Standard_Benefits_Details.pdf"
    rows = [
        {"id": "a", "question": "What is past the end?", "expected": [f"{doc}#page=105"]},
        {"id": "b", "question": "Which plan?", "expected": [f"{doc}#page=3"],
         "evidence": ["this quote was never written in the plan"]},
        {"id": "c", "question": "What is on page three?", "expected": [f"{doc}#page=3"]},
        {"id": "d", "question": "What does Contoso offer?", "expected": ["Benefit_Options.pdf#page=3"],
         "evidence": ["We are excited to offer our employees two comprehensive health insurance plans"]},
    ]
    golden = tmp_path / "g.jsonl"
    golden.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert main(["check", str(golden), "--docs", str(northwind_dir / "docs"), "--json"]) == 0
    warnings = [(w["line"], w["field"], w["message"]) for w in json.loads(capsys.readouterr().out)["warnings"]]
    assert (1, "expected", f"{doc}#page=105 is past the last page of {doc} (104 pages)") in warnings
    assert (2, "evidence[0]", f'stale evidence: quote "this quote was never written in the plan" is not on '
                              f"{doc}#page=3") in warnings
    assert len(warnings) == 2


def test_check_docs_refuses_a_file_none_of_whose_documents_is_there(tmp_path, capsys):
    # evaluate exits 1 on this file before any work; check --docs must not call it runnable
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "held.txt").write_text("Parking is free on Sundays.\n", encoding="utf-8")
    golden = tmp_path / "g.jsonl"
    golden.write_text(json.dumps({"id": "a", "question": "Where is parking?", "expected": ["gone.txt"]}) + "\n",
                      encoding="utf-8")
    assert main(["check", str(golden), "--json"]) == 0  # without --docs nothing says the document is gone
    capsys.readouterr()
    assert main(["check", str(golden), "--docs", str(docs), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["ok"] is False
    [error] = out["errors"]
    assert error["field"] == "expected" and "none is in" in error["message"] and "'gone.txt'" in error["message"]
    (docs / "gone.txt").write_text("Parking is behind the office.\n", encoding="utf-8")
    assert main(["check", str(golden), "--docs", str(docs)]) == 0


def test_a_quote_on_the_document_that_no_chunk_holds_is_not_called_stale(tmp_path):
    from core.chunking import get_chunker
    from core.documents import load_documents

    (tmp_path / "n.md").write_text("Visitors park in the north garage after six in the evening on weekdays.\n",
                                   encoding="utf-8")
    documents = load_documents(tmp_path).documents
    questions = [q(["n.md"], ["park in the north garage after six"], 1), q(["n.md"], ["bicycles are stored in the basement"], 2)]
    whole = pieces_from_chunks(get_chunker("recursive", chunk_size=512, chunk_overlap=0).chunk(documents))
    assert stale_evidence_warnings(questions, whole, documents)[0].line == 2  # one chunk: the first quote is on it
    small = pieces_from_chunks(get_chunker("recursive", chunk_size=2, chunk_overlap=0).chunk(documents))
    assert len(small["n.md"]) > 2
    warnings = stale_evidence_warnings(questions, small, documents)
    assert [(w.line, w.field) for w in warnings] == [(1, "evidence[0]"), (2, "evidence[0]")]
    assert warnings[0].message == ('quote "park in the north garage after six" is on n.md, but no chunk holds it whole '
                                   "(the chunks are shorter than it or split it): the evidence grain cannot find it "
                                   "at this chunking")
    assert warnings[1].message == 'stale evidence: quote "bicycles are stored in the basement" is not on n.md'
    # without the documents, as for a target's chunks, both are stale
    assert all(w.message.startswith("stale evidence") for w in stale_evidence_warnings(questions, small))
