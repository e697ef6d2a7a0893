"""Orientation: the /whereami and /wherewasi views, the /remember prompt, and the text forms of
context records and timeline threads shared by the MCP tools and the CLI. Stored text is
untrusted: every value, name and thought is cleaned and quoted under a provenance header.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import orjson

from contextflow import records, sessions, timeline
from contextflow.app import App
from contextflow.clock import stamp_iso, stamp_ms
from contextflow.events import OrderKey, as_dict
from contextflow.present.provenance import dumps, entry_text, header
from contextflow.text import DATA_NOTICE, clean, clip, quote
from contextflow.timeutil import age
from contextflow.timeutil import to_iso as iso
from contextflow.views.records import Record
from contextflow.views.timeline import Thought, Thread

if TYPE_CHECKING:  # the operations table is not imported by a hook that only shows threads
    from contextflow.operations.spec import Reply

RECENT_IN_WHEREAMI = 5
MAX_PINNED_SHOWN = 20


def _when(key: OrderKey, now: datetime) -> str:
    return age(datetime.fromtimestamp(stamp_ms(key[0]) / 1000, tz=UTC), now)


def _value_text(value: Any, limit: int | None) -> str:
    return dumps(value) if limit is None else clip(orjson.dumps(value).decode(), limit)


# -- records -------------------------------------------------------------------------------


def record_header(record: Record, now: datetime) -> str:
    label = record.data.get("label")
    title = f"[{clean(record.category, True)}] {clean(record.key, True)}" + (f" ({clip(label, 80)})" if label else "")
    return header(
        title,
        ("writer", record.writer),
        ("agent", record.data.get("agent")),
        f"updated={stamp_iso(record.event_key[0])} ({_when(record.event_key, now)})",
        "pinned" if record.pinned else None,
        ("thread", record.thread_id),
        ("expires", record.data.get("expires_at")),
        ("id", record.event_id),
    )


def record_text(record: Record, now: datetime, value_limit: int | None = 240) -> str:
    return record_header(record, now) + "\n" + quote(_value_text(record.data.get("value"), value_limit))


def records_text(found: list[Record], title: str, now: datetime) -> str:
    if not found:
        return f"{title}: none."
    body = "\n\n".join(record_text(record, now) for record in found)
    return f"{title}: {len(found)}. {DATA_NOTICE}\n\n{body}"


# -- timeline ------------------------------------------------------------------------------


def thread_header(thread: Thread, now: datetime, thoughts: int | None = None) -> str:
    return header(
        f"thread {thread.id}: {clip(thread.name, 100)}",
        ("status", thread.status),
        ("thoughts", thoughts),
        ("writer", thread.writer),
        ("agent", thread.agent),
        f"updated={_when(thread.updated, now)}",
        f"tangent of thought {thread.parent_thought_id}" if thread.parent_thought_id else None,
    )


def thought_text(thought: Thought, now: datetime, limit: int | None = None, label: str = "") -> str:
    assert thought.created is not None
    title = f"{label}{thought.thought_type} | status={thought.status}"
    when = f"{stamp_iso(thought.created[0])} ({_when(thought.created, now)})"
    body = clip(thought.content, limit) if limit else thought.content
    text = header(title, ("writer", thought.writer), ("agent", thought.agent), when, ("id", thought.id))
    text += "\n" + quote(body)
    if thought.metadata:
        text += "\n" + quote("metadata: " + _value_text(thought.metadata, 240))
    return text


THREAD_FIELDS = ("id", "name", "description", "status", "parent_thought_id", "writer", "agent")
THOUGHT_FIELDS = (
    "id", "thread_id", "previous_thought_id", "content", "thought_type", "status", "metadata", "writer", "agent"
)


def thread_dict(thread: Thread) -> dict[str, Any]:
    assert thread.created is not None
    shown = {name: getattr(thread, name) for name in THREAD_FIELDS}
    return {**shown, "created_at": stamp_iso(thread.created[0]), "updated_at": stamp_iso(thread.updated[0])}


def thought_dict(thought: Thought) -> dict[str, Any]:
    assert thought.created is not None
    return {**{name: getattr(thought, name) for name in THOUGHT_FIELDS}, "created_at": stamp_iso(thought.created[0])}


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


def _more(app: App, status: str, shown: int) -> list[str]:
    total = timeline.thread_count(app, status)
    if total <= shown:
        return []
    return [f"({total - shown} older {status} threads not shown: timeline_list_threads status={status})\n"]


def whereami(app: App, now: datetime | None = None) -> Reply:
    """Active threads (position, last thought), pinned, waiting and recent context, latest handoff."""
    moment = now or datetime.now(UTC)
    active = timeline.where_am_i(app)
    waiting = records.waiting_records(app, moment)
    waiting_keys = {r.key for r in waiting}
    all_pinned = [r for r in records.pinned_records(app, moment) if r.key not in waiting_keys]
    pinned = all_pinned[:MAX_PINNED_SHOWN]
    shown = {r.key for r in pinned} | {r.key for r in waiting}
    listed = records.list_records(app, limit=min(500, RECENT_IN_WHEREAMI + len(shown)), now=moment)
    recent = [r for r in listed if r.key not in shown][:RECENT_IN_WHEREAMI]
    session_id = sessions.active_session(app)
    in_session = sessions.EntryFilter(app.settings.default_project, session_id=session_id)
    handoff = sessions.latest_handoff(app, in_session) if session_id else None
    lines = [f"# Where am I ({iso(moment)}, store {app.store.folder})", DATA_NOTICE, "", "## Active work"]
    lines += [whereabouts_text(where, moment) + "\n" for where in active] or ["(no active threads)\n"]
    lines += _more(app, "active", len(active))
    lines.append("## Pinned context")
    lines += [record_text(r, moment) for r in pinned] or ["(none)"]
    if len(all_pinned) > len(pinned):
        lines.append(f"({len(all_pinned) - len(pinned)} older pinned records: context_list pinned_only=true)")
    lines += ["", "## Waiting on"]
    lines += [
        f"waiting {_when(r.created_key, moment).removesuffix(' ago')} (since {stamp_iso(r.created_key[0])})\n"
        + record_text(r, moment)
        for r in waiting
    ] or ["(nothing)"]
    if len(waiting) >= records.WAITING_SHOWN:
        lines.append(f"(the {len(waiting)} most recently updated; context_list category=waiting shows more)")
    lines += ["", "## Recent context (7 days)"]
    lines += [record_text(r, moment) for r in recent] or ["(none)"]
    lines += ["", "## Latest handoff" + (f" (active session {clean(session_id, True)})" if session_id else "")]
    lines.append(entry_text(handoff) if handoff else "(no active session)" if not session_id else "(none yet)")
    data = {
        "now": iso(moment),
        "active_threads": [whereabouts_dict(where) for where in active],
        "pinned": [records.record_dict(r) for r in pinned],
        "waiting": [records.record_dict(r) for r in waiting],
        "recent": [records.record_dict(r) for r in recent],
        "active_session": session_id,
        "latest_handoff": as_dict(handoff) if handoff else None,
    }
    from contextflow.operations.spec import Reply

    return Reply("\n".join(lines), data)


def wherewasi(app: App, now: datetime | None = None) -> Reply:
    """Paused threads: how long ago, last thought, and the context records linked to them."""
    moment = now or datetime.now(UTC)
    paused = timeline.where_am_i(app, status="paused")
    lines = [f"# Where was I ({iso(moment)})", DATA_NOTICE, "", "## Paused work"]
    items: list[dict[str, Any]] = []
    for where in paused:
        since = where.thread.fields.since("status") or where.thread.updated
        linked = records.linked_records(app, where.thread.id, moment)
        lines.append(f"paused {_when(since, moment)}")
        lines.append(whereabouts_text(where, moment))
        lines.append("context:" if linked else "context: (none linked)")
        lines += ["  " + line for r in linked for line in record_text(r, moment).split("\n")]
        lines.append("")
        context = [records.record_dict(r) for r in linked]
        items.append({**whereabouts_dict(where), "paused_at": stamp_iso(since[0]), "context": context})
    if not paused:
        lines.append("(no paused threads)")
    lines += _more(app, "paused", len(paused))
    from contextflow.operations.spec import Reply

    return Reply("\n".join(lines).rstrip(), {"now": iso(moment), "paused_threads": items})


REMEMBER = """Store this in shared context so any agent on any machine can find it later:

WHAT

Do it with one context_set call:
- key: `prefix:name`, stable and lower-case so a later update hits the same key. Prefixes: project:<name>, \
pr:<owner/repo>:<number>, machine:<hostname>, waiting:<id> (blocked on someone), fact:<topic>, \
clipboard:<name> (expires after 24h).
- value: a JSON object holding the facts, e.g. {"description": "...", "status": "..."}.
- category: the key's prefix (project, pr, machine, waiting, fact or clipboard).
- label: a short human-readable title.
- pinned: true when it should show in every /whereami (things waited on, key facts).
- expires_at: only for temporary items, e.g. "24h" or "7d".
- thread_id: the current timeline thread, if this belongs to it (see timeline_where_am_i).
If the key may exist already, call context_get first and merge rather than overwrite.

Example: for "waiting on PR #1777 from Yeraze" call context_set with
{"key": "waiting:pr-1777", "value": {"description": "PR #1777 from Yeraze"}, \
"category": "waiting", "label": "Waiting on PR #1777", "pinned": true}

Then answer in one line: Saved as <key>. Will show in /whereami (when pinned or waiting)."""


def remember_prompt(what: str) -> str:
    """The /remember prompt: have the agent store `what` with context_set."""
    return REMEMBER.replace("WHAT", quote(what), 1)
