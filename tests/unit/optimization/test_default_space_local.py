"""The default space for the local default embedding model, as the README describes it."""

from core.models.local import DEFAULT_LOCAL_EMBEDDING
from core.models.onnx import BGE_SMALL_EN
from core.optimization.space import default_space


def _chunkings(space):
    return sorted({(c["chunking_method"], c["chunk_size"], c.get("chunk_overlap")) for c in space.valid_configurations()},
                  key=str)


def test_the_local_default_reads_512_tokens_so_its_size_is_512():
    assert DEFAULT_LOCAL_EMBEDDING == "local:bge-small-en-v1.5" and BGE_SMALL_EN.max_tokens == 512
    space = default_space({DEFAULT_LOCAL_EMBEDDING: 512}, ["extractive"])
    # ai4rag's 1024 and 2048 are longer than the model reads; overlap 256 is not below half of 512
    assert _chunkings(space) == [("hybrid", 512, None), ("recursive", 512, 0), ("recursive", 512, 128)]


def test_the_readme_set_example_removes_every_recursive_configuration():
    space = default_space({DEFAULT_LOCAL_EMBEDDING: 512}, ["extractive"]).with_overrides({"chunk_overlap": [300]})
    assert _chunkings(space) == [("hybrid", 512, None)]  # 512 is not above 2 * 300
