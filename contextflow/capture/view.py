"""Activity view: captured turns (`capture.turn`) per project and session, each turn once.

Pure fold. A turn id seen before (the same turn captured on two machines, or a transcript read
again) is not listed twice; lists stay sorted by `Event.key`.
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
    turn_ids: set[str] = field(default_factory=set)

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
            if turn_id in state.turn_ids:
                return
            state.turn_ids.add(turn_id)
        key = (project_of(event), session_id.strip())
        bisect.insort(state.by_session.setdefault(key, []), event, key=_by_key)
