"""Another process's exclusive lock on views.sqlite3, and the waits it costs this process, for the tests of reads
under it (`tests/test_locked_reads.py`, `tests/test_locked_reads_all.py`).

Waits are counted, never timed: every SQLite connection of the test's process counts its statements that failed
busy after waiting (its busy timeout shortened to WAITED_MS so the tests run quickly)."""

from __future__ import annotations

import contextlib
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from contextflow.core import tables

WAITED_MS = 50  # every busy timeout of the test's process (a wait is counted, not timed)
MODES = ("rollback", "wal")
HOLD = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
if sys.argv[2] == "rollback":
    db.execute("PRAGMA journal_mode=DELETE")  # a rollback journal: readers are shut out too
db.execute("BEGIN EXCLUSIVE")
print("held", flush=True)
sys.stdin.read()  # until the test closes its end
"""


class Waits:
    """The statements of this process that waited out another process's lock on SQLite."""

    def __init__(self) -> None:
        self.count = 0


def in_request() -> bool:
    """Whether this thread serves the request (the server's idle commit to the search index waits in its own
    thread, in the background: no request waits for it)."""
    return threading.current_thread() is threading.main_thread()


def counting(waits: Waits) -> type[sqlite3.Connection]:
    class Counting(sqlite3.Connection):
        """A connection whose busy waits are short and counted (a statement failing busy after waiting)."""

        def __init__(self, *args: Any, timeout: float = 5.0, **kwargs: Any) -> None:
            kwargs["timeout"] = min(timeout, WAITED_MS / 1000)
            super().__init__(*args, **kwargs)

        def _counted(self, run: Callable[..., sqlite3.Cursor], sql: str, *rest: Any) -> sqlite3.Cursor:
            if sql.lstrip().upper().startswith("PRAGMA BUSY_TIMEOUT"):
                asked = int(sql.split("=")[1])
                sql = f"PRAGMA busy_timeout = {min(asked, WAITED_MS)}"
            try:
                return run(sql, *rest)
            except sqlite3.OperationalError as exc:
                message = str(exc).lower()
                if ("locked" in message or "busy" in message) and self._patience() > 0 and in_request():
                    waits.count += 1
                raise

        def _patience(self) -> int:
            return int(super().execute("PRAGMA busy_timeout").fetchone()[0])

        def execute(self, sql: str, *params: Any) -> sqlite3.Cursor:
            return self._counted(super().execute, sql, *params)

        def executemany(self, sql: str, *params: Any) -> sqlite3.Cursor:
            return self._counted(super().executemany, sql, *params)

        def executescript(self, sql: str) -> sqlite3.Cursor:
            return self._counted(super().executescript, sql)

    return Counting


def counted_waits(monkeypatch: pytest.MonkeyPatch) -> Waits:
    """From now on every SQLite connection this process opens waits briefly and counts its waits."""
    found = Waits()
    factory, real = counting(found), sqlite3.connect

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        return real(*args, factory=factory, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", connect)
    monkeypatch.setattr(tables, "WAIT_S", WAITED_MS / 2000)  # (a new connection's tries end with its first wait)
    return found


@contextlib.contextmanager
def shut_out(path: Path, mode: str) -> Iterator[None]:
    """Another process holds `path` exclusively until the block ends: in rollback-journal `mode` (readers shut
    out too) or in "wal" mode (writers only)."""
    command = [sys.executable, "-c", HOLD, str(path), mode]
    with subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as holder:
        assert holder.stdin is not None and holder.stdout is not None
        try:
            assert holder.stdout.readline() == "held\n"
            other = contextlib.closing(sqlite3.connect(path, timeout=0, isolation_level=None))
            with other as db, pytest.raises(sqlite3.OperationalError, match="locked"):  # (held indeed)
                db.execute("BEGIN IMMEDIATE" if mode == "wal" else "SELECT count(*) FROM sqlite_master")
            yield
        finally:
            holder.stdin.close()
            holder.wait(timeout=60)
