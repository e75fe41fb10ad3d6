"""The ``ragtune`` command's process entry (``core.cli.run``): it exits with the command's
code, and its collector settings apply to that process only, not to ``main`` called within
another program."""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap

import pytest

from core.cli import FULL_COLLECTION_EVERY, main

PROBE = textwrap.dedent("""
    import atexit, gc, sys
    import core.cli as cli
    # runs after the command: the full-collection threshold and the frozen objects it left
    atexit.register(lambda: print(gc.get_threshold()[2], gc.get_freeze_count() > 0))
    sys.argv = ["ragtune", "check", sys.argv[1]]
    cli.run()
""")


def _golden(tmp_path, text):
    path = tmp_path / "golden.jsonl"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_run_exits_with_the_commands_code_and_sets_the_collector_of_its_process(tmp_path):
    bad = _golden(tmp_path, '{"question": "", "expected": ["a.txt"]}\n')
    done = subprocess.run([sys.executable, "-c", PROBE, bad], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr  # the check's own code: the line has an error
    assert done.stdout.strip().splitlines()[-1] == f"{FULL_COLLECTION_EVERY} True"
    good = _golden(tmp_path, '{"question": "What is it?", "expected": ["a.txt"]}\n')
    done = subprocess.run([sys.executable, "-c", PROBE, good], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_main_leaves_the_collector_of_its_caller_alone(tmp_path):
    threshold, frozen = gc.get_threshold(), gc.get_freeze_count()
    assert main(["check", _golden(tmp_path, '{"question": "What is it?", "expected": ["a.txt"]}\n')]) == 0
    # frozen objects that die are still freed, so the count may fall; a gc.freeze would add the heap
    assert gc.get_threshold() == threshold and gc.get_freeze_count() <= frozen


MILVUS_LITE_PROBE = textwrap.dedent("""
    import sys
    import core.cli as cli
    from core.vectorstores import MilvusLiteConfig
    from core.vectorstores.milvus import open_client
    # a Milvus Lite database opened by the command, as evaluate and run do
    open_client(MilvusLiteConfig(sys.argv[1])).has_collection("none")
    sys.argv = ["ragtune", "check", sys.argv[2]]
    cli.run()
""")


@pytest.mark.integration
def test_run_stops_the_milvus_lite_server_its_command_started(tmp_path):
    # Milvus Lite stops its server (waits for it, removes its lock file) from a finaliser that
    # the exit's collection no longer reaches once gc.freeze has run: the atexit handler
    # core.vectorstores.milvus registers when it opens a database stops it
    pytest.importorskip("milvus_lite")
    from core.vectorstores.milvus import lite_engine

    if lite_engine() >= 3:
        pytest.skip("Milvus Lite 3 runs no server process")
    db = tmp_path / "m.db"
    golden = _golden(tmp_path, '{"question": "What is it?", "expected": ["a.txt"]}\n')
    done = subprocess.run([sys.executable, "-c", MILVUS_LITE_PROBE, str(db), golden], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not (tmp_path / ".m.db.lock").exists()
