"""MilvusVectorStore waits for a new collection's indexes by their ``describe_index`` state.

A real Milvus Lite builds the index of an empty collection at once (the integration tests
create collections on it); the states a server passes through on the way (``InProgress``,
``Failed``) are played here by a client that answers ``list_indexes`` and ``describe_index``
from a script.
"""

from __future__ import annotations

import pytest

from core.errors import StoreError
from core.vectorstores import MilvusLiteConfig
from core.vectorstores import milvus as milvus_module
from core.vectorstores.milvus import MilvusVectorStore
from tests.support.vectors import table_model


class ScriptedClient:
    """Answers each index's ``describe_index`` with the next state of its script (the last repeats)."""

    def __init__(self, states: dict[str, list[str | None]]) -> None:
        self.states = states
        self.asked: list[str] = []

    def list_indexes(self, collection_name):
        return list(self.states)

    def describe_index(self, collection_name, index_name):
        self.asked.append(index_name)
        script = self.states[index_name]
        state = script.pop(0) if len(script) > 1 else script[0]
        return {} if state is None else {"state": state, "index_state_fail_reason": "disk full" if state == "Failed" else ""}


def store(client, tmp_path):
    return MilvusVectorStore(table_model(), MilvusLiteConfig(str(tmp_path / "m.db")), "c_wait", client=client)


def test_waits_until_every_index_is_finished(tmp_path):
    client = ScriptedClient({"dense": ["InProgress", "InProgress", "Finished"], "sparse": [None]})
    store(client, tmp_path)._wait_for_indexes()
    assert client.asked == ["dense", "dense", "dense", "sparse"]  # no state given: built


def test_a_failed_or_late_index_is_a_store_error(tmp_path, monkeypatch):
    with pytest.raises(StoreError, match="index dense of collection c_wait failed: disk full"):
        store(ScriptedClient({"dense": ["Failed"]}), tmp_path)._wait_for_indexes()
    monkeypatch.setattr(milvus_module, "INDEX_WAIT_S", 0.05)
    with pytest.raises(StoreError, match=r"was not built within 0.05 s \(state InProgress\)"):
        store(ScriptedClient({"dense": ["InProgress"]}), tmp_path)._wait_for_indexes()
