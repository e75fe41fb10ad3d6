"""A team's own PostgreSQL + pgvector table, searched in place and read-only.

Any table and column names: the field mapping names (or infers) the key, text, document, page,
vector and ``tsvector`` columns; a document or page kept in a JSON column is named by a dotted
path (``cmetadata.source``), which one of the table's first rows must hold. Setups: ``dense``
(ordered by the distance operator of the vector column's index: cosine ``<=>``, inner product
``<#>`` or L2 ``<->``; cosine without an index), ``keyword`` where the table has a ``tsvector``
column (``ts_rank_cd`` against the question's lexemes, OR-ed, in the column's own text search
configuration), and ``hybrid-rrf-k60`` (both legs fused with RRF as ragtune's own stores fuse
them) where it has both.

The session is set read-only (``default_transaction_read_only``) right after connecting, so no
statement can write.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Iterable

from core.errors import TargetError
from core.targets.base import (
    FINGERPRINT_MAX_CHUNKS,
    MAX_CHUNKS_PER_DOCUMENT,
    Fingerprint,
    Hit,
    QueryVectors,
    TargetDescription,
    TargetSetup,
    UnavailableSetup,
    check_dimension,
    fuse_rrf,
    hits_in_order,
    missing_documents,
    pages_unknown,
)
from core.targets.ids import index_document_id, page_numbers
from core.targets.mapping import (
    FieldMapping,
    ResolvedMapping,
    SchemaField,
    check_nested_paths,
    nested_heads,
    resolve_mapping,
)
from core.vectorstores.pgvector import CONNECT_TIMEOUT_S, TEXT_SEARCH_CONFIG, PGVectorConfig, _redact

if TYPE_CHECKING:
    from psycopg.abc import Params, Query

#: Rows read to learn the keys of JSON columns (for mapping roles to dotted paths), and to check
#: a mapped path below them.
JSON_SAMPLE_ROWS = 20
#: pgvector operator classes -> (distance operator, score from distance, what it is).
_OPCLASSES = {
    "vector_cosine_ops": ("<=>", "1 - ({d})", "cosine"), "halfvec_cosine_ops": ("<=>", "1 - ({d})", "cosine"),
    "vector_ip_ops": ("<#>", "-({d})", "inner product"), "halfvec_ip_ops": ("<#>", "-({d})", "inner product"),
    "vector_l2_ops": ("<->", "-({d})", "L2 distance"), "halfvec_l2_ops": ("<->", "-({d})", "L2 distance"),
}
_TEXT_TYPES = ("text", "character varying", "character", "varchar", "name", "citext")
_NUMBER = re.compile(r"^(smallint|integer|bigint|numeric.*|real|double precision)$")


def split_table(table: str) -> tuple[str, str]:
    """``schema.table`` (or ``table``, schema ``public``) as ``(schema, table)``."""
    schema, dot, name = table.rpartition(".")
    return (schema or "public") if dot else "public", name


class PgvectorTableTarget:
    """A PostgreSQL table with a pgvector column (see the module docstring).

    Args:
        name: the target's name in reports.
        config: a ``PGVectorConfig`` (its password is never shown).
        table: ``schema.table`` or ``table``.
        fields: the field mapping named (the rest is inferred from the table's columns).
        vectors: ragtune's query vectors for dense search.

    Raises:
        TargetError: the database cannot be reached, refuses the login, or lacks the table.
        ConfigError: the mapping names a column the table lacks (or a JSON path none of its first
            rows holds), or the table has no text column.
    """

    engine = "pgvector"

    def __init__(self, name: str, config: PGVectorConfig, table: str, *, fields: FieldMapping | None = None,
                 vectors: QueryVectors | None = None) -> None:
        self.name = name
        self.config = config
        self.schema_name, self.table = split_table(table)
        self.vectors = vectors
        self._conn = self._connect()
        try:
            columns = self._columns()
            where = f"target {name} (table {self.schema_name}.{self.table})"
            self.resolved: ResolvedMapping = resolve_mapping(fields or FieldMapping(), columns, where,
                                                             needs_keyword_field=True)
            check_nested_paths(self.resolved, self._sample(), where)
            self._setups, self._unavailable, self._notes = self._plan()
        except BaseException:
            self.close()
            raise
        self._documents: dict[str, set[str]] | None = None

    # ------------------------------------------------------------------------------ database

    def _connect(self) -> Any:
        import psycopg

        try:
            conn = psycopg.connect(self.config.conninfo(), autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)
            conn.execute("SET default_transaction_read_only = on")
        except psycopg.Error as exc:
            reason = " ".join(_redact(str(exc), self.config._secrets()).split())[:500]
            raise TargetError(f"target {self.name}: cannot connect to PostgreSQL at {self.config.describe()}: "
                              f"{reason}") from None
        return conn

    def _sql(self, action: str, query: Query, params: Params | None = None) -> list[tuple[Any, ...]]:
        """Run one read, turning database errors into :class:`TargetError`."""
        import psycopg

        try:
            return self._conn.execute(query, params).fetchall()
        except psycopg.Error as exc:
            reason = " ".join(_redact(str(exc), self.config._secrets()).split())[:500]
            raise TargetError(f"target {self.name}: {action} table {self.schema_name}.{self.table} at "
                              f"{self.config.describe()} failed: {reason}") from None

    def _ident(self) -> Any:
        from psycopg import sql

        return sql.Identifier(self.schema_name, self.table)

    def _columns(self) -> list[SchemaField]:
        rows = self._sql("reading the columns of", (
            "SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.atttypmod, "
            "coalesce((SELECT true FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary "
            "AND i.indnatts = 1 AND i.indkey[0] = a.attnum), false), pg_get_expr(d.adbin, d.adrelid) "
            "FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum "
            "WHERE n.nspname = %s AND c.relname = %s AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum"),
            (self.schema_name, self.table))
        if not rows:
            raise TargetError(f"target {self.name}: table {self.schema_name}.{self.table} does not exist in PostgreSQL "
                              f"at {self.config.describe()}")
        self._generated = {r[0]: r[4] or "" for r in rows}  # every column -> its generation expression
        out: list[SchemaField] = []
        for column, kind, typmod, primary, _ in rows:
            base = kind.split("(")[0]
            if base in ("vector", "halfvec"):
                out.append(SchemaField(column, "vector", dimensions=int(typmod) if typmod and typmod > 0 else None,
                                       key=primary))
            elif base in _TEXT_TYPES or kind == "uuid":
                out.append(SchemaField(column, "text", key=primary))
            elif base == "tsvector":
                out.append(SchemaField(column, "tsvector", searchable=True))
            elif _NUMBER.match(kind):
                out.append(SchemaField(column, "number", key=primary))
            elif base in ("json", "jsonb"):
                out.append(SchemaField(column, "json"))
                out.extend(self._json_keys(column))
            else:
                out.append(SchemaField(column, "other", key=primary))
        return out

    def _json_keys(self, column: str) -> list[SchemaField]:
        """The top-level keys of a JSON column in its first rows, as dotted fields."""
        from psycopg import sql

        rows = self._sql("reading", sql.SQL("SELECT {c}::jsonb FROM {t} WHERE {c} IS NOT NULL LIMIT %s").format(
            c=sql.Identifier(column), t=self._ident()), (JSON_SAMPLE_ROWS,))
        kinds: dict[str, str] = {}
        for (value,) in rows:
            for key, item in (value or {}).items() if isinstance(value, dict) else ():
                kind = "text" if isinstance(item, str) else "number" if isinstance(item, (int, float)) \
                    and not isinstance(item, bool) else "other"
                kinds.setdefault(f"{column}.{key}", kind)
        return [SchemaField(k, v) for k, v in kinds.items()]

    def _sample(self) -> list[dict[str, Any]]:
        """The JSON columns the mapping's dotted paths go through, in the first
        :data:`JSON_SAMPLE_ROWS` rows where one of them is not null, to check those paths; none
        when the mapping names no such path."""
        from psycopg import sql

        heads = nested_heads(self.resolved)
        if not heads:
            return []
        query = sql.SQL("SELECT {s} FROM {t} WHERE {w} LIMIT %s").format(
            s=sql.SQL(", ").join(sql.SQL("{}::jsonb").format(sql.Identifier(h)) for h in heads), t=self._ident(),
            w=sql.SQL(" OR ").join(sql.SQL("{} IS NOT NULL").format(sql.Identifier(h)) for h in heads))
        return [dict(zip(heads, row)) for row in self._sql("reading", query, (JSON_SAMPLE_ROWS,))]

    def _expr(self, name: str | None, as_text: bool = True) -> Any:
        """A column, or a dotted JSON path as ``col #>> '{a,b}'`` (``#>`` when not as text)."""
        from psycopg import sql

        if name is None:
            return sql.SQL("NULL")
        if "." not in name or name in self._generated:  # a column (its name may hold a dot)
            return sql.Identifier(name)
        column, path = name.split(".", 1)
        operator = "#>>" if as_text else "#>"
        return sql.SQL("({c}::jsonb {op} {p})").format(c=sql.Identifier(column), op=sql.SQL(operator),
                                                      p=sql.Literal("{" + ",".join(path.split(".")) + "}"))

    # ------------------------------------------------------------------------------ setups

    def _vector_opclass(self, column: str) -> tuple[str, str, str, str]:
        """``(operator, score expression, metric, where it comes from)`` of the vector column."""
        rows = self._sql("reading the indexes of", (
            "SELECT o.opcname FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid "
            "JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_attribute a ON a.attrelid = c.oid "
            "AND a.attnum = i.indkey[0] JOIN pg_opclass o ON o.oid = i.indclass[0] "
            "WHERE n.nspname = %s AND c.relname = %s AND a.attname = %s"), (self.schema_name, self.table, column))
        for (opclass,) in rows:
            if opclass in _OPCLASSES:
                op, score, metric = _OPCLASSES[opclass]
                return op, score, metric, f"its index's operator class {opclass}"
        return "<=>", "1 - ({d})", "cosine", "no vector index: cosine"

    def _text_config(self, column: str) -> str:
        """The text search configuration of a generated ``tsvector`` column, else ragtune's."""
        found = re.search(r"to_tsvector\('([A-Za-z_]+)'", self._generated.get(column, ""))
        return found.group(1) if found else TEXT_SEARCH_CONFIG

    def _plan(self) -> tuple[list[TargetSetup], list[UnavailableSetup], list[str]]:
        m = self.resolved.mapping
        setups: list[TargetSetup] = []
        unavailable: list[UnavailableSetup] = []
        notes: list[str] = []
        keyword = m.keyword if m.keyword and self.resolved.fields.get(m.keyword, SchemaField("", "")).kind == "tsvector" \
            else None
        if keyword:
            self._config = self._text_config(keyword)
            setups.append(TargetSetup("keyword", "keyword", f"ts_rank_cd on {keyword} ({self._config})",
                                      options=(("tsvector", keyword), ("config", self._config))))
        else:
            unavailable.append(UnavailableSetup("keyword, hybrid*", "the table has no tsvector column"))
        dense_ok = False
        if m.vector is None:
            unavailable.append(UnavailableSetup("dense, hybrid*", "the table has no vector column"))
        else:
            field = self.resolved.field("vector")
            why = check_dimension(m.vector, field.dimensions if field else None, self.vectors, self.name)
            if why:
                unavailable.append(UnavailableSetup("dense, hybrid*", why))
            else:
                self._op, self._score, metric, source = self._vector_opclass(m.vector)
                notes.append(f"dense search orders by {metric} ({source})")
                setups.append(TargetSetup("dense", "dense", f"{metric} on {m.vector}", self.vectors.model_id,
                                          (("vector", m.vector), ("metric", metric))))
                dense_ok = True
        if keyword and dense_ok:
            setups.append(TargetSetup("hybrid-rrf-k60", "hybrid", "dense + keyword, RRF (k = 60) in ragtune",
                                      self.vectors.model_id, (("ranker_k", 60),)))
        return setups, unavailable, notes

    # ------------------------------------------------------------------------------ search

    def _selected(self) -> Any:
        from psycopg import sql

        m = self.resolved.mapping
        return sql.SQL(", ").join([self._expr(m.key), self._expr(m.document), self._expr(m.text),
                                   self._expr(m.page, as_text=False)])

    def _hit(self, row: tuple[Any, ...]) -> Hit:
        key, raw, text, page, score = row
        document, from_id = index_document_id(raw, strip_prefix=self.resolved.mapping.document_prefix)
        pages = page_numbers(page) or ((from_id,) if from_id is not None else ())
        return Hit(document, pages, str(key), str(text or ""), float(score))

    def _dense_rows(self, question: str, k: int) -> list[Hit]:
        from psycopg import sql

        m = self.resolved.mapping
        vector = "[" + ",".join(repr(float(x)) for x in self.vectors.vector(question)) + "]"
        distance = sql.SQL("({c} {op} %(q)s::vector)").format(c=sql.Identifier(m.vector), op=sql.SQL(self._op))
        score = sql.SQL(self._score.replace("{d}", "{dist}")).format(dist=distance)
        query = sql.SQL("SELECT {sel}, {score} FROM {t} ORDER BY {dist} LIMIT %(k)s").format(
            sel=self._selected(), score=score, t=self._ident(), dist=distance)
        return [self._hit(r) for r in self._sql("searching", query, {"q": vector, "k": k})]

    def _keyword_rows(self, question: str, k: int, setup: TargetSetup) -> list[Hit]:
        from psycopg import sql

        tsv = sql.Identifier(setup.option("tsvector") or self.resolved.mapping.keyword)
        config = sql.Literal(setup.option("config") or self._config)
        query = sql.SQL(
            "SELECT {sel}, ts_rank_cd({tsv}, q) AS score FROM {t}, to_tsquery('simple', coalesce(("
            "SELECT string_agg(quote_literal(w), ' | ') FROM unnest(tsvector_to_array(to_tsvector({cfg}::regconfig, "
            "%(q)s))) AS w), '')) q WHERE {tsv} @@ q ORDER BY score DESC LIMIT %(k)s").format(
            sel=self._selected(), tsv=tsv, t=self._ident(), cfg=config)
        return [self._hit(r) for r in self._sql("searching", query, {"q": question, "k": k})]

    def setups(self) -> list[TargetSetup]:
        """The setups the table offers (see the module docstring)."""
        return list(self._setups)

    def search(self, question: str, setup: TargetSetup, top_k: int) -> list[Hit]:
        """Search the table; hybrid fuses its two legs with
        :func:`core.vectorstores.fusion.rrf_fuse` over :func:`~core.vectorstores.fusion.fusion_window`
        candidates each.

        Raises:
            TargetError: the database failed.
        """
        if setup.method == "dense":
            return hits_in_order(self._dense_rows(question, top_k), top_k)
        if setup.method == "keyword":
            return hits_in_order(self._keyword_rows(question, top_k, setup), top_k)
        return fuse_rrf(self._dense_rows, self._keyword_rows, question, top_k, setup)

    def _rows(self) -> Iterable[tuple[Any, Any, Any]]:
        """``(key, raw document, md5 of the text)`` of up to :data:`FINGERPRINT_MAX_CHUNKS` + 1
        rows, streamed (one row in memory at a time).

        Raises:
            TargetError: the database failed.
        """
        import psycopg
        from psycopg import sql

        m = self.resolved.mapping
        query = sql.SQL("SELECT {k}, {d}, md5({x}) FROM {t} LIMIT %s").format(
            k=self._expr(m.key), d=self._expr(m.document), x=self._expr(m.text), t=self._ident())
        try:
            yield from self._conn.cursor().stream(query, (FINGERPRINT_MAX_CHUNKS + 1,))
        except psycopg.Error as exc:
            reason = " ".join(_redact(str(exc), self.config._secrets()).split())[:500]
            raise TargetError(f"target {self.name}: reading table {self.schema_name}.{self.table} failed: "
                              f"{reason}") from None

    def describe(self) -> TargetDescription:
        """The table's description: row count, distinct documents, and a fingerprint of the
        columns and every row's key, document and text (up to
        :data:`~core.targets.base.FINGERPRINT_MAX_CHUNKS` rows)."""
        from psycopg import sql

        m = self.resolved.mapping
        (count,), = self._sql("counting", sql.SQL("SELECT count(*) FROM {}").format(self._ident()))
        fingerprint = Fingerprint({"columns": [f.to_dict() for f in self.resolved.fields.values()],
                                   "mapping": m.named()})
        documents: dict[str, set[str]] = {}
        seen_page = bool(m.page)  # the page column is not read here: a mapped one is taken as known
        for key, raw, text in self._rows():
            if not fingerprint.add(key, raw, text):
                break
            document, page = index_document_id(raw, strip_prefix=m.document_prefix)
            documents.setdefault(document, set()).add(str(raw))
            seen_page = seen_page or page is not None
        complete = fingerprint.complete
        if complete:
            self._documents = documents
        value, basis = fingerprint.result({"rows": int(count)})
        return TargetDescription(
            engine=self.engine, location=self.config.describe(), index=f"{self.schema_name}.{self.table}",
            n_chunks=int(count), n_documents=len(documents) if complete else None, fingerprint=value,
            fingerprint_basis=basis, fields=tuple(m.named().items()), inferred=self.resolved.inferred,
            notes=tuple(self._notes), unavailable=tuple(self._unavailable), pages_unknown=pages_unknown(m, seen_page))

    def _distinct_documents(self) -> dict[str, set[str]]:
        from psycopg import sql

        if self._documents is None:
            m = self.resolved.mapping
            rows = self._sql("listing the documents of", sql.SQL("SELECT DISTINCT {d} FROM {t}").format(
                d=self._expr(m.document), t=self._ident()))
            documents: dict[str, set[str]] = {}
            for (raw,) in rows:
                documents.setdefault(index_document_id(raw, strip_prefix=m.document_prefix)[0], set()).add(str(raw))
            self._documents = documents
        return self._documents

    def missing(self, expected: Iterable[str]) -> list[str]:
        """The expected documents no row names."""
        return missing_documents(expected, self._distinct_documents())

    def chunks_of(self, document_ids: Iterable[str]) -> dict[str, list[Hit]]:
        """The rows of each document, by the mapped document column or JSON path."""
        from psycopg import sql

        documents = self._distinct_documents()
        out: dict[str, list[Hit]] = {}
        for document in dict.fromkeys(document_ids):
            raw = sorted(documents.get(document, ()))
            if raw:
                query = sql.SQL("SELECT {sel}, 0.0 FROM {t} WHERE {d} = ANY(%s) LIMIT %s").format(
                    sel=self._selected(), t=self._ident(), d=self._expr(self.resolved.mapping.document))
                out[document] = [self._hit(r) for r in self._sql("reading", query, (raw, MAX_CHUNKS_PER_DOCUMENT))]
        return out

    def close(self) -> None:
        """Close the connection."""
        if getattr(self, "_conn", None) is not None and not self._conn.closed:
            self._conn.close()


__all__ = ["PgvectorTableTarget", "split_table"]
