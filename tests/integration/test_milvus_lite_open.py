"""Opening a Milvus Lite database: what is wrong is said in one message (real Milvus Lite)."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from core.errors import StoreError
from core.vectorstores import MilvusLiteConfig
from core.vectorstores.milvus import lite_engine, open_client

HOLD = """
import sys, time, warnings
warnings.simplefilter("ignore")
from pymilvus import MilvusClient
MilvusClient(sys.argv[1])
print("open", flush=True)
time.sleep(60)
"""


def test_a_database_of_the_other_engine_is_named(tmp_path):
    path = tmp_path / "m.db"
    if lite_engine() < 3:
        path.mkdir()  # Milvus Lite 3 keeps a folder; 2 a file
        match = "is a folder"
    else:
        path.write_bytes(b"not a folder")
        match = "is a file"
    with pytest.raises(StoreError, match=match) as caught:
        open_client(MilvusLiteConfig(str(path)))
    assert str(path) in str(caught.value)


def test_a_database_another_process_holds_is_named(tmp_path):
    path = tmp_path / "m.db"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "open"
        started = time.perf_counter()
        with pytest.raises(StoreError, match="in use by another process") as caught:
            open_client(MilvusLiteConfig(str(path)))
        assert str(path) in str(caught.value) and "RAGTUNE_MILVUS_URI" in str(caught.value)
        assert time.perf_counter() - started < 30
    finally:
        holder.kill()
        holder.wait()


def test_a_refused_open_leaves_the_other_process_its_lock_and_is_refused_again(tmp_path):
    """Milvus Lite 2's own refused try deletes the lock file of the process that holds the
    database, after which a second try starts a second server on the same file; ragtune asks
    for the lock first, so every try is refused and the lock file stays."""
    if lite_engine() >= 3:
        pytest.skip("Milvus Lite 3 keeps no lock file beside a database file")
    path = tmp_path / "m.db"
    lock = tmp_path / ".m.db.lock"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "open"
        inode = lock.stat().st_ino
        for _ in range(2):
            with pytest.raises(StoreError, match="in use by another process"):
                open_client(MilvusLiteConfig(str(path)))
            assert lock.stat().st_ino == inode  # the holder's own lock file, still there
    finally:
        holder.kill()
        holder.wait()


def test_a_server_that_died_is_let_go_and_started_again(tmp_path):
    """A Milvus Lite 2 server that exits after starting (a disk error, a kill) stays registered
    in the process; a failed open lets a dead one go (``_forget_dead_lite_server``), a live one
    stays, and the next open starts a new server on the same database."""
    if lite_engine() >= 3:
        pytest.skip("Milvus Lite 3 runs no server process")
    from core.vectorstores.milvus import _forget_dead_lite_server, _lite_server_of

    path = tmp_path / "m.db"
    client = open_client(MilvusLiteConfig(str(path)))
    client.create_collection("c", dimension=4)
    client.close()
    _forget_dead_lite_server(path)  # alive: kept
    server = _lite_server_of(path)
    server._p.kill()
    server._p.wait()
    _forget_dead_lite_server(path)
    assert _lite_server_of(path) is None
    assert open_client(MilvusLiteConfig(str(path))).list_collections() == ["c"]
    assert _lite_server_of(path)._p.poll() is None  # a new server, running


def test_a_database_opens_again_after_its_process_ends(tmp_path):
    path = tmp_path / "m.db"
    done = subprocess.run([sys.executable, "-W", "ignore", "-c",
                           "import sys; from pymilvus import MilvusClient; "
                           "MilvusClient(sys.argv[1]).create_collection('c', dimension=4)", str(path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert open_client(MilvusLiteConfig(str(path))).list_collections() == ["c"]


@pytest.mark.parametrize("name", ["my db.db", "é.db", "a" * 34 + ".db"])
def test_a_name_milvus_lite_2_refuses_is_said_without_a_traceback(tmp_path, name, capfd):
    if lite_engine() >= 3:
        pytest.skip("Milvus Lite 3 keeps a folder of any name")
    with pytest.raises(StoreError, match="may only hold letters, digits") as caught:
        open_client(MilvusLiteConfig(str(tmp_path / name)))
    assert name in str(caught.value)
    assert "Traceback" not in capfd.readouterr().err
