"""Context records and saved conversations are only queried: while the derived tables do not hold every
log (another process builds them, or holds their lock) the same queries read them as built with the
rows of the logs' remaining bytes (core/rest.py), folded by key onto the tables' rows; nothing folds a
whole view in memory, and over the rest's bound the reply says it is partial and how far the build is."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from contextflow.app import App
from contextflow.conversations import core as conversations
from contextflow.conversations import present as conversations_present
from contextflow.core import projections
from contextflow.core.errors import NotFoundError
from contextflow.records import core as records
from contextflow.records import present as records_present
from tests.conftest import open_app
from tests.test_own_writes_while_building import building_elsewhere
from tests.test_records_stored import never_folded


def _save(app: App, cid: str, summary: str) -> None:
    conversations.save_conversation(app, {"conversation_id": cid, "topic": "plan", "summary": summary})


def _fresh_and_building(app: App, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh machine (the tables hold nothing yet) whose tables another process builds."""
    app.tables().close()
    app.tables().path.unlink(missing_ok=True)
    building_elsewhere(monkeypatch)


def test_records_and_conversations_another_machine_wrote_are_read_whole_while_the_build_has_not_reached_them(
    app: App, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    records.set_record(app, key="fact:mine", value={"v": 1})
    _save(app, "c-mine", "first")
    assert records.get_record(app, key="fact:mine").data["value"] == {"v": 1}  # the tables hold them
    building_elsewhere(monkeypatch)
    other = open_app("writer-b", CONTEXTFLOW_STATE=str(tmp_path / "elsewhere"))
    try:
        records.set_record(other, key="fact:mine", value={"v": 2}, project=app.settings.default_project)
        records.set_record(other, key="fact:synced", value={"there": 2}, project=app.settings.default_project)
        second = {"conversation_id": "c-mine", "topic": "plan", "summary": "second"}
        conversations.save_conversation(other, {**second, "project": app.settings.default_project})
    finally:
        other.close()
    never_folded(monkeypatch)
    assert app.tables().update() == -1 and not app.tables().current()
    # a record of the built state, updated by the logs' remaining bytes: the update, once
    mine = records.get_record(app, key="fact:mine")
    assert mine.data["value"] == {"v": 2} and mine.created_key < mine.event_key
    assert records.get_record(app, key="fact:synced").data["value"] == {"there": 2}
    assert [r.key for r in records.list_records(app)] == ["fact:synced", "fact:mine"]
    saved = conversations.find_conversation(app, "c-mine")
    assert (saved.event.data["summary"], saved.versions) == ("second", 2)
    assert [e.conversation_id for e in conversations.list_conversations(app)] == ["c-mine"]
    listed = records_present.context_list(app, {})
    assert "PARTIAL" not in listed.text and "partial" not in listed.data  # every log read: complete


def test_a_record_and_a_conversation_written_while_building_are_read_back_at_once(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    records.set_record(app, key="fact:older", value={"v": 0})
    _fresh_and_building(app, monkeypatch)
    never_folded(monkeypatch)
    records.set_record(app, key="fact:new", value={"v": 1}, label="set while building")
    assert records.get_record(app, key="fact:new").data["value"] == {"v": 1}
    records.set_record(app, key="fact:new", value={"v": 2})  # an update keeps the label it does not name
    again = records.get_record(app, key="fact:new")
    assert again.data["value"] == {"v": 2} and again.data["label"] == "set while building"
    assert records.get_record(app, key="fact:older").data["value"] == {"v": 0}
    records.delete_record(app, key="fact:older")
    with pytest.raises(NotFoundError, match="was deleted"):
        records.get_record(app, key="fact:older")
    _save(app, "c-1", "one")
    _save(app, "c-1", "two")
    found = conversations.find_conversation(app, "c-")
    assert (found.event.data["summary"], found.versions) == ("two", 2)
    assert not app.tables().current()


def test_records_and_conversations_written_while_another_process_holds_the_lock_are_read(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = projections.Txn.__init__
    monkeypatch.setattr(projections.Txn, "__init__", lambda self, db, wait: real(self, db, min(wait, 0.05)))
    records.set_record(app, key="fact:kept", value={"v": "before"})
    _save(app, "c-1", "before")
    holder = sqlite3.connect(app.tables().path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another process holds the write lock (past the reader's wait)
    try:
        never_folded(monkeypatch)
        records.set_record(app, key="fact:kept", value={"v": "under the lock"})
        _save(app, "c-1", "under the lock")
        assert records.get_record(app, key="fact:kept").data["value"] == {"v": "under the lock"}
        assert [r.key for r in records.list_records(app)] == ["fact:kept"]
        found = conversations.find_conversation(app, "c-1")
        assert (found.event.data["summary"], found.versions) == ("under the lock", 2)
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_records_and_conversations_say_they_are_partial_and_how_far_the_build_is_when_too_much_remains(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    from contextflow.core import rest

    records.set_record(app, key="fact:newest", value={"v": "newest"})
    _save(app, "c-newest", "the newest plan")
    _fresh_and_building(app, monkeypatch)
    never_folded(monkeypatch)
    monkeypatch.setattr(rest, "REST_BYTES", 10)  # a new machine's backlog: too much to read per call
    reader = open_app("writer-a")
    for shown in (
        records_present.context_list(reader, {}),
        records_present.context_get(reader, {"key": "fact:newest"}),
        conversations_present.get_conversation(reader, {"conversation_id": "c-newest"}),
        conversations_present.list_conversations(reader, {}),
    ):
        assert shown.text.startswith("PARTIAL: this machine is still reading the store's logs into its local tables (")
        assert "indexed" in shown.text and "newest" in shown.text
    assert records_present.context_list(reader, {}).data["partial"]["log_bytes"] > 0
    assert isinstance(conversations_present.list_conversations(reader, {}).data, list)  # its JSON keeps its shape
