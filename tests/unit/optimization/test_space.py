"""SearchSpace: validity rules, placeholders, defaults, files and --set overrides."""

from __future__ import annotations

import json

import pytest

from core.errors import ConfigError
from core.optimization import PARAMETER_NAMES, Configuration, Parameter, SearchSpace, default_space
from core.optimization.defaults import AI4RAG_CHUNK_SIZES, SHORT_CONTEXT_CHUNK_OVERLAPS, SHORT_CONTEXT_CHUNK_SIZES
from core.optimization.overrides import parse_override, parse_overrides

from .conftest import tiny_space


def test_tiny_space_count_by_hand(tiny):
    # Hand count. Indexing: recursive needs chunk_size <= 200 (the model's context), so 128
    # only; overlap 0 is fine, 64 breaks 128 > 2 * 64 -> 1; hybrid: 128 (no overlap) -> 1.
    # Retrieval: vector, hybrid+rrf (k=60), hybrid+weighted (alpha 0.5, 1.0) -> 4.
    # Everything else has one value: 2 * 4 = 8. The full grid is 2*2*2*2*2*2 = 64.
    assert tiny.n_valid == 8
    assert tiny.full_size == 64
    configs = tiny.valid_configurations()
    assert len({c.key for c in configs}) == 8
    assert all(c["chunk_size"] == 128 for c in configs)
    assert {c["chunk_overlap"] for c in configs} == {0, None}


def test_default_space_counts_by_hand(small):
    # 256-token model -> chunk_size (128, 256), overlap (0, 32, 64).
    # recursive: 128 with 0, 32 (64 breaks 128 > 128) -> 2; 256 with 0, 32, 64 -> 3; hybrid: 2.
    # 7 indexing x 4 retrieval x 3 number_of_chunks x 2 chat models = 168.
    assert small["chunk_size"].values == SHORT_CONTEXT_CHUNK_SIZES
    assert small["chunk_overlap"].values == SHORT_CONTEXT_CHUNK_OVERLAPS
    assert small.n_valid == 168
    assert [p.name for p in small.parameters] == list(PARAMETER_NAMES)
    assert small["context_template_text"].values == ("{document}\n",)
    assert small["user_message_text"].values == ("{reference_documents}\n\nQuestion: {question}\nAnswer:",)


def test_default_space_uses_ai4rag_sizes_for_long_contexts():
    space = default_space({"e5": 512}, ["fm"])
    assert space["chunk_size"].values == AI4RAG_CHUNK_SIZES
    # 512 fits, 1024 and 2048 do not: recursive 512 with overlap 0, 128 -> 2; hybrid 512 -> 1.
    assert space.n_valid == 3 * 4 * 3
    unknown = default_space(["some-remote-model"], ["fm"])  # unknown length: no context rule
    assert unknown["chunk_size"].values == AI4RAG_CHUNK_SIZES
    # recursive: 512 (0, 128), 1024 (0, 128, 256), 2048 (0, 128, 256) = 8; hybrid 3 -> 11
    assert unknown.n_valid == 11 * 4 * 3
    mixed = default_space({"mini": 256, "long": 8192}, ["fm"])
    assert mixed["chunk_size"].values == SHORT_CONTEXT_CHUNK_SIZES  # the smallest known length decides


def test_default_space_needs_models():
    with pytest.raises(ConfigError, match="embedding model"):
        default_space({}, ["fm"])
    with pytest.raises(ConfigError, match="foundation model"):
        default_space({"m": 256}, [])


def test_placeholders_merge_equivalent_configurations(tiny):
    hybrid = tiny.configuration({
        "chunking_method": "hybrid", "chunk_size": 128, "chunk_overlap": 64,  # overlap does not apply
        "search_mode": "vector", "ranker_strategy": "weighted", "ranker_alpha": 0.5,  # ranker does not apply
    })
    assert hybrid["chunk_overlap"] is None
    assert hybrid["ranker_strategy"] is None and hybrid["ranker_alpha"] is None and hybrid["ranker_k"] is None
    same = tiny.configuration({"chunking_method": "hybrid", "chunk_size": 128, "search_mode": "vector"})
    assert hybrid == same and hybrid.key == same.key
    assert tiny.index_of(hybrid) is not None
    rrf = tiny.configuration({"chunking_method": "hybrid", "chunk_size": 128, "search_mode": "hybrid",
                              "ranker_strategy": "rrf", "ranker_alpha": 1.0})
    assert rrf["ranker_k"] == 60 and rrf["ranker_alpha"] is None  # k filled: its only value


def test_configuration_rejects_invalid_values(tiny):
    with pytest.raises(ConfigError, match="chunk_fits_embedding_model"):
        tiny.configuration({"chunking_method": "hybrid", "chunk_size": 256, "search_mode": "vector"})
    with pytest.raises(ConfigError, match="overlap_below_half_chunk"):
        tiny.configuration({"chunking_method": "recursive", "chunk_size": 128, "chunk_overlap": 64, "search_mode": "vector"})
    with pytest.raises(ConfigError, match="not one of"):
        tiny.configuration({"chunking_method": "hybrid", "chunk_size": 999, "search_mode": "vector"})
    with pytest.raises(ConfigError, match="no value for search_mode"):
        tiny.configuration({"chunking_method": "hybrid", "chunk_size": 128})
    with pytest.raises(ConfigError, match="did you mean 'chunk_size'"):
        tiny.configuration({"chunk_sise": 128})
    with pytest.raises(ConfigError, match="not an integer"):
        tiny.configuration({"chunking_method": "hybrid", "chunk_size": "128", "search_mode": "vector"})


def test_valid_configurations_order_is_deterministic():
    a = [c.key for c in tiny_space().valid_configurations()]
    b = [c.key for c in tiny_space().valid_configurations()]
    assert a == b
    first = tiny_space().valid_configurations()[0]
    assert (first["chunking_method"], first["search_mode"]) == ("recursive", "vector")


def test_empty_space_names_the_rule():
    with pytest.raises(ConfigError, match="chunk_fits_embedding_model.*all-MiniLM-L6-v2: 256"):
        default_space({"all-MiniLM-L6-v2": 256}, ["fm"]).with_overrides({"chunk_size": [512, 1024]})
    with pytest.raises(ConfigError, match="overlap_below_half_chunk"):
        default_space({"m": 8192}, ["fm"]).with_overrides({"chunking_method": ["recursive"], "chunk_size": [100],
                                                            "chunk_overlap": [50, 60]})
    with pytest.raises(ConfigError, match="together"):
        # chunk_size 60 breaks the overlap rule (60 > 2 * 30 is false), 100 the context rule (64)
        default_space({"m": 8192}, ["fm"]).with_overrides({
            "embedding_model": {"m": 64}, "chunking_method": ["recursive"], "chunk_size": [60, 100],
            "chunk_overlap": [30]})


def test_with_overrides_narrows_and_widens(small):
    narrowed = small.with_overrides({"search_mode": ["hybrid"], "ranker_strategy": "rrf"})
    assert narrowed.n_valid == 7 * 1 * 3 * 2
    widened = small.with_overrides({"number_of_chunks": [1, 3, 5, 10, 20]})
    assert widened.n_valid == small.n_valid // 3 * 5
    models = small.with_overrides({"embedding_model": {"all-MiniLM-L6-v2": 256, "bge-m3": 8192}})
    assert models.embedding_context_lengths == {"all-MiniLM-L6-v2": 256, "bge-m3": 8192}
    assert models.n_valid == 2 * small.n_valid
    assert small.n_valid == 168  # the original is unchanged


@pytest.mark.parametrize("overrides, message", [
    ({"chunk_sizes": [1]}, "unknown parameter 'chunk_sizes'; did you mean 'chunk_size'"),
    ({"chunk_size": ["big"]}, "chunk_size: 'big' is not an integer"),
    ({"chunk_size": []}, "chunk_size: needs at least one value"),
    ({"chunk_size": [0]}, "chunk_size: 0 must be at least 1"),
    ({"number_of_chunks": [5, 16385]}, "number_of_chunks: 16385 is more than the 16,384 results one search returns"),
    ({"retrieval_depth": [10**8]}, "retrieval_depth: 100000000 is more than the 16,384 results one search returns"),
    ({"ranker_alpha": [1.5]}, "ranker_alpha: 1.5 must be between 0 and 1"),
    ({"search_mode": ["semantic"]}, "search_mode: unknown value 'semantic'"),
    ({"search_mode": [True]}, "search_mode: True is not a string"),
    ({"user_message_text": ["{question} only"]}, "reference_documents"),
    ({"embedding_model": {"m": -1}}, "context length"),
])
def test_with_overrides_errors_name_the_parameter(small, overrides, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        small.with_overrides(overrides, source="space.json")
    with pytest.raises(ConfigError, match="space.json"):
        small.with_overrides(overrides, source="space.json")


def test_from_file_json_and_yaml(tmp_path):
    spec = {"chunk_size": [128, 256], "search_mode": ["hybrid"], "ranker_strategy": "rrf", "number_of_chunks": 5}
    (tmp_path / "s.json").write_text(json.dumps(spec))
    (tmp_path / "s.yaml").write_text(
        "chunk_size: [128, 256]\nsearch_mode:\n  - hybrid\nranker_strategy: rrf\nnumber_of_chunks: 5\n"
        "context_template_text: \"[{doc_number}] {document}\\n\"\n"
    )
    models = {"all-MiniLM-L6-v2": 256}
    a = SearchSpace.from_file(tmp_path / "s.json", embedding_models=models, foundation_models=["fm"])
    b = SearchSpace.from_file(tmp_path / "s.yaml", embedding_models=models, foundation_models=["fm"])
    assert a.n_valid == b.n_valid == 7  # 7 indexing combinations x hybrid-rrf x 5 chunks
    assert b["context_template_text"].values == ("[{doc_number}] {document}\n",)
    assert a["embedding_model"].values == ("all-MiniLM-L6-v2",)


def test_from_file_can_name_models_with_context_lengths(tmp_path):
    path = tmp_path / "s.yml"
    path.write_text("embedding_model:\n  bge-m3: 8192\nfoundation_model: [a, b]\n")
    space = SearchSpace.from_file(path)
    assert space["chunk_size"].values == AI4RAG_CHUNK_SIZES  # defaults follow the file's models
    assert space.embedding_context_lengths == {"bge-m3": 8192}
    assert space["foundation_model"].values == ("a", "b")
    (tmp_path / "ids.json").write_text('{"embedding_model": ["all-MiniLM-L6-v2"]}')
    known = SearchSpace.from_file(tmp_path / "ids.json", embedding_models={"all-MiniLM-L6-v2": 256, "x": 99},
                                  foundation_models=["fm"])
    assert known.embedding_context_lengths == {"all-MiniLM-L6-v2": 256}


@pytest.mark.parametrize("text, suffix, message", [
    ('{"chunk_size": [256, "x"]}', ".json", r"s\.json: chunk_size: 'x' is not an integer"),
    ('{"chunk_sise": [256]}', ".json", r"s\.json: unknown parameter 'chunk_sise'"),
    ('{"chunk_size": [256,', ".json", r"s\.json: not valid JSON"),
    ("chunk_size: [256\n", ".yaml", r"s\.yaml: not valid YAML"),
    ("- 1\n- 2\n", ".yaml", r"s\.yaml: a search space file must hold a mapping"),
    ('{"chunk_size": [4096]}', ".json", r"s\.json: the search space has no valid configuration"),
    ('{"search_mode": {"a": 1}}', ".json", r"s\.json: search_mode: expected a value or a list"),
])
def test_from_file_errors_name_file_and_parameter(tmp_path, text, suffix, message):
    path = tmp_path / f"s{suffix}"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        SearchSpace.from_file(path, embedding_models={"all-MiniLM-L6-v2": 256}, foundation_models=["fm"])


def test_from_file_missing_file_and_models(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        SearchSpace.from_file(tmp_path / "nope.json", embedding_models={"m": 256}, foundation_models=["fm"])
    (tmp_path / "s.json").write_text("{}")
    with pytest.raises(ConfigError, match="no embedding_model"):
        SearchSpace.from_file(tmp_path / "s.json", foundation_models=["fm"])
    with pytest.raises(ConfigError, match="no foundation_model"):
        SearchSpace.from_file(tmp_path / "s.json", embedding_models={"m": 256})


def test_parse_override_coerces_per_kind():
    assert parse_override("chunk_size=256,512") == ("chunk_size", (256, 512))
    assert parse_override("ranker_alpha=0.3, 1") == ("ranker_alpha", (0.3, 1.0))
    assert parse_override("search_mode = vector,hybrid") == ("search_mode", ("vector", "hybrid"))
    assert parse_override(r"system_message_text=Be brief\, and cite.") == ("system_message_text", ("Be brief, and cite.",))
    assert parse_override("embedding_model=openai:api.openai.com/text-embedding-3-small") == (
        "embedding_model", ("openai:api.openai.com/text-embedding-3-small",))
    assert parse_overrides(["chunk_size=128", "number_of_chunks=3,5"]) == {"chunk_size": (128,), "number_of_chunks": (3, 5)}


@pytest.mark.parametrize("text, message", [
    ("chunk_size", "expects name=value"),
    ("chunk_size=", "chunk_size: needs at least one value"),
    ("chunk_size=abc", "--set chunk_size: 'abc' is not an integer"),
    ("chunk_size=2.5", "--set chunk_size: '2.5' is not an integer"),
    ("ranker_alpha=nan", "--set ranker_alpha: 'nan' is not a finite number"),
    ("chunksize=1", "unknown parameter 'chunksize'; did you mean 'chunk_size'"),
])
def test_parse_override_errors(text, message):
    with pytest.raises(ConfigError, match=message):
        parse_override(text)


def test_parse_overrides_rejects_repeats_and_overrides_apply(small):
    with pytest.raises(ConfigError, match="given twice"):
        parse_overrides(["chunk_size=128", "chunk_size=256"])
    space = small.with_overrides(parse_overrides(["chunk_size=256", "search_mode=vector"]), source="--set")
    # recursive 256 with 0, 32, 64 -> 3; hybrid 256 -> 1; vector only; 3 chunk counts; 2 models
    assert space.n_valid == 4 * 1 * 3 * 2


def test_parameter_validation():
    assert Parameter("x", "real", (1, 0.5, 1.0)).values == (1.0, 0.5)  # coerced, deduplicated
    with pytest.raises(ConfigError, match="unknown parameter kind"):
        Parameter("x", "ordinal", (1,))  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="at least one value"):
        Parameter("x", "integer", ())
    with pytest.raises(ConfigError, match="missing parameters"):
        SearchSpace([Parameter("chunk_size", "integer", (128,))])


def test_to_dict_round_trip_and_describe(small):
    again = SearchSpace.from_dict(json.loads(json.dumps(small.to_dict())))
    assert again == small and again.fingerprint() == small.fingerprint()
    assert [c.key for c in again.valid_configurations()] == [c.key for c in small.valid_configurations()]
    text = small.describe()
    assert "168 valid configurations" in text
    assert "chunk_size > 2 * chunk_overlap" in text and "all-MiniLM-L6-v2: 256" in text
    assert "held at null" in text


def test_level_codes_cover_every_configuration(tiny):
    levels, codes = tiny.level_codes()
    assert codes.shape == (tiny.n_valid, len(PARAMETER_NAMES))
    for i, config in enumerate(tiny.valid_configurations()):
        assert Configuration({n: levels[j][codes[i, j]] for j, n in enumerate(PARAMETER_NAMES)}) == config
    assert levels[PARAMETER_NAMES.index("chunk_overlap")] == (0, None)


def test_reranker_and_retrieval_depth_parameters():
    from core.optimization.rules import applies
    from core.optimization.space import default_space

    space = default_space({"m": 512}, ["extractive"])
    by = {p.name: p.values for p in space.parameters}
    assert by["reranker"] == ("none",) and by["retrieval_depth"] == (20,)
    assert not applies("retrieval_depth", {"reranker": "none"})
    assert applies("retrieval_depth", {"reranker": "local:ms-marco-MiniLM-L-12-v2"})
    wide = space.with_overrides({"reranker": ["none", "local:x"], "retrieval_depth": [20, 40]})
    configs = list(wide.valid_configurations())
    # hand count: each base configuration once without a reranker (depth held at the
    # placeholder) and twice with one (depth 20 or 40): three times the base
    assert len(configs) == 3 * len(list(space.valid_configurations()))
    assert {c["retrieval_depth"] for c in configs if c["reranker"] == "none"} == {None}
    with pytest.raises(ConfigError, match="at least 1"):
        space.with_overrides({"retrieval_depth": [0]})
