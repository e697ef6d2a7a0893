"""The writer lock: exclusive across processes (and with filelock, which takes the same flock),
reentrant in a process, bounded by its timeout, never through a symbolic link."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest
from filelock import FileLock, Timeout

from contextflow.core.lock import LockTimeout, WriterLock

HOLDER = """
import sys
from contextflow.core.lock import WriterLock
with WriterLock(__import__('pathlib').Path(sys.argv[1]), 5.0):
    print('held', flush=True)
    sys.stdin.readline()
"""


def test_a_lock_held_by_another_process_times_out_then_is_free_once_released(tmp_path: Path):
    path = tmp_path / "writer.lock"
    with subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as holder:
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
            with pytest.raises(LockTimeout):
                WriterLock(path, timeout=0.05).acquire()
            with pytest.raises(Timeout):
                FileLock(path, timeout=0.05).acquire()  # filelock sees the same lock
        finally:
            assert holder.stdin is not None
            holder.stdin.write("\n")
            holder.stdin.flush()
            holder.wait(timeout=30)
    with WriterLock(path, timeout=5.0):
        pass


def test_the_lock_is_reentrant_in_a_process_and_exclusive_between_threads(tmp_path: Path):
    lock = WriterLock(tmp_path / "writer.lock", timeout=5.0)
    order: list[str] = []
    with lock:
        with lock:
            order.append("nested")
        other = threading.Thread(target=lambda: (lock.acquire(), order.append("thread"), lock.release()))
        other.start()
        other.join(timeout=0.2)
        assert other.is_alive()  # waits while this thread holds it
        order.append("outer done")
    other.join(timeout=30)
    assert order == ["nested", "outer done", "thread"]


def test_a_lock_file_that_is_a_symbolic_link_is_not_followed(tmp_path: Path):
    target = tmp_path / "elsewhere"
    target.write_text("keep me")
    (tmp_path / "writer.lock").symlink_to(target)
    with pytest.raises(OSError):
        WriterLock(tmp_path / "writer.lock", timeout=1.0).acquire()
    assert target.read_text() == "keep me"


def test_the_lock_file_is_private(tmp_path: Path):
    with WriterLock(tmp_path / "writer.lock", timeout=1.0):
        pass
    assert (tmp_path / "writer.lock").stat().st_mode & 0o077 == 0
