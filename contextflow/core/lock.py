"""The writer lock: one process of this machine appends to a writer's log at a time.

On POSIX it is `fcntl.flock` on a lock file in the machine-local state folder, taken by this
module directly: the same lock `filelock` takes there, without its import (about 60 ms, paid by
every hook that writes). Reentrant in a process (a counter, guarded for threads). Elsewhere
(Windows) it is `filelock.FileLock`.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Any

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

POLL_S = 0.01


class LockTimeout(Exception):
    """The lock was not free within the timeout."""


class LockDamaged(OSError):
    """Something else than a lock file stands at its path (a folder holding files)."""


REPAIR = "remove it (`contextflow doctor --fix` does; it holds nothing the logs do not)"


class WriterLock:
    """An exclusive, reentrant lock on `path` (created 0600, never through a symbolic link). A FIFO there is
    locked as it stands (opened without waiting; `doctor` names it, `--fix` removes it); a folder holding
    files raises LockDamaged at once."""

    def __init__(self, path: Path, timeout: float) -> None:
        self.path, self.timeout = path, timeout
        self._fd: int | None = None
        self._depth = 0
        self._guard = threading.RLock()
        self._fallback: Any = None

    def acquire(self) -> None:
        self._guard.acquire()
        if self._depth == 0:
            try:
                self._take()
            except BaseException:
                self._guard.release()
                raise
        self._depth += 1

    def release(self) -> None:
        self._depth -= 1
        if self._depth == 0:
            self._give_back()
        self._guard.release()

    def __enter__(self) -> WriterLock:
        self.acquire()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.release()

    def _take(self) -> None:
        if fcntl is None:  # pragma: no cover - Windows
            from filelock import FileLock, Timeout

            self._fallback = self._fallback or FileLock(self.path, timeout=self.timeout, mode=0o600)
            try:
                self._fallback.acquire()
            except Timeout:
                raise LockTimeout(str(self.path)) from None
            return
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK  # (a FIFO there: no wait)
        try:
            fd = os.open(self.path, flags, 0o600)
        except IsADirectoryError:  # an empty folder in its place (damage): removed, the file made again
            try:
                os.rmdir(self.path)
            except OSError as exc:
                raise LockDamaged(f"the lock file {self.path} is a folder holding files: {REPAIR}") from exc
            fd = os.open(self.path, flags, 0o600)
        except PermissionError:  # this user's own lock file made unreadable (damage): 0600 again
            os.chmod(self.path, 0o600)  # (a link there fails to open with ELOOP, never here)
            fd = os.open(self.path, flags, 0o600)
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                self._fd = fd
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise LockTimeout(str(self.path)) from None
                time.sleep(POLL_S)
            except BaseException:
                os.close(fd)
                raise

    def _give_back(self) -> None:
        if self._fallback is not None:  # pragma: no cover - Windows
            self._fallback.release()
            return
        fd, self._fd = self._fd, None
        if fd is not None:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
