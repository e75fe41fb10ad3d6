"""Suggested labels (``ragtune suggest``) with the real local embedding model on squad-mini,
northwind and the Bedrock sample.

What the suggestions must be is computed independently from the documents: a chunk (of the
same chunker) holding the whole reference verbatim ranks first, so a reference found verbatim in
one document's chunks only must be labelled with that document; page ids must name real pages.
"""

from __future__ import annotations

import json

import pytest

from core.chunking import get_chunker
from core.cli import main
from core.documents import load_documents
from core.golden import check_golden, read_golden
from core.golden.suggest import build_index, suggest_labels
from core.metrics.retrieval import normalize_text
from core.models import CachedEmbeddingModel, EmbeddingCache, LocalEmbeddingModel
from core.vectorstores import MilvusLiteConfig

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    return tmp_path_factory.mktemp("suggest")


@pytest.fixture(scope="module")
def model(out):
    return CachedEmbeddingModel(LocalEmbeddingModel(), EmbeddingCache(out / "embeddings.sqlite"))


def index_of(documents, model, out):
    return build_index(documents, model, MilvusLiteConfig(str(out / "milvus.db")))


def unlabel(path, keep: int = 0) -> tuple[bytes, list[dict]]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    for row in rows[keep:]:
        row.pop("expected")
    return "".join(json.dumps(r) + "\n" for r in rows).encode(), rows


def test_squad_suggestions_follow_the_reference_and_keep_person_labels(squad_dir, model, out):
    docs = load_documents(squad_dir / "docs").documents
    data, rows = unlabel(squad_dir / "golden.jsonl", keep=5)
    rows[5]["expected"] = ["Normans_p01.txt"]
    rows[5]["draft"] = True  # a draft label is suggested again
    data = "".join(json.dumps(r) + "\n" for r in rows).encode()
    with index_of(docs, model, out) as index:
        result = suggest_labels("golden.jsonl", docs, index=index, by="doc", data=data)
    assert result.n_kept == 5 and result.n_suggested == len(rows) - 5
    assert result.rows[:5] == rows[:5]
    chunker = get_chunker("recursive", 256, 32)
    holders: dict[str, set[str]] = {}
    for d in docs:
        for c in chunker.chunk([d]):
            holders.setdefault(normalize_text(c.text), set()).add(d.document_id)
    checked = 0
    for row in result.rows[5:]:
        assert row["draft"] is True and len(row["expected"]) == 1 and "reference answer" in row["hint"]
        reference = normalize_text(row["reference"])
        if len(reference.split()) < 3:
            continue
        docs_with = {doc for text, ds in holders.items() if reference in text for doc in ds}
        if len(docs_with) == 1:
            assert row["expected"] == sorted(docs_with), row["id"]
            checked += 1
    assert checked >= 20
    out = check_golden("s.jsonl", data=b"".join(json.dumps(r).encode() + b"\n" for r in result.rows))
    assert out.ok and out.n_drafts == result.n_suggested and out.n_ready == 5


def test_northwind_pages_exist_and_top_gives_distinct_ids(northwind_dir, model, out, tmp_path):
    names = ("Benefit_Options.pdf", "PerksPlus.pdf", "employee_handbook.pdf")
    for name in names:  # three of the PDFs keep the test short
        (tmp_path / name).write_bytes((northwind_dir / "docs" / name).read_bytes())
    loaded = load_documents(tmp_path)
    pages = {d.document_id: d.n_pages for d in loaded.documents}
    rows = [{"id": f"r{i}", "question": f"question {i}?", "reference": r} for i, r in enumerate([
        "PerksPlus reimburses up to $1,000 a year for fitness and wellness expenses.",
        "Employees can choose between Northwind Health Plus and Northwind Standard.",
        "Contoso values accountability, community and innovation.",
    ])]
    data = "".join(json.dumps(r) + "\n" for r in rows).encode()
    with index_of(loaded.documents, model, out) as index:
        result = suggest_labels("g.jsonl", loaded.documents, index=index, top=3, by="page", data=data)
    assert result.n_suggested == len(rows)
    for row in result.rows:
        assert len(row["expected"]) == 3 and len(set(row["expected"])) == 3
        for target in row["expected"]:
            doc, _, page = target.partition("#page=")
            assert doc in names and 1 <= int(page) <= pages[doc]
    assert result.rows[0]["expected"][0].startswith("PerksPlus.pdf#page=")


def test_bedrock_dataset_becomes_a_ragtune_file_with_its_turns(tmp_path, capsys, monkeypatch):
    from tests.conftest import EXAMPLES

    # The labels below were checked against this sample's derived golden file with
    # all-MiniLM-L6-v2; the test names that model rather than the default.
    monkeypatch.setenv("RAGTUNE_EMBEDDING_MODEL", "all-MiniLM-L6-v2")

    sample = EXAMPLES / "bedrock-sample"
    out = tmp_path / "labelled.jsonl"
    assert main(["suggest", "--docs", str(sample / "docs"), "--golden", str(sample / "bedrock_prompts.jsonl"),
                 "--by", "doc", "--out", str(tmp_path / "work"), "-o", str(out)]) == 0
    assert "given suggested labels" in capsys.readouterr().out
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    source = read_golden(sample / "bedrock_prompts.jsonl").questions
    assert [r["id"] for r in rows] == [q.id for q in source]
    for row, q in zip(rows, source):
        assert row["question"] == q.question and row.get("reference") == q.reference
        assert row["metadata"]["bedrock"]["line"] == q.line
        assert row["metadata"]["bedrock"]["history"] == q.history_messages
    spain = next(r for r in rows if "Spain's goalkeeper" in r["question"])
    assert spain["expected"] == ["spain-players.json"]
    check = check_golden(out)
    assert check.format == "ragtune" and check.n_drafts == len(rows) == 15  # every row waits for a person
    assert [p.message for p in check.errors] == ["nothing ready to score: none of the 15 rows is ready (15 drafts)"]
    assert main(["suggest", "--docs", str(sample / "docs"), "--golden", str(out), "-o", str(out)]) == 1
    derived = {json.loads(line)["question"]: json.loads(line)["expected"]
               for line in (sample / "golden_derived.jsonl").read_text(encoding="utf-8").splitlines()}
    right = sum(1 for r in rows if r.get("expected") == derived.get(r["question"]))
    print(f"suggested documents equal to golden_derived.jsonl's: {right} of {len(rows)}")


def test_a_converted_multi_turn_bedrock_file_reads_like_the_original(tmp_path, capsys, monkeypatch):
    """A three-turn Bedrock record and a one-turn one, converted by ``ragtune suggest`` and then
    checked by a person (``draft`` removed): read back, the same questions, ids, references and
    conversation history as reading the Bedrock file directly."""
    from tests.conftest import EXAMPLES

    sample = EXAMPLES / "bedrock-sample"

    def turn(prompt, reference):
        return {"prompt": {"content": [{"text": prompt}]}, "referenceResponses": [{"content": [{"text": reference}]}]}

    source = tmp_path / "bedrock.jsonl"
    records = [{"conversationTurns": [turn("Who is Spain's main goalkeeper?", "Iker Casillas, with 166 caps."),
                                      turn("How many caps does he have?", "166 caps."),
                                      turn("Which club did he play for?", "Real Madrid.")]},
               {"conversationTurns": [turn("Who was the midfielder with the most goals for Spain?",
                                           "David Silva, with 23 goals in 97 caps.")]}]
    source.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    out = tmp_path / "labelled.jsonl"
    assert main(["suggest", "--docs", str(sample / "docs"), "--golden", str(source), "--by", "doc",
                 "--out", str(tmp_path / "work"), "-o", str(out)]) == 0
    capsys.readouterr()
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert all(r["draft"] is True and r["expected"] for r in rows)
    checked = tmp_path / "checked.jsonl"
    checked.write_text("".join(json.dumps({k: v for k, v in r.items() if k not in ("draft", "hint")}) + "\n"
                               for r in rows), encoding="utf-8")
    original = read_golden(source).questions
    converted = read_golden(checked).questions
    assert [(q.id, q.question, q.reference, q.history) for q in converted] == [
        (q.id, q.question, q.reference, q.history) for q in original]
    # by hand: the third turn follows the first two, each answered with its reference
    assert converted[2].history == (("user", "Who is Spain's main goalkeeper?"),
                                    ("assistant", "Iker Casillas, with 166 caps."),
                                    ("user", "How many caps does he have?"), ("assistant", "166 caps."))
    assert converted[3].history == ()
