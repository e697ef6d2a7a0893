"""The timeline's pure fold as a test oracle: the whole view folded in memory (`tests/folding.py`) and read by
the same core functions the tables' slices serve, for a store that shares no machine-local state."""

from __future__ import annotations

import bisect
import contextlib
import dataclasses
import heapq
from collections.abc import Iterator

import pytest

from contextflow.app import App
from contextflow.core.events import OrderKey
from contextflow.timeline import stored
from contextflow.timeline.view import Thread, TimelineState, TimelineView
from tests.folding import view_of


class Folded(stored.Slice):
    """Every thread and thought, folded whole: nothing is read on an ask."""

    def __init__(self, app: App) -> None:
        TimelineState.__init__(self)
        whole = view_of(app.store, TimelineView)
        for found in dataclasses.fields(TimelineState):
            setattr(self, found.name, getattr(whole, found.name))
        self.counts: dict[str, int] = {}

    def thread(self, thread_id: str) -> Thread | None:
        return TimelineState.thread(self, thread_id)

    def thought(self, thought_id: str):  # type: ignore[no-untyped-def]
        return TimelineState.thought(self, thought_id)

    def show(self, thread_id: str) -> Thread | None:
        self.counts[thread_id] = len(self.thread_thoughts.get(thread_id, []))
        return self.thread(thread_id)

    def whole(self, thread_id: str) -> None:
        pass

    def candidates(self, what: str, wanted: str) -> list[str]:
        ids = self.thread_ids if what == "thread" else self.thought_ids
        start = bisect.bisect_left(ids, wanted)
        return ids[start : start + stored.CANDIDATES]


def _recent(found: Folded, status: str | None, count: int) -> list[Thread]:
    """Up to `count` threads of `status` (else all), most recently active first."""

    def last_active(thread: Thread) -> tuple[OrderKey, str]:
        return (found.activity.get(thread.id) or thread.updated, thread.id)

    ids = found.by_status[status] if status else found.thread_ids
    shown = heapq.nlargest(max(count, 0), (found.threads[i] for i in ids), key=last_active)
    return [thread for thread in shown if found.show(thread.id) is not None]


def fold_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make a store that shares no machine-local state (`shares_state=False`) read the whole fold."""
    reading, recent, count = stored.reading, stored.recent, stored.thread_count

    @contextlib.contextmanager
    def folded_or_read(app: App) -> Iterator[stored.Slice]:
        if app.store.shares_state:
            with reading(app) as found:
                yield found
        else:
            yield Folded(app)

    monkeypatch.setattr(stored, "reading", folded_or_read)
    monkeypatch.setattr(
        stored, "recent", lambda found, s, n: _recent(found, s, n) if isinstance(found, Folded) else recent(found, s, n)
    )
    monkeypatch.setattr(
        stored,
        "thread_count",
        lambda found, s: len(found.by_status[s]) if isinstance(found, Folded) else count(found, s),
    )
