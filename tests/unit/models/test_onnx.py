"""The local ONNX models: pooling against the model card, truncation, the pinned sha256."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from core.errors import ConfigError
from core.models.onnx import BGE_SMALL_EN, MS_MARCO_MINILM, OnnxCrossEncoder, OnnxEmbeddingModel, package_model_dir

pytest.importorskip("onnxruntime")

PAIRS = [
    ("How many people live in Berlin?",
     "Berlin has a population of 3,520,031 registered inhabitants in an area of 891.82 square kilometers."),
    ("What is the capital of France?", "Paris is the capital and most populous city of France."),
    ("how much protein should a female eat",
     "As a general guideline, the CDC's average requirement of protein for women ages 19 to 70 is 46 grams per day."),
]


@pytest.fixture(scope="module")
def bge():
    try:
        model = OnnxEmbeddingModel()
        model.verify()
    except ConfigError as exc:
        pytest.skip(str(exc))
    return model


def _reference_cls(text: str) -> np.ndarray:
    """The model card's recipe written out on its own: tokenise one text (no padding), run
    the graph, take the [CLS] row of ``last_hidden_state``, L2-normalise."""
    import onnxruntime as ort
    from tokenizers import Tokenizer

    path = package_model_dir(BGE_SMALL_EN.folder)
    tok = Tokenizer.from_file(str(path / "tokenizer.json"))
    enc = tok.encode(text)
    session = ort.InferenceSession(str(path / "model.onnx"), providers=["CPUExecutionProvider"])
    feed = {"input_ids": np.array([enc.ids]), "attention_mask": np.array([enc.attention_mask]),
            "token_type_ids": np.array([enc.type_ids])}
    hidden = session.run(["last_hidden_state"], feed)[0]
    return hidden[0, 0] / np.linalg.norm(hidden[0, 0])


def test_vectors_are_the_normalised_cls_row(bge):
    texts = [p for pair in PAIRS for p in pair]
    vectors = bge.embed_documents(texts)  # the default: one text per pass, exactly the recipe
    assert vectors.shape == (6, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    for text, vec in zip(texts, vectors):
        np.testing.assert_allclose(vec, _reference_cls(text), atol=1e-5)
    # a text's vector does not depend on what it is embedded with
    np.testing.assert_array_equal(bge.embed_documents([texts[0], texts[5]])[0], vectors[0])
    # padded batches would move vectors (the int8 graph quantises activations per batch),
    # a little, never far
    batched = OnnxEmbeddingModel(batch_size=8).embed_documents(texts)
    assert min(float(a @ b) for a, b in zip(batched, vectors)) > 0.99


def test_each_question_is_closest_to_its_own_passage(bge):
    q = bge.embed_documents([a for a, _ in PAIRS])
    p = bge.embed_documents([b for _, b in PAIRS])
    sims = q @ p.T
    assert list(sims.argmax(axis=1)) == [0, 1, 2]
    # bge's similarities sit high (the card's note): the right passage above 0.75
    assert sims.diagonal().min() > 0.75


def test_queries_carry_the_cards_retrieval_instruction(bge):
    # the reference recipe: the card's instruction, then the question, CLS row normalised
    instruction = "Represent this sentence for searching relevant passages: "
    assert bge.query_instruction == instruction
    question = PAIRS[0][0]
    np.testing.assert_allclose(bge.embed_query(question), _reference_cls(instruction + question), atol=1e-5)
    assert float(bge.embed_query(question) @ bge.embed_documents([question])[0]) < 0.99  # not the passage vector
    # with the instruction each question still finds its own passage first
    q = np.stack([bge.embed_query(a) for a, _ in PAIRS])
    p = bge.embed_documents([b for _, b in PAIRS])
    assert list((q @ p.T).argmax(axis=1)) == [0, 1, 2]


def test_long_texts_are_truncated_and_counted(bge):
    before = bge.n_truncated
    long_text = " ".join(["benefits"] * 600)  # 600 word pieces + [CLS] [SEP] > 512
    vectors = bge.embed_documents([long_text, "short"])
    assert vectors.shape == (2, 384)
    assert bge.n_truncated - before == 1
    assert bge.max_input_tokens == 512


def test_cross_encoder_gives_one_logit_per_pair():
    try:
        model = OnnxCrossEncoder()
        model.verify()
    except ConfigError as exc:
        pytest.skip(str(exc))
    berlin, new_york = model.rerank(PAIRS[0][0], [PAIRS[0][1], "New York City is famous for the Metropolitan Museum of Art."])
    # the model card's example: a large positive logit for the answer, a large negative one otherwise
    assert berlin > 5.0 and new_york < -5.0
    before = model.n_truncated
    model.rerank("query", [" ".join(["word"] * 700)])
    assert model.n_truncated - before == 1


@pytest.fixture(scope="module")
def cross_encoder_reference():
    """sentence-transformers' ``CrossEncoder`` recipe written out on its own: the model
    folder's Hugging Face tokenizer (``transformers``) with ``truncation`` at its
    ``model_max_length`` (512), one pair per pass (no padding), onnxruntime with its default
    options, the one logit."""
    import onnxruntime as ort

    transformers = pytest.importorskip("transformers")
    try:
        path = package_model_dir(MS_MARCO_MINILM.folder)
    except ConfigError as exc:
        pytest.skip(str(exc))
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(path))
    assert tokenizer.model_max_length == 512
    session = ort.InferenceSession(str(path / "model.onnx"), providers=["CPUExecutionProvider"])

    def logit(query: str, passage: str, truncation: str = "longest_first") -> float:
        enc = tokenizer(query, passage, truncation=truncation, max_length=512, return_tensors="np")
        feed = {name: enc[name].astype(np.int64) for name in ("input_ids", "attention_mask", "token_type_ids")}
        return float(session.run(["logits"], feed)[0][0, 0])

    return logit


def test_pairs_of_many_queries_score_as_each_pair_alone(cross_encoder_reference, squad_dir, tmp_path):
    from core.models import EmbeddingCache
    from core.models.cache import CachedReranker

    passages = [p.read_text(encoding="utf-8") for p in sorted((squad_dir / "docs").iterdir())[:5]]
    long_passage = " ".join(passages) * 3  # well past the 512-token window
    queries = ["In what country is Normandy located?", "Who ruled the duchy of Normandy?", PAIRS[0][0]]
    pairs = [(q, p) for q in queries for p in passages] + [(queries[0], long_passage), PAIRS[0]]
    reference = [cross_encoder_reference(q, p) for q, p in pairs]
    model = OnnxCrossEncoder()  # pairs of all queries in one call, over two threads
    scores = model.score_pairs(pairs)
    np.testing.assert_allclose(scores, reference, atol=1e-5)
    assert model.n_truncated == 1  # the long passage alone
    # the passage is cut, the short query kept whole: the same as cutting the passage only
    assert abs(cross_encoder_reference(queries[0], long_passage, "only_second") - scores[-2]) < 1e-5
    # one query's passages through rerank, in one thread: the same scores
    one = OnnxCrossEncoder(workers=1)
    np.testing.assert_allclose(one.rerank(queries[1], passages), reference[5:10], atol=1e-5)
    # through the cache: the same scores when scored, and when read back in a later run
    cold = CachedReranker(OnnxCrossEncoder(), EmbeddingCache(tmp_path / "cache.sqlite"))
    np.testing.assert_allclose(cold.score_pairs(pairs), reference, atol=1e-5)
    warm = CachedReranker(OnnxCrossEncoder(), EmbeddingCache(tmp_path / "cache.sqlite"))
    assert warm.score_pairs(pairs) == cold.score_pairs(pairs) and warm.stats()["pairs_scored"] == 0


@pytest.mark.parametrize("files", [BGE_SMALL_EN, MS_MARCO_MINILM])
def test_a_changed_model_file_is_refused_naming_it(tmp_path, files):
    try:
        source = package_model_dir(files.folder)
    except ConfigError as exc:
        pytest.skip(str(exc))
    shutil.copy(source / "tokenizer.json", tmp_path / "tokenizer.json")
    (tmp_path / "model.onnx").write_bytes(b"not the model")
    cls = OnnxEmbeddingModel if files.dimension else OnnxCrossEncoder
    model = cls(files, model_path=tmp_path)
    with pytest.raises(ConfigError, match=r"model\.onnx has sha256 .* needs " + files.sha256):
        model.verify()


def test_a_missing_file_is_refused(tmp_path):
    model = OnnxEmbeddingModel(model_path=tmp_path)
    with pytest.raises(ConfigError, match="is missing"):
        model.verify()


def test_the_load_is_timed_once_wherever_it_happens():
    import threading

    model = OnnxEmbeddingModel()
    assert model.load_s is None
    threads = [threading.Thread(target=model.embed_documents, args=(["a text"],)) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    first = model.load_s
    assert first is not None and first > 0  # the sha256 check and the session, in whichever thread came first
    model.load()
    assert model.load_s == first  # loaded once
