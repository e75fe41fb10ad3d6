"""One report envelope for every report kind (``core.evaluation.envelope``): its parts in one
order around the kind's body, a part left out when a kind does not give it. The golden file and
the documents are real (two squad-mini documents, two of its questions); expected values are
read off them by hand."""

from __future__ import annotations

import hashlib
import shutil
from datetime import datetime, timezone
from pathlib import Path

from core.documents import corpus_fingerprint, load_documents
from core.evaluation.envelope import corpus_block, envelope, golden_block, labelled_counts
from core.golden import read_golden
from core.reports.store import REPORT_SCHEMA_VERSION

SQUAD = Path(__file__).resolve().parents[3] / "examples" / "data" / "squad-mini"


def _inputs(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("Normans_p00.txt", "Normans_p01.txt"):
        shutil.copy(SQUAD / "docs" / name, docs / name)
    (docs / "empty.txt").write_text("", encoding="utf-8")  # skipped: no text
    golden = tmp_path / "golden.jsonl"
    golden.write_bytes(b"".join((SQUAD / "golden.jsonl").read_bytes().splitlines(keepends=True)[:2]))
    return docs, golden


def test_every_part_in_one_order_around_the_body(tmp_path):
    docs, golden_path = _inputs(tmp_path)
    golden = read_golden(golden_path)
    loaded = load_documents(docs)
    fingerprint = corpus_fingerprint(loaded.documents)
    report = envelope("retrieval", {"setups": [], "picks": {}}, started=datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc),
                      golden=golden_block(golden_path, golden, **labelled_counts(golden)),
                      corpus=corpus_block(docs, loaded, fingerprint, n_chunks=7),
                      timings_s={"load_s": 0.12345}, versions={"python": "3"}, models=[None])
    assert list(report) == ["schema_version", "kind", "started_at", "finished_at", "golden", "corpus", "setups",
                            "picks", "timings_s", "versions", "models"]
    assert (report["schema_version"], report["kind"], report["started_at"]) == (
        REPORT_SCHEMA_VERSION, "retrieval", "2026-01-02T03:04:05+00:00")
    # both questions name Normans_p00.txt and neither a page; the first one's only quote, "France",
    # is one word, below MIN_EVIDENCE_WORDS, so only the second has usable evidence
    assert report["golden"] == {"path": str(golden_path), "sha256": hashlib.sha256(golden_path.read_bytes()).hexdigest(),
                                "n_questions": 2, "n_templates": 0, "n_drafts": 0, "n_with_pages": 0,
                                "n_with_evidence": 1}
    assert report["corpus"]["n_documents"] == 2 and report["corpus"]["n_chunks"] == 7
    assert list(report["corpus"]) == ["path", "n_documents", "n_chunks", "fingerprint", "skipped"]
    assert [s["document_id"] for s in report["corpus"]["skipped"]] == ["empty.txt"]
    assert report["timings_s"] == {"load_s": 0.123} and report["models"] == {}


def test_a_kind_without_times_or_corpus_leaves_them_out(tmp_path):
    _, golden_path = _inputs(tmp_path)
    golden = read_golden(golden_path)
    report = envelope("answer-cutoff", {"counts": {}}, golden=golden_block(golden_path, golden, n_labelled=2))
    assert list(report) == ["schema_version", "kind", "golden", "counts"]
    assert report["golden"]["n_labelled"] == 2
