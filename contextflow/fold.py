"""Folding events into views. Pure: no I/O here.

A view is an object with a `name`, an `initial()` state and an `apply(state, event)` that
updates that state in place. `apply` may look only at the state and the event, and the
state after folding a set of events must not depend on the order they came in: keep
"latest" values by `Event.key`, never by arrival. Tests fold in every order to hold this.

Compaction (contextflow/compact.py) asks each view which events of one writer's log it no
longer needs; see `Compactable`. A view that cannot answer keeps every event.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable, Iterable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from contextflow.events import Event, OrderKey


class View(Protocol):
    name: str

    def initial(self) -> Any: ...

    def apply(self, state: Any, event: Event) -> None: ...


@runtime_checkable
class Compactable(Protocol):
    """Optional for a view: which events of one log it can do without.

    `unneeded(events)` gets every event of one writer's log (in file order) and returns, for
    each event this view does not need, the names of the data fields it still needs kept: an
    empty tuple means the event can go entirely; fields mean it must stay, reduced to them
    (e.g. an overwritten record still counts as a version). Events the answer leaves out are
    kept whole. Events of kinds the view does not fold are unneeded by it.

    The rule that keeps merges correct: an event is unneeded only when events *in the same
    list* supersede it (by `Event.key`) whatever other writers have written or will write.
    The log is rewritten in one atomic rename, so a superseding event travels with it to
    every machine; other writers' events, seen or not yet synced, may order anywhere. A view
    must also not care whether an event it calls unneeded is absent or reduced to fields
    another view keeps. A view without this method needs every event, so compaction then
    drops nothing.
    """

    def unneeded(self, events: Sequence[Event]) -> Mapping[str, tuple[str, ...]]: ...


def overwritten(events: Sequence[Event], writes: Callable[[Event], Collection[Hashable]]) -> set[str]:
    """Ids of events each of whose slots a later event (by key) in `events` writes again.

    `writes(event)` names the last-writer-wins slots an event sets (e.g. one field of one
    node); an event writing none is never overwritten.
    """
    latest: dict[Hashable, OrderKey] = {}
    for event in events:
        for slot in writes(event):
            if slot not in latest or event.key > latest[slot]:
                latest[slot] = event.key
    found: set[str] = set()
    for event in events:
        slots = writes(event)
        if slots and all(latest[slot] > event.key for slot in slots):
            found.add(event.id)
    return found


class Fold:
    """The states of a set of views over a set of events; each event id applies once.

    A state (and the set of seen ids) may be *deferred*: given as a loader that is called the
    first time it is needed (a snapshot loads views lazily). Events that arrive meanwhile are
    kept and applied to the state when it loads; views do not depend on order, so this is safe.
    """

    def __init__(self, views: Sequence[View]) -> None:
        self.views = list(views)
        self.states: dict[str, Any] = {view.name: view.initial() for view in self.views}
        self.seen: set[str] = set()
        self.count = 0
        self.duplicates = 0
        self.last_seq: dict[str, int] = {}
        self.per_writer: dict[str, int] = {}  # events per writer id; more than its last seq: two machines share it
        self.max_hlc = 0
        self.deferred: dict[str, Callable[[], Any]] = {}
        self._pending: dict[str, list[Event]] = {}
        self._seen_loader: Callable[[], set[str]] | None = None

    def defer(self, name: str, loader: Callable[[], Any]) -> None:
        """Load view `name`'s state with `loader()` when it is first needed."""
        self.states.pop(name, None)
        self.deferred[name] = loader

    def defer_seen(self, loader: Callable[[], set[str]]) -> None:
        self._seen_loader = loader

    @property
    def seen_deferred(self) -> bool:
        return self._seen_loader is not None

    def pending(self, name: str) -> int:
        return len(self._pending.get(name, ()))

    def state(self, name: str) -> Any:
        """View `name`'s state, loading it first when it is deferred."""
        loader = self.deferred.get(name)
        if loader is not None:
            state = loader()
            view = next(v for v in self.views if v.name == name)
            for event in self._pending.pop(name, ()):
                view.apply(state, event)
            self.states[name] = state
            del self.deferred[name]
        return self.states[name]

    def apply(self, event: Event) -> bool:
        if self._seen_loader is not None:
            self.seen, self._seen_loader = self._seen_loader(), None
        if event.id in self.seen:
            self.duplicates += 1
            return False
        self.seen.add(event.id)
        self.count += 1
        self.per_writer[event.writer] = self.per_writer.get(event.writer, 0) + 1
        if event.seq > self.last_seq.get(event.writer, 0):
            self.last_seq[event.writer] = event.seq
        if event.hlc > self.max_hlc:
            self.max_hlc = event.hlc
        deferred = self.deferred
        for view in self.views:
            if deferred and view.name in deferred:
                self._pending.setdefault(view.name, []).append(event)
            else:
                view.apply(self.states[view.name], event)
        return True

    def apply_all(self, events: Iterable[Event]) -> None:
        for event in events:
            self.apply(event)
