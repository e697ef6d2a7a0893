"""What a session start reads of a repository's earlier sessions, from synced events only.

- `latest_handoff(app, project)`: the repository's current handoff. An agent-written handoff
  stands (its session is the one whose captured turn called it) until later work happens in any
  session of the repository; then that session's automatic handoff, derived from its turn
  records, is the latest. Machine-local state (the active session) plays no part, so every
  machine shows the same one.
- `recent_substance(app, project)`: decisions, open questions and todos of the repository's
  recent sessions, deduplicated, newest first, resolved ones dropped.

Both read the `sessions` and `activity` views; a later derived store can answer the same
functions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from contextflow.capture import digest as digests
from contextflow.capture import substance
from contextflow.capture.digest import turn_has_work
from contextflow.core.events import Event, OrderKey

if TYPE_CHECKING:
    from contextflow.app import App
    from contextflow.capture.view import ActivityState

RECENT_HANDOFFS = 50
RECENT_SESSIONS = 10


class Latest:
    """The current handoff: the agent's (`event`) or one derived from a session's turns (`digest`).
    Plain classes here: every session start pays for each class it builds at import."""

    __slots__ = ("agent", "digest", "earlier", "event", "key", "session_id", "state", "ts")

    def __init__(
        self,
        session_id: str,
        key: OrderKey,
        *,
        event: Event | None = None,  # an agent-written handoff (or an automatic one with no turns to derive from)
        digest: dict[str, Any] | None = None,  # the session's turns folded: the automatic handoff
        agent: str = "",
        ts: str = "",
        earlier: Event | None = None,  # the agent's handoff in this session that later work superseded
        state: dict[str, Any] | None = None,  # files' state when the handoff was captured
    ) -> None:
        self.session_id, self.key, self.event, self.digest = session_id, key, event, digest
        self.agent, self.ts, self.earlier, self.state = agent, ts, earlier, state


def _activity(app: App) -> ActivityState:
    from contextflow import ondisk
    from contextflow.capture.view import ActivityView  # the view's own module: the store folds it anyway

    return ondisk.view(app, ActivityView)


def project_sessions(app: App, project: str) -> dict[str, list[Event]]:
    """The captured turns of each session of `project`, oldest first."""
    state = _activity(app)
    return {sid: events for (p, sid), events in state.by_session.items() if p == project and events}


def _turn(event: Event) -> dict[str, Any]:
    turn = event.data.get("turn")
    return turn if isinstance(turn, dict) else {}


def _state(event: Event) -> dict[str, Any]:
    state = _turn(event).get("state")
    return state if isinstance(state, dict) else {}


def session_digest(events: list[Event]) -> dict[str, Any]:
    return digests.fold_all(_turn(event) for event in events)


def _written_handoffs(app: App, project: str, captured: dict[str, list[Event]], wrong: frozenset[str]) -> list[Event]:
    """The project's newest handoffs back to the newest one the agent wrote (the automatic ones of
    captured sessions are skipped: they are derived from the turns), one page at a time so the
    sessions sidecar's tail answers without a fold."""
    from contextflow.sessions import core as sessions
    from contextflow.sessions.view import session_of

    found: list[Event] = []
    before = None
    for _ in range(RECENT_HANDOFFS):
        page = sessions.read_entries(app, sessions.EntryFilter(project, kind="handoff", before=before, skip=wrong), 1)
        if not page:
            break
        event = page[0]
        before = event.id
        if event.data.get("auto") and session_of(event) in captured:
            continue  # derived from its turns instead
        found.append(event)
        if not event.data.get("auto"):
            break
    return found


def latest_handoff(app: App, project: str) -> Latest | None:
    from contextflow.sessions import core as sessions
    from contextflow.sessions.view import session_of

    captured = project_sessions(app, project)
    links: dict[str, tuple[str, Event]] = {}
    for sid, events in captured.items():
        for event in events:
            handoff = _turn(event).get("handoff")
            if isinstance(handoff, dict) and isinstance(handoff.get("id"), str):
                links[handoff["id"]] = (sid, event)
    candidates: list[tuple[OrderKey, int, Latest]] = []
    wrong = frozenset(handoff for (p, _, handoff) in sessions.wrong_marks(app) if p == project)
    written = _written_handoffs(app, project, captured, wrong)
    for event in written:
        sid = session_of(event)
        turn = None
        if event.id in links:
            sid, turn = links[event.id]
        key = max(event.key, turn.key) if turn is not None else event.key
        state = _state(turn) if turn is not None else {}
        agent = str(event.data.get("agent") or "")
        candidates.append((key, 1, Latest(sid, key, event=event, agent=agent, ts=event.ts, state=state)))
    for sid, events in captured.items():
        last = next((e for e in reversed(events) if turn_has_work(_turn(e)) and "handoff" not in _turn(e)), None)
        if last is not None:  # its digest is folded only if it wins
            candidates.append((last.key, 0, Latest(sid, last.key, agent=str(last.data.get("agent") or ""), ts=last.ts)))
    if not candidates:
        return None
    best = max(candidates, key=lambda c: (c[0], c[1]))[2]
    if best.event is not None:
        return best
    digest = session_digest(captured[best.session_id])
    earlier = digest.get("handoff", {}).get("id")
    by_id = {event.id: event for event in written}
    best.digest, best.earlier = digest, by_id.get(str(earlier))
    return best


class Said:
    """One decision, open question or todo, with where it was said."""

    __slots__ = ("agent", "kind", "session_id", "state", "text", "ts")

    def __init__(self, kind: str, text: str, session_id: str, ts: str, agent: str, state: dict[str, Any]) -> None:
        self.kind = kind  # "decision", "question" or "todo"
        self.text, self.session_id, self.ts, self.agent = text, session_id, ts, agent
        self.state = state  # the state of the files of the turn that said it


def recent_substance(app: App, project: str, sessions: int = RECENT_SESSIONS) -> list[Said]:
    """What the project's recent sessions decided and left open, newest first: each item once (its
    latest wording), questions a later decision or "resolved:" answered and todos said done left out."""
    captured = project_sessions(app, project)
    recent = sorted(captured.items(), key=lambda item: item[1][-1].key, reverse=True)[:sessions]
    events = sorted((e for _, evs in recent for e in evs), key=lambda e: e.key)
    total: dict[str, list[Any]] = {}
    where: dict[tuple[str, str], Event] = {}
    for turn_event in events:
        turn = _turn(turn_event)
        said = substance.of_turn(turn)
        if not said:
            continue
        total = substance.accumulate(total, said)
        for item in said.get("decisions", []):
            where[("decision", digests.decision_text(item))] = turn_event
        for name, kind in (("questions", "question"), ("todos_said", "todo")):
            for text in said.get(name, []):
                where[(kind, text)] = turn_event
    found: list[Said] = []
    items = [("decision", digests.decision_text(d)) for d in total.get("decisions", [])]
    items += [("question", q) for q in total.get("questions", [])] + [("todo", t) for t in total.get("todos_said", [])]
    for kind, text in items:
        event = where.get((kind, text))
        if event is None:
            continue
        state = _state(event)
        agent = str(event.data.get("agent") or "")
        found.append(Said(kind, text, str(event.data.get("session_id") or ""), event.ts, agent, state))
    found.sort(key=lambda said: said.ts, reverse=True)
    return found
