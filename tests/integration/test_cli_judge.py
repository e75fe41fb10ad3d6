"""``evaluate`` with the judge's new duties, on a small real corpus (the packaged embedding
model, Milvus Lite): ``--label-unjudged`` grades the top results the golden file does not name,
``--dry-run`` prints calls and tokens and sends nothing, and a conversation's later turn is
retrieved with its own question (the last user message) and scored per turn."""

from __future__ import annotations

import json

import pytest

from core.cli import main
from tests.support.capitals import ROWS, grader
from tests.support.openai_app import OpenAITestApp

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _corpus(tmp_path, rows):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "paris.txt").write_text("Paris is the capital and largest city of France, on the Seine.", encoding="utf-8")
    (docs / "france.txt").write_text("France's capital city is Paris, home of the Louvre.", encoding="utf-8")
    (docs / "tokyo.txt").write_text("Tokyo is the capital of Japan and its largest city.", encoding="utf-8")
    (docs / "bread.txt").write_text("Sourdough bread rises with wild yeast and lactic acid bacteria.", encoding="utf-8")
    golden = tmp_path / "golden.jsonl"
    golden.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return docs, golden


def test_label_unjudged_grades_what_the_golden_file_never_named(tmp_path, capsys, monkeypatch):
    docs, golden = _corpus(tmp_path, ROWS)
    with OpenAITestApp(grader) as app:
        monkeypatch.setenv("RAGTUNE_CHAT_BASE_URL", app.base_url)
        args = ["evaluate", "--docs", str(docs), "--golden", str(golden), "--out", str(tmp_path / "o"),
                "--no-generate", "--only", "dense", "--judge", "grader", "--label-unjudged"]
        assert main(args + ["--json"]) == 0
        report = json.loads(capsys.readouterr().out)
        n_calls = len(app.chat_requests)
        # every top result of the dense setup not from the expected document is graded once:
        # 4 documents, one chunk each, so 3 per question
        assert n_calls == 6
        assert main(args) == 0  # a rerun asks nothing: the labels are cached
        text = capsys.readouterr().out
        assert len(app.chat_requests) == n_calls
    unjudged = report["unjudged"]
    assert (unjudged["n_labels"], unjudged["n_relevant"]) == (6, 1)  # france.txt for the question on France
    dense = unjudged["setups"]["dense"]
    # each question has its expected document in the top 4 and every other result graded: judged@10 = 4/10
    assert dense["judged@k"]["judged@10"] == pytest.approx(0.4)
    assert dense["golden_judged@k"]["judged@10"] == pytest.approx(0.1)
    assert dense["holes"] == 0
    assert "relevance labels by openai:127.0.0.1" in text and "dense" in text


def test_dry_run_prints_calls_and_tokens_and_sends_nothing(tmp_path, capsys, monkeypatch):
    docs, golden = _corpus(tmp_path, ROWS)
    with OpenAITestApp(lambda body: "1") as app:
        monkeypatch.setenv("RAGTUNE_CHAT_PROVIDER", "openai")
        monkeypatch.setenv("RAGTUNE_CHAT_MODEL", "gen-model")
        monkeypatch.setenv("RAGTUNE_CHAT_BASE_URL", app.base_url)
        monkeypatch.setenv("RAGTUNE_PRICES", json.dumps({"gen-model": {"input": 0.15, "output": 0.6}}))
        code = main(["evaluate", "--docs", str(docs), "--golden", str(golden), "--out", str(tmp_path / "o"),
                     "--judge", "judge-model", "--judge-repeat", "2", "--dry-run", "--json"])
        plan = json.loads(capsys.readouterr().out)
        assert code == 0 and app.requests == []
    groups = {g["purpose"]: g for g in plan["groups"]}
    assert groups["answers"]["calls"] == 2 and groups["answers"]["cost_usd"] > 0
    assert groups["judge"]["calls"] == 2 * 5 * 2  # questions x judge metrics x repeats
    assert groups["judge"]["cost_usd"] is None and plan["unpriced"] == [groups["judge"]["model_id"]]
    assert "WordPiece" in plan["tokenizer"] and not (tmp_path / "o" / "retrieval").exists()


def test_a_later_turn_is_retrieved_with_its_own_question_and_scored_per_turn(tmp_path, capsys, monkeypatch):
    # the turns of one conversation, as 'ragtune suggest' writes a Bedrock file with labels added
    rows = [{"id": "t1", "question": "What is the capital of France?", "expected": ["paris.txt"],
             "metadata": {"bedrock": {"line": 1, "turn": 1, "history": []}}},
            {"id": "t2", "question": "Which city is the capital of Japan?", "expected": ["tokyo.txt"],
             "metadata": {"bedrock": {"line": 1, "turn": 2, "history": [
                 {"role": "user", "content": "What is the capital of France?"},
                 {"role": "assistant", "content": "Paris."}]}}}]
    docs, golden = _corpus(tmp_path, rows)
    with OpenAITestApp(lambda body: "An answer.") as app:
        monkeypatch.setenv("RAGTUNE_CHAT_PROVIDER", "openai")
        monkeypatch.setenv("RAGTUNE_CHAT_MODEL", "gen-model")
        monkeypatch.setenv("RAGTUNE_CHAT_BASE_URL", app.base_url)
        assert main(["evaluate", "--docs", str(docs), "--golden", str(golden), "--out", str(tmp_path / "o"),
                     "--only", "dense", "--by", "metadata.bedrock.turn", "--json"]) == 0
        report = json.loads(capsys.readouterr().out)
        second = next(r for r in app.chat_requests if "Question: Which city" in r["messages"][-1]["content"])
    # the earlier turn goes to the chat model as it is, the retrieval used the last user message:
    # the passages given with turn 2 start with Tokyo's
    assert second["messages"][1:3] == [{"role": "user", "content": "What is the capital of France?"},
                                       {"role": "assistant", "content": "Paris."}]
    assert second["messages"][-1]["content"].index("Tokyo") < second["messages"][-1]["content"].index("Paris")
    ranks = {q["id"]: q["first_relevant_rank"]["dense"] for q in report["questions"]}
    assert ranks == {"t1": 1, "t2": 1}
    slices = {s["value"]: s for s in report["setups"][0]["slices"]["metadata.bedrock.turn"]}
    assert slices["2"]["metrics"]["doc"]["means"]["found@1"] == 1.0 and slices["2"]["n_questions"] == 1
