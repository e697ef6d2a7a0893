"""Timeline view: threads, their thoughts, tangents and the "you are here" position per thread.

Pure fold over `timeline.*` events. A thread's or thought's id is the id of the event that
created it. Changeable fields (status, content, ...) are last-writer-wins per field by
`Event.key`, so an update folds the same whether it arrives before or after its creation
or another writer's update. A new thought also moves its thread's position to it (at the
thought's key); `timeline.position` events move it explicitly (returning from a tangent).

Indexes for fast reads: sorted id lists (prefix lookup), thread ids per status, thoughts
per thread in key order, and child tangent threads per parent thought.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any

from contextflow.core.events import Event, OrderKey
from contextflow.timeline.fields import (  # (the kinds and `nonempty` live there: light for the table)
    POSITION,
    THOUGHT,
    THOUGHT_STATUSES,
    THOUGHT_TYPES,
    THOUGHT_UPDATE,
    THREAD,
    THREAD_STATUSES,
    THREAD_UPDATE,
    nonempty,
)

THREAD_FIELDS = ("name", "description", "status")
THOUGHT_FIELDS = ("content", "thought_type", "status", "metadata")


def writes(event: Event) -> set[tuple[str, str, str]]:
    """The last-writer-wins slots an event sets: thread and thought fields, thread positions."""
    data, kind = event.data, event.kind
    if kind in (THREAD, THREAD_UPDATE):
        thread_id = event.id if kind == THREAD else nonempty(data.get("thread_id"))
        return {("thread", thread_id, name) for name in THREAD_FIELDS if name in data} if thread_id else set()
    if kind == THOUGHT:  # folded only with a thread id
        thread_id = nonempty(data.get("thread_id"))
        fields = {("thought", event.id, name) for name in THOUGHT_FIELDS if name in data}
        return {*fields, ("position", thread_id, "")} if thread_id else set()
    if kind == THOUGHT_UPDATE and (thought_id := nonempty(data.get("thought_id"))):
        return {("thought", thought_id, name) for name in THOUGHT_FIELDS if name in data}
    if kind == POSITION and nonempty(data.get("thought_id")) and (thread_id := nonempty(data.get("thread_id"))):
        return {("position", thread_id, "")}
    return set()


@dataclass(slots=True)
class Fields:
    """Last-writer-wins values by field name: name -> (event key, value)."""

    values: dict[str, tuple[OrderKey, Any]] = field(default_factory=dict)

    def put(self, key: OrderKey, data: dict[str, Any], names: tuple[str, ...]) -> None:
        for name in names:
            if name in data and (name not in self.values or key > self.values[name][0]):
                self.values[name] = (key, data[name])

    def get(self, name: str) -> Any:
        found = self.values.get(name)
        return found[1] if found else None

    def since(self, name: str) -> OrderKey | None:
        found = self.values.get(name)
        return found[0] if found else None

    @property
    def latest(self) -> OrderKey | None:
        return max((key for key, _ in self.values.values()), default=None)


def _one_of(value: Any, options: tuple[str, ...], default: str) -> str:
    return value if value in options else default


@dataclass(slots=True)
class _Item:
    """What threads and thoughts share: who created them, when, and their changeable fields."""

    id: str
    created: OrderKey | None = None  # None until the creating event is folded
    writer: str = ""
    agent: str | None = None
    fields: Fields = field(default_factory=Fields)

    def begin(self, event: Event, names: tuple[str, ...]) -> None:
        self.created, self.writer, self.agent = event.key, event.writer, nonempty(event.data.get("agent"))
        self.fields.put(event.key, event.data, names)


@dataclass(slots=True)
class Thread(_Item):
    parent_thought_id: str | None = None

    @property
    def name(self) -> str:
        return str(self.fields.get("name") or "(unnamed)")

    @property
    def description(self) -> str | None:
        return nonempty(self.fields.get("description"))

    @property
    def status(self) -> str:
        return _one_of(self.fields.get("status"), THREAD_STATUSES, "active")

    @property
    def updated(self) -> OrderKey:
        latest = self.fields.latest
        assert self.created is not None
        return max(self.created, latest) if latest else self.created


@dataclass(slots=True)
class Thought(_Item):
    thread_id: str = ""
    previous_thought_id: str | None = None

    @property
    def content(self) -> str:
        return str(self.fields.get("content") or "")

    @property
    def thought_type(self) -> str:
        return _one_of(self.fields.get("thought_type"), THOUGHT_TYPES, "progress")

    @property
    def status(self) -> str:
        return _one_of(self.fields.get("status"), THOUGHT_STATUSES, "active")

    @property
    def metadata(self) -> dict[str, Any]:
        value = self.fields.get("metadata")
        return value if isinstance(value, dict) else {}


@dataclass
class TimelineState:
    threads: dict[str, Thread] = field(default_factory=dict)
    thoughts: dict[str, Thought] = field(default_factory=dict)
    thread_ids: list[str] = field(default_factory=list)  # sorted, created threads only
    thought_ids: list[str] = field(default_factory=list)  # sorted, created thoughts only
    by_status: dict[str, set[str]] = field(default_factory=lambda: {status: set() for status in THREAD_STATUSES})
    thread_thoughts: dict[str, list[tuple[OrderKey, str]]] = field(default_factory=dict)
    tangents: dict[str, set[str]] = field(default_factory=dict)  # parent thought id -> child thread ids
    positions: dict[str, tuple[OrderKey, str]] = field(default_factory=dict)  # thread id -> (key, thought id)
    activity: dict[str, OrderKey] = field(default_factory=dict)  # thread id -> latest event touching it

    def thread(self, thread_id: str) -> Thread | None:
        found = self.threads.get(thread_id)
        return found if found is not None and found.created is not None else None

    def thought(self, thought_id: str) -> Thought | None:
        found = self.thoughts.get(thought_id)
        return found if found is not None and found.created is not None else None

    def ordered_thoughts(self, thread_id: str) -> list[Thought]:
        return [self.thoughts[tid] for _, tid in self.thread_thoughts.get(thread_id, [])]

    def last_thought(self, thread_id: str) -> Thought | None:
        found = self.thread_thoughts.get(thread_id)
        return self.thoughts[found[-1][1]] if found else None

    def position(self, thread_id: str) -> Thought | None:
        """The thought the thread's "you are here" marker points at, once that thought is known."""
        found = self.positions.get(thread_id)
        return self.thought(found[1]) if found else None

    def children(self, thread_id: str) -> list[Thread]:
        """Tangent threads started from thoughts of this thread, oldest first."""
        found = [
            child
            for _, thought_id in self.thread_thoughts.get(thread_id, [])
            for child_id in self.tangents.get(thought_id, ())
            if (child := self.thread(child_id)) is not None
        ]
        return sorted(found, key=lambda t: (t.created, t.id))

    def _touch(self, thread_id: str, key: OrderKey) -> None:
        current = self.activity.get(thread_id)
        if current is None or key > current:
            self.activity[thread_id] = key

    def _move(self, thread_id: str, key: OrderKey, thought_id: str) -> None:
        self._touch(thread_id, key)
        current = self.positions.get(thread_id)
        if current is None or key > current[0]:
            self.positions[thread_id] = (key, thought_id)

    def _reindex_status(self, thread: Thread) -> None:
        for members in self.by_status.values():
            members.discard(thread.id)
        if thread.created is not None:
            self.by_status[thread.status].add(thread.id)


class TimelineView:
    name = "timeline"

    def initial(self) -> TimelineState:
        return TimelineState()

    def apply(self, state: TimelineState, event: Event) -> None:
        if not event.kind.startswith("timeline."):
            return
        data = event.data
        if event.kind == THREAD:
            self._thread(state, event)
        elif event.kind == THREAD_UPDATE and (thread_id := nonempty(data.get("thread_id"))):
            thread = state.threads.setdefault(thread_id, Thread(thread_id))
            thread.fields.put(event.key, data, THREAD_FIELDS)
            state._touch(thread_id, event.key)
            state._reindex_status(thread)
        elif event.kind == THOUGHT:
            self._thought(state, event)
        elif event.kind == THOUGHT_UPDATE and (thought_id := nonempty(data.get("thought_id"))):
            state.thoughts.setdefault(thought_id, Thought(thought_id)).fields.put(event.key, data, THOUGHT_FIELDS)
        elif event.kind == POSITION:
            thread_id, thought_id = nonempty(data.get("thread_id")), nonempty(data.get("thought_id"))
            if thread_id and thought_id:
                state._move(thread_id, event.key, thought_id)

    def _thread(self, state: TimelineState, event: Event) -> None:
        thread = state.threads.setdefault(event.id, Thread(event.id))
        if thread.created is not None:
            return
        thread.begin(event, THREAD_FIELDS)
        thread.parent_thought_id = nonempty(event.data.get("parent_thought_id"))
        state._touch(event.id, event.key)
        bisect.insort(state.thread_ids, event.id)
        if thread.parent_thought_id:
            state.tangents.setdefault(thread.parent_thought_id, set()).add(event.id)
        state._reindex_status(thread)

    def _thought(self, state: TimelineState, event: Event) -> None:
        thread_id = nonempty(event.data.get("thread_id"))
        thought = state.thoughts.setdefault(event.id, Thought(event.id))
        if thread_id is None or thought.created is not None:
            return
        thought.begin(event, THOUGHT_FIELDS)
        thought.thread_id = thread_id
        thought.previous_thought_id = nonempty(event.data.get("previous_thought_id"))
        bisect.insort(state.thought_ids, event.id)
        bisect.insort(state.thread_thoughts.setdefault(thread_id, []), (event.key, event.id))
        state._move(thread_id, event.key, event.id)
