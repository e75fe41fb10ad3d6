"""The Qdrant target on collections of the client's local mode with hand-placed points: the
order of distances that are smaller when closer (``Euclid``, ``Manhattan``), and two collections
of one folder searched in one run.

Expected values: distances worked out by hand from the points' coordinates (the query vector
is fixed by a stand-in embedding model).
"""

from __future__ import annotations

import numpy as np
import pytest

from core.targets.base import QueryVectors
from core.targets.qdrant import QdrantTarget

pytestmark = [pytest.mark.integration]


class FixedModel:
    """An embedding model that embeds every question as ``vector``."""

    def __init__(self, vector: list[float]) -> None:
        self.vector = vector
        self.model_id = "fixed"
        self.embedding_dimension = len(vector)

    def embed_query(self, text: str) -> np.ndarray:
        return np.asarray(self.vector, dtype=np.float32)


def _collection(folder, name, distance, points):
    from qdrant_client import QdrantClient, models

    client = QdrantClient(path=str(folder))
    size = len(next(iter(points.values())))
    client.create_collection(name, vectors_config=models.VectorParams(size=size, distance=distance))
    client.upsert(name, [models.PointStruct(id=i, vector=v, payload={"text": f"chunk {doc}", "source": doc})
                         for i, (doc, v) in enumerate(points.items())])
    client.close()


@pytest.mark.parametrize("distance, points, order, scores", [
    # from the query (0, 0): a.md at 1, b.md at 3, c.md at 2 (Euclidean)
    ("EUCLID", {"a.md": [1.0, 0.0], "b.md": [3.0, 0.0], "c.md": [0.0, 2.0]}, ["a.md", "c.md", "b.md"],
     [-1.0, -2.0, -3.0]),
    # from the query (0, 0): a.md at 1 + 1 = 2, b.md at 3, c.md at 0.5 (Manhattan)
    ("MANHATTAN", {"a.md": [1.0, 1.0], "b.md": [3.0, 0.0], "c.md": [0.0, 0.5]}, ["c.md", "a.md", "b.md"],
     [-0.5, -2.0, -3.0]),
])
def test_distances_smaller_when_closer_rank_the_closest_first(tmp_path, distance, points, order, scores):
    from qdrant_client import models

    _collection(tmp_path, "docs", getattr(models.Distance, distance), points)
    target = QdrantTarget("q", str(tmp_path), "docs", vectors=QueryVectors(FixedModel([0.0, 0.0])))
    try:
        (dense,) = target.setups()
        hits = target.search("anything", dense, 3)
        assert [h.document_id for h in hits] == order
        assert [h.score for h in hits] == pytest.approx(scores)
        assert [h.document_id for h in target.search("anything", dense, 1)] == order[:1]
    finally:
        target.close()


def test_cosine_scores_stay_similarities(tmp_path):
    from qdrant_client import models

    # from the query (1, 0): cosine 1 for a.md, 0 for b.md, 1/sqrt(2) for c.md
    _collection(tmp_path, "docs", models.Distance.COSINE,
                {"a.md": [2.0, 0.0], "b.md": [0.0, 1.0], "c.md": [1.0, 1.0]})
    target = QdrantTarget("q", str(tmp_path), "docs", vectors=QueryVectors(FixedModel([1.0, 0.0])))
    try:
        hits = target.search("anything", target.setups()[0], 3)
        assert [h.document_id for h in hits] == ["a.md", "c.md", "b.md"]
        assert [h.score for h in hits] == pytest.approx([1.0, 2 ** -0.5, 0.0], abs=1e-6)
    finally:
        target.close()
