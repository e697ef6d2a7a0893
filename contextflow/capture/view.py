"""Activity view: captured turns (`capture.turn`) per project and session, each turn once.

Pure fold. A turn id seen before (the same turn captured on two machines, or a transcript read
again) is not listed twice: the copy with the earliest `Event.key` is kept, whatever the order they
are read in (as `capture/projection.py` keeps it); lists stay sorted by `Event.key`.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from contextflow.capture.turns import TURN_KIND
from contextflow.core.events import Event, OrderKey
from contextflow.core.project import project_of

__all__ = ["TURN_KIND", "ActivityState", "ActivityView"]


def _by_key(event: Event) -> OrderKey:
    return event.key


@dataclass
class ActivityState:
    by_session: dict[tuple[str, str], list[Event]] = field(default_factory=dict)
    turn_ids: dict[str, Event] = field(default_factory=dict)  # each turn id's kept event: the earliest by key

    def session_turns(self, project: str, session_id: str) -> list[Event]:
        return self.by_session.get((project, session_id), [])

    def all_events(self) -> Iterator[Event]:
        for events in self.by_session.values():
            yield from events


class ActivityView:
    name = "activity"

    def initial(self) -> ActivityState:
        return ActivityState()

    def unneeded(self, events: Sequence[Event]) -> dict[str, tuple[str, ...]]:
        """Compaction (fold.Compactable): every captured turn stays; other kinds are not ours."""
        return {event.id: () for event in events if event.kind != TURN_KIND}

    def apply(self, state: ActivityState, event: Event) -> None:
        if event.kind != TURN_KIND:
            return
        session_id = event.data.get("session_id")
        turn_id = event.data.get("turn_id")
        if not isinstance(session_id, str) or not session_id.strip():
            return
        if isinstance(turn_id, str):
            kept = state.turn_ids.get(turn_id)
            if kept is not None:
                if kept.key <= event.key:
                    return
                _remove(state, kept)  # an earlier copy of the turn, read later: it is the one kept
            state.turn_ids[turn_id] = event
        bisect.insort(state.by_session.setdefault(_session(event), []), event, key=_by_key)


def _session(event: Event) -> tuple[str, str]:
    return project_of(event), str(event.data["session_id"]).strip()


def _remove(state: ActivityState, event: Event) -> None:
    where = _session(event)
    events = state.by_session[where]
    events.remove(event)
    if not events:
        del state.by_session[where]
