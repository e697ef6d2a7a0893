"""Keyed context records view: the latest `context.set` / `context.delete` per (project, key).

A record's identity is its project (the event's `project` field, else `shared`, as for events
written before records carried one) and its key: two projects may each hold `pr:foo`.

Pure fold. Per identity the event with the highest `Event.key` wins, whichever writer made
it and whatever order events arrive in; a delete is a tombstone that wins the same way (a set
ordered after it revives the record). Expiry is stored as a number and judged at read time.

Calls read the records from their projection's table (records/projection.py folds each chunk with
`apply`, records/stored.py queries it); the whole fold in memory is the tests' oracle (tests/records_oracle.py).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any

from contextflow.core.events import Event, OrderKey
from contextflow.core.project import project_of
from contextflow.core.timeutil import iso_ms
from contextflow.timeline.fields import nonempty

SET_KIND = "context.set"
DELETE_KIND = "context.delete"

RecordId = tuple[str, str]  # (project, key)


@dataclass(slots=True)
class Record:
    """One record's latest write. `deleted` marks a tombstone."""

    project: str
    key: str
    event_key: OrderKey
    event_id: str
    writer: str
    deleted: bool
    data: dict[str, Any]
    expires_ms: int | None = None
    # set events ordered after the latest tombstone; the first one is when the record was created
    live_sets: list[OrderKey] = field(default_factory=list)
    tombstone: OrderKey | None = None

    @property
    def identity(self) -> RecordId:
        return (self.project, self.key)

    @property
    def category(self) -> str:
        return nonempty(self.data.get("category")) or self.key.split(":", 1)[0]

    @property
    def thread_id(self) -> str | None:
        return nonempty(self.data.get("thread_id"))

    @property
    def pinned(self) -> bool:
        return self.data.get("pinned") is True

    @property
    def created_key(self) -> OrderKey:
        return self.live_sets[0] if self.live_sets else self.event_key

    def expired(self, now_ms: int) -> bool:
        return self.expires_ms is not None and self.expires_ms <= now_ms

    def record_write(self, kind: str, order: OrderKey) -> None:
        """Remember a write's key for `created_key`, whether or not it is the latest."""
        if kind == DELETE_KIND:
            if self.tombstone is None or order > self.tombstone:
                self.tombstone = order
                del self.live_sets[: bisect.bisect_right(self.live_sets, order)]
        elif self.tombstone is None or order > self.tombstone:
            _insort(self.live_sets, order)


@dataclass
class RecordsState:
    records: dict[RecordId, Record] = field(default_factory=dict)  # deleted ones too (tombstones)

    def live(self, identity: RecordId) -> Record | None:
        """The record unless deleted (expiry is the reader's call)."""
        record = self.records.get(identity)
        return None if record is None or record.deleted else record


def _insort(ordered: list[Any], item: Any) -> None:
    """Insert in order, once (an event read twice, from two copies of a log, adds nothing); appending is
    the common case (events mostly arrive in clock order)."""
    if not ordered or item > ordered[-1]:
        ordered.append(item)
    elif ordered[bisect.bisect_left(ordered, item) :][:1] != [item]:
        bisect.insort(ordered, item)


def record_id(event: Event) -> RecordId | None:
    """The record a set or delete writes (None for other kinds and for what apply ignores)."""
    key = event.data.get("key") if event.kind in (SET_KIND, DELETE_KIND) else None
    return (project_of(event), key) if isinstance(key, str) and key else None


class RecordsView:
    name = "records"

    def initial(self) -> RecordsState:
        return RecordsState()

    def apply(self, state: RecordsState, event: Event) -> None:
        identity = record_id(event)
        if identity is None:
            return
        project, key = identity
        deleted = event.kind == DELETE_KIND
        order = event.key
        current = state.records.get(identity)
        if current is not None and order <= current.event_key:
            current.record_write(event.kind, order)
            return
        expires = None if deleted else iso_ms(event.data.get("expires_at"))
        fresh = Record(project, key, order, event.id, event.writer, deleted, event.data, expires)
        if current is not None:
            fresh.live_sets, fresh.tombstone = current.live_sets, current.tombstone
        fresh.record_write(event.kind, order)
        state.records[identity] = fresh
