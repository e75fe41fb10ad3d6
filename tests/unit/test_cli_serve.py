"""``ragtune serve`` as a real process: a port out of range is a usage error, a port taken is
one line and exit 1, a store folder that does not exist is refused, and "serving ..." is
printed only once the socket listens (so the URL it prints answers at once)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import urllib.request

import pytest


def _ragtune(*args):
    return subprocess.Popen([sys.executable, "-m", "core.cli", "serve", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})


@pytest.mark.parametrize("port", ["99999", "-1", "http"])
def test_a_port_out_of_range_is_a_usage_error_without_a_traceback(tmp_path, port):
    proc = _ragtune("--out", str(tmp_path), "--port", port)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2  # argparse: bad usage (README's exit codes)
    assert "argument --port: must be" in err and "Traceback" not in err


def test_a_port_taken_is_one_line_and_exit_1(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        proc = _ragtune("--out", str(tmp_path), "--port", str(port))
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 1
    assert err.splitlines() == [f"ragtune serve: cannot listen on 127.0.0.1:{port}: Address already in use"]


def test_a_store_folder_that_does_not_exist_is_refused(tmp_path):
    proc = _ragtune("--out", str(tmp_path / "nonexistent-store"), "--port", "0")
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 1
    assert err.startswith(f"ragtune serve: report store {tmp_path / 'nonexistent-store'} does not exist")


def test_serving_is_said_once_listening_and_the_url_answers(tmp_path):
    proc = _ragtune("--out", str(tmp_path), "--port", "0")
    try:
        line = proc.stderr.readline()  # blocks until the command says it serves
        assert line.startswith(f"serving the reports in {tmp_path} on http://127.0.0.1:"), line
        url = line.split(" on ", 1)[1].split(" ", 1)[0]
        assert int(url.rsplit(":", 1)[1].rstrip("/")) > 0  # the port the system chose, not 0
        with urllib.request.urlopen(url, timeout=30) as response:  # no retry: it listens already
            assert response.status == 200 and "text/html" in response.headers["content-type"]
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
