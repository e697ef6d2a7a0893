"""Folding events into views. Pure: no I/O here.

A view has a `name`, an `initial()` state and an `apply(state, event)` that updates that state
in place, looking only at the state and the event. The state after folding a set of events must
not depend on their order: keep "latest" values by `Event.key`, never by arrival (tests fold in
every order). Compaction asks each view which events it no longer needs (`Compactable`).

Bounds (`clock.bound` events, the one kind the fold itself reads): a writer that finds events
stamped beyond the drift bound of its wall clock names them in a bound before its next write, and
every fold then orders each named event just before the bound (its stamp becomes the bound's minus
one, when that is lower). So a stamp in year 9000 cannot win over later writes, the same way on
every machine: the result depends only on the set of events. A bound read after an event it lowers
was already applied leaves the fold `stale`; the store folds again with the bounds known (`caps`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Collection, Hashable, Iterable, Mapping, Sequence
from typing import Any, Protocol, TypeVar, runtime_checkable

from contextflow.core.events import Event, OrderKey

BOUND_KIND = "clock.bound"  # data: {"ids": [event ids whose stamps lie beyond the drift bound]}


class View(Protocol):
    name: str

    def initial(self) -> Any: ...

    def apply(self, state: Any, event: Event) -> None: ...


S = TypeVar("S", covariant=True)


class Folds(Protocol[S]):
    """A view class as `Store.view` takes it: `store.view(SessionsView)` is a `SessionsState`."""

    name: str

    def initial(self) -> S: ...


@runtime_checkable
class Compactable(Protocol):
    """Optional for a view: which events of one log it can do without (without it, compaction drops nothing).

    `unneeded(events)` gets every event of one writer's log (in file order) and maps each event
    this view does not need to the data fields it still needs kept: `()` lets it go entirely,
    fields keep it reduced to them (an overwritten record still counts as a version). Events left
    out are kept whole; events of kinds the view does not fold are unneeded by it.

    What keeps merges correct: an event is unneeded only when events *in the same list* supersede
    it (by `Event.key`) whatever other writers have written or will write, since the log is
    rewritten in one atomic rename and its superseding events travel with it. A view must not
    care whether an event it calls unneeded is absent or reduced to fields another view keeps.
    """

    def unneeded(self, events: Sequence[Event]) -> Mapping[str, tuple[str, ...]]: ...


def overwritten(events: Sequence[Event], writes: Callable[[Event], Collection[Hashable]]) -> set[str]:
    """Ids of events each of whose last-writer-wins slots (`writes(event)`, e.g. one field of one node)
    a later event (by key) in `events` writes again; an event writing none is never overwritten."""
    latest: dict[Hashable, OrderKey] = {}
    for event in events:
        for slot in writes(event):
            if slot not in latest or event.key > latest[slot]:
                latest[slot] = event.key
    return {
        event.id for event in events if (slots := writes(event)) and all(latest[slot] > event.key for slot in slots)
    }


class LazyView:
    """A view known by name whose class (`"module:Class"`) is imported when it first folds or loads,
    so a process that folds two views imports only those two."""

    def __init__(self, name: str, path: str) -> None:
        self.name, self.path = name, path
        self._view: View | None = None

    def resolve(self) -> View:
        if self._view is None:
            module, _, attr = self.path.partition(":")
            self._view = getattr(importlib.import_module(module), attr)()
        return self._view

    def initial(self) -> Any:
        return self.resolve().initial()

    def apply(self, state: Any, event: Event) -> None:
        self.resolve().apply(state, event)

    def __getattr__(self, attr: str) -> Any:  # `version`, `unneeded`, ...
        if attr.startswith("_"):
            raise AttributeError(attr)
        return getattr(self.resolve(), attr)


def resolved(view: View) -> View:
    """The view itself, its class imported first when it is a `LazyView`."""
    return view.resolve() if isinstance(view, LazyView) else view


class Fold:
    """The states of a set of views over a set of events; each event id applies once.

    A state may be *deferred*: a loader called when it is first needed (a view folds only once it
    is read). Events arriving meanwhile are applied once it loads. A deferred `LazyView` is imported
    only then.
    """

    def __init__(
        self,
        views: Sequence[View],
        deferred: Mapping[str, Callable[[], Any]] | None = None,
        caps: Mapping[str, int] | None = None,
    ) -> None:
        self.deferred: dict[str, Callable[[], Any]] = dict(deferred or {})
        self.views = [view if view.name in self.deferred else resolved(view) for view in views]
        self.states: dict[str, Any] = {v.name: v.initial() for v in self.views if v.name not in self.deferred}
        self.seen: set[str] = set()
        self.count = 0
        self.duplicates = 0
        self.last_seq: dict[str, int] = {}
        self.per_writer: dict[str, int] = {}  # events per writer id; more than its last seq: two machines share it
        self.max_hlc = 0
        # bounds: the highest stamp each named event may order at; `caps` is what applying uses (those
        # known in advance, from an earlier fold, plus those read), `bound_caps` only those read
        self.caps: dict[str, int] = dict(caps or {})
        self.bound_caps: dict[str, int] = {}
        self.bounded: dict[str, int] = {}  # events a bound lowered, per writer
        self.stale = False  # a bound lowered an event already applied: fold again with `bound_caps` known
        self._pending: dict[str, list[Event]] = {}

    def pending(self, name: str) -> int:
        return len(self._pending.get(name, ()))

    def state(self, name: str) -> Any:
        """View `name`'s state, loading it first when it is deferred."""
        loader = self.deferred.get(name)
        if loader is not None:
            state = loader()
            index = next(i for i, v in enumerate(self.views) if v.name == name)
            view = self.views[index] = resolved(self.views[index])
            for event in self._pending.pop(name, ()):
                view.apply(state, event)
            self.states[name] = state
            del self.deferred[name]
        return self.states[name]

    def known(self, ids: Iterable[str]) -> set[str]:
        """Those of `ids` already applied."""
        return {event_id for event_id in ids if event_id in self.seen}

    def apply(self, event: Event) -> bool:
        if event.id in self.seen:
            self.duplicates += 1
            return False
        self.seen.add(event.id)
        if event.kind == BOUND_KIND:
            self._bound(event)  # by its stamp as written, whatever bounds it: bounds never chain
        if self.caps:
            cap = self.caps.get(event.id)
            if cap is not None and event.hlc > cap:
                event = Event(event.id, event.writer, event.seq, cap, event.kind, event.data)
                self.bounded[event.writer] = self.bounded.get(event.writer, 0) + 1
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

    def _bound(self, bound: Event) -> None:
        """Order every event `bound` names just before it (never later than it was)."""
        ids = bound.data.get("ids")
        cap = max(bound.hlc - 1, 0)
        for event_id in ids if isinstance(ids, list) else ():
            if not isinstance(event_id, str) or event_id == bound.id:
                continue
            if cap < self.bound_caps.get(event_id, cap + 1):
                self.bound_caps[event_id] = cap
            if cap < self.caps.get(event_id, cap + 1):
                self.caps[event_id] = cap
                if event_id in self.seen:  # already applied at its own stamp
                    self.stale = True

    @property
    def exact(self) -> bool:
        """Whether every event was applied at the stamp its bounds give it."""
        return not self.stale and self.caps == self.bound_caps
