"""A fresh process answers the common first reads from the sidecar, exactly as the full view would."""

import random

import pytest

from contextflow.core.errors import NotFoundError
from contextflow.sessions import core as sessions
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
    return found


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("count", [5, 60, 450])
def test_sidecar_answers_equal_full_view_answers(app, seed, count):
    fill(app, random.Random(seed), count)
    sessions.list_sessions(app, SessionQuery("shared"))  # writes the sidecar
    fast = open_app("writer-a")
    fast_answers = answers(fast)
    assert not fast.store.loaded or count > 200  # small stores never need the full view
    (app.store.state_dir / "sessions-index.json").unlink()
    slow = open_app("writer-a")
    assert answers(slow) == fast_answers
    assert slow.store.loaded


def test_a_fresh_process_reads_recent_entries_without_loading_the_store(app):
    for n in range(30):
        sessions.append_note(app, agent="claude", text=f"n{n}", session_id="s")
    sessions.write_handoff(app, agent="claude", summary="stop", session_id="s")
    sessions.list_sessions(app, SessionQuery("shared"))
    fresh = open_app("writer-a")
    assert [e.data.get("text") for e in sessions.read_entries(fresh, EntryFilter("shared"), 3)] == ["n28", "n29", None]
    assert sessions.resume_session(fresh, session_id="s").latest_handoff.data["summary"] == "stop"
    assert not fresh.store.loaded


def test_a_stale_sidecar_is_not_used(app):
    sessions.append_note(app, agent="claude", text="old", session_id="s")
    sessions.list_sessions(app, SessionQuery("shared"))
    sessions.append_note(open_app("writer-b"), agent="codex", text="new", session_id="s")
    fresh = open_app("writer-a")
    assert [e.data["text"] for e in sessions.read_entries(fresh, EntryFilter("shared"), 5)] == ["old", "new"]
    assert fresh.store.loaded


def test_a_fresh_process_reports_bad_lines_from_the_sidecar_without_loading_the_store(app, store_dir):
    sessions.append_note(app, agent="claude", text="good", session_id="s")
    with open(store_dir / "events.writer-a.jsonl", "ab") as handle:
        handle.write(b"{not json\n")
    sessions.list_sessions(app, SessionQuery("shared"))  # folds the bad line, writes the sidecar
    fresh = open_app("writer-a")
    assert sessions.bad_line_count(fresh) == 1
    assert not fresh.store.loaded


def test_a_store_with_filtered_views_never_reads_or_writes_the_sidecar(app):
    from contextflow.core.store import Store
    from contextflow.sessions import index as sessions_index

    sessions.append_note(app, agent="claude", text="secret of project b", project="b", session_id="s")
    sessions.list_sessions(app, SessionQuery("b"))  # the shared sidecar now knows project b
    assert sessions_index.load(app.store) is not None
    filtered = Store(app.store.location, app.store.writer, app.store.state_dir, views=[], use_snapshot=False)
    assert not filtered.shares_state
    assert sessions_index.load(filtered) is None
