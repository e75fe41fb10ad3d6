"""The Qdrant target on collections of the client's local mode with hand-placed points: the
order of distances that are smaller when closer (``Euclid``, ``Manhattan``), two collections
of one folder searched in one run, and a mapping's dotted paths into the payload (one no point
holds stops the run before any search).

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


def _two_collections(folder):
    from qdrant_client import QdrantClient, models

    client = QdrantClient(path=str(folder))
    for name, points in (("first", {"a.md": [1.0, 0.0], "b.md": [0.0, 1.0]}),
                         ("second", {"c.md": [0.0, 1.0], "d.md": [1.0, 0.0]})):
        client.create_collection(name, vectors_config=models.VectorParams(size=2, distance=models.Distance.COSINE))
        client.upsert(name, [models.PointStruct(id=i, vector=v, payload={"text": f"chunk {doc}", "source": doc})
                             for i, (doc, v) in enumerate(points.items())])
    client.close()


def test_two_collections_of_one_folder_share_its_client(tmp_path):
    from qdrant_client import QdrantClient

    _two_collections(tmp_path)
    vectors = QueryVectors(FixedModel([1.0, 0.0]))
    first = QdrantTarget("first", str(tmp_path), "first", vectors=vectors)
    second = QdrantTarget("second", str(tmp_path / "."), "second", vectors=vectors)  # the same folder, written apart
    # nearest to (1, 0): a.md in the first collection, d.md in the second (by hand)
    assert [h.document_id for h in first.search("q", first.setups()[0], 2)] == ["a.md", "b.md"]
    assert [h.document_id for h in second.search("q", second.setups()[0], 2)] == ["d.md", "c.md"]
    first.close()
    assert [h.document_id for h in second.search("q", second.setups()[0], 1)] == ["d.md"]  # still open
    second.close()
    QdrantClient(path=str(tmp_path)).close()  # the folder is released once both are closed


def _run_files(tmp_path, monkeypatch, expected, targets_text):
    """A one-question golden file expecting ``expected`` and a targets file of ``targets_text``;
    ragtune's reranker off and the Qdrant targets' questions embedded as ``(1, 0)``."""
    import json

    import core.targets.open as opening

    golden = tmp_path / "g.jsonl"
    golden.write_text(json.dumps({"id": "q1", "question": "Where is a?", "expected": [expected]}) + "\n",
                      encoding="utf-8")
    targets = tmp_path / "targets.yaml"
    targets.write_text(targets_text, encoding="utf-8")
    monkeypatch.setenv("RAGTUNE_RERANK_PROVIDER", "none")
    real = opening.QdrantTarget
    monkeypatch.setattr(opening, "QdrantTarget",
                        lambda *a, **kw: real(*a, **{**kw, "vectors": QueryVectors(FixedModel([1.0, 0.0]))}))
    return golden, targets


def test_two_collections_of_one_folder_are_evaluated_in_one_run(tmp_path, monkeypatch, capsys):
    import json

    from core.cli import main

    folder = tmp_path / "qdrant"
    folder.mkdir()
    _two_collections(folder)
    golden, targets = _run_files(tmp_path, monkeypatch, "a.md",
                                 f"- {{name: first, kind: qdrant, path: '{folder}', collection: first}}\n"
                                 f"- {{name: second, kind: qdrant, path: '{folder}', collection: second}}\n")
    code = main(["evaluate", "--golden", str(golden), "--targets", str(targets), "--out", str(tmp_path / "out"),
                 "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    report = json.loads(captured.out)
    assert {t["name"]: t["status"] for t in report["targets"]} == {"first": "ok", "second": "ok"}
    # a.md is the first collection's nearest point to (1, 0) and the second collection lacks it
    setups = {s["name"]: s for s in report["setups"]}
    doc = report["evaluation"]["rank_grain"]
    assert setups["first/dense"]["metrics"][doc]["means"]["mrr"] == 1.0
    assert [t["missing_documents"] for t in report["targets"]] == [[], ["a.md"]]


def _payload_collection(folder):
    """Three points whose payloads keep the document in a nested ``meta``
    (``{"text": "chunk i", "meta": {"file": "a.txt", "page": i + 1}}``) at ``(1, i)``."""
    from qdrant_client import QdrantClient, models

    client = QdrantClient(path=str(folder))
    client.create_collection("docs", vectors_config=models.VectorParams(size=2, distance=models.Distance.COSINE))
    client.upsert("docs", [models.PointStruct(id=i, vector=[1.0, float(i)],
                                              payload={"text": f"chunk {i}", "meta": {"file": "a.txt", "page": i + 1}})
                           for i in range(3)])
    client.close()


@pytest.mark.parametrize("fields, message", [
    ({"document": "meta.nofile"}, "fields.document names 'meta.nofile': no record of the first 3 has it; "
                                  "'meta' holds: file, page"),
    ({"document": "meta.file", "text": "meta.nothing"}, "fields.text names 'meta.nothing': no record of the "
                                                        "first 3 has it; 'meta' holds: file, page"),
    # a path below a key that holds no mapping: the deepest level the points reach is shown
    ({"document": "meta.file.name"}, "fields.document names 'meta.file.name': no record of the first 3 has it; "
                                     "'meta' holds: file, page"),
])
def test_a_dotted_path_no_point_holds_stops_the_run_before_any_search(tmp_path, monkeypatch, capsys, fields,
                                                                       message):
    import json

    from core.cli import main

    folder = tmp_path / "qdrant"
    folder.mkdir()
    _payload_collection(folder)
    golden, targets = _run_files(tmp_path, monkeypatch, "a.txt",
                                 f"- {{name: team, kind: qdrant, path: '{folder}', collection: docs, "
                                 f"fields: {json.dumps(fields)}}}\n")
    searched = []
    monkeypatch.setattr(QdrantTarget, "search", lambda self, *a: searched.append(a) or [])
    code = main(["evaluate", "--golden", str(golden), "--targets", str(targets), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 1, err
    assert f"{targets}:1 (target team): target team (collection docs): {message}\n" in err
    assert searched == []


def test_a_dotted_path_the_points_hold_is_searched(tmp_path):
    from core.targets.mapping import FieldMapping

    _payload_collection(tmp_path)
    target = QdrantTarget("team", str(tmp_path), "docs", fields=FieldMapping(document="meta.file", page="meta.page"),
                          vectors=QueryVectors(FixedModel([1.0, 0.0])))
    try:
        # nearest to (1, 0): point 0 at (1, 0), then point 1 at (1, 1) (cosine, by hand)
        hits = target.search("anything", target.setups()[0], 2)
        assert [(h.document_id, h.pages, h.text) for h in hits] == [("a.txt", (1,), "chunk 0"),
                                                                   ("a.txt", (2,), "chunk 1")]
        assert target.missing(["a.txt", "b.txt"]) == ["b.txt"]
        assert (target.describe().n_chunks, target.describe().n_documents) == (3, 1)
    finally:
        target.close()

