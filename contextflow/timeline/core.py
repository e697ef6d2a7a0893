"""Timeline: threads of thoughts, tangents and "you are here" positions.

Core functions behind the `timeline_*` tools and `contextflow timeline`. Every id argument
accepts a unique prefix, as git does. The events written here (the `timeline.*` kinds of
views/timeline.py) are documented in docs/context-and-timeline.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from contextflow.app import App
from contextflow.core import checks
from contextflow.core.errors import InputError, NotFoundError, arg, call, tool
from contextflow.core.events import Event
from contextflow.core.ids import resolve_prefix
from contextflow.timeline import stored
from contextflow.timeline.fields import (
    DEFAULT_THOUGHTS,
    DEFAULT_THREADS,
    DEFAULT_WHERE,
    POSITION,
    STATUS_VERBS,
    THOUGHT,
    THOUGHT_UPDATE,
    THREAD,
    THREAD_UPDATE,
)
from contextflow.timeline.stored import Slice
from contextflow.timeline.view import Thought, Thread, TimelineState

MAX_NAME_CHARS = 200
MAX_DESCRIPTION_CHARS = 4_000
MAX_METADATA_BYTES = 16 * 1024
MAX_TRAIL = 20


def resolve_thread(app: App, value: str, name: str = "thread_id") -> Thread:
    with stored.reading(app) as state:
        return thread_in(state, value, name)


def resolve_thought(app: App, value: str, name: str = "thought_id") -> Thought:
    with stored.reading(app) as state:
        return thought_in(state, value, name)


def thread_in(state: Slice, value: str, name: str = "thread_id") -> Thread:
    """The thread `value` names (its id or a unique prefix of it)."""
    given = checks.trimmed(value, name, required=True) or ""
    hint = f"{call('timeline_list_threads')} to see thread ids"
    found = state.thread(resolve_prefix(given, state.candidates("thread", given.strip().lower()), "thread id", hint))
    if found is None:  # (listed by the tables, so read from them: never here)
        raise NotFoundError(f"no thread id starts with {given!r}; {hint}")
    return found


def thought_in(state: Slice, value: str, name: str = "thought_id") -> Thought:
    """The thought `value` names (its id or a unique prefix of it)."""
    given = checks.trimmed(value, name, required=True) or ""
    hint = f"{call('timeline_get_thread')} to see a thread's thought ids"
    found = state.thought(resolve_prefix(given, state.candidates("thought", given.strip().lower()), "thought id", hint))
    if found is None:
        raise NotFoundError(f"no thought id starts with {given!r}; {hint}")
    return found


def agent_field(value: str | None) -> dict[str, str]:
    """{"agent": name} for an event's data when an agent is named, else {}."""
    agent = checks.trimmed(value, "agent", max_chars=200)
    return {"agent": agent} if agent else {}


def _metadata(value: dict[str, Any] | None) -> dict[str, Any] | None:
    if value is None:
        return None
    return checks.json_size(value, "metadata", max_bytes=MAX_METADATA_BYTES, size_hint="Keep links, not contents")


# -- threads -------------------------------------------------------------------------------


def _new_thread(app: App, name: str, description: str | None, agent: str | None) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": checks.trimmed(name, "name", required=True, max_chars=MAX_NAME_CHARS),
        "status": "active",
        "project": app.settings.default_project,  # where it was made: the feed files it there
        **agent_field(agent),
    }
    described = checks.trimmed(description, "description", max_chars=MAX_DESCRIPTION_CHARS)
    if described:
        data["description"] = described
    return data


def create_thread(
    app: App,
    *,
    name: str,
    description: str | None = None,
    parent_thought_id: str | None = None,
    agent: str | None = None,
) -> Event:
    data = _new_thread(app, name, description, agent)
    if parent_thought_id is not None:
        data["parent_thought_id"] = resolve_thought(app, parent_thought_id, "parent_thought_id").id
    return app.store.append(THREAD, data)


def update_thread(
    app: App,
    *,
    thread_id: str,
    name: str | None = None,
    description: str | None = None,
    status: str | None = None,
    agent: str | None = None,
) -> Event:
    """Rename a thread or set its status (a name in THREAD_STATUSES or a verb of STATUS_VERBS)."""
    thread = resolve_thread(app, thread_id)
    changes: dict[str, Any] = {}
    if name is not None:
        changes["name"] = checks.trimmed(name, "name", required=True, max_chars=MAX_NAME_CHARS)
    if description is not None:
        changes["description"] = checks.trimmed(description, "description", max_chars=MAX_DESCRIPTION_CHARS) or ""
    if status is not None:
        changes["status"] = _status(status)
    if not changes:
        raise InputError("nothing to change: pass name, description or status (active|paused|completed|abandoned)")
    return app.store.append(THREAD_UPDATE, {"thread_id": thread.id, **changes, **agent_field(agent)})


def _status(value: str) -> str:
    """A status by its name (`paused`) or by the verb that sets it (`pause`), as help words it."""
    return STATUS_VERBS.get(value, value)


def list_threads(app: App, *, status: str | None = None, limit: int | None = None) -> list[Thread]:
    """Threads, most recently active first; all statuses unless `status` is given."""
    return [where.thread for where in threads_here(app, status=status, limit=limit)]


def threads_here(app: App, *, status: str | None = None, limit: int | None = None) -> list[Whereabouts]:
    """`list_threads` with each thread's position, last thought and trail (`whereabouts`)."""
    wanted = _status(status) if status else None
    return _where(app, wanted, DEFAULT_THREADS if limit is None else limit)


def _where(app: App, status: str | None, count: int) -> list[Whereabouts]:
    """Whereabouts of up to `count` threads of `status` (else all), most recently active first: from the
    derived tables, reading only these threads."""
    with stored.reading(app) as found:
        return [whereabouts(found, thread, found.counts[thread.id]) for thread in stored.recent(found, status, count)]


@dataclass(frozen=True)
class ThreadDetail:
    thread: Thread
    thoughts: list[Thought]
    total_thoughts: int
    position: Thought | None
    children: list[Thread]
    parent_thought: Thought | None


def get_thread(app: App, *, thread_id: str, limit: int | None = None) -> ThreadDetail:
    count = DEFAULT_THOUGHTS if limit is None else limit
    with stored.reading(app) as state:
        thread = thread_in(state, thread_id)
        state.whole(thread.id)
        thoughts = state.ordered_thoughts(thread.id)
        parent = state.thought(thread.parent_thought_id) if thread.parent_thought_id else None
        return ThreadDetail(
            thread, thoughts[-count:], len(thoughts), state.position(thread.id), state.children(thread.id), parent
        )


# -- thoughts ------------------------------------------------------------------------------


def _thought_data(
    app: App,
    state: Slice,
    thread: Thread,
    content: str,
    thought_type: str | None,
    metadata: dict[str, Any] | None,
    agent: str | None,
) -> dict[str, Any]:
    state.show(thread.id)
    here = state.position(thread.id)
    data: dict[str, Any] = {
        "thread_id": thread.id,
        "content": checks.trimmed(content, "content", required=True, max_chars=app.settings.max_note_chars),
        "thought_type": thought_type or "progress",
        "status": "active",
        "project": app.settings.default_project,
        **agent_field(agent),
    }
    if here is not None:
        data["previous_thought_id"] = here.id
    meta = _metadata(metadata)
    if meta:
        data["metadata"] = meta
    return data


def add_thought(
    app: App,
    *,
    thread_id: str,
    content: str,
    thought_type: str | None = None,
    metadata: dict[str, Any] | None = None,
    agent: str | None = None,
    after: str | None = None,
) -> Event:
    """A new thought (of THOUGHT_TYPES, default progress) after the thread's current position, which moves to it.
    `after`, when given, must name that position (seed 001's `parent_thought_id`): a thought is never added
    elsewhere, and saying so beats a silent branch."""
    with stored.reading(app) as state:
        data = _thought_data(app, state, thread_in(state, thread_id), content, thought_type, metadata, agent)
    if after is not None and checks.trimmed(after, "previous_thought_id"):
        named = resolve_thought(app, after, "previous_thought_id").id
        if named != data.get("previous_thought_id"):
            here = data.get("previous_thought_id") or "none: the thread has no thoughts yet"
            raise InputError(
                f"{arg('previous_thought_id')} {after!r} is not the thread's current position ({here}); a thought "
                "is added after the current position: leave it out, or return to that point first"
            )
    return app.store.append(THOUGHT, data)


def update_thought(
    app: App,
    *,
    thought_id: str,
    status: str | None = None,
    content: str | None = None,
    thought_type: str | None = None,
    metadata: dict[str, Any] | None = None,
    agent: str | None = None,
) -> Event:
    """Change a thought: its status (of THOUGHT_STATUSES), content, type (of THOUGHT_TYPES) or metadata."""
    thought = resolve_thought(app, thought_id)
    changes: dict[str, Any] = {}
    if content is not None:
        changes["content"] = checks.trimmed(content, "content", required=True, max_chars=app.settings.max_note_chars)
    if status is not None:
        changes["status"] = status
    if thought_type is not None:
        changes["thought_type"] = thought_type
    if metadata is not None:
        changes["metadata"] = _metadata(metadata)
    if not changes:
        raise InputError(
            f"nothing to change: pass {arg('status')} (active|resolved|abandoned), {arg('content')}, "
            f"{arg('thought_type')} or {arg('metadata')}"
        )
    return app.store.append(THOUGHT_UPDATE, {"thought_id": thought.id, **changes, **agent_field(agent)})


# -- where am I ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Crumb:
    """A thread and the thought it branched from, walking back to the root."""

    thread: Thread
    thought: Thought | None


@dataclass(frozen=True)
class Whereabouts:
    thread: Thread
    position: Thought | None
    last_thought: Thought | None
    thought_count: int
    trail: list[Crumb]  # parent thread first, up to the root


def whereabouts(state: TimelineState, thread: Thread, thoughts: int | None = None) -> Whereabouts:
    """Where `thread` is; `thoughts`: its thought count, when `state` holds only some of them."""
    crumbs: list[Crumb] = []
    seen = {thread.id}
    current = thread
    while current.parent_thought_id and len(crumbs) < MAX_TRAIL:
        thought = state.thought(current.parent_thought_id)
        parent = state.thread(thought.thread_id) if thought else None
        if thought is None or parent is None or parent.id in seen:
            break
        crumbs.append(Crumb(parent, thought))
        seen.add(parent.id)
        current = parent
    count = len(state.thread_thoughts.get(thread.id, [])) if thoughts is None else thoughts
    return Whereabouts(thread, state.position(thread.id), state.last_thought(thread.id), count, crumbs)


def thread_count(app: App, status: str) -> int:
    with stored.reading(app) as found:
        return stored.thread_count(found, status)


def where_am_i(app: App, *, status: str = "active", limit: int | None = None) -> list[Whereabouts]:
    """Position, last thought and breadcrumb trail of each thread with `status`, most recent first."""
    return _where(app, status, DEFAULT_WHERE if limit is None else limit)


# -- tangents ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tangent:
    thought: Event  # the tangent_start thought on the parent thread
    thread: Event  # the new child thread


def go_tangent(
    app: App,
    *,
    thread_id: str,
    name: str,
    description: str | None = None,
    content: str | None = None,
    metadata: dict[str, Any] | None = None,
    agent: str | None = None,
) -> Tangent:
    """Mark a tangent_start on `thread_id` (moving its position there) and start the child thread."""
    child = _new_thread(app, name, description, agent)
    note = checks.trimmed(content, "content", max_chars=app.settings.max_note_chars) or f"Tangent: {child['name']}"
    with stored.reading(app) as state:
        data = _thought_data(app, state, thread_in(state, thread_id), note, "tangent_start", metadata, agent)
    marker = app.store.append(THOUGHT, data)
    return Tangent(marker, app.store.append(THREAD, {**child, "parent_thought_id": marker.id}))


@dataclass(frozen=True)
class Return:
    tangent: Thread
    status: str
    parent: Thread
    position: Thought
    events: list[Event]


def return_from(app: App, *, thread_id: str, status: str | None = None, agent: str | None = None) -> Return:
    """Close (completed, the default), pause or abandon a tangent (RETURN_STATUSES, or their verbs) and put
    the parent thread back at the tangent_start thought."""
    closing = _status(status) if status else "completed"
    with stored.reading(app) as state:
        tangent = thread_in(state, thread_id)
        if not tangent.parent_thought_id:
            raise InputError(
                f"thread {tangent.id} is a root thread, not a tangent, so there is nowhere to return to; "
                f"pass the id of a thread started with {tool('timeline_go_tangent')}, "
                f"or use {tool('timeline_update_thread')} to change this thread's status"
            )
        marker = state.thought(tangent.parent_thought_id)
        parent = state.thread(marker.thread_id) if marker else None
    if marker is None or parent is None:
        raise NotFoundError(
            f"the thought {tangent.parent_thought_id} this tangent started from is not in this store yet "
            "(another machine wrote it); wait for the store folder to sync, then return again"
        )
    who = agent_field(agent)
    items: list[tuple[str, dict[str, Any]]] = [
        (THREAD_UPDATE, {"thread_id": tangent.id, "status": closing, **who}),
        (POSITION, {"thread_id": parent.id, "thought_id": marker.id, **who}),
    ]
    if parent.status == "paused":
        items.append((THREAD_UPDATE, {"thread_id": parent.id, "status": "active", **who}))
    return Return(tangent, closing, parent, marker, app.store.append_many(items))
