"""Timeline threads and thoughts as text and JSON, and the timeline_* replies, for every adapter.
Stored text is untrusted: every rendering cleans it and quotes it under a provenance header."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from contextflow.app import App
from contextflow.core.clock import stamp_iso
from contextflow.core.events import Event
from contextflow.core.text import DATA_NOTICE, clip, quote
from contextflow.core.timeutil import now
from contextflow.operations.provenance import age_of, header, value_text
from contextflow.operations.spec import JSON, Reply, given, partial
from contextflow.timeline import core as timeline
from contextflow.timeline import stored
from contextflow.timeline.view import Thought, Thread

# -- renderings ----------------------------------------------------------------------------


def thread_header(thread: Thread, now: datetime, thoughts: int | None = None) -> str:
    return header(
        f"thread {thread.id}: {clip(thread.name, 100)}",
        ("status", thread.status),
        ("thoughts", thoughts),
        ("writer", thread.writer),
        ("agent", thread.agent),
        f"updated={age_of(thread.updated, now)}",
        f"tangent of thought {thread.parent_thought_id}" if thread.parent_thought_id else None,
    )


def thought_text(thought: Thought, now: datetime, limit: int | None = None, label: str = "") -> str:
    assert thought.created is not None
    title = f"{label}{thought.thought_type} | status={thought.status}"
    when = f"{stamp_iso(thought.created[0])} ({age_of(thought.created, now)})"
    body = clip(thought.content, limit) if limit else thought.content
    text = header(title, ("writer", thought.writer), ("agent", thought.agent), when, ("id", thought.id))
    text += "\n" + quote(body)
    if thought.metadata:
        text += "\n" + quote("metadata: " + value_text(thought.metadata, 240))
    return text


THREAD_FIELDS = ("id", "name", "description", "status", "parent_thought_id", "writer", "agent")
THOUGHT_FIELDS = (
    "id",
    "thread_id",
    "previous_thought_id",
    "content",
    "thought_type",
    "status",
    "metadata",
    "writer",
    "agent",
)


def thread_dict(thread: Thread) -> dict[str, Any]:
    assert thread.created is not None
    shown = {name: getattr(thread, name) for name in THREAD_FIELDS}
    return {**shown, "created_at": stamp_iso(thread.created[0]), "updated_at": stamp_iso(thread.updated[0])}


def thought_dict(thought: Thought) -> dict[str, Any]:
    assert thought.created is not None
    shown = {name: getattr(thought, name) for name in THOUGHT_FIELDS}
    # seed 001's name for the previous thought, beside ours
    return {**shown, "parent_thought_id": thought.previous_thought_id, "created_at": stamp_iso(thought.created[0])}


def whereabouts_dict(where: timeline.Whereabouts) -> dict[str, Any]:
    return {
        **thread_dict(where.thread),
        "thought_count": where.thought_count,
        "position": thought_dict(where.position) if where.position else None,
        "last_thought": thought_dict(where.last_thought) if where.last_thought else None,
        "trail": [
            {"thread_id": c.thread.id, "thread_name": c.thread.name, "thought_id": c.thought.id if c.thought else None}
            for c in where.trail
        ],
    }


def whereabouts_text(where: timeline.Whereabouts, now: datetime) -> str:
    lines = [thread_header(where.thread, now, where.thought_count)]
    if where.trail:
        lines.append("  trail: " + " <- ".join(f"{clip(c.thread.name, 40)} ({c.thread.id})" for c in where.trail))
    if where.position is not None:
        lines.append(thought_text(where.position, now, 300, "here: "))
    if where.last_thought is not None and (where.position is None or where.last_thought.id != where.position.id):
        lines.append(thought_text(where.last_thought, now, 300, "last: "))
    if where.position is None and where.last_thought is None:
        lines.append("(no thoughts yet)")
    return "\n".join(lines)


def thread_detail_text(detail: timeline.ThreadDetail, now: datetime) -> str:
    thread = detail.thread
    lines = [thread_header(thread, now, detail.total_thoughts), DATA_NOTICE]
    if thread.description:
        lines.append("description:\n" + quote(thread.description))
    if detail.parent_thought is not None:
        lines.append(f"started from thought {detail.parent_thought.id} on thread {detail.parent_thought.thread_id}")
    lines.append(f"you are here: {detail.position.id if detail.position else '(no position yet)'}")
    shown = len(detail.thoughts)
    lines.append(
        f"\nthoughts (oldest first, {shown} of {detail.total_thoughts}):" if detail.thoughts else "\nno thoughts yet"
    )
    for number, thought in enumerate(detail.thoughts, detail.total_thoughts - shown + 1):
        here = detail.position is not None and thought.id == detail.position.id
        lines.append(thought_text(thought, now, label=f"[{number}]{' (you are here)' if here else ''} "))
    if detail.children:
        lines.append("\ntangents:")
        lines += [f"- {thread_header(child, now)}" for child in detail.children]
    return "\n".join(lines)


# -- /whereami, /wherewasi, /remember ------------------------------------------------------


# -- operations ------------------------------------------------------------------------------


def _created(kind: str, event_id: str, text: str, **extra: object) -> Reply:
    return Reply(f"{text} (id {event_id}).", {"id": event_id, "kind": kind, **extra})


def _partial(app: App, reply: Reply, empty: bool = False) -> Reply:
    """`reply`, saying it is partial when the timeline was read while the build had not reached most of the
    logs (`stored.partial`: only their newest bytes were read beside the tables); `empty`: see `partial`."""
    return partial(reply, stored.partial(app), "older threads and thoughts", empty)


def _threads(app: App, found: list[timeline.Whereabouts], title: str, empty: str, tail: str = "", **more: int) -> Reply:
    """Threads with their current position, under `title` (`empty` when there are none)."""
    moment = now()
    blocks = "\n\n".join(whereabouts_text(where, moment) for where in found)
    text = f"{title} {DATA_NOTICE}\n\n{blocks}{tail}" if found else empty

    def data() -> JSON:
        return {"count": len(found), **more, "threads": [whereabouts_dict(w) for w in found]}

    return _partial(app, Reply(text, data), empty=not found)


def timeline_create_thread(app: App, args: JSON) -> Reply:
    event = timeline.create_thread(app, name=args["name"], **given(args, "description", "parent_thought_id", "agent"))
    return _created("thread", event.id, f"Created thread {event.data['name']!r}", name=event.data["name"])


def timeline_list_threads(app: App, args: JSON) -> Reply:
    found = timeline.threads_here(app, **given(args, "status", "limit"))
    return _threads(
        app,
        found,
        f"Threads, most recently active first: {len(found)}.",
        "No threads yet. Start one with timeline_create_thread.",
    )


def timeline_get_thread(app: App, args: JSON) -> Reply:
    detail = timeline.get_thread(app, thread_id=args["thread_id"], limit=args.get("limit"))
    payload = {
        **thread_dict(detail.thread),
        "thought_count": detail.total_thoughts,
        "position_thought_id": detail.position.id if detail.position else None,
        "current_thought_id": detail.position.id if detail.position else None,  # seed 001's name
        "thoughts": [thought_dict(t) for t in detail.thoughts],
        "tangents": [thread_dict(child) for child in detail.children],
    }
    return _partial(app, Reply(thread_detail_text(detail, now()), payload))


def timeline_add_thought(app: App, args: JSON) -> Reply:
    after = args.get("previous_thought_id") or args.get("parent_thought_id")
    told = given(args, "thought_type", "metadata", "agent")
    event = timeline.add_thought(app, thread_id=args["thread_id"], content=args["content"], after=after, **told)
    previous = event.data.get("previous_thought_id")
    return _created(
        "thought",
        event.id,
        f"Added {event.data['thought_type']} thought; you are here",
        thread_id=event.data["thread_id"],
        previous_thought_id=previous,
        parent_thought_id=previous,
    )


def _updated(what: str, id_field: str, event: Event) -> Reply:
    changed = sorted(k for k in event.data if k not in (id_field, "agent"))
    target = event.data[id_field]
    data = {"id": event.id, id_field: target, "changed": changed}
    return Reply(f"Updated {what} {target}: {', '.join(changed)}.", data)


def timeline_update_thought(app: App, args: JSON) -> Reply:
    changed = given(args, "status", "content", "thought_type", "metadata", "agent")
    return _updated("thought", "thought_id", timeline.update_thought(app, thought_id=args["thought_id"], **changed))


def timeline_update_thread(app: App, args: JSON) -> Reply:
    changed = given(args, "name", "description", "status", "agent")
    return _updated("thread", "thread_id", timeline.update_thread(app, thread_id=args["thread_id"], **changed))


def timeline_where_am_i(app: App, args: JSON) -> Reply:
    found = timeline.where_am_i(app, limit=args.get("limit"))
    total = timeline.thread_count(app, "active")
    hidden = total - len(found)
    tail = f"\n\n({hidden} older active threads not shown; pass a larger limit.)" if hidden > 0 else ""
    return _threads(
        app,
        found,
        f"You are here, on {total} active thread(s).",
        "No active threads. Start one with timeline_create_thread.",
        tail,
        total=total,
    )


def timeline_go_tangent(app: App, args: JSON) -> Reply:
    told = given(args, "description", "content", "metadata", "agent")
    tangent = timeline.go_tangent(app, thread_id=args["thread_id"], name=args["name"], **told)
    text = f"Went on a tangent: new thread {tangent.thread.id}, marked by thought {tangent.thought.id}"
    return _created(
        "thread",
        tangent.thread.id,
        text,
        thread_id=tangent.thread.id,
        tangent_start_thought_id=tangent.thought.id,
        parent_thread_id=tangent.thought.data["thread_id"],
    )


def timeline_return(app: App, args: JSON) -> Reply:
    done = timeline.return_from(app, thread_id=args["thread_id"], **given(args, "status", "agent"))
    text = f"Tangent {done.tangent.id} is {done.status}; back on thread {done.parent.id} at thought {done.position.id}."
    data = {
        "thread_id": done.tangent.id,
        "status": done.status,
        "parent_thread_id": done.parent.id,
        "position_thought_id": done.position.id,
    }
    return Reply(text, data)
