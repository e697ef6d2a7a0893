"""Stamps beyond the drift bound: noticing them, bounding them, and confirming a write is seen.

A line stamped further ahead of this machine's wall clock than `clock.MAX_DRIFT_MS` (a broken
clock, or a hostile line stamped in year 9000) would win every last-writer-wins slot against every
later write, on every machine. The store notes such events as it reads them (`Segment.ahead`); its
next append starts with a `clock.bound` naming them, and every reader orders a named event just
before that bound (scan.py), so the append and all later writes order after it, the same on every
machine. A bound can only move the events it names earlier, and names only events that exist, so a
forged one cannot pin anything either.

`confirm` is for a write whose whole point is that readers see it (a context record set or
deleted, a handoff): when the view shows another event in its place, stamped ahead of this
machine's clock, the store learns it, bounds it and writes again; when even that fails, the write
is reported as not seen, naming the writer that blocks it, instead of as saved.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, NamedTuple

from contextflow.core.clock import MAX_DRIFT_MS, stamp_from_ms, stamp_iso, stamp_ms
from contextflow.core.errors import StoreError
from contextflow.core.timeutil import now_ms

if TYPE_CHECKING:
    from contextflow.core.events import Event
    from contextflow.core.scan import Scan
    from contextflow.core.segments import Segment
    from contextflow.core.store import Store

MAX_BOUND_IDS = 1000  # ids one bound names (the furthest ahead first); the rest wait for the next write
MAX_AHEAD_TRACKED = 10_000  # future-stamped event ids remembered per log
CONFIRM_TRIES = 3


def horizon(now: int | None = None) -> int:
    """The highest stamp a line may carry without being ahead of this machine beyond the drift bound."""
    return stamp_from_ms((now_ms() if now is None else now) + MAX_DRIFT_MS) | 0xFFFF


def unbounded(segments: Iterable[Segment], caps: dict[str, int], limit: int | None = None) -> list[str]:
    """Ids of events read beyond the horizon that no bound names yet, the furthest ahead first;
    events bounded or no longer ahead are forgotten."""
    edge = horizon()
    found: list[tuple[int, str]] = []
    for segment in segments:
        for event_id, stamp in list(segment.ahead.items()):
            if stamp <= edge or event_id in caps:
                del segment.ahead[event_id]
            else:
                found.append((stamp, event_id))
    found.sort(reverse=True)
    return [event_id for _, event_id in found[: MAX_BOUND_IDS if limit is None else limit]]


def waiting(segments: list[Segment], scan: Scan) -> dict[str, int]:
    """Per log's writer: events read beyond the drift bound that no bound names yet."""
    pending = set(unbounded(segments, scan.caps, MAX_AHEAD_TRACKED))
    found: dict[str, int] = {}
    for segment in segments:
        if count := sum(event_id in pending for event_id in segment.ahead):
            found[segment.writer] = found.get(segment.writer, 0) + count
    return found


class Winner(NamedTuple):
    """The event a reader sees in a slot: its id, writer and (ordering) stamp."""

    id: str
    writer: str
    hlc: int


def confirm(store: Store, write: Callable[[], Event], shown: Callable[[Event], Winner | None], what: str) -> Event:
    """`write()` and make sure readers see it: `shown(event)` is the event they see in its place
    (None when they see this one). One stamped ahead of this machine's clock is learned (read,
    bounded when beyond the drift bound) and the write made again; a genuinely newer write by
    another machine is no failure, nor a check the derived tables cannot answer now (the write is in the log).
    Raises StoreError naming the blocking writer when it still wins."""
    event = write()
    for attempt in range(CONFIRM_TRIES):
        try:
            winner = shown(event)
        except StoreError:  # the derived tables cannot be read now (another process locks them): the write is made
            return event
        if winner is None or stamp_ms(winner.hlc) <= now_ms():  # seen, or another machine wrote later
            return event
        if attempt == CONFIRM_TRIES - 1:
            raise StoreError(_blocked(what, event, winner))
        store.refresh()  # reads the blocking event: the clock follows it (within the drift bound)
        store.append_many([])  # bounds whatever is ahead beyond the drift bound
        event = write()
    raise AssertionError("unreachable")


def _blocked(what: str, event: Event, winner: Winner) -> str:
    ahead = (stamp_ms(winner.hlc) - now_ms()) // 60_000
    return (
        f"{what} was written (id {event.id}) but readers still see event {winner.id} of writer "
        f"{winner.writer}, stamped {stamp_iso(winner.hlc)} ({ahead} minutes ahead of this machine's clock). "
        "Run `contextflow doctor`: it names every writer with future-stamped events. Fix that machine's "
        f"clock, or if no machine of yours is {winner.writer}, remove events.{winner.writer}.jsonl from the "
        "store on every machine, then write again"
    )
