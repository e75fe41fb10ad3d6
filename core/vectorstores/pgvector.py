"""PostgreSQL + pgvector vector store: dense (HNSW, cosine), keyword (full-text) and hybrid search.

One table per collection, in the configured schema::

    id               text PRIMARY KEY        -- the chunk id
    text             text NOT NULL
    document_id      text NOT NULL
    sequence_number  integer NOT NULL
    meta             jsonb NOT NULL          -- {"pages": [...], "headings": [...]}
    embedding        vector(dim) NOT NULL
    tsv              tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED

with a GIN index on ``tsv`` and an HNSW cosine index on the embedding: on ``embedding``
(``vector_cosine_ops``) up to :data:`MAX_HNSW_VECTOR_DIM` dimensions; on the expression
``(embedding::halfvec(dim))`` (``halfvec_cosine_ops``) up to :data:`MAX_HNSW_HALFVEC_DIM`,
queried with the same cast (half precision: cosine scores then carry errors of about 1e-3);
above that, no vector index (exact scans) and a warning. pgvector refuses HNSW indexes over
2,000 ``vector`` dimensions, so a plain index is never attempted there.

Identifiers are always quoted (``psycopg.sql.Identifier``): collection names keep their case
(``Docs`` and ``docs`` are two tables) and must fit PostgreSQL's 63-byte identifier limit.

Search:
    * ``vector``: ``ORDER BY embedding <=> query LIMIT k``; score = ``1 - cosine distance``
      (cosine similarity in [-1, 1]). HNSW is approximate: each search sets
      ``hnsw.ef_search = min(1000, max(40, 4 * k))`` for its transaction (pgvector's default is
      40; 1000 is its maximum). With ``exact_search=True`` (tests, small collections, or
      ``k > 1000``, beyond which HNSW cannot return ``k`` rows) index scans are switched off for
      the query, so the ranking is exact.
    * ``keyword``: the query's words, English-stemmed with stop words dropped
      (``to_tsvector('english', query)``), joined with OR into a ``tsquery`` and matched against
      ``tsv``, ranked by ``ts_rank_cd`` (cover density, >= 0, higher is better; not BM25, and
      not on BM25's scale). OR, as BM25 does: a chunk holding any of the words matches and
      more of them rank higher. (``websearch_to_tsquery`` would AND the words, and a natural
      question then rarely matches any chunk, leaving hybrid search with an empty keyword leg.)
    * ``hybrid``: both legs fetch ``k`` candidates and are fused in Python with
      :mod:`core.vectorstores.fusion` (RRF, or weighted with cosine ``(1 + s) / 2`` and keyword
      ``2 * arctan(s) / pi`` normalisation, as Milvus's ``WeightedRanker``).

References:
    pgvector (HNSW, ``halfvec``, dimension limits, ``hnsw.ef_search``):
    https://github.com/pgvector/pgvector; PostgreSQL full-text search (``to_tsvector``, ``to_tsquery``,
    ``ts_rank_cd``): https://www.postgresql.org/docs/current/textsearch-controls.html;
    psycopg 3 ``COPY``: https://www.psycopg.org/psycopg3/docs/basic/copy.html.
"""

from __future__ import annotations

import logging
import threading
import re
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence

import numpy as np

from core.chunking.base import Chunk
from core.errors import ConfigError, IndexingError, StoreError
from core.models.embeddings import EmbeddingModel
from core.vectorstores.base import RetrievedChunk, SearchSetup, validate_collection_name
from core.vectorstores.fusion import fuse, hybrid_window

if TYPE_CHECKING:
    import psycopg

logger = logging.getLogger(__name__)

#: Rows per COPY + upsert transaction.
INSERT_BATCH = 1024
#: Most dimensions pgvector's HNSW index takes on ``vector``.
MAX_HNSW_VECTOR_DIM = 2000
#: Most dimensions pgvector's HNSW index takes on ``halfvec``.
MAX_HNSW_HALFVEC_DIM = 4000
#: Most dimensions of pgvector's ``vector`` type.
MAX_VECTOR_DIM = 16000
#: Longest identifier PostgreSQL keeps, in bytes (longer ones are truncated).
MAX_IDENTIFIER_BYTES = 63
#: The text search configuration of the ``tsv`` column and of keyword queries.
TEXT_SEARCH_CONFIG = "english"
#: Seconds to wait for a connection.
CONNECT_TIMEOUT_S = 10

_SCHEMA_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_COLUMNS = ("id", "text", "document_id", "sequence_number", "meta", "embedding")


@dataclass(frozen=True)
class PGVectorConfig:
    """Where the PostgreSQL database is.

    Either ``dsn`` (a libpq connection string or ``postgresql://`` URI, which then wins over the
    separate fields) or the separate fields.

    Attributes:
        dsn: ``postgresql://user:password@host:port/dbname`` or ``"host=... port=..."``.
        host: server host name or address.
        port: server TCP port.
        user: role name.
        password: the role's password ("" for none or trust authentication); never shown in
            ``repr`` or error messages.
        dbname: database name.
        schema: schema holding the collections' tables (created when missing).

    Raises:
        ConfigError: a port outside 1..65535 or a schema name that is not a plain identifier.
    """

    dsn: str | None = None
    host: str = "127.0.0.1"
    port: int = 5432
    user: str = "postgres"
    password: str = ""
    dbname: str = "postgres"
    schema: str = "public"

    def __post_init__(self) -> None:
        if not isinstance(self.port, int) or not 1 <= self.port <= 65535:
            raise ConfigError(f"PostgreSQL port must be an integer in 1..65535, got {self.port!r}")
        if not _SCHEMA_RE.match(self.schema) or len(self.schema.encode("utf-8")) > MAX_IDENTIFIER_BYTES:
            raise ConfigError(
                f"PostgreSQL schema {self.schema!r} is invalid: use letters, digits and '_', start with a letter or '_', "
                f"at most {MAX_IDENTIFIER_BYTES} characters"
            )

    def __repr__(self) -> str:
        dsn = None if self.dsn is None else _redact(self.dsn, self._secrets())
        return (
            f"PGVectorConfig(dsn={dsn!r}, host={self.host!r}, port={self.port}, user={self.user!r}, "
            f"password={'***' if self.password else ''!r}, dbname={self.dbname!r}, schema={self.schema!r})"
        )

    def conninfo(self) -> str:
        """The libpq connection string (holds the password: never log or show it)."""
        if self.dsn:
            return self.dsn
        from psycopg.conninfo import make_conninfo

        params: dict[str, Any] = {"host": self.host, "port": self.port, "user": self.user, "dbname": self.dbname}
        if self.password:
            params["password"] = self.password
        return make_conninfo(**params)

    def _params(self) -> dict[str, str]:
        if not self.dsn:
            return {"host": self.host, "port": str(self.port), "user": self.user, "dbname": self.dbname}
        from psycopg.conninfo import conninfo_to_dict

        try:
            parsed = conninfo_to_dict(self.dsn)
        except Exception:  # a malformed DSN: say so without showing it
            return {"host": "?", "port": "?", "user": "?", "dbname": "?"}
        return {
            "host": str(parsed.get("host") or parsed.get("hostaddr") or "localhost (Unix socket)"),
            "port": str(parsed.get("port") or 5432),
            "user": str(parsed.get("user") or "(the login user)"),
            "dbname": str(parsed.get("dbname") or "(the user's name)"),
        }

    def _secrets(self) -> list[str]:
        """The password as written and as percent-encoded in a URI, longest first."""
        from urllib.parse import quote

        found = [self.password] if self.password else []
        if self.dsn:
            try:
                from psycopg.conninfo import conninfo_to_dict

                pw = conninfo_to_dict(self.dsn).get("password")
                if pw:
                    found.append(str(pw))
            except Exception:  # malformed DSN or psycopg missing: nothing more to hide by name
                pass
        secrets = set(found) | {quote(pw, safe="") for pw in found}
        return sorted(secrets, key=len, reverse=True)

    def describe(self) -> str:
        """``host:port/dbname as user``, for messages (never the password)."""
        p = self._params()
        return f"{p['host']}:{p['port']}/{p['dbname']} as {p['user']}"

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> "PGVectorConfig":
        """Read the configuration from ``env`` (``core.settings`` passes ``os.environ``).

        | variable | field | default |
        | --- | --- | --- |
        | ``RAGTUNE_PG_DSN`` | ``dsn`` (wins over host, port, user, password and database) | unset |
        | ``RAGTUNE_PG_HOST`` | ``host`` | ``127.0.0.1`` |
        | ``RAGTUNE_PG_PORT`` | ``port`` | ``5432`` |
        | ``RAGTUNE_PG_USER`` | ``user`` | ``postgres`` |
        | ``RAGTUNE_PG_PASSWORD`` | ``password`` | empty |
        | ``RAGTUNE_PG_DB`` | ``dbname`` | ``postgres`` |
        | ``RAGTUNE_PG_SCHEMA`` | ``schema`` (also with a DSN) | ``public`` |

        Args:
            env: the variables, e.g. ``os.environ``.

        Raises:
            ConfigError: ``RAGTUNE_PG_PORT`` is not a port number, or the schema is invalid
                (names the variable).
        """
        port_raw = (env.get("RAGTUNE_PG_PORT") or "").strip()
        if port_raw and not port_raw.isdigit():
            raise ConfigError(f"RAGTUNE_PG_PORT must be a port number, got {port_raw!r}")
        schema = (env.get("RAGTUNE_PG_SCHEMA") or "").strip() or "public"
        try:
            return cls(
                dsn=(env.get("RAGTUNE_PG_DSN") or "").strip() or None,
                host=(env.get("RAGTUNE_PG_HOST") or "").strip() or "127.0.0.1",
                port=int(port_raw) if port_raw else 5432,
                user=(env.get("RAGTUNE_PG_USER") or "").strip() or "postgres",
                password=env.get("RAGTUNE_PG_PASSWORD") or "",
                dbname=(env.get("RAGTUNE_PG_DB") or "").strip() or "postgres",
                schema=schema,
            )
        except ConfigError as exc:
            raise ConfigError(f"{exc} (from RAGTUNE_PG_SCHEMA)") from exc


def _redact(text: str, secrets: Sequence[str]) -> str:
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text


def open_connection(config: PGVectorConfig) -> psycopg.Connection:
    """Open an autocommit ``psycopg.Connection`` with pgvector's types registered.

    Creates the ``vector`` extension in the database when it is missing (needs the right to).

    Raises:
        StoreError: the server cannot be reached or refuses the login (names host, port,
            database and user, and what to check; never the password), or pgvector is missing.
    """
    import psycopg
    from pgvector.psycopg import register_vector

    where = config.describe()
    try:
        conn = psycopg.connect(config.conninfo(), autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)
    except psycopg.Error as exc:
        reason = _redact(str(exc).strip(), config._secrets())
        raise StoreError(
            f"cannot connect to PostgreSQL at {where}: {reason}. Check that the server runs "
            "(for tests: scripts/services/postgres.sh start), the host and port, the user and password, "
            "and RAGTUNE_PG_DSN"
        ) from None
    try:
        if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone() is None:
            try:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            except psycopg.Error as exc:
                raise StoreError(
                    f"the pgvector extension is not enabled in PostgreSQL at {where} and cannot be created "
                    f"({str(exc).strip()}): install pgvector on the server (scripts/services/postgres.sh install) "
                    "and run CREATE EXTENSION vector as a superuser"
                ) from None
        register_vector(conn)
    except BaseException:
        conn.close()
        raise
    return conn


class PGVectorStore:
    """A PostgreSQL table holding chunks, searched by vector (HNSW, cosine), full-text keyword
    search or both.

    Args:
        embedding_model: embeds chunks and queries.
        config: where the database is.
        collection_name: the collection (see ``collection_name_for``); the table's name, kept
            case-sensitive.
        connection: an open ``psycopg.Connection`` (autocommit, pgvector types registered, e.g.
            from :func:`open_connection`) to share (optional; not closed by :meth:`close`).
        exact_search: switch index scans off for vector searches, so rankings are exact
            (sequential scan; slower on large collections).
        keyword_index: give a table this store creates the ``tsv`` column and its GIN index
            (needed by keyword and hybrid search); False creates a vector-only table, on which
            keyword and hybrid searches raise ``StoreError``.

    Raises:
        ConfigError: invalid collection name (characters, or longer than 63 bytes).

    The connection opens on first use; a failed connection raises :class:`StoreError` then.
    """

    def __init__(
        self,
        embedding_model: EmbeddingModel,
        config: PGVectorConfig,
        collection_name: str,
        *,
        connection: psycopg.Connection | None = None,
        exact_search: bool = False,
        keyword_index: bool = True,
    ) -> None:
        self.embedding_model = embedding_model
        self.keyword_index = bool(keyword_index)
        self._has_keyword: bool | None = None
        self.config = config
        self.collection_name = validate_collection_name(collection_name)
        if len(collection_name.encode("utf-8")) > MAX_IDENTIFIER_BYTES:
            raise ConfigError(
                f"collection name {collection_name!r} is too long for PostgreSQL: at most "
                f"{MAX_IDENTIFIER_BYTES} characters (longer identifiers are truncated)"
            )
        self.exact_search = bool(exact_search)
        self._conn = connection
        self._owns_connection = connection is None
        # One psycopg connection runs one transaction at a time: calls from several threads
        # (answers are generated in a pool) take turns.
        self._lock = threading.RLock()

    # --------------------------------------------------------------------------- connection

    @property
    def connection(self) -> Any:
        """The ``psycopg.Connection`` (opened on first use)."""
        with self._lock:
            if self._conn is None or self._conn.closed:
                self._conn = open_connection(self.config)
                self._owns_connection = True
            return self._conn

    def close(self) -> None:
        """Close the connection when the store opened it."""
        if self._conn is not None and self._owns_connection and not self._conn.closed:
            self._conn.close()
        self._conn = None

    def __enter__(self) -> "PGVectorStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _table(self) -> Any:
        from psycopg import sql

        return sql.Identifier(self.config.schema, self.collection_name)

    @contextmanager
    def _errors(self, action: str, error: type[Exception] = StoreError) -> Iterator[None]:
        """Hold the connection's lock, and turn database errors into ``error`` naming the
        collection and the action."""
        import psycopg

        try:
            with self._lock:
                yield
        except psycopg.errors.UndefinedTable:
            raise StoreError(
                f"collection {self.collection_name} does not exist: index the documents first"
            ) from None
        except psycopg.Error as exc:
            reason = " ".join(_redact(str(exc).strip(), self.config._secrets()).split())
            raise error(
                f"{action} collection {self.collection_name} in PostgreSQL at {self.config.describe()} failed: {reason}"
            ) from exc

    # -------------------------------------------------------------------------------- schema

    def _dimension(self) -> int | None:
        """The collection's vector dimension, or None when its table does not exist."""
        with self._errors("reading"):
            row = self.connection.execute(
                "SELECT a.atttypmod FROM pg_catalog.pg_attribute a "
                "JOIN pg_catalog.pg_class c ON c.oid = a.attrelid "
                "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = %s AND c.relname = %s AND c.relkind IN ('r', 'p') "
                "AND a.attname = 'embedding' AND NOT a.attisdropped",
                (self.config.schema, self.collection_name),
            ).fetchone()
        return None if row is None else int(row[0])

    def exists(self) -> bool:
        """True when the collection's table exists."""
        return self._dimension() is not None

    def has_keyword_index(self) -> bool:
        """True when the collection's table exists and has its ``tsv`` column (keyword and
        hybrid search work on it)."""
        with self._errors("reading"):
            row = self.connection.execute(
                "SELECT 1 FROM pg_catalog.pg_attribute a "
                "JOIN pg_catalog.pg_class c ON c.oid = a.attrelid "
                "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = %s AND c.relname = %s AND c.relkind IN ('r', 'p') "
                "AND a.attname = 'tsv' AND NOT a.attisdropped",
                (self.config.schema, self.collection_name),
            ).fetchone()
        self._has_keyword = row is not None
        return self._has_keyword

    def _create(self, dim: int) -> None:
        from psycopg import sql

        table = self._table()
        if dim <= MAX_HNSW_VECTOR_DIM:
            hnsw = sql.SQL("CREATE INDEX ON {} USING hnsw (embedding vector_cosine_ops)").format(table)
        elif dim <= MAX_HNSW_HALFVEC_DIM:
            hnsw = sql.SQL("CREATE INDEX ON {} USING hnsw ((embedding::halfvec({})) halfvec_cosine_ops)").format(
                table, sql.Literal(dim)
            )
        else:
            hnsw = None
            logger.warning(
                "collection %s has %d-dimensional vectors: pgvector's HNSW index takes at most %d (halfvec); "
                "vector searches scan the whole table",
                self.collection_name, dim, MAX_HNSW_HALFVEC_DIM,
            )
        conn = self.connection
        with self._errors("creating", IndexingError), conn.transaction():
            # Serialise concurrent creators of the same table.
            conn.execute(
                "SELECT pg_advisory_xact_lock(hashtext(%s))", (f"ragtune:{self.config.schema}.{self.collection_name}",)
            )
            if self._dimension() is not None:
                return
            conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(self.config.schema)))
            conn.execute(
                sql.SQL(
                    "CREATE TABLE {table} ("
                    "id text PRIMARY KEY, "
                    "text text NOT NULL, "
                    "document_id text NOT NULL, "
                    "sequence_number integer NOT NULL, "
                    "meta jsonb NOT NULL DEFAULT '{{}}'::jsonb, "
                    "embedding vector({dim}) NOT NULL{tsv})"
                ).format(table=table, dim=sql.Literal(dim), tsv=sql.SQL(
                    ", tsv tsvector GENERATED ALWAYS AS (to_tsvector({cfg}, text)) STORED").format(
                        cfg=sql.Literal(TEXT_SEARCH_CONFIG)) if self.keyword_index else sql.SQL(""))
            )
            if self.keyword_index:
                conn.execute(sql.SQL("CREATE INDEX ON {} USING gin (tsv)").format(table))
            if hnsw is not None:
                conn.execute(hnsw)

    # ------------------------------------------------------------------------------- writing

    def add_documents(self, chunks: Sequence[Chunk], *, vectors: np.ndarray | None = None) -> int:
        """Embed ``chunks`` (unless ``vectors`` float32 ``(len(chunks), dim)`` are given) and
        upsert them by chunk id in transactions of :data:`INSERT_BATCH` rows (binary ``COPY``
        into a temporary table, then ``INSERT ... ON CONFLICT (id) DO UPDATE``); creates the
        collection when missing.

        Every check happens before anything is written. When one call holds the same chunk id
        twice, the last one is written.

        Returns:
            The number of distinct chunks written.

        Raises:
            IndexingError: a chunk's text holds a NUL character (PostgreSQL's ``text`` cannot
                store it), the vectors are not finite, their count differs from the chunks', or
                their dimension differs from the collection's (``collection X holds
                384-dimensional vectors; model Y returned 1024``) or exceeds
                :data:`MAX_VECTOR_DIM`; or the database refused the rows.
            StoreError: the database cannot be reached.
        """
        if not chunks:
            return 0
        for chunk in chunks:
            if "\x00" in chunk.text:
                raise IndexingError(
                    f"chunk {chunk.sequence_number} of {chunk.document_id} holds a NUL character, "
                    "which PostgreSQL text cannot store: remove it when reading the document"
                )
        if vectors is None:
            vectors = self.embedding_model.embed_documents([c.text for c in chunks])
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != len(chunks):
            raise IndexingError(f"{vectors.shape[0] if vectors.ndim else 0} vectors for {len(chunks)} chunks")
        dim = int(vectors.shape[1])
        if not 1 <= dim <= MAX_VECTOR_DIM:
            raise IndexingError(
                f"model {self.embedding_model.model_id} returned {dim}-dimensional vectors; "
                f"pgvector holds 1 to {MAX_VECTOR_DIM} dimensions"
            )
        if not np.isfinite(vectors).all():
            raise IndexingError(f"model {self.embedding_model.model_id} returned vectors with NaN or infinite values")
        existing = self._dimension()
        if existing is not None and existing != dim:
            raise IndexingError(
                f"collection {self.collection_name} holds {existing}-dimensional vectors; "
                f"model {self.embedding_model.model_id} returned {dim}"
            )
        if existing is None:
            self._create(dim)

        latest: dict[str, int] = {}
        for i, chunk in enumerate(chunks):
            latest[chunk.chunk_id] = i
        order = sorted(latest.values())
        for start in range(0, len(order), INSERT_BATCH):
            batch = order[start : start + INSERT_BATCH]
            self._upsert([chunks[i] for i in batch], vectors[batch])
        return len(order)

    def _upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        from psycopg import sql
        from psycopg.types.json import Jsonb

        conn = self.connection
        stage = sql.Identifier("ragtune_stage")
        columns = sql.SQL(", ").join(sql.Identifier(c) for c in _COLUMNS)
        updates = sql.SQL(", ").join(
            sql.SQL("{c} = EXCLUDED.{c}").format(c=sql.Identifier(c)) for c in _COLUMNS if c != "id"
        )
        with self._errors("writing to", IndexingError), conn.transaction():
            conn.execute(
                sql.SQL(
                    "CREATE TEMPORARY TABLE {stage} (id text, text text, document_id text, sequence_number integer, "
                    "meta jsonb, embedding vector) ON COMMIT DROP"
                ).format(stage=stage)
            )
            with conn.cursor() as cur:
                with cur.copy(
                    sql.SQL("COPY {stage} ({columns}) FROM STDIN WITH (FORMAT BINARY)").format(stage=stage, columns=columns)
                ) as copy:
                    copy.set_types(["text", "text", "text", "int4", "jsonb", "vector"])
                    for chunk, vector in zip(chunks, vectors):
                        copy.write_row((
                            chunk.chunk_id, chunk.text, chunk.document_id, chunk.sequence_number,
                            Jsonb({"pages": chunk.pages, "headings": chunk.headings}), vector,
                        ))
            conn.execute(
                sql.SQL(
                    "INSERT INTO {table} ({columns}) SELECT {columns} FROM {stage} "
                    "ON CONFLICT (id) DO UPDATE SET {updates}"
                ).format(table=self._table(), columns=columns, stage=stage, updates=updates)
            )

    def flush(self) -> None:
        """Refresh the planner's statistics (``ANALYZE``) after a bulk insert; rows are
        searchable as soon as :meth:`add_documents` returns. Call it once after the last insert."""
        from psycopg import sql

        if self.exists():
            with self._errors("analysing"):
                self.connection.execute(sql.SQL("ANALYZE {}").format(self._table()))

    def count(self) -> int:
        """Number of chunks in the collection (0 when it does not exist)."""
        from psycopg import sql

        if not self.exists():
            return 0
        with self._errors("counting"):
            row = self.connection.execute(sql.SQL("SELECT count(*) FROM {}").format(self._table())).fetchone()
        return int(row[0])

    def delete_collection(self) -> None:
        """Drop the collection's table (nothing happens when it does not exist)."""
        from psycopg import sql

        with self._errors("dropping"):
            self.connection.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(self._table()))
        self._has_keyword = None

    # ------------------------------------------------------------------------------- search

    def search(
        self,
        query: str,
        k: int = 10,
        search_mode: str = "vector",
        ranker_strategy: str = "rrf",
        ranker_k: int = 60,
        ranker_alpha: float = 0.5,
    ) -> list[RetrievedChunk]:
        """Search the collection; returns at most ``k`` chunks, best first.

        Args:
            query: the question text; embedded with the store's model for dense search.
            k: results to return (>= 1).
            search_mode: ``"vector"``, ``"keyword"`` (full-text) or ``"hybrid"`` (both, fused).
            ranker_strategy: ``"rrf"`` (:func:`~core.vectorstores.fusion.rrf_fuse` with
                ``ranker_k``) or ``"weighted"`` (:func:`~core.vectorstores.fusion.weighted_fuse`,
                dense weight ``ranker_alpha``) for hybrid.
            ranker_k: RRF constant.
            ranker_alpha: dense weight for weighted fusion.

        Scores (higher is better): ``vector`` cosine similarity in [-1, 1] (``NaN`` for a zero
        vector, which pgvector gives no direction); ``keyword`` ``ts_rank_cd`` >= 0;
        ``hybrid`` the fused score. Each hybrid leg fetches
        :func:`~core.vectorstores.fusion.fusion_window` candidates (``ranker_k + 2 * k``)
        before fusing to ``k``. Chunks carry
        ``document_id``, ``sequence_number``, ``pages`` and ``headings``.

        Raises:
            ConfigError: bad ``k`` or search settings.
            StoreError: the collection does not exist, has no keyword index for a keyword or
                hybrid search, or the database fails.
        """
        setup = SearchSetup(search_mode, ranker_strategy, ranker_k, ranker_alpha)  # validates
        if k < 1:
            raise ConfigError(f"k must be at least 1, got {k}")
        dim = self._dimension()
        if dim is None:
            raise StoreError(f"collection {self.collection_name} does not exist: index the documents first")
        if setup.search_mode != "vector" and not (self._has_keyword or self.has_keyword_index()):
            raise StoreError(f"collection {self.collection_name} has no keyword index (it was built for vector "
                             f"search only): {setup.search_mode} search needs it; index the documents again with it")
        conn = self.connection
        if setup.search_mode == "vector":
            vector = self.embedding_model.embed_query(query)
            with self._errors("searching"), conn.transaction():
                rows = self._vector_rows(vector, dim, k)
            return self._to_chunks([(r, r[5]) for r in rows])
        if setup.search_mode == "keyword":
            with self._errors("searching"), conn.transaction():
                rows = self._keyword_rows(query, k)
            return self._to_chunks([(r, r[5]) for r in rows])
        window = hybrid_window(k, setup)
        vector = self.embedding_model.embed_query(query)
        with self._errors("searching"), conn.transaction():
            dense_rows = self._vector_rows(vector, dim, window)
            sparse_rows = self._keyword_rows(query, window)
        by_id = {r[0]: r for r in dense_rows + sparse_rows}
        dense = [(r[0], float(r[5])) for r in dense_rows]
        sparse = [(r[0], float(r[5])) for r in sparse_rows]
        return self._to_chunks([(by_id[item_id], score) for item_id, score in fuse(dense, sparse, setup, k)])

    def _vector_rows(self, vector: np.ndarray, dim: int, k: int) -> list[tuple[Any, ...]]:
        """Rows ``(id, text, document_id, sequence_number, meta, similarity)``, best first.
        Runs inside the caller's transaction (the settings are transaction-local)."""
        from psycopg import sql

        conn = self.connection
        if self.exact_search or k > 1000:
            conn.execute("SELECT set_config('enable_indexscan', 'off', true)")
        else:
            conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(min(1000, max(40, 4 * k))),))
        query_vector = np.asarray(vector, dtype=np.float32).reshape(-1)
        if dim <= MAX_HNSW_VECTOR_DIM:
            distance = sql.SQL("embedding <=> %(q)s::vector")
        else:
            # The same expression as the halfvec index, so the planner can use it.
            distance = sql.SQL("(embedding::halfvec({d})) <=> (%(q)s::vector)::halfvec({d})").format(d=sql.Literal(dim))
        rows = conn.execute(
            sql.SQL(
                "SELECT id, text, document_id, sequence_number, meta, 1 - ({distance}) AS score "
                "FROM {table} ORDER BY {distance} LIMIT %(k)s"
            ).format(distance=distance, table=self._table()),
            {"q": query_vector, "k": k},
        ).fetchall()
        # Exact ties keep one order on every run: by score, then id (a stable re-sort).
        return sorted(rows, key=lambda r: (-_sortable(r[5]), r[0]))

    def _keyword_rows(self, query: str, k: int) -> list[tuple[Any, ...]]:
        """Rows ``(id, text, document_id, sequence_number, meta, ts_rank_cd)``, best first."""
        from psycopg import sql

        return self.connection.execute(
            sql.SQL(
                "SELECT t.id, t.text, t.document_id, t.sequence_number, t.meta, ts_rank_cd(t.tsv, q) AS score "
                "FROM {table} t, to_tsquery('simple', coalesce(("
                "SELECT string_agg(quote_literal(w), ' | ') "
                "FROM unnest(tsvector_to_array(to_tsvector({cfg}::regconfig, %(q)s))) AS w), '')) q "
                "WHERE t.tsv @@ q ORDER BY score DESC, t.id LIMIT %(k)s"
            ).format(table=self._table(), cfg=sql.Literal(TEXT_SEARCH_CONFIG)),
            {"q": query, "k": k},
        ).fetchall()

    @staticmethod
    def _to_chunks(rows: Sequence[tuple[tuple[Any, ...], float]]) -> list[RetrievedChunk]:
        out = []
        for rank, (row, score) in enumerate(rows, start=1):
            item_id, text, document_id, sequence_number, meta, _ = row
            meta = meta or {}
            chunk = Chunk(
                text=text, chunk_id=str(item_id),
                metadata={
                    "document_id": document_id, "sequence_number": int(sequence_number),
                    "pages": list(meta.get("pages") or []), "headings": list(meta.get("headings") or []),
                },
            )
            out.append(RetrievedChunk(chunk=chunk, score=float(score), rank=rank))
        return out


def _sortable(score: float) -> float:
    """A score for sorting: NaN (zero vectors) sorts last."""
    value = float(score)
    return -np.inf if np.isnan(value) else value
