"""Marking a handoff as wrong, listing projects, and reading entries page by page."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextflow.adapters import hooks
from contextflow.adapters.cli import main
from contextflow.app import App
from contextflow.core.errors import NotFoundError
from contextflow.core.events import Event
from contextflow.sessions import core as sessions
from contextflow.sessions.marks import mark_handoff_wrong
from tests.conftest import call_with_data, connect, text_of
from tests.folding import all_views, fold

pytestmark = pytest.mark.anyio


def handoff(app: App, summary: str, session: str = "s1", project: str = "web") -> str:
    return sessions.write_handoff(app, agent="claude", summary=summary, session_id=session, project=project).id


def latest(app: App, session: str = "s1", project: str = "web") -> str | None:
    found = sessions.latest_handoff(app, sessions.EntryFilter(project, session_id=session))
    return found.id if found else None


def test_a_handoff_marked_wrong_is_no_longer_the_latest_anywhere(app: App) -> None:
    good, bad = handoff(app, "tests pass"), handoff(app, "all done (it is not)")
    assert latest(app) == bad
    note = mark_handoff_wrong(app, handoff_id=bad, agent="human", reason="the tests fail")
    assert note.kind == "note" and note.data["wrong_handoff"] == bad and note.data["session_id"] == "s1"
    assert note.data["text"] == f"Marked handoff {bad} as wrong: the tests fail"
    assert latest(app) == good
    resume = sessions.resume_session(app, session_id="s1", project="web")
    assert resume.latest_handoff is not None and resume.latest_handoff.id == good
    summary = sessions.list_sessions(app, sessions.SessionQuery("web"))[0]
    assert summary.latest_handoff_summary == "tests pass" and summary.handoff_count == 2
    newer = handoff(app, "fixed for real")
    assert latest(app) == newer


def test_a_new_process_honours_the_mark_from_the_tables_and_the_session_start_hook(app: App) -> None:
    good, bad = handoff(app, "tests pass"), handoff(app, "wrong one")
    mark_handoff_wrong(app, handoff_id=bad, agent="human")
    app.close()
    fresh = App.open()
    try:
        assert latest(fresh) == good
        resume = sessions.resume_session(fresh, session_id="s1", project="web")
        assert resume.latest_handoff is not None and resume.latest_handoff.id == good
    finally:
        fresh.close()
    env = {**os.environ, "MCP_SHARED_CONTEXT_PROJECT": "web", "MCP_SHARED_CONTEXT_ACTIVE_SESSION": "s1"}
    output = hooks.run("session-start", b"{}", env)
    assert good in output and bad not in output


def test_marking_an_unknown_id_says_where_to_find_ids(app: App) -> None:
    note = sessions.append_note(app, agent="claude", text="not a handoff", project="web", session_id="s1")
    for wrong in ("nope", note.id):
        with pytest.raises(NotFoundError, match="get_latest_handoff or read_shared_context show ids"):
            mark_handoff_wrong(app, handoff_id=wrong, agent="human")


def test_the_mark_wrong_and_projects_commands(capsys: pytest.CaptureFixture[str], app: App) -> None:
    bad = handoff(app, "wrong", project="api")
    handoff(app, "other", session="s2", project="web")
    assert main(["mark-wrong", bad, "--reason", "nope"]) == 0
    assert "Marked handoff wrong with note" in capsys.readouterr().out
    assert main(["projects"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in out] == ["api", "web"]  # most recently active first
    assert "sessions=1" in out[0] and "entries=2" in out[0]


async def test_read_shared_context_pages_with_before_on_the_cli_but_not_as_a_tool(app: App) -> None:
    ids = [sessions.append_note(app, agent="a", text=f"n{i}", project="web").id for i in range(7)]
    where = sessions.EntryFilter("web")
    page = sessions.read_entries(app, where, 3)
    assert [e.id for e in page] == ids[4:]
    older = sessions.read_entries(app, sessions.EntryFilter("web", before=page[0].id), 3)
    assert [e.id for e in older] == ids[1:4]
    oldest = sessions.read_entries(app, sessions.EntryFilter("web", before=ids[1]), 3)
    assert [e.id for e in oldest] == ids[:1]
    assert sessions.read_entries(app, sessions.EntryFilter("web", before="unknown"), 3) == []
    async with connect(app) as client:
        result = await call_with_data(client, "read_shared_context", {"project": "web", "before": ids[3]})
        assert result.is_error and "before" in text_of(result)


def test_before_pages_past_the_most_recent_entries(store_dir: Path) -> None:
    app = App.open()
    ids = [sessions.append_note(app, agent="a", text=f"n{i}", project="web").id for i in range(250)]
    app.close()
    fresh = App.open()
    try:
        page = sessions.read_entries(fresh, sessions.EntryFilter("web", before=ids[10]), 5)
        assert [e.id for e in page] == ids[5:10]
    finally:
        fresh.close()


def _events(rows: list[tuple[int, str, int]]) -> list[Event]:
    """Handoffs and marks over two sessions; a mark names one of the handoffs (by position)."""
    events = []
    for n, (kind, session, target) in enumerate(rows):
        data: dict[str, object] = {"project": "web", "agent": "a", "session_id": session}
        if kind == 0:
            data["summary"] = f"h{n}"
            events.append(Event(f"id{n:03d}", "w", n + 1, (1_600_000_000_000 + n) << 16, "handoff", data))
        else:
            data.update(text="wrong", wrong_handoff=f"id{target:03d}")
            events.append(Event(f"id{n:03d}", "w", n + 1, (1_600_000_000_000 + n) << 16, "note", data))
    return events


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 1), st.sampled_from(("s1", "s2")), st.integers(0, 20)), max_size=20),
    st.randoms(use_true_random=False),
)
def test_marks_fold_the_same_in_any_order(rows: list[tuple[int, str, int]], rng: object) -> None:
    events = _events(rows)
    shuffled = list(events)
    rng.shuffle(shuffled)  # type: ignore[attr-defined]
    states = [fold(all_views(), order)["sessions"] for order in (events, shuffled)]
    assert states[0] == states[1]
