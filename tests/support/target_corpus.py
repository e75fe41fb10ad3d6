"""A small corpus for the target tests: squad-mini's first ten Normans passages, chunked as
ragtune chunks them and embedded with the default local model (bge-small-en-v1.5, 384
dimensions), with the golden questions that expect those passages.

The vectors go through an embedding cache in the session's temporary folder, so every module
of a test session embeds the corpus once.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tests.conftest import EXAMPLES

SQUAD = EXAMPLES / "squad-mini"
#: The passages used (their file names match this).
PASSAGES = re.compile(r"^Normans_p0[0-9]\.txt$")


@dataclass
class TargetCorpus:
    """The corpus, ready to be written into an index of any engine.

    Attributes:
        docs: the folder of the ten passages.
        golden: a golden file of the questions that expect them.
        chunks: ragtune chunks (recursive, 256 tokens, overlap 32).
        vectors: float32 ``(len(chunks), 384)``, unit length.
        model: the cached embedding model (``CachedEmbeddingModel``) that made them.
        questions: ``(id, question, expected document)`` of the golden file, in order.
    """

    docs: Path
    golden: Path
    chunks: list[Any]
    vectors: np.ndarray
    model: Any
    questions: list[tuple[str, str, str]]


def build_target_corpus(root: Path) -> TargetCorpus:
    """Write the passages and golden file under ``root`` and embed the chunks."""
    from core.chunking import get_chunker
    from core.documents import load_documents
    from core.models import CachedEmbeddingModel, EmbeddingCache
    from core.models.local import local_embedding_model

    docs = root / "docs"
    docs.mkdir(parents=True)
    for path in sorted((SQUAD / "docs").iterdir()):
        if PASSAGES.match(path.name):
            shutil.copy(path, docs / path.name)
    rows = []
    for line in (SQUAD / "golden.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if all(PASSAGES.match(e) for e in row["expected"]):
            rows.append(row)
    golden = root / "golden.jsonl"
    golden.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    loaded = load_documents(docs)
    chunks = get_chunker("recursive", 256, 32).chunk(loaded.documents)
    model = CachedEmbeddingModel(local_embedding_model(), EmbeddingCache(root / "cache" / "embeddings.sqlite"))
    vectors = np.asarray(model.embed_documents([c.text for c in chunks]), dtype=np.float32)
    return TargetCorpus(docs, golden, chunks, vectors, model,
                        [(r["id"], r["question"], r["expected"][0]) for r in rows])



def shared_target_corpus(tmp_path_factory: Any) -> TargetCorpus:
    """The session's corpus: built once in the session's base temporary folder; later calls
    (from other test modules) reread the passages and take the vectors from its cache."""
    root = Path(tmp_path_factory.getbasetemp()) / "target-corpus"
    if root.exists():
        from core.chunking import get_chunker
        from core.documents import load_documents
        from core.models import CachedEmbeddingModel, EmbeddingCache
        from core.models.local import local_embedding_model

        chunks = get_chunker("recursive", 256, 32).chunk(load_documents(root / "docs").documents)
        model = CachedEmbeddingModel(local_embedding_model(), EmbeddingCache(root / "cache" / "embeddings.sqlite"))
        vectors = np.asarray(model.embed_documents([c.text for c in chunks]), dtype=np.float32)
        rows = [json.loads(line) for line in (root / "golden.jsonl").read_text(encoding="utf-8").splitlines()]
        return TargetCorpus(root / "docs", root / "golden.jsonl", chunks, vectors, model,
                            [(r["id"], r["question"], r["expected"][0]) for r in rows])
    return build_target_corpus(root)


__all__ = ["PASSAGES", "TargetCorpus", "build_target_corpus", "shared_target_corpus"]
