"""Timeline threads read from the derived tables on disk answer exactly as the whole fold of the view."""

from __future__ import annotations

import os
import random
from datetime import UTC, datetime

import pytest

from contextflow.app import App
from contextflow.core.errors import InputError, NotFoundError
from contextflow.core.events import Event, encode
from contextflow.core.log import log_path
from contextflow.timeline import core as timeline
from contextflow.timeline import present
from contextflow.timeline.fields import THREAD_STATUSES
from tests.conftest import open_app
from tests.timeline_oracle import fold_whole

NOW = datetime(2026, 3, 1, tzinfo=UTC)
BASE = 1_770_000_000_000 << 16
WRITERS = ("writer-a", "writer-b")


def made(rng: random.Random, count: int) -> list[Event]:
    """`count` timeline events of two writers: threads, tangents, updates (some before what they update),
    thoughts, positions, statuses the view does not know, and a clock bound."""
    threads: list[str] = []
    thoughts: list[str] = []
    seqs = dict.fromkeys(WRITERS, 0)
    out: list[Event] = []
    for n in range(count):
        writer = rng.choice(WRITERS)
        seqs[writer] += 1
        hlc = BASE + (rng.randrange(count) << 16)  # ticks collide across writers
        event_id = f"e{n:05d}{writer[-1]}"
        roll = rng.random()
        later = f"e{rng.randrange(count):05d}{rng.choice(WRITERS)[-1]}"  # an id that may be created later, or never
        if roll < 0.12 or not threads:
            data = {"name": f"thread {n}", "status": "active", "agent": writer}
            if thoughts and rng.random() < 0.4:
                data["parent_thought_id"] = rng.choice([*thoughts, later])
            threads.append(event_id)
            kind = "timeline.thread"
        elif roll < 0.3:
            status = rng.choice([*THREAD_STATUSES, "bogus"])
            data = {"thread_id": rng.choice([*threads, later]), "status": status}
            if rng.random() < 0.3:
                data = {"thread_id": data["thread_id"], "name": f"renamed {n}"}
            kind = "timeline.thread_update"
        elif roll < 0.75:
            data = {"thread_id": rng.choice([*threads, later]), "content": f"thought {n}", "thought_type": "idea"}
            if rng.random() < 0.05:
                data = {"content": "no thread"}
            thoughts.append(event_id)
            kind = "timeline.thought"
        elif roll < 0.88:
            data = {"thought_id": rng.choice([*thoughts, later]), "status": "resolved", "content": f"edited {n}"}
            kind = "timeline.thought_update"
        else:
            data = {"thread_id": rng.choice(threads), "thought_id": rng.choice([*thoughts, later])}
            kind = "timeline.position"
        out.append(Event(event_id, writer, seqs[writer], hlc, kind, data))
    seqs["writer-b"] += 1
    named = [e.id for e in rng.sample(out, min(3, len(out)))]
    out.append(Event("bound0000000000b", "writer-b", seqs["writer-b"], BASE + (3 << 16), "clock.bound", {"ids": named}))
    return out


def answers(app: App) -> list[object]:
    found: list[object] = []
    for status in (None, *THREAD_STATUSES):
        for limit in (1, 3, 500):
            found.append([present.whereabouts_dict(w) for w in timeline.threads_here(app, status=status, limit=limit)])
    for status in THREAD_STATUSES:
        found.append(timeline.thread_count(app, status))
        found.append([present.whereabouts_text(w, NOW) for w in timeline.where_am_i(app, status=status, limit=5)])
    for where in timeline.threads_here(app, limit=500):
        for given in (where.thread.id, where.thread.id[:-1], where.thread.id[:3], "zz", " "):
            found.append(refused_or(lambda g=given: timeline.get_thread(app, thread_id=g, limit=3), thread_page))
    for given in ("e0", "e00", "e001", "e0012", "e00123", "x"):
        found.append(refused_or(lambda g=given: timeline.resolve_thought(app, g), lambda t: (t.id, t.content)))
    return found


def thread_page(detail: timeline.ThreadDetail) -> str:
    return present.thread_detail_text(detail, NOW)


def refused_or(read, shown):
    try:
        return shown(read())
    except (InputError, NotFoundError) as exc:
        return f"{type(exc).__name__}: {exc}"


def whole_fold() -> App:
    """An app that folds the whole view in memory (a store that shares no machine-local state)."""
    return App.open({**os.environ, "CONTEXTFLOW_WRITER": "writer-a"}, shares_state=False)


@pytest.fixture(autouse=True)
def _oracle(monkeypatch):
    fold_whole(monkeypatch)


def served_from_tables(app: App) -> bool:
    """Whether `app` reads the tables themselves (they hold every log), folding nothing in memory."""
    return app.tables().serves(("timeline",)) and not app.store.scanned


def write(store_dir, events: list[Event]) -> None:
    store_dir.mkdir(parents=True, exist_ok=True)
    for event in events:
        with log_path(store_dir, event.writer).open("ab") as handle:
            handle.write(encode(event))


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("count", [12, 80, 400])
def test_the_tables_answer_as_the_whole_fold_in_any_order(store_dir, seed, count):
    rng = random.Random(seed)
    events = made(rng, count)
    rng.shuffle(events)  # updates before creations, the bound before or after what it names
    reader = open_app("writer-a")
    cut = rng.randrange(len(events))
    write(store_dir, events[:cut])
    first = answers(reader)  # read part of it: the rest arrives as new bytes
    assert first == answers(whole_fold())
    write(store_dir, events[cut:])
    assert answers(reader) == answers(whole_fold())
    assert served_from_tables(reader)
    assert answers(open_app("writer-a")) == answers(whole_fold())  # and a fresh process, from the tables as built


def test_a_tangent_shows_its_trail_and_the_parent_its_position_from_the_tables(app):
    root = timeline.create_thread(app, name="root")
    first = timeline.add_thought(app, thread_id=root.id, content="start")
    tangent = timeline.go_tangent(app, thread_id=root.id, name="side quest")
    deeper = timeline.go_tangent(app, thread_id=tangent.thread.id, name="deeper")
    timeline.add_thought(app, thread_id=deeper.thread.id, content="down here")
    reader = open_app("writer-a")
    assert served_from_tables(reader)
    found = {w.thread.name: w for w in timeline.where_am_i(reader)}
    assert [(c.thread.name, c.thought.id) for c in found["deeper"].trail] == [
        ("side quest", deeper.thought.id),
        ("root", tangent.thought.id),
    ]
    assert found["root"].position.id == tangent.thought.id and found["root"].thought_count == 2
    timeline.return_from(app, thread_id=tangent.thread.id)
    timeline.update_thought(app, thought_id=first.id, content="start, edited")
    found = {w.thread.name: w for w in timeline.where_am_i(reader)}
    assert "side quest" not in found  # completed
    assert found["root"].position.id == tangent.thought.id
    assert answers(reader) == answers(whole_fold())


def test_bad_timeline_lines_are_skipped_and_counted(app, store_dir):
    thread = timeline.create_thread(app, name="kept")
    timeline.add_thought(app, thread_id=thread.id, content="still here")
    with log_path(store_dir, "writer-b").open("ab") as handle:
        handle.write(b'{"v":1,"id":"x","kind":"timeline.thread"\n')  # cut short
        handle.write(b"\xff\xfe not json\n")
        bad = Event("Z" * 16, "writer-b", 1, BASE, "timeline.thread_update", {"thread_id": thread.id, "status": 5})
        handle.write(encode(bad))  # a status that is no string: the field is dropped, the event kept
    reader = open_app("writer-a")
    (where,) = timeline.where_am_i(reader)
    assert where.thread.status == "active" and where.last_thought.content == "still here"
    assert served_from_tables(reader)
    assert reader.tables().bad_lines() == 2
    assert answers(reader) == answers(whole_fold())


def never_folded(monkeypatch) -> None:
    """A read of every log (`Store.refresh`) fails the test (the timeline is only ever queried)."""
    from contextflow.core.store import Store

    def refused(*args, **kwargs):
        raise AssertionError("every log was read")

    monkeypatch.setattr(Store, "refresh", refused)


def test_while_the_tables_are_built_elsewhere_the_tables_and_the_logs_rest_answer(app, monkeypatch):
    from tests.test_own_writes_while_building import building_elsewhere

    older = timeline.create_thread(app, name="older")
    app.tables().close()
    app.tables().path.unlink(missing_ok=True)  # a fresh machine: the tables hold nothing yet
    building_elsewhere(monkeypatch)
    never_folded(monkeypatch)
    thread = timeline.create_thread(app, name="written while building")
    timeline.add_thought(app, thread_id=thread.id, content="seen at once")
    reader = open_app("writer-a")
    found = timeline.where_am_i(reader)
    assert not reader.tables().current() and not served_from_tables(reader)
    assert [(w.thread.name, w.last_thought.content if w.last_thought else None) for w in found] == [
        ("written while building", "seen at once"),
        ("older", None),
    ]
    assert older.id in {w.thread.id for w in found}
    assert timeline.thread_count(reader, "active") == 2
    listed = present.timeline_list_threads(reader, {})
    assert "PARTIAL" not in listed.text and "partial" not in listed.data  # every log read: complete


def test_a_thread_made_while_building_is_found_by_the_next_read(app, monkeypatch):
    from tests.test_own_writes_while_building import building_elsewhere

    first = timeline.create_thread(app, name="first")
    timeline.add_thought(app, thread_id=first.id, content="one")
    app.tables().close()
    app.tables().path.unlink(missing_ok=True)
    building_elsewhere(monkeypatch)
    never_folded(monkeypatch)
    made = timeline.create_thread(app, name="just made")
    assert timeline.resolve_thread(app, made.id[:8]).name == "just made"  # by a prefix, as a caller gives it
    timeline.add_thought(app, thread_id=made.id, content="two")
    timeline.update_thread(app, thread_id=first.id, status="pause")  # a thread the tables hold, moved meanwhile
    detail = timeline.get_thread(app, thread_id=made.id)
    assert [t.content for t in detail.thoughts] == ["two"] and detail.position is not None
    assert [w.thread.name for w in timeline.where_am_i(app)] == ["just made"]
    assert [w.thread.name for w in timeline.threads_here(app, status="paused")] == ["first"]
    assert timeline.get_thread(app, thread_id=first.id).total_thoughts == 1


def test_the_timeline_says_it_is_partial_and_how_far_the_build_is_when_too_much_remains(app, monkeypatch):
    from contextflow.core import rest
    from tests.test_own_writes_while_building import building_elsewhere

    thread = timeline.create_thread(app, name="kept")
    timeline.add_thought(app, thread_id=thread.id, content="newest")
    app.tables().close()
    app.tables().path.unlink(missing_ok=True)
    building_elsewhere(monkeypatch)
    never_folded(monkeypatch)
    monkeypatch.setattr(rest, "REST_BYTES", 10)  # a new machine's backlog: too much to read per call
    reader = open_app("writer-a")
    for shown in (
        present.timeline_list_threads(reader, {}),
        present.timeline_where_am_i(reader, {}),
        present.timeline_get_thread(reader, {"thread_id": thread.id}),
    ):
        assert shown.text.startswith("PARTIAL: this machine is still reading the store's logs into its local tables (")
        assert "indexed" in shown.text and "newest" in shown.text
        assert shown.data["partial"]["log_bytes"] > 0


def test_the_session_start_shows_the_same_open_threads_from_the_tables(app, monkeypatch):
    from contextflow.adapters import session_start
    from contextflow.core import timeutil

    names = []
    for n in range(8):
        thread = timeline.create_thread(app, name=f"thread {n}", description="about it")
        for k in range(n % 3):
            timeline.add_thought(app, thread_id=thread.id, content=f"step {k} of {n}")
        names.append((thread.id, f"thread {n}"))
    timeline.update_thread(app, thread_id=names[7][0], status="pause")
    tangent = timeline.go_tangent(app, thread_id=names[2][0], name="a tangent")
    timeline.add_thought(app, thread_id=names[0][0], content="thread 0 again")  # most recent now
    monkeypatch.setattr(timeutil, "now", lambda: datetime(2040, 1, 1, tzinfo=UTC))  # ages read alike
    reader = open_app("writer-a")
    shown = session_start.threads_text(reader, 10_000)
    assert served_from_tables(reader)
    assert shown == session_start.threads_text(whole_fold(), 10_000)
    heads = [line for line in shown.splitlines() if line.startswith('- thread "') and " | status=" in line]
    assert [h.split('"', 2)[1] for h in heads] == [
        "thread 0",
        "a tangent",
        "thread 2",
        "thread 6",
        "thread 5",
    ]
    assert 'tangent of: "thread 2"' in shown and tangent.thread.id in shown
    assert "step 1 of 5" in shown and '"thread 7"' not in shown  # paused


def test_a_clock_bound_right_after_the_event_it_names_lowers_it_in_every_table(store_dir):
    from contextflow.core.tables import db_stamp

    future = BASE + (10_000_000 << 16)
    thread = Event("F" * 16, "writer-z", 1, future, "timeline.thread", {"name": "from the future"})
    note = Event("N" * 16, "writer-z", 2, future, "note", {"text": "also", "session_id": "s"})
    bound = Event("B" * 16, "writer-z", 3, BASE + (5 << 16), "clock.bound", {"ids": [thread.id, note.id]})
    write(store_dir, [thread, note, bound])  # one chunk: the bound comes after both
    reader = open_app("writer-a")
    (where,) = timeline.where_am_i(reader)
    assert where.thread.created == (bound.hlc - 1, "writer-z", 1)
    assert answers(reader) == answers(whole_fold())
    lowered = db_stamp(bound.hlc - 1)
    for table in ("timeline_events", "sessions_entries", "feed"):
        found = reader.tables().query(f"SELECT hlc FROM {table} WHERE id IN (?, ?)", (thread.id, note.id))
        assert found and all(hlc == lowered for (hlc,) in found), table


def test_a_thread_the_tables_hold_moved_while_another_process_holds_their_lock_is_read_whole(app, monkeypatch):
    """The rows of the logs' remaining bytes come with the rows the tables hold of their threads: a thread's
    summary (created, status, latest activity) is the whole thread's, not only its newest events'."""
    import sqlite3

    from contextflow.core import projections

    real = projections.Txn.__init__
    monkeypatch.setattr(projections.Txn, "__init__", lambda self, db, wait: real(self, db, min(wait, 0.05)))
    kept = timeline.create_thread(app, name="kept")
    timeline.add_thought(app, thread_id=kept.id, content="one")
    other = timeline.create_thread(app, name="other")
    timeline.add_thought(app, thread_id=other.id, content="two")
    assert [w.thread.name for w in timeline.where_am_i(app)] == ["other", "kept"]
    holder = sqlite3.connect(app.tables().path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another process holds the write lock (past the reader's wait)
    try:
        never_folded(monkeypatch)
        timeline.add_thought(app, thread_id=kept.id, content="three")
        timeline.update_thread(app, thread_id=other.id, status="pause")
        assert not app.tables().serves(("timeline",))
        assert [(w.thread.name, w.thought_count, w.position.content) for w in timeline.where_am_i(app)] == [
            ("kept", 2, "three")
        ]
        assert [w.thread.name for w in timeline.threads_here(app, status="paused")] == ["other"]
        assert [w.thread.name for w in timeline.threads_here(app)] == ["other", "kept"]  # most recently active first
        assert (timeline.thread_count(app, "active"), timeline.thread_count(app, "paused")) == (1, 1)
        assert timeline.resolve_thread(app, kept.id[:6]).name == "kept"
    finally:
        holder.execute("ROLLBACK")
        holder.close()
