"""Context records and saved conversations read from their tables on disk (records/projection.py,
conversations/projection.py) answer as the whole folds do: random writes of two writers, read in batches of
any size, sets after deletes, expiry, categories, threads, pins, key prefixes, several projects; and a
call reads only the rows it shows."""

from __future__ import annotations

import random
from typing import Any

import pytest

from contextflow.app import App
from contextflow.conversations import core as conversations
from contextflow.conversations.stored import StoredConversations
from contextflow.conversations.view import ConversationsState
from contextflow.core import catchup
from contextflow.core.clock import stamp_from_ms
from contextflow.core.errors import InputError, NotFoundError
from contextflow.core.events import Event
from contextflow.records import core as records
from contextflow.records.stored import StoredRecords
from tests.folding import view_of
from tests.raw import write_events
from tests.records_oracle import fold_whole
from tests.test_own_writes_while_building import building_elsewhere

BASE_MS = 1_767_225_600_000  # 2026-01-01
KEYS = ["pr:web:1", "pr:web:2", "waiting:review", "fact:nas", "machine:chisel", "todo:docs", "waiting:deploy"]
PROJECTS = ["web", "api", None]


def _events(seed: int, count: int) -> list[Event]:
    rng = random.Random(seed)
    made: list[Event] = []
    seqs = {"wx": 0, "wy": 0}
    for n in range(count):
        writer = rng.choice(["wx", "wy"])
        seqs[writer] += 1
        stamp = stamp_from_ms(BASE_MS + rng.randrange(10 * 86_400_000)) + n
        project = rng.choice(PROJECTS)
        where = {"project": project} if project else {}
        pick = rng.random()
        if pick < 0.6:
            data: dict = {"key": rng.choice(KEYS), **where, "value": {"n": n}}
            if rng.random() < 0.5:
                data["category"] = rng.choice(["waiting", "fact", "pr", "todo"])
            if rng.random() < 0.3:
                data["thread_id"] = rng.choice(["t1", "t2"])
            if rng.random() < 0.3:
                data["pinned"] = rng.random() < 0.5
            if rng.random() < 0.3:
                data["expires_at"] = f"2026-01-{rng.randrange(1, 12):02d}T00:00:00Z"
            kind = "context.set"
        elif pick < 0.75:
            kind, data = "context.delete", {"key": rng.choice(KEYS), **where}
        else:
            cid = f"conv-{rng.randrange(6)}"
            kind = "conversation.save"
            data = {"conversation_id": cid, **where, "source": "test", "summary": f"summary {n}", "title": f"t{n}"}
        made.append(Event(f"e{n:05d}{rng.getrandbits(32):08x}"[:16], writer, seqs[writer], stamp, kind, data))
    return made


def _reads(app: App) -> list[object]:
    """Every read of records and conversations, at three moments."""
    from datetime import UTC, datetime

    found: list[object] = []
    for day in (2, 6, 15):
        now = datetime(2026, 1, day, tzinfo=UTC)
        for args in (
            {},
            {"category": "waiting"},
            {"pinned_only": True},
            {"prefix": "pr:"},
            {"project": "web", "since_days": 0},
            {"since_days": 3, "limit": 3},
            {"category": "fact", "prefix": "fact:", "limit": 1},
        ):
            found.append([(r.identity, r.event_id) for r in records.list_records(app, now=now, **args)])
            counted: dict[str, Any] = {"limit": 4, **args}
            found.append(records.records_left_out(app, None, now=now, **counted))
        found.append([r.event_id for r in records.pinned_records(app, now)])
        found.append([r.event_id for r in records.waiting_records(app, now)])
        for key in KEYS:
            try:
                found.append(records.get_record(app, key=key, now=now).event_id)
            except (InputError, NotFoundError) as exc:
                found.append(str(exc))
    for project in (None, "web", "shared"):
        found.append(
            [(e.event.id, e.first_key, e.versions) for e in conversations.list_conversations(app, project=project)]
        )
    for cid in ("conv-1", "conv", "conv-9"):
        try:
            entry = conversations.find_conversation(app, cid)
            found.append((entry.event.id, entry.first_ts, entry.versions))
        except (InputError, NotFoundError) as exc:
            found.append(str(exc))
    return found


@pytest.mark.parametrize("seed", range(5))
def test_the_tables_answer_every_read_as_the_folds_do(app: App, seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Read while the tables hold part of the logs (a build elsewhere has not reached the rest: the rows of
    the logs' remaining bytes fold onto the tables' by key), then once they hold them all: every read says
    what the whole folds say."""
    monkeypatch.setattr(catchup, "READ_BYTES", 300 + seed * 700)  # chunks of one to a few dozen events
    events = _events(seed, 300)
    half = random.Random(seed).randrange(len(events))
    write_events(app.store.folder, events[:half])
    records.records_state(app)  # built part way
    building_elsewhere(monkeypatch)
    write_events(app.store.folder, events[half:])
    fold_whole(monkeypatch)
    expected = _reads(App.open(shares_state=False))
    assert _reads(app) == expected
    assert not app.tables().serves(("records-state",)) or half == len(events)
    never_folded(monkeypatch)
    assert _reads(app) == expected
    monkeypatch.setattr(catchup, "BACKGROUND_BYTES", 1 << 40)  # the build is done: the tables answer alone
    assert _reads(app) == expected and app.tables().current()
    assert isinstance(records.records_state(app), StoredRecords)
    assert isinstance(conversations.conversations_state(app), StoredConversations)


def never_folded(monkeypatch: pytest.MonkeyPatch) -> None:
    """A read of every log (`Store.refresh`, or a projection's whole state loaded) fails the test."""
    from contextflow.core.store import Store

    def refused(*args: object, **kwargs: object) -> None:
        raise AssertionError("every log was read")

    monkeypatch.setattr(Store, "refresh", refused)


def test_a_listing_reads_only_the_records_it_shows(app: App, monkeypatch: pytest.MonkeyPatch) -> None:
    for n in range(200):
        records.set_record(app, key=f"fact:item-{n}", value={"n": n})
    records.records_state(app)
    loaded: list[bytes] = []
    from contextflow.records import stored

    real = stored.record_of
    monkeypatch.setattr(stored, "record_of", lambda blob: loaded.append(blob) or real(blob))
    shown = records.list_records(app, limit=5)
    assert [r.key for r in shown] == [f"fact:item-{n}" for n in range(199, 194, -1)]
    assert len(loaded) == 5
    loaded.clear()
    assert records.get_record(app, key="fact:item-7").data["value"] == {"n": 7}
    assert len(loaded) == 1


def test_context_list_decodes_only_the_records_it_shows(app: App, monkeypatch: pytest.MonkeyPatch) -> None:
    from contextflow.records import present, stored
    from contextflow.records.projection import record_of
    from contextflow.records.view import Record

    for n in range(40):
        records.set_record(app, key=f"fact:item-{n}", value={"n": n})
    loaded: list[bytes] = []

    def counting(blob: bytes) -> Record:
        loaded.append(blob)
        return record_of(blob)

    monkeypatch.setattr(stored, "record_of", counting)
    reply = present.context_list(app, {"limit": 5})
    assert reply.data["count"] == 5 and reply.data["older_left_out"] == 0  # the others counted, not decoded
    assert len(loaded) == 5


def test_a_save_then_a_read_and_a_delete_are_seen_at_once(app: App) -> None:
    records.set_record(app, key="fact:nas", value={"ip": "10.0.0.2"})
    assert records.get_record(app, key="fact:nas").data["value"] == {"ip": "10.0.0.2"}
    records.delete_record(app, key="fact:nas")
    with pytest.raises(NotFoundError, match="was deleted"):
        records.get_record(app, key="fact:nas")
    saved = conversations.save_conversation(app, {"conversation_id": "c-1", "summary": "the parser", "topic": "p"})
    assert conversations.find_conversation(app, "c-").event.id == saved.event.id
    assert isinstance(records.records_state(app), StoredRecords)


def test_an_event_read_twice_from_two_copies_of_a_log_counts_once(app: App) -> None:
    """A log copied whole (a sync conflict's copy, a hand-made backup) holds the same events again: the
    tables count each once, as the fold does (a conversation's versions, a record's writes)."""
    from contextflow.core.log import log_path

    events = _events(5, 120)
    write_events(app.store.folder, events)
    copy = log_path(app.store.folder, "wx").with_name(log_path(app.store.folder, "wx").name.replace("wx", "wz"))
    copy.write_bytes(log_path(app.store.folder, "wx").read_bytes())
    app.store.refresh()
    folded: ConversationsState = view_of(app.store, "conversations")
    assert any(entry.versions > 1 for entry in folded.records.values())
    assert dict(conversations.conversations_state(app).records) == folded.records
    assert dict(records.records_state(app).records) == view_of(app.store, "records").records
    assert app.tables().differing() == []


def test_the_catch_up_writes_the_records_rows_with_their_read_positions(app: App) -> None:
    """The records' and conversations' rows are written by the catch-up that reads the logs, in the
    transaction that moves their read positions: no reader folds them afterwards."""
    write_events(app.store.folder, _events(6, 80))
    tables = app.tables()
    tables.update()
    assert tables.positions("records-state") == tables.positions("feed") != {}
    assert tables.peek("SELECT count(*) FROM records_rows")[0][0] > 0
    assert tables.peek("SELECT count(*) FROM conversations_rows")[0][0] > 0
