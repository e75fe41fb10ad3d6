"""Evaluating one RAG configuration end to end, without repeating work.

``run_single_evaluation(configuration, corpus, golden, context=...)`` chunks the corpus,
embeds and indexes it (reusing a collection whose indexing parameters match, and the
embedding cache, so a text is embedded once per model across a whole study), retrieves for
every question, generates answers and scores retrieval and answers. A configuration already
evaluated on the same corpus and golden file returns its stored result. A failure is returned
as a result with ``status="failed"`` and its error, never raised, so a study goes on. Once the
context's ``stop`` event is set (a stopped run), an evaluation ends at its next step by raising
:class:`EvaluationInterrupted`, and so does one that fails after it was set: an interrupted
evaluation is no failed one.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from core.chunking import CHAT_METHODS, get_chunker
from core.documents import corpus_fingerprint, load_documents
from core.errors import ConfigError, RagtuneError, is_transient
from core.evaluation.answers import evaluate_answers
from core.evaluation.indexing import (EARLY_EMBED_BATCH, build_index, cached_model, collection_for, open_cache,
                                      store_config)
from core.evaluation.keyword_index import indexing_key, keyword_indexed_space, searches_by_keyword
from core.evaluation.pipeline import EXTRACTIVE, NOT_APPLICABLE, PipelineSettings, applies
from core.evaluation.result import EvaluationResult
from core.evaluation.retrieval import choose_rank_grain
from core.evaluation.waits import question_waits, time_first_stage, time_query_embeddings, wait_timings
from core.inputs import shown_address
from core.metrics.answers import ALL_METRICS
from core.metrics.retrieval import DEFAULT_KS as KS, GRAINS, evaluate_rankings  # the one home of the rank cut-offs
from core.metrics.retrieval import metric_names
from core.models import CachedChatModel
from core.models.cache import CachedReranker
from core.models.describe import describe_models
from core.models.embeddings import query_text
from core.models.spend import current_spend, spending
from core.optimization.configuration import Configuration
from core.reports.tables import metric_label
from core.vectorstores import MilvusLiteConfig, backend_name, describe_store, get_vector_store
from core.vectorstores.fusion import hybrid_window
from core.vectorstores.legs import LegMemo
from core.vectorstores.memo import SearchMemo
from core.vectorstores.milvus import MilvusVectorStore, open_client
from core.vectorstores.rerank import RerankingStore
from core.workspace import Workspace

if TYPE_CHECKING:
    from core.chunking.base import Chunker
    from core.golden.types import GoldenSet
    from core.models.chat import ChatModel
    from core.models.embeddings import EmbeddingModel
    from core.optimization.space import SearchSpace
    from core.vectorstores.base import SearchSetup, VectorStore
    from core.vectorstores.milvus import MilvusConfig
    from core.vectorstores.pgvector import PGVectorConfig

logger = logging.getLogger(__name__)

#: Texts embedded between two looks at the context's ``stop`` event while a collection is built,
#: unless the model sends more in one request or forward pass (its ``batch_size``): about a
#: second of a local model on a slow machine.
STOP_CHECK_TEXTS = 32


class EvaluationInterrupted(KeyboardInterrupt):
    """An evaluation ended early because its run was stopped (the context's ``stop`` event):
    nothing failed, so nothing is recorded. A ``KeyboardInterrupt``, so no handler of failures
    (``except Exception``) takes it for one."""


#: Retrieval metric names a single evaluation reports (at its finest labelled grain).
RETRIEVAL_METRIC_NAMES: tuple[str, ...] = metric_names(KS)
#: The mean of the answer metrics a configuration computed (ai4rag's default objective; see
#: ``core.metrics.answers``, ``overall_score``).
OVERALL_SCORE = "overall_score"


def check_objective(name: str, *, has_judge: bool | None = None) -> str:
    """Check that ``name`` is a metric :func:`run_single_evaluation` reports, so a study can
    maximise it: a retrieval metric (:data:`RETRIEVAL_METRIC_NAMES`), an answer metric
    (``core.metrics.answers.ALL_METRICS``: ``unitxt.*``, ``judge.*``) or
    :data:`OVERALL_SCORE` (the mean of the answer metrics computed).

    Args:
        name: the metric.
        has_judge: whether a judge model is configured (False: a ``judge.*`` metric is
            refused, since nothing would compute it); None skips that check.

    Returns:
        ``name``.

    Raises:
        ConfigError: an unknown name, with the nearest known one, or a judge metric without a
            judge.
    """
    import difflib

    if isinstance(name, str):
        name = metric_label(name)  # success@k, the measure's name before found@k
    known = (*RETRIEVAL_METRIC_NAMES, *ALL_METRICS, OVERALL_SCORE)
    if name not in known:
        near = difflib.get_close_matches(str(name), known, n=1, cutoff=0.5)
        tail = f"; did you mean {near[0]!r}?" if near else ""
        raise ConfigError(f"unknown objective metric {name!r}{tail} (known: {', '.join(known)})")
    if has_judge is False and name.startswith("judge."):
        raise ConfigError(f"the objective {name} needs a judge model (--judge MODEL, or RAGTUNE_JUDGE_MODEL)")
    return name


@dataclass
class Corpus:
    """Documents loaded once and shared by every evaluation of a study.

    Attributes:
        docs_dir: the folder they came from.
        documents: the ``LoadedDocument`` objects.
        skipped: files that did not load (``SkippedFile``).
        fingerprint: sha256 over the documents' ids and contents.
    """

    docs_dir: str
    documents: list[Any]
    skipped: list[Any] = field(default_factory=list)
    fingerprint: str = ""

    @classmethod
    def load(
        cls,
        docs_dir: str | Path,
        *,
        cache_dir: str | Path | None = None,
        connection_string: str | None = None,
        credential: Any = None,
        endpoint_url: str | None = None,
    ) -> "Corpus":
        """Load every document of ``docs_dir`` (see ``core.documents.load_documents``).

        Args:
            docs_dir: a local folder, or the address of a remote one (``s3://bucket/docs``,
                ``https://<account>.blob.core.windows.net/<container>/docs``, a path-style
                Azurite URL), downloaded first (see ``core.inputs.fetch_folder``). Document
                ids and the fingerprint are the same as for a local copy of the folder.
            cache_dir: where a remote folder is downloaded (default
                ``<Settings.out_dir>/inputs``).
            connection_string, credential, endpoint_url: how to reach a remote folder
                (defaults from ``core.settings.Settings``; boto3 reads ``AWS_ENDPOINT_URL``).

        Returns:
            The corpus; ``docs_dir`` is the folder as given (a remote address without its
            query string).

        Raises:
            DocumentError: the folder is missing (a remote prefix with nothing below it),
                cannot be downloaded, or holds no loadable document.
            ConfigError: an address that cannot be read.
        """
        loaded = load_documents(docs_dir, cache_dir=cache_dir, connection_string=connection_string,
                                credential=credential, endpoint_url=endpoint_url)
        return cls(shown_address(docs_dir), loaded.documents, loaded.skipped, corpus_fingerprint(loaded.documents))


def _leg_memo() -> Any:
    """A new ``core.vectorstores.legs.LegMemo`` with its default bounds."""
    return LegMemo()


@dataclass
class EvaluationContext:
    """What every evaluation of a study shares: models, stores, caches and counters.

    Attributes:
        out_dir: working folder: ``cache/embeddings.sqlite``, ``milvus.db`` (Milvus Lite) and
            stored results under ``results/``.
        embedding_models: embedding model id -> ``EmbeddingModel`` (ids as in the search space).
        chat_models: foundation model id -> ``ChatModel``; :data:`EXTRACTIVE` needs no entry.
        vector_store_config: the store's configuration (default Milvus Lite in ``out_dir``).
        vector_store_configs: backend name -> configuration, for configurations whose
            ``vector_store`` parameter names a backend (``milvus-lite`` defaults to
            ``out_dir/milvus.db``).
        judge: a ``ChatModel`` judging answers, or None.
        rerankers: reranker id -> ``Reranker``, for configurations whose ``reranker``
            parameter names one. Each is used through :meth:`cached_reranker`: its scores are
            kept in the working folder's cache, as ``evaluate`` keeps them.
        answer_metrics: answer metric names (None: the unitxt metrics, plus the judge's when
            a judge is given).
        max_workers: questions answered at once.
        keyword_indexes: indexing keys (``core.evaluation.keyword_index.indexing_key``) of
            the collections keyword or hybrid configurations of the space search; a
            vector-only configuration builds its collection with a keyword index only when
            its key is among them. None (the space is not known): every collection gets one.
        cache_replies: keep chat and judge replies in the cache (``<out_dir>/cache``), keyed by
            model, messages and parameters, so a rerun makes no calls; False asks afresh.
        with_answers: generate and score answers; False evaluates retrieval only (cheaper,
            for benchmarks and retrieval objectives).
        measure_waits: measure the time a user waits per question (``core.evaluation.waits``:
            each question embedded, searched and reranked alone, timed), into the result's
            ``timings_ms`` and ``per_question["wait_ms"]``; False leaves them out (each
            question is then searched only once, batched).
        legs: the run's ``core.vectorstores.legs.LegMemo``, handed to the Milvus Lite stores
            :meth:`vector_store` makes, so evaluations sharing a collection search each leg
            (dense, BM25) of a question and read each chunk once; None searches afresh every
            time. Not for Milvus servers or PostgreSQL, which other processes (the Durable
            Functions' evaluations) may write to meanwhile.
        stop: set when the run stops (Ctrl-C): the evaluations running end at their next step
            (:meth:`check_stop`) and record nothing. None: they run to their end.
        collections_built: collections created (counter).
        n_embedded: chunk texts sent to an embedding model while indexing (counter, all
            models; questions and the extractive baseline's sentences are counted by each
            cached model's own ``n_embedded``).
    """

    out_dir: Path
    embedding_models: dict[str, Any]
    chat_models: dict[str, Any] = field(default_factory=dict)
    vector_store_config: Any = None
    vector_store_configs: dict[str, Any] = field(default_factory=dict)
    judge: Any = None
    answer_metrics: list[str] | None = None
    rerankers: dict[str, Any] = field(default_factory=dict)
    max_workers: int = 10
    keyword_indexes: frozenset[str] | None = None
    with_answers: bool = True
    measure_waits: bool = True
    stop: threading.Event | None = None
    collections_built: int = 0
    n_embedded: int = 0
    cache_replies: bool = True
    legs: Any = field(default_factory=_leg_memo)
    _cache: Any = None
    _cached_models: dict[str, Any] = field(default_factory=dict)
    _cached_chats: dict[str, Any] = field(default_factory=dict)
    _cached_rerankers: dict[str, Any] = field(default_factory=dict)
    _query_ms: dict[tuple[str, str], float] = field(default_factory=dict)
    _collection_locks: dict[str, threading.Lock] = field(default_factory=dict)
    _lite_clients: dict[str, Any] = field(default_factory=dict)
    _early_embeddings: dict[tuple[str, str], threading.Thread] = field(default_factory=dict)
    _new_lite: set[str] = field(default_factory=set)
    _chunks: dict[str, list[Any]] = field(default_factory=dict)
    _chunk_locks: dict[str, threading.Lock] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def vector_store(self, model: EmbeddingModel, config: MilvusLiteConfig | MilvusConfig | PGVectorConfig,
                     collection: str, *, keyword_index: bool = True, memo: bool = True) -> Any:
        """The store of ``collection`` (``core.vectorstores.get_vector_store``; a collection it
        creates gets a keyword index when ``keyword_index``); Milvus Lite stores share one
        client per database folder, since only one client may open it, so evaluations in
        threads of one process use the same database, and the run's leg memo (``legs``),
        since only this process writes to that database, unless ``memo`` is False (every
        search then asks the database, as a user's search does)."""
        if not isinstance(config, MilvusLiteConfig):
            return get_vector_store(model, config, collection, keyword_index=keyword_index)

        client = self._lite_client(config, open_client)
        return MilvusVectorStore(model, config, collection, client=client, keyword_index=keyword_index,
                                 legs=self.legs if memo else None)

    def _lite_client(self, config: MilvusLiteConfig, open_client: Any, *, early: bool = False) -> Any:
        """The shared client of Milvus Lite database ``config.uri``, opened by the first thread
        that asks (the others wait for it, without holding the context's lock meanwhile); a
        failed open is forgotten, so the next call tries again. A thread that waited for an
        early open (``early``: the background one of :meth:`open_store_early`) which failed
        opens the database again itself, once: its own error is the one raised."""
        from concurrent.futures import Future

        with self._lock:
            future = self._lite_clients.get(config.uri)
            opener = future is None
            if opener:
                future = self._lite_clients[config.uri] = Future()
                future.early = early  # type: ignore[attr-defined]
                if not Path(config.uri).exists():
                    self._new_lite.add(config.uri)
        if not opener and getattr(future, "early", False):
            try:
                return future.result()
            except Exception as exc:  # noqa: BLE001 - opened again below, and that error raised
                logger.info("opening %s early failed (%s); opening it again", config.uri, exc)
                return self._lite_client(config, open_client)
        if opener:
            try:
                future.set_result(open_client(config))
            except BaseException as exc:
                with self._lock:  # forgotten, unless close() and a newer open replaced it meanwhile
                    if self._lite_clients.get(config.uri) is future:
                        del self._lite_clients[config.uri]
                future.set_exception(exc)
                raise
        return future.result()

    def open_store_early(self) -> None:
        """Start opening the default store's database in a background thread, when it is Milvus
        Lite (its server takes a while to start), so it opens while the documents load; the
        first :meth:`vector_store` then waits for it. An open that fails is tried again by the
        evaluation that needs the database (waiting for it or coming later), and that try's
        error is the one raised."""
        config = self.vector_store_config
        if not isinstance(config, MilvusLiteConfig):
            return

        def open_now() -> None:
            try:
                self._lite_client(config, open_client, early=True)
            except Exception as exc:  # noqa: BLE001 - the evaluation that needs it opens it again
                logger.debug("opening %s early failed (%s); the first evaluation opens it again", config.uri, exc)

        threading.Thread(target=open_now, name="ragtune-open-store", daemon=True).start()

    def new_store_opening(self, config: MilvusLiteConfig | MilvusConfig | PGVectorConfig) -> bool:
        """True when ``config`` is a Milvus Lite database this context is still opening and
        that did not exist before this context opened it: no collection in it can be reused
        (those this context built since have their vectors in the embedding cache), so an
        evaluation can embed its chunks while the database opens."""
        if not isinstance(config, MilvusLiteConfig):
            return False
        with self._lock:
            future = self._lite_clients.get(config.uri)
            return future is not None and not future.done() and config.uri in self._new_lite

    def embed_questions_early(self, questions: Sequence[str], model_ids: Iterable[str]) -> None:
        """Start embedding the golden questions with each of ``model_ids`` in a background
        thread (through the embedding cache, as the searches embed them: ``query_text``), so
        that they are embedded while the documents load, are chunked and indexed; an evaluation
        that needs them meanwhile waits for that very request (the cache's in-flight texts).
        The same questions and model are started once per context. Only a space of one
        embedding model is embedded early: every evaluation then uses that model, while with
        several the budget or a model pre-selection may never evaluate some of them. A model that
        is not configured is skipped (its evaluations fail with the reason); a failure here is
        logged, and the evaluation that needs the vectors embeds them itself and raises its own
        error. The texts are charged to the first evaluation that asks for them (see
        ``core.models.CachedEmbeddingModel``), as if it had embedded them itself.

        Args:
            questions: the question texts (order kept; duplicates embedded once).
            model_ids: the embedding model ids of the space.
        """
        texts = list(dict.fromkeys(questions))
        models = list(dict.fromkeys(str(m) for m in model_ids))
        if not texts or len(models) != 1 or models[0] not in self.embedding_models:
            return
        key = (models[0], hashlib.sha256("\x00".join(texts).encode("utf-8")).hexdigest())
        with self._lock:
            if key in self._early_embeddings:
                return
            model = self._embedding_model_locked(models[0])

            def embed() -> None:
                try:
                    model.embed_documents([query_text(model, text) for text in texts])
                except Exception as exc:  # noqa: BLE001 - the evaluation embeds them again and raises
                    logger.info("embedding the questions early with %s failed (%s); the evaluations embed them",
                                model.model_id, exc)

            thread = self._early_embeddings[key] = threading.Thread(target=embed, name="ragtune-embed-questions",
                                                                    daemon=True)
        thread.start()

    def fit_to_space(self, space: SearchSpace) -> None:
        """Set what depends on the study's search space (a ``core.optimization.SearchSpace``):
        ``keyword_indexes`` (vector-only collections skip BM25) and the leg memo's
        ``fetch_depth`` (:func:`widest_leg`: a leg's first search is deep enough for every
        configuration's)."""
        self.keyword_indexes = keyword_indexed_space(space)
        if self.legs is not None:
            self.legs.fetch_depth = widest_leg(space.valid_configurations())

    def needs_keyword_index(self, configuration: Mapping[str, Any]) -> bool:
        """True when ``configuration``'s collection needs a keyword index: it searches by
        keyword, or a keyword or hybrid configuration of the space shares its collection (see
        ``keyword_indexes``)."""
        if searches_by_keyword(configuration) or self.keyword_indexes is None:
            return True
        return indexing_key(configuration) in self.keyword_indexes

    def stopped(self) -> bool:
        """Whether the run was stopped (:attr:`stop` is set)."""
        return self.stop is not None and self.stop.is_set()

    def check_stop(self) -> None:
        """Raise :class:`EvaluationInterrupted` once the run was stopped (:attr:`stop` is set).

        Raises:
            EvaluationInterrupted: the run was stopped.
        """
        if self.stopped():
            raise EvaluationInterrupted("the run was stopped")

    def close(self) -> None:
        """Close the shared Milvus Lite clients (the next evaluation opens them again) and empty
        the leg memo (another process may write to the databases once they are closed)."""
        with self._lock:
            opening, self._lite_clients = list(self._lite_clients.values()), {}
        if self.legs is not None:
            self.legs.clear()
        for future in opening:  # one still opening is waited for, then closed
            if future.exception() is None:
                future.result().close()

    def chunks(self, corpus: "Corpus", chunker: Chunker) -> list[Any]:
        """The corpus's chunks by ``chunker``, chunked once per chunking and kept for the
        study's other configurations (one list per distinct chunking of the space)."""
        key = json.dumps([corpus.fingerprint, chunker.name, chunker.params()], sort_keys=True, default=str)
        with self._lock:
            lock = self._chunk_locks.setdefault(key, threading.Lock())
        with lock:  # one thread chunks, the others wait for its chunks
            if key not in self._chunks:
                self._chunks[key] = [c for doc in corpus.documents for c in chunker.chunk([doc])]
            return self._chunks[key]

    def collection_lock(self, name: str) -> threading.Lock:
        """The lock of collection ``name`` (one per store and collection), held while it is
        checked and built, so evaluations in threads that share a chunking build it once."""
        with self._lock:
            return self._collection_locks.setdefault(name, threading.Lock())

    @property
    def workspace(self) -> Workspace:
        """The working folder's paths (``core.workspace.Workspace`` of ``out_dir``)."""
        return Workspace.at(self.out_dir)

    def _embedding_cache(self) -> Any:
        if self._cache is None:
            self._cache = open_cache(self.workspace)
        return self._cache

    def cached_chat(self, model: ChatModel | None) -> Any:
        """``model`` (a ``ChatModel``) with its replies cached (``CachedChatModel``), or
        ``model`` itself when ``cache_replies`` is False or it is None."""
        if model is None or not self.cache_replies:
            return model
        with self._lock:
            if model.model_id not in self._cached_chats:
                self._cached_chats[model.model_id] = CachedChatModel(model, self._embedding_cache())
            return self._cached_chats[model.model_id]

    def cached_reranker(self, name: str) -> Any:
        """Reranker ``name`` with its scores kept in the working folder's cache
        (``core.models.cache.CachedReranker`` over ``cache/embeddings.sqlite``, the file
        ``evaluate`` keeps its scores in): one per reranker and context, so configurations
        that differ only after the first stage, and a rerun, score each (query, passage) pair
        once. A reranker given already cached is used as it is.

        Raises:
            ConfigError: no such reranker is configured.
        """
        with self._lock:
            if name not in self._cached_rerankers:
                if name not in self.rerankers:
                    known = ", ".join(sorted(self.rerankers)) or "none"
                    raise ConfigError(f"reranker {name!r} is not configured (configured: {known})")
                raw = self.rerankers[name]
                self._cached_rerankers[name] = (raw if isinstance(raw, CachedReranker)
                                                else CachedReranker(raw, self._embedding_cache()))
            return self._cached_rerankers[name]

    def query_embedding_ms(self, model: Any, questions: Sequence[str]) -> list[float]:
        """The milliseconds ``model`` takes to embed each question alone
        (``core.evaluation.waits.time_query_embeddings``), measured once per model and question
        in this context and remembered (the time does not depend on the configuration).

        Raises:
            whatever the model raises.
        """
        with self._lock:
            todo = list(dict.fromkeys(q for q in questions if (model.model_id, q) not in self._query_ms))
        if todo:
            measured = dict(zip(todo, time_query_embeddings(model, todo)))
            with self._lock:
                for q, ms in measured.items():
                    self._query_ms.setdefault((model.model_id, q), ms)
        with self._lock:
            return [self._query_ms[(model.model_id, q)] for q in questions]

    def reply_stats(self) -> dict[str, int]:
        """``{"chat_calls", "replies_from_cache"}`` over the cached chat and judge models."""
        with self._lock:
            stats = [m.stats() for m in self._cached_chats.values()]
        return {k: sum(st[k] for st in stats) for k in ("chat_calls", "replies_from_cache")}

    def embedding_model(self, model_id: str) -> Any:
        """The cached (``CachedEmbeddingModel``) embedding model ``model_id``.

        Raises:
            ConfigError: no such model is configured.
        """
        with self._lock:
            return self._embedding_model_locked(model_id)

    def _embedding_model_locked(self, model_id: str) -> Any:
        """:meth:`embedding_model`, for a caller holding the context's lock."""
        if model_id not in self._cached_models:
            if model_id not in self.embedding_models:
                known = ", ".join(sorted(self.embedding_models)) or "none"
                raise ConfigError(f"embedding model {model_id!r} is not configured (configured: {known})")
            self._cached_models[model_id] = cached_model(self.embedding_models[model_id], self.workspace,
                                                         self._embedding_cache())
        return self._cached_models[model_id]

    def store_config(self, backend: str | None = None) -> Any:
        """The configuration of ``backend`` (None: the context's own store; Milvus Lite in
        ``out_dir/milvus.db`` by default).

        Raises:
            ConfigError: a backend without a configuration.
        """
        default = store_config(self.vector_store_config, self.workspace)
        if backend is None or backend in NOT_APPLICABLE or backend_name(default) == backend:
            return default
        if backend in self.vector_store_configs:
            return self.vector_store_configs[backend]
        if backend == "milvus-lite":
            return store_config(None, self.workspace)
        known = ", ".join(sorted({backend_name(default), *self.vector_store_configs}))
        raise ConfigError(f"vector store {backend!r} is not configured (configured: {known})")


def _applies(value: Any) -> bool:
    return applies(value)


def _result_path(context: EvaluationContext, corpus: Corpus, golden: GoldenSet, key: str) -> Path:
    what = "retrieval"
    if context.with_answers:  # answers also depend on who judges them and on which metrics
        what = f"answers\0{getattr(context.judge, 'model_id', '')}\0{','.join(context.answer_metrics or [])}"
    scope = hashlib.sha256(f"{corpus.fingerprint}\0{golden.sha256}\0{what}".encode()).hexdigest()[:16]
    return context.workspace.results(scope) / f"{key}.json"


def _models(settings: PipelineSettings, context: EvaluationContext, model: EmbeddingModel) -> dict[str, Any]:
    """The descriptions of the embedding model and the reranker a configuration uses, by model
    id (``core.models.describe``: source, revision, weight files' sha256)."""
    return describe_models([model, context.rerankers.get(settings.reranker) if settings.reranker else None])


def _with_reranker(store: VectorStore, settings: PipelineSettings, context: EvaluationContext) -> Any:
    """``store``, or ``store`` followed by the configuration's reranker (``reranker`` not
    ``none``; the first stage fetches ``retrieval_depth`` results), its scores read from and
    kept in the context's cache (:meth:`EvaluationContext.cached_reranker`).

    Raises:
        ConfigError: a reranker that is not configured.
    """
    name = settings.reranker
    if name is None:
        return store
    return RerankingStore(store, context.cached_reranker(name), settings.retrieval_depth)


def leg_depth(configuration: Mapping[str, Any]) -> int:
    """How deep the search of ``configuration`` fetches each leg (dense or BM25) of a query:
    the first stage's depth (``number_of_chunks``, or with a reranker its ``retrieval_depth``,
    ``RERANK_DEPTH`` by default; see :class:`core.evaluation.pipeline.PipelineSettings`),
    widened for hybrid search to ``core.vectorstores.fusion.hybrid_window``.

    Raises:
        ConfigError: bad search settings (as ``SearchSetup``).
    """
    settings = PipelineSettings.of(configuration)
    k = settings.first_stage_depth
    setup = settings.search_setup()
    return hybrid_window(k, setup) if setup.search_mode == "hybrid" else k


def widest_leg(configurations: Any) -> int:
    """The largest :func:`leg_depth` over ``configurations`` (0 for none): the depth a run's
    leg memo fetches a leg at on its first search (``LegMemo.fetch_depth``), so that every
    other configuration's search of that leg is its prefix. A configuration whose settings
    are bad counts for nothing here (its evaluation reports the error)."""
    deepest = 0
    for configuration in configurations:
        try:
            deepest = max(deepest, leg_depth(configuration))
        except (ConfigError, TypeError, ValueError):
            continue
    return deepest


def _chunker(settings: PipelineSettings, context: "EvaluationContext", model: EmbeddingModel) -> Any:
    """The configuration's chunker. ``semantic`` measures sentence similarity with the
    configuration's embedding model ``model``; ``llm`` and ``contextual`` ask the
    configuration's foundation model when it is a chat model, else the first configured one
    (none configured: ``get_chunker`` raises ConfigError, and the configuration fails with it)."""
    chat = None
    if settings.chunking_method in CHAT_METHODS:
        source = context.chat_models.get(settings.foundation_model) or next(iter(context.chat_models.values()), None)
        chat = context.cached_chat(source)
    return get_chunker(settings.chunking_method, settings.chunk_size, settings.chunk_overlap,
                       embedding_model=model, chat_model=chat)


def _generator(settings: PipelineSettings, context: EvaluationContext) -> Any:
    """The configuration's chat model; None for the extractive baseline (``evaluate_answers``
    builds it on the embedding model)."""
    name = settings.foundation_model
    if name == EXTRACTIVE:
        return None
    if name not in context.chat_models:
        known = ", ".join(sorted([EXTRACTIVE, *context.chat_models]))
        raise ConfigError(f"foundation model {name!r} is not configured (configured: {known})")
    return context.cached_chat(context.chat_models[name])


def _index(store: VectorStore, chunks: list[Any], model: EmbeddingModel, context: EvaluationContext,
           keyword_index: bool) -> bool:
    """Fill ``store`` with ``chunks`` unless it already holds them (with a keyword index when
    ``keyword_index``: a vector-only collection is then built again, its vectors from the
    embedding cache); True when reused. A store with a leg memo drops the memo's entries of
    its collection before it is deleted and after every write (``MilvusVectorStore``), so a
    collection rebuilt never answers from its former lists; one reused keeps them."""
    before = _texts_sent(model)
    if build_index(store, chunks, model, keyword_index=keyword_index).reused:
        return True
    with context._lock:
        context.collections_built += 1
        context.n_embedded += _texts_sent(model) - before
    return False


def _texts_sent(model: EmbeddingModel) -> int:
    """Texts the current evaluation has sent to an embedding model so far: its spend's count
    (``core.models.spend``), not the model's own counter, which threads sharing the model (other
    evaluations, the early question embedding) add to as well; the model's counter outside a spend."""
    spend = current_spend()
    return spend.texts_embedded if spend is not None else model.n_embedded


def run_single_evaluation(
    configuration: Mapping[str, Any],
    corpus: Corpus,
    golden: GoldenSet,
    *,
    context: EvaluationContext,
    use_stored: bool = True,
) -> dict[str, Any]:
    """Evaluate one configuration end to end.

    Args:
        configuration: parameter name -> value (see ``core.optimization`` for the names:
            ``chunking_method``, ``chunk_size``, ``chunk_overlap``, ``embedding_model``,
            ``number_of_chunks``, ``search_mode``, ``ranker_strategy``, ``ranker_k``,
            ``ranker_alpha``, ``foundation_model``, ``system_message_text``,
            ``context_template_text``, ``user_message_text``); parameters that do not apply
            hold ``None`` or ``"n/a"``.
        corpus: the loaded documents.
        golden: the ``GoldenSet``.
        context: models, store and caches shared by the study.
        use_stored: return the stored result when this configuration was already evaluated
            successfully on the same corpus and golden file.

    Raises:
        EvaluationInterrupted: ``context.stop`` was set before the evaluation ended (what it
            embedded is cached; nothing is stored).

    Returns:
        ``{key, configuration, status ("ok" | "failed"), error, transient (the failure may
        pass on a retry: ``core.errors.is_transient``), stored (bool), metrics{name:
        mean}, retrieval{grain: aggregate}, rank_grain, answers (answer report), collection,
        store_binding{backend, location, collection} (never credentials),
        collection_reused, n_embedded, timings{chunk_s, index_s, retrieve_s, answers_s, total_s},
        cost{seconds, texts_embedded, texts_from_cache, chat_requests, replies_from_cache,
        prompt_tokens, completion_tokens, tokens}, models{model id: description},
        per_question{ids, scores{metric: [score or None]}, wait_ms{part: [ms] or None}},
        timings_ms{n, median, p95, mean, query_embedding, search, rerank, generation, total}}``
        (``per_question``: the rank grain's scores per question, what paired tests between
        configurations read, and the time a user waits per question, by part; ``timings_ms``
        their statistics, the shape of ``evaluate``'s setups; both measured as
        ``core.evaluation.waits`` says, and absent when ``context.measure_waits`` is False)
        (``models``: the embedding model's and the reranker's source, revision and weight
        files' sha256, see ``core.models.describe``; ``cost``: what this evaluation alone
        spent, see ``core.models.spend.Spend.to_dict``; tokens None when an endpoint did not
        say). ``metrics`` holds the retrieval means at the finest labelled grain (``recall@5``,
        ``mrr``, ...) and the answer metric means (``unitxt.answer_correctness``, ...); a
        metric with no scorable question is absent, never NaN.
    """
    with spending():
        return _run_single_evaluation(configuration, corpus, golden, context=context, use_stored=use_stored)


def _run_single_evaluation(configuration: Mapping[str, Any], corpus: Corpus, golden: GoldenSet, *,
                           context: EvaluationContext, use_stored: bool) -> dict[str, Any]:
    """:func:`run_single_evaluation`'s work, inside its spending tally."""
    configuration = dict(configuration)
    key = Configuration(configuration).key
    path = _result_path(context, corpus, golden, key)
    if use_stored and path.is_file():
        stored = _stored_result(path)
        if stored is not None:
            return stored

    started = time.perf_counter()
    result = EvaluationResult.begin(key, configuration).to_dict()
    try:
        context.check_stop()
        settings = PipelineSettings.of(configuration)
        model = context.embedding_model(settings.embedding_model)
        result["models"] = _models(settings, context, model)
        store = _indexed_store(settings, corpus, model, context, result)
        try:
            context.check_stop()
            searched, setup = _retrieved(store, settings, corpus, golden, model, context, result)
            if not context.with_answers:
                result["status"] = "ok"
                return _finish(result, started, context, corpus, golden, path)
            context.check_stop()
            t0 = time.perf_counter()
            generator = _generator(settings, context)
            answers = _answers(searched, model, golden, setup, generator, settings, context)
            context.check_stop()
            result["timings"]["answers_s"] = round(time.perf_counter() - t0, 3)
            result["answers"] = answers
            _add_generation_waits(result, answers)
            for m in answers["metrics"]:
                if m["scores"]["mean"] is not None:
                    result["metrics"][m["name"]] = m["scores"]["mean"]
            if answers.get("overall_score") is not None:
                result["metrics"][OVERALL_SCORE] = answers["overall_score"]
        finally:
            store.close()
        result["status"] = "ok"
    except (RagtuneError, OSError, ValueError) as exc:
        _unless_stopped(context, exc)
        result["error"] = f"{type(exc).__name__}: {exc}"
        result["transient"] = is_transient(exc)
        logger.warning("configuration %s failed: %s", key, result["error"])
    except Exception as exc:  # an evaluation must never take the study down with it
        _unless_stopped(context, exc)
        result["error"] = f"{type(exc).__name__}: {exc}"
        result["transient"] = is_transient(exc)
        logger.error("configuration %s failed unexpectedly:\n%s", key, traceback.format_exc())
    return _finish(result, started, context, corpus, golden, path)


def _unless_stopped(context: EvaluationContext, exc: Exception) -> None:
    """Raise :class:`EvaluationInterrupted` from ``exc`` when the run was stopped: what fails
    once it stopped (its store closed, or gone with the terminal's Ctrl-C) was cut short, not
    failed.

    Raises:
        EvaluationInterrupted: the run was stopped.
    """
    if context.stopped():
        raise EvaluationInterrupted(f"the run was stopped ({type(exc).__name__}: {exc})") from exc


def _stored_result(path: Path) -> dict[str, Any] | None:
    """The result stored at ``path`` (:class:`EvaluationResult`), marked ``stored``; None when
    it cannot be read (it is evaluated again)."""
    import dataclasses

    try:
        stored = EvaluationResult.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, ConfigError):
        logger.warning("stored result %s is unreadable; evaluating again", path)
        return None
    return dataclasses.replace(stored, stored=True).to_dict()


def _indexed_store(settings: PipelineSettings, corpus: Corpus, model: EmbeddingModel, context: EvaluationContext,
                   result: dict[str, Any]) -> Any:
    """Chunk the corpus and open the configuration's collection, built or reused
    (:func:`core.evaluation.indexing.build_index`, under the collection's lock); fills the
    result's ``collection``, ``store_binding``, ``collection_reused``, ``n_embedded`` and
    timings. Returns the open store (the caller closes it).

    Raises:
        ConfigError: the corpus gave no chunks; what the chunker, the models and the store raise.
    """
    timings = result["timings"]
    chunker = _chunker(settings, context, model)
    t0 = time.perf_counter()
    chunks = context.chunks(corpus, chunker)
    timings["chunk_s"] = round(time.perf_counter() - t0, 3)
    if not chunks:
        raise ConfigError("the corpus gave no chunks")
    collection = result["collection"] = collection_for(corpus.fingerprint, {"method": chunker.name, **chunker.params()},
                                                       model.model_id)
    store_config = context.store_config(settings.vector_store)
    result["store_binding"] = {"backend": backend_name(store_config), "location": describe_store(store_config),
                               "collection": collection}
    keyword_index = context.needs_keyword_index(result["configuration"])
    t0 = time.perf_counter()
    before = _texts_sent(model)
    embedder = model if context.stop is None else _StopChecking(model, context)
    if context.new_store_opening(store_config):
        # a new database holds no collection to reuse: the chunks are embedded while it
        # opens, in bounded batches (each cached once embedded)
        try:
            for i in range(0, len(chunks), EARLY_EMBED_BATCH):
                embedder.embed_documents([c.text for c in chunks[i:i + EARLY_EMBED_BATCH]])
        finally:
            with context._lock:
                context.n_embedded += _texts_sent(model) - before
    context.check_stop()
    store = context.vector_store(model, store_config, collection, keyword_index=keyword_index)
    try:
        with context.collection_lock(json.dumps(result["store_binding"], sort_keys=True)):
            context.check_stop()
            result["collection_reused"] = _index(store, chunks, embedder, context, keyword_index)
    except BaseException:
        store.close()
        raise
    result["n_embedded"] = _texts_sent(model) - before
    timings["index_s"] = round(time.perf_counter() - t0, 3)
    return store


class _StopChecking:
    """An embedding model seen through the context's ``stop`` event, for building a collection:
    texts go to ``model`` in parts of :data:`STOP_CHECK_TEXTS` (or of the model's own
    ``batch_size`` when larger), and the event is looked at before each part, so a stopped run
    does not wait for a whole batch of a slow model. Each part is cached as it is embedded."""

    def __init__(self, model: EmbeddingModel, context: EvaluationContext) -> None:
        self.model = model
        self.context = context
        inner = getattr(model, "model", model)
        self.part = max(STOP_CHECK_TEXTS, int(getattr(inner, "batch_size", 0) or 0))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)

    def embed_documents(self, texts: Sequence[str]) -> Any:
        """``model.embed_documents(texts)``, part by part, each after :meth:`EvaluationContext.check_stop`.

        Raises:
            EvaluationInterrupted: the run was stopped.
        """
        import numpy as np

        texts = list(texts)
        parts = []
        for i in range(0, len(texts), self.part):
            self.context.check_stop()
            parts.append(np.asarray(self.model.embed_documents(texts[i:i + self.part]), dtype=np.float32))
        if not parts:
            return self.model.embed_documents(texts)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _retrieved(store: VectorStore, settings: PipelineSettings, corpus: Corpus, golden: GoldenSet, model: EmbeddingModel,
               context: EvaluationContext, result: dict[str, Any]) -> tuple[Any, Any]:
    """Search every question (through the configuration's reranker) and score the rankings;
    fills the result's ``rank_grain``, ``retrieval`` and retrieval ``metrics``. Returns the
    memoised store (the answers are generated from the very chunks scored) and the setup."""
    setup = settings.search_setup()
    k = settings.number_of_chunks
    # the answers are generated from the very chunks the retrieval metrics scored
    searched = SearchMemo(_with_reranker(store, settings, context))
    t0 = time.perf_counter()
    # one batch of the very texts the searches and the answerer embed (embed_query adds the
    # model's query instruction), so they all hit the cache; then every question searched
    # in as few requests as the store allows
    model.embed_documents([query_text(model, q.question) for q in golden.questions])
    found = searched.search_many([q.question for q in golden.questions], k=k, **setup.to_dict())
    rankings = {q.id: [h.chunk for h in hits] for q, hits in zip(golden.questions, found)}
    result["timings"]["retrieve_s"] = round(time.perf_counter() - t0, 3)
    grains = evaluate_rankings(golden.questions, rankings, grains=GRAINS, ks=KS)
    rank_grain = choose_rank_grain(golden.questions, [d.document_id for d in corpus.documents])
    result["rank_grain"] = rank_grain
    result["retrieval"] = {g: r.aggregate.to_dict() for g, r in grains.items()}
    result["metrics"].update(grains[rank_grain].aggregate.means)
    result["per_question"] = _per_question(grains[rank_grain])
    if context.measure_waits:
        _measure_waits(store, settings, golden, model, context, result)
    return searched, setup


def _measure_waits(store: Any, settings: PipelineSettings, golden: Any, model: Any, context: EvaluationContext,
                   result: dict[str, Any]) -> None:
    """Time each question's query embedding, first-stage search and rerank alone
    (``core.evaluation.waits``) into ``per_question["wait_ms"]`` and ``timings_ms``; the
    search asks the database, not the run's leg memo."""
    texts = [q.question for q in golden.questions]
    timing = store
    if getattr(store, "legs", None) is not None:  # a twin of the store that searches the database
        timing = context.vector_store(model, context.store_config(settings.vector_store), result["collection"],
                                      keyword_index=context.needs_keyword_index(result["configuration"]), memo=False)
    try:
        reranker = context.cached_reranker(settings.reranker) if settings.reranker else None
        search_ms, rerank_ms = time_first_stage(timing, texts, settings.first_stage_depth,
                                                settings.search_setup().to_dict(), reranker)
    finally:
        if timing is not store:
            timing.close()
    waits = question_waits({"query_embedding": context.query_embedding_ms(model, texts), "search": search_ms,
                            "rerank": rerank_ms})
    result["per_question"]["wait_ms"] = waits
    result["timings_ms"] = wait_timings(waits)


def _add_generation_waits(result: dict[str, Any], answers: Mapping[str, Any]) -> None:
    """Add each question's answering time (the answer report's ``timings.answer_ms``) to the
    result's per-question waits and their statistics; nothing when either is missing."""
    per = result.get("per_question") or {}
    waits, by_id = per.get("wait_ms"), (answers.get("timings") or {}).get("answer_ms")
    if not isinstance(waits, dict) or not isinstance(by_id, Mapping) or any(q not in by_id for q in per["ids"]):
        return
    parts = {k: v for k, v in waits.items() if k != "total"}
    parts["generation"] = [float(by_id[q]) for q in per["ids"]]
    per["wait_ms"] = question_waits(parts)
    result["timings_ms"] = wait_timings(per["wait_ms"])


def _per_question(grain: Any) -> dict[str, Any]:
    """The rank grain's per-question scores, for paired tests between configurations:
    ``{"ids": [question id, ...], "scores": {metric: [score or None per id]}}`` (None: the
    question is not scorable at this grain), ids in golden-file order."""
    ids = list(grain.per_question)
    names = list(grain.aggregate.means)
    scores = {m: [None if r.scores is None else r.scores.get(m) for r in grain.per_question.values()] for m in names}
    return {"ids": ids, "scores": scores}


def _finish(result: dict[str, Any], started: float, context: EvaluationContext, corpus: Corpus, golden: GoldenSet,
            path: Path) -> dict[str, Any]:
    """Stamp the total time and what was spent, and store a successful result (atomically)
    for reuse."""
    result["timings"]["total_s"] = round(time.perf_counter() - started, 3)
    spend = current_spend()
    result["cost"] = {"seconds": result["timings"]["total_s"], **(spend.to_dict() if spend is not None else {})}
    if result["status"] == "ok":
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(result, ensure_ascii=False, allow_nan=False), encoding="utf-8")
        tmp.replace(path)
    return result


def _answers(store: VectorStore, model: EmbeddingModel, golden: GoldenSet, setup: SearchSetup,
             generator: ChatModel | None,
             settings: PipelineSettings,
             context: EvaluationContext) -> dict[str, Any]:
    """Generate and score the answers with the configuration's generator and prompt templates."""
    return evaluate_answers(
        store, model, golden, setup, chat_model=generator, judge=context.cached_chat(context.judge),
        metrics=context.answer_metrics,
        templates=dict(settings.templates), k=settings.number_of_chunks, max_workers=context.max_workers,
    )
