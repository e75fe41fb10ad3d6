"""Known texts and vectors for vector-store tests, and an embedding model that looks them up."""

from __future__ import annotations

import numpy as np

from core.chunking.base import Chunk, make_chunk_id


class TableModel:
    """An ``EmbeddingModel`` whose vectors come from a table (text -> vector), so rankings can
    be computed by hand. A text missing from the table is an error (KeyError)."""

    def __init__(self, table: dict[str, list[float]], model_id: str = "table") -> None:
        self.table = {k: np.asarray(v, dtype=np.float32) for k, v in table.items()}
        self.model_id = model_id
        self.embedding_dimension = len(next(iter(table.values())))
        self.max_input_tokens = None

    def embed_documents(self, texts):
        """Vectors of ``texts`` from the table, float32 ``(n, dim)``."""
        return np.stack([self.table[t] for t in texts])

    def embed_query(self, text):
        """Vector of one query from the table."""
        return self.table[text]


#: Four chunks. For the query "zebra" (vector [1, 0, 0]): cosine ranks c1 (1.0), c2 (0.8),
#: c3 (0.6), c4 (0.0); keyword search ranks c3 (the word twice) before c1 (once), and finds
#: nothing else.
TEXTS = {
    "c1": "the zebra sat on the mat",
    "c2": "dogs chase cats in the yard",
    "c3": "a zebra and a zebra and a hat",
    "c4": "stock markets fell sharply today",
}
VECTORS = {"c1": [1.0, 0.0, 0.0], "c2": [0.8, 0.6, 0.0], "c3": [0.6, 0.0, 0.8], "c4": [0.0, 0.0, -1.0]}
QUERIES = {"zebra": [1.0, 0.0, 0.0], "markets": [0.0, 0.0, -1.0], "parrot": [0.0, 1.0, 0.0],
           # keyword ranks c3, c1 as for "zebra"; cosine with [0.8, 0.6, 0] ranks c2 (1.0), c1 (0.8), c3 (0.48)
           "zebra zebra": [0.8, 0.6, 0.0]}


def table_model() -> TableModel:
    """A :class:`TableModel` holding :data:`TEXTS` and :data:`QUERIES`."""
    table = {TEXTS[k]: v for k, v in VECTORS.items()}
    table.update(QUERIES)
    return TableModel(table)


def chunks() -> list[Chunk]:
    """The four chunks of :data:`TEXTS`: document ``<name>.txt``, page i + 1, heading ``H``."""
    out = []
    for i, (name, text) in enumerate(TEXTS.items()):
        out.append(Chunk(text, make_chunk_id(f"{name}.txt", 0, text),
                         {"document_id": f"{name}.txt", "sequence_number": 0, "pages": [i + 1], "headings": ["H"]}))
    return out


def docs(hits) -> list[str]:
    """Document ids of retrieved chunks, in rank order."""
    return [h.chunk.document_id for h in hits]
