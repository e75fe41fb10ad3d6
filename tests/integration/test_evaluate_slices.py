"""``ragtune evaluate --by metadata.KEY`` and stale evidence, end to end on six squad-mini
documents with the real local model and Milvus Lite.

The per-slice means are checked against the report's own per-question first ranks (MRR is the
mean of 1/rank over a slice's questions, 0 when not found: a hand computation from the ranks),
and the slice counts against the golden file written here."""

from __future__ import annotations

import json

import pytest

from core.cli import main

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_slices_and_stale_evidence(squad_dir, tmp_path, capsys):
    golden_rows = [json.loads(line) for line in (squad_dir / "golden.jsonl").read_text(encoding="utf-8").splitlines()]
    docs = tmp_path / "docs"
    docs.mkdir()
    rows, seen = [], set()
    for row in golden_rows:
        doc = row["expected"][0]
        if doc in seen:
            continue
        seen.add(doc)
        (docs / doc).write_bytes((squad_dir / "docs" / doc).read_bytes())
        rows.append({"id": row["id"], "question": row["question"], "expected": row["expected"],
                     "metadata": {"topic": doc.split("_p")[0]} if len(rows) % 3 else {}})
        if len(rows) == 6:
            break
    rows[0]["evidence"] = ["a quote this document never held"]
    golden = tmp_path / "g.jsonl"
    golden.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    args = ["evaluate", "--docs", str(docs), "--golden", str(golden), "--out", str(tmp_path / "out"), "--no-generate",
            "--rank-by", "doc", "--by", "metadata.topic", "--by", "metadata.absent"]
    assert main([*args, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    topics: dict[str, list[str]] = {}
    for r in rows:
        topics.setdefault(r["metadata"].get("topic", "(none)"), []).append(r["id"])
    first = {q["id"]: q["first_relevant_rank"] for q in report["questions"]}
    for setup in report["setups"]:
        slices = setup["slices"]["metadata.topic"]
        assert {s["value"]: s["n_questions"] for s in slices} == {k: len(v) for k, v in topics.items()}
        assert slices[-1]["value"] == "(none)"
        for s in slices:
            ranks = [first[i][setup["name"]] for i in topics[s["value"]]]
            mrr = sum(1 / r for r in ranks if r) / len(ranks)
            assert s["metrics"]["doc"]["means"]["mrr"] == pytest.approx(mrr)
        assert [s["value"] for s in setup["slices"]["metadata.absent"]] == ["(none)"]
    warnings = [(w["line"], w["field"], w["message"]) for w in report["golden"]["warnings"]]
    assert (1, "evidence[0]", f'stale evidence: quote "a quote this document never held" is not on '
                              f'{rows[0]["expected"][0]}') in warnings
    assert any("--by metadata.absent" in m for _, _, m in warnings)
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "[doc] by metadata.topic" in printed
    assert main([*args[:-4], "--by", "topic"]) == 1
    assert "--by takes a metadata key" in capsys.readouterr().err
