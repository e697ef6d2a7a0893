"""Views depend only on the set of events: not on file order, chunking or incremental reads."""

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from contextflow.core.events import Event
from contextflow.core.locate import Location
from contextflow.core.store import Store
from tests import folding
from tests.folding import all_views, view_of

WRITERS = ("alpha", "beta", "gamma")

entry = st.builds(
    lambda writer, kind, project, session, text, ms: (writer, kind, project, session, text, ms),
    st.sampled_from(WRITERS),
    st.sampled_from(("note", "handoff")),
    st.sampled_from(("shared", "web")),
    st.sampled_from(("", "s1", "s2", "s3")),
    st.text(max_size=12),
    st.integers(min_value=1_600_000_000_000, max_value=1_600_000_100_000),
)


def to_events(rows: list[tuple[str, str, str, str, str, int]]) -> list[Event]:
    seqs: dict[str, int] = {}
    events = []
    for n, (writer, kind, project, session, text, ms) in enumerate(rows):
        seqs[writer] = seqs.get(writer, 0) + 1
        field = "text" if kind == "note" else "summary"
        data = {"project": project, "agent": writer, field: text, **({"session_id": session} if session else {})}
        events.append(Event(f"id{n}", writer, seqs[writer], ms << 16, kind, data))
    return events


def fold(events: list[Event]) -> dict:
    return folding.fold(all_views(), events)


@settings(max_examples=60, deadline=None)
@given(st.lists(entry, max_size=30), st.randoms(use_true_random=False))
def test_folding_in_any_order_gives_the_same_views(rows, rng):
    events = to_events(rows)
    shuffled = list(events)
    rng.shuffle(shuffled)
    assert fold(shuffled) == fold(events)


@settings(max_examples=40, deadline=None)
@given(st.lists(entry, max_size=30), st.integers(min_value=0, max_value=30))
def test_folding_twice_or_in_chunks_gives_the_same_views(rows, cut):
    events = to_events(rows)
    chunked = [*events[:cut], *events[cut:], *events]  # in two chunks, then again: duplicates apply once
    assert fold(chunked) == fold(events)


@settings(max_examples=15, deadline=None)
@given(st.lists(entry, min_size=1, max_size=20))
def test_incremental_reads_after_each_append_match_a_full_fold(rows):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        location = Location(root / "store", "test")
        stores = {w: Store(location, w, root / "state" / w, shares_state=False) for w in WRITERS}
        watcher = Store(location, "watcher", root / "state" / "watcher", shares_state=False)
        for writer, kind, project, session, text, _ms in rows:
            field = "text" if kind == "note" else "summary"
            data = {"project": project, "agent": writer, field: text, **({"session_id": session} if session else {})}
            stores[writer].append(kind, data)
            view_of(watcher, "sessions")  # incremental: only the new line
        fresh = Store(location, "fresh", root / "state" / "fresh", shares_state=False)
        assert view_of(watcher, "sessions") == view_of(fresh, "sessions")
