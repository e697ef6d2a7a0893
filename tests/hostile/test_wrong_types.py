"""A synced line whose field has the wrong type (a number where a list of strings belongs, a string
where an object does) never breaks a read: the field is left out as the line is read, counted and
reported, through the CLI, MCP, prompts, resources and the session-start hook alike."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from contextflow.adapters import hooks
from contextflow.adapters.cli import main
from contextflow.adapters.server.app import ContextflowServer
from contextflow.admin.diagnose import problems, store_info
from contextflow.app import App
from contextflow.conversations import core as conversations
from contextflow.core.fields import ANY
from contextflow.core.log import read_whole
from contextflow.features import all_fields
from contextflow.graph import writes
from contextflow.records import core as records
from contextflow.sessions import core as sessions
from contextflow.sessions import marks
from contextflow.timeline import core as timeline
from tests.hostile.helpers import now_stamp, plant

pytestmark = pytest.mark.usefixtures("shared_project")  # stored in `shared`, read from the plain tmp folder


def base_store(app: App) -> dict[str, str]:
    """One event of every kind, every field filled; the ids reads need."""
    sessions.set_active_session(app, "s1")
    sessions.append_note(app, agent="a", text="note word", session_id="s1", task="t", tags=["x"])
    sessions.write_handoff(
        app, agent="a", summary="sum word", session_id="s1", next_steps=["n"], open_questions=["q"], files=["f"]
    )
    wrong = sessions.write_handoff(app, agent="a", summary="a wrong one", session_id="s1")
    marks.mark_handoff_wrong(app, handoff_id=wrong.id, agent="a", reason="it was wrong")
    turn = {
        "request": "fix the parser",
        "final": "fixed word",
        "files": {"created": ["a.py"], "edited": ["b.py"], "read": ["c.py"]},
        "commands": [{"command": "pytest", "exit": 0}],
        "tests": [{"command": "pytest", "exit": 0, "passed": True}],
        "errors": ["`make` exited 2"],
        "todos": [{"text": "more", "status": "pending"}],
        "continued": True,
    }
    capture = {"project": "shared", "session_id": "s1", "agent": "claude", "transcript": "/t.jsonl"}
    app.store.append("capture.turn", {**capture, "turn_id": "turn-1", "turn": turn})
    automatic = {"client": "claude", "transcript": "/t.jsonl", "turns": 1}
    auto = {"project": "shared", "session_id": "s1", "agent": "claude", "auto": True, "provenance": automatic}
    app.store.append("handoff", {**auto, "summary": "[automatic handoff] auto", "files": ["b.py"]})
    sessions.write_handoff(
        app, agent="a", summary="sum word", session_id="s1", next_steps=["n"], open_questions=["q"], files=["f"]
    )
    thread = timeline.create_thread(app, name="thread", description="desc").id
    records.set_record(app, key="fact:x", value={"a": 1}, label="L", pinned=True, expires_at="2h", thread_id=thread)
    records.set_record(app, key="fact:z", value={"a": 1})
    records.delete_record(app, key="fact:z")
    thought = timeline.add_thought(app, thread_id=thread, content="thought word", metadata={"m": 1}).id
    timeline.update_thought(app, thought_id=thought, status="resolved", metadata={"m": 2})
    timeline.update_thread(app, thread_id=thread, description="d2")
    tangent = timeline.go_tangent(app, thread_id=thread, name="tangent", content="went")
    timeline.return_from(app, thread_id=tangent.thread.id, status="completed")
    decision = {"decision": "d", "reasoning": "r", "status": "rejected"}
    single = conversations.save_conversation(
        app,
        {
            "topic": "topic word",
            "summary": "s",
            "decisions": [decision],
            "open_questions": ["q"],
            "related_entities": ["e"],
            "categories": ["c"],
            "full_transcript": "hi",
            "session_id": "s1",
        },
    )
    topic = {"topic": "t", "summary": "s", "decisions": [decision], "categories": ["c"]}
    conversations.save_conversation(
        app, {"topic": "multi", "overall_summary": "o", "topics": [topic], "cross_topic_insights": ["i"]}
    )
    one = writes.add_node(app, type="fact", content="node word", tags=["tier:pinned"], metadata={"rationale": "r"})
    two = writes.add_node(app, type="decision", content="node two", tags=["tier:reference"], summary="sm")
    writes.link(app, two.id, one.id, "DEPENDS_ON", {"why": "w"})
    writes.update_node(app, one.id, content="node word changed", metadata={"k": "v"})
    writes.tag(app, one.id, ["tag:b"])
    writes.untag(app, one.id, ["tag:b"])
    writes.create_view(app, "v1", "type:fact", 1000)
    gone = writes.add_node(app, type="fact", content="gone", links=[writes.Link(one.id, "RELATES_TO")])
    writes.unlink(app, gone.id, one.id)
    writes.delete_node(app, gone.id)
    writes.delete_view(app, "v1")
    writes.create_view(app, "v1", "type:fact", 1000)
    return {"thread": thread, "conversation": single.conversation_id, "node": one.id}


def wrong_values(value: Any) -> list[Any]:
    """Values of another type than `value`, and for a list, items of another type."""
    found: list[Any] = [5] if isinstance(value, str | list | dict | bool) else ["five"]
    if isinstance(value, list):
        found.append([5, {"x": 1}])
        if value and isinstance(value[0], dict):
            found.append([{name: 5 for name in value[0]}])
    if isinstance(value, dict):
        found.append({name: [5] for name in value})
    return found


def own_events(app: App) -> list[dict[str, Any]]:
    path = app.store.log_writer.path
    return [json.loads(raw) for _, raw in read_whole(path)[1]]  # the log reader's lines (no batch markers)


def kinds_written() -> list[str]:
    return sorted(all_fields())


# a record's identity: each hostile copy gets its own, so no copy hides another (last writer wins)
IDENTITY = {"context.set": ("key", "fact:hostile-{n}"), "conversation.save": ("conversation_id", "hostile-{n}")}


def hostile_lines(events: list[dict[str, Any]], kind: str) -> tuple[list[bytes], set[str]]:
    """A line per field per wrong value, for every event of `kind`; the fields they break."""
    lines: list[bytes] = []
    broken: set[str] = set()
    stamp = now_stamp(1000)
    for event in (e for e in events if e["kind"] == kind):
        for name, value in event["data"].items():
            for wrong in wrong_values(value):
                n = len(lines) + 1
                data = {**event["data"], name: wrong}
                if kind in IDENTITY and IDENTITY[kind][0] != name:
                    data[IDENTITY[kind][0]] = IDENTITY[kind][1].format(n=n)
                record = {**event, "id": f"hostile{n}", "w": "evil", "seq": n, "hlc": stamp + n, "data": data}
                lines.append(json.dumps(record).encode() + b"\n")
                if all_fields()[kind].get(name) != ANY:
                    broken.add(f"{kind}.{name}")
    return lines, broken


def test_every_kind_a_feature_writes_has_a_shape_for_every_field(app: App) -> None:
    base_store(app)
    schema = all_fields()
    for event in own_events(app):
        missing = set(event["data"]) - set(schema.get(event["kind"], {}))
        assert not missing, f"{event['kind']} fields without a shape: {missing}"


READS = [
    ("read_shared_context", {}),
    ("read_shared_context", {"session_id": "s1", "format": "json"}),
    ("get_latest_handoff", {}),
    ("list_sessions", {}),
    ("resume_session", {"session_id": "s1"}),
    ("context_get", {"key": "fact:x"}),
    ("context_list", {"format": "json"}),
    ("whereami", {}),
    ("wherewasi", {}),
    ("timeline_list_threads", {}),
    ("timeline_get_thread", {"thread_id": "{thread}"}),
    ("timeline_where_am_i", {"format": "json"}),
    ("get_context", {"query": "word"}),
    ("get_conversation", {"conversation_id": "{conversation}", "include_transcript": True}),
    ("graph_recall", {"ids": ["{node}"], "follow": True}),
    ("graph_recall", {"query": "type:fact OR type:decision", "format": "json"}),
    ("graph_compose", {}),
    ("graph_status", {}),
    ("get_context", {"query": "parser", "format": "json"}),
]
CLI = [
    ["read"],
    ["read", "--format", "json"],
    ["resume", "s1"],
    ["latest"],
    ["sessions"],
    ["context", "get", "fact:x"],
    ["context", "list"],
    ["whereami"],
    ["timeline", "where"],
    ["conversations", "list"],
    ["search", "word"],
    ["compose"],
    ["list"],
    ["tags"],
    ["export"],
    ["doctor"],
]


def fill(arguments: dict[str, Any], ids: dict[str, str]) -> dict[str, Any]:
    def one(value: Any) -> Any:
        if isinstance(value, str) and value.startswith("{"):
            return ids[value[1:-1]]
        return [one(item) for item in value] if isinstance(value, list) else value

    return {name: one(value) for name, value in arguments.items()}


@pytest.mark.parametrize("kind", kinds_written())
def test_wrong_typed_fields_of_every_kind_never_break_a_read(
    kind: str, store_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONTEXTFLOW_TOOLS", "all")
    built = App.open()
    ids = base_store(built)
    lines, broken = hostile_lines(own_events(built), kind)
    built.close()
    assert lines, f"no {kind} event was written, so nothing was checked"
    plant(store_dir, "events.evil.jsonl", *lines)

    app = App.open()
    server = ContextflowServer(app)
    for name, arguments in READS:
        result = server.call(name, fill(arguments, ids))
        text = result.content[0].text
        assert "internal error" not in text, f"{name}: {text}"
    for prompt in server.prompt_list():
        server.get_prompt(prompt.name, {"session_id": "s1", "what": "x"})
    for resource in server.resource_list():
        server.read_resource(str(resource.uri))
    out = hooks.run("session-start", b"{}")
    assert "sum word" in json.loads(out)["hookSpecificOutput"]["additionalContext"], "session-start injected it"
    info = store_info(app)
    assert broken <= set(info["bad_fields"]), broken - set(info["bad_fields"])
    assert any("wrong type" in problem for problem in problems(info))
    app.close()

    for argv in CLI:
        capsys.readouterr()
        code = main(argv)
        _, err = capsys.readouterr()
        allowed = (0, 1) if argv == ["doctor"] else (0, 3)  # doctor exits 1 when it lists problems
        assert code in allowed and "Traceback" not in err, (argv, code, err[-500:])
