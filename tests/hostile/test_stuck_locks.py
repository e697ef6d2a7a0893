"""Locks and files of derived state never make a read wait without end: a planted update lock that is
never released, and state files that are FIFOs, still get an answer within seconds."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from contextflow.app import App
from contextflow.core import catchup
from contextflow.search import derived
from contextflow.search.retrieval import get_context
from contextflow.sessions import core as sessions

ANSWER_WITHIN_S = 5.0
HOLD = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()  # until the test closes the pipe
"""


def within(seconds: float, call: Callable[[], Any]) -> Any:
    """`call()`'s result, or a failure when it has not answered within `seconds` (it keeps running)."""
    found: list[Any] = []
    errors: list[BaseException] = []

    def target() -> None:
        try:
            found.append(call())
        except BaseException as exc:
            errors.append(exc)

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"no answer within {seconds} s"
    if errors:
        raise errors[0]
    return found[0]


@pytest.fixture
def planted_lock(app: App) -> Iterator[Path]:
    """A process that took the derived store's build lock and never gives it back."""
    folder = app.store.state_dir
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    lock = folder / catchup.BUILD_LOCK
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(lock)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        yield lock
    finally:
        holder.kill()
        holder.wait(timeout=10)
        for stream in (holder.stdin, holder.stdout):
            if stream is not None:
                stream.close()


def test_search_answers_from_the_logs_while_a_planted_update_lock_is_held(app, planted_lock):
    sessions.append_note(app, agent="me", text="the parser handles nested brackets now", session_id="s1")
    result = within(ANSWER_WITHIN_S, lambda: get_context(app, query="nested brackets parser"))
    assert "nested brackets" in result.text


def test_search_answers_while_the_index_folder_is_a_fifo(app):
    sessions.append_note(app, agent="me", text="the cache evicts the oldest entry first", session_id="s1")
    app.store.state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.mkfifo(app.store.state_dir / derived.FOLDER)
    result = within(ANSWER_WITHIN_S, lambda: get_context(app, query="cache evicts oldest"))
    assert "evicts the oldest" in result.text


def test_derived_tables_that_are_a_fifo_are_refused_not_opened(app):
    sessions.write_handoff(app, agent="me", summary="the real handoff", session_id="s1")
    app.close()
    sidecar = app.store.state_dir / "views.sqlite3"
    sidecar.unlink(missing_ok=True)
    os.mkfifo(sidecar)
    fresh = App.open()
    try:
        entries = within(
            ANSWER_WITHIN_S, lambda: sessions.read_entries(fresh, sessions.EntryFilter("shared", session_id="s1"), 5)
        )
        assert any(entry.data.get("summary") == "the real handoff" for entry in entries)
    finally:
        fresh.close()
