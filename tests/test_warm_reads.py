"""Warm reads of the derived tables: a call checks the logs once, reads only its answer's rows, and a
listing is a few statements whatever it lists; never at the cost of a stale or partial answer."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from contextflow.app import App
from contextflow.core.projections import Txn
from contextflow.sessions import core as sessions
from contextflow.sessions.core import EntryFilter, SessionQuery


@contextmanager
def statements(app: App) -> Iterator[list[str]]:
    """The SQL statements the tables' connection runs inside."""
    found: list[str] = []
    db = app.tables()._connect()
    db.set_trace_callback(found.append)
    try:
        yield found
    finally:
        db.set_trace_callback(None)


def listed(app: App) -> Callable[[], list[str]]:
    return lambda: [s.session_id for s in sessions.list_sessions(app, SessionQuery("shared"))]


def test_a_session_listing_is_a_few_statements_whatever_the_sessions_listed(app: App) -> None:
    counts: list[int] = []
    for sessions_count in (2, 12):
        for n in range(len(counts) * 2, sessions_count):
            sessions.append_note(app, agent=f"agent-{n % 3}", text=f"n{n}", session_id=f"s{n}")
            sessions.write_handoff(app, agent="claude", summary=f"stop {n}", session_id=f"s{n}")
        assert len(listed(app)()) == sessions_count  # (brought up to date)
        with statements(app) as found:
            summaries = sessions.list_sessions(app, SessionQuery("shared"))
        assert [s.latest_handoff_summary for s in summaries][-1] == "stop 0"
        assert summaries[0].agents == {"claude", f"agent-{(sessions_count - 1) % 3}"}
        counts.append(len(found))
    assert counts[0] == counts[1] <= 6, counts


def test_a_warm_read_reads_no_bookkeeping_table(app: App) -> None:
    sessions.append_note(app, agent="claude", text="one", session_id="s")
    sessions.read_entries(app, EntryFilter("shared"))  # brought up to date
    with statements(app) as found:
        assert [e.data["text"] for e in sessions.read_entries(app, EntryFilter("shared"))] == ["one"]
    assert not [s for s in found if "positions" in s or "formats" in s or "CREATE" in s], found
    assert len([s for s in found if "data_version" in s]) == 1  # the logs and the database checked once


def test_a_format_started_over_by_another_process_is_noticed_though_no_log_changed(app: App) -> None:
    for n in range(3):
        sessions.append_note(app, agent="claude", text=f"n{n}", session_id="s")
    assert listed(app)() == ["s"]
    other = app.tables()._at(app.tables().path)  # another process's handle on the same database
    try:
        db = other._connect()
        with Txn(db, 2.0):
            other._reset(db, "sessions")  # as a build of another version starts over: empty tables, no read position
    finally:
        other.close()
    assert listed(app)() == ["s"]  # read again from the logs, never an empty answer
    assert [e.data["text"] for e in sessions.read_entries(app, EntryFilter("shared"))] == ["n0", "n1", "n2"]
