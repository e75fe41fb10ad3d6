"""ragtune's own output folders are never read as documents: below the documents folder they are
skipped as one entry each, a documents folder that is one is refused, and documents
downloaded into an output folder (``<out>/inputs/...``) still load."""

from __future__ import annotations

import json

import pytest

from core.documents import list_document_ids, load_documents
from core.documents.loader import _outside_output_folders
from core.errors import DocumentError
from core.workspace import EMBEDDING_CACHE, MARKER, Workspace, output_folder_sign


def _docs(root):
    root.mkdir(parents=True, exist_ok=True)
    (root / "paris.txt").write_text("Paris is the capital of France.", encoding="utf-8")
    (root / "notes.md").write_text("# Notes\n\nTokyo is the capital of Japan.", encoding="utf-8")
    return root


def _earlier_output(out):
    """An output folder as a run leaves it: a JSON report (a supported type), a golden copy, a database."""
    (out / "retrieval" / "runs" / "r1").mkdir(parents=True)
    (out / "retrieval" / "runs" / "r1" / "report.json").write_text(json.dumps({"setups": {"keyword": 1.0}}),
                                                                   encoding="utf-8")
    (out / "golden_dataset").mkdir()
    (out / "golden_dataset" / "abc.jsonl").write_text('{"question": "q"}\n', encoding="utf-8")
    (out / "milvus.db").write_bytes(b"\x00" * 16)


def test_create_writes_the_marker_once(tmp_path):
    ws = Workspace.at(tmp_path / "a" / "out").create()
    marker = tmp_path / "a" / "out" / MARKER
    assert marker.is_file() and "ragtune" in marker.read_text(encoding="utf-8")
    marker.write_text("kept", encoding="utf-8")
    assert ws.create() is ws and marker.read_text(encoding="utf-8") == "kept"  # a second call changes nothing
    assert output_folder_sign(ws.root) == MARKER
    assert output_folder_sign(tmp_path / "a") is None and output_folder_sign(tmp_path / "nosuch") is None


def test_a_marked_output_folder_inside_the_documents_is_one_skipped_entry(tmp_path):
    docs = _docs(tmp_path / "docs")
    Workspace.at(docs / "ragtune-out").create()
    before = load_documents(docs)
    _earlier_output(docs / "ragtune-out")  # what a first run wrote
    (docs / "sub" / "other-out").mkdir(parents=True)  # an output folder of any name, anywhere below
    Workspace.at(docs / "sub" / "other-out").create()
    (docs / "sub" / "other-out" / "report.json").write_text('{"a": 1}', encoding="utf-8")
    after = load_documents(docs)
    assert [d.document_id for d in after.documents] == ["notes.md", "paris.txt"]
    assert [d.sha256 for d in after.documents] == [d.sha256 for d in before.documents]
    reason = f"ragtune's output folder (it holds {MARKER}): not searched"
    assert [(s.document_id, s.reason) for s in before.skipped] == [("ragtune-out/", reason)]
    assert [(s.document_id, s.reason) for s in after.skipped] == [("ragtune-out/", reason),
                                                                  ("sub/other-out/", reason)]
    assert list_document_ids(docs) == ["notes.md", "paris.txt"]


def test_links_into_an_output_folder_are_not_followed(tmp_path):
    docs = _docs(tmp_path / "docs")
    out = Workspace.at(docs / "ragtune-out").create().root
    _earlier_output(out)
    (docs / "runs").symlink_to(out / "retrieval" / "runs", target_is_directory=True)  # a folder below it
    (docs / "report.json").symlink_to(out / "retrieval" / "runs" / "r1" / "report.json")  # a file in it
    (docs / "whole").symlink_to(out, target_is_directory=True)  # the folder itself
    loaded = load_documents(docs)
    assert [d.document_id for d in loaded.documents] == ["notes.md", "paris.txt"]
    into = f"symbolic link into ragtune's output folder {out.resolve()} (it holds {MARKER}): not read"
    assert sorted((s.document_id, s.reason) for s in loaded.skipped) == [
        ("ragtune-out/", f"ragtune's output folder (it holds {MARKER}): not searched"),
        ("report.json", into), ("runs/", into), ("whole/", into)]
    assert list_document_ids(docs) == ["notes.md", "paris.txt"]


def test_an_output_folder_from_before_the_marker_is_known_by_its_embedding_cache(tmp_path):
    docs = _docs(tmp_path / "docs")
    old = docs / "ragtune-out"
    _earlier_output(old)
    old.joinpath(*EMBEDDING_CACHE).parent.mkdir()
    old.joinpath(*EMBEDDING_CACHE).write_bytes(b"SQLite format 3\x00")
    result = load_documents(docs)
    assert [d.document_id for d in result.documents] == ["notes.md", "paris.txt"]
    assert [(s.document_id, s.reason) for s in result.skipped] == [
        ("ragtune-out/", "ragtune's output folder (it holds cache/embeddings.sqlite): not searched")]


def test_a_folder_like_an_output_folder_without_its_signs_still_loads(tmp_path):
    """Names alone (``retrieval/``, ``cache/``) say nothing: only the marker or the cache file does."""
    docs = _docs(tmp_path / "docs")
    _earlier_output(docs / "ragtune-out")
    (docs / "cache").mkdir()
    (docs / "cache" / "embeddings.sqlite").mkdir()  # a folder, not the cache file
    (docs / "cache" / "embeddings.sqlite" / "readme.txt").write_text("a document", encoding="utf-8")
    ids = [d.document_id for d in load_documents(docs).documents]
    assert "ragtune-out/retrieval/runs/r1/report.json" in ids and "cache/embeddings.sqlite/readme.txt" in ids


def test_a_documents_folder_that_is_an_output_folder_is_refused(tmp_path):
    out = Workspace.at(tmp_path / "out").create().root
    _docs(out)
    with pytest.raises(DocumentError) as exc:
        load_documents(out)
    assert str(exc.value).startswith(f"the documents folder {out} is ragtune's output folder (it holds {MARKER})")
    with pytest.raises(DocumentError, match="is ragtune's output folder"):
        list_document_ids(out)


def test_documents_downloaded_into_the_output_folder_load(tmp_path):
    """``<out>/inputs/...`` is where documents read from an address are kept: the output folder
    holding them is no reason to skip them."""
    ws = Workspace.at(tmp_path / "out").create()
    docs = _docs(ws.inputs / "0123abcd" / "fedc")
    assert [d.document_id for d in load_documents(docs).documents] == ["notes.md", "paris.txt"]
    assert list_document_ids(docs) == ["notes.md", "paris.txt"]


def test_remote_keys_below_an_output_folder_are_left_out():
    keys = ["a.md", "out/.ragtune-output", "out/retrieval/runs/r/report.json", "old/cache/embeddings.sqlite",
            "old/x.json", "outline.md", "sub/b.md"]
    assert _outside_output_folders(keys, "s3://b/docs") == ["a.md", "outline.md", "sub/b.md"]
    with pytest.raises(DocumentError, match="the documents folder s3://b/docs is ragtune's output folder"):
        _outside_output_folders([".ragtune-output", "a.md"], "s3://b/docs")
