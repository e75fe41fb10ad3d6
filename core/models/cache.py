"""A persistent cache of embeddings, chat replies and rerank scores, so no text is embedded
twice by the same model, no chat request is sent twice, and no (query, passage) pair is scored
twice by the same reranker.

Embedding keys are ``(model_id, sha256 of the text)``, values float32 vectors; reply keys are
the sha256 of (model, messages, sampling parameters); rerank keys are (the reranker's id and
model file, sha256 of the query, sha256 of the passage), values the score and its cost. The cache is one SQLite file (WAL mode,
safe for several processes on one machine, with ``synchronous=NORMAL``: a commit is not
synced to disk on its own, so a power cut can lose the last entries, which are then asked
again, but never leaves the file inconsistent; see https://www.sqlite.org/wal.html). Recently used vectors are also kept in memory,
up to a fixed number of bytes, so a text looked up again in the same process skips SQLite.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from core.errors import StoreError
from core.models.chat import check_messages
from core.models.embeddings import EmbeddingModel, check_vectors, query_text, text_sha256, usable_rows
from core.models.rerank import PairScore, score_pairs
from core.models.spend import current_spend

if TYPE_CHECKING:
    from core.models.chat import ChatModel
    from core.models.rerank import Reranker

logger = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS embeddings (
    model_id TEXT NOT NULL,
    text_sha256 TEXT NOT NULL,
    dim INTEGER NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (model_id, text_sha256)
) WITHOUT ROWID
"""


#: Bytes an :class:`EmbeddingCache` keeps in memory in front of its SQLite file (least
#: recently used dropped first): 64 MiB, about 35,000 vectors of 384 float32s.
MEMORY_BYTES = 64 * 1024 * 1024
#: Bytes counted per vector kept in memory besides its data (its key, array header and entry).
ENTRY_OVERHEAD_BYTES = 384
#: Texts a :class:`CachedEmbeddingModel` remembers as embedded outside any spend and not yet
#: charged to one (64-character keys, some 10 MB at the bound).
MAX_UNBILLED = 100_000


def claim_inflight(keys: Sequence[Any], items: Sequence[Any], found: Mapping[Any, Any],
                   inflight: dict[Any, threading.Event],
                   lock: threading.Lock) -> tuple[dict[Any, Any], dict[Any, threading.Event]]:
    """Split the keys not in ``found`` between this caller and the others already computing
    them: ``(mine, theirs)``, where ``mine`` maps each key this caller must compute to its item
    (an event is registered in ``inflight`` for it, to be set when done) and ``theirs`` maps
    each key another thread computes to that thread's event, to wait on. Each key once.
    """
    mine: dict[Any, Any] = {}
    theirs: dict[Any, threading.Event] = {}
    with lock:
        for key, item in zip(keys, items):
            if key in found or key in mine or key in theirs:
                continue
            if key in inflight:
                theirs[key] = inflight[key]
            else:
                mine[key] = item
                inflight[key] = threading.Event()
    return mine, theirs


class EmbeddingCache:
    """Vectors by ``(model_id, text sha256)`` in a SQLite file, the most recently used also in
    memory (at most ``memory_bytes``, each vector counted as its data plus
    :data:`ENTRY_OVERHEAD_BYTES`).

    Args:
        path: the SQLite file; its folder is created. ``":memory:"`` keeps it in memory.
        memory_bytes: bytes kept in memory in front of the file, vectors counted with their
            overhead (0: none).

    Raises:
        StoreError: the file cannot be created or is not a SQLite database (names the path).
    """

    def __init__(self, path: str | Path, *, memory_bytes: int = MEMORY_BYTES) -> None:
        self.path = str(path)
        self._lock = threading.Lock()
        self._memory: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._memory_bytes = 0
        self._memory_limit = max(0, int(memory_bytes))
        self._replies = False  # the replies table made (see get_reply)
        try:
            if self.path != ":memory:":
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(self.path, check_same_thread=False, timeout=60)
            with self._lock:
                if self.path != ":memory:":
                    self._conn.execute("PRAGMA journal_mode=WAL")
                    # a cache: an entry lost to a power cut is asked again, so commits (one per
                    # chat reply) skip the fsync that FULL makes them wait for
                    self._conn.execute("PRAGMA synchronous=NORMAL")
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
        """Return the cached vectors among ``keys`` (text sha256s) as ``{key: float32 (dim,)}``.

        A stored vector that cannot be searched (NaN or infinite values, or all zeros: written
        by a version that did not refuse them) is left out, as if it were not cached, so its
        text is embedded again and the entry replaced; a warning says how many."""
        keys = list(dict.fromkeys(keys))
        found: dict[str, np.ndarray] = {}
        with self._lock:
            missing = []
            for key in keys:
                vector = self._memory.get((model_id, key))
                if vector is None:
                    missing.append(key)
                else:
                    self._memory.move_to_end((model_id, key))
                    found[key] = vector.copy()
            for i in range(0, len(missing), 500):
                part = missing[i : i + 500]
                marks = ",".join("?" * len(part))
                rows = self._conn.execute(
                    f"SELECT text_sha256, dim, vector FROM embeddings WHERE model_id = ? AND text_sha256 IN ({marks})",
                    [model_id, *part],
                ).fetchall()
                unusable = 0
                for key, dim, blob in rows:
                    vector = np.frombuffer(blob, dtype=np.float32, count=dim).copy()
                    if not usable_rows(vector[None, :])[0]:
                        unusable += 1
                        continue
                    found[key] = vector
                    self._remember(model_id, key, vector)
                if unusable:
                    logger.warning("%d cached vectors of %s hold NaN, infinite values or only zeros: their texts "
                                   "are embedded again", unusable, model_id)
        return found

    def _remember(self, model_id: str, key: str, vector: np.ndarray) -> None:
        """Keep a copy of ``vector`` in memory, dropping the least recently used past the limit
        (the caller holds the lock)."""
        if vector.nbytes + ENTRY_OVERHEAD_BYTES > self._memory_limit:
            return
        old = self._memory.pop((model_id, key), None)
        if old is not None:
            self._memory_bytes -= old.nbytes + ENTRY_OVERHEAD_BYTES
        self._memory[(model_id, key)] = vector.copy()
        self._memory_bytes += vector.nbytes + ENTRY_OVERHEAD_BYTES
        while self._memory_bytes > self._memory_limit:
            _, dropped = self._memory.popitem(last=False)
            self._memory_bytes -= dropped.nbytes + ENTRY_OVERHEAD_BYTES

    def put_many(self, model_id: str, items: Iterable[tuple[str, np.ndarray]]) -> None:
        """Store ``(text sha256, vector)`` pairs for ``model_id`` (existing keys are replaced)."""
        pairs = [(key, np.asarray(vec, dtype=np.float32)) for key, vec in items]
        rows = [(model_id, key, int(vec.shape[0]), vec.tobytes()) for key, vec in pairs]
        with self._lock:
            self._conn.executemany("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?, ?)", rows)
            self._conn.commit()
            for key, vec in pairs:
                if usable_rows(vec[None, :])[0]:  # what get_many would not return is not kept in memory
                    self._remember(model_id, key, vec)

    def count(self, model_id: str | None = None) -> int:
        """Number of cached vectors (for one model, or all)."""
        with self._lock:
            if model_id is None:
                return int(self._conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0])
            return int(self._conn.execute("SELECT COUNT(*) FROM embeddings WHERE model_id = ?", [model_id]).fetchone()[0])

    def get_reply(self, key: str) -> str | None:
        """The reply kept under ``key`` (a request's hex sha256, see :func:`reply_key`), or None."""
        with self._lock:
            if not self._replies:
                self._conn.execute(_REPLY_SCHEMA)
                self._conn.commit()
                self._replies = True
            row = self._conn.execute("SELECT reply FROM replies WHERE request_sha256 = ?", [key]).fetchone()
        return None if row is None else str(row[0])

    def put_reply(self, key: str, model_id: str, reply: str) -> None:
        """Keep ``reply`` under ``key`` for ``model_id`` (replacing what was there)."""
        self.get_reply("")  # the table exists
        with self._lock:
            self._conn.execute("INSERT OR REPLACE INTO replies VALUES (?, ?, ?)", [key, model_id, reply])
            self._conn.commit()

    def close(self) -> None:
        """Close the database connection (and drop the vectors kept in memory)."""
        with self._lock:
            self._conn.close()
            self._memory.clear()
            self._memory_bytes = 0


class CachedEmbeddingModel:
    """An :class:`EmbeddingModel` that looks every text up in an :class:`EmbeddingCache` first.

    Only texts the cache lacks reach the wrapped model, each distinct text once, also when
    several threads ask for the same texts at once (a text being embedded by one thread is
    waited for by the others, not sent again). Vectors are stored before returning.

    Counters (safe under threads): ``n_texts`` (texts asked for, repeats included),
    ``n_embedded`` (distinct texts sent to the model), ``n_cache_hits`` (texts answered
    without the model, repeats included), ``n_unique`` (distinct texts asked for), and
    ``embed_seconds`` (time in the model). Over the wrapper's life ``n_unique`` equals
    ``n_embedded`` plus the distinct texts found in the cache (``texts_from_cache`` in
    :meth:`stats`). Remembering which texts were seen costs 32 bytes per distinct text.

    What one piece of work spent (``core.models.spend``): texts embedded outside any open
    spend (ahead of the work that needs them, as ``EvaluationContext.embed_questions_early``
    does) are charged to the first spend that asks for them, as texts it embedded, so the
    evaluations' own costs still add up to what was sent to the model. At most
    :data:`MAX_UNBILLED` such texts are remembered; past that, later ones count as found in the
    cache.

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
        self._lock = threading.Lock()
        self._inflight: dict[str, threading.Event] = {}
        self._seen: set[bytes] = set()
        self._unbilled: set[str] = set()  # keys embedded outside a spend, not yet charged to one

    @property
    def n_unique(self) -> int:
        """Distinct texts asked for so far."""
        with self._lock:
            return len(self._seen)

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
        """Return float32 ``(len(texts), dim)``, embedding only texts not cached yet.

        Raises:
            EmbeddingError: the wrapped model failed or returned vectors that cannot be searched
                (see :func:`~core.models.embeddings.check_vectors`; nothing is cached then; texts
                other threads waited for are then embedded by those threads).
        """
        import time

        texts = list(texts)
        keys = [text_sha256(t) for t in texts]
        found = self.cache.get_many(self.model_id, keys)
        mine, theirs = claim_inflight(keys, texts, found, self._inflight, self._lock)
        if mine:  # a key another thread finished between the look-up and the claim is cached now
            again = self.cache.get_many(self.model_id, list(mine))
            if again:
                found.update(again)
                with self._lock:
                    for key in again:
                        del mine[key]
                        self._inflight.pop(key).set()
        spend = current_spend()
        try:
            if mine:
                start = time.perf_counter()
                vectors = self.model.embed_documents(list(mine.values()))
                elapsed = time.perf_counter() - start
                # whatever the model: nothing that cannot be searched is cached
                check_vectors(np.asarray(vectors, dtype=np.float32), len(mine), self.model_id, self._dimension)
                new = dict(zip(mine.keys(), vectors))
                unbilled: list[str] = []
                if spend is None:  # charged to the first work that asks for them: recorded before
                    # the vectors can be found in the cache, so no reader sees them unrecorded
                    with self._lock:
                        unbilled = list(mine)[:max(0, MAX_UNBILLED - len(self._unbilled))]
                        self._unbilled.update(unbilled)
                try:
                    self.cache.put_many(self.model_id, new.items())
                except BaseException:
                    with self._lock:
                        self._unbilled.difference_update(unbilled)
                    raise
                found.update(new)
                with self._lock:
                    self.embed_seconds += elapsed
                    self.n_embedded += len(mine)
        finally:
            with self._lock:
                for key in mine:
                    self._inflight.pop(key).set()
        if theirs:
            for event in theirs.values():
                event.wait()
            found.update(self.cache.get_many(self.model_id, theirs))
            lost = [k for k in theirs if k not in found]
            if lost:  # the other thread failed: embed them here
                by_key = dict(zip(keys, texts))
                found.update(zip(lost, self.embed_documents([by_key[k] for k in lost])))
        with self._lock:
            self.n_texts += len(texts)
            self.n_cache_hits += len(texts) - sum(1 for k in keys if k in mine)
            self._seen.update(bytes.fromhex(k) for k in keys)
            billed = 0
            if spend is not None and self._unbilled:
                ahead = self._unbilled.intersection(k for k in keys if k not in mine)
                self._unbilled -= ahead
                billed = len(ahead)
        if spend is not None:
            spend.add_embedding(keys, len(mine) + billed)
        if not texts:
            return np.zeros((0, self.embedding_dimension), dtype=np.float32)
        out = np.stack([found[k] for k in keys]).astype(np.float32, copy=False)
        if self._dimension is None:
            self._dimension = int(out.shape[1])
        return out

    @property
    def query_instruction(self) -> str:
        """The wrapped model's query instruction (empty when it has none)."""
        return getattr(self.model, "query_instruction", "") or ""

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query through the cache; returns float32 ``(dim,)``.

        The query is embedded, and cached, as the text :func:`~core.models.embeddings.query_text`
        gives (the model's query instruction, then ``text``), so a query vector is never taken
        for the vector of the same words embedded as a passage.
        """
        return self.embed_documents([query_text(self.model, text)])[0]

    def stats(self) -> dict[str, float]:
        """The counters as a JSON-serialisable dict: ``n_texts``, ``n_embedded``,
        ``n_cache_hits``, ``embed_seconds``, and the report's names ``texts_embedded`` (distinct
        texts sent to the model), ``texts_from_cache`` (distinct texts found in the cache) and
        ``texts_unique`` (distinct texts asked for; the sum of the other two)."""
        with self._lock:
            unique = len(self._seen)
            return {
                "n_texts": self.n_texts, "n_embedded": self.n_embedded,
                "n_cache_hits": self.n_cache_hits, "embed_seconds": round(self.embed_seconds, 3),
                "texts_embedded": self.n_embedded, "texts_from_cache": unique - self.n_embedded,
                "texts_unique": unique,
            }


_REPLY_SCHEMA = """
CREATE TABLE IF NOT EXISTS replies (
    request_sha256 TEXT PRIMARY KEY,
    model_id TEXT NOT NULL,
    reply TEXT NOT NULL
) WITHOUT ROWID
"""


def reply_key(model_id: str, messages: Sequence[Mapping[str, str]], parameters: Mapping[str, Any]) -> str:
    """The hex sha256 naming one chat request: the model id, the messages and the sampling
    parameters, as canonical JSON (keys sorted, UTF-8 kept)."""
    import hashlib
    import json

    text = json.dumps({"model": model_id, "messages": [dict(m) for m in messages], "parameters": dict(parameters)},
                      sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class CachedChatModel:
    """A ``ChatModel`` whose replies are kept in the embedding cache's SQLite file, by
    :func:`reply_key` of (model, messages, parameters), so a rerun of the same configuration
    makes no calls; threads sending the same request at once make one call. Failed calls are
    not kept.

    Counters (safe under threads): ``n_calls`` (requests sent to the model) and
    ``n_cache_hits`` (replies read from the cache). Other attributes (``usage``, ...) are the
    wrapped model's.

    Args:
        model: the chat model.
        cache: the :class:`EmbeddingCache` whose file also holds the replies.
    """

    def __init__(self, model: ChatModel, cache: EmbeddingCache) -> None:
        self.model = model
        self.model_id = model.model_id
        self.cache = cache
        self.n_calls = 0
        self.n_cache_hits = 0
        self._lock = threading.Lock()
        self._inflight: dict[str, threading.Event] = {}
        self.sample = 0
        cache.get_reply("")  # makes the replies table

    def sampled(self, sample: int) -> "CachedChatModel":
        """This model asked for repeat ``sample`` of a request (``0``: the usual one): its replies
        are kept apart by that number (part of the request's key), so a judge asked the same
        question N times makes N calls once and none on a rerun. Shares the cache and counters'
        model."""
        other = CachedChatModel.__new__(CachedChatModel)
        other.__dict__.update(self.__dict__)
        other.sample = int(sample)
        return other

    def cached(self, messages: Sequence[Mapping[str, str]], *, max_completion_tokens: int | None = None,
               temperature: float | None = None) -> bool:
        """Whether the reply to this request is in the cache (nothing is sent)."""
        parameters = self._parameters(max_completion_tokens, temperature)
        return self.cache.get_reply(reply_key(self.model_id, check_messages(messages), parameters)) is not None

    def _parameters(self, max_completion_tokens: int | None, temperature: float | None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "max_completion_tokens": max_completion_tokens if max_completion_tokens is not None
            else getattr(self.model, "max_completion_tokens", None),
            "temperature": temperature if temperature is not None else getattr(self.model, "temperature", None),
        }
        if self.sample:
            out["sample"] = self.sample
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["model"], name)

    def chat(self, messages: Sequence[Mapping[str, str]], *, max_completion_tokens: int | None = None,
             temperature: float | None = None) -> str:
        """The cached reply to ``messages``, or the model's (then cached).

        Raises:
            ConfigError: malformed ``messages`` (checked before the cache is read).
            GenerationError: as the wrapped model's ``chat``.
        """
        parameters = self._parameters(max_completion_tokens, temperature)
        key = reply_key(self.model_id, check_messages(messages), parameters)
        while True:
            row = self.cache.get_reply(key)
            if row is not None:
                with self._lock:
                    self.n_cache_hits += 1
                spend = current_spend()
                if spend is not None:
                    spend.add_cached_reply()
                return row
            with self._lock:
                waiting = self._inflight.get(key)
                if waiting is None:  # this thread asks; others with the same request wait for it
                    self._inflight[key] = threading.Event()
            if waiting is None:
                break
            waiting.wait()  # then read the cache again (asked here when that call failed)
        try:
            reply = self.model.chat(messages, max_completion_tokens=max_completion_tokens, temperature=temperature)
            self.cache.put_reply(key, self.model_id, reply)
            with self._lock:
                self.n_calls += 1
            return reply
        finally:
            with self._lock:
                self._inflight.pop(key).set()

    def stats(self) -> dict[str, int]:
        """``{"chat_calls", "replies_from_cache"}``."""
        with self._lock:
            return {"chat_calls": self.n_calls, "replies_from_cache": self.n_cache_hits}


_RERANK_SCHEMA = """
CREATE TABLE IF NOT EXISTS rerank_scores (
    model_key TEXT NOT NULL,
    query_sha256 TEXT NOT NULL,
    passage_sha256 TEXT NOT NULL,
    score REAL NOT NULL,
    cost_ms REAL NOT NULL,
    PRIMARY KEY (model_key, query_sha256, passage_sha256)
) WITHOUT ROWID
"""

#: Pairs a :class:`CachedReranker` sends to the model in one call (and stores in one commit):
#: progress is reported, and a stopped run loses, at most this many pairs.
RERANK_CHUNK = 32
#: Passages of one query looked up in the cache file per statement (SQLite limits its parameters).
_LOOKUP_ROWS = 500


def rerank_model_key(reranker: Reranker) -> str:
    """What a reranker's cached scores are kept under: its ``model_id``, and, when it has one,
    the sha256 of its model file (``model_sha256``) and its window (``max_input_tokens``), so
    scores of another file or another truncation are never taken for its own."""
    key = str(reranker.model_id)
    sha = getattr(reranker, "model_sha256", None)
    if sha:
        key += f"@sha256:{sha}"
    window = getattr(reranker, "max_input_tokens", None)
    if window:
        key += f"@{int(window)}tokens"
    return key


class CachedReranker:
    """A ``Reranker`` whose scores are kept in the embedding cache's SQLite file, by (model,
    query, passage), so no pair is scored twice by the same model, in one run or across runs.

    Keys are :func:`rerank_model_key` (the model id, its file's sha256 and window), the sha256
    of the query and the sha256 of the passage text; a row holds the score and the cost
    measured when it was computed (:class:`~core.models.rerank.PairScore`), so a rerun from the
    cache reports the time a user waits as the first run measured it. Pairs missing from the
    cache go to the model :data:`RERANK_CHUNK` at a time (pairs of many queries together,
    through :func:`~core.models.rerank.score_pairs`), each chunk stored in one commit. Threads
    asking for the same pair at once score it once (the others wait for it, as in
    :class:`CachedEmbeddingModel`). Nothing is kept in memory beyond one call's pairs.
    Failed calls store nothing.

    Counters (safe under threads): ``n_pairs`` (pairs asked for, repeats included),
    ``n_scored`` (pairs sent to the model), ``n_cache_hits`` (pairs answered from the cache)
    and ``score_seconds`` (time in the model). Other attributes (``n_truncated``, ...) are the
    wrapped reranker's.

    Args:
        reranker: the ``Reranker`` to wrap.
        cache: the :class:`EmbeddingCache` whose file also holds the scores.

    Raises:
        StoreError: the cache file cannot be written.
    """

    def __init__(self, reranker: Reranker, cache: EmbeddingCache) -> None:
        self.reranker = reranker
        self.model_id = reranker.model_id
        self.model_key = rerank_model_key(reranker)
        self.cache = cache
        self.n_pairs = 0
        self.n_scored = 0
        self.n_cache_hits = 0
        self.score_seconds = 0.0
        self._lock = threading.Lock()
        self._inflight: dict[tuple[str, str], threading.Event] = {}
        try:
            with cache._lock:
                cache._conn.execute(_RERANK_SCHEMA)
                cache._conn.commit()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot create the rerank cache in {cache.path}: {exc}") from exc

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["reranker"], name)

    def __repr__(self) -> str:
        return f"CachedReranker({self.model_key!r})"

    def verify(self) -> None:
        """The wrapped reranker's ``verify``.

        Raises:
            ConfigError: it cannot run, and why.
        """
        self.reranker.verify()

    def _lookup(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], tuple[float, float]]:
        """``{(query sha256, passage sha256): (score, cost_ms)}`` for the keys the file holds."""
        by_query: dict[str, list[str]] = {}
        for q, p in dict.fromkeys(keys):
            by_query.setdefault(q, []).append(p)
        found: dict[tuple[str, str], tuple[float, float]] = {}
        with self.cache._lock:
            for q, passages in by_query.items():
                for i in range(0, len(passages), _LOOKUP_ROWS):
                    part = passages[i : i + _LOOKUP_ROWS]
                    rows = self.cache._conn.execute(
                        "SELECT passage_sha256, score, cost_ms FROM rerank_scores WHERE model_key = ? AND "
                        f"query_sha256 = ? AND passage_sha256 IN ({','.join('?' * len(part))})",
                        [self.model_key, q, *part],
                    ).fetchall()
                    for p, score, cost in rows:
                        found[(q, p)] = (float(score), float(cost))
        return found

    def missing(self, pairs: Sequence[tuple[str, str]]) -> list[bool]:
        """For each ``(query, passage)`` pair, True when the cache lacks its score (nothing is
        scored)."""
        keys = [(text_sha256(q), text_sha256(p)) for q, p in pairs]
        found = self._lookup(keys)
        return [key not in found for key in keys]

    def _score(self, todo: dict[tuple[str, str], tuple[str, str]],
               on_scored: Callable[[int], Any] | None) -> dict[tuple[str, str], tuple[float, float]]:
        """Score ``todo`` (key -> pair) with the model, a chunk at a time, storing each chunk."""
        import time

        out: dict[tuple[str, str], tuple[float, float]] = {}
        items = list(todo.items())
        for i in range(0, len(items), RERANK_CHUNK):
            part = items[i : i + RERANK_CHUNK]
            started = time.perf_counter()
            scores = score_pairs(self.reranker, [pair for _, pair in part])
            elapsed = time.perf_counter() - started
            cost = elapsed * 1000.0 / len(part)
            rows = [(self.model_key, q, p, float(s), cost) for ((q, p), _), s in zip(part, scores)]
            try:
                with self.cache._lock:
                    self.cache._conn.executemany("INSERT OR REPLACE INTO rerank_scores VALUES (?, ?, ?, ?, ?)", rows)
                    self.cache._conn.commit()
            except sqlite3.Error as exc:
                raise StoreError(f"cannot write the rerank cache in {self.cache.path}: {exc}") from exc
            for (key, _), s in zip(part, scores):
                out[key] = (float(s), cost)
            with self._lock:
                self.n_scored += len(part)
                self.score_seconds += elapsed
            if on_scored is not None:
                on_scored(len(part))
        return out

    def scores(self, pairs: Sequence[tuple[str, str]], *,
               on_scored: Callable[[int], Any] | None = None) -> list[Any]:
        """Score ``(query, passage)`` pairs, from the cache where it holds them.

        Args:
            pairs: ``(query, passage)`` tuples of any queries.
            on_scored: called with the number of pairs after each chunk the model scored here
                (for progress; pairs found in the cache are not reported).

        Returns:
            One :class:`~core.models.rerank.PairScore` per pair, in input order.

        Raises:
            RerankError: the model failed (pairs other threads waited for are then scored by
                those threads).
            StoreError: the cache file cannot be written.
        """
        pairs = [(str(q), str(p)) for q, p in pairs]
        keys = [(text_sha256(q), text_sha256(p)) for q, p in pairs]
        found = self._lookup(keys)
        mine, theirs = claim_inflight(keys, pairs, found, self._inflight, self._lock)
        try:
            new = self._score(mine, on_scored) if mine else {}
        finally:
            with self._lock:
                for key in mine:
                    self._inflight.pop(key).set()
        if theirs:
            for event in theirs.values():
                event.wait()
            found.update(self._lookup(list(theirs)))
            lost = [k for k in theirs if k not in found]
            if lost:  # the other thread failed: score them here
                by_key = dict(zip(keys, pairs))
                again = self.scores([by_key[k] for k in lost], on_scored=on_scored)
                found.update((k, (s.score, s.cost_ms)) for k, s in zip(lost, again))
        with self._lock:
            self.n_pairs += len(pairs)
            self.n_cache_hits += sum(1 for k in keys if k not in mine)
        out = []
        for key in keys:
            if key in new:
                score, cost = new[key]
                out.append(PairScore(score, cost, cached=False))
            else:
                score, cost = found[key]
                out.append(PairScore(score, cost, cached=True))
        return out

    def score_pairs(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """The scores of :meth:`scores`, one float per pair, in input order.

        Raises:
            RerankError: the model failed.
            StoreError: the cache file cannot be written.
        """
        return [s.score for s in self.scores(pairs)]

    def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        """Score each passage against ``query`` (the ``Reranker`` method), through the cache.

        Raises:
            RerankError: the model failed.
            StoreError: the cache file cannot be written.
        """
        return self.score_pairs([(query, p) for p in passages])

    def stats(self) -> dict[str, float]:
        """``{"pairs", "pairs_scored", "pairs_from_cache", "score_seconds"}``: pairs asked for,
        sent to the model, answered from the cache, and seconds in the model."""
        with self._lock:
            return {"pairs": self.n_pairs, "pairs_scored": self.n_scored, "pairs_from_cache": self.n_cache_hits,
                    "score_seconds": round(self.score_seconds, 3)}
