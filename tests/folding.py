"""The tests' oracle: a view folded whole in memory from a store folder's logs (contextflow itself folds no
view at run time: every read queries the projections' tables, `core/tables.py`).

`view_of(store, SessionsView)` (or a view's name, `view_of(store, "sessions")`) reads every log of the
store's folder as the store reads it (`log.read_new`, `events.decode`, each field checked as the store's
`fields` say; a legacy file over its size limit is not read), counts each event id once and applies the
clock bounds the logs hold the way the store's scan does (`core/scan.py`), and folds the view. A folding
is kept per store and view: a later call reads only the logs' new bytes, and a log that no longer continues
what was read (compacted, replaced) is read again from the start. `fold(views, events)` is the same fold
over a given list of events (the order-independence properties).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar, overload

from contextflow.core import legacy
from contextflow.core.events import BadLine, Event, decode
from contextflow.core.fields import Schema, conform
from contextflow.core.log import Position, list_segments, read_new
from contextflow.core.scan import Scan
from contextflow.core.store import Store


class View(Protocol):
    """A pure fold: `apply(state, event)` updates `initial()`'s state in place; the state after a set of
    events must not depend on their order (the properties fold them in every order)."""

    name: str

    def initial(self) -> Any: ...

    def apply(self, state: Any, event: Event) -> None: ...


S = TypeVar("S", covariant=True)


class Folds(Protocol[S]):
    """A view class: `view_of(store, SessionsView)` is a `SessionsState`."""

    name: str

    def initial(self) -> S: ...

    def apply(self, state: Any, event: Event) -> None: ...


def views() -> dict[str, Callable[[], View]]:
    """Every view the tests fold, by name (imported when first asked for)."""
    from contextflow.conversations.view import ConversationsView
    from contextflow.graph.view import GraphView
    from contextflow.records.view import RecordsView
    from contextflow.timeline.view import TimelineView
    from tests.capture_oracle import ActivityView
    from tests.sessions_fold import SessionsView

    found: list[Callable[[], View]] = [
        SessionsView,
        ActivityView,
        RecordsView,
        TimelineView,
        ConversationsView,
        GraphView,
    ]
    return {view().name: view for view in found}


def all_views() -> list[View]:
    """A fresh instance of every view."""
    return [make() for make in views().values()]


def fold(views: Sequence[View], events: Iterable[Event]) -> dict[str, Any]:
    """Each view's state after `events` (each id once, bounds applied as the store's scan applies them: when
    a bound came after an event it lowers, folded again knowing it), by view name."""
    events, caps = list(events), dict[str, int]()
    for _ in range(3):
        scan, states = Scan(caps), {view.name: view.initial() for view in views}
        for event in events:
            if (found := scan.apply(event)) is not None:
                for view in views:
                    view.apply(states[view.name], found)
        if scan.exact:
            return states
        caps = dict(scan.bound_caps)
    raise AssertionError("the bounds never settled")


class Folding:
    """One view folded from a store folder's logs, kept current by reading their new bytes."""

    def __init__(self, store: Store, view: View) -> None:
        self.store, self.view = store, view
        self._start({})

    def _start(self, caps: dict[str, int]) -> None:
        self.scan, self.state = Scan(caps), self.view.initial()
        self.positions: dict[Path, Position] = {}

    def current(self) -> Any:
        paths = self._paths()
        if any(path not in paths for path in self.positions) or not all(map(self._read, paths)) or self.scan.stale:
            caps = dict(self.scan.bound_caps)
            for _ in range(3):  # as the store's scan: again with the bounds known, till they hold
                self._start(caps)
                for path in paths:
                    self._read(path)
                if self.scan.exact:
                    break
                caps = dict(self.scan.bound_caps)
        return self.state

    def _paths(self) -> list[Path]:
        store = self.store
        found = list_segments(store.folder, store.location.legacy_files)
        return [
            path for path in found if not legacy.oversize(path, store.location.legacy_files, store.legacy_max_bytes)
        ]

    def _read(self, path: Path) -> bool:
        """Fold what `path` gained; False when it no longer continues what was read."""
        try:
            chunk = read_new(path, self.positions.get(path))
        except FileNotFoundError:
            return path not in self.positions
        if chunk.reset:
            return False
        self.positions[path] = chunk.position
        schema: Schema = self.store.fields
        for line_no, raw in chunk.lines:
            try:
                event = decode(raw, line_no)
            except BadLine:
                continue
            data, dropped = conform(schema, event.kind, event.data)
            if dropped:
                event = event._replace(data=data)
            if (found := self.scan.apply(event)) is not None:
                self.view.apply(self.state, found)
        return True


_FOLDINGS: weakref.WeakKeyDictionary[Store, dict[str, Folding]] = weakref.WeakKeyDictionary()


@overload
def view_of(store: Store, view: type[Folds[S]]) -> S: ...


@overload
def view_of(store: Store, view: str | View) -> Any: ...


def view_of(store: Store, view: type[Folds[Any]] | str | View) -> Any:
    """The whole fold of `view` over `store`'s logs: a view class or a name of `views()` (its folding is kept
    for the next call), or an instance (folded afresh)."""
    if not isinstance(view, (str, type)):
        return Folding(store, view).current()
    made: View = views()[view]() if isinstance(view, str) else view()
    kept = _FOLDINGS.setdefault(store, {})
    key = f"{type(made).__module__}.{type(made).__qualname__}"
    if key not in kept:
        kept[key] = Folding(store, made)
    return kept[key].current()
