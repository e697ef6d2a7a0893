"""Sessions view: notes and handoffs grouped by project and session, plus per-session summaries.

Pure fold over `note` and `handoff` events (new and legacy). Lists stay sorted by
`Event.key` and summaries keep their "latest" fields by key, so the state does not depend
on the order events arrive in. A note with `wrong_handoff: <id>` marks a handoff of its own
project and session as wrong: that handoff is no longer any session's latest.

Sessions are read from the derived tables (`projection.py`, `stored.py`); the whole fold in memory is the
tests' oracle (`tests/sessions_fold.py`). The summaries and the order rules here are shared with the
tables' queries.
"""

from __future__ import annotations

from typing import Any

from contextflow.core.events import Event, OrderKey
from contextflow.core.project import project_of

NOTE, HANDOFF = "note", "handoff"
ENTRY_KINDS = (NOTE, HANDOFF)
NO_SESSION = "(no-session-id)"
WRONG_FIELD = "wrong_handoff"  # a note that marks a handoff as wrong names it here
_ZERO: OrderKey = (0, "", 0)


def session_of(event: Event) -> str:
    value = event.data.get("session_id")
    return value.strip() if isinstance(value, str) else ""


def marked_wrong(event: Event) -> str | None:
    """The handoff id a note marks as wrong, if it is such a note."""
    value = event.data.get(WRONG_FIELD) if event.kind == "note" else None
    return value if isinstance(value, str) and value else None


Marks = dict[tuple[str, str, str], str]  # (project, session, handoff id) -> id of the note that marks it wrong


class SessionSummary:
    """One session's counts, newest entry, task and latest handoff (a plain class: the session start defines it)."""

    def __init__(
        self,
        session_id: str,
        project: str,
        entry_count: int = 0,
        note_count: int = 0,
        handoff_count: int = 0,
        latest_key: OrderKey = _ZERO,
        latest_ts: str = "",
        last_entry_kind: str = "",
        task_key: OrderKey = _ZERO,
        task: str = "",
        agents: set[str] | None = None,
        handoff_key: OrderKey = _ZERO,
        latest_handoff_summary: str = "",
    ) -> None:
        self.session_id, self.project = session_id, project
        self.entry_count, self.note_count, self.handoff_count = entry_count, note_count, handoff_count
        self.latest_key, self.latest_ts, self.last_entry_kind = latest_key, latest_ts, last_entry_kind
        self.task_key, self.task = task_key, task
        self.agents = agents if agents is not None else set()
        self.handoff_key, self.latest_handoff_summary = handoff_key, latest_handoff_summary

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SessionSummary) and vars(self) == vars(other)

    def __repr__(self) -> str:
        return f"SessionSummary({', '.join(f'{name}={value!r}' for name, value in vars(self).items())})"

    def add(self, event: Event, wrong: Marks | None = None) -> None:
        self.entry_count += 1
        if event.kind == "note":
            self.note_count += 1
        else:
            self.handoff_count += 1
        agent = event.data.get("agent")
        if isinstance(agent, str) and agent.strip():
            self.agents.add(agent.strip())
        key = event.key
        if key > self.latest_key:
            self.latest_key, self.latest_ts, self.last_entry_kind = key, event.ts, event.kind
        task = event.data.get("task")
        if isinstance(task, str) and task.strip() and key > self.task_key:
            self.task_key, self.task = key, task.strip()
        summary = event.data.get("summary")
        marked = wrong is not None and (self.project, self.session_id, event.id) in wrong
        if event.kind == "handoff" and isinstance(summary, str) and key > self.handoff_key and not marked:
            self.handoff_key, self.latest_handoff_summary = key, summary.strip()

    def recount_handoff(self, entries: list[Event], wrong: Marks) -> None:
        """The latest handoff again, once one was marked wrong (entries: this session's, sorted)."""
        self.handoff_key, self.latest_handoff_summary = _ZERO, ""
        for event in reversed(entries):
            summary = event.data.get("summary")
            mark = (self.project, self.session_id, event.id)
            if event.kind == "handoff" and isinstance(summary, str) and mark not in wrong:
                self.handoff_key, self.latest_handoff_summary = event.key, summary.strip()
                return

    def as_dict(self) -> dict[str, Any]:
        shown = {name: value for name, value in vars(self).items() if not name.endswith("_key")}
        from contextflow.core.timeutil import iso_ms

        return {
            **shown,
            "latest_ts_ms": iso_ms(self.latest_ts),  # ContextFlowMCP's key beside latest_ts
            "task": self.task or None,
            "agents": sorted(self.agents),
            "latest_handoff_summary": self.latest_handoff_summary or None,
        }


def _recent_first(summaries: dict[str, SessionSummary]) -> list[SessionSummary]:
    return sorted(summaries.values(), key=lambda s: (s.latest_key, s.session_id), reverse=True)


def add_entry(bucket: dict[str, SessionSummary], session_id: str, project: str, event: Event, wrong: Marks) -> None:
    summary = bucket.get(session_id)
    if summary is None:
        summary = bucket[session_id] = SessionSummary(session_id, project)
    summary.add(event, wrong)


def summarize(events: list[Event], include_unsessioned: bool, wrong: Marks | None = None) -> list[SessionSummary]:
    """Summaries built from an explicit list of entries (the slow path for filtered listings)."""
    found: dict[str, SessionSummary] = {}
    for event in events:
        session_id = session_of(event) or (NO_SESSION if include_unsessioned else "")
        if session_id:
            add_entry(found, session_id, project_of(event), event, wrong or {})
    return _recent_first(found)
