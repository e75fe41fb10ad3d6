"""``ragtune evaluate`` over targets none of which can be searched: the report is written, the
run exits 3 (README: "ran but no target could be evaluated") so a CI gate cannot pass on
nothing, and each reason is printed once, without the Qdrant client's version-probe warning."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading

import pytest

from core.cli import main


@pytest.fixture
def not_qdrant():
    """A real HTTP server that is not Qdrant (every path is a 404), on a free port."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    server.RequestHandlerClass.log_message = lambda *a, **k: None
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _golden(tmp_path):
    path = tmp_path / "golden.jsonl"
    path.write_text('{"id": "q1", "question": "What is alpha?", "expected": ["a.md"]}\n', encoding="utf-8")
    return str(path)


def test_every_target_failing_exits_3_with_each_reason_once(tmp_path, not_qdrant):
    missing = tmp_path / "none.db"
    done = subprocess.run(
        [sys.executable, "-m", "core.cli", "evaluate", "--golden", _golden(tmp_path), "--target",
         f"qdrant:{not_qdrant}#docs", "--target", f"milvus:{missing}#docs", "--out", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert done.returncode == 3, done.stdout + done.stderr
    both = done.stdout + done.stderr
    assert both.count(f"no Milvus Lite database at {missing}") == 1, both
    assert both.count("reading collection docs at") == 1, both
    assert "UserWarning" not in done.stderr and "check_compatibility" not in done.stderr
    assert "no target could be evaluated" in done.stderr
    reports = list((tmp_path / "out" / "retrieval" / "runs").glob("*/report.json"))
    assert len(reports) == 1  # the report is still written
    report = json.loads(reports[0].read_text(encoding="utf-8"))
    assert [t["status"] for t in report["targets"]] == ["failed", "failed"] and report["setups"] == []


def test_every_target_failing_with_json_still_exits_3(tmp_path, capsys):
    code = main(["evaluate", "--golden", _golden(tmp_path), "--target", f"milvus:{tmp_path / 'none.db'}#docs",
                 "--out", str(tmp_path / "out"), "--json"])
    assert code == 3
    report = json.loads(capsys.readouterr().out)
    assert report["targets"][0]["status"] == "failed"
