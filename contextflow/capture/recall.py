"""What a session start reads of a repository's earlier sessions, from synced events only.

- `latest_handoff(app, project)`: the repository's current handoff. An agent-written handoff
  stands (its session is the one whose captured turn called it) until later work happens in any
  session of the repository; then that session's automatic handoff, derived from its turn
  records, is the latest. Machine-local state (the active session) plays no part, so every
  machine shows the same one.
- `standing_substance(app, project)`: the repository's decisions, rejected options, open questions
  and todos that still stand, deduplicated, newest first: until superseded or resolved, or older than
  STANDING_DAYS days AND STANDING_SESSIONS later sessions that did work (sessions that only talked,
  or only ran read-only commands, never age them).

Both read the sessions and the captured turns from the derived tables (`capture/stored.py`): only
the turns they show (the newest that did work, the ones linking a handoff, the winning session's,
the newest that said something, back to where items age out), whatever the store's size.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from contextflow.capture import digest as digests
from contextflow.capture import substance
from contextflow.capture.projection import turn_of
from contextflow.capture.stored import Turns, turns
from contextflow.core.events import Event, OrderKey

if TYPE_CHECKING:
    from contextflow.app import App

RECENT_HANDOFFS = 50
PAGE = 8
STANDING_DAYS = 30  # what was said stands this long at least ...
STANDING_SESSIONS = 10  # ... and through this many later sessions that did work
MAX_WORK_TURNS = 500  # turns that did work read to find STANDING_SESSIONS sessions (more: nothing ages out)
SAID_PAGE = 40
MAX_SAID_TURNS = 300  # turns that said something read, newest first, a page at a time ...
MAX_STANDING = 60  # ... until this many items stand (the session start shows those that fit, counts the rest)


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


def _state(event: Event) -> dict[str, Any]:
    state = turn_of(event.data).get("state")
    return state if isinstance(state, dict) else {}


def session_digest(events: list[Event]) -> dict[str, Any]:
    return digests.fold_all(turn_of(event.data) for event in events)


def _written_handoffs(app: App, project: str, captured: Turns, wrong: frozenset[str]) -> list[Event]:
    """The project's newest handoffs back to the newest one the agent wrote (the automatic ones of
    captured sessions are skipped: they are derived from the turns), newest first."""
    from contextflow.sessions import core as sessions
    from contextflow.sessions.view import session_of

    found: list[Event] = []
    before, read = None, 0
    while read < RECENT_HANDOFFS:  # a page at a time: the agent's newest handoff is usually near
        where = sessions.EntryFilter(project, kind="handoff", before=before, skip=wrong)
        page = sessions.read_entries(app, where, min(PAGE, RECENT_HANDOFFS - read))
        if not page:
            break
        read, before = read + len(page), page[0].id
        autos = {session_of(event) for event in page if event.data.get("auto")}
        derived = captured.holding(sorted(autos))
        for event in reversed(page):
            if event.data.get("auto") and session_of(event) in derived:
                continue  # derived from its turns instead
            found.append(event)
            if not event.data.get("auto"):
                return found
    return found


def latest_handoff(app: App, project: str) -> Latest | None:
    from contextflow.sessions import core as sessions
    from contextflow.sessions.view import session_of

    captured = turns(app, project)
    wrong = frozenset(handoff for (p, _, handoff) in sessions.wrong_marks(app) if p == project)
    written = _written_handoffs(app, project, captured, wrong)
    links = captured.linking([event.id for event in written])
    candidates: list[tuple[OrderKey, int, Latest]] = []
    for event in written:
        sid = session_of(event)
        turn = None
        if event.id in links:
            sid, turn = links[event.id]
        key = max(event.key, turn.key) if turn is not None else event.key
        state = _state(turn) if turn is not None else {}
        agent = str(event.data.get("agent") or "")
        candidates.append((key, 1, Latest(sid, key, event=event, agent=agent, ts=event.ts, state=state)))
    work = captured.latest_work()
    if work is not None:  # its digest is folded only if it wins
        sid, last = work
        candidates.append((last.key, 0, Latest(sid, last.key, agent=str(last.data.get("agent") or ""), ts=last.ts)))
    if not candidates:
        return None
    best = max(candidates, key=lambda c: (c[0], c[1]))[2]
    if best.event is not None:
        return best
    digest = captured.digest(best.session_id) or session_digest(captured.session(best.session_id))
    earlier = digest.get("handoff", {}).get("id")
    by_id = {event.id: event for event in written}
    best.digest, best.earlier = digest, by_id.get(str(earlier))
    return best


class Said:
    """One decision, open question or todo, with where it was said."""

    __slots__ = ("agent", "kind", "session_id", "state", "text", "ts", "turn", "writer")

    def __init__(self, kind: str, text: str, session_id: str, ts: str, agent: str, state: dict[str, Any]) -> None:
        self.kind = kind  # "decision", "question" or "todo"
        self.text, self.session_id, self.ts, self.agent = text, session_id, ts, agent
        self.state = state  # the state of the files of the turn that said it
        self.writer, self.turn = "", ""  # the machine (log) that captured it, and the turn's event id


class Standing:
    """What a repository decided and left open that still stands, newest first (`items`); `older`: the
    read stopped (MAX_STANDING items, or MAX_SAID_TURNS turns read), so older turns may hold more."""

    __slots__ = ("items", "older")

    def __init__(self, items: list[Said], older: bool) -> None:
        self.items, self.older = items, older


def _aged_out(captured: Turns, now_ms: int) -> OrderKey | None:
    """The order key before which what was said has aged out: said more than STANDING_DAYS ago AND before
    the newest work of the STANDING_SESSIONS-th most recent session that changed something (a session that
    only talked, or only ran `git status`, does not age anything). None: nothing has aged out."""
    from contextflow.core.clock import stamp_from_ms

    days = (stamp_from_ms(now_ms - STANDING_DAYS * 86_400_000), "", 0)
    working: set[str] = set()
    for sid, key, changes in captured.work_keys(MAX_WORK_TURNS):
        if changes and sid not in working:
            working.add(sid)
            if len(working) == STANDING_SESSIONS:
                return min(days, key)
    return None


class _Kept:
    """Texts kept so far, found again by their key words (an inverted index), so a new text is compared
    (`substance.same`'s rule) only with the few that share a word with it."""

    __slots__ = ("bare", "index", "words")

    def __init__(self) -> None:
        self.words: list[frozenset[str]] = []
        self.index: dict[str, list[int]] = {}
        self.bare: set[str] = set()  # texts without key words, compared whole

    def add(self, text: str) -> None:
        words = substance.key_words(text)
        if not words:
            self.bare.add(substance.normal(text) or text.strip().lower())
        for word in words:
            self.index.setdefault(word, []).append(len(self.words))
        self.words.append(words)

    def holds(self, text: str) -> bool:
        words = substance.key_words(text)
        if not words:
            return (substance.normal(text) or text.strip().lower()) in self.bare
        looked: set[int] = set()
        for word in words:
            for n in self.index.get(word, ()):
                if n not in looked:
                    looked.add(n)
                    other = self.words[n]
                    if len(words & other) / min(len(words), len(other)) >= 0.6:
                        return True
        return False


def standing_substance(app: App, project: str, now_ms: int | None = None) -> Standing:
    """What the repository's sessions decided, rejected and left open that still stands, newest first: each
    item once (its latest wording), until a later decision supersedes it (restates or reverses it), a later
    decision or "resolved:" answers it, or it ages out (`_aged_out`: STANDING_DAYS and STANDING_SESSIONS
    sessions that did work). Reads at most MAX_WORK_TURNS turns that did work and MAX_SAID_TURNS that
    said something, newest first: what a newer turn said is kept, what it replaces in older ones is not."""
    from contextflow.core.timeutil import now_ms as wall_ms

    captured = turns(app, project)
    floor = _aged_out(captured, wall_ms() if now_ms is None else now_ms)
    decided, answers, pools = _Kept(), _Kept(), {"questions": _Kept(), "todos_said": _Kept()}
    found: list[Said] = []
    before: OrderKey | None = None
    read = 0
    while read < MAX_SAID_TURNS:  # a page at a time, newest first
        size = min(SAID_PAGE, MAX_SAID_TURNS - read)
        page = captured.said_since(floor, size, before)
        for event in page:
            _add_said(found, event, decided, answers, pools)
            if len(found) > MAX_STANDING:
                return Standing(found[:MAX_STANDING], True)
        if len(page) < size:
            return Standing(found, False)
        read, before = read + len(page), page[-1].key
    return Standing(found, bool(captured.said_since(floor, 1, before)))  # (one more turn read: are there more?)


def _add_said(found: list[Said], event: Event, decided: _Kept, answers: _Kept, pools: dict[str, _Kept]) -> None:
    """What one turn said that still stands, given what newer turns said (`decided`, `answers`, `pools`)."""
    said = substance.of_turn(turn_of(event.data))
    if not said:
        return
    fresh = [d for d in said.get("decisions", []) if not decided.holds(d["decision"])]
    items = [("decision", digests.decision_text(d)) for d in fresh]
    for name, kind in (("questions", "question"), ("todos_said", "todo")):
        for text in said.get(name, []):
            if not answers.holds(text) and not pools[name].holds(text):
                pools[name].add(text)
                items.append((kind, text))
    if items:  # (most turns restate what a newer one said: nothing of theirs is kept)
        where = (str(event.data.get("session_id") or ""), event.ts, str(event.data.get("agent") or ""), _state(event))
        for kind, text in items:
            item = Said(kind, text, *where)
            item.writer, item.turn = event.writer, event.id
            found.append(item)
    for decision in fresh:
        decided.add(decision["decision"])
        answers.add(decision["decision"])
    for text in said.get("resolved", []):
        answers.add(text)


def recent_substance(app: App, project: str, now_ms: int | None = None) -> list[Said]:
    """`standing_substance`'s items."""
    return standing_substance(app, project, now_ms).items
