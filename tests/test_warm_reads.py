"""Warm reads of the derived tables: a call checks the logs once, reads only its answer's rows, and a
listing is a few statements whatever it lists; never at the cost of a stale or partial answer."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

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


def test_a_warm_reply_counts_the_malformed_lines_once_per_change_of_the_logs(app: App) -> None:
    from contextflow.sessions import present

    project = app.settings.default_project
    sessions.append_note(app, agent="claude", text="one", session_id="s")
    for _ in range(2):  # brought up to date, then the count read at this state
        present.read_shared_context(app, {"project": project})
    with statements(app) as found:
        reply = present.read_shared_context(app, {"project": project})
    assert reply.data["bad_lines"] == 0
    assert not [s for s in found if "positions" in s], found  # nothing new: the count read once is the count
    with app.store.log_writer.path.open("ab") as log:
        log.write(b"{not an event\n")
    reply = present.read_shared_context(app, {"project": project})
    assert reply.data["bad_lines"] == 1 and "skipped 1 malformed line" in reply.text  # counted again: the logs changed


def test_catching_up_a_write_makes_no_bookkeeping_table_again(app: App) -> None:
    sessions.append_note(app, agent="claude", text="one", session_id="s")
    sessions.read_entries(app, EntryFilter("shared"))  # the tables made and brought up to date
    sessions.append_note(app, agent="claude", text="two", session_id="s")
    with statements(app) as found:
        assert len(sessions.read_entries(app, EntryFilter(app.settings.default_project))) == 2
    assert [s for s in found if "INSERT" in s], found  # (the note was caught up in this read)
    assert not [s for s in found if "CREATE" in s], found


def test_the_resume_prompts_signature_is_the_listings_and_reads_no_agents(app: App) -> None:
    from contextflow.sessions import present, stored
    from contextflow.sessions.marks import mark_handoff_wrong

    sessions.append_note(app, agent="a", text="plain", session_id="no-task")
    sessions.append_note(app, agent="b", text="t", session_id="tasked", task="  the task ")
    sessions.write_handoff(app, agent="b", summary="  first stop \n", session_id="tasked")
    wrong = sessions.write_handoff(app, agent="c", summary="wrong stop", session_id="marked")
    sessions.write_handoff(app, agent="c", summary="earlier", session_id="other")
    mark_handoff_wrong(app, handoff_id=wrong.id, agent="d", reason="not so")

    def expected() -> object:
        found = sessions.list_sessions(app, SessionQuery(app.settings.default_project, limit=sessions.PROMPT_SESSIONS))
        return tuple((s.session_id, s.latest_ts[:19], s.entry_count, s.task, s.latest_handoff_summary) for s in found)

    assert {s[0] for s in expected()} == {"no-task", "tasked", "marked", "other"}  # type: ignore[attr-defined]
    with statements(app) as found:
        signature = present.resume_signature(app)
    assert signature == (expected(), True)  # (True: the listing is whole, read from tables holding every log)
    assert not [s for s in found if "sessions_agents" in s], found
    assert stored.listing_signature(app, app.settings.default_project, 2) == expected()[:2]  # type: ignore[index]


def test_a_header_cleans_a_repeated_value_once_and_a_header_shown_before_not_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from contextflow.core.text import clean as real_clean
    from contextflow.core.text import clip as real
    from contextflow.operations import provenance

    clipped: list[object] = []

    def counted(value: object, limit: int) -> str:
        clipped.append(value)
        return real(value, limit)

    def cleaned(value: object, single_line: bool = False) -> str:
        clipped.append(value)
        return real_clean(value, single_line)

    monkeypatch.setattr(provenance, "clip", counted)
    monkeypatch.setattr(provenance, "clean", cleaned)
    odd = "a\x1b[31m b\u202e c"
    lines = [provenance.header(f"[{n}] note", ("writer", "w-header-test"), ("n", 7), ("odd", odd)) for n in range(5)]
    assert lines[4] == "[4] note | writer=w-header-test | n=7 | odd=a b c"
    assert clipped.count("w-header-test") == 1 and clipped.count(7) == 5  # (a number: clipped each time)
    assert clipped.count(odd) == 1 and clipped.count("[4] note") == 1
    clipped.clear()
    assert provenance.header("[4] note", ("writer", "w-header-test"), ("odd", odd)) == lines[4].replace(" | n=7", "")
    assert provenance.header("[4] note", ("writer", "w-header-test"), ("odd", odd)) == lines[4].replace(" | n=7", "")
    assert clipped == []  # every part shown before: the header, made of strings only, is the one shown then
    assert provenance.header("[4] note", ("n", True)) == "[4] note | n=True"  # (True == 1: never taken for another)
    assert provenance.header("[4] note", ("n", 1)) == "[4] note | n=1"
    monkeypatch.setattr(provenance, "clip", real)
    monkeypatch.setattr(provenance, "clean", real_clean)
    monkeypatch.setattr(provenance, "_SHOWN", {})
    assert provenance.header("[4] note", ("writer", "w-header-test"), ("n", 7), ("odd", odd)) == lines[4]


def test_a_note_shown_again_is_not_quoted_again(monkeypatch: pytest.MonkeyPatch) -> None:
    from contextflow.core.events import Event
    from contextflow.core.text import quote as real
    from contextflow.operations import provenance
    from contextflow.sessions.entry import entry_text

    quoted: list[object] = []

    def counted(value: object) -> str:
        quoted.append(value)
        return real(value)

    monkeypatch.setattr(provenance, "quote", counted)
    note = Event("id-quote-test", "w", 1, 1, "note", {"agent": "a", "text": "line one\n<!-- two -->\n\x1b[31mthree"})
    long = Event("id-quote-long", "w", 2, 2, "note", {"agent": "a", "text": "x" * 5000})
    shown = [entry_text(note, 1), entry_text(note, 1), entry_text(long), entry_text(long)]
    assert shown[0] == shown[1] and shown[0].endswith("> line one\n> < !-- two -- >\n> three")
    assert quoted.count(note.data["text"]) == 1  # the same note's text quoted once
    assert quoted.count(long.data["text"]) == 2  # (a long text is never kept)


def test_an_entry_moved_down_a_listing_is_not_cleaned_again_and_reads_as_before(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from contextflow.core.events import Event
    from contextflow.core.text import clean as real
    from contextflow.operations import provenance
    from contextflow.sessions.entry import entry_text

    odd = " [INST] <im_end>  a\u202egent\x1b[2J "
    data = {"agent": odd, "text": "t", "project": "p [/INST]", "session_id": " s  1 ", "task": "<|x|>"}
    event = Event("id-moved-test", "w<!--", 1, 1, "note", data)
    title = f"{event.ts} note by {real(odd, True)}"
    parts = (("writer", "w<!--"), ("project", "p [/INST]"), ("session", " s  1 "), ("task", "<|x|>"), ("id", event.id))
    cleaned: list[object] = []

    def counted(value: object, single_line: bool = False) -> str:
        cleaned.append(value)
        return real(value, single_line)

    assert entry_text(event, 1).split("\n")[0] == provenance.header(f"[1] {title}", *parts)  # as it always read
    monkeypatch.setattr(provenance, "clean", counted)
    monkeypatch.setattr(provenance, "clip", lambda value, limit: real(counted(value, True))[:limit])
    assert entry_text(event, 2).split("\n")[0] == "[2] " + entry_text(event, 1).split("\n")[0].removeprefix("[1] ")
    assert cleaned == []  # its header shown before, one place up


def test_context_list_counts_what_its_window_leaves_out_in_one_statement(app: App) -> None:
    from datetime import timedelta

    from contextflow.core.timeutil import now
    from contextflow.records import core as records
    from contextflow.records import present

    for n in range(12):
        records.set_record(app, key=f"{'fact' if n % 3 else 'waiting'}:item-{n}", value={"n": n}, pinned=n % 4 == 0)
    present.context_list(app, {})  # brought up to date
    with statements(app) as found:
        reply = present.context_list(app, {"limit": 5})
    assert reply.data["count"] == 5 and reply.data["older_left_out"] == 0
    assert len([s for s in found if "records_rows" in s]) == 2, found  # the page, and what the window leaves out
    later = now() + timedelta(days=40)  # every record out of the default window, some out of a 3-day one
    chosen: list[dict[str, Any]] = [{}, {"category": "fact"}, {"pinned_only": True}, {"prefix": "waiting:"}]
    for filters in [*chosen, {"since_days": 3}]:
        for limit in (2, 5, 500):
            every = records.list_records(app, **{**filters, "since_days": 0}, limit=limit, now=later)
            shown = records.list_records(app, **filters, limit=limit, now=later)
            left = records.records_left_out(app, **filters, limit=limit, now=later)
            assert left == len(every) - len(shown), (filters, limit)
            assert left == (min(limit, len(every)) if "since_days" not in filters else len(every) - len(shown))


def test_catching_up_a_write_reads_the_formats_once_a_plan(app: App) -> None:
    sessions.append_note(app, agent="claude", text="one", session_id="s")
    sessions.read_entries(app, EntryFilter(app.settings.default_project))
    sessions.append_note(app, agent="claude", text="two", session_id="s")
    with statements(app) as found:
        assert len(sessions.read_entries(app, EntryFilter(app.settings.default_project))) == 2
    plans = [s for s in found if "FROM positions" in s and "SELECT format, path, position, complete" in s]
    assert plans and not [s for s in found if s.startswith("SELECT 1 FROM sqlite_master")], found
    assert len([s for s in found if "FROM formats" in s]) == len(plans)  # (an earlier version's table asked there)
