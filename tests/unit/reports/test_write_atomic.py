"""``write_atomic``, the one atomic write every user-named output file and the local report
store go through: it replaces only a regular file, follows a link to one, refuses anything
else without touching it, and gives files the permissions ``open()`` would."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from core.errors import ConfigError
from core.reports.files import write_atomic


@pytest.fixture
def umask_027():
    old = os.umask(0o027)
    yield
    os.umask(old)


def test_a_new_file_honours_the_umask(tmp_path, umask_027):
    path = tmp_path / "sub" / "out.csv"
    write_atomic(path, b"a,b\r\n")
    assert path.read_bytes() == b"a,b\r\n"
    # 0o666 less the umask 0o027 = 0o640 (by hand), not mkstemp's 0o600
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_an_existing_file_keeps_its_mode(tmp_path, umask_027):
    path = tmp_path / "out.csv"
    path.write_bytes(b"old")
    path.chmod(0o604)
    write_atomic(path, b"new")
    assert path.read_bytes() == b"new" and stat.S_IMODE(path.stat().st_mode) == 0o604


def test_a_link_to_a_file_writes_the_file_and_keeps_the_link(tmp_path):
    real = tmp_path / "data" / "report.csv"
    real.parent.mkdir()
    real.write_bytes(b"old")
    real.chmod(0o644)
    link = tmp_path / "link.csv"
    link.symlink_to(real)
    write_atomic(link, b"new")
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_bytes() == b"new" and stat.S_IMODE(real.stat().st_mode) == 0o644
    # the temporary file went beside the target, and nothing is left of it
    assert sorted(p.name for p in real.parent.iterdir()) == ["report.csv"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "link.csv"]


def test_a_fifo_is_refused_and_left_in_place(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match=r"pipe is not a regular file"):
        write_atomic(fifo, b"x")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]  # no temporary file left


def test_a_link_to_a_fifo_is_refused_and_both_stay(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    link = tmp_path / "out.html"
    link.symlink_to(fifo)
    with pytest.raises(ConfigError) as caught:
        write_atomic(link, b"x")
    assert str(link) in str(caught.value) and str(fifo) in str(caught.value)
    assert link.is_symlink() and stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_device_is_refused(tmp_path):
    link = tmp_path / "full.csv"
    link.symlink_to("/dev/null")
    with pytest.raises(ConfigError, match="not a regular file"):
        write_atomic(link, b"x")
    with pytest.raises(ConfigError, match="not a regular file"):
        write_atomic(Path("/dev/null"), b"x")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode) and link.is_symlink()


def test_a_folder_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="is a folder"):
        write_atomic(tmp_path, b"x")
    assert tmp_path.is_dir()
