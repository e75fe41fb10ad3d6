"""Targets' shared parts: document ids in the golden file's form, field mapping with inference,
targets files and ``--target`` options, fingerprints. Expected values are worked out by hand
from the rules in each docstring."""

from __future__ import annotations

import pytest

from core.errors import ConfigError
from core.golden.types import Target
from core.targets.base import Fingerprint, Hit, TargetSetup, hits_in_order
from core.targets.ids import index_document_id, page_numbers
from core.targets.mapping import FieldMapping, SchemaField, read_path, resolve_mapping
from core.targets.spec import parse_target_option, parse_targets_text


@pytest.mark.parametrize("value, expected", [
    ("Benefit_Options.pdf#page=2", ("Benefit_Options.pdf", 2)),
    ("Benefit_Options.pdf#PAGE=3", ("Benefit_Options.pdf", 3)),
    ("docs\\hr\\leave.md", ("docs/hr/leave.md", None)),
    ("./hr/leave.md", ("hr/leave.md", None)),
    ("/hr/leave.md", ("hr/leave.md", None)),
    ("https://acct.blob.core.windows.net/docs/hr/leave%20policy.md", ("hr/leave policy.md", None)),
    ("https://acct.blob.core.windows.net/docs/a.pdf#page=4", ("a.pdf", 4)),
    ("http://127.0.0.1:10000/devstoreaccount1/docs/a.pdf", ("a.pdf", None)),
    ("s3://bucket/a/b.txt", ("a/b.txt", None)),
    ("x.pdf#section=2", ("x.pdf#section=2", None)),  # another anchor: kept whole, as the golden reader refuses it
    ("Cafe\u0301.md", ("Caf\u00e9.md", None)),  # NFD in the index, NFC in the golden file
    ("", ("", None)),
    (None, ("", None)),
])
def test_index_document_ids_take_the_golden_files_form(value, expected):
    assert index_document_id(value) == expected


def test_the_golden_side_and_the_index_side_meet():
    # the golden file's parser (Target.parse) and the index side give the same id for an NFD name
    golden = Target.parse("Cafe\u0301.md#page=2")
    assert index_document_id("https://acct.blob.core.windows.net/c/Caf%C3%A9.md#page=2") == (golden.document_id, 2)


def test_a_prefix_is_stripped_in_the_same_form():
    url = "https://acct.blob.core.windows.net/docs/corpus/hr/x.md"
    assert index_document_id(url, strip_prefix="corpus/") == ("hr/x.md", None)
    assert index_document_id("corpus\\hr\\x.md", strip_prefix="./corpus") == ("hr/x.md", None)
    assert index_document_id("other/x.md", strip_prefix="corpus/") == ("other/x.md", None)


def test_page_numbers():
    assert page_numbers(3) == (3,)
    assert page_numbers("4") == (4,)
    assert page_numbers(2.0) == (2,)
    assert page_numbers([1, 2, 2, "3"]) == (1, 2, 3)
    assert page_numbers(0) == ()
    assert page_numbers(2.5) == ()
    assert page_numbers("two") == ()
    assert page_numbers(True) == ()
    assert page_numbers(None) == ()


AZURE_LIKE = [
    SchemaField("id", "text", key=True, searchable=False),
    SchemaField("content", "text", searchable=True),
    SchemaField("title", "text", searchable=True),
    SchemaField("sourcefile", "text"),
    SchemaField("sourcepage", "text"),
    SchemaField("page", "number"),
    SchemaField("embedding", "vector", dimensions=384),
]


def test_inference_fills_every_role_it_can_and_says_how():
    resolved = resolve_mapping(FieldMapping(), AZURE_LIKE, "t", semantic=("a", "b"), default_semantic="b")
    m = resolved.mapping
    assert (m.key, m.text, m.document, m.page, m.vector, m.semantic_configuration) == (
        "id", "content", "sourcefile", "page", "embedding", "b")
    assert resolved.inferred == (
        "key: 'id' (the index's key)",
        "text: 'content' (by its name)",
        "document: 'sourcefile' (by its name)",  # sourcefile comes before sourcepage in DOCUMENT_NAMES
        "page: 'page' (by its name)",
        "vector: 'embedding' (the only vector field)",
        "semantic_configuration: 'b' (the index's default)",
    )


def test_named_roles_are_kept_and_not_reported_as_inferred():
    resolved = resolve_mapping(FieldMapping(text="title", document="sourcepage"), AZURE_LIKE, "t")
    assert (resolved.mapping.text, resolved.mapping.document) == ("title", "sourcepage")
    assert not any(line.startswith(("text:", "document:")) for line in resolved.inferred)


def test_a_named_field_the_index_lacks_is_an_error_listing_the_fields():
    with pytest.raises(ConfigError) as err:
        resolve_mapping(FieldMapping(text="body"), AZURE_LIKE, "targets.yaml:3 (target prod)")
    message = str(err.value)
    assert "targets.yaml:3 (target prod): fields.text names 'body', which the index lacks" in message
    assert "content, embedding, id, page, sourcefile, sourcepage, title" in message


def test_no_text_field_is_an_error():
    with pytest.raises(ConfigError, match="no field to use as text"):
        resolve_mapping(FieldMapping(), [SchemaField("id", "text", key=True), SchemaField("v", "vector", 3)], "t")


def test_equally_fitting_fields_are_an_error_not_a_guess():
    schema = [SchemaField("id", "text", key=True), SchemaField("body_a", "text"), SchemaField("body_b", "text"),
              SchemaField("source", "text")]
    with pytest.raises(ConfigError, match=r"several fields could be the text \(body_a, body_b, source\)"):
        resolve_mapping(FieldMapping(), schema, "t")
    vectors = [*AZURE_LIKE, SchemaField("embedding2", "vector", dimensions=384)]
    with pytest.raises(ConfigError, match=r"several fields could be the vector \(embedding, embedding2\)"):
        resolve_mapping(FieldMapping(), vectors, "t")


def test_no_vector_field_leaves_vector_empty():
    resolved = resolve_mapping(FieldMapping(), [f for f in AZURE_LIKE if f.kind != "vector"], "t")
    assert resolved.mapping.vector is None


def test_wrong_kinds_and_unknown_semantic_configurations_are_errors():
    with pytest.raises(ConfigError, match="a text field, not a vector field"):
        resolve_mapping(FieldMapping(vector="content"), AZURE_LIKE, "t")
    with pytest.raises(ConfigError, match="semantic configurations: a"):
        resolve_mapping(FieldMapping(semantic_configuration="zzz"), AZURE_LIKE, "t", semantic=("a",))


def test_nested_payload_paths():
    schema = [SchemaField("page_content", "text"), SchemaField("metadata", "json"),
              SchemaField("metadata.source", "text"), SchemaField("metadata.page", "number")]
    resolved = resolve_mapping(FieldMapping(), schema, "t")
    assert (resolved.mapping.text, resolved.mapping.document, resolved.mapping.page) == (
        "page_content", "metadata.source", "metadata.page")
    # a key below a JSON field the sample did not show is accepted
    assert resolve_mapping(FieldMapping(document="metadata.path"), schema, "t").mapping.document == "metadata.path"
    assert read_path({"metadata": {"source": "a.md"}}, "metadata.source") == "a.md"
    assert read_path({"a.b": 1}, "a.b") == 1
    assert read_path({"metadata": None}, "metadata.source") is None


def test_targets_file_with_lines_and_errors():
    text = ("targets:\n"
            "  - name: prod\n"
            "    kind: azure-search\n"
            "    endpoint: https://reader:pw@my.search.windows.net\n"
            "    index: docs\n"
            "    fields: {text: content, document: sourcefile}\n"
            "  - {name: cand, kind: pgvector, dsn: 'postgresql://u:s3cret@db:5433/rag', table: chunks}\n")
    prod, cand = parse_targets_text(text, "t.yaml")
    assert (prod.name, prod.kind, prod.index, prod.fields.text, prod.source) == (
        "prod", "azure-search", "docs", "content", "t.yaml:2 (target prod)")
    assert cand.source == "t.yaml:7 (target cand)"
    # credentials are never shown
    assert "pw" not in prod.shown_location() and prod.shown_location() == "https://my.search.windows.net"
    assert "s3cret" not in repr(cand) and cand.shown_location() == "db:5433/rag as u"
    bad = text.replace("table: chunks", "table: chunks, collection: x")
    with pytest.raises(ConfigError, match=r"t.yaml:7 \(target cand\): a pgvector target takes dsn or table, not collection"):
        parse_targets_text(bad, "t.yaml")
    with pytest.raises(ConfigError, match=r"t.yaml:2 \(target prod\): unknown field role 'txt'"):
        parse_targets_text(text.replace("text: content", "txt: content"), "t.yaml")
    with pytest.raises(ConfigError, match="two targets are named 'prod'"):
        parse_targets_text(text.replace("name: cand", "name: prod"), "t.yaml")
    with pytest.raises(ConfigError, match=r"t.yaml:3: not valid YAML"):
        parse_targets_text("targets:\n  - name: a\n   kind: [\n", "t.yaml")
    with pytest.raises(ConfigError, match="kept for the collection built from --docs"):
        parse_targets_text("- {name: ragtune, kind: qdrant, path: q, collection: c}\n", "t.yaml")


def test_target_options():
    spec = parse_target_option("pgvector:postgresql://u:s3cret@db/rag#public.chunks")
    assert (spec.name, spec.index, spec.location) == ("pgvector:public.chunks", "public.chunks",
                                                      "postgresql://u:s3cret@db/rag")
    assert "s3cret" not in spec.name and "s3cret" not in repr(spec)
    assert parse_target_option("azure-search:docs").location == ""
    assert parse_target_option("azure-search:https://x.search.windows.net#docs").location == "https://x.search.windows.net"
    with pytest.raises(ConfigError, match="KIND one of azure-search, pgvector, qdrant, milvus"):
        parse_target_option("elastic:x#y")
    with pytest.raises(ConfigError, match="give the collection after '#'"):
        parse_target_option("qdrant:/tmp/q")


def test_fingerprint_is_order_free_and_sees_changes():
    def make(rows, schema=("a",)):
        f = Fingerprint(list(schema))
        for r in rows:
            f.add(*r)
        return f.result({"n": len(rows)})

    rows = [("1", "a.md", "x"), ("2", "b.md", "y")]
    assert make(rows) == make(list(reversed(rows)))
    assert make(rows)[0] != make([("1", "a.md", "x"), ("2", "b.md", "y!")])[0]
    assert make(rows)[0] != make(rows, schema=("b",))[0]
    assert make(rows)[1] == "schema and every chunk's id, document and text"


def test_setups_hits_and_dimensions():
    with pytest.raises(ConfigError):
        TargetSetup("a/b", "dense")
    with pytest.raises(ConfigError):
        TargetSetup("x", "sparse")
    setup = TargetSetup("keyword-full", "keyword", options=(("query_type", "full"),))
    assert setup.option("query_type") == "full" and setup.to_dict()["options"] == {"query_type": "full"}
    hits = [Hit("a", (), "1", "t", 0.5), Hit("b", (), "2", "t", 0.9), Hit("c", (), "3", "t", 0.5)]
    assert [h.document_id for h in hits_in_order(hits, 2)] == ["b", "a"]
    chunk = hits[1].retrieved(1)
    assert (chunk.chunk.document_id, chunk.rank, chunk.score) == ("b", 1, 0.9)



def test_a_page_reference_beside_the_document_is_the_page_and_says_so():
    # Azure's RAG samples: sourcefile "X.pdf" and sourcepage "X.pdf#page=3", no page field
    schema = [f for f in AZURE_LIKE if f.name != "page"]
    resolved = resolve_mapping(FieldMapping(), schema, "t")
    assert (resolved.mapping.document, resolved.mapping.page) == ("sourcefile", "sourcepage")
    assert "page: 'sourcepage' (by its name: a page reference such as X.pdf#page=3 beside the document field " \
           "'sourcefile')" in resolved.inferred
    # a page field by its name still wins, and a named page is kept
    assert resolve_mapping(FieldMapping(), AZURE_LIKE, "t").mapping.page == "page"
    assert resolve_mapping(FieldMapping(page="category"), schema + [SchemaField("category", "text")],
                           "t").mapping.page == "category"
    assert page_numbers("Benefit_Options.pdf#page=3") == (3,)
    assert page_numbers(["a.pdf#page=2", "a.pdf#page=2", "a.pdf"]) == (2,)
    assert page_numbers("a.pdf#section=2") == ()


def test_pages_unknown_says_which_fields_were_looked_at():
    from core.targets.base import pages_unknown

    assert pages_unknown(FieldMapping(document="sourcefile"), seen_page=True) is None
    assert pages_unknown(FieldMapping(document="sourcefile"), seen_page=False) == (
        "no page field is mapped and the document field 'sourcefile' names no page (#page=N); name one with "
        "fields.page in the targets file")
    assert pages_unknown(FieldMapping(document="sourcefile", page="sourcepage"), seen_page=False) == (
        "no chunk read holds a page in field 'sourcepage'")


@pytest.mark.parametrize("value, expected", [
    # Azurite's default account, then the container, then the name
    ("http://127.0.0.1:10000/devstoreaccount1/docs/hr/a.pdf", ("hr/a.pdf", None)),
    ("http://localhost:10000/devstoreaccount1/docs/a.pdf#page=2", ("a.pdf", 2)),
    # any other local address keeps its path
    ("http://localhost:8000/files/hr/a.pdf", ("files/hr/a.pdf", None)),
    ("http://127.0.0.1:8080/static/a.pdf", ("static/a.pdf", None)),
])
def test_only_azurite_urls_lose_an_account_and_a_container(value, expected):
    assert index_document_id(value) == expected


def test_a_prefix_is_stripped_at_a_folder_boundary_only():
    assert index_document_id("docs/a.pdf", strip_prefix="docs") == ("a.pdf", None)
    assert index_document_id("docs/a.pdf", strip_prefix="docs/") == ("a.pdf", None)
    assert index_document_id("docsfoo/a.pdf", strip_prefix="docs") == ("docsfoo/a.pdf", None)
    assert index_document_id("https://acct.blob.core.windows.net/c/docsfoo/a.pdf",
                             strip_prefix="https://acct.blob.core.windows.net/c/docs") == ("docsfoo/a.pdf", None)


def test_a_title_gives_way_to_a_field_named_as_a_file_or_path():
    schema = [SchemaField("id", "text", key=True), SchemaField("content", "text", searchable=True),
              SchemaField("title", "text"), SchemaField("blob_path", "text")]
    resolved = resolve_mapping(FieldMapping(), schema, "t")
    assert resolved.mapping.document == "blob_path"
    assert "document: 'blob_path' (its name says a file, path or address; preferred over 'title')" in resolved.inferred
    # without a file-like field the title is still the document, by its name
    only_title = resolve_mapping(FieldMapping(), schema[:3], "t")
    assert (only_title.mapping.document, "document: 'title' (by its name)" in only_title.inferred) == ("title", True)
    # a named document is kept
    assert resolve_mapping(FieldMapping(document="title"), schema, "t").mapping.document == "title"
