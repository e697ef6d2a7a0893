"""While this machine's derived tables are built in the background, the sessions and the feed read from
them still show what this machine just wrote (the rows of its own log's newest bytes are added to the
tables ahead of the build: order-free rows, so the build ends as a fresh one would)."""

from __future__ import annotations

import os
import random

import pytest

from contextflow.app import App
from contextflow.core import catchup
from contextflow.core import tables as tables_module
from contextflow.feed import present as feed
from contextflow.sessions import present as sessions
from tests.conftest import open_app
from tests.test_ondisk import churn


def building_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    """As if the logs were big and another process were building the tables (it never finishes here)."""
    monkeypatch.setattr(catchup, "BACKGROUND_BYTES", 10)

    def elsewhere(self: tables_module.Tables, unread: int) -> None:
        self.building = True

    monkeypatch.setattr(tables_module.Tables, "_build_in_background", elsewhere)


def shows(app: App, note: str, task: str) -> None:
    args = {"project": "p", "session_id": "s-build"}
    assert task in sessions.get_latest_handoff(app, dict(args)).text
    context = sessions.read_shared_context(app, {**args, "format": "json"}).text
    assert note in context and task in context
    assert "s-build" in sessions.list_sessions(app, {"project": "p"}).text
    assert task in sessions.resume_session(app, dict(args)).text
    activity = feed.recent_activity(app, {"project": "p"}).text
    assert note in activity and task in activity


def test_a_handoff_and_a_note_written_during_a_build_are_read_at_once(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = open_app("writer-b")
    try:
        churn(app, other, random.Random(4), 10)  # history in both logs, none in the tables yet
        app.tables().close()
        app.tables().path.unlink()
        building_elsewhere(monkeypatch)
        base = {"agent": "claude", "project": "p", "session_id": "s-build"}
        sessions.append_shared_note(app, {**base, "text": "a note written while building"})
        sessions.write_shared_handoff(
            app, {**base, "task": "the task handed off while building", "summary": "done so far", "next_steps": ["x"]}
        )
        shows(app, "a note written while building", "the task handed off while building")
        assert not app.tables().current()  # nothing was built: this machine's newest bytes answered
        second = App.open({**os.environ})  # a second process of this machine
        try:
            shows(second, "a note written while building", "the task handed off while building")
            sessions.append_shared_note(second, {**base, "text": "the second one's note"})
            assert "the second one's note" in sessions.read_shared_context(app, {**base, "format": "json"}).text
        finally:
            second.close()
        monkeypatch.setattr(catchup, "BACKGROUND_BYTES", 1 << 40)  # the build is done
        assert app.tables().update() > 0 and app.tables().current()
        assert app.tables().differing() == []  # rows added ahead of the build: the same as a fresh build
        shows(app, "a note written while building", "the task handed off while building")
    finally:
        other.close()


def test_only_the_newest_bytes_of_this_machines_log_are_added_ahead(app: App, monkeypatch: pytest.MonkeyPatch) -> None:
    base = {"agent": "claude", "project": "p", "session_id": "s-old"}
    sessions.append_shared_note(app, {**base, "text": "an old note"})
    for n in range(40):
        sessions.append_shared_note(app, {**base, "session_id": f"s-{n}", "text": f"filler {n} " + "x" * 200})
    app.tables().close()
    app.tables().path.unlink(missing_ok=True)
    building_elsewhere(monkeypatch)
    monkeypatch.setattr(catchup, "TAIL_BYTES", 2000)  # the first look reads this far back, no further
    sessions.append_shared_note(app, {**base, "text": "the newest note"})
    context = sessions.read_shared_context(app, {**base, "format": "json"}).text  # a read adds the logs' rest
    assert "the newest note" in context and "an old note" in context
    assert "filler 0 " in feed.recent_activity(app, {"project": "p", "agent": "claude", "limit": 100}).text
    tables = app.tables()

    def held(sql: str) -> int:
        return int(tables.peek(sql)[0][0])

    assert held("SELECT count(*) FROM sessions_entries WHERE CAST(data AS TEXT) LIKE '%the newest note%'") == 1
    # (the build brings the old one)
    assert held("SELECT count(*) FROM sessions_entries WHERE CAST(data AS TEXT) LIKE '%an old note%'") == 0
    feed_of = "SELECT count(*) FROM feed f JOIN sessions_entries e ON e.id = f.id WHERE CAST(e.data AS TEXT) LIKE"
    assert held(f"{feed_of} '%filler 39 %'") == 1  # (a note's feed row holds no text: the sessions' entry does)
    assert held(f"{feed_of} '%filler 0 %'") == 0
    monkeypatch.setattr(catchup, "BACKGROUND_BYTES", 1 << 40)
    assert "an old note" in sessions.read_shared_context(app, {**base, "format": "json"}).text


def test_a_stuck_ahead_lock_stops_neither_the_build_nor_a_read(app: App, monkeypatch: pytest.MonkeyPatch) -> None:
    from contextflow.core.lock import WriterLock

    monkeypatch.setattr(catchup, "WAIT_S", 0.05)
    tables = app.tables()
    stuck = WriterLock(tables.path.with_name(catchup.AHEAD_LOCK), 0)
    with stuck:  # held by a process that stopped
        tables._let_ahead()
        assert tables._ahead_stuck  # waited once, never again
        sessions.append_shared_note(app, {"agent": "a", "project": "p", "text": "still written"})
        tables._add_own_newest(0.05)  # gives up on the lock: the read answers from the tables as they are
        assert "still written" in sessions.read_shared_context(app, {"project": "p", "format": "json"}).text
