"""``ragtune evaluate`` over a target searched in place (a Qdrant collection in local mode) with
the judge's options: ``--label-unjudged`` grades the top results the golden file does not name,
as the run over documents grades them; ``--dry-run`` prints the calls and sends nothing; and
the options about answers, which a run over targets does not make, are refused before any
search instead of being ignored.

Expected values by hand: four documents, one chunk each, all in the top 10 of every question;
the scripted judge grades one of them relevant (France's capital for the question on France).
"""

from __future__ import annotations

import json

import pytest

from core.cli import main
from tests.support.capitals import ROWS, grader
from tests.support.openai_app import OpenAITestApp

pytestmark = [pytest.mark.integration, pytest.mark.slow]

DOCS = {"paris.txt": "Paris is the capital and largest city of France, on the Seine.",
        "france.txt": "France's capital city is Paris, home of the Louvre.",
        "tokyo.txt": "Tokyo is the capital of Japan and its largest city.",
        "bread.txt": "Sourdough bread rises with wild yeast and lactic acid bacteria."}
@pytest.fixture(scope="module")
def collection(tmp_path_factory):
    """A Qdrant collection (local mode) of the four documents, embedded with the default local
    model, which ragtune also embeds the questions with."""
    from qdrant_client import QdrantClient, models

    from core.models.local import local_embedding_model

    folder = tmp_path_factory.mktemp("qdrant")
    vectors = local_embedding_model().embed_documents(list(DOCS.values()))
    client = QdrantClient(path=str(folder))
    client.create_collection("docs", vectors_config=models.VectorParams(size=len(vectors[0]),
                                                                        distance=models.Distance.COSINE))
    client.upsert("docs", [models.PointStruct(id=i, vector=[float(x) for x in v], payload={"text": t, "source": d})
                           for i, ((d, t), v) in enumerate(zip(DOCS.items(), vectors))])
    client.close()
    return str(folder)


@pytest.fixture()
def files(tmp_path, collection, monkeypatch):
    monkeypatch.setenv("RAGTUNE_RERANK_PROVIDER", "none")
    targets = tmp_path / "targets.yaml"
    targets.write_text(f'- {{name: local, kind: qdrant, path: "{collection}", collection: docs}}\n', encoding="utf-8")
    golden = tmp_path / "golden.jsonl"
    golden.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    return targets, golden


def test_label_unjudged_grades_a_targets_top_results(tmp_path, files, capsys, monkeypatch):
    targets, golden = files
    with OpenAITestApp(grader) as judge:
        monkeypatch.setenv("RAGTUNE_CHAT_BASE_URL", judge.base_url)
        args = ["evaluate", "--golden", str(golden), "--targets", str(targets), "--only", "local/dense",
                "--out", str(tmp_path / "o"), "--judge", "grader", "--label-unjudged"]
        code = main(args + ["--json"])
        captured = capsys.readouterr()
        assert code == 0, captured.err
        report = json.loads(captured.out)
        # the three results per question not from its expected document, each graded once
        assert len(judge.chat_requests) == 6
        assert main(args) == 0  # a rerun asks nothing: the labels are in the reply cache
        text = capsys.readouterr().out
        assert len(judge.chat_requests) == 6
    unjudged = report["unjudged"]
    assert (unjudged["n_labels"], unjudged["n_relevant"]) == (6, 1)
    dense = unjudged["setups"]["local/dense"]
    # four results per question, all labelled now (one by the golden file, three by the judge)
    assert dense["judged@k"]["judged@10"] == pytest.approx(0.4)
    assert dense["golden_judged@k"]["judged@10"] == pytest.approx(0.1)
    assert dense["holes"] == 0
    assert "relevance labels by openai:127.0.0.1" in text and "local/dense" in text


def test_dry_run_over_targets_sends_nothing_and_counts_the_labels(tmp_path, files, capsys, monkeypatch):
    targets, golden = files
    with OpenAITestApp(grader) as judge:
        monkeypatch.setenv("RAGTUNE_CHAT_BASE_URL", judge.base_url)
        code = main(["evaluate", "--golden", str(golden), "--targets", str(targets), "--out", str(tmp_path / "o"),
                     "--judge", "grader", "--label-unjudged", "--label-depth", "3", "--dry-run", "--json"])
        captured = capsys.readouterr()
        assert code == 0, captured.err
        assert judge.requests == []
    plan = json.loads(captured.out)
    groups = {g["purpose"]: g for g in plan["groups"]}
    assert set(groups) == {"labels"}  # no answers, so no answer is judged
    assert groups["labels"]["calls"] == 2 * 3  # questions x depth, for one setup
    assert any("would search 1 target(s) with each of the 2 questions" in n and "local (qdrant docs" in n
               for n in plan["notes"])
    assert not (tmp_path / "o" / "runs").exists() and not (tmp_path / "o" / "cache").exists()


@pytest.mark.parametrize(("flags", "message"), [
    (["--judge", "grader"], "--judge judges answers, and a run over targets (--target, --targets) makes none"),
    (["--label-unjudged"], "--label-unjudged grades results with the judge: give --judge MODEL"),
    (["--judge", "grader", "--label-unjudged", "--judge-repeat", "3"], "--judge-repeat 3 repeats the judge's calls"),
])
def test_options_a_run_over_targets_cannot_honour_are_refused_first(tmp_path, files, capsys, monkeypatch, flags,
                                                                    message):
    targets, golden = files
    monkeypatch.delenv("RAGTUNE_JUDGE_MODEL", raising=False)
    with OpenAITestApp(grader) as judge:
        monkeypatch.setenv("RAGTUNE_CHAT_BASE_URL", judge.base_url)
        code = main(["evaluate", "--golden", str(golden), "--targets", str(targets), "--out", str(tmp_path / "o"),
                     *flags])
        err = capsys.readouterr().err
        assert judge.requests == []
    assert code == 2 and message in err, err
    assert not (tmp_path / "o" / "runs").exists()
