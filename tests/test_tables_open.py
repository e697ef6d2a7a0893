"""Opening the derived tables while something else opens them: threads of one process share one handle, two
processes (or handles) making a new file at once both open it, and a lock held past the wait never leaves
the tables unusable for good."""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from contextflow.app import App
from contextflow.core import tables as tables_module
from contextflow.search import derived


def at_once(works: list[Callable[[], Any]]) -> list[Any]:
    """Each of `works` in a thread of its own, released together; what each returned (an exception is raised
    here)."""
    gate = threading.Barrier(len(works))
    results: list[Any] = [None] * len(works)
    errors: list[BaseException] = []

    def run(slot: int) -> None:
        gate.wait(timeout=30)
        try:
            results[slot] = works[slot]()
        except BaseException as exc:  # (reported below, in the test's thread)
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(slot,)) for slot in range(len(works))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads), "a thread opening the tables never returned"
    if errors:
        raise errors[0]
    return results


def test_threads_asking_for_the_tables_at_once_share_one_handle(tmp_path: Path) -> None:
    for _ in range(20):
        app = App.open()
        try:
            handles = at_once([app.tables] * 8)
            searches = at_once([lambda app=app: derived.search_for(app.store)] * 8)
            assert len({id(handle) for handle in handles}) == 1
            assert len({id(search) for search in searches}) == 1
            assert handles[0] is app.tables()
        finally:
            app.close()


def test_two_handles_making_a_new_file_at_once_both_open_it(tmp_path: Path) -> None:
    """As two processes starting together do (a hook and a server): SQLite answers one of two connections
    turning a new file to WAL "locked" at once, without waiting; that one must try again, not give up."""
    for attempt in range(100):
        apps = [App.open(), App.open()]  # (two store objects: two handles on one file, as two processes have)
        try:
            path = apps[0].tables().path
            for suffix in ("", "-wal", "-shm"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
            assert apps[0].tables() is not apps[1].tables()
            usable = at_once([app.tables().usable for app in apps])
            assert usable == [True, True], f"attempt {attempt}: {usable}"
        finally:
            for app in apps:
                app.close()


def test_a_servers_first_write_and_the_read_after_it_both_answer(tmp_path: Path) -> None:
    """On a new store, the server's first write starts a thread committing it to the search index while the
    next call reads: both open the tables at once (the race itself is held by the tests above; a read once
    answered "the derived tables cannot be opened" here, in ContextFlowMCP's suite)."""
    from contextflow.adapters.server.app import ContextflowServer

    for n in range(10):
        folder = tmp_path / f"store{n}"
        app = App.open(
            {**os.environ, "CONTEXTFLOW_STORE": str(folder / "store"), "CONTEXTFLOW_STATE": str(folder / "state")}
        )
        try:
            server = ContextflowServer(app)
            note = {"text": f"first note {n}", "session_id": "s1", "agent": "codex"}
            assert not server.call("append_shared_note", note).is_error
            read = server.call("read_shared_context", {"session_id": "s1", "format": "text"})
            text = read.content[0].text
            assert not read.is_error and f"first note {n}" in text, f"store {n}: {text}"
            server.indexing.settle(timeout=60)
        finally:
            app.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="a background build is a forked child (POSIX)")
def test_a_forked_build_opens_its_handles_whatever_another_thread_held_at_the_fork(tmp_path: Path) -> None:
    """A background build forks from whichever thread caught up (the server's, after a write): a lock
    another thread held at that moment stays held in the child, and the build would wait for ever."""
    import signal
    import time

    app = App.open()
    try:
        with tables_module._OPEN.lock, derived._OPEN.lock:  # (as another thread holds them at the fork)
            child = os.fork()
            if child == 0:
                ok = False
                try:
                    other = App.open()  # (another store object: a handle of its own is made)
                    ok = other.tables().usable() and derived.search_for(other.store) is not None
                finally:
                    os._exit(0 if ok else 1)
        deadline = time.monotonic() + 60
        while (done := os.waitpid(child, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        if done[0] == 0:
            os.kill(child, signal.SIGKILL)
            os.waitpid(child, 0)
            pytest.fail("the forked child waited for a lock held in its parent")
        assert os.waitstatus_to_exitcode(done[1]) == 0
    finally:
        app.close()


def test_a_lock_held_past_the_wait_is_said_and_never_sticks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another process holds a new database's lock past the wait: a read answers from the logs (not "a read-only
    or full state folder") and the tables are not given up; once the lock is let go, they open and serve."""
    from contextflow.operations.spec import operations

    monkeypatch.setattr(tables_module, "WAIT_S", 0.2)
    app = App.open()
    try:
        app.store.append("note", {"text": "written before the lock", "session_id": "s1", "agent": "codex"})
        read = next(op for op in operations() if op.name == "read_shared_context")
        path = app.tables().path
        path.parent.mkdir(parents=True, exist_ok=True)
        holder = sqlite3.connect(path, isolation_level=None)  # a new file, not WAL yet: its lock keeps all out
        holder.execute("BEGIN EXCLUSIVE")
        try:
            assert app.tables().usable() is False and app.tables().busy
            assert "written before the lock" in read.run(app, {"session_id": "s1"}).text  # (the logs' rows)
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert app.tables().usable() is True
        assert "written before the lock" in read.run(app, {"session_id": "s1"}).text
        assert app.tables().current()
    finally:
        app.close()
