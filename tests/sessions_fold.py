"""The sessions view's pure fold as a test oracle (no call reads it: sessions are read from the derived
tables, `sessions/projection.py` and `sessions/stored.py`): notes and handoffs grouped by project and
session, with the summaries and order rules of `sessions/view.py` the tables' queries share."""

from __future__ import annotations

import bisect

from contextflow.core.events import Event, OrderKey
from contextflow.core.project import project_of
from contextflow.sessions.view import ENTRY_KINDS, Marks, SessionSummary, add_entry, marked_wrong, session_of


def _by_key(event: Event) -> OrderKey:
    return event.key


class SessionsState:
    """The folded sessions view: entries by project and by session, summaries, handoffs marked wrong."""

    def __init__(self) -> None:
        self.by_project: dict[str, list[Event]] = {}
        self.by_session: dict[tuple[str, str], list[Event]] = {}
        self.summaries: dict[str, dict[str, SessionSummary]] = {}
        self.wrong: Marks = {}

    def __eq__(self, other: object) -> bool:  # (the tests compare folds in every order)
        return isinstance(other, SessionsState) and vars(self) == vars(other)

    def project_entries(self, project: str | None) -> list[Event]:
        if project is not None:
            return self.by_project.get(project, [])
        merged = [event for events in self.by_project.values() for event in events]
        merged.sort(key=_by_key)
        return merged


class SessionsView:
    name = "sessions"

    def initial(self) -> SessionsState:
        return SessionsState()

    def apply(self, state: SessionsState, event: Event) -> None:
        if event.kind not in ENTRY_KINDS:
            return
        project = project_of(event)
        bisect.insort(state.by_project.setdefault(project, []), event, key=_by_key)
        session_id = session_of(event)
        if not session_id:
            return
        entries = state.by_session.setdefault((project, session_id), [])
        bisect.insort(entries, event, key=_by_key)
        bucket = state.summaries.setdefault(project, {})
        add_entry(bucket, session_id, project, event, state.wrong)
        handoff = marked_wrong(event)
        if handoff is not None:
            mark = (project, session_id, handoff)
            if mark not in state.wrong or event.id < state.wrong[mark]:  # the same mark whatever the order
                state.wrong[mark] = event.id
            bucket[session_id].recount_handoff(entries, state.wrong)
