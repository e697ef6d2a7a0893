"""What the store learns reading every log, without folding any view: the event ids seen, events and last
seq per writer, the newest stamp, and the clock bounds. Pure: no I/O here.

A view of the logs is never folded in memory at run time: every read queries the projections' tables
(`core/tables.py`). What still reads every log is `Store.refresh` (doctor's health, writer counts,
duplicates, and the bounds a write must name), through a `Scan`.

Bounds (`clock.bound` events): a writer that finds events stamped beyond the drift bound of its wall
clock names them in a bound before its next write, and every reader then orders each named event just
before the bound (its stamp becomes the bound's minus one, when that is lower). So a stamp in year 9000
cannot win over later writes, the same way on every machine: the result depends only on the set of
events. A bound read after an event it lowers was already counted leaves the scan `stale`; the store
reads again with the bounds known (`caps`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable, Mapping, Sequence

from contextflow.core.events import Event, OrderKey

BOUND_KIND = "clock.bound"  # data: {"ids": [event ids whose stamps lie beyond the drift bound]}

# What a projection can do without (`Projection.unneeded`), asked by compaction (`core/compact.py`): given
# every event of one writer's log (in file order), each event it does not need mapped to the data fields it
# still needs kept: `()` lets it go entirely, fields keep it reduced to them (an overwritten record still
# counts as a version). Events left out are kept whole; events of kinds it does not read are unneeded by it.
# An event is unneeded only when events *in the same list* supersede it (by `Event.key`), whatever other
# writers have written or will write: the log is rewritten in one atomic rename and its superseding events
# travel with it. It must not care whether an event it calls unneeded is absent or reduced to fields another
# projection keeps.
Unneeded = Callable[[Sequence[Event]], Mapping[str, tuple[str, ...]]]


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


def bounded(event: Event, caps: Mapping[str, int]) -> Event:
    """`event` at the stamp its bounds give it (itself when none lowers it)."""
    cap = caps.get(event.id)
    return (
        Event(event.id, event.writer, event.seq, cap, event.kind, event.data)
        if cap is not None and event.hlc > cap
        else event
    )


class Scan:
    """What a set of events holds beside its views: each event id counted once, per writer, bounds applied."""

    def __init__(self, caps: Mapping[str, int] | None = None) -> None:
        self.seen: set[str] = set()
        self.count = 0
        self.duplicates = 0
        self.last_seq: dict[str, int] = {}
        self.per_writer: dict[str, int] = {}  # events per writer id; more than its last seq: two machines share it
        self.max_hlc = 0
        # bounds: the highest stamp each named event may order at; `caps` is what applying uses (those
        # known in advance, from an earlier scan, plus those read), `bound_caps` only those read
        self.caps: dict[str, int] = dict(caps or {})
        self.bound_caps: dict[str, int] = {}
        self.bounded: dict[str, int] = {}  # events a bound lowered, per writer
        self.stale = False  # a bound lowered an event already counted: scan again with `bound_caps` known

    def apply(self, event: Event) -> Event | None:
        """`event` at the stamp its bounds give it, or None when its id was counted before."""
        if event.id in self.seen:
            self.duplicates += 1
            return None
        self.seen.add(event.id)
        if event.kind == BOUND_KIND:
            self._bound(event)  # by its stamp as written, whatever bounds it: bounds never chain
        if self.caps and (lowered := bounded(event, self.caps)) is not event:
            event = lowered
            self.bounded[event.writer] = self.bounded.get(event.writer, 0) + 1
        self.count += 1
        self.per_writer[event.writer] = self.per_writer.get(event.writer, 0) + 1
        if event.seq > self.last_seq.get(event.writer, 0):
            self.last_seq[event.writer] = event.seq
        if event.hlc > self.max_hlc:
            self.max_hlc = event.hlc
        return event

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
                if event_id in self.seen:  # already counted at its own stamp
                    self.stale = True

    @property
    def exact(self) -> bool:
        """Whether every event was counted at the stamp its bounds give it."""
        return not self.stale and self.caps == self.bound_caps
