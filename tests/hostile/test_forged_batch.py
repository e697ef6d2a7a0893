"""A batch header is a claim, not a fact: a batch is complete when its commit line arrives, whatever its
begin line says about its size; only what lies between a begin and its commit can be held back. A begin
line another machine forged (claiming 10^12 bytes) never hides that machine's later writes for good, and
one planted in this machine's own log never makes a write move complete lines to quarantine."""

from __future__ import annotations

from pathlib import Path

from contextflow.app import App
from contextflow.core import log
from contextflow.core.events import decode
from tests.hostile.helpers import line, plant

HUGE = b'{"batch":"begin","id":"forged","events":1000000000000,"bytes":1000000000000}\n'


def texts(path: Path) -> list[str]:
    return [str(decode(raw, n).data.get("text")) for n, raw in log.read_new(path, None).lines]


def test_a_forged_huge_header_hides_nothing_past_the_writers_next_batch(store_dir: Path) -> None:
    first, *between = [line(writer="evil", seq=n) for n in range(1, 7)]
    later = [line(writer="evil", seq=n) for n in range(7, 9)]
    begin, commit = (
        b'{"batch":"begin","id":"real","events":2,"bytes":%d}\n' % sum(map(len, later)),
        b'{"batch":"commit","id":"real","events":2}\n',
    )
    after = line(writer="evil", seq=9)
    path = plant(store_dir, "events.evil.jsonl", first, HUGE, *between, begin, *later, commit, after)
    shown = texts(path)
    assert shown[0] == "from evil #1" and shown[-3:] == ["from evil #7", "from evil #8", "from evil #9"]
    assert App.open().store.event_count == len(shown)


def test_a_batch_is_complete_when_its_commit_arrives_whatever_its_header_claims(store_dir: Path) -> None:
    body = [line(writer="evil", seq=n) for n in range(1, 4)]
    begin = b'{"batch":"begin","id":"b1","events":3,"bytes":1000000000000}\n'
    commit = b'{"batch":"commit","id":"b1","events":3}\n'
    path = plant(store_dir, "events.evil.jsonl", begin, *body)
    assert texts(path) == []  # no commit yet: a write in progress, held back
    plant(store_dir, "events.evil.jsonl", commit)
    assert texts(path) == ["from evil #1", "from evil #2", "from evil #3"]


def test_a_header_planted_in_this_machines_log_never_moves_complete_lines_to_quarantine(
    app: App, store_dir: Path
) -> None:
    app.store.append("note", {"project": "shared", "session_id": "s1", "agent": "me", "text": "mine"})
    own = app.store.log_writer.path
    real = [line(writer=app.store.writer, seq=n) for n in range(2, 7)]
    plant(store_dir, own.name, HUGE, *real)
    before = own.read_bytes()
    app.close()
    again = App.open()
    event = again.store.append("note", {"project": "shared", "session_id": "s1", "agent": "me", "text": "next"})
    again.close()
    assert own.read_bytes().startswith(before), "every complete line stays in the log"
    quarantined = list((store_dir / log.QUARANTINE_DIR).glob("*")) if (store_dir / log.QUARANTINE_DIR).exists() else []
    assert quarantined == []
    assert "next" in texts(own) and "mine" in texts(own)
    assert event.seq > 1
