"""Captured turns' pure fold as a test oracle: the `activity` view folded whole in memory, answering as
`capture/stored.py`'s queries of the tables do, for a store that shares no machine-local state.

The view (`ActivityView`): captured turns (`capture.turn`) per project and session, each turn once. A turn
id seen before (the same turn captured on two machines, or a transcript read again) is not listed twice:
the copy with the earliest `Event.key` is kept, whatever the order they are read in (as
`capture/projection.py` keeps it); lists stay sorted by `Event.key`."""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from contextflow.app import App
from contextflow.capture import recall, stored
from contextflow.capture.projection import turn_of
from contextflow.capture.stored import Turns
from contextflow.capture.turns import TURN_KIND
from contextflow.core.events import Event, OrderKey
from contextflow.core.project import project_of
from tests.folding import view_of


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


class FoldedTurns(Turns):
    """A project's captured turns, from the activity view folded whole in memory."""

    def __init__(self, app: App, project: str) -> None:
        self.app, self.project = app, project
        self._sessions: dict[str, list[Event]] | None = None

    def sessions(self) -> dict[str, list[Event]]:
        if self._sessions is None:
            state = view_of(self.app.store, ActivityView)
            found = state.by_session.items()
            self._sessions = {sid: events for (p, sid), events in found if p == self.project and events}
        return self._sessions

    def latest_work(self) -> tuple[str, Event] | None:
        """(session, turn) of the newest turn that did work and wrote no handoff."""
        best: tuple[OrderKey, str, Event] | None = None
        for sid, events in self.sessions().items():
            last = next((event for event in reversed(events) if _works(turn_of(event.data))), None)
            if last is not None and (best is None or last.key > best[0]):
                best = (last.key, sid, last)
        return (best[1], best[2]) if best else None

    def linking(self, ids: Sequence[str]) -> dict[str, tuple[str, Event]]:
        """Handoff id -> (session, the newest turn that wrote it), for the given ids."""
        wanted: set[str] = set(ids)
        links: dict[str, tuple[str, Event]] = {}
        for sid, events in self.sessions().items():
            for event in events:
                handoff = turn_of(event.data).get("handoff")
                if isinstance(handoff, dict) and handoff.get("id") in wanted:
                    linked = links.get(handoff["id"])
                    if linked is None or event.key > linked[1].key:
                        links[handoff["id"]] = (sid, event)
        return links

    def holding(self, session_ids: Sequence[str]) -> set[str]:
        """Those of `session_ids` with captured turns."""
        return {sid for sid in session_ids if sid in self.sessions()}

    def digest(self, session_id: str) -> dict[str, Any] | None:
        return None  # (the oracle folds the session's turns whole)

    def session(self, session_id: str) -> list[Event]:
        return self.sessions().get(session_id, [])

    def work_keys(self, size: int) -> list[tuple[str, OrderKey, bool]]:
        """(session, key, whether it changed something) of the `size` newest turns that did work (as
        `latest_work` counts it), newest first."""
        from contextflow.capture.digest import turn_changes_something

        found = [
            (sid, event.key, turn_changes_something(turn_of(event.data)))
            for sid, events in self.sessions().items()
            for event in events
            if _works(turn_of(event.data))
        ]
        return sorted(found, key=lambda found: found[1], reverse=True)[:size]

    def said_since(self, floor: OrderKey | None, size: int, before: OrderKey | None = None) -> list[Event]:
        """The `size` newest turns that said something before `before`, none before `floor`, newest first.
        Their data may be as stored (not conformed): read it as any shape (`substance.of_turn` does)."""
        found = [
            event
            for events in self.sessions().values()
            for event in events
            if (floor is None or event.key >= floor)
            and (before is None or event.key < before)
            and _says(turn_of(event.data))
        ]
        return sorted(found, key=lambda event: event.key, reverse=True)[:size]


def _works(turn: dict[str, Any]) -> bool:
    from contextflow.capture.digest import turn_has_work

    return turn_has_work(turn) and "handoff" not in turn


def _says(turn: dict[str, Any]) -> bool:
    from contextflow.capture.substance import of_turn

    return bool(of_turn(turn))


def fold_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make a store that shares no machine-local state (`shares_state=False`) read the whole fold."""
    real = stored.turns

    def folded_or_read(app: App, project: str) -> Turns:
        return real(app, project) if app.store.shares_state else FoldedTurns(app, project)

    monkeypatch.setattr(stored, "turns", folded_or_read)
    monkeypatch.setattr(recall, "turns", folded_or_read)
