"""The ``ragtune`` command: check, evaluate and report, on small real corpora."""

from __future__ import annotations

import json

import pytest

from core.cli import main

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_check_ok_and_json(northwind_dir, capsys):
    assert main(["check", str(northwind_dir / "golden_pages.jsonl"), "--docs", str(northwind_dir / "docs")]) == 0
    out = capsys.readouterr().out
    assert "OK" in out and "49" in out
    assert main(["check", str(northwind_dir / "golden.jsonl"), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is True and data["n_ready"] == 49 and data["errors"] == []


def test_check_errors_exit_1_with_lines(tmp_path, capsys):
    golden = tmp_path / "g.jsonl"
    golden.write_text(
        '{"question": "q1", "expected": ["a.txt"]}\n'
        "not json\n"
        '{"question": "q2", "expeted": ["a.txt"]}\n'
        '{"question": "q3", "expected": ["b.pdf#page=0"]}\n',
        encoding="utf-8",
    )
    assert main(["check", str(golden)]) == 1
    out = capsys.readouterr().out
    for line in (2, 3, 4):
        assert f"g.jsonl:{line}: error" in out
    assert "expected" in out  # the typo's suggestion
    assert main(["check", str(tmp_path / "missing.jsonl")]) == 1


def test_check_bounds_problems_unless_all(tmp_path, capsys):
    golden = tmp_path / "g.jsonl"
    golden.write_text("".join(f'{{"question": "q{i}"}}\n' for i in range(150)), encoding="utf-8")
    assert main(["check", str(golden)]) == 1
    out = capsys.readouterr().out.splitlines()
    # verdict, lines 1-100, the file-level error, one line for lines 101-150, the hint
    assert len(out) == 1 + 100 + 1 + 1 + 1
    assert out[0].endswith("151 errors — cannot run")
    assert out[-2].startswith(f"{golden}: error: 50 more like this, on lines 101-150: field 'expected': missing")
    assert "--all" in out[-1]
    assert main(["check", str(golden), "--all"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 + 150 + 1 and out[150].startswith(f"{golden}:150: error: field 'expected'")


def _tiny_corpus(tmp_path):
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "paris.txt").write_text("Paris is the capital and largest city of France, on the Seine.", encoding="utf-8")
    (docs / "sub" / "tokyo.md").write_text("# Tokyo\n\nTokyo is the capital of Japan and its largest city.", encoding="utf-8")
    (docs / "bread.txt").write_text("Sourdough bread rises with wild yeast and lactic acid bacteria.", encoding="utf-8")
    (docs / "empty.txt").write_text("", encoding="utf-8")
    golden = tmp_path / "golden.jsonl"
    rows = [
        {"id": "fr", "question": "What is the capital of France?", "expected": ["paris.txt"],
         "evidence": ["capital and largest city of France"]},
        {"id": "jp", "question": "Which city is the capital of Japan?", "expected": ["sub/tokyo.md"]},
        {"id": "br", "question": "What makes sourdough rise?", "expected": ["bread.txt"]},
    ]
    golden.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return docs, golden


def test_evaluate_then_report(tmp_path, capsys):
    docs, golden = _tiny_corpus(tmp_path)
    out = tmp_path / "out"
    assert main(["evaluate", "--docs", str(docs), "--golden", str(golden), "--out", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["corpus"]["n_documents"] == 3
    assert report["corpus"]["skipped"][0]["document_id"] == "empty.txt"
    assert report["golden"]["n_questions"] == 3
    by_name = {s["name"]: s for s in report["setups"]}
    # no settings: every method, each also reranked by the local cross-encoder, unless the
    # method alone already puts a right document first for every question (then it is skipped)
    skipped = {s["key"]: s for s in report.get("skipped_setups") or []}
    every = ["keyword", "keyword+rerank", "dense", "dense+rerank", "hybrid-rrf-k60",
             "hybrid-rrf-k60+rerank", "hybrid-weighted-a0.5", "hybrid-weighted-a0.5+rerank"]
    assert list(by_name) == [name for name in every if name not in skipped]
    assert report["reranker"]["model_id"] == "local:ms-marco-MiniLM-L-12-v2"
    doc = by_name["dense"]["metrics"]["doc"]
    # three distinct topics: the local model puts each right document first
    assert doc["means"]["mrr"] == 1.0 and doc["n_scored"] == 3
    # so reranking dense could only tie: it is left out, with the reason and the rule
    assert skipped["dense+rerank"]["reason"].startswith("dense already finds a right result at rank 1 for all 3")
    assert "could only tie or lose" in skipped["dense+rerank"]["rule"]
    for name, setup in by_name.items():
        assert name.endswith("+rerank") == bool(setup["timings_ms"].get("rerank"))
        if name.endswith("+rerank"):
            assert setup["timings_ms"]["rerank"]["median"] > 0
    run_dir = out / "retrieval" / "runs" / report["run_id"]
    assert json.loads((run_dir / "report.json").read_text())["run_id"] == report["run_id"]
    stored = out / report["golden"]["stored_as"]
    assert stored.read_bytes() == golden.read_bytes()
    assert [p.name for p in run_dir.iterdir()] == ["report.json"]  # no temporary files left

    assert main(["report", "latest", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "finds_the_most" in text and "recall@5" in text and "dense+rerank" in text and "found@10" in text
    assert main(["report", "nope", "--out", str(out)]) == 1


def test_evaluate_with_hostile_file_names(tmp_path, capsys):
    """A name that is not UTF-8 is skipped and listed; a decomposed name matches the golden file's
    composed one; a symbolic link looping back to the folder is listed, not followed."""
    import os
    import unicodedata

    docs, golden = _tiny_corpus(tmp_path)
    with open(os.fsencode(docs) + b"/bad-name-\xff.txt", "wb") as fh:
        fh.write(b"Glaciers are slow rivers of ice that carve valleys.")
    nfd = unicodedata.normalize("NFD", "Résumé.txt")
    (docs / nfd).write_text("The cellist practised scales for three hours every morning.", encoding="utf-8")
    (docs / "sub" / "back").symlink_to(docs, target_is_directory=True)
    row = {"id": "cv", "question": "How long did the cellist practise scales?",
           "expected": [unicodedata.normalize("NFC", "Résumé.txt")]}
    with golden.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    assert main(["check", str(golden), "--docs", str(docs)]) == 0
    assert "not in the corpus" not in capsys.readouterr().out
    assert main(["evaluate", "--docs", str(docs), "--golden", str(golden), "--out", str(tmp_path / "o"),
                 "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["corpus"]["n_documents"] == 4
    skipped = {s["document_id"]: s["reason"] for s in report["corpus"]["skipped"]}
    assert skipped["bad-name-\\xff.txt"].startswith("file name is not valid UTF-8")
    assert skipped["sub/back/"].startswith("symbolic link to a folder already searched")
    doc = report["setups"][0]["metrics"]["doc"]
    assert doc["n_scored"] == 4 and doc["means"]["mrr"] == 1.0


def test_evaluate_stops_on_golden_errors(tmp_path, capsys):
    docs, _ = _tiny_corpus(tmp_path)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "", "expected": []}\n', encoding="utf-8")
    assert main(["evaluate", "--docs", str(docs), "--golden", str(bad), "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert "bad.jsonl:1" in err
    assert not (tmp_path / "o" / "retrieval").exists()


def test_bad_chunk_settings_fail_before_any_work(tmp_path, capsys):
    docs, golden = _tiny_corpus(tmp_path)
    code = main(["evaluate", "--docs", str(docs), "--golden", str(golden), "--out", str(tmp_path / "o"),
                 "--chunk-size", "100", "--chunk-overlap", "100"])
    assert code == 1
    assert "overlap" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_evaluate_with_a_chat_model_and_a_judge(tmp_path, capsys, monkeypatch):
    """Answers from an OpenAI-compatible chat endpoint (a local test server), judged by another
    model on it; unitxt scores them too."""
    from tests.support.openai_app import OpenAITestApp, last_user_text

    def respond(body):
        if body["model"] == "judge-model":
            return "1"  # valid on both scales: 1/1 -> 1.0; answer_relevance 1 on 1..5 -> (1 - 1) / 4 = 0.0
        text = last_user_text(body)
        return "Paris." if "France" in text else "I do not know."

    docs, golden = _tiny_corpus(tmp_path)
    with OpenAITestApp(respond) as app:
        monkeypatch.setenv("RAGTUNE_CHAT_PROVIDER", "openai")
        monkeypatch.setenv("RAGTUNE_CHAT_MODEL", "gen-model")
        monkeypatch.setenv("RAGTUNE_CHAT_BASE_URL", app.base_url)
        monkeypatch.setenv("RAGTUNE_CHAT_API_KEY", "test-key")
        code = main(["evaluate", "--docs", str(docs), "--golden", str(golden), "--out", str(tmp_path / "o"),
                     "--judge", "judge-model", "--json"])
        assert code == 0
        report = json.loads(capsys.readouterr().out)
        generated = [r for r in app.chat_requests if r["model"] == "gen-model"]
    answers = report["answers"]
    assert answers["generator"]["kind"] == "llm" and answers["generator"]["model_id"].endswith("/gen-model")
    assert len(generated) == 3 and answers["n_answered"] == 3 and answers["n_failed"] == 0
    by_name = {m["name"]: m for m in answers["metrics"]}
    assert by_name["judge.correctness"]["scores"]["mean"] == 1.0
    assert by_name["judge.answer_relevance"]["scores"]["mean"] == 0.0
    assert by_name["judge.correctness"]["n_scored"] == 3
    assert {"unitxt.faithfulness", "unitxt.answer_correctness", "unitxt.context_correctness"} <= set(by_name)
    fr = next(q for q in answers["questions"] if q["question_id"] == "fr")
    assert fr["answer"] == "Paris."
    assert "test-key" not in json.dumps(report)


def test_evaluate_without_generation(tmp_path, capsys):
    docs, golden = _tiny_corpus(tmp_path)
    assert main(["evaluate", "--docs", str(docs), "--golden", str(golden), "--out", str(tmp_path / "o"),
                 "--no-generate", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["answers"] is None


def test_optimize_exits_3_when_every_evaluation_failed(tmp_path, capsys, monkeypatch):
    """The judge endpoint refuses every request (400, not retried): no evaluation computes the
    objective, so every trial fails; the report is still written and lists the errors."""
    from tests.support.openai_app import OpenAITestApp

    docs, golden = _tiny_corpus(tmp_path)
    with OpenAITestApp() as app:  # no scripted reply: every chat request gets a 400
        monkeypatch.setenv("RAGTUNE_CHAT_PROVIDER", "openai")
        monkeypatch.setenv("RAGTUNE_CHAT_MODEL", "gen-model")
        monkeypatch.setenv("RAGTUNE_CHAT_BASE_URL", app.base_url)
        monkeypatch.setenv("RAGTUNE_CHAT_API_KEY", "test-key")
        code = main(["optimize", "--docs", str(docs), "--golden", str(golden), "--out", str(tmp_path / "o"),
                     "--judge", "judge-model", "--metric", "judge.correctness", "--max-evals", "1",
                     "--set", "foundation_model=extractive", "--set", "chunking_method=recursive",
                     "--set", "chunk_size=128", "--set", "chunk_overlap=0", "--set", "search_mode=vector",
                     "--set", "number_of_chunks=3"])
        assert app.chat_requests  # the judge was asked
    captured = capsys.readouterr()
    assert code == 3
    assert "every evaluation failed" in captured.err
    assert "best: none (every evaluation failed)" in captured.out
    (report_file,) = (tmp_path / "o" / "experiments").glob("*/report.json")
    report = json.loads(report_file.read_text(encoding="utf-8"))
    assert report["best"] is None and report["counts"]["evaluations"] == 1 and report["counts"]["failed"] == 1
    assert report["leaderboard"][0]["status"] == "failed" and report["leaderboard"][0]["error"]


def test_optimize_reaches_both_local_models_and_the_reranker(tmp_path, capsys):
    """``--set embedding_model=`` names both local models (pre-selection scores them for real)
    and ``--set reranker=`` the local cross-encoder: both are reachable with no settings."""
    docs, golden = _tiny_corpus(tmp_path)
    code = main(["optimize", "--docs", str(docs), "--golden", str(golden), "--out", str(tmp_path / "o"),
                 "--max-evals", "2", "--json", "--metric", "mrr",
                 "--set", "embedding_model=local:bge-small-en-v1.5,local:all-MiniLM-L6-v2",
                 "--set", "reranker=local:ms-marco-MiniLM-L-12-v2", "--set", "retrieval_depth=5",
                 "--set", "foundation_model=extractive", "--set", "chunking_method=recursive",
                 "--set", "chunk_size=128", "--set", "chunk_overlap=0", "--set", "search_mode=vector",
                 "--set", "number_of_chunks=3"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0, report
    assert report["counts"]["failed"] == 0
    tried = {row["parameters"]["embedding_model"] for row in report["leaderboard"]}
    assert tried <= {"local:bge-small-en-v1.5", "local:all-MiniLM-L6-v2"} and tried
    assert {row["parameters"]["reranker"] for row in report["leaderboard"]} == {"local:ms-marco-MiniLM-L-12-v2"}
    assert main(["optimize", "--docs", str(docs), "--golden", str(golden), "--out", str(tmp_path / "o2"),
                 "--set", "reranker=local:nope"]) == 1
    assert "not configured" in capsys.readouterr().err


def test_an_hf_reranker_missing_from_the_cache_stops_optimize_before_any_evaluation(tmp_path, capsys, monkeypatch):
    """A space naming an ``hf:`` cross-encoder the Hugging Face cache does not hold (offline)
    exits 1 naming the model before an evaluation runs or an experiment is stored."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))  # an empty cache
    docs, golden = _tiny_corpus(tmp_path)
    out = tmp_path / "o"
    code = main(["optimize", "--docs", str(docs), "--golden", str(golden), "--out", str(out), "--max-evals", "1",
                 "--metric", "mrr", "--set", "reranker=none,hf:cross-encoder/ms-marco-MiniLM-L-6-v2"])
    err = capsys.readouterr().err
    assert code == 1, err
    assert "hf:cross-encoder/ms-marco-MiniLM-L-6-v2 is not in the Hugging Face cache" in err
    assert not list(out.glob("experiments/*/results/*.json")) and not list(out.glob("experiments/*/spec.json"))


def test_screen_evaluates_the_reranked_default_first_when_the_space_has_a_reranker(tmp_path, capsys):
    """With a reranker among the space's values, ``optimize``'s default optimizer (``screen``)
    evaluates first the default configuration reranked by it over the deepest retrieval depth
    (10 of 5 and 10; the default's recursive chunking and vector search, and of the packaged
    512-token model's chunk sizes 512, 1,024 and 2,048 the nearest to the default 256), and says so."""
    docs, golden = _tiny_corpus(tmp_path)
    code = main(["optimize", "--docs", str(docs), "--golden", str(golden), "--out", str(tmp_path / "o"),
                 "--max-evals", "1", "--json", "--metric", "mrr",
                 "--set", "reranker=none,local:ms-marco-MiniLM-L-12-v2", "--set", "retrieval_depth=5,10",
                 "--set", "foundation_model=extractive"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0, report
    (row,) = report["leaderboard"]
    params = row["parameters"]
    assert (params["reranker"], params["retrieval_depth"]) == ("local:ms-marco-MiniLM-L-12-v2", 10)
    assert (params["chunking_method"], params["chunk_size"], params["search_mode"]) == ("recursive", 512, "vector")
    assert ("screen evaluates first the default configuration (or the nearest this space holds) reranked by "
            "local:ms-marco-MiniLM-L-12-v2 over "
            "the first 10 results") in report["notes"]
