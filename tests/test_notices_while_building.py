"""Every reply read while this machine's build has not reached most of the logs says so: a new machine (or a
format rebuilt, or a large sync) reads the tables as built plus the logs' newest bytes only, and an answer
that may miss what the build has not reached begins with the PARTIAL notice (`operations.spec.partial`),
its JSON data carrying `partial` (the build's progress). Here the early items (a pinned and a waiting record,
a paused thread, an active one, a handoff) are older than the newest bytes read, so they are missing."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from contextflow.app import App
from contextflow.core import rest
from contextflow.records import core as records
from contextflow.records import present as records_present
from contextflow.sessions import present as sessions_present
from contextflow.timeline import core as timeline
from tests.conftest import open_app
from tests.test_own_writes_while_building import building_elsewhere

NOTICE = "PARTIAL: this machine is still reading the store's logs into its local tables ("


def early_items_then_filler(app: App) -> None:
    """A store whose early items are followed by many newer notes (what the newest bytes hold)."""
    records.set_record(app, key="fact:pinned", value={"v": 1}, pinned=True)
    records.set_record(app, key="waiting:pr-1", value={"description": "a PR"}, category="waiting", pinned=True)
    paused = timeline.create_thread(app, name="paused work")
    timeline.update_thread(app, thread_id=paused.id, status="pause")
    timeline.create_thread(app, name="active work")
    for agent in ("claude", "codex", "gemini"):
        sessions_present.write_shared_handoff(
            app,
            {
                "agent": agent,
                "project": app.settings.default_project,
                "session_id": "s-1",
                "task": "the task",
                "summary": "done",
            },
        )
    base = {"agent": "claude", "project": "filler", "session_id": "s-filler"}
    for n in range(40):
        sessions_present.append_shared_note(app, {**base, "text": f"filler note {n} " + "x" * 200})


@pytest.fixture
def reader(app: App, monkeypatch: pytest.MonkeyPatch) -> Iterator[App]:
    """Another process of this machine, with a new state folder: the tables are built elsewhere and have not
    begun; more remains than a call reads, so only the logs' newest bytes are read."""
    early_items_then_filler(app)
    app.tables().close()
    app.tables().path.unlink(missing_ok=True)
    building_elsewhere(monkeypatch)
    monkeypatch.setattr(rest, "REST_BYTES", 10)
    monkeypatch.setattr(rest, "TAIL_BYTES", 1_000)
    monkeypatch.setattr(rest, "TAIL_BUDGET", 1_000)
    opened = open_app("writer-a")
    yield opened
    opened.close()


def test_whereami_and_wherewasi_say_they_are_partial_while_the_build_has_not_reached_the_logs(reader: App) -> None:
    for shown in (records_present.whereami(reader, {}), records_present.wherewasi(reader, {})):
        assert shown.text.startswith(NOTICE) and shown.text.count("PARTIAL:") == 1
        assert shown.data["partial"]["log_bytes"] > 0
    assert records_present.whereami_prompt(reader, {}).startswith(NOTICE)


def test_whereami_says_nothing_of_a_build_once_the_tables_hold_every_log(app: App) -> None:
    early_items_then_filler(app)
    for shown in (records_present.whereami(app, {}), records_present.wherewasi(app, {})):
        assert "PARTIAL" not in shown.text and "partial" not in shown.data
    assert "paused work" in records_present.wherewasi(app, {}).text


def test_the_latest_resource_says_it_is_partial_as_the_latest_handoff_tool_does(reader: App) -> None:
    assert sessions_present.get_latest_handoff(reader, {}).text.startswith(NOTICE)
    assert sessions_present.read_latest(reader).startswith(NOTICE)


def test_the_latest_resource_says_nothing_of_a_build_once_the_tables_hold_every_log(app: App) -> None:
    early_items_then_filler(app)
    assert "PARTIAL" not in sessions_present.read_latest(app)


STILL_READING = "still reading the store's logs into its local views"


def test_the_session_start_preview_says_what_the_hook_says_while_the_build_is_unfinished(reader: App) -> None:
    from contextflow.admin.clients import start_preview

    shown = start_preview(reader, {})
    assert STILL_READING in shown.data["context"] and STILL_READING in shown.text
    assert shown.data["partial"]["log_bytes"] > 0


def test_the_session_start_says_it_is_partial_when_a_sync_arrives_while_it_reads(
    app: App, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The tables held every log when the session start began; a large sync arrived before it read the
    sessions: its readings were partial (the newest bytes only), and its notice comes from them."""
    import json

    from contextflow.adapters import hooks
    from contextflow.adapters.session_start import PARTIAL_NOTE

    early_items_then_filler(app)
    app.tables().update()
    building_elsewhere(monkeypatch)
    monkeypatch.setattr(rest, "REST_BYTES", 10)
    monkeypatch.setattr(rest, "TAIL_BYTES", 1_000)
    monkeypatch.setattr(rest, "TAIL_BUDGET", 1_000)
    checked = hooks._answer_while_building

    def then_a_sync(opened: App) -> bool:
        found = checked(opened)
        other = open_app("writer-b", CONTEXTFLOW_STATE=str(tmp_path / "elsewhere"))
        try:
            base = {"agent": "codex", "project": app.settings.default_project, "session_id": "s-1"}
            for n in range(40):
                sessions_present.append_shared_note(other, {**base, "text": f"synced {n} " + "y" * 200})
        finally:
            other.close()
        return found

    monkeypatch.setattr(hooks, "_answer_while_building", then_a_sync)
    output = hooks.run("session-start", b"{}", dict(os.environ))
    context = json.loads(output)["hookSpecificOutput"]["additionalContext"]
    assert PARTIAL_NOTE in context


def test_the_pages_conversations_say_what_the_cli_says_while_building(reader: App) -> None:
    """None among the newest bytes: both read the whole tables (never "no saved conversations" from a build)."""
    from starlette.testclient import TestClient

    from contextflow.adapters.ui.api import Api
    from contextflow.adapters.ui.server import build_app
    from contextflow.conversations import present as conversations_present
    from contextflow.core.errors import NotFoundError
    from tests.table import run
    from tests.ui.test_server import BASE, COOKIE, PORT, TOKEN

    with pytest.raises(NotFoundError, match=r"none among what this machine has read .*\(\d+% of .* indexed\)"):
        conversations_present.list_conversations(reader, {})  # (the presenter alone: its operation reads again)
    shown = run(reader, "conversations list")
    pages = Api(reader)
    try:
        with TestClient(build_app(reader, TOKEN, PORT, pages), base_url=BASE) as client:
            found = client.get("/api/conversations", headers=COOKIE).json()
    finally:
        pages.close()
    assert found["conversations"] == shown.data == [] and "partial" not in found
    assert shown.text == "No saved conversations." and reader.tables().current()  # (the whole tables: none)


def test_a_search_index_build_not_reported_yet_says_how_many_bytes_it_has_to_read(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    from contextflow.adapters.ui import indexing

    early_items_then_filler(app)
    monkeypatch.setattr(indexing, "BACKGROUND_BYTES", 0)  # this small store counts as far behind
    monkeypatch.setattr(indexing.Indexer, "start", lambda self: None)  # a build begun that has not reported yet
    state = indexing.Indexer(app.store).building()
    assert state is not None and state["done_bytes"] == 0 and state["total_bytes"] > 0
