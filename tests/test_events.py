import orjson
import pytest

from contextflow.core.clock import HybridClock, stamp_iso
from contextflow.core.events import LEGACY_WRITER, BadLine, Event, decode, encode


def test_an_event_survives_a_round_trip_through_its_line():
    event = Event("abc", "w", 3, 12345 << 16, "note", {"text": "héllo\nworld"})
    line = encode(event)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert decode(line[:-1]) == event


def test_a_contextflowmcp_line_reads_as_a_legacy_event():
    line = orjson.dumps(
        {
            "id": "u-1",
            "ts": "2025-03-01T10:00:00.000Z",
            "kind": "handoff",
            "project": "p",
            "agent": "claude",
            "session_id": "s",
            "summary": "done",
            "next_steps": ["x"],
        }
    )
    event = decode(line, 7)
    assert (event.id, event.writer, event.kind, event.ts) == (
        "u-1",
        LEGACY_WRITER,
        "handoff",
        "2025-03-01T10:00:00.000Z",
    )
    assert event.data["next_steps"] == ["x"] and event.data["session_id"] == "s"


@pytest.mark.parametrize(
    "line",
    [
        b"not json",
        b"[1,2]",
        b'{"v":1,"id":"x"}',
        b'{"v":1,"id":"x","w":"w","seq":"1","hlc":1,"kind":"k","data":{}}',
        b'{"kind":"other","ts":"2025-01-01"}',
        b'{"kind":"note","ts":"yesterday"}',
    ],
)
def test_lines_that_are_not_events_are_rejected_with_a_reason(line):
    with pytest.raises(BadLine):
        decode(line)


def test_a_clock_never_runs_backwards_behind_a_stamp_it_has_seen():
    clock = HybridClock(now_ms=lambda: 1_000)
    clock.observe(5_000 << 16)  # another machine, four seconds ahead
    first, second = clock.tick(), clock.tick()
    assert 5_000 << 16 < first < second


def test_stamps_render_as_utc_iso_times():
    assert stamp_iso(1_700_000_000_123 << 16) == "2023-11-14T22:13:20.123Z"
