"""Sessions from the derived tables on disk answer exactly as the full in-memory view would."""

import os
import random

import pytest

from contextflow.app import App
from contextflow.core.errors import NotFoundError
from contextflow.sessions import core as sessions
from contextflow.sessions import stored
from contextflow.sessions.core import EntryFilter, SessionQuery
from tests.conftest import open_app


def fill(app, rng: random.Random, count: int) -> None:
    for n in range(count):
        session = rng.choice(["a", "b", "c", ""])
        agent = rng.choice(["claude", "codex"])
        project = rng.choice(["shared", "web"])
        if rng.random() < 0.2:
            sessions.write_handoff(app, agent=agent, summary=f"h{n}", session_id=session or None, project=project)
        else:
            sessions.append_note(app, agent=agent, text=f"n{n}", session_id=session or None, project=project)


def answers(app) -> list:
    found = []
    for project in ("shared", "web", "none"):
        for session in (None, "a", "b", "zzz"):
            for agent in (None, "codex"):
                for kind in (None, "handoff"):
                    for limit in (1, 20, 200):
                        where = EntryFilter(project, agent, session, kind)
                        found.append([e.id for e in sessions.read_entries(app, where, limit)])
            if session:
                try:
                    resume = sessions.resume_session(app, session_id=session, project=project)
                except NotFoundError as exc:  # an unknown id: both must refuse it alike
                    found.append(str(exc))
                    continue
                found.append(
                    (
                        [e.id for e in resume.entries],
                        resume.latest_handoff.id if resume.latest_handoff else None,
                        resume.summary.as_dict() if resume.summary else None,
                    )
                )
        found.append([s.as_dict() for s in sessions.list_sessions(app, SessionQuery(project))])
    found.append(sessions.list_projects(app))
    return found


def in_memory(writer: str) -> App:
    """An app whose sessions come from the in-memory view (a store that shares no machine-local state)."""
    return App.open({**os.environ, "CONTEXTFLOW_WRITER": writer}, shares_state=False)


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("count", [5, 60, 450])
def test_the_tables_answer_as_the_full_view(app, seed, count):
    fill(app, random.Random(seed), count)
    fresh = open_app("writer-a")
    on_disk = answers(fresh)
    assert not fresh.store.scanned  # nothing folded in memory
    assert answers(in_memory("writer-a")) == on_disk


def test_a_fresh_process_reads_recent_entries_without_loading_the_store(app):
    for n in range(30):
        sessions.append_note(app, agent="claude", text=f"n{n}", session_id="s")
    sessions.write_handoff(app, agent="claude", summary="stop", session_id="s")
    fresh = open_app("writer-a")
    assert [e.data.get("text") for e in sessions.read_entries(fresh, EntryFilter("shared"), 3)] == ["n28", "n29", None]
    assert sessions.resume_session(fresh, session_id="s").latest_handoff.data["summary"] == "stop"
    assert not fresh.store.scanned


def test_another_process_appends_and_the_next_read_has_it(app):
    sessions.append_note(app, agent="claude", text="old", session_id="s")
    assert [e.data["text"] for e in sessions.read_entries(app, EntryFilter("shared"), 5)] == ["old"]
    sessions.append_note(open_app("writer-b"), agent="codex", text="new", session_id="s")
    assert [e.data["text"] for e in sessions.read_entries(app, EntryFilter("shared"), 5)] == ["old", "new"]
    (summary,) = sessions.list_sessions(app, SessionQuery("shared"))
    assert summary.agents == {"claude", "codex"} and summary.entry_count == 2


def test_a_warm_write_is_caught_up_in_one_transaction(app):
    sessions.append_note(app, agent="claude", text="old", session_id="s")
    sessions.read_entries(app, EntryFilter("shared"), 5)  # the tables hold every log
    sessions.append_note(app, agent="claude", text="new", session_id="s")
    statements: list[str] = []
    app.tables()._connect().set_trace_callback(statements.append)
    try:
        assert app.tables().update() == 1
    finally:
        app.tables()._connect().set_trace_callback(None)
    assert statements.count("BEGIN IMMEDIATE") == 1  # its line is read; no second one to find nothing more
    assert [e.data["text"] for e in sessions.read_entries(app, EntryFilter("shared"), 5)] == ["old", "new"]


def test_a_fresh_process_reports_bad_lines_without_loading_the_store(app, store_dir):
    sessions.append_note(app, agent="claude", text="good", session_id="s")
    with open(store_dir / "events.writer-a.jsonl", "ab") as handle:
        handle.write(b"{not json\n")
    fresh = open_app("writer-a")
    assert sessions.bad_line_count(fresh) == 1
    assert not fresh.store.scanned


def test_a_store_with_filtered_views_never_reads_the_tables(app):
    sessions.append_note(app, agent="claude", text="secret of project b", project="b", session_id="s")
    filtered = in_memory("writer-a")
    assert not filtered.store.shares_state and not stored.disk(filtered)


def auto(app, session, summary, project="shared"):
    return app.store.append(
        "handoff", {"project": project, "agent": "claude", "session_id": session, "summary": summary, "auto": True}
    )


@pytest.mark.parametrize("disk", [True, False])
def test_recent_reads_show_one_automatic_handoff_per_session(app, disk):
    reader = app if disk else in_memory("writer-a")
    for n in range(5):
        auto(app, "s1", f"auto {n}")
        sessions.append_note(app, agent="claude", text=f"note {n}", session_id="s1")
    auto(app, "s2", "other session")
    sessions.write_handoff(app, agent="claude", summary="written", session_id="s1")
    texts = [e.data.get("summary") or e.data.get("text") for e in sessions.read_entries(reader, EntryFilter("shared"))]
    assert texts == ["note 0", "note 1", "note 2", "note 3", "auto 4", "note 4", "other session", "written"]
    handoffs = sessions.read_entries(reader, EntryFilter("shared", session_id="s1", kind="handoff"))
    assert [e.data["summary"] for e in handoffs] == ["auto 4", "written"]
    every = sessions.read_entries(reader, EntryFilter("shared", session_id="s1", kind="handoff"), superseded=True)
    assert [e.data["summary"] for e in every] == ["auto 0", "auto 1", "auto 2", "auto 3", "auto 4", "written"]
    resume = sessions.resume_session(reader, session_id="s1")
    assert [e.data.get("summary") for e in resume.entries if e.kind == "handoff"] == ["auto 4", "written"]


@pytest.mark.parametrize("disk", [True, False])
def test_a_superseded_automatic_handoff_is_latest_again_when_the_newer_is_marked_wrong(app, disk):
    from contextflow.sessions import marks

    reader = app if disk else in_memory("writer-a")
    auto(app, "s1", "first")
    newer = auto(app, "s1", "second")
    marks.mark_handoff_wrong(app, handoff_id=newer.id, agent="claude", reason="it is wrong")
    assert sessions.latest_handoff(reader, EntryFilter("shared", session_id="s1")).data["summary"] == "first"


def test_automatic_handoffs_read_in_any_order_keep_the_newest_current(app, store_dir):
    from contextflow.core.events import Event, encode
    from contextflow.core.log import log_path

    base = auto(app, "s", "base").hlc
    made = [
        Event(
            f"A{n:015d}",
            "writer-z",
            n + 1,
            base + 10 * (n + 1),
            "handoff",
            {"session_id": "s", "summary": f"z{n}", "auto": True},
        )
        for n in range(4)
    ]
    log = log_path(store_dir, "writer-z")
    for event in (made[2], made[0], made[3], made[1]):  # written out of order
        with log.open("ab") as handle:
            handle.write(encode(event))
        sessions.read_entries(app, EntryFilter("shared"))  # read after each one
    handoffs = sessions.read_entries(app, EntryFilter("shared", kind="handoff"))
    assert [e.data["summary"] for e in handoffs] == ["z3"]
    assert answers(app) == answers(in_memory("writer-a"))


def test_get_context_shows_one_automatic_handoff_per_session(app):
    from contextflow.search.retrieval import get_context

    for n in range(5):
        auto(app, "s1", f"zeppelin migration step {n}")
    auto(app, "s2", "zeppelin migration elsewhere")
    found = get_context(app, query="zeppelin migration", kinds=["handoff"])
    texts = found.text
    assert "step 4" in texts and "elsewhere" in texts and len(found.shown) == 2
    assert not any(f"step {n}" in texts for n in range(4)), texts


def test_an_entrys_text_is_stored_once_and_read_back_whole_in_its_order(app):
    """The fields a column holds are not kept again in `data` (nor a note's text in the feed), and each
    entry reads back exactly as written: field order, padding and shapes the columns do not hold included."""
    from contextflow.feed.core import recent

    handoff = {"task": "ship it", "project": "web", "agent": "me", "session_id": "s1", "summary": "the summary"}
    padded = {"session_id": " s1 ", "text": "a note", "task": " padded ", "agent": "", "project": "web"}
    written = [app.store.append("handoff", handoff), app.store.append("note", padded)]
    read = {event.id: event.data for event in sessions.read_entries(app, EntryFilter("web"), 10)}
    assert [list(read[event.id].items()) for event in written] == [list(handoff.items()), list(padded.items())]
    stored_data = app.tables().query("SELECT CAST(data AS TEXT) FROM sessions_entries ORDER BY hlc")
    assert "the summary" not in stored_data[0][0] and "ship it" not in stored_data[0][0]
    assert " padded " in stored_data[1][0] and '"session_id":" s1 "' in stored_data[1][0]  # not as its column
    assert app.tables().query("SELECT text FROM feed") == [(None,), (None,)]
    assert [item.text for item in recent(app)] == ["a note", "ship it - the summary"]


def test_entries_read_back_in_their_field_order_whatever_it_is(app):
    rng = random.Random(4)
    fields = [("project", "web"), ("session_id", "s1"), ("agent", "me"), ("task", "t"), ("text", "x"), ("tags", ["a"])]
    fields += [(f"extra{n}", n) for n in range(30)]  # a field past the 31st place stays in the data
    written = []
    for _ in range(20):
        rng.shuffle(fields)
        written.append(app.store.append("note", dict(fields[: rng.randint(1, len(fields))])))
    read = {event.id: event.data for event in sessions.read_entries(app, EntryFilter("web"), 50)}
    read |= {event.id: event.data for event in sessions.read_entries(app, EntryFilter("shared"), 50)}
    assert [list(read[event.id].items()) for event in written] == [list(event.data.items()) for event in written]
