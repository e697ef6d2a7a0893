"""Keyed context records and the timeline as MCP tools and prompts.

Two groups: "context" (context_set/get/list/delete plus the whereami, wherewasi and remember
prompts) and "timeline" (the timeline_* tools). Handlers only parse, call the core
(contextflow.records, contextflow.timeline, contextflow.orient) and render.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from contextflow import orient, records, timeline
from contextflow.app import App
from contextflow.errors import InputError
from contextflow.server.tooling import JSON, Feature, PromptArg, PromptSpec, Reply, ToolSpec
from contextflow.text import DATA_NOTICE
from contextflow.views.timeline import THOUGHT_STATUSES, THOUGHT_TYPES, THREAD_STATUSES

_S: JSON = {"type": "string"}
_KEY: JSON = {**_S, "description": "Namespaced key prefix:name, e.g. pr:owner/repo:1777, machine:chisel."}
_AGENT: JSON = {**_S, "description": "Your name, e.g. claude, codex."}
_THREAD: JSON = {**_S, "description": "Thread id or a unique prefix of it."}
_META: JSON = {"type": "object", "description": "Links: files, commits, session ids."}


def _now() -> datetime:
    return datetime.now(UTC)


# -- context -------------------------------------------------------------------------------


def context_set(app: App, args: JSON) -> Reply:
    event = records.set_record(app, **args, now=_now())
    record = records.record_of(app, event)  # as folded, even if expired since
    data = {**records.record_dict(record), "id": event.id}
    return Reply(f"Saved context {record.key} (id {event.id}).\n" + orient.record_header(record, _now()), data)


def context_get(app: App, args: JSON) -> Reply:
    moment = _now()
    record = records.get_record(app, key=args.get("key"), now=moment)
    text = orient.record_text(record, moment, value_limit=None)
    return Reply(DATA_NOTICE + "\n" + text, records.record_dict(record))


def context_list(app: App, args: JSON) -> Reply:
    moment = _now()
    found = records.list_records(app, **args, now=moment)
    title = "Context records, newest first"
    # Values can be 64 KB each: the list carries provenance only; context_get returns a whole value.
    listed = [{k: v for k, v in records.record_dict(r).items() if k != "value"} for r in found]
    payload = {"count": len(found), "records": listed}
    return Reply(orient.records_text(found, title, moment), payload)


def context_delete(app: App, args: JSON) -> Reply:
    event = records.delete_record(app, **args, now=_now())
    key = event.data["key"]
    return Reply(f"Deleted context {key} (tombstone id {event.id}).", {"id": event.id, "key": key, "deleted": True})


CONTEXT_TOOLS = [
    ToolSpec(
        "context_set",
        "Create or update a shared context record (facts, PRs, machines, things waited on). "
        "Omitted optional fields keep their current values.",
        {
            "key": _KEY,
            "value": {"type": "object", "description": "JSON object, at most 64 KB."},
            "category": {**_S, "description": "project, pr, machine, waiting, fact or clipboard. Default: key prefix."},
            "label": {**_S, "description": "Human-readable title."},
            "thread_id": {**_S, "description": "Timeline thread to link (id or prefix); '' unlinks."},
            "pinned": {"type": "boolean", "description": "Always show in /whereami."},
            "expires_at": {**_S, "description": "ISO time or duration (24h, 7d); 'never' clears."},
            "agent": _AGENT,
        },
        context_set,
        required=("key", "value"),
        read_only=False,
        group="context",
    ),
    ToolSpec(
        "context_get", "Get one context record by exact key.", {"key": _KEY}, context_get, ("key",), group="context"
    ),
    ToolSpec(
        "context_list",
        "List context records, newest first.",
        {
            "category": _S,
            "thread_id": _THREAD,
            "pinned_only": {"type": "boolean"},
            "since_days": {
                "type": "integer",
                "minimum": 0,
                "maximum": 36500,
                "description": "Updated within N days; default 7, 0 = any time.",
            },
            "limit": {"type": "integer", "minimum": 1, "maximum": 500, "description": "Default 50."},
            "prefix": {**_S, "description": "Key prefix, e.g. pr: or pr:owner/repo."},
        },
        context_list,
        group="context",
    ),
    ToolSpec(
        "context_delete",
        "Delete a context record by exact key.",
        {"key": _KEY, "agent": _AGENT},
        context_delete,
        required=("key",),
        read_only=False,
        destructive=True,
        group="context",
    ),
]


def whereami_prompt(app: App, args: dict[str, str]) -> str:
    return orient.whereami(app).text + (
        "\n\nTell the user briefly where they are: active work and its current position, pinned facts, "
        "what they are waiting on, and the latest handoff. Suggest the next step."
    )


def wherewasi_prompt(app: App, args: dict[str, str]) -> str:
    return orient.wherewasi(app).text + (
        "\n\nSummarize the paused work for the user, most recent first, and ask which thread to resume "
        "(resuming: timeline_update_thread with status active)."
    )


def remember_prompt(app: App, args: dict[str, str]) -> str:
    what = args.get("what", "").strip()
    if not what:
        raise InputError("remember needs the `what` argument: the thing to remember, in plain words")
    return orient.remember_prompt(what)


CONTEXT_PROMPTS = [
    PromptSpec(
        "whereami", "Where am I: active threads, pinned context, waiting items, latest handoff", whereami_prompt
    ),
    PromptSpec(
        "wherewasi", "Where was I: paused threads, how long ago, their last thought and context", wherewasi_prompt
    ),
    PromptSpec(
        "remember",
        "Remember something in shared context (stores it with context_set)",
        remember_prompt,
        (PromptArg("what", "What to remember, in plain words", True),),
    ),
]


# -- timeline ------------------------------------------------------------------------------


def _created(kind: str, event_id: str, text: str, extra: JSON) -> Reply:
    return Reply(f"{text} (id {event_id}).", {"id": event_id, "kind": kind, **extra})


def create_thread(app: App, args: JSON) -> Reply:
    event = timeline.create_thread(app, **args)
    return _created("thread", event.id, f"Created thread {event.data['name']!r}", {"name": event.data["name"]})


def list_threads(app: App, args: JSON) -> Reply:
    moment = _now()
    state = timeline.timeline_state(app)
    found = timeline.list_threads(app, **args)
    blocks = [orient.whereabouts_text(timeline.whereabouts(state, thread), moment) for thread in found]
    text = f"Threads, most recently active first: {len(found)}. {DATA_NOTICE}\n\n" + "\n\n".join(blocks)
    payload = {"count": len(found), "threads": [orient.whereabouts_dict(timeline.whereabouts(state, t)) for t in found]}
    return Reply(text if found else "No threads yet. Start one with timeline_create_thread.", payload)


def get_thread(app: App, args: JSON) -> Reply:
    detail = timeline.get_thread(app, **args)
    payload = {
        **orient.thread_dict(detail.thread),
        "thought_count": detail.total_thoughts,
        "position_thought_id": detail.position.id if detail.position else None,
        "thoughts": [orient.thought_dict(t) for t in detail.thoughts],
        "tangents": [orient.thread_dict(child) for child in detail.children],
    }
    return Reply(orient.thread_detail_text(detail, _now()), payload)


def add_thought(app: App, args: JSON) -> Reply:
    event = timeline.add_thought(app, **args)
    extra = {"thread_id": event.data["thread_id"], "previous_thought_id": event.data.get("previous_thought_id")}
    return _created("thought", event.id, f"Added {event.data['thought_type']} thought; you are here", extra)


def update_thought(app: App, args: JSON) -> Reply:
    event = timeline.update_thought(app, **args)
    changed = sorted(k for k in event.data if k not in ("thought_id", "agent"))
    return Reply(
        f"Updated thought {event.data['thought_id']}: {', '.join(changed)}.",
        {"id": event.id, "thought_id": event.data["thought_id"], "changed": changed},
    )


def update_thread(app: App, args: JSON) -> Reply:
    event = timeline.update_thread(app, **args)
    changed = sorted(k for k in event.data if k not in ("thread_id", "agent"))
    return Reply(
        f"Updated thread {event.data['thread_id']}: {', '.join(changed)}.",
        {"id": event.id, "thread_id": event.data["thread_id"], "changed": changed},
    )


def where_am_i(app: App, args: JSON) -> Reply:
    moment = _now()
    found = timeline.where_am_i(app, limit=args.get("limit"))
    total = timeline.thread_count(app, "active")
    if not found:
        text = "No active threads. Start one with timeline_create_thread."
    else:
        blocks = [orient.whereabouts_text(where, moment) for where in found]
        text = f"You are here, on {total} active thread(s). {DATA_NOTICE}\n\n" + "\n\n".join(blocks)
        if total > len(found):
            text += f"\n\n({total - len(found)} older active threads not shown; pass a larger limit.)"
    payload = {"count": len(found), "total": total, "threads": [orient.whereabouts_dict(w) for w in found]}
    return Reply(text, payload)


def go_tangent(app: App, args: JSON) -> Reply:
    tangent = timeline.go_tangent(app, **args)
    extra = {
        "thread_id": tangent.thread.id,
        "tangent_start_thought_id": tangent.thought.id,
        "parent_thread_id": tangent.thought.data["thread_id"],
    }
    text = f"Went on a tangent: new thread {tangent.thread.id}, marked by thought {tangent.thought.id}"
    return _created("thread", tangent.thread.id, text, extra)


def return_from(app: App, args: JSON) -> Reply:
    done = timeline.return_from(app, **args)
    text = f"Tangent {done.tangent.id} is {done.status}; back on thread {done.parent.id} at thought {done.position.id}."
    return Reply(
        text,
        {
            "thread_id": done.tangent.id,
            "status": done.status,
            "parent_thread_id": done.parent.id,
            "position_thought_id": done.position.id,
        },
    )


def _tool(
    name: str,
    description: str,
    properties: JSON,
    handler: Callable[[App, JSON], Reply],
    required: tuple[str, ...] = (),
    read_only: bool = False,
) -> ToolSpec:
    return ToolSpec(name, description, properties, handler, required, read_only, group="timeline")


_TYPE: JSON = {"type": "string", "enum": list(THOUGHT_TYPES), "description": "Default progress."}
TIMELINE_TOOLS = [
    _tool(
        "timeline_create_thread",
        "Start a named thread of work (a journey from A to B).",
        {
            "name": _S,
            "description": _S,
            "parent_thought_id": {**_S, "description": "Makes it a tangent."},
            "agent": _AGENT,
        },
        create_thread,
        ("name",),
    ),
    _tool(
        "timeline_list_threads",
        "List threads with status and current position, most recent first.",
        {
            "status": {"type": "string", "enum": list(THREAD_STATUSES)},
            "limit": {"type": "integer", "minimum": 1, "maximum": 500},
        },
        list_threads,
        read_only=True,
    ),
    _tool(
        "timeline_get_thread",
        "A thread's ordered thoughts, position and tangent threads.",
        {
            "thread_id": _THREAD,
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": 1000,
                "description": "Latest N thoughts; default 100.",
            },
        },
        get_thread,
        ("thread_id",),
        read_only=True,
    ),
    _tool(
        "timeline_add_thought",
        "Add a thought after the thread's current position and move there.",
        {"thread_id": _THREAD, "content": _S, "thought_type": _TYPE, "metadata": _META, "agent": _AGENT},
        add_thought,
        ("thread_id", "content"),
    ),
    _tool(
        "timeline_update_thought",
        "Change a thought's status, content, type or metadata.",
        {
            "thought_id": {**_S, "description": "Thought id or unique prefix."},
            "status": {"type": "string", "enum": list(THOUGHT_STATUSES)},
            "content": _S,
            "thought_type": {"type": "string", "enum": list(THOUGHT_TYPES)},
            "metadata": _META,
            "agent": _AGENT,
        },
        update_thought,
        ("thought_id",),
    ),
    _tool(
        "timeline_update_thread",
        "Rename a thread or set its status (pause, resume, complete, abandon).",
        {
            "thread_id": _THREAD,
            "name": _S,
            "description": _S,
            "status": {"type": "string", "enum": list(THREAD_STATUSES)},
            "agent": _AGENT,
        },
        update_thread,
        ("thread_id",),
    ),
    _tool(
        "timeline_where_am_i",
        "Current position, last thought and trail of every active thread.",
        {"limit": {"type": "integer", "minimum": 1, "maximum": 500, "description": "Most recent N; default 20."}},
        where_am_i,
        read_only=True,
    ),
    _tool(
        "timeline_go_tangent",
        "Mark a tangent_start on a thread and start a child thread for the tangent.",
        {
            "thread_id": _THREAD,
            "name": {**_S, "description": "Tangent thread name."},
            "description": _S,
            "content": {**_S, "description": "Why; default 'Tangent: <name>'."},
            "metadata": _META,
            "agent": _AGENT,
        },
        go_tangent,
        ("thread_id", "name"),
    ),
    _tool(
        "timeline_return",
        "Close or pause a tangent thread and restore the parent thread's position.",
        {
            "thread_id": {**_S, "description": "The tangent thread id or prefix."},
            "status": {
                "type": "string",
                "enum": ["completed", "paused", "abandoned"],
                "description": "Default completed.",
            },
            "agent": _AGENT,
        },
        return_from,
        ("thread_id",),
    ),
]

CONTEXT_FEATURE = Feature(tools=CONTEXT_TOOLS, prompts=CONTEXT_PROMPTS)
TIMELINE_FEATURE = Feature(tools=TIMELINE_TOOLS)
