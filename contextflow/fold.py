"""Folding events into views. Pure: no I/O here.

A view is an object with a `name`, an `initial()` state and an `apply(state, event)` that
updates that state in place. `apply` may look only at the state and the event, and the
state after folding a set of events must not depend on the order they came in: keep
"latest" values by `Event.key`, never by arrival. Tests fold in every order to hold this.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from contextflow.events import Event


class View(Protocol):
    name: str

    def initial(self) -> Any: ...

    def apply(self, state: Any, event: Event) -> None: ...


class Fold:
    """The states of a set of views over a set of events; each event id applies once."""

    def __init__(self, views: Sequence[View]) -> None:
        self.views = list(views)
        self.states: dict[str, Any] = {view.name: view.initial() for view in self.views}
        self.seen: set[str] = set()
        self.duplicates = 0
        self.last_seq: dict[str, int] = {}
        self.max_hlc = 0

    @property
    def count(self) -> int:
        return len(self.seen)

    def apply(self, event: Event) -> bool:
        if event.id in self.seen:
            self.duplicates += 1
            return False
        self.seen.add(event.id)
        if event.seq > self.last_seq.get(event.writer, 0):
            self.last_seq[event.writer] = event.seq
        if event.hlc > self.max_hlc:
            self.max_hlc = event.hlc
        for view in self.views:
            view.apply(self.states[view.name], event)
        return True

    def apply_all(self, events: Iterable[Event]) -> None:
        for event in events:
            self.apply(event)
