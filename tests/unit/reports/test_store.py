"""Local report store: atomic writes, layout, latest and history."""

from __future__ import annotations

import os
from datetime import datetime, timezone

import pytest

from core.errors import StoreError
from core.reports import LocalFiles, ReportStore, new_run_id


def test_write_read_list(tmp_path):
    files = LocalFiles(tmp_path)
    files.write_bytes("a/b/c.json", b"{}")
    files.write_bytes("a/d.txt", b"x")
    assert files.read_bytes("a/b/c.json") == b"{}"
    assert files.exists("a/d.txt") and not files.exists("a/zzz")
    assert files.list("a") == ["a/b/c.json", "a/d.txt"]
    assert files.list("nothing") == []


def test_failed_write_leaves_old_content_and_no_temp_file(tmp_path, monkeypatch):
    files = LocalFiles(tmp_path)
    files.write_bytes("r.json", b"old")

    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(StoreError, match="disk full"):
        files.write_bytes("r.json", b"new")
    monkeypatch.undo()
    assert files.read_bytes("r.json") == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


def test_keys_cannot_escape_the_root(tmp_path):
    with pytest.raises(StoreError, match="invalid key"):
        LocalFiles(tmp_path).write_bytes("../x", b"")


def test_missing_file_names_the_path(tmp_path):
    with pytest.raises(StoreError, match="does not exist"):
        LocalFiles(tmp_path).read_bytes("nope.json")


def test_run_ids_sort_by_time():
    early = new_run_id(datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc))
    late = new_run_id(datetime(2026, 1, 2, 3, 4, 6, tzinfo=timezone.utc))
    assert early.startswith("20260102T030405Z-") and len(early) == len("20260102T030405Z-") + 6
    assert late > early


def test_run_ids_made_in_one_second_sort_by_millisecond():
    """The first 3 of the 6 hex digits are the millisecond (5 ms -> 005, 999 ms -> 3e7), so
    runs made in the same second sort in the order they were made, whatever the random digits."""
    import re

    second = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    ids = [new_run_id(second.replace(microsecond=ms * 1000)) for ms in (5, 6, 500, 999) for _ in range(20)]
    assert all(re.fullmatch(r"20260102T030405Z-[0-9a-f]{6}", i) for i in ids)
    assert {i[17:20] for i in ids} == {"005", "006", "1f4", "3e7"}
    # sorted whole, the ids are in millisecond order: the random digits never reorder them
    assert [i[17:20] for i in sorted(ids)] == ["005"] * 20 + ["006"] * 20 + ["1f4"] * 20 + ["3e7"] * 20


def test_layout_latest_history_and_golden_once(tmp_path):
    store = ReportStore(LocalFiles(tmp_path))
    assert store.history() == []
    with pytest.raises(StoreError, match="no retrieval run"):
        store.load_run("latest")
    store.save_run("20260101T000000Z-aaaaaa", {"schema_version": "1.0", "n": 1})
    store.save_run("20260102T000000Z-bbbbbb", {"schema_version": "1.0", "n": 2})
    assert (tmp_path / "retrieval/runs/20260102T000000Z-bbbbbb/report.json").is_file()
    assert store.load_run()["n"] == 2
    assert store.load_run("20260101T000000Z-aaaaaa")["n"] == 1
    assert store.history(limit=1) == ["20260102T000000Z-bbbbbb"]
    assert store.history(limit=5, offset=1) == ["20260101T000000Z-aaaaaa"]
    with pytest.raises(StoreError, match="recent runs: 20260102T000000Z-bbbbbb"):
        store.load_run("nope")
    key = store.save_golden("abc", b"line\n")
    assert key == "golden_dataset/abc.jsonl"
    store.save_golden("abc", b"different bytes are not written again\n")
    assert (tmp_path / key).read_bytes() == b"line\n"


def test_reports_with_nan_are_refused(tmp_path):
    with pytest.raises(ValueError):
        ReportStore(LocalFiles(tmp_path)).save_run("r", {"x": float("nan")})
    assert not (tmp_path / "retrieval/runs/r/report.json").exists()


def test_broken_or_foreign_reports_are_clear_errors(tmp_path):
    store = ReportStore(LocalFiles(tmp_path))
    store.files.write_bytes("retrieval/runs/20260101T000000Z-aaaaaa/report.json", b"{bad")
    with pytest.raises(StoreError, match="is not a valid report"):
        store.load_run("latest")
    store.save_run("20260102T000000Z-bbbbbb", {"schema_version": "99.0"})
    with pytest.raises(StoreError, match="schema version 99.0; this ragtune reads version 1.0"):
        store.load_run("20260102T000000Z-bbbbbb")
    with pytest.raises(StoreError, match=str(tmp_path)):
        ReportStore(LocalFiles(tmp_path / "empty")).load_run()
