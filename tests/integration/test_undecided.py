"""A golden file with document labels only cannot tell the setups apart: ``evaluate`` and
``compare-chunking`` end to end (real local model, Milvus Lite) on the three one-topic
documents of tests/support/corpora.py, whose six questions every setup and every technique
finds in its top results (each document is one short paragraph on its own topic: the right
document is always among the three returned, so by hand every found@10 is 6 of 6 and every
McNemar test has no discordant question, p = 1)."""

from __future__ import annotations

import json

import pytest

from core.cli import main
from core.reports import LocalFiles, ReportStore
from tests.support.corpora import write_topic_corpus

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def doc_labelled(tmp_path_factory):
    """The topic corpus with its golden file's evidence removed: document labels only."""
    docs, golden = write_topic_corpus(tmp_path_factory.mktemp("topics"))
    rows = [json.loads(line) for line in golden.read_text(encoding="utf-8").splitlines()]
    for row in rows:
        row.pop("evidence")
    golden.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return docs, golden


def test_evaluate_says_the_questions_cannot_tell_the_setups_apart(doc_labelled, tmp_path, capsys):
    docs, golden = doc_labelled
    assert main(["evaluate", "--docs", str(docs), "--golden", str(golden), "--out", str(tmp_path), "--no-generate",
                 "--skip", "*+rerank"]) == 0
    out = capsys.readouterr().out
    report = ReportStore(LocalFiles(tmp_path)).load_run("latest")
    ranked = [s for s in report["setups"] if s["status"] == "ok"]
    assert report["evaluation"]["rank_grain"] == "doc" and len(ranked) >= 2
    assert all(s["found_top10"] == 6 for s in ranked)
    pick = report["picks"]["finds_the_most"]
    assert pick is not None and report["picks"]["tied_with_all"] is True  # the pick is kept, flagged
    assert report["undecided"]["pick"] == pick and report["undecided"]["n_tied"] == len(ranked)
    assert "no winner: these questions cannot tell the setups apart: add page or evidence labels, for example " \
           "with `template --by page` or `draft`" in out
    assert f"finds_the_most    {pick:<24} (tied with every other setup: not a winner)" in out
    page = tmp_path / "run.html"
    assert main(["report", "latest", "--out", str(tmp_path), "--html", str(page)]) == 0
    assert 'id="undecided"' in page.read_text(encoding="utf-8")


def test_compare_chunking_says_the_questions_cannot_tell_the_techniques_apart(doc_labelled, tmp_path, capsys):
    docs, golden = doc_labelled
    assert main(["compare-chunking", "--docs", str(docs), "--golden", str(golden), "--out", str(tmp_path),
                 "--techniques", "recursive,fixed", "--sizes", "16", "--budget", "400"]) == 0
    out = capsys.readouterr().out
    assert "no winner: these questions cannot tell the chunking techniques apart: add page or evidence labels" in out
    assert "tied with every other technique: not a winner" in out and "\nbest: " not in out
    (key,) = [p for p in (tmp_path / "chunking" / "runs").glob("*/report.json")]
    report = json.loads(key.read_text(encoding="utf-8"))
    assert report["best"]["tied_with_all"] is True and report["undecided"]["n_tied"] == 2
    assert {t["method"]: t["counted"] for t in report["techniques"]} == {"recursive": 6, "fixed": 6}
