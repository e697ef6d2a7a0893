"""Every read of the store on a new machine whose tables are still being built answers as a machine that
has built them does, or says plainly that it is partial and how far the build is: never "not found", "no
session", an empty or shorter list, or an older handoff shown as the latest, without saying so.

The class of behaviour, not examples: each read-only operation of the table that needs the store
(`operations.spec.operations()`), the MCP prompts and the resources, with arguments that read real data, on
one store another machine wrote (records, handoffs of several sessions early in its log, timeline threads and
thoughts, graph nodes and links, a saved conversation, captured turns, then many notes so the logs' newest
bytes reach none of them). Each reply of the building machine (nothing built, a build elsewhere that never
finishes here, only the logs' newest bytes read per call: `tests/test_lookups_while_building.py`) is compared
with the reply of a state folder that holds every log."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from contextflow.adapters.server.app import ContextflowServer
from contextflow.app import App
from contextflow.core import rest
from contextflow.operations.spec import operations
from tests.conftest import ENV_KEYS
from tests.test_incremental_equals_fresh import normal
from tests.test_incremental_equals_fresh import run as run_operation
from tests.test_own_writes_while_building import building_elsewhere

OPERATIONS = {op.name: op for op in operations()}
# Read-only operations that need the store but are not compared: `serve` starts a server (it answers nothing
# itself: the prompts and resources it serves are compared below, its tools are the operations here);
# `pick-session` runs a terminal picker (it reads the sessions `list_sessions` reads); `doctor` reports this
# machine's own derived state (how far its build is, its tables' size), which differs from a built one's by
# design, and checks every log against a fresh build.
NOT_COMPARED = {"serve", "pick-session", "doctor"}
PROJECT = "proj"
SUGGESTED = re.compile(r"^New session \([^)]*\)")  # the id new_session suggests: a time and a random part
BUILDING = re.compile(r"\(\d+% of [\d.]+ MB indexed\)")  # how far the build is, as every partial answer says it


@dataclass
class Store:
    """A store folder another machine wrote, the ids of what it holds, and what a built machine answers."""

    root: Path
    ids: dict[str, str] = field(default_factory=dict)
    built: dict[str, Any] = field(default_factory=dict)  # case id -> the built machine's normalised answer

    def env(self, state: str, writer: str = "reader") -> dict[str, str]:
        home = self.root / "home"
        clean = {key: value for key, value in os.environ.items() if key not in ENV_KEYS}
        return {
            **clean,
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_STATE_HOME": str(home / ".local" / "state"),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "CONTEXTFLOW_STORE": str(self.root / "store"),
            "CONTEXTFLOW_STATE": str(self.root / state),
            "CONTEXTFLOW_WRITER": writer,
        }

    def open(self, state: str, writer: str = "reader") -> App:
        return App.open(self.env(state, writer), cwd=self.root / "work")


def run(app: App, name: str, arguments: dict[str, Any]) -> Any:
    """Operation `name` as every adapter runs it: ("reply", data, text) or ("error", kind, message)."""
    return run_operation(app, name, **arguments)


def write(app: App, name: str, /, **arguments: Any) -> Any:
    found = run(app, name, arguments)
    assert found[0] == "reply", found
    return found[1]


def written_elsewhere(store: Store) -> None:
    """Another machine's log: every kind of item early, then a backlog of notes the newest bytes hold."""
    third = store.open("third", writer="writer-c")  # a small log: its older handoff is among the newest bytes
    try:
        old = {"agent": "gemini", "session_id": "s-old"}
        write(third, "write_shared_handoff", summary="an older handoff", task="the old task", **old)
        write(third, "write_shared_handoff", summary="an older handoff of proj", project=PROJECT, **old)
    finally:
        third.close()
    other = store.open("elsewhere", writer="writer-b")
    try:
        ids = store.ids
        ids["thread"] = write(other, "timeline_create_thread", name="early thread", description="the plan")["id"]
        write(other, "timeline_add_thought", thread_id=ids["thread"], content="the early thought")
        write(other, "context_set", key="fact:early", value={"v": 1}, label="kept label", pinned=True)
        waiting = {"key": "waiting:early", "value": {"description": "a PR"}, "category": "waiting"}
        write(other, "context_set", **waiting, thread_id=ids["thread"])
        decision = write(other, "add", content="the early decision about caching", type="decision", tags=["area:db"])
        ids["node"] = decision["id"]
        ids["other_node"] = write(other, "add", content="the early fact it rests on", type="fact")["id"]
        write(other, "link", source=ids["node"], target=ids["other_node"], type="depends_on")
        write(other, "view create", name="decisions", query="type:decision")
        conversation = store.root / "conversation.json"
        record = {"conversation_id": "early-conv", "topic": "the early plan", "summary": "Planned the caching."}
        conversation.write_text(json.dumps({**record, "source": "claude_code", "conversation_type": "single_topic"}))
        write(other, "conversations save", file=str(conversation))
        for n, session in enumerate(("s1", "s2")):
            where = {"agent": "claude", "project": PROJECT, "session_id": session}
            write(other, "append_shared_note", text=f"early note of {session}", **where)
            write(other, "write_shared_handoff", summary=f"the handoff of {session}", task=f"task {n}", **where)
            turn = {"request": f"fix {session}", "final": "fixed", "files": {"edited": ["a.py"]}}
            other.store.append("capture.turn", {**where, "turn_id": f"turn-{session}", "turn": turn})
        home = {"agent": "claude", "session_id": "s-home"}  # the default project: the resume_N prompts, resources
        write(other, "append_shared_note", text="the home session's early note", **home)
        write(other, "write_shared_handoff", summary="the home handoff", task="the home task", **home)
        late = {"agent": "codex", "session_id": "s-late"}  # the backlog: in the default project, no handoff
        for n in range(40):
            write(other, "append_shared_note", text=f"filler {n} caching " + "x" * 300, **late)
    finally:
        other.close()


CASES: list[tuple[str, dict[str, Any]]] = [
    ("read_shared_context", {}),
    ("read_shared_context", {"project": PROJECT}),
    ("read_shared_context", {"project": PROJECT, "session_id": "s1"}),
    ("get_latest_handoff", {}),
    ("get_latest_handoff", {"project": PROJECT}),
    ("get_latest_handoff", {"project": PROJECT, "session_id": "s1"}),
    ("get_latest_handoff", {"session_id": "s-late"}),
    ("get_latest_handoff", {"session_id": "s-old"}),
    ("list_sessions", {}),
    ("list_sessions", {"include_unsessioned": True, "agent": "claude"}),
    ("list_sessions", {"project": PROJECT}),
    ("resume_session", {"project": PROJECT, "session_id": "s1"}),
    ("resume_session", {"session_id": "s-home"}),
    ("resume_session", {"session_id": "s-late"}),
    ("resume_session", {"session_id": "s-old", "project": PROJECT}),
    ("read_shared_context", {"session_id": "s-home"}),
    ("read_shared_context", {"kind": "handoff"}),
    ("list_projects", {}),
    ("session_activity", {"project": PROJECT, "session_id": "s1"}),
    ("session_activity", {"project": PROJECT, "session_id": "s2", "limit": 1}),
    ("context_get", {"key": "fact:early"}),
    ("context_get", {"key": "waiting:early"}),
    ("context_list", {}),
    ("context_list", {"category": "waiting"}),
    ("whereami", {}),
    ("wherewasi", {}),
    ("timeline_list_threads", {}),
    ("timeline_get_thread", {"thread_id": "{thread}"}),
    ("timeline_where_am_i", {}),
    ("get_context", {"query": "early", "limit": 50}),
    ("get_conversation", {"conversation_id": "early-conv"}),
    ("conversations list", {}),
    ("conversations list", {"project": PROJECT}),
    ("graph_recall", {"query": "caching"}),
    ("graph_recall", {"ids": ["{node}"]}),
    ("graph_recall", {"around": "{other_node}", "follow": "dependents"}),
    ("graph_compose", {}),
    ("graph_status", {}),
    ("show", {"id": "{node}", "with_edges": True}),
    ("list", {}),
    ("edges", {"id": "{node}"}),
    ("tags", {}),
    ("query", {"query": "type:decision"}),
    ("trace", {"id": "{node}"}),
    ("related", {"id": "{other_node}"}),
    ("view list", {}),
    ("view render", {"view": "decisions"}),
    ("graph", {}),
    ("export", {"output": "{out}"}),
    ("start-preview", {}),
    ("start-preview", {"project": PROJECT}),
    ("recent_activity", {}),
    ("recent_activity", {"project": PROJECT}),
    ("recent_activity", {"session_id": "s-home", "kind": "handoff"}),
]
MCP_CASES = ["prompts", "resume_1", "resume_2", "resume_by_id", "shared-context://latest", "shared-context://raw"]


def test_every_read_of_the_store_is_compared() -> None:
    """A new read-only operation is either compared here or named, with why, in NOT_COMPARED."""
    reads = {name for name, op in OPERATIONS.items() if op.read_only and op.needs_store}
    assert reads - NOT_COMPARED == {name for name, _ in CASES}


def case_id(case: tuple[str, dict[str, Any]]) -> str:
    name, arguments = case
    return f"{name}({','.join(f'{k}={v}' for k, v in arguments.items())})"


def arguments_of(store: Store, arguments: dict[str, Any], out: Path) -> dict[str, Any]:
    """The case's arguments with the ids it names filled in."""
    names = {**store.ids, "out": str(out)}

    def filled(value: Any) -> Any:
        if isinstance(value, str):
            return value.format(**names)
        return [filled(v) for v in value] if isinstance(value, list) else value

    return {key: filled(value) for key, value in arguments.items()}


def answer(app: App, store: Store, case: tuple[str, dict[str, Any]], out: Path) -> Any:
    """The normalised answer to a case; an export's answer is the file it wrote."""
    name, arguments = case
    found = run(app, name, arguments_of(store, arguments, out))
    if name == "export" and found[0] == "reply":
        exported = json.loads(out.read_text())
        exported.pop("exported_at", None)
        found = ("reply", exported, "")
    return normal(name, found, (app.store.state_dir, out))


def mcp_answer(app: App, case: str) -> Any:
    """What the MCP server shows of a prompt list, a prompt or a resource (its errors' text, as a client sees)."""
    server = ContextflowServer(app)
    try:
        if case == "prompts":
            listed = [(p.name, p.description or "") for p in server.prompt_list()]
            return [(name, SUGGESTED.sub("New session (<suggested>)", text)) for name, text in listed]
        if case.startswith("resume_"):
            arguments = {"session_id": "s-home"} if case == "resume_by_id" else None
            prompt, _ = server.get_prompt(case, arguments)
            return [str(m.content.text) for m in prompt.messages if hasattr(m.content, "text")]
        return [str(getattr(c, "text", "")) for c in server.read_resource(case).contents]
    except Exception as exc:  # an MCP error is the answer a client sees
        return ("error", type(exc).__name__, str(exc))


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    made = Store(tmp_path_factory.mktemp("written-elsewhere"))
    (made.root / "work").mkdir()
    written_elsewhere(made)
    return made


@pytest.fixture
def built(store: Store) -> Store:
    """The store with what a machine that built every log answers (read once, before anything is patched)."""
    if not store.built:
        app = store.open("built")
        try:
            assert app.tables().update(60, foreground=True) >= 0 and app.tables().current()
            for case in CASES:
                store.built[case_id(case)] = answer(app, store, case, store.root / "built-export.json")
                assert store.built[case_id(case)][0] == "reply", (case, store.built[case_id(case)])  # real data
            for case in MCP_CASES:
                store.built[case] = mcp_answer(app, case)
        finally:
            app.close()
    return store


@pytest.fixture
def building(built: Store, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[App]:
    """A new machine on the same store: nothing built, a build elsewhere that never finishes here, and only
    the logs' newest bytes read per call (none of the early items are among them)."""
    building_elsewhere(monkeypatch)
    monkeypatch.setattr(rest, "REST_BYTES", 0)
    monkeypatch.setattr(rest, "TAIL_BYTES", 2_000)
    monkeypatch.setattr(rest, "TAIL_BUDGET", 2_000)
    app = built.open(f"building-{tmp_path.name}")
    yield app
    app.close()


def differs(shown: Any, expected: Any) -> str:
    """The two answers, shortened, for a failure's message."""
    return f"while building:\n{str(shown)[:1500]}\n\nbuilt:\n{str(expected)[:1500]}"


def plainly_partial(shown: Any) -> bool:
    """Whether an answer says it is partial and how far the build is."""
    return bool(BUILDING.search(json.dumps(shown) if not isinstance(shown, str) else shown))


def test_the_backlog_hides_the_early_items_from_a_partial_reading(building: App) -> None:
    """The premise: the list of sessions read the way a list is read does not reach the early ones."""
    listed = run(building, "list_sessions", {})
    assert listed[0] == "reply" and listed[2].startswith("PARTIAL:") and "s-late" in listed[2]
    assert "s-home" not in listed[2]


@pytest.mark.parametrize("case", CASES, ids=[case_id(case) for case in CASES])
def test_a_read_while_building_answers_as_the_built_machine_or_says_it_is_partial(
    building: App, built: Store, case: tuple[str, dict[str, Any]], tmp_path: Path
) -> None:
    shown = answer(building, built, case, tmp_path / "export.json")
    expected = built.built[case_id(case)]
    assert shown == expected or plainly_partial(shown), differs(shown, expected)


@pytest.mark.parametrize("case", MCP_CASES)
def test_an_mcp_prompt_or_resource_while_building_answers_as_the_built_machine_or_says_it_is_partial(
    building: App, built: Store, case: str
) -> None:
    shown = mcp_answer(building, case)
    expected = built.built[case]
    assert shown == expected or plainly_partial(shown), differs(shown, expected)
