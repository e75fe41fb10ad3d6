"""A persistent embedding cache, so no text is embedded twice by the same model.

Keys are ``(model_id, sha256 of the text)``; values are float32 vectors. The cache is one
SQLite file (WAL mode, safe for several processes on one machine).
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from core.errors import StoreError
from core.models.embeddings import EmbeddingModel, text_sha256

_SCHEMA = """
CREATE TABLE IF NOT EXISTS embeddings (
    model_id TEXT NOT NULL,
    text_sha256 TEXT NOT NULL,
    dim INTEGER NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (model_id, text_sha256)
) WITHOUT ROWID
"""


class EmbeddingCache:
    """Vectors by ``(model_id, text sha256)`` in a SQLite file.

    Args:
        path: the SQLite file; its folder is created. ``":memory:"`` keeps it in memory.

    Raises:
        StoreError: the file cannot be created or is not a SQLite database (names the path).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self._lock = threading.Lock()
        try:
            if self.path != ":memory:":
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(self.path, check_same_thread=False, timeout=60)
            with self._lock:
                if self.path != ":memory:":
                    self._conn.execute("PRAGMA journal_mode=WAL")
                self._conn.execute(_SCHEMA)
                self._conn.commit()
        except OSError as exc:
            raise StoreError(f"cannot create the embedding cache {self.path}: {exc.strerror or exc}") from exc
        except sqlite3.Error as exc:
            raise StoreError(
                f"cannot open the embedding cache {self.path}: {exc}. Delete the file to start a new cache "
                "(texts are embedded again), or choose another output folder"
            ) from exc

    def get_many(self, model_id: str, keys: Iterable[str]) -> dict[str, np.ndarray]:
        """Return the cached vectors among ``keys`` (text sha256s) as ``{key: float32 (dim,)}``."""
        keys = list(dict.fromkeys(keys))
        found: dict[str, np.ndarray] = {}
        with self._lock:
            for i in range(0, len(keys), 500):
                part = keys[i : i + 500]
                marks = ",".join("?" * len(part))
                rows = self._conn.execute(
                    f"SELECT text_sha256, dim, vector FROM embeddings WHERE model_id = ? AND text_sha256 IN ({marks})",
                    [model_id, *part],
                ).fetchall()
                for key, dim, blob in rows:
                    found[key] = np.frombuffer(blob, dtype=np.float32, count=dim).copy()
        return found

    def put_many(self, model_id: str, items: Iterable[tuple[str, np.ndarray]]) -> None:
        """Store ``(text sha256, vector)`` pairs for ``model_id`` (existing keys are replaced)."""
        rows = [(model_id, key, int(vec.shape[0]), np.asarray(vec, dtype=np.float32).tobytes()) for key, vec in items]
        with self._lock:
            self._conn.executemany("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?, ?)", rows)
            self._conn.commit()

    def count(self, model_id: str | None = None) -> int:
        """Number of cached vectors (for one model, or all)."""
        with self._lock:
            if model_id is None:
                return int(self._conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0])
            return int(self._conn.execute("SELECT COUNT(*) FROM embeddings WHERE model_id = ?", [model_id]).fetchone()[0])

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._conn.close()


class CachedEmbeddingModel:
    """An :class:`EmbeddingModel` that looks every text up in an :class:`EmbeddingCache` first.

    Only texts the cache lacks reach the wrapped model, each distinct text once per call;
    their vectors are stored before returning. Counters tell what happened:
    ``n_texts`` (texts asked for), ``n_embedded`` (distinct texts sent to the model),
    ``n_cache_hits`` (texts answered from the cache), ``embed_seconds`` (time in the model).

    Args:
        model: the model to wrap.
        cache: where vectors are kept.
    """

    def __init__(self, model: EmbeddingModel, cache: EmbeddingCache) -> None:
        self.model = model
        self.cache = cache
        self.model_id = model.model_id
        self.n_texts = 0
        self.n_embedded = 0
        self.n_cache_hits = 0
        self.embed_seconds = 0.0
        self._dimension: int | None = None

    @property
    def embedding_dimension(self) -> int:
        """The wrapped model's dimension (taken from a cached vector when one exists)."""
        if self._dimension is None:
            self._dimension = self.model.embedding_dimension
        return self._dimension

    @property
    def max_input_tokens(self) -> int | None:
        """The wrapped model's context length."""
        return self.model.max_input_tokens

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Return float32 ``(len(texts), dim)``, embedding only texts not cached yet."""
        import time

        texts = list(texts)
        keys = [text_sha256(t) for t in texts]
        found = self.cache.get_many(self.model_id, keys)
        missing: dict[str, str] = {}
        for key, text in zip(keys, texts):
            if key not in found and key not in missing:
                missing[key] = text
        if missing:
            start = time.perf_counter()
            vectors = self.model.embed_documents(list(missing.values()))
            self.embed_seconds += time.perf_counter() - start
            new = dict(zip(missing.keys(), vectors))
            self.cache.put_many(self.model_id, new.items())
            found.update(new)
        self.n_texts += len(texts)
        self.n_embedded += len(missing)
        self.n_cache_hits += len(texts) - sum(1 for k in keys if k in missing)
        if not texts:
            return np.zeros((0, self.embedding_dimension), dtype=np.float32)
        out = np.stack([found[k] for k in keys]).astype(np.float32, copy=False)
        if self._dimension is None:
            self._dimension = int(out.shape[1])
        return out

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query through the cache; returns float32 ``(dim,)``."""
        return self.embed_documents([text])[0]

    def stats(self) -> dict[str, float]:
        """Return the counters as a JSON-serialisable dict."""
        return {
            "n_texts": self.n_texts, "n_embedded": self.n_embedded,
            "n_cache_hits": self.n_cache_hits, "embed_seconds": round(self.embed_seconds, 3),
        }
