"""Timeline: threads, thoughts, positions and tangents; prefixes; order independence across writers."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextflow.core.errors import InputError, NotFoundError
from contextflow.core.events import Event
from contextflow.timeline import core as timeline
from contextflow.timeline.view import TimelineView
from tests.conftest import open_app
from tests.folding import fold
from tests.table import run


def test_a_new_thread_is_active_and_found_by_any_unique_prefix(app):
    event = timeline.create_thread(app, name="claudecluster v0.2", description="ship it", agent="claude")
    thread = timeline.resolve_thread(app, event.id[:3].upper())
    assert (thread.id, thread.name, thread.description, thread.status) == (
        event.id,
        "claudecluster v0.2",
        "ship it",
        "active",
    )
    assert thread.agent == "claude" and thread.writer == "writer-a"


def test_an_ambiguous_prefix_asks_for_more_characters(app):
    ids = [timeline.create_thread(app, name=f"t{n}").id for n in range(40)]
    shared = next(a[:1] for a in ids for b in ids if a != b and a[0] == b[0])
    with pytest.raises(InputError, match=r"ambiguous.*type more characters"):
        timeline.resolve_thread(app, shared)


def test_an_unknown_thread_or_thought_id_says_where_to_find_ids(app):
    with pytest.raises(NotFoundError, match="timeline_list_threads"):
        timeline.add_thought(app, thread_id="zzzz", content="x")
    with pytest.raises(NotFoundError, match="timeline_get_thread"):
        timeline.update_thought(app, thought_id="zzzz", status="resolved")
    assert app.store.event_count == 0


def test_thoughts_chain_from_the_current_position_and_move_it(app):
    thread = timeline.create_thread(app, name="work").id
    first = timeline.add_thought(app, thread_id=thread, content="idea", thought_type="idea")
    second = timeline.add_thought(app, thread_id=thread, content="done", metadata={"files": ["a.py"]})
    assert "previous_thought_id" not in first.data
    assert second.data["previous_thought_id"] == first.id
    detail = timeline.get_thread(app, thread_id=thread)
    assert [t.id for t in detail.thoughts] == [first.id, second.id]
    assert detail.position is not None and detail.position.id == second.id
    assert detail.thoughts[1].metadata == {"files": ["a.py"]} and detail.thoughts[1].thought_type == "progress"


def test_bad_thought_arguments_are_refused(app):
    thread = timeline.create_thread(app, name="work").id
    with pytest.raises(InputError, match="thought_type must be one of idea, decision"):
        run(app, "timeline_add_thought", thread_id=thread, content="x", thought_type="musing")
    with pytest.raises(InputError, match="content is empty"):
        timeline.add_thought(app, thread_id=thread, content="  ")
    with pytest.raises(InputError, match=r"metadata must be a JSON object, got \['a'\]; e\.g\. \{\"files\""):
        run(app, "timeline_add_thought", thread_id=thread, content="x", metadata=["a"])
    with pytest.raises(InputError, match="name is empty"):
        timeline.create_thread(app, name="")


def test_updating_a_thought_changes_only_the_given_fields(app):
    thread = timeline.create_thread(app, name="work").id
    thought = timeline.add_thought(app, thread_id=thread, content="blocked on creds", thought_type="blocker")
    timeline.update_thought(app, thought_id=thought.id[:6], status="resolved")
    found = timeline.resolve_thought(app, thought.id)
    assert (found.status, found.content, found.thought_type) == ("resolved", "blocked on creds", "blocker")
    with pytest.raises(InputError, match="nothing to change"):
        timeline.update_thought(app, thought_id=thought.id)
    with pytest.raises(InputError, match="status must be one of active, resolved, abandoned"):
        run(app, "timeline_update_thought", thought_id=thought.id, status="done")


def test_list_threads_filters_by_status_newest_activity_first(app):
    a = timeline.create_thread(app, name="a").id
    b = timeline.create_thread(app, name="b").id
    timeline.add_thought(app, thread_id=a, content="a moves")
    timeline.update_thread(app, thread_id=b, status="paused")
    assert [t.id for t in timeline.list_threads(app)] == [b, a]
    assert [t.id for t in timeline.list_threads(app, status="paused")] == [b]
    assert [w.thread.id for w in timeline.where_am_i(app)] == [a]
    with pytest.raises(InputError, match="status must be one of active, paused"):
        run(app, "timeline_list_threads", status="sleeping")


def test_a_tangent_marks_the_parent_starts_a_child_and_returning_restores_the_parent_position(app):
    root = timeline.create_thread(app, name="UDM Pro tracking").id
    before = timeline.add_thought(app, thread_id=root, content="working on API credentials")
    tangent = timeline.go_tangent(app, thread_id=root, name="Synology check", content="which NAS?")
    assert tangent.thought.data["thought_type"] == "tangent_start"
    assert tangent.thought.data["previous_thought_id"] == before.id
    assert tangent.thread.data["parent_thought_id"] == tangent.thought.id
    timeline.add_thought(app, thread_id=tangent.thread.id, content="htnas03 is the only Synology")
    timeline.add_thought(app, thread_id=root, content="meanwhile on the root")  # the root moved on

    trail = [c.thread.id for c in next(w for w in timeline.where_am_i(app) if w.thread.id == tangent.thread.id).trail]
    assert trail == [root]
    assert [c.id for c in timeline.get_thread(app, thread_id=root).children] == [tangent.thread.id]

    done = timeline.return_from(app, thread_id=tangent.thread.id[:5])
    assert (done.status, done.parent.id, done.position.id) == ("completed", root, tangent.thought.id)
    assert timeline.resolve_thread(app, tangent.thread.id).status == "completed"
    here = timeline.get_thread(app, thread_id=root).position
    assert here is not None and here.id == tangent.thought.id


def test_returning_from_a_root_thread_is_refused_and_writes_nothing(app):
    root = timeline.create_thread(app, name="root").id
    count = app.store.event_count
    with pytest.raises(InputError, match="root thread, not a tangent"):
        timeline.return_from(app, thread_id=root)
    assert app.store.event_count == count


def test_returning_with_pause_reactivates_a_paused_parent(app):
    root = timeline.create_thread(app, name="root").id
    timeline.add_thought(app, thread_id=root, content="start")
    tangent = timeline.go_tangent(app, thread_id=root, name="side")
    timeline.update_thread(app, thread_id=root, status="paused")
    done = timeline.return_from(app, thread_id=tangent.thread.id, status="paused")
    assert done.status == "paused"
    assert timeline.resolve_thread(app, root).status == "active"
    assert timeline.resolve_thread(app, tangent.thread.id).status == "paused"
    with pytest.raises(InputError, match="status must be one of completed, paused, abandoned"):
        run(app, "timeline_return", thread_id=tangent.thread.id, status="active")


def test_a_thread_created_on_one_writer_takes_thoughts_from_another(app):
    thread = timeline.create_thread(app, name="shared work").id
    other = open_app("writer-b")
    try:
        timeline.add_thought(other, thread_id=thread[:6], content="from b", agent="codex")
    finally:
        other.close()
    last = timeline.where_am_i(app)[0].last_thought
    assert last is not None and (last.content, last.writer, last.agent) == ("from b", "writer-b", "codex")


def test_update_thread_needs_a_change_and_a_valid_status(app):
    thread = timeline.create_thread(app, name="x").id
    with pytest.raises(InputError, match="nothing to change"):
        timeline.update_thread(app, thread_id=thread)
    with pytest.raises(InputError, match="status must be one of"):
        run(app, "timeline_update_thread", thread_id=thread, status="sleeping")
    timeline.update_thread(app, thread_id=thread, name="renamed", description="why")
    found = timeline.resolve_thread(app, thread)
    assert (found.name, found.description) == ("renamed", "why")


# -- order independence --------------------------------------------------------------------

WRITERS = ("alpha", "beta", "gamma")
THREADS = ("T0", "T1", "T2")
THOUGHTS = ("H0", "H1", "H2", "H3")
step = st.one_of(
    st.tuples(st.just("thread"), st.sampled_from(THREADS), st.sampled_from((None, *THOUGHTS)), st.text(max_size=4)),
    st.tuples(
        st.just("thread_update"),
        st.sampled_from(THREADS),
        st.sampled_from(("active", "paused", "completed")),
        st.text(max_size=4),
    ),
    st.tuples(st.just("thought"), st.sampled_from(THOUGHTS), st.sampled_from(THREADS), st.text(max_size=4)),
    st.tuples(
        st.just("thought_update"),
        st.sampled_from(THOUGHTS),
        st.sampled_from(("resolved", "active")),
        st.text(max_size=4),
    ),
    st.tuples(st.just("position"), st.sampled_from(THREADS), st.sampled_from(THOUGHTS), st.just("")),
)


def timeline_events(rows: list[tuple[tuple, str, int]]) -> list[Event]:
    seqs: dict[str, int] = {}
    out: list[Event] = []
    for n, ((kind, a, b, text), writer, tick) in enumerate(rows):
        if kind in ("thread", "thought") and any(e.id == a for e in out):
            continue  # an id names one event; a second creation with it would be a different event
        seqs[writer] = seqs.get(writer, 0) + 1
        event_id = f"e{n}"
        if kind == "thread":
            event_id, data = a, {"name": text or "t", "status": "active", **({"parent_thought_id": b} if b else {})}
        elif kind == "thread_update":
            data = {"thread_id": a, "status": b, "name": text or "renamed"}
        elif kind == "thought":
            event_id, data = a, {"thread_id": b, "content": text, "thought_type": "progress"}
        elif kind == "thought_update":
            data = {"thought_id": a, "status": b, "content": text}
        else:
            data = {"thread_id": a, "thought_id": b}
        out.append(Event(event_id, writer, seqs[writer], (1_770_000_000_000 + tick) << 16, f"timeline.{kind}", data))
    return out


def fold_timeline(events: list[Event]) -> object:
    return fold([TimelineView()], events)["timeline"]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(step, st.sampled_from(WRITERS), st.integers(min_value=0, max_value=5)), max_size=30),
    st.randoms(use_true_random=False),
)
def test_the_timeline_view_does_not_depend_on_event_order_across_writers(rows, rng):
    events = timeline_events(rows)
    shuffled = list(events)
    rng.shuffle(shuffled)
    assert fold_timeline(shuffled) == fold_timeline(events)
