"""File names the loader meets in real folders: bytes that are not UTF-8, decomposed Unicode,
symbolic links to folders (loops included) and broken links. Expected ids and reasons are read
off the folders each test builds (hand computation)."""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

import pytest

from core.documents import list_document_ids, load_documents

TEXT = "Employees may carry over five days of leave into the next year."


def _txt(path: Path, text: str = TEXT) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _reasons(result) -> dict[str, str]:
    return {s.document_id: s.reason for s in result.skipped}


def test_a_file_name_that_is_not_utf8_is_skipped_with_the_reason(tmp_path):
    _txt(tmp_path / "good.txt")
    fd = os.open(os.fsencode(tmp_path) + b"/bad-name-\xff.txt", os.O_WRONLY | os.O_CREAT)
    os.write(fd, TEXT.encode())
    os.close(fd)
    os.mkdir(os.fsencode(tmp_path) + b"/dir-\xfe")
    result = load_documents(tmp_path)
    assert [d.document_id for d in result.documents] == ["good.txt"]
    reasons = _reasons(result)
    assert reasons["bad-name-\\xff.txt"].startswith("file name is not valid UTF-8")
    assert reasons["dir-\\xfe/"] == "folder name is not valid UTF-8 (not searched): rename it"
    for item in result.skipped:
        item.document_id.encode("utf-8")  # printable and storable
    assert list_document_ids(tmp_path) == ["good.txt"]  # what check --docs lists: the same corpus


def test_decomposed_file_names_get_composed_ids(tmp_path):
    nfd = unicodedata.normalize("NFD", "Résumé.txt")
    nfc = unicodedata.normalize("NFC", "Résumé.txt")
    _txt(tmp_path / "hr" / nfd)
    result = load_documents(tmp_path)
    assert [d.document_id for d in result.documents] == [f"hr/{nfc}"]
    assert list_document_ids(tmp_path) == [f"hr/{nfc}"]


def test_two_names_that_normalise_alike_keep_the_first(tmp_path):
    nfd = unicodedata.normalize("NFD", "Café.txt")
    nfc = unicodedata.normalize("NFC", "Café.txt")
    _txt(tmp_path / nfc, "The café opens at eight in the morning.")
    _txt(tmp_path / nfd, "The café closes at six in the evening.")
    if len(os.listdir(tmp_path)) == 1:
        pytest.skip("this file system normalises names itself")
    result = load_documents(tmp_path)
    assert [d.document_id for d in result.documents] == [nfc]
    # names are read in code point order: "e" (U+0065) + U+0301 sorts before "é" (U+00E9), so the
    # decomposed name is read and the composed one skipped
    [skip] = result.skipped
    assert skip.document_id == nfc and f"'{nfd}'" in skip.reason
    assert skip.reason.startswith("same name as '") and skip.reason.endswith("once Unicode-normalised (NFC): "
                                                                             "rename one of them")


def test_symlinked_folders_are_followed_once(tmp_path):
    docs, outside = tmp_path / "docs", tmp_path / "outside"
    _txt(docs / "real" / "a.txt")
    _txt(outside / "b.txt", "Travel is booked through the portal two weeks ahead.")
    (docs / "ext").symlink_to(outside, target_is_directory=True)
    (docs / "alias").symlink_to(docs / "real", target_is_directory=True)
    (docs / "real" / "loop").symlink_to(docs, target_is_directory=True)
    (docs / "gone").symlink_to(tmp_path / "nowhere", target_is_directory=True)
    (docs / "dead.txt").symlink_to(tmp_path / "nowhere.txt")
    result = load_documents(docs)
    assert [d.document_id for d in result.documents] == ["real/a.txt"]
    assert _reasons(result) == {
        "ext/": f"symbolic link out of the documents folder (to {os.path.realpath(outside)}): not read",
        "alias/": "symbolic link to a folder already searched, 'real/': not searched again",
        "real/loop/": "symbolic link to a folder already searched, the documents folder itself: not searched again",
        "gone": "broken symbolic link (its target does not exist)",  # os.walk cannot tell it was a folder
        "dead.txt": "broken symbolic link (its target does not exist)",
    }
    assert list_document_ids(docs) == ["real/a.txt"]


def test_a_fifo_in_the_folder_is_listed_as_skipped_and_never_opened(tmp_path):
    docs = tmp_path / "docs"
    _txt(docs / "a.txt")
    os.mkfifo(docs / "pipe.txt")  # opening it for reading would wait for a writer forever
    result = load_documents(docs)
    assert [d.document_id for d in result.documents] == ["a.txt"]
    assert _reasons(result) == {"pipe.txt": "not a regular file (a FIFO (named pipe) or pipe): not read"}
    assert list_document_ids(docs) == ["a.txt"]


def test_links_out_of_the_folder_are_skipped_and_links_inside_load(tmp_path):
    docs, outside = tmp_path / "docs", tmp_path / "outside"
    _txt(docs / "real" / "a.txt")
    _txt(outside / "secret.txt", "The root password is swordfish.")
    (docs / "passwd.txt").symlink_to("/etc/passwd")
    (docs / "secret.txt").symlink_to(outside / "secret.txt")
    (docs / "real" / "up.txt").symlink_to(Path("..") / ".." / "outside" / "secret.txt")  # relative, still out
    (docs / "hop.txt").symlink_to(docs / "secret.txt")  # a link inside to a link that leads out
    (docs / "same.txt").symlink_to(docs / "real" / "a.txt")  # inside: loads
    (docs / "rel").symlink_to("real", target_is_directory=True)  # a relative link to a folder inside
    result = load_documents(docs)
    assert [d.document_id for d in result.documents] == ["real/a.txt", "same.txt"]
    secret = os.path.realpath(outside / "secret.txt")
    assert _reasons(result) == {
        "passwd.txt": "symbolic link out of the documents folder (to /etc/passwd): not read",
        "secret.txt": f"symbolic link out of the documents folder (to {secret}): not read",
        "real/up.txt": f"symbolic link out of the documents folder (to {secret}): not read",
        "hop.txt": f"symbolic link out of the documents folder (to {secret}): not read",
        "rel/": "symbolic link to a folder already searched, 'real/': not searched again",
    }
    assert "swordfish" not in repr(result.documents) and "root:" not in repr(result.documents)
    assert list_document_ids(docs) == ["real/a.txt", "same.txt"]


def test_a_documents_folder_given_through_a_link_still_loads(tmp_path):
    real = tmp_path / "real-docs"
    _txt(real / "a.txt")
    (real / "b.txt").symlink_to(real / "a.txt")
    (tmp_path / "docs").symlink_to(real, target_is_directory=True)
    result = load_documents(tmp_path / "docs")
    assert [d.document_id for d in result.documents] == ["a.txt", "b.txt"] and result.skipped == []
