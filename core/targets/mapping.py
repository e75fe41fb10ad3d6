"""Field mapping: which field of an index holds the chunk's key, text, document, page and vector.

A targets file (or settings) may name each role; a role it leaves out is inferred from the
index's schema when exactly one field fits, and the description says what was inferred. A
mapping that names a field the index lacks, a role that several fields fit equally, or an index
without a text field is a :class:`~core.errors.ConfigError` raised before any search.

Field names may be dotted paths into nested payloads (``metadata.source`` in a Qdrant payload,
a key of a JSON column in PostgreSQL or Milvus). A schema cannot list a JSON field's keys, so
such a path is checked against the first records the index gives (:func:`check_nested_paths`):
one none of them holds is an error before any search too.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any, Mapping, Sequence

from core.errors import ConfigError

#: The roles a mapping names, in the order reports show them.
ROLES: tuple[str, ...] = ("key", "text", "document", "page", "vector", "keyword", "semantic_configuration")
#: Field kinds a schema reports.
KINDS: tuple[str, ...] = ("text", "vector", "number", "sparse", "tsvector", "json", "other")
#: Names that say "the chunk's text", most telling first.
TEXT_NAMES: tuple[str, ...] = ("text", "content", "chunk", "page_content", "chunk_text", "body", "passage",
                               "document", "contents")
#: Names that say "the document this chunk comes from", most telling first.
DOCUMENT_NAMES: tuple[str, ...] = ("document_id", "doc_id", "documentid", "doc_path", "document_path",
                                   "document_name", "sourcefile", "source_file", "source", "source_path",
                                   "file_path", "filepath", "path", "file_name", "filename", "parent_id",
                                   "metadata_storage_path", "sourcepage", "url", "uri", "title")
#: Parts of a field's name that say it holds a file name, path or address (``blob_path``,
#: ``file_url``, ``source_uri``): such a field is the document rather than a ``title``.
FILE_LIKE_PARTS: tuple[str, ...] = ("path", "url", "uri", "file", "source")
#: Names of the document field that are only a title, taken when no file-like field is there.
TITLE_NAMES: tuple[str, ...] = ("title",)
#: Names that say "the page".
PAGE_NAMES: tuple[str, ...] = ("page", "page_number", "pages", "page_no", "pagenumber", "page_num")
#: Names of text fields that hold a page reference (``X.pdf#page=3``) beside the document's own
#: field (Azure's RAG samples: ``sourcefile`` and ``sourcepage``); the page when no field of
#: :data:`PAGE_NAMES` is there.
PAGE_REFERENCE_NAMES: tuple[str, ...] = ("sourcepage", "source_page")


@dataclass(frozen=True)
class SchemaField:
    """One field of an index, as the engine describes it.

    Attributes:
        name: the field's name (a dotted path for nested payload keys).
        kind: one of :data:`KINDS`.
        dimensions: a vector field's number of dimensions (None when not a vector, or unknown).
        key: the index's key (primary key, point id).
        searchable: full-text searchable (Azure ``searchable``; a text column with a text-search
            index).
        filterable: can be filtered on (selecting a document's chunks needs it).
    """

    name: str
    kind: str
    dimensions: int | None = None
    key: bool = False
    searchable: bool = False
    filterable: bool = True

    def to_dict(self) -> dict[str, Any]:
        """The field as JSON (for fingerprints and reports)."""
        return {"name": self.name, "kind": self.kind, "dimensions": self.dimensions, "key": self.key,
                "searchable": self.searchable, "filterable": self.filterable}


@dataclass(frozen=True)
class FieldMapping:
    """Which field plays which role (None: infer it, or the index has none).

    Attributes:
        key: the chunk's id.
        text: the chunk's text (required: inferred when not named).
        document: the document's id or path (required).
        page: the page number(s) (optional).
        vector: the vector field dense search uses (optional: without one, keyword setups only).
        keyword: the field keyword search uses where the engine needs one named (a PostgreSQL
            ``tsvector`` column, a Milvus BM25 sparse field); optional.
        semantic_configuration: Azure AI Search's semantic configuration (optional).
        document_prefix: a prefix the index puts before the golden file's document ids
            (a folder or a blob container URL), removed before matching.
    """

    key: str | None = None
    text: str | None = None
    document: str | None = None
    page: str | None = None
    vector: str | None = None
    keyword: str | None = None
    semantic_configuration: str | None = None
    document_prefix: str = ""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None, where: str) -> "FieldMapping":
        """A mapping from a targets file's ``fields`` block.

        Raises:
            ConfigError: an unknown role or a value that is not a non-empty string (``where``
                says which file and target).
        """
        if data is None:
            return cls()
        if not isinstance(data, Mapping):
            raise ConfigError(f"{where}: 'fields' must map roles to field names, got {type(data).__name__}")
        known = {f.name for f in fields(cls)}
        values: dict[str, Any] = {}
        for role, value in data.items():
            if role not in known:
                raise ConfigError(f"{where}: unknown field role {role!r}; roles are {', '.join(sorted(known))}")
            if not isinstance(value, str) or not value.strip():
                raise ConfigError(f"{where}: fields.{role} must be a field name, got {value!r}")
            values[role] = value.strip()
        return cls(**values)

    def named(self) -> dict[str, str]:
        """The roles given a field, ``{role: field}`` in :data:`ROLES` order."""
        return {r: getattr(self, r) for r in ROLES if getattr(self, r)}


@dataclass(frozen=True)
class ResolvedMapping:
    """A mapping checked against a schema, every required role filled.

    Attributes:
        mapping: the roles and their fields.
        inferred: one sentence per role inferred from the schema.
        fields: the schema it was checked against, by name.
    """

    mapping: FieldMapping
    inferred: tuple[str, ...]
    fields: Mapping[str, SchemaField]

    def field(self, role: str) -> SchemaField | None:
        """The schema field playing ``role``, or None."""
        name = getattr(self.mapping, role)
        return None if name is None else self.fields.get(name)


def _pick(candidates: Sequence[SchemaField], names: Sequence[str]) -> list[SchemaField]:
    """The candidates whose name (or last dotted part), lower-cased, is the most telling of
    ``names``; all candidates of that name."""
    def short(f: SchemaField) -> str:
        return f.name.rsplit(".", 1)[-1].lower()

    for name in names:
        found = [f for f in candidates if short(f) == name]
        if found:
            return found
    return []


def _infer(role: str, pool: list[SchemaField], names: Sequence[str], where: str, required: bool,
           sole: str) -> tuple[SchemaField | None, str | None]:
    """One field for ``role`` from ``pool``: the only one, else the one with the most telling
    name of ``names``. Several equally fitting fields are an error; none is an error when
    ``required``. ``sole`` says why a lone candidate fits (``the only vector field``)."""
    if len(pool) == 1:
        return pool[0], f"{role}: {pool[0].name!r} ({sole})"
    named = _pick(pool, names)
    if len(named) == 1:
        return named[0], f"{role}: {named[0].name!r} (by its name)"
    if not pool:
        if required:
            raise ConfigError(f"{where}: the index has no field to use as {role}; name one with fields.{role} in "
                              "the targets file")
        return None, None
    several = named or pool
    raise ConfigError(f"{where}: several fields could be the {role} ({', '.join(f.name for f in several)}); "
                      f"name one with fields.{role} in the targets file")


def resolve_mapping(given: FieldMapping, schema: Sequence[SchemaField], where: str, *,
                    needs_keyword_field: bool = False, semantic: Sequence[str] = (),
                    default_semantic: str | None = None) -> ResolvedMapping:
    """Check ``given`` against ``schema`` and infer the roles it leaves out.

    Inference: ``key`` is the schema's key field; ``text`` the one text field, else the text
    field named most like :data:`TEXT_NAMES`; ``document`` likewise by :data:`DOCUMENT_NAMES`
    (required), except that a ``title`` gives way to the one other text field whose name says
    a file, path or address (:data:`FILE_LIKE_PARTS`: ``blob_path``, ``file_url``); ``page`` by :data:`PAGE_NAMES`, else the one text field named as in
    :data:`PAGE_REFERENCE_NAMES` (``sourcepage`` beside ``sourcefile``: its ``#page=N`` is
    the page) (optional); ``vector`` the one vector field
    (several: an error, name one; none: keyword setups only); ``keyword`` the one ``tsvector``
    or sparse field when ``needs_keyword_field``; ``semantic_configuration`` the index's
    default, else its only one.

    Args:
        given: the roles named in the targets file or settings.
        schema: the index's fields.
        where: the target and file, for messages.
        needs_keyword_field: the engine searches keywords in a named field (PostgreSQL,
            Milvus), so ``keyword`` is inferred too.
        semantic: the index's semantic configuration names (Azure AI Search).
        default_semantic: the index's default semantic configuration.

    Returns:
        The resolved mapping, with one sentence per inferred role.

    Raises:
        ConfigError: a named field the schema lacks (the message lists the schema's fields),
            a named field of the wrong kind, no text or document field, or a role several
            fields fit equally.
    """
    by_name = {f.name: f for f in schema}
    shown = ", ".join(sorted(by_name)) or "none"
    for role, name in given.named().items():
        if role == "semantic_configuration":
            if name not in semantic:
                raise ConfigError(f"{where}: fields.semantic_configuration names {name!r}, which the index lacks "
                                  f"(its semantic configurations: {', '.join(semantic) or 'none'})")
            continue
        if name not in by_name and not _nested(name, by_name):
            raise ConfigError(f"{where}: fields.{role} names {name!r}, which the index lacks (its fields: {shown})")
    vector = by_name.get(given.vector or "")
    if vector is not None and vector.kind != "vector":
        raise ConfigError(f"{where}: fields.vector names {vector.name!r}, a {vector.kind} field, not a vector field")
    text = by_name.get(given.text or "")
    if text is not None and text.kind not in ("text", "other"):
        raise ConfigError(f"{where}: fields.text names {text.name!r}, a {text.kind} field: the chunk's text must be a "
                          "text field")
    inferred: list[str] = []
    values = given.named()
    taken = set(values.values())
    free = [f for f in schema if f.name not in taken]

    def fill(role: str, pool: list[SchemaField], names: Sequence[str], required: bool, sole: str) -> None:
        if role in values:
            return
        found, why = _infer(role, pool, names, where, required, sole)
        if found is not None:
            values[role] = found.name
            taken.add(found.name)
            inferred.append(str(why))

    keys = [f for f in free if f.key]
    if "key" not in values and len(keys) == 1:
        values["key"] = keys[0].name
        taken.add(keys[0].name)
        inferred.append(f"key: {keys[0].name!r} (the index's key)")
    texts = [f for f in schema if f.kind == "text" and f.name not in taken and not f.key]
    if len([f for f in texts if f.searchable]) == 1:
        fill("text", [f for f in texts if f.searchable], TEXT_NAMES, True, "the only searchable text field")
    else:
        fill("text", texts, TEXT_NAMES, True, "the only text field")
    if "document" not in values:
        documents = [f for f in schema if f.kind in ("text", "other") and f.name not in taken
                     and _pick([f], DOCUMENT_NAMES)]
        best = _pick(documents, DOCUMENT_NAMES)
        file_like = [f for f in schema if f.kind == "text" and f.name not in taken and not f.key
                     and f not in documents and any(p in f.name.rsplit(".", 1)[-1].lower() for p in FILE_LIKE_PARTS)]
        if best and all(_pick([f], TITLE_NAMES) for f in best) and len(file_like) == 1:
            values["document"] = file_like[0].name
            taken.add(file_like[0].name)
            inferred.append(f"document: {file_like[0].name!r} (its name says a file, path or address; preferred "
                            f"over {best[0].name!r})")
        else:
            fill("document", documents, DOCUMENT_NAMES, True, "by its name")
    fill("page", [f for f in schema if f.kind in ("number", "text", "other") and f.name not in taken
                  and _pick([f], PAGE_NAMES)], PAGE_NAMES, False, "by its name")
    references = [f for f in schema if f.kind == "text" and f.name not in taken and _pick([f], PAGE_REFERENCE_NAMES)]
    if "page" not in values and "document" in values and len(references) == 1:
        values["page"] = references[0].name
        taken.add(references[0].name)
        inferred.append(f"page: {references[0].name!r} (by its name: a page reference such as X.pdf#page=3 beside "
                        f"the document field {values['document']!r})")
    fill("vector", [f for f in schema if f.kind == "vector" and f.name not in taken], (), False,
         "the only vector field")
    if needs_keyword_field:
        fill("keyword", [f for f in schema if f.kind in ("tsvector", "sparse") and f.name not in taken], (), False,
             "the only keyword-search field")
    if "semantic_configuration" not in values and semantic:
        chosen = default_semantic if default_semantic in semantic else (semantic[0] if len(semantic) == 1 else None)
        if chosen:
            values["semantic_configuration"] = chosen
            why = "the index's default" if chosen == default_semantic else "the index's only one"
            inferred.append(f"semantic_configuration: {chosen!r} ({why})")
    return ResolvedMapping(replace(given, **values), tuple(inferred), by_name)


def _nested(name: str, by_name: Mapping[str, SchemaField]) -> bool:
    """True when ``name`` is a dotted path below a JSON field of the schema (``meta.source``
    below ``meta``), which a schema cannot list key by key."""
    head = name.split(".", 1)[0]
    return "." in name and head in by_name and by_name[head].kind == "json"


#: Sub-keys shown at most when a dotted path is in none of the records read.
SHOWN_KEYS = 30


def nested_heads(resolved: ResolvedMapping) -> list[str]:
    """The JSON fields the roles of :func:`nested_paths` go through (``["meta"]`` for
    ``meta.source``), in order, each once: what a sample of records must hold to check them."""
    return list(dict.fromkeys(p.split(".", 1)[0] for p in nested_paths(resolved).values()))


def nested_paths(resolved: ResolvedMapping) -> dict[str, str]:
    """The roles named as a dotted path below a JSON field that the schema does not list
    (``meta.source`` below a ``meta`` the schema knows only as JSON): ``{role: path}``. Only
    the records (or, for Azure AI Search, the complex field's sub-fields) can tell whether such
    a path is there."""
    return {role: name for role, name in resolved.mapping.named().items()
            if role != "semantic_configuration" and name not in resolved.fields and _nested(name, resolved.fields)}


def _walk(record: Any, parts: Sequence[str]) -> tuple[bool, Any]:
    """``(found, value)`` of the key path ``parts`` through nested mappings of ``record``."""
    value = record
    for part in parts:
        if not isinstance(value, Mapping) or part not in value:
            return False, None
        value = value[part]
    return True, value


def _has_path(record: Mapping[str, Any], name: str) -> bool:
    """True when ``record`` holds ``name`` as :func:`read_path` reads it (a top-level key, else a
    dotted path through nested mappings), even with a null value."""
    return name in record or _walk(record, name.split("."))[0]


def _keys_below(records: Sequence[Mapping[str, Any]], path: str) -> str:
    """What the records hold at the deepest level of ``path`` some of them reach as a mapping
    (``'meta' holds: file, page``)."""
    parts = path.split(".")
    for depth in range(len(parts) - 1, 0, -1):
        found = [value for ok, value in (_walk(r, parts[:depth]) for r in records) if ok and isinstance(value, Mapping)]
        if found:
            keys = sorted({str(k) for value in found for k in value})
            if not keys:
                return f"{'.'.join(parts[:depth])!r} holds no keys"
            more = f" and {len(keys) - SHOWN_KEYS} more" if len(keys) > SHOWN_KEYS else ""
            return f"{'.'.join(parts[:depth])!r} holds: {', '.join(keys[:SHOWN_KEYS])}{more}"
    return f"{parts[0]!r} holds no keys in any of them"


def check_nested_paths(resolved: ResolvedMapping, records: Sequence[Mapping[str, Any]], where: str) -> None:
    """Check the roles of :func:`nested_paths` against a sample of the index's records.

    A JSON field has no schema of its own, so a path below it is checked against the first
    records the index gives: a path none of them holds (not even as null) is a mapping error,
    as a field the schema lacks is. Without records (an empty index) nothing is checked.

    Args:
        resolved: the mapping checked against the schema.
        records: the records read (their JSON fields parsed to mappings), keyed by field name.
        where: the target and index, for messages.

    Raises:
        ConfigError: a role's path that no record holds; the message names the role, the
            path, how many records were read and the keys they hold at the deepest level of
            the path they reach (``fields.document names 'meta.nofile': no record of the
            first 20 has it; 'meta' holds: file, page``).
    """
    if not records:
        return
    for role, path in nested_paths(resolved).items():
        if not any(_has_path(r, path) for r in records):
            raise ConfigError(f"{where}: fields.{role} names {path!r}: no record of the first {len(records)} has it; "
                              f"{_keys_below(records, path)}")


def read_path(record: Mapping[str, Any], name: str | None) -> Any:
    """The value at ``name`` in ``record``: a top-level key, else a dotted path through nested
    mappings (``metadata.source``); None when absent."""
    if not name:
        return None
    if name in record:
        return record[name]
    return _walk(record, name.split("."))[1]


__all__ = ["DOCUMENT_NAMES", "FILE_LIKE_PARTS", "FieldMapping", "KINDS", "PAGE_NAMES", "PAGE_REFERENCE_NAMES", "ROLES",
           "ResolvedMapping", "SHOWN_KEYS", "SchemaField", "TEXT_NAMES", "TITLE_NAMES", "check_nested_paths",
           "nested_heads", "nested_paths", "read_path", "resolve_mapping"]
