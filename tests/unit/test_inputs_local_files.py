"""Reading local files by path: only regular files, and never more than the cap, whatever the
path names (a device, a FIFO, a socket, a file in /proc that claims 0 bytes).

Expected bytes are the ones each test writes; expected kinds are what ``stat`` says of the
paths (hand-checked: /dev/zero is a character device, ``mkfifo`` makes a FIFO).
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from core.errors import GoldenError
from core.golden import check_golden, read_golden
from core.inputs import InputTooLargeError, NotAFileError, read_input_bytes, read_local_file
from core.limits import READ_BLOCK_BYTES

ROW = b'{"id": "q1", "question": "Who pays the travel costs?", "expected": ["a.txt"]}\n'


@pytest.fixture()
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "golden.jsonl"
    os.mkfifo(path)
    return path


@pytest.fixture()
def unix_socket(tmp_path: Path):
    path = tmp_path / "s.jsonl"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    yield path
    sock.close()


def test_dev_zero_is_refused_before_a_byte_is_read():
    with pytest.raises(NotAFileError) as info:
        read_local_file("/dev/zero", 10)
    assert info.value.kind == "a character device"
    assert str(info.value).startswith("/dev/zero is a character device, not a regular file")


def test_a_fifo_without_a_writer_is_refused_at_once(fifo):
    # opening a FIFO for reading blocks until a writer comes; the reader opens without blocking
    with pytest.raises(NotAFileError) as info:
        read_local_file(fifo)
    assert info.value.kind == "a FIFO (named pipe) or pipe"
    assert str(fifo) in str(info.value)


def test_a_socket_is_refused(unix_socket):
    with pytest.raises(NotAFileError) as info:
        read_input_bytes(unix_socket)
    assert info.value.kind == "a socket"


def test_a_folder_is_refused(tmp_path):
    with pytest.raises(NotAFileError) as info:
        read_local_file(tmp_path)
    assert info.value.kind == "a directory"


def test_a_missing_file_is_still_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_local_file(tmp_path / "nowhere.jsonl")


def test_the_cap_is_exact_across_blocks(tmp_path):
    path = tmp_path / "f.bin"
    data = bytes(range(256)) * (2 * READ_BLOCK_BYTES // 256) + b"xyz"  # two blocks and 3 bytes
    path.write_bytes(data)
    assert read_local_file(path, len(data)) == data
    assert read_local_file(path) == data
    with pytest.raises(InputTooLargeError) as info:
        read_local_file(path, len(data) - 1)
    assert info.value.max_bytes == len(data) - 1
    with pytest.raises(InputTooLargeError):
        read_input_bytes(path, max_bytes=READ_BLOCK_BYTES)


def test_a_file_that_claims_zero_bytes_is_read_to_its_end():
    path = Path("/proc/self/status")
    if not path.exists():
        pytest.skip("no /proc")
    assert path.stat().st_size == 0
    data = read_local_file(path, 1_000_000)
    assert data.startswith(b"Name:") and b"\nPid:" in data  # the kernel's own layout of the file


@pytest.mark.parametrize("name", ["/dev/zero", "/dev/null"])
def test_check_golden_refuses_a_device_naming_it(name):
    check = check_golden(name)
    assert not check.ok and check.sha256 is None and check.n_lines == 0
    [problem] = check.problems
    assert problem.line is None
    assert problem.message == ("is a character device, not a golden file: ragtune reads a golden file only from a "
                               "regular file (save it to a file and give its path)")
    with pytest.raises(GoldenError, match=f"\\n{name}: error: is a character device"):
        read_golden(name)


def test_check_golden_refuses_a_fifo_without_waiting_for_a_writer(fifo):
    [problem] = check_golden(fifo).problems
    assert problem.message.startswith("is a FIFO (named pipe) or pipe, not a golden file")


def test_a_golden_file_over_the_cap_is_one_file_error(tmp_path, monkeypatch):
    from core.golden import reader

    path = tmp_path / "golden.jsonl"
    path.write_bytes(ROW * 10)  # 10 x 78 bytes = 780 bytes
    assert len(ROW) == 78
    monkeypatch.setattr(reader, "GOLDEN_FILE_MAX_BYTES", 779)
    [problem] = check_golden(path).problems
    assert problem.message == ("file larger than 779 bytes, the most a golden file may hold (not read further): "
                               "split it into several files")
    monkeypatch.setattr(reader, "GOLDEN_FILE_MAX_BYTES", 780)
    check = check_golden(path)
    assert check.n_lines == 10
