"""An item looked up or changed by its id or key while this machine's tables are still being built (a new
machine, only the logs' newest bytes read per call): the answer is the whole tables' answer, never "not
found" or a change made on a guess. Each case is one operation as every adapter runs it (`tests/table.py`),
for items another machine wrote long before the newest bytes a call reads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from contextflow.app import App
from contextflow.core import catchup, projections, rest
from contextflow.core.errors import NotFoundError, StoreError
from contextflow.core.lock import WriterLock
from contextflow.operations.arguments import check_arguments
from contextflow.operations.spec import Reply, operations
from tests.conftest import open_app
from tests.test_own_writes_while_building import building_elsewhere


def run(app: App, operation: str, **arguments: Any) -> Reply:
    op = next(op for op in operations() if op.name == operation)
    return op.run(app, check_arguments(op, arguments, cli=True))


class Early:
    """Ids of what another machine wrote before a backlog of notes."""

    def __init__(self, other: App) -> None:
        run(other, "context_set", key="qa:pinned", value={"v": 1}, label="kept label", pinned=True)
        self.node = run(other, "add", content="the early decision", type="decision").data["id"]
        self.thread = run(other, "timeline_create_thread", name="early thread").data["id"]
        run(other, "conversations save", file=str(_conversation(other.store.folder.parent)))
        early = {"agent": "claude", "project": "early-proj", "session_id": "early-s"}
        run(other, "write_shared_handoff", summary="the early handoff", **early)
        home = {"agent": "claude", "session_id": "early-home"}  # in the default project: a resume_N prompt
        run(other, "write_shared_handoff", summary="the early home handoff", **home)
        for n in range(60):  # the backlog: the early items lie before every log's newest bytes
            run(other, "append_shared_note", text=f"filler {n} " + "x" * 300, project="shared", agent="codex")


def _conversation(folder: Path) -> Path:
    path = folder / "conversation.json"
    record = {"conversation_id": "early-conv", "topic": "the early plan", "summary": "Planned the early work."}
    path.write_text(json.dumps({**record, "source": "claude_code", "conversation_type": "single_topic"}))
    return path


@pytest.fixture
def early(tmp_path: Path) -> Early:
    other = open_app("writer-b", CONTEXTFLOW_STATE=str(tmp_path / "elsewhere"))
    try:
        return Early(other)
    finally:
        other.close()


@pytest.fixture
def reader(early: Early, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> App:
    """This machine, new: nothing built, a background build that never finishes here, and only the logs'
    newest bytes read per call (the early items are not among them)."""
    building_elsewhere(monkeypatch)
    monkeypatch.setattr(rest, "REST_BYTES", 0)
    monkeypatch.setattr(rest, "TAIL_BYTES", 2_000)
    monkeypatch.setattr(rest, "TAIL_BUDGET", 2_000)
    return open_app("writer-a", CONTEXTFLOW_STATE=str(tmp_path / "new-machine"))


def test_the_partial_reading_alone_misses_the_early_items(reader: App) -> None:
    """The premise: read the way a list is read, the early handoff is not among the newest bytes."""
    listed = run(reader, "read_shared_context")
    assert listed.text.startswith("PARTIAL:") and "filler 59" in listed.text
    assert "the early home handoff" not in listed.text


# A list whose filters leave nothing among the newest bytes, and an item only the whole tables hold
EMPTY_SO_FAR = (
    ("list_sessions", {"project": "early-proj"}, "early-s"),
    ("read_shared_context", {"project": "early-proj"}, "the early handoff"),
    ("resume_session", {"project": "early-proj", "session_id": "early-s"}, "the early handoff"),
    ("context_list", {}, "qa:pinned"),
    ("conversations list", {}, "early-conv"),
    ("timeline_list_threads", {}, "early thread"),
    ("timeline_where_am_i", {}, "early thread"),
)


@pytest.mark.parametrize(("operation", "arguments", "early_item"), EMPTY_SO_FAR, ids=[c[0] for c in EMPTY_SO_FAR])
def test_a_list_the_newest_bytes_hold_nothing_of_is_read_whole_never_said_empty(
    reader: App, operation: str, arguments: dict[str, Any], early_item: str
) -> None:
    shown = run(reader, operation, **arguments)
    assert early_item in shown.text and not shown.text.startswith("PARTIAL"), shown.text


@pytest.mark.parametrize(("operation", "arguments", "early_item"), EMPTY_SO_FAR, ids=[c[0] for c in EMPTY_SO_FAR])
def test_a_list_empty_so_far_with_the_build_held_elsewhere_says_so_never_none(
    reader: App, monkeypatch: pytest.MonkeyPatch, operation: str, arguments: dict[str, Any], early_item: str
) -> None:
    monkeypatch.setattr(projections, "UNBUILT_WAIT_S", 0.2)
    held = WriterLock(reader.tables().path.with_name(catchup.BUILD_LOCK), 0)
    held.acquire()
    try:
        with pytest.raises(StoreError, match=r"still building .* \(\d+% of .* indexed\).*Ask again shortly"):
            run(reader, operation, **arguments)
    finally:
        held.release()


def test_items_looked_up_by_id_or_key_are_found(reader: App, early: Early) -> None:
    assert "kept label" in run(reader, "context_get", key="qa:pinned").text
    assert "the early decision" in run(reader, "show", id=early.node[:8]).text
    assert "early thread" in run(reader, "timeline_get_thread", thread_id=early.thread).text
    assert "the early plan" in run(reader, "get_conversation", conversation_id="early-conv").text
    assert reader.tables().current()  # answered from the whole tables, built for it


def test_a_projects_only_handoff_and_its_session_are_shown(reader: App) -> None:
    latest = run(reader, "get_latest_handoff", project="early-proj")
    assert "the early handoff" in latest.text and latest.exit == 0
    assert "the early handoff" in run(reader, "resume_session", project="early-proj", session_id="early-s").text


def test_a_record_set_again_keeps_what_it_leaves_out(reader: App) -> None:
    run(reader, "context_set", key="qa:pinned", value={"v": 2})
    found = run(reader, "context_get", key="qa:pinned").data
    assert (found["value"], found["label"], found["pinned"]) == ({"v": 2}, "kept label", True)


def test_writes_to_early_items_are_made(reader: App, early: Early) -> None:
    run(reader, "tag", id=early.node, tags=["status:kept"])
    run(reader, "timeline_add_thought", thread_id=early.thread, content="a later thought")
    assert "status:kept" in run(reader, "show", id=early.node).text
    assert "a later thought" in run(reader, "timeline_get_thread", thread_id=early.thread).text


def test_an_export_holds_every_node(reader: App, early: Early, tmp_path: Path) -> None:
    out = tmp_path / "graph.json"
    run(reader, "export", output=str(out))
    assert [node["id"] for node in json.loads(out.read_text())["nodes"]] == [early.node]


def test_what_is_missing_from_the_whole_tables_is_not_found(reader: App) -> None:
    with pytest.raises(NotFoundError, match="no context record under 'qa:never'"):
        run(reader, "context_get", key="qa:never")
    assert reader.tables().current()


def test_a_build_held_elsewhere_past_the_wait_is_said_never_not_found(
    reader: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(projections, "UNBUILT_WAIT_S", 0.2)
    held = WriterLock(reader.tables().path.with_name(catchup.BUILD_LOCK), 0)
    held.acquire()
    try:
        with pytest.raises(StoreError, match=r"still building .* \(\d+% of .* indexed\).*Ask again shortly"):
            run(reader, "context_get", key="qa:pinned")
    finally:
        held.release()
    assert "kept label" in run(reader, "context_get", key="qa:pinned").text  # once let go: whole


def test_the_resume_prompts_made_during_a_build_are_told_changed_once_it_is_done(
    reader: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    from contextflow.adapters.server.app import ContextflowServer

    server = ContextflowServer(reader)
    during = [p.description or "" for p in server.prompt_list() if p.name.removeprefix("resume_").isdigit()]
    assert not any("early-home" in shown for shown in during)  # only the newest bytes read: not among them
    assert server.prompts_changed() is False  # the build has not moved
    monkeypatch.undo()  # the build finishes (nothing is written meanwhile: the logs stay as they were)
    assert reader.tables().update(60, foreground=True) >= 0 and reader.tables().current()
    assert server.prompts_changed() is True
    assert any("early-home" in (p.description or "") for p in server.prompt_list())
    assert server.prompts_changed() is False


def test_the_session_start_preview_never_says_no_session_has_a_handoff_while_building(reader: App) -> None:
    shown = run(reader, "start-preview")
    assert "its handoff: none among the newest events read so far (" in shown.text
    assert "no session of this project has one" not in shown.text and shown.data["partial"]["log_bytes"] > 0
